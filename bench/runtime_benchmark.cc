#include "bench/runtime_benchmark.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/npy.h"
#include "capture/graph_set.h"
#include "capture/reference_plans.h"
#include "capture/schedule_choice.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/nvtx.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/onnx_import.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/model_passes.h"
#include "spdlog/spdlog.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {
namespace {

// Seed of the inputs drawn when no input directory is given; the batch size
// is added so that each size sees different data.
constexpr uint64_t kInputSeed = 20261121;

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double max_us = 0;
};

// Times `iters` runs of `enqueue`, each between two events recorded on
// `stream`, after `warmup` untimed runs. The runs are issued back to back and
// the stream is synchronised once at the end, as a serving loop would issue
// them: an event pair measures device time when the device is the
// bottleneck, and the host's issue time when the host is (the device idles
// between the events while it waits for launches). bench/run_runtime_bench.py
// times PyTorch the same way.
absl::StatusOr<Timing> TimeRuns(cudaStream_t stream, int64_t warmup, int64_t iters,
                                const std::function<absl::Status(cudaStream_t)>& enqueue) {
  for (int64_t i = 0; i < warmup; ++i) RETURN_IF_ERROR(enqueue(stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));

  std::vector<CudaEvent> starts;
  std::vector<CudaEvent> ends;
  for (int64_t i = 0; i < iters; ++i) {
    ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create(/*timing=*/true));
    ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::Create(/*timing=*/true));
    starts.push_back(std::move(start));
    ends.push_back(std::move(end));
  }
  for (int64_t i = 0; i < iters; ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(starts[i].get(), stream));
    RETURN_IF_ERROR(enqueue(stream));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(ends[i].get(), stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  CUDA_RETURN_IF_ERROR(cudaGetLastError());

  std::vector<double> micros;
  micros.reserve(iters);
  for (int64_t i = 0; i < iters; ++i) {
    float ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, starts[i].get(), ends[i].get()));
    micros.push_back(1000.0 * ms);
  }
  std::sort(micros.begin(), micros.end());
  const size_t n = micros.size();
  const double median = n % 2 == 1 ? micros[n / 2] : 0.5 * (micros[n / 2 - 1] + micros[n / 2]);
  return Timing{median, micros.front(), micros.back()};
}

// Largest |a - b| over the elements of two tensors of one dtype and shape;
// infinity where exactly one of a pair is NaN. Integer and bool tensors give
// 0 or 1 (equal or not).
double MaxAbsDiff(const HostTensor& a, const HostTensor& b) {
  if (a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0) return 0;
  if (a.dtype() != DType::kFloat32 || a.bytes() != b.bytes()) return 1;
  double worst = 0;
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const float x = a.data<float>()[i];
    const float y = b.data<float>()[i];
    if (std::isnan(x) != std::isnan(y)) return std::numeric_limits<double>::infinity();
    if (!std::isnan(x)) worst = std::max(worst, std::fabs(static_cast<double>(x) - y));
  }
  return worst;
}

// The graph key every run at `batch` uses: the options' one bucket.
GraphKey KeyAt(int64_t batch, const RuntimeBenchOptions& options) {
  return {batch, options.bucket};
}

std::string BatchDir(const std::string& root, int64_t batch) {
  return (std::filesystem::path(root) / std::to_string(batch)).string();
}

absl::StatusOr<HostTensor> LoadInput(const RuntimeBenchOptions& options, int64_t batch,
                                     const BoundValue& value) {
  if (options.inputs_dir.empty()) {
    if (value.dtype != DType::kFloat32) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", value.name, "' is ", std::string(DTypeName(value.dtype)),
                       "; only float32 inputs are drawn at random: pass --inputs"));
    }
    return RandomTensor(value.dtype, value.dims, kInputSeed + static_cast<uint64_t>(batch));
  }
  const std::string path =
      (std::filesystem::path(BatchDir(options.inputs_dir, batch)) / (value.name + ".npy")).string();
  ASSIGN_OR_RETURN(HostTensor tensor, ReadNpyFile(path));
  if (tensor.dtype() != value.dtype || tensor.dims() != value.dims) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " holds ", std::string(DTypeName(tensor.dtype())), " ", DimsToString(tensor.dims()),
        "; input '", value.name, "' at batch ", batch, " is ", std::string(DTypeName(value.dtype)),
        " ", DimsToString(value.dims)));
  }
  return tensor;
}

