#include "server/served_model.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "capture/graph_set.h"
#include "capture/launch_costs.h"
#include "capture/model_config_writer.h"
#include "capture/reference_plans.h"
#include "capture/schedule_choice.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "planning/cost_table.h"
#include "runtime/bind.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/precision.h"
#include "server/classification.h"
#include "server/config_validation.h"
#include "server/eager_fallback.h"
#include "server/graph_set_runner.h"
#include "server/host_runner.h"
#include "server/injected_cuda_fault.h"
#include "server/pass_through.h"
#include "server/request_validation.h"
#include "server/shape_buckets.h"
#include "server/triton_config.h"
#include "spdlog/spdlog.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// The sizes a config asks for (capture.batch_sizes, else Triton's
// optimization.cuda.graph_spec), or, when it names none, powers of two up to
// max_batch_size plus max_batch_size itself: a ladder whose padding is at
// most 2x. A model that does not batch (max_batch_size 0) has one size, 1.
absl::StatusOr<std::vector<int64_t>> CapturedSizes(const inference::ModelConfig& config) {
  const int64_t max_rows = std::max<int64_t>(config.max_batch_size(), 1);
  std::vector<int64_t> sizes = RequestedCaptureSizes(config);
  if (sizes.empty()) {
    for (int64_t size = 1; size < max_rows; size *= 2) sizes.push_back(size);
    sizes.push_back(max_rows);
  }
  std::sort(sizes.begin(), sizes.end());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1 || sizes[i] > max_rows ||
        (i > 0 && sizes[i] == sizes[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.pbtxt capture.batch_sizes (or optimization.cuda.graph_spec batch sizes) [",
          absl::StrJoin(sizes, ","), "] must be distinct sizes from 1 to max_batch_size ",
          config.max_batch_size()));
    }
  }
  return sizes;
}

void SetCosts(const std::vector<CaptureCostEntry>& measured, inference::ModelConfig* config) {
  config->mutable_capture()->clear_cost();
  for (const CaptureCostEntry& entry : measured) {
    *config->mutable_capture()->add_cost() = CostToProto(entry);
  }
}

// The schedules the config records for every key, or nullopt unless it
// covers them all. An entry without a bucket serves every bucket of its
// batch size (configs the capture CLI writes for models without shape dims).
absl::StatusOr<std::optional<std::map<GraphKey, SchedulePolicy>>> SchedulesFromConfig(
    const inference::ModelConfig& config, const std::vector<GraphKey>& keys) {
  std::map<GraphKey, SchedulePolicy> recorded;
  for (const inference::CaptureSchedule& schedule : config.capture().schedules()) {
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(schedule.policy());
    if (!policy.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("capture.schedules of batch ",
                                                     schedule.batch_size(), ": ",
                                                     policy.status().message()));
    }
    recorded[{schedule.batch_size(), {schedule.bucket().begin(), schedule.bucket().end()}}] =
        *policy;
  }
  std::map<GraphKey, SchedulePolicy> policies;
  for (const GraphKey& key : keys) {
    auto found = recorded.find(key);
    if (found == recorded.end()) found = recorded.find({key.batch_size, {}});
    if (found == recorded.end()) return std::nullopt;
    policies[key] = found->second;
  }
  return policies;
}

