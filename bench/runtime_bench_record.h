#pragma once
// One measured batch size of the runtime benchmark, and its JSON form (read
// by bench/run_runtime_bench.py).

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace graphserve {

// The same size captured with one multi-stream schedule policy.
struct ScheduleBenchTiming {
  std::string policy;  // single, wavefront, asap or auto
  std::string chosen;  // auto only: the policy it chose
  int lanes = 1;
  int events = 0;
  // Bare replay, as graph_compute_us: median over interleaved rounds of each
  // round's median; fastest and slowest single replay.
  double graph_compute_us = 0;
  double graph_min_us = 0;
  double graph_max_us = 0;
  // Outputs of the replay equal the single-lane eager run's, byte for byte.
  bool bit_identical_to_single_eager = false;
  size_t arena_bytes = 0;
};

struct RuntimeBenchRecord {
  // Model file name without directory and extension ("mlp").
  std::string model;
  int64_t batch = 0;
  // Medians over the timed runs, in microseconds, measured with CUDA events
  // around CudaExecutor::Enqueue (H2D + compute + D2H) and EnqueueCompute.
  double eager_full_us = 0;
  double eager_compute_us = 0;
  // Fastest and slowest timed run of EnqueueCompute: the spread to read the
  // medians against.
  double compute_min_us = 0;
  double compute_max_us = 0;
  int fused_epilogues = 0;
  size_t arena_bytes = 0;
  size_t arena_lower_bound_bytes = 0;
  // Largest absolute difference between the outputs of the first run and a
  // run after the timing loops, on the same inputs: 0 unless a run is
  // nondeterministic (a race; see .library/device/METHOD.md).
  double rerun_max_abs_diff = 0;

  // The same plan captured into a CUDA graph (capture/graph_set.h, one slot,
  // this size only). Medians in microseconds, CUDA events, runs back to back:
  // a bare cudaGraphLaunch on inputs already on the device (what PyTorch's
  // CUDAGraph.replay() does), and the full replay API (rows into staging, H2D
  // by the input mappings, launch, D2H by the output mappings).
  double graph_compute_us = 0;
  double graph_full_us = 0;
  double graph_min_us = 0;
  double graph_max_us = 0;
  // ||graph - eager|| / ||eager|| over the outputs on the benchmark input.
  double graph_rel_err_vs_eager = 0;
  // ||graph - reference|| / ||reference|| on the load-time check's random
  // input, against the independent reference (Note [An independent
  // reference] in capture/reference_plans.h); -1 when not asked for.
  double reference_rel_err = -1;
  double reference_ms = 0;  // its plan and run
  // GraphSet::Create wall time: bind, plan, capture, post-process,
  // instantiate, upload and check.
  double capture_ms = 0;
  size_t graph_nodes = 0;
  // One entry per requested schedule policy, in request order (empty when
  // only the default single-lane graph was measured).
  std::vector<ScheduleBenchTiming> schedules;
};

// A JSON array of objects, one per record, keys as the field names.
std::string RuntimeBenchRecordsToJson(const std::vector<RuntimeBenchRecord>& records);

// One human-readable line (no newline).
std::string FormatRuntimeBenchRecord(const RuntimeBenchRecord& record);

}  // namespace graphserve