// The outputs as they stand in the executor's staging after a finished run.
std::vector<HostTensor> CopyOutputs(const CudaExecutor& executor) {
  const BoundGraph& graph = executor.graph();
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.outputs[i]);
    HostTensor tensor(value.dtype, value.dims);
    if (tensor.bytes() > 0) std::memcpy(tensor.raw(), executor.output_staging(i), tensor.bytes());
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

absl::Status WriteOutputs(const std::string& root, int64_t batch,
                          const std::vector<std::string>& names,
                          const std::vector<HostTensor>& outputs) {
  const std::string dir = BatchDir(root, batch);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    RETURN_IF_ERROR(
        WriteNpyFile((std::filesystem::path(dir) / (names[i] + ".npy")).string(), outputs[i]));
  }
  return absl::OkStatus();
}

// Captures `model` at `batch` into a one-slot GraphSet and fills the graph
// fields of `record`: a bare replay, the full replay API, and the outputs on
// `inputs` against the eager run's `eager_outputs`.
absl::Status MeasureGraph(const Model& model, const std::shared_ptr<const Model>& reference,
                          int64_t batch, const RuntimeBenchOptions& options,
                          const std::shared_ptr<AlgorithmChoices>& algorithm_choices,
                          const std::vector<HostTensor>& inputs,
                          const std::vector<HostTensor>& eager_outputs,
                          RuntimeBenchRecord& record) {
  GraphSetOptions set_options;
  set_options.graphs = {KeyAt(batch, options)};
  set_options.executor.device = options.device;
  set_options.executor.allow_tf32 = options.allow_tf32;
  set_options.executor.channels_last_convs = options.channels_last_convs;
  set_options.executor.own_depthwise_convs = options.own_depthwise_convs;
  set_options.algorithm_choices = algorithm_choices;
  if (reference) {
    set_options.reference = PlainCudaReference(reference);
    // Measured, not enforced: the record says how far from the server's
    // tolerance it is.
    set_options.reference_tolerance = std::numeric_limits<double>::infinity();
    set_options.reference_compares_exact_outputs = false;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GraphSet> set, GraphSet::Create(model, set_options));
  record.capture_ms = set->setup_times().total_ms;
  const CapturedGraphInfo& info = set->graph_info(0, KeyAt(batch, options));
  record.graph_nodes = info.nodes;
  record.reference_rel_err = info.reference_rel_err;
  record.reference_ms = info.reference_ms;

  std::vector<const void*> input_rows;
  for (const HostTensor& input : inputs) input_rows.push_back(input.raw());
  const LaunchChunk chunk{0, KeyAt(batch, options), batch, LaunchMode::kGraph};
  RETURN_IF_ERROR(set->Launch(chunk, input_rows));
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set->done_event(0)));
  std::vector<HostTensor> graph_outputs;
  std::vector<std::string> names;
  record.graph_rel_err_vs_eager = 0;  // the worst output's
  for (size_t i = 0; i < eager_outputs.size(); ++i) {
    const HostTensor& eager = eager_outputs[i];
    HostTensor& out = graph_outputs.emplace_back(eager.dtype(), eager.dims());
    if (out.bytes() > 0) std::memcpy(out.raw(), set->output_rows(0, i), out.bytes());
    const double error = IsFloatingDType(eager.dtype()) ? RelativeError(out, eager)
                                                        : MaxAbsDiff(out, eager);
    record.graph_rel_err_vs_eager = std::max(record.graph_rel_err_vs_eager, error);
    names.push_back(set->output_name(i));
  }
  if (!options.graph_outputs_dir.empty()) {
    RETURN_IF_ERROR(WriteOutputs(options.graph_outputs_dir, batch, names, graph_outputs));
  }

  cudaGraphExec_t exec = set->graph_exec(0, KeyAt(batch, options));
  // The one range a kernel profiler needs: `ncu --nvtx --nvtx-include
  // "GraphServe@bare replays/"` sees the replays' kernels and nothing of the
  // load (bench/kernel_profile.py).
  std::optional<NvtxRange> profiled(std::in_place, "bare replays");
  ASSIGN_OR_RETURN(const Timing bare,
                   TimeRuns(set->stream(0), options.warmup, options.iters, [&](cudaStream_t s) {
                     return CudaErrorToStatus(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
                   }));
  profiled.reset();
  // A slot takes one chunk at a time: each replay waits for the previous one
  // to finish before it refills the staging, as the server does. The events
  // then see the host's share too (staging copy and issue).
  ASSIGN_OR_RETURN(const Timing full,
                   TimeRuns(set->stream(0), options.warmup, options.iters, [&](cudaStream_t) {
                     RETURN_IF_ERROR(CudaErrorToStatus(cudaEventSynchronize(set->done_event(0)),
                                                       "cudaEventSynchronize"));
                     return set->Launch(chunk, input_rows);
                   }));
  record.graph_compute_us = bare.median_us;
  record.graph_min_us = bare.min_us;
  record.graph_max_us = bare.max_us;
  record.graph_full_us = full.median_us;
  return absl::OkStatus();
}