// Schedules: the config's per-key record when it covers every key; else
// its `schedule` (auto: timed here, at load, and recorded in the config).
absl::Status ApplyConfigSchedules(const Model& model, inference::ModelConfig* config,
                                  GraphSetOptions& set_options, ModelLoadSummary& summary,
                                  std::vector<ScheduleChoice>& choices) {
  const int max_lanes = config->capture().max_lanes() > 0 ? config->capture().max_lanes() : 4;
  set_options.executor.schedule.max_lanes = max_lanes;
  ASSIGN_OR_RETURN(const auto recorded, SchedulesFromConfig(*config, set_options.graphs));
  if (recorded.has_value()) {
    for (const GraphKey& key : set_options.graphs) {
      const SchedulePolicy policy = recorded->at(key);
      set_options.schedules[key] = {.policy = policy, .max_lanes = max_lanes};
      choices.push_back({.key = key, .policy = policy});
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const std::optional<SchedulePolicy> request,
                   ParseScheduleRequest(config->capture().schedule()));
  ASSIGN_OR_RETURN(choices, ApplyScheduleRequest(model, request, set_options));
  if (!request) summary.schedules = "measured at load";
  return absl::OkStatus();
}

// "12 of 30 keys timed: capturing candidates 5.1 s, replays 2.0 s"; empty
// when nothing was timed.
std::string ScheduleTimingText(const std::vector<ScheduleChoice>& choices) {
  int timed = 0;
  double capture_ms = 0, replay_ms = 0;
  for (const ScheduleChoice& choice : choices) {
    if (choice.candidates.empty()) continue;
    ++timed;
    capture_ms += choice.capture_ms;
    replay_ms += choice.replay_ms;
  }
  if (timed == 0) return "";
  return absl::StrFormat("%d of %d keys timed: capturing candidates %.1f s, replays %.1f s", timed,
                         choices.size(), capture_ms / 1e3, replay_ms / 1e3);
}

// Where a load's time goes (ModelLoadSummary::load_phases): each End names
// the phase that ran since the one before.
class PhaseClock {
 public:
  void End(const std::string& phase, const std::string& detail = "") {
    const Clock::time_point now = Clock::now();
    parts_.push_back(absl::StrFormat("%s %.1f s%s", phase,
                                     std::chrono::duration<double>(now - last_).count(),
                                     detail.empty() ? "" : absl::StrCat(" (", detail, ")")));
    last_ = now;
  }
  [[nodiscard]] std::string Text() const { return absl::StrJoin(parts_, ", "); }

 private:
  Clock::time_point last_ = Clock::now();
  std::vector<std::string> parts_;
};

// GraphSet::Create's parts over every GPU's set, e.g. "plan 12.0 s, of which
// algorithm timing 10.1 s; capture 8.0 s; checks 9.3 s; binding and buffers
// 0.9 s".
std::string SetupTimesText(const std::vector<std::shared_ptr<GraphSet>>& sets) {
  SetupTimes sum;
  for (const std::shared_ptr<GraphSet>& set : sets) sum += set->setup_times();
  return absl::StrFormat(
      "plan %.1f s, of which algorithm timing %.1f s; capture %.1f s; checks %.1f s; "
      "binding and buffers %.1f s",
      sum.plan_ms() / 1e3, sum.plan_autotune_ms / 1e3, sum.capture_ms / 1e3, sum.check_ms / 1e3,
      sum.rest_ms() / 1e3);
}

// What the executor needs, built for one executor kind.
struct Execution {
  std::unique_ptr<ChunkRunner> runner;
  // One per key, ascending as the keys are (a graph set's order); empty:
  // pad up / split at the largest size.
  std::vector<double> costs_us;
  ModelLoadSummary summary;
};

// Where a model's slots go: each GPU it is placed on, with its slots.
struct GpuPlacement {
  int device = 0;
  int streams = 1;
};

// Slots per GPU: the capture section's streams, else the instance group's
// count (Triton's instances per listed GPU), else 1.
int StreamsFor(const inference::ModelConfig& config, const inference::ModelInstanceGroup* group) {
  if (config.capture().streams() > 0) return config.capture().streams();
  if (group != nullptr && group->count() > 0) return group->count();
  return 1;
}

// The GPUs of the config's instance groups that list them (Triton's
// `instance_group { count: M, kind: KIND_GPU, gpus: [0, 1] }`; a GPU listed
// twice gets two sets of slots), else the server's devices. FailedPrecondition
// for a GPU that is not visible.
absl::StatusOr<std::vector<GpuPlacement>> GpuPlacements(const inference::ModelConfig& config,
                                                        const ServedModelOptions& options) {
  std::vector<GpuPlacement> placements;
  const inference::ModelInstanceGroup* unlisted = nullptr;  // a group without gpus
  for (const inference::ModelInstanceGroup& group : config.instance_group()) {
    if (group.kind() == inference::ModelInstanceGroup::KIND_CPU) continue;
    if (group.gpus().empty() && unlisted == nullptr) unlisted = &group;
    for (int gpu : group.gpus()) placements.push_back({gpu, StreamsFor(config, &group)});
  }
  if (placements.empty()) {
    for (int device : options.devices) placements.push_back({device, StreamsFor(config, unlisted)});
  }
  const int visible = CudaDeviceCount();
  for (const GpuPlacement& placement : placements) {
    if (placement.device < 0 || placement.device >= visible) {
      return absl::FailedPreconditionError(
          absl::StrCat("the model is placed on GPU ", placement.device, " but ", visible,
                       " GPUs are visible (instance_group gpus, or --device)"));
    }
  }
  return placements;
}

// Captures one graph set per placement, all with the schedules chosen on the
// first GPU; sets on the same GPU share its weights and algorithm choices.
absl::StatusOr<std::vector<std::shared_ptr<GraphSet>>> CaptureOnEveryGpu(
    const Model& model, const std::vector<GpuPlacement>& placements,
    const GraphSetOptions& first_options) {
  std::map<int, std::shared_ptr<WeightStore>> weights;
  std::map<int, std::shared_ptr<AlgorithmChoices>> choices;
  choices[placements.front().device] = first_options.algorithm_choices;
  weights[placements.front().device] = first_options.weights;
  std::vector<std::shared_ptr<GraphSet>> sets;
  for (const GpuPlacement& placement : placements) {
    GraphSetOptions set_options = first_options;
    set_options.executor.device = placement.device;
    set_options.num_streams = placement.streams;
    std::shared_ptr<WeightStore>& store = weights[placement.device];
    if (!store) {
      ASSIGN_OR_RETURN(store, WeightStore::Create(placement.device));
    }
    set_options.weights = store;
    std::shared_ptr<AlgorithmChoices>& timed = choices[placement.device];
    if (!timed) timed = std::make_shared<AlgorithmChoices>();
    set_options.algorithm_choices = timed;
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, set_options);
    if (!set.ok()) return AnnotateStatus(set.status(), absl::StrCat("GPU ", placement.device));
    sets.push_back(*std::move(set));
  }
  return sets;
}

// What the padding check and every graph on a model's first GPU share: the
// GEMM and convolution algorithms, timed once, and the weights, uploaded once
// (each padding check's plan uploaded BERT-base's 440 MB again: 0.6 s of a
// load).
struct FirstGpuShared {
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
  std::shared_ptr<WeightStore> weights;  // null on the host executor
};

// Fresh, empty ones, on the model's first GPU.
absl::StatusOr<FirstGpuShared> NewFirstGpuShared(const inference::ModelConfig& config,
                                                 const ServedModelOptions& options) {
  FirstGpuShared shared{.algorithm_choices = std::make_shared<AlgorithmChoices>()};
  if (options.executor != ExecutorKind::kCuda) return shared;
  ASSIGN_OR_RETURN(const std::vector<GpuPlacement> placements, GpuPlacements(config, options));
  ASSIGN_OR_RETURN(shared.weights, WeightStore::Create(placements.front().device));
  return shared;
}

// The independent reference of a model's load-time check (Note [An
// independent reference] in capture/reference_plans.h).
struct LoadReference {
  ReferenceRunner runner;  // empty: the check is off
  double tolerance = 0;
  bool exact_outputs = true;
};

// "plain float32 CUDA plan: worst 3.1e-04 of 3.0e-02 over 4 graphs": what
// the reference check of `set`'s slot 0 found.
std::string ReferenceSummary(const GraphSet& set, const LoadReference& reference) {
  if (!reference.runner) return "off (capture.reference_tolerance < 0)";
  double worst = 0;
  for (const GraphKey& key : set.keys()) {
    worst = std::max(worst, set.graph_info(0, key).reference_rel_err);
  }
  return absl::StrFormat("plain float32 CUDA plan: worst relative error %.1e of %.1e over %d graphs",
                         worst, reference.tolerance, set.keys().size());
}

