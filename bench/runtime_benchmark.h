#pragma once
// The runtime benchmark: one ONNX model planned by the CUDA executor at each
// of several batch sizes, checked on inputs the PyTorch side wrote, timed as
// an eager (uncaptured) run and as a captured CUDA graph replay.
// bench/run_runtime_bench.py drives it.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/runtime_bench_record.h"
#include "runtime/passes/precision.h"

namespace graphserve {

struct RuntimeBenchOptions {
  // ONNX model file.
  std::string model_path;
  // Batch sizes, run in this order.
  std::vector<int64_t> batch_sizes = {1};
  // The extents of the model's shape dims (Note [Shape dims] in
  // runtime/ir.h), in the order the model names them: every batch size runs
  // at this one bucket. Empty for a model without shape dims.
  std::vector<int64_t> bucket;
  // Inputs are read from <inputs_dir>/<B>/<input name>.npy. Empty: float32
  // inputs are drawn from a seeded normal distribution instead (timing only;
  // a model with other input types then fails).
  std::string inputs_dir;
  // Outputs of the first run go to <outputs_dir>/<B>/<output name>.npy.
  // Empty: not written.
  std::string outputs_dir;
  // Outputs of the graph replay go to <graph_outputs_dir>/<B>/<output>.npy.
  // Empty: not written.
  std::string graph_outputs_dir;
  // Untimed runs before each timing loop.
  int64_t warmup = 20;
  // Timed runs per loop; the record holds their median.
  int64_t iters = 200;
  // What the model computes in (runtime/passes/precision.h), as a server's
  // capture.precision: fp16 and bf16 convert it at import.
  ModelPrecision precision = ModelPrecision::kFp32;
  // Also check every graph against the independent reference the server
  // checks with (Note [An independent reference] in
  // capture/reference_plans.h) and record the error, without failing on it.
  bool reference = false;
  // Passed to CudaExecutorOptions.
  bool allow_tf32 = false;
  bool channels_last_convs = true;
  bool own_depthwise_convs = true;
  int device = 0;
  // Schedule policies to capture and time side by side, each a record's
  // `schedules` entry: single, wavefront, asap, auto. Only {"single"}
  // (default): the single-lane graph alone, no `schedules` entries.
  std::vector<std::string> schedules = {"single"};
  // The most lanes (streams) a schedule may use.
  int max_lanes = 4;
};

// Runs every batch size and returns one record each, in order; `on_record`
// (may be empty) sees each record as soon as it is measured. Errors name the
// batch size and what failed: import, binding, planning, an input file whose
// dtype or dims differ from the bound graph's, or a CUDA call.
absl::StatusOr<std::vector<RuntimeBenchRecord>> RunRuntimeBenchmark(
    const RuntimeBenchOptions& options,
    const std::function<void(const RuntimeBenchRecord&)>& on_record = {});

}  // namespace graphserve