// One schedule's graph set at `batch`, and its record entry.
struct ScheduledSet {
  ScheduleBenchTiming timing;
  std::unique_ptr<GraphSet> set;
  std::vector<Timing> rounds;
};

// Captures `batch` once per requested schedule policy (auto: the policy
// ChooseSchedules picks), checks each replay against the single-lane eager
// outputs byte for byte, and times bare replays of all of them in
// interleaved rounds, so that drift reaches every policy alike.
absl::Status MeasureSchedules(const Model& model, int64_t batch,
                              const RuntimeBenchOptions& options,
                              const std::shared_ptr<AlgorithmChoices>& algorithm_choices,
                              const std::vector<HostTensor>& inputs,
                              const std::vector<HostTensor>& eager_outputs,
                              RuntimeBenchRecord& record) {
  constexpr int kRounds = 9;
  std::vector<ScheduledSet> sets;
  for (const std::string& name : options.schedules) {
    ScheduledSet& scheduled = sets.emplace_back();
    scheduled.timing.policy = name;
    GraphSetOptions set_options;
    set_options.graphs = {KeyAt(batch, options)};
    set_options.executor.device = options.device;
    set_options.executor.allow_tf32 = options.allow_tf32;
    set_options.executor.channels_last_convs = options.channels_last_convs;
    set_options.executor.own_depthwise_convs = options.own_depthwise_convs;
    set_options.executor.schedule.max_lanes = options.max_lanes;
    set_options.algorithm_choices = algorithm_choices;
    ASSIGN_OR_RETURN(const std::optional<SchedulePolicy> request, ParseScheduleRequest(name));
    ASSIGN_OR_RETURN(const std::vector<ScheduleChoice> choices,
                     ApplyScheduleRequest(model, request, set_options));
    if (!request) scheduled.timing.chosen = SchedulePolicyName(choices[0].policy);
    ASSIGN_OR_RETURN(scheduled.set, GraphSet::Create(model, set_options));
    const CapturedGraphInfo& info = scheduled.set->graph_info(0, KeyAt(batch, options));
    scheduled.timing.lanes = info.lanes;
    scheduled.timing.events = info.events;
    scheduled.timing.arena_bytes = scheduled.set->slot_memory(0).arena;

    std::vector<const void*> input_rows;
    for (const HostTensor& input : inputs) input_rows.push_back(input.raw());
    RETURN_IF_ERROR(scheduled.set->Launch({0, KeyAt(batch, options), batch, LaunchMode::kGraph}, input_rows));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(scheduled.set->done_event(0)));
    scheduled.timing.bit_identical_to_single_eager = true;
    for (size_t i = 0; i < eager_outputs.size(); ++i) {
      const HostTensor& eager = eager_outputs[i];
      if (eager.bytes() > 0 &&
          std::memcmp(scheduled.set->output_rows(0, i), eager.raw(), eager.bytes()) != 0) {
        scheduled.timing.bit_identical_to_single_eager = false;
      }
    }
  }
  const int64_t iters_per_round = std::max<int64_t>(1, options.iters / kRounds);
  for (int round = 0; round < kRounds; ++round) {
    for (ScheduledSet& scheduled : sets) {
      const cudaGraphExec_t exec = scheduled.set->graph_exec(0, KeyAt(batch, options));
      ASSIGN_OR_RETURN(const Timing timing,
                       TimeRuns(scheduled.set->stream(0), options.warmup, iters_per_round,
                                [&](cudaStream_t s) {
                                  return CudaErrorToStatus(cudaGraphLaunch(exec, s),
                                                           "cudaGraphLaunch");
                                }));
      scheduled.rounds.push_back(timing);
    }
  }
  for (ScheduledSet& scheduled : sets) {
    std::vector<double> medians;
    scheduled.timing.graph_min_us = std::numeric_limits<double>::infinity();
    for (const Timing& timing : scheduled.rounds) {
      medians.push_back(timing.median_us);
      scheduled.timing.graph_min_us = std::min(scheduled.timing.graph_min_us, timing.min_us);
      scheduled.timing.graph_max_us = std::max(scheduled.timing.graph_max_us, timing.max_us);
    }
    std::sort(medians.begin(), medians.end());
    scheduled.timing.graph_compute_us = medians[medians.size() / 2];
    record.schedules.push_back(scheduled.timing);
  }
  return absl::OkStatus();
}