absl::StatusOr<Execution> LoadOnGpu(const Model& model, const BoundGraph& any_size,
                                    const std::vector<GraphKey>& keys, bool graphs,
                                    const ServedModelOptions& options,
                                    inference::ModelConfig* config,
                                    const FirstGpuShared& shared,
                                    const LoadReference& reference, PhaseClock& phases) {
  ASSIGN_OR_RETURN(const std::vector<GpuPlacement> placements, GpuPlacements(*config, options));
  const int first_device = placements.front().device;
  // The schedule choice and the cost measurements below run on the first
  // GPU; the graph sets set their own (Note [Graphs own their device]).
  const CudaDeviceGuard on_first_device(first_device);
  RETURN_IF_ERROR(on_first_device.status());
  GraphSetOptions set_options;
  set_options.graphs = keys;
  set_options.algorithm_choices = shared.algorithm_choices;
  set_options.weights = shared.weights;
  set_options.executor.device = first_device;
  set_options.executor.allow_tf32 = options.allow_tf32;
  set_options.reference = reference.runner;
  set_options.reference_tolerance = reference.tolerance;
  set_options.reference_compares_exact_outputs = reference.exact_outputs;
  set_options.on_progress = options.on_capture_progress;
  Execution execution;
  std::vector<ScheduleChoice> schedules;
  RETURN_IF_ERROR(
      ApplyConfigSchedules(model, config, set_options, execution.summary, schedules));
  phases.End("schedules", ScheduleTimingText(schedules));
  ASSIGN_OR_RETURN(const std::vector<std::shared_ptr<GraphSet>> captured,
                   CaptureOnEveryGpu(model, placements, set_options));
  size_t graph_count = 0;
  for (const GpuPlacement& placement : placements) graph_count += placement.streams * keys.size();
  phases.End(absl::StrCat(graph_count, " graphs"), SetupTimesText(captured));
  const std::vector<std::shared_ptr<const GraphSet>> sets(captured.begin(), captured.end());
  const GraphSet& first = *sets.front();
  // costs_us is one cost per key in `keys`' order, and the cost functions
  // below index it by the set's own order: the two must be one.
  if (first.keys() != keys) {
    return absl::InternalError(absl::StrCat("model '", model.name,
                                            "': the graph set's keys are not the keys it was "
                                            "asked to capture, in order"));
  }
  execution.summary.reference = ReferenceSummary(first, reference);
  spdlog::info("model '{}': replays checked against the independent reference: {}", model.name,
               execution.summary.reference);
  RecordPlannedSchedules(first, schedules);
  execution.summary.schedule_choices = schedules;
  config->mutable_capture()->clear_schedules();
  std::vector<std::string> described;
  for (const ScheduleChoice& choice : schedules) {
    *config->mutable_capture()->add_schedules() = ScheduleToProto(choice);
    described.push_back(absl::StrCat(GraphKeyString(choice.key), ":",
                                     SchedulePolicyName(choice.policy),
                                     choice.lanes > 1 ? absl::StrCat(" on ", choice.lanes) : ""));
  }
  execution.summary.schedules =
      absl::StrCat(absl::StrJoin(described, ", "), " (",
                   execution.summary.schedules.empty() ? "config" : execution.summary.schedules,
                   ")");

  // One cost per key, as the planner and SizesFasterDoubleBuffered take them.
  execution.costs_us = CostsForKeys(config->capture(), keys, graphs);
  execution.summary.costs = "config";
  // Costs measured here are also the single-buffered chunk times below; a
  // config's may come from another machine.
  const bool costs_measured_now = execution.costs_us.empty();
  if (costs_measured_now) {
    LaunchCostOptions cost_options;
    cost_options.iters = options.cost_iters;
    // One untimed launch each: the checks have just run every graph (and a
    // launch of 110 ms, BERT-base's 32 rows of 512 tokens, is timed by
    // itself: capture/launch_costs.cc).
    cost_options.warmup = 1;
    cost_options.modes = {graphs ? LaunchMode::kGraph : LaunchMode::kEager};
    if (options.measure_both_modes) cost_options.modes = {LaunchMode::kEager, LaunchMode::kGraph};
    ASSIGN_OR_RETURN(const std::vector<CaptureCostEntry> measured,
                     MeasureLaunchCosts(first, any_size, cost_options));
    SetCosts(measured, config);  // what ModelConfig reports
    for (const CaptureCostEntry& entry : measured) {
      execution.costs_us.push_back(graphs ? entry.graph_us : entry.eager_us);
    }
    execution.summary.costs = "measured at load";
    phases.End("launch costs");
  }
  if (SleepsWhileWaiting(options.gpu_wait, execution.costs_us)) {
    for (const std::shared_ptr<GraphSet>& set : captured) {
      RETURN_IF_ERROR(set->UseSleepingDoneEvents());
    }
    const std::string why = options.gpu_wait == GpuWait::kBlock
                                ? "--gpu-wait block"
                                : absl::StrFormat("its smallest chunk takes %.0f us",
                                                  *std::min_element(execution.costs_us.begin(),
                                                                    execution.costs_us.end()));
    spdlog::info("model '{}': stream workers sleep while a chunk runs ({})", model.name, why);
  }
  std::set<int> counted;  // weights once per GPU
  for (const std::shared_ptr<const GraphSet>& set : sets) {
    if (counted.insert(set->device()).second) {
      execution.summary.weight_bytes += set->weight_bytes();
    }
    for (int slot = 0; slot < set->num_slots(); ++slot) {
      const SlotMemory memory = set->slot_memory(slot);
      execution.summary.slot_bytes +=
          memory.arena + memory.io_device + memory.staging_pinned;  // workspaces: in the arena
      execution.summary.pinned_bytes += memory.staging_pinned;
    }
  }
  execution.summary.devices.assign(counted.begin(), counted.end());
  // Note [Double-buffered staging]: the sizes that run faster with the next
  // chunk queued behind the running one, timed here (a few ms).
  const LaunchMode mode = graphs ? LaunchMode::kGraph : LaunchMode::kEager;
  LaunchCostOptions overlap_options;
  overlap_options.iters = options.cost_iters;
  ASSIGN_OR_RETURN(std::vector<int64_t> double_buffered,
                   SizesFasterDoubleBuffered(first, any_size, mode, overlap_options,
                                             costs_measured_now ? execution.costs_us
                                                                : std::vector<double>{}));
  phases.End("staging timing");
  spdlog::info("model '{}': chunks of batch size {} start behind a running chunk on their slot "
               "(measured faster through the second staging buffer); other sizes wait",
               model.name, double_buffered.empty() ? "(none)" : absl::StrJoin(double_buffered, ","));
  GraphSetRunnerOptions runner_options;
  runner_options.mode = mode;
  runner_options.double_buffered_sizes = std::move(double_buffered);
  ASSIGN_OR_RETURN(runner_options.fault, InjectedCudaFaultFromEnvironment(model.name));
  execution.runner = std::make_unique<GraphSetRunner>(sets, std::move(runner_options));
  return execution;
}

}  // namespace

bool SleepsWhileWaiting(GpuWait wait, const std::vector<double>& costs_us) {
  if (wait == GpuWait::kBlock) return true;
  return wait == GpuWait::kAuto && !costs_us.empty() &&
         *std::min_element(costs_us.begin(), costs_us.end()) >= kSleepingWaitFromUs;
}

namespace {

// Executors for load-time checks: the host reference, or the CUDA executor
// on the model's first GPU, timing its GEMMs and convolutions into
// `shared`'s algorithm choices, which the graphs then find timed, with its
// weights.
absl::StatusOr<ExecutorFactory> CheckExecutors(const inference::ModelConfig& config,
                                               const ServedModelOptions& options,
                                               const FirstGpuShared& shared) {
  if (options.executor != ExecutorKind::kCuda) return HostExecutorFactory();
  CudaExecutorOptions executor_options;
  executor_options.device = shared.weights->device();
  executor_options.allow_tf32 = options.allow_tf32;
  return ExecutorFactory(
      [executor_options, shared](BoundGraph graph) -> absl::StatusOr<std::unique_ptr<Executor>> {
        const CudaDeviceGuard on_device(executor_options.device);
        RETURN_IF_ERROR(on_device.status());
        ExecutionResources resources;
        resources.algorithm_choices = shared.algorithm_choices;
        resources.weights = shared.weights;
        ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                         CudaExecutor::Create(std::move(graph), executor_options, resources));
        return std::unique_ptr<Executor>(std::move(executor));
      });
}

// The request's extent along the model's one shape dim, for the live length
// histogram; 0 (none) for a model with no shape dims or two (Note [Live
// length histogram] in server/model_counters.h).
int64_t CountedLength(const ValidatedRequest& request) {
  return request.extents.size() == 1 ? request.extents.front() : 0;
}

// Where requests to a model served by `pool` (null for a pipeline) may leave
// tensors in CUDA shared memory: the runner's GPU, unless rows padded into a
// bucket cannot be placed by the device (Note [Pitched row copies] in
// capture/graph_set.h).
std::optional<int> DeviceMemoryGpu(const ModelInterface& interface, const StreamPool* pool) {
  if (pool == nullptr) return std::nullopt;
  if (!interface.shape_dims.empty() &&
      !DevicePadsRows(interface, pool->layout().rows.front().input_pad)) {
    return std::nullopt;
  }
  return pool->runner().DeviceMemoryGpu();
}

// For the startup table: "sequence 32,64 (padded)", "height,width
// 224x224,320x320 (exact)"; empty for a model without shape dims.
std::string BucketsSummary(const ModelInterface& interface) {
  if (interface.shape_dims.empty()) return "";
  std::vector<std::string> buckets;
  for (const std::vector<int64_t>& bucket : interface.buckets) {
    buckets.push_back(absl::StrJoin(bucket, "x"));
  }
  return absl::StrCat(absl::StrJoin(interface.shape_dims, ","), " ", absl::StrJoin(buckets, ","),
                      interface.pads_to_bucket ? " (padded)" : " (exact)");
}

// The rows of each bucket, padded positions holding `pads`.
RowLayout RowLayoutOf(const ModelInterface& interface,
                      const std::vector<std::vector<int64_t>>& buckets,
                      const std::vector<PadElement>& pads) {
  RowLayout layout;
  for (const std::vector<int64_t>& bucket : buckets) {
    layout.buckets.push_back(bucket);
    RowShape& rows = layout.rows.emplace_back(RowShapeAt(interface, bucket));
    rows.input_pad = pads;
  }
  return layout;
}

// Decides whether requests shorter than a bucket are padded into it
// (ModelInterface::pads_to_bucket): capture.shape_padding "checked" (the
// default) runs CheckPaddingExact on `make_executor`'s executors, "exact"
// turns padding off. Returns the pad elements the rows use.
absl::StatusOr<std::vector<PadElement>> DecidePadding(const Model& model,
                                                      const inference::ModelCapture& capture,
                                                      const ExecutorFactory& make_executor,
                                                      ModelInterface* interface) {
  ASSIGN_OR_RETURN(std::vector<PadElement> pads, PadElementsFromConfig(*interface, capture));
  interface->pads_to_bucket = false;
  if (interface->shape_dims.empty()) return pads;
  const std::string& mode = capture.shape_padding();
  if (mode == "exact") {
    spdlog::info("model '{}': requests bring the extents of a bucket exactly "
                 "(capture.shape_padding \"exact\")", model.name);
    return pads;
  }
  if (!mode.empty() && mode != "checked") {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.pbtxt capture.shape_padding is \"", mode.substr(0, 32),
        "\"; it is \"checked\" (the default) or \"exact\""));
  }
  const absl::Status exact = CheckPaddingExact(model, *interface, pads, make_executor);
  if (!exact.ok() && exact.code() != absl::StatusCode::kFailedPrecondition) return exact;
  interface->pads_to_bucket = exact.ok();
  if (exact.ok()) {
    spdlog::info("model '{}': requests shorter than a bucket are padded into it "
                 "(checked exact at load)", model.name);
  } else {
    spdlog::warn("model '{}': requests must bring the extents of a bucket exactly: {}",
                 model.name, std::string(exact.message()));
  }
  return pads;
}

// A request parameter Triton reads as an unsigned integer: int64_param or
// uint64_param, not negative. nullopt when absent.
absl::StatusOr<std::optional<uint64_t>> UnsignedParameter(
    const inference::ModelInferRequest& request, const std::string& name) {
  const auto found = request.parameters().find(name);
  if (found == request.parameters().end()) return std::nullopt;
  const inference::InferParameter& parameter = found->second;
  switch (parameter.parameter_choice_case()) {
    case inference::InferParameter::kUint64Param:
      return parameter.uint64_param();
    case inference::InferParameter::kInt64Param:
      if (parameter.int64_param() >= 0) return static_cast<uint64_t>(parameter.int64_param());
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "request parameter '", name, "' must be a non-negative int64_param or uint64_param"));
}

// Triton's per-request queue parameters: "priority" (a level, 0 for the
// model's default) and "timeout" (microseconds; honoured when the level's
// queue policy allows overrides).
absl::StatusOr<QueueRequestOptions> QueueOptionsFromRequest(
    const inference::ModelInferRequest& request) {
  QueueRequestOptions options;
  ASSIGN_OR_RETURN(const std::optional<uint64_t> priority,
                   UnsignedParameter(request, "priority"));
  ASSIGN_OR_RETURN(const std::optional<uint64_t> timeout, UnsignedParameter(request, "timeout"));
  options.priority = priority.value_or(0);
  if (timeout.has_value()) {
    options.timeout = std::chrono::microseconds(std::min<uint64_t>(*timeout, uint64_t{1} << 62));
  }
  return options;
}