absl::StatusOr<RuntimeBenchRecord> RunBatchSize(const Model& model,
                                                const std::shared_ptr<const Model>& reference,
                                                int64_t batch,
                                                const RuntimeBenchOptions& options,
                                                const std::shared_ptr<WeightStore>& weights,
                                                cudaStream_t stream) {
  ASSIGN_OR_RETURN(const BindOptions bind_options, BindOptionsAt(model, KeyAt(batch, options)));
  ASSIGN_OR_RETURN(BoundGraph graph, BindModel(model, bind_options));

  CudaExecutorOptions executor_options;
  executor_options.device = options.device;
  executor_options.allow_tf32 = options.allow_tf32;
  executor_options.channels_last_convs = options.channels_last_convs;
  executor_options.own_depthwise_convs = options.own_depthwise_convs;
  ExecutionResources resources;
  // The arena and I/O buffers are this executor's own, freed with it before
  // the next batch size; the weights are uploaded once for all sizes. Every
  // plan of this size runs the algorithms this one chooses, so that graphs
  // of any schedule can be compared with its outputs byte for byte.
  resources.weights = weights;
  const auto algorithm_choices = std::make_shared<AlgorithmChoices>();
  resources.algorithm_choices = algorithm_choices;
  ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                   CudaExecutor::Create(std::move(graph), executor_options, resources));
  const BoundGraph& bound = executor->graph();

  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < bound.inputs.size(); ++i) {
    const BoundValue& value = bound.value(bound.inputs[i]);
    ASSIGN_OR_RETURN(HostTensor input, LoadInput(options, batch, value));
    if (input.bytes() > 0) std::memcpy(executor->input_staging(i), input.raw(), input.bytes());
    inputs.push_back(std::move(input));
  }

  RETURN_IF_ERROR(executor->Enqueue(stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  const std::vector<HostTensor> first_outputs = CopyOutputs(*executor);
  if (!options.outputs_dir.empty()) {
    std::vector<std::string> names;
    for (ValueId id : bound.outputs) names.push_back(bound.value(id).name);
    RETURN_IF_ERROR(WriteOutputs(options.outputs_dir, batch, names, first_outputs));
  }

  ASSIGN_OR_RETURN(const Timing full,
                   TimeRuns(stream, options.warmup, options.iters,
                            [&](cudaStream_t s) { return executor->Enqueue(s); }));
  // The inputs are on the device since the runs above.
  ASSIGN_OR_RETURN(const Timing compute,
                   TimeRuns(stream, options.warmup, options.iters,
                            [&](cudaStream_t s) { return executor->EnqueueCompute(s); }));

  // Same inputs once more: the outputs must not have moved.
  RETURN_IF_ERROR(executor->Enqueue(stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  const std::vector<HostTensor> last_outputs = CopyOutputs(*executor);
  double rerun_diff = 0;
  for (size_t i = 0; i < first_outputs.size(); ++i) {
    rerun_diff = std::max(rerun_diff, MaxAbsDiff(first_outputs[i], last_outputs[i]));
  }

  RuntimeBenchRecord record;
  record.model = model.name;
  record.batch = batch;
  record.eager_full_us = full.median_us;
  record.eager_compute_us = compute.median_us;
  record.compute_min_us = compute.min_us;
  record.compute_max_us = compute.max_us;
  record.fused_epilogues = executor->fused_epilogues();
  record.arena_bytes = executor->arena_bytes();
  record.arena_lower_bound_bytes = executor->arena_lower_bound_bytes();
  record.rerun_max_abs_diff = rerun_diff;
  executor.reset();  // make room for the graph set's own plan
  RETURN_IF_ERROR(AnnotateStatus(
      MeasureGraph(model, reference, batch, options, algorithm_choices, inputs, first_outputs,
                   record),
      "graph replay"));
  const bool single_only = options.schedules.size() == 1 && options.schedules[0] == "single";
  if (!single_only) {
    RETURN_IF_ERROR(AnnotateStatus(MeasureSchedules(model, batch, options, algorithm_choices,
                                                    inputs, first_outputs, record),
                                   "schedules"));
  }
  return record;
}

}  // namespace

absl::StatusOr<std::vector<RuntimeBenchRecord>> RunRuntimeBenchmark(
    const RuntimeBenchOptions& options,
    const std::function<void(const RuntimeBenchRecord&)>& on_record) {
  if (options.iters < 1 || options.warmup < 0) {
    return absl::InvalidArgumentError(absl::StrCat("need iters >= 1 and warmup >= 0, got iters ",
                                                   options.iters, ", warmup ", options.warmup));
  }
  ModelPassOptions passes;
  passes.precision = options.precision;
  // precision auto calibrates on this GPU, in float32, as the server does.
  passes.calibration.make_executor =
      [device = options.device](BoundGraph graph) -> absl::StatusOr<std::unique_ptr<Executor>> {
    CudaExecutorOptions float32;
    float32.device = device;
    ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                     CudaExecutor::Create(std::move(graph), float32));
    return std::unique_ptr<Executor>(std::move(executor));
  };
  std::vector<Float32Node> float32_nodes;
  if (options.precision == ModelPrecision::kAuto) passes.float32_nodes = &float32_nodes;
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(options.model_path, passes));
  if (options.precision == ModelPrecision::kAuto) {
    spdlog::info("{}: {}", options.model_path, Float32NodesSummary(float32_nodes));
  }
  if (std::optional<std::string> notice = Float32GemmsOfHalfModel(model, options.precision)) {
    spdlog::warn("{}: {}", options.model_path, *notice);
  }
  // Records name the model by its file, which the driver script chose.
  model.name = std::filesystem::path(options.model_path).stem().string();
  // The model before its precision pass, as the server's reference has it.
  std::shared_ptr<const Model> reference;
  if (options.reference) {
    ASSIGN_OR_RETURN(Model original, ModelBeforePrecisionPass(model, options.model_path, passes));
    reference = std::make_shared<const Model>(std::move(original));
  }

  CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  ASSIGN_OR_RETURN(const std::shared_ptr<WeightStore> weights, WeightStore::Create(options.device));
  ASSIGN_OR_RETURN(const CudaStream stream, CudaStream::Create());

  std::vector<RuntimeBenchRecord> records;
  for (const int64_t batch : options.batch_sizes) {
    absl::StatusOr<RuntimeBenchRecord> record =
        RunBatchSize(model, reference, batch, options, weights, stream.get());
    if (!record.ok()) {
      return AnnotateStatus(record.status(),
                            absl::StrCat("model '", model.name, "', batch ", batch));
    }
    if (on_record) on_record(*record);
    records.push_back(*std::move(record));
  }
  return records;
}

}  // namespace graphserve