// capture.precision, checked before the model is imported with it.
absl::StatusOr<ModelPrecision> PrecisionFromConfig(const inference::ModelConfig& config) {
  absl::StatusOr<ModelPrecision> precision = ParseModelPrecision(config.capture().precision());
  if (!precision.ok()) {
    return absl::Status(precision.status().code(),
                        absl::StrCat("config.pbtxt capture.precision: ",
                                     precision.status().message()));
  }
  return precision;
}

// The load-time check's independent reference for `model` (Note [An
// independent reference] in capture/reference_plans.h): the model before its
// precision pass (ModelBeforePrecisionPass), as the server arranged it, on a
// plain float32 CUDA plan, with the tolerance of what the replays compute in
// (`precision`, TF32 when `allow_tf32` lets a float32 model's plans use it)
// unless capture.reference_tolerance gives one (negative: no reference).
absl::StatusOr<LoadReference> ReferenceFor(const Model& model, ModelPrecision precision,
                                           bool allow_tf32, const std::string& path,
                                           ModelPassOptions passes,
                                           const inference::ModelCapture& capture,
                                           const ModelInterface& declared) {
  LoadReference reference;
  if (capture.reference_tolerance() < 0) return reference;
  const ModelPrecision checked = CheckedPrecision(precision, allow_tf32);
  reference.tolerance = capture.reference_tolerance() > 0 ? capture.reference_tolerance()
                                                          : ReferenceTolerance(checked);
  reference.exact_outputs = checked == ModelPrecision::kFp32;
  ASSIGN_OR_RETURN(Model original, ModelBeforePrecisionPass(model, path, std::move(passes)));
  RETURN_IF_ERROR(ArrangeModelAsDeclared(declared, &original));
  reference.runner = PlainCudaReference(std::make_shared<const Model>(std::move(original)));
  return reference;
}

// Precision auto's calibration batch runs where the model will (Note
// [Automatic precision] in runtime/passes/autocast.h): on the model's first
// GPU through the load checks' executors, or on the host. Without TF32, as
// the values it judges are float32's, and with algorithm choices of its own:
// its batch-1 float32 GEMMs are none of the served graphs', nor its
// float32 weights.
absl::StatusOr<ExecutorFactory> CalibrationExecutors(const inference::ModelConfig& config,
                                                     const ServedModelOptions& options) {
  ServedModelOptions float32 = options;
  float32.allow_tf32 = false;
  ASSIGN_OR_RETURN(const FirstGpuShared own, NewFirstGpuShared(config, float32));
  return CheckExecutors(config, float32, own);
}

// What the counters record of `chunk`, run on `slot` at bucket `bucket` of
// `buckets` (none for a model without shape dims).
ChunkRun CountedRun(int slot, const FormedChunk& chunk, size_t bucket,
                    const std::vector<std::vector<int64_t>>& buckets) {
  ChunkRun run{.stream = slot,
               .batch_size = chunk.batch_size,
               .rows = chunk.rows,
               .demand_rows = chunk.demand_rows};
  // A request's rows in a chunk are one segment (RequestQueue::TakeRows), or
  // at least adjacent ones: count the changes of request along the chunk.
  run.requests = chunk.segments.empty() ? 0 : 1;
  for (size_t i = 1; i < chunk.segments.size(); ++i) {
    if (chunk.segments[i].request != chunk.segments[i - 1].request) ++run.requests;
  }
  if (buckets.empty()) return run;
  const auto positions = [](const std::vector<int64_t>& extents) {
    int64_t product = 1;
    for (int64_t extent : extents) product *= extent;
    return product;
  };
  run.bucket = bucket;
  run.launched_positions = chunk.batch_size * positions(buckets[bucket]);
  for (const RowSegment& segment : chunk.segments) {
    const RowShape* shape = segment.request->view.shape;
    run.real_positions += segment.rows * (shape != nullptr ? positions(shape->extents) : 0);
  }
  return run;
}

absl::StatusOr<Execution> LoadOnHost(const Model& model, const std::vector<GraphKey>& keys,
                                     int num_streams) {
  HostRunnerOptions host_options;
  host_options.num_slots = num_streams;
  host_options.graphs = keys;
  ASSIGN_OR_RETURN(std::unique_ptr<HostRunner> runner, HostRunner::Create(model, host_options));
  Execution execution;
  execution.summary.weight_bytes = runner->weight_bytes();
  // A GPU's measured costs say nothing about the host: plan by padded rows.
  execution.summary.costs = "none (pad up)";
  execution.runner = std::move(runner);
  return execution;
}

// Note [Strings at the model's edges] in runtime/ir.h: a model whose
// outputs all hand strings back runs nothing, so it gets no runtime and no
// stream pool, only a pipeline that answers as requests arrive.
absl::StatusOr<std::unique_ptr<ServedModel>> LoadPassThrough(const RepositoryModel& entry,
                                                             const ModelVersionEntry& version,
                                                             Model model,
                                                             Clock::time_point start) {
  inference::ModelConfig config = entry.config;
  config.set_name(entry.name);
  RETURN_IF_ERROR(CompleteConfigFromModel(&model, &config));
  RETURN_IF_ERROR(ValidateModelConfig(config));
  RETURN_IF_ERROR(RefuseUnservedFeatures(config));
  ASSIGN_OR_RETURN(ModelInterface interface, PassThroughInterface(config, model));
  ModelLoadSummary summary;
  summary.executor = "none: its outputs hand its STRING inputs back";
  summary.precision = "-";
  summary.costs = "-";
  const int64_t max_rows = std::max<int64_t>(interface.max_batch_size, 1);
  auto counters = std::make_unique<ModelCounters>(StatisticsSizes(max_rows), max_rows, 1);
  auto pipeline = std::make_unique<PassThroughPipeline>(interface, absl::StrCat(version.version),
                                                        counters.get());
  summary.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  spdlog::info("model '{}' loaded in {:.1f} s: hands strings back, nothing to run", entry.name,
               summary.load_ms / 1e3);
  return ServedModel::FromPipeline(std::move(interface), version.version, std::move(config),
                                   std::move(counters), std::move(pipeline), std::move(summary));
}

}  // namespace

// One request in flight: what its row segments share until the last one
// ends it.
struct ServedModel::RequestState {
  // Holds the shared-memory regions the request reads and writes until the
  // last segment ends it (Note [Shared memory lifetime]).
  ValidatedRequest validated;
  inference::ModelInferResponse* response = nullptr;
  std::function<void(const absl::Status&)> done;
  Clock::time_point start;
  uint64_t sequence = 0;  // acceptance order, for preserve_ordering
  std::atomic<int64_t> rows_left{0};
  absl::Mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);
  // Why `status` (its first failed segment): Note [Failure reasons].
  FailureReason failure ABSL_GUARDED_BY(mu) = FailureReason::kBackend;
  uint64_t queue_ns ABSL_GUARDED_BY(mu) = 0;  // the longest segment wait
  ChunkTiming compute ABSL_GUARDED_BY(mu);    // summed over its chunks
  ChunkTiming* compute_out = nullptr;          // the caller's, set before done
};

absl::StatusOr<std::unique_ptr<ServedModel>> ServedModel::Load(const RepositoryModel& entry,
                                                               const ModelVersionEntry& version,
                                                               const ServedModelOptions& options) {
  const Clock::time_point start = Clock::now();
  PhaseClock phases;
  RETURN_IF_ERROR(entry.status);
  ASSIGN_OR_RETURN(const ModelPrecision precision, PrecisionFromConfig(entry.config));
  ModelPassOptions passes;
  passes.precision = precision;
  std::vector<Float32Node> float32_nodes;
  if (precision == ModelPrecision::kAuto) {
    ASSIGN_OR_RETURN(passes.calibration.make_executor,
                     CalibrationExecutors(entry.config, options));
    passes.float32_nodes = &float32_nodes;
  }
  for (const inference::ModelInput& input : entry.config.input()) {
    passes.declared_inputs.insert(input.name());
  }
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(version.model_path, passes));
  model.name = entry.name;
  if (precision == ModelPrecision::kAuto) {
    spdlog::info("model '{}': {}", entry.name, Float32NodesSummary(float32_nodes));
  }
  std::optional<std::string> float32_gemms_notice = Float32GemmsOfHalfModel(model, precision);
  if (float32_gemms_notice) spdlog::warn("model '{}': {}", entry.name, *float32_gemms_notice);
  if (!model.passed_strings.empty()) {
    return LoadPassThrough(entry, version, std::move(model), start);
  }
  ServedModelOptions model_options = options;
  model_options.allow_tf32 = AllowsTf32(precision, options.allow_tf32);
  inference::ModelConfig config = entry.config;
  // Also says whether the model's dim 0 is a batch (Note [Models without a
  // batch dim] in runtime/ir.h).
  RETURN_IF_ERROR(CompleteConfigFromModel(&model, &config));
  // Note [Triton's config rules]: Triton's checks on the config as served,
  // then what GraphServe does not do, before its own limits.
  ConfigValidationOptions validation;
  if (options.executor == ExecutorKind::kCuda) validation.visible_gpus = CudaDeviceCount();
  RETURN_IF_ERROR(ValidateModelConfig(config, validation));
  RETURN_IF_ERROR(RefuseUnservedFeatures(config));
  ASSIGN_OR_RETURN(ModelInterface declared, InterfaceFromConfig(config));
  declared.name = entry.name;
  RETURN_IF_ERROR(ReadOutputLabels(config, entry.directory, &declared));
  RETURN_IF_ERROR(ArrangeModelAsDeclared(declared, &model));
  RETURN_IF_ERROR(ResolveStringTensors(model, &declared));
  ASSIGN_OR_RETURN(const std::vector<int64_t> sizes, CapturedSizes(config));
  ASSIGN_OR_RETURN(const std::vector<std::vector<int64_t>> buckets,
                   AttachShapeBuckets(model, config.capture(), &declared));
  std::vector<GraphKey> keys;
  for (const std::vector<int64_t>& bucket : buckets) {
    for (int64_t size : sizes) keys.push_back({size, bucket});
  }
  std::sort(keys.begin(), keys.end());

  ASSIGN_OR_RETURN(const BindOptions bind, BindOptionsAt(model, keys.front()));
  ASSIGN_OR_RETURN(const BoundGraph any_size, BindModel(model, bind));
  RETURN_IF_ERROR(CheckInterfacesMatch(
      declared.shape_dims.empty() ? declared : declared.At(keys.front().bucket),
      InterfaceFromGraph(entry.name, declared.max_batch_size, declared.batching, any_size)));
  RETURN_IF_ERROR(TakeInputDefaults(model, &declared));
  LoadReference reference;
  if (options.executor == ExecutorKind::kCuda) {
    ASSIGN_OR_RETURN(reference,
                     ReferenceFor(model, precision, model_options.allow_tf32, version.model_path,
                                  passes, config.capture(), declared));
  }
  phases.End("import");
  // Algorithms and weights of the first GPU, for the padding check and
  // every graph.
  ASSIGN_OR_RETURN(const FirstGpuShared shared, NewFirstGpuShared(config, model_options));
  ASSIGN_OR_RETURN(const ExecutorFactory check_executors,
                   CheckExecutors(config, model_options, shared));
  ASSIGN_OR_RETURN(const std::vector<PadElement> pads,
                   DecidePadding(model, config.capture(), check_executors, &declared));
  if (!declared.shape_dims.empty()) phases.End("padding check");
  RowLayout layout = RowLayoutOf(declared, buckets, pads);

  config.set_name(entry.name);
  const int num_streams = StreamsFor(config, config.instance_group().empty()
                                                 ? nullptr
                                                 : &config.instance_group(0));
  const bool graphs = options.graphs && !GraphsDisabledByConfig(config);
  absl::StatusOr<Execution> execution =
      options.executor == ExecutorKind::kCuda
          ? LoadOnGpu(model, any_size, keys, graphs, model_options, &config, shared,
                      reference, phases)
          : LoadOnHost(model, keys, num_streams);
  RETURN_IF_ERROR(execution.status());
  if (options.executor != ExecutorKind::kCuda) phases.End("binding");

  config.mutable_capture()->clear_batch_sizes();
  for (int64_t size : sizes) config.mutable_capture()->add_batch_sizes(size);
  config.mutable_capture()->set_streams(num_streams);
  config.mutable_capture()->set_graphs_disabled(!graphs);

  ASSIGN_OR_RETURN(BatchPlanner planner,
                   BatchPlanner::Create(keys, execution->costs_us, declared.max_batch_size));
  ModelLoadSummary summary = std::move(execution->summary);
  summary.executor = execution->runner->description();
  summary.precision = ModelPrecisionName(precision);
  summary.batch_sizes = sizes;
  summary.buckets = BucketsSummary(declared);
  summary.num_streams = execution->runner->num_slots();
  summary.float32_nodes = std::move(float32_nodes);
  summary.float32_gemms_notice = float32_gemms_notice.value_or("");
  auto counters = std::make_unique<ModelCounters>(sizes, declared.max_batch_size,
                                                  summary.num_streams, declared.buckets);
  StreamPoolOptions pool_options;
  pool_options.idle_spin = options.idle_spin;
  pool_options.run_on_caller = options.run_on_rpc_thread;
  ASSIGN_OR_RETURN(pool_options.queue, QueuePolicyFromConfig(config));
  // The back-pressure bound, in chunks of the largest size.
  pool_options.queue.max_queued_rows =
      static_cast<int64_t>(options.max_queued_chunks) * sizes.back();
  pool_options.on_chunk = [counters = counters.get(), buckets = declared.buckets](
                              int slot, const FormedChunk& chunk, size_t bucket,
                              const absl::Status& /*status*/, const ChunkTiming& timing) {
    counters->RecordChunk(CountedRun(slot, chunk, bucket, buckets), timing);
  };
  ASSIGN_OR_RETURN(std::unique_ptr<StreamPool> pool,
                   StreamPool::Create(std::move(execution->runner), std::move(planner),
                                      std::move(layout), std::move(pool_options)));
  summary.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  summary.load_phases = phases.Text();
  spdlog::info("model '{}' loaded in {:.1f} s: {}", entry.name, summary.load_ms / 1e3,
               summary.load_phases);
  const bool eager = !declared.eager_extents.empty();
  std::unique_ptr<ServedModel> served(new ServedModel(std::move(declared), version.version,
                                                      std::move(config), std::move(counters),
                                                      std::move(pool), std::move(summary)));
  if (eager) {
    served->eager_ = std::make_unique<EagerFallback>(
        std::make_shared<const Model>(std::move(model)), check_executors);
  }
  return served;
}

ServedModel::ServedModel(ModelInterface interface, int64_t version, inference::ModelConfig config,
                         std::unique_ptr<ModelCounters> counters, std::unique_ptr<StreamPool> pool,
                         ModelLoadSummary summary)
    : interface_(std::move(interface)),
      version_(version),
      version_text_(absl::StrCat(version)),
      config_(std::move(config)),
      preserve_ordering_(config_.dynamic_batching().preserve_ordering()),
      summary_(std::move(summary)),
      counters_(std::move(counters)),
      pool_(std::move(pool)),
      device_memory_gpu_(DeviceMemoryGpu(interface_, pool_.get())) {}

ServedModel::~ServedModel() = default;

std::unique_ptr<ServedModel> ServedModel::FromPipeline(ModelInterface interface, int64_t version,
                                                       inference::ModelConfig config,
                                                       std::unique_ptr<ModelCounters> counters,
                                                       std::unique_ptr<ModelPipeline> pipeline,
                                                       ModelLoadSummary summary) {
  std::unique_ptr<ServedModel> model(new ServedModel(std::move(interface), version,
                                                     std::move(config), std::move(counters),
                                                     nullptr, std::move(summary)));
  model->pipeline_ = std::move(pipeline);
  return model;
}

const GraphSetRunner* ServedModel::graph_runner() const {
  if (pool_ == nullptr) return nullptr;
  const auto* runner = dynamic_cast<const GraphSetRunner*>(&pool_->runner());
  return runner != nullptr && runner->mode() == LaunchMode::kGraph ? runner : nullptr;
}

std::vector<std::shared_ptr<const GraphSet>> ServedModel::graph_sets() const {
  const GraphSetRunner* runner = graph_runner();
  return runner == nullptr ? std::vector<std::shared_ptr<const GraphSet>>{} : runner->sets();
}

std::optional<int> ServedModel::RunnerSlot(const GraphSet* set, int slot) const {
  const GraphSetRunner* runner = graph_runner();
  return runner == nullptr ? std::nullopt : runner->RunnerSlot(set, slot);
}

void ServedModel::CountPipelineStep(int stream, int64_t batch_size, int64_t rows,
                                    const ChunkTiming& compute) const {
  counters_->RecordChunk(
      {.stream = stream, .batch_size = batch_size, .rows = rows, .requests = 1}, compute);
  const auto elapsed =
      static_cast<uint64_t>(compute.input_ns + compute.infer_ns + compute.output_ns);
  counters_->RecordSuccess(rows, /*length=*/0, elapsed, /*queue_ns=*/0, compute);
}

void ServedModel::Infer(const inference::ModelInferRequest* request,
                        inference::ModelInferResponse* response,
                        std::function<void(const absl::Status&)> done,
                        const SharedMemoryRegistry* shared_memory, ChunkTiming* compute) {
  if (pipeline_ != nullptr) {
    counters_->RequestAccepted();
    pipeline_->Infer(request, response,
                     [this, done = std::move(done)](const absl::Status& status) {
                       counters_->RequestAnswered();
                       done(status);
                     },
                     shared_memory);
    return;
  }
  const Clock::time_point start = Clock::now();
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(*request, interface_, shared_memory, device_memory_gpu_);
  absl::StatusOr<QueueRequestOptions> queue_options =
      validated.ok() ? QueueOptionsFromRequest(*request) : validated.status();
  if (!queue_options.ok()) {
    // Note [Failure reasons]: a bad request.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kOther);
    done(queue_options.status());
    return;
  }
  if (eager_ != nullptr && !BucketTaking(interface_, validated->extents).has_value()) {
    if (validated->view.Uses(RowMemory::kDevice)) {
      // The eager run reads its rows on the host: validated again, its CUDA
      // shared memory read through the host. The request was valid once.
      validated = ValidateInferRequest(*request, interface_, shared_memory, std::nullopt);
      if (!validated.ok()) {
        counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kOther);
        done(validated.status());
        return;
      }
    }
    InferEagerly(*request, response, *std::move(validated), start, std::move(done), compute);
    return;
  }
  auto state = std::make_shared<RequestState>();
  state->validated = *std::move(validated);
  state->response = response;
  state->compute_out = compute;
  state->start = start;
  state->rows_left.store(state->validated.view.rows, std::memory_order_relaxed);
  counters_->RequestAccepted();
  state->done = [this, done = std::move(done)](const absl::Status& status) {
    counters_->RequestAnswered();
    done(status);
  };
  const std::vector<std::byte*> outputs = PrepareInferResponse(
      *request, interface_, version_text_, state->validated, response);

  auto rows = std::make_shared<QueuedRows>();
  rows->view = state->validated.view;
  if (!interface_.shape_dims.empty()) {
    rows->own_shape = std::make_shared<RowShape>(RowShapeAt(interface_, state->validated.extents));
    rows->view.shape = rows->own_shape.get();
    rows->bucket = *BucketTaking(interface_, state->validated.extents);  // validation says so
  }
  for (size_t o = 0; o < outputs.size(); ++o) rows->view.outputs[o].data = outputs[o];
  rows->on_segment = [this, state](int64_t segment_rows, const absl::Status& status,
                                   StreamPool::Clock::duration queued, const ChunkTiming& timing,
                                   SegmentEnd end) {
    FinishSegment(state, segment_rows, status, queued, timing, end);
  };
  if (preserve_ordering_) state->sequence = ordering_.Accept();
  if (absl::Status submitted = pool_->Submit(std::move(rows), *queue_options); !submitted.ok()) {
    // Note [Failure reasons]: Submit refuses only for a full queue or a drain.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kRejected);
    if (preserve_ordering_) ordering_.Finish(state->sequence, [] {});
    state->done(submitted);
  }
}

void ServedModel::InferEagerly(const inference::ModelInferRequest& request,
                               inference::ModelInferResponse* response, ValidatedRequest validated,
                               Clock::time_point start,
                               std::function<void(const absl::Status&)> done,
                               ChunkTiming* compute) {
  auto held = std::make_shared<const ValidatedRequest>(std::move(validated));
  counters_->RequestAccepted();
  // preserve_ordering: answered after the requests accepted before it, and
  // before those accepted while it waits or runs.
  const uint64_t sequence = preserve_ordering_ ? ordering_.Accept() : 0;
  const auto answer = [this, sequence, done](const absl::Status& status) {
    counters_->RequestAnswered();
    if (preserve_ordering_) {
      ordering_.Finish(sequence, [done, status] { done(status); });
    } else {
      done(status);
    }
  };
  EagerFallback::Done ran = [this, held, response, start, compute, answer](
                                const absl::Status& run, const ChunkTiming& timing) {
    counters_->RecordEagerExecution();
    absl::Status status = run.ok() ? FinishOutputs(interface_, *held, response) : run;
    const uint64_t elapsed = StatisticsNanos(Clock::now() - start);
    if (compute != nullptr) *compute = timing;
    if (status.ok()) {
      counters_->RecordSuccess(held->view.rows, CountedLength(*held), elapsed, /*queue_ns=*/0,
                               timing,
                               /*split=*/false);
    } else {
      status =
          absl::Status(status.code(), absl::StrCat("model '", name(), "': ", status.message()));
      spdlog::warn("{}", status.ToString());
      counters_->RecordFailure(elapsed, FailureReason::kBackend);
    }
    answer(status);
  };
  std::vector<std::byte*> outputs =
      PrepareInferResponse(request, interface_, version_text_, *held, response);
  if (absl::Status submitted = eager_->Submit(interface_, held, std::move(outputs), std::move(ran));
      !submitted.ok()) {
    // Note [Failure reasons]: refused, as the pool refuses during a drain.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kRejected);
    answer(submitted);
  }
}

void ServedModel::FinishSegment(const std::shared_ptr<RequestState>& state, int64_t rows,
                                const absl::Status& status, StreamPool::Clock::duration queued,
                                const ChunkTiming& timing, SegmentEnd end) {
  {
    absl::MutexLock lock(&state->mu);
    if (!status.ok() && state->status.ok()) {
      state->status = absl::Status(status.code(),
                                   absl::StrCat("model '", name(), "': ", status.message()));
      // Note [Failure reasons]: the queue says whether it refused the rows.
      state->failure =
          end == SegmentEnd::kRefused ? FailureReason::kRejected : FailureReason::kBackend;
    }
    state->queue_ns = std::max(state->queue_ns, StatisticsNanos(queued));
    state->compute.input_ns += timing.input_ns;
    state->compute.infer_ns += timing.infer_ns;
    state->compute.output_ns += timing.output_ns;
  }
  if (state->rows_left.fetch_sub(rows, std::memory_order_acq_rel) != rows) return;

  // The last segment: every other segment's writes happened before its
  // fetch_sub, so the state is complete and no lock is contended.
  absl::Status final_status;
  FailureReason failure = FailureReason::kBackend;
  uint64_t queue_ns = 0;
  ChunkTiming compute;
  {
    absl::MutexLock lock(&state->mu);
    final_status = state->status;
    failure = state->failure;
    queue_ns = state->queue_ns;
    compute = state->compute;
  }
  if (final_status.ok()) {
    if (absl::Status delivered = FinishOutputs(interface_, state->validated, state->response);
        !delivered.ok()) {
      final_status = absl::Status(delivered.code(),
                                  absl::StrCat("model '", name(), "': ", delivered.message()));
    }
  }
  const uint64_t elapsed = StatisticsNanos(Clock::now() - state->start);
  if (state->compute_out != nullptr) *state->compute_out = compute;
  if (final_status.ok()) {
    // The last segment holds fewer than all the rows when there were others.
    counters_->RecordSuccess(state->validated.view.rows, CountedLength(state->validated), elapsed,
                             queue_ns, compute, /*split=*/rows != state->validated.view.rows);
  } else {
    spdlog::warn("{}", final_status.ToString());
    counters_->RecordFailure(elapsed, failure);
  }
  if (preserve_ordering_) {
    ordering_.Finish(state->sequence, [state, final_status] { state->done(final_status); });
  } else {
    state->done(final_status);
  }
}

void ServedModel::FillStatistics(inference::ModelStatistics* statistics) const {
  statistics->set_name(name());
  statistics->set_version(version_text_);
  counters_->Fill(statistics);
  if (pipeline_ != nullptr) pipeline_->AddExecutionStatistics(statistics);
}

void ServedModel::Drain(std::optional<std::chrono::steady_clock::time_point> deadline) {
  if (pipeline_ != nullptr) {
    pipeline_->Drain(deadline);
    return;
  }
  pool_->Drain(deadline);
  if (eager_ != nullptr) eager_->Drain(deadline);
}

void ServedModel::ComposingModelLoaded(const std::string& name) {
  if (pipeline_ != nullptr) pipeline_->ComposingModelLoaded(name);
}

}  // namespace graphserve
