#include "capture_cli/prepare.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "capture/launch_costs.h"
#include "capture/reference_plans.h"
#include "capture/schedule_choice.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/graph_key.h"
#include "common/status.h"
#include "common/tensor.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {

namespace {

std::string ModelNameOf(const std::string& out_dir) {
  std::filesystem::path path(out_dir);
  if (path.filename().empty()) path = path.parent_path();  // "repo/mlp/"
  return path.filename().string();
}

absl::StatusOr<std::vector<int64_t>> ChooseSizes(const PrepareOptions& options,
                                                 PrepareReport& report) {
  if (!options.batch_sizes.empty()) return options.batch_sizes;
  if (options.history_path.empty() || options.num_sizes < 1) {
    return absl::InvalidArgumentError(
        "give the sizes to capture (--batch-sizes) or a history to choose them from "
        "(--history and --num-sizes)");
  }
  ASSIGN_OR_RETURN(const BatchHistogram history, ReadBatchHistory(options.history_path));
  const std::optional<int64_t> max_batch =
      options.max_batch_size > 0 ? std::optional<int64_t>(options.max_batch_size) : std::nullopt;
  ASSIGN_OR_RETURN(SizeChoice choice, ChooseBatchSizes(history, options.num_sizes, max_batch));
  report.pow2_ladder = PowerOfTwoLadder(history, options.num_sizes, max_batch);
  report.choice = choice;
  return choice.sizes;
}

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, bool interactive) : out_(out), interactive_(interactive) {}

  void Update(const CaptureProgress& p) {
    constexpr int kWidth = 30;
    const int filled = kWidth * p.graphs_done / std::max(1, p.graphs_total);
    out_ << (interactive_ ? "\r" : "") << "capturing [" << std::string(filled, '#')
         << std::string(kWidth - filled, '.') << "] "
         << absl::StrFormat("%3d/%d  slot %d, batch %-6s capture %.1f ms, check %.1f ms",
                            p.graphs_done, p.graphs_total, p.slot, GraphKeyString(p.key),
                            p.capture_ms, p.check_ms)
         << (interactive_ && p.graphs_done < p.graphs_total ? "" : "\n") << std::flush;
  }

 private:
  std::ostream& out_;
  bool interactive_;
};

std::string MiB(size_t bytes) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20));
}

// Measured as the drop in cudaMemGetInfo's free bytes, which moves in 2 MiB
// pages: a set of small graphs often moves it not at all.
std::string GraphExecMemory(size_t bytes) {
  return bytes == 0 ? "< 2 MiB" : MiB(bytes);
}

// "single 812.0 us, asap 610.2 us on 4 streams"; "" when nothing was timed.
std::string ScheduleCandidatesText(const ScheduleChoice& choice) {
  if (choice.same_as_below.has_value()) {
    return absl::StrCat("not timed: batches ", GraphKeyString(*choice.same_as_below), " and ",
                        GraphKeyString(*choice.same_as_above), " chose the same");
  }
  std::vector<std::string> times;
  for (const ScheduleCandidateTime& c : choice.candidates) {
    times.push_back(absl::StrFormat("%s %.1f us%s", SchedulePolicyName(c.policy), c.replay_us,
                                    c.lanes > 1 ? absl::StrCat(" on ", c.lanes, " streams") : ""));
  }
  return absl::StrJoin(times, ", ");
}

absl::Status OutOfMemoryContext(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kResourceExhausted) return status;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaGetLastError();
  return absl::ResourceExhaustedError(absl::StrCat(
      "out of GPU memory (", MiB(free_bytes), " free of ", MiB(total_bytes),
      " now): ", status.message(),
      ". Capture fewer streams or smaller batch sizes, or free the GPU"));
}

// Precision auto's calibration batch runs on the GPU the graphs are
// captured on, in float32 exactly: the values it judges are float32's (Note
// [Automatic precision] in runtime/passes/autocast.h).
ExecutorFactory CalibrationExecutors(int device) {
  CudaExecutorOptions options;
  options.device = device;
  options.allow_tf32 = false;
  return [options](BoundGraph graph) -> absl::StatusOr<std::unique_ptr<Executor>> {
    const CudaDeviceGuard on_device(options.device);
    RETURN_IF_ERROR(on_device.status());
    ASSIGN_OR_RETURN(std::unique_ptr<CudaExecutor> executor,
                     CudaExecutor::Create(std::move(graph), options));
    return std::unique_ptr<Executor>(std::move(executor));
  };
}

// The report's section for precision auto: each node kept in float32 and
// why; empty for the other precisions.
std::string Float32NodesText(const PrepareReport& r) {
  if (r.precision != ModelPrecision::kAuto) return "";
  std::map<Float32Rule, size_t> counts;
  for (const Float32Node& node : r.float32_nodes) ++counts[node.rule];
  std::string text = absl::StrFormat(
      "\nprecision auto: %d nodes kept in float32 (%d for their op, as fp16; %d as autocast "
      "promotes; %d for their values on the calibration batch), the rest computes in float16:\n",
      r.float32_nodes.size(), counts[Float32Rule::kOp], counts[Float32Rule::kPromoted],
      counts[Float32Rule::kValues]);
  for (const Float32Node& node : r.float32_nodes) {
    absl::StrAppend(&text, "  '", node.name, "' (", node.op_type, "): ", node.reason, "\n");
  }
  return text;
}

}  // namespace

absl::StatusOr<PrepareReport> Prepare(const PrepareOptions& options, std::ostream& progress) {
  if (options.model_path.empty() || options.out_dir.empty()) {
    return absl::InvalidArgumentError("prepare needs a model file and an output directory");
  }
  if (CudaDeviceCount() <= options.device) {
    return absl::FailedPreconditionError(absl::StrCat(
        "prepare captures CUDA graphs and needs a CUDA GPU: device ", options.device,
        " is not visible (", CudaDeviceCount(), " found). Run it on the machine, or one like "
        "the machine, that will serve the model"));
  }
  PrepareReport report;
  report.model_path = options.model_path;
  report.out_dir = options.out_dir;
  report.model_name = ModelNameOf(options.out_dir);
  report.num_streams = options.num_streams;
  report.precision = options.precision;
  ModelPassOptions passes;
  passes.precision = options.precision;
  if (options.precision == ModelPrecision::kAuto) {
    passes.calibration.make_executor = CalibrationExecutors(options.device);
    passes.float32_nodes = &report.float32_nodes;
  }
  ASSIGN_OR_RETURN(Model model, ImportOnnxFile(options.model_path, passes));
  model.name = report.model_name;
  if (!model.passed_strings.empty()) {
    // Note [Strings at the model's edges]: graphserve serves it as it is.
    return absl::FailedPreconditionError(absl::StrCat(
        "'", options.model_path, "' hands STRING input '", model.passed_strings.front().input,
        "' back unchanged: there is nothing to capture; serve it with graphserve as it is"));
  }
  ASSIGN_OR_RETURN(report.batch_sizes, ChooseSizes(options, report));
  std::sort(report.batch_sizes.begin(), report.batch_sizes.end());

  if (options.precision == ModelPrecision::kAuto) {
    progress << "precision auto: " << report.float32_nodes.size()
             << " nodes kept in float32 by the calibration batch (listed in capture_report.txt)\n";
  }
  if (std::optional<std::string> notice = Float32GemmsOfHalfModel(model, options.precision)) {
    report.float32_gemms_notice = *std::move(notice);
    progress << "note: " << report.float32_gemms_notice << "\n";
  }
  progress << "graphserve-capture: " << options.model_path << ": " << model.nodes.size()
           << " nodes; capturing " << report.batch_sizes.size() << " sizes ["
           << absl::StrJoin(report.batch_sizes, ", ") << "] x " << options.num_streams
           << " streams on GPU " << options.device << "\n";
  ProgressBar bar(progress, options.interactive_progress);
  GraphSetOptions set_options;
  set_options.num_streams = options.num_streams;
  set_options.graphs = BatchOnlyKeys(report.batch_sizes);
  set_options.executor.device = options.device;
  set_options.executor.allow_tf32 = AllowsTf32(options.precision, options.allow_tf32);
  set_options.executor.schedule.max_lanes = options.max_lanes;
  set_options.on_progress = [&](const CaptureProgress& p) { bar.Update(p); };
  // Note [An independent reference], as the server checks at load.
  ASSIGN_OR_RETURN(Model original, ModelBeforePrecisionPass(model, options.model_path, passes));
  set_options.reference = PlainCudaReference(std::make_shared<const Model>(std::move(original)));
  const ModelPrecision checked = CheckedPrecision(options.precision, options.allow_tf32);
  set_options.reference_tolerance = ReferenceTolerance(checked);
  set_options.reference_compares_exact_outputs = checked == ModelPrecision::kFp32;
  report.reference_tolerance = set_options.reference_tolerance;
  ASSIGN_OR_RETURN(const std::optional<SchedulePolicy> request,
                   ParseScheduleRequest(options.schedule));
  report.schedule_request = request ? SchedulePolicyName(*request) : "auto";
  report.max_lanes = options.max_lanes;
  if (!request) {
    progress << "choosing each size's multi-stream schedule by timing its candidates (at most "
             << options.max_lanes << " streams per graph)\n";
  }
  const auto choice_start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<ScheduleChoice>> schedules =
      ApplyScheduleRequest(model, request, set_options);
  if (!schedules.ok()) return OutOfMemoryContext(schedules.status());
  report.schedule_choice_ms = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - choice_start)
                                  .count();
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, set_options);
  if (!set.ok()) return OutOfMemoryContext(set.status());
  RecordPlannedSchedules(**set, *schedules);
  report.schedules = *std::move(schedules);
  for (const ScheduleChoice& choice : report.schedules) {
    const std::string timed = ScheduleCandidatesText(choice);
    progress << "batch " << GraphKeyString(choice.key) << ": schedule "
             << SchedulePolicyName(choice.policy)
             << ", " << choice.lanes << " stream(s)"
             << (timed.empty() ? "" : absl::StrCat(" (timed: ", timed, ")")) << "\n";
  }

  report.setup = (*set)->setup_times();
  for (int slot = 0; slot < (*set)->num_slots(); ++slot) {
    report.slots.push_back((*set)->slot_memory(slot));
    for (const GraphKey& key : (*set)->keys()) {
      const CapturedGraphInfo& info = (*set)->graph_info(slot, key);
      report.worst_check_rel_err = std::max(report.worst_check_rel_err, info.check_rel_err);
      report.worst_reference_rel_err =
          std::max(report.worst_reference_rel_err, info.reference_rel_err);
      if (slot == 0) report.graph_nodes.push_back(info.nodes);
    }
  }
  report.weight_bytes = (*set)->weight_bytes();

  progress << "measuring eager and graph latency per size (" << options.cost_iters
           << " launches each)\n";
  BindOptions bind_options;
  bind_options.batch_size = report.batch_sizes.front();
  ASSIGN_OR_RETURN(const BoundGraph interface, BindModel(model, bind_options));
  LaunchCostOptions cost_options;
  cost_options.warmup = options.cost_warmup;
  cost_options.iters = options.cost_iters;
  ASSIGN_OR_RETURN(report.costs, MeasureLaunchCosts(**set, interface, cost_options));

  CaptureSummary summary;
  summary.model_name = report.model_name;
  summary.num_streams = options.num_streams;
  summary.batch_sizes = report.batch_sizes;
  summary.costs = report.costs;
  summary.max_batch_size = options.max_batch_size;
  summary.schedule = report.schedule_request;
  summary.max_lanes = options.max_lanes;
  summary.schedules = report.schedules;
  summary.precision = options.precision;
  for (const std::vector<ValueInfo>* values : {&model.inputs, &model.outputs}) {
    for (const ValueInfo& value : *values) {
      if (value.text) summary.string_tensors.insert(value.name);
    }
  }
  ASSIGN_OR_RETURN(const inference::ModelConfig config, MakeModelConfig(interface, summary));
  RETURN_IF_ERROR(WriteModelDirectory(options.out_dir, options.model_path, config));
  const std::string report_path =
      (std::filesystem::path(options.out_dir) / "capture_report.txt").string();
  std::ofstream out(report_path, std::ios::trunc);
  out << FormatPrepareReport(report);
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", report_path));
  return report;
}

std::string FormatPrepareReport(const PrepareReport& r) {
  std::string text = absl::StrCat("model '", r.model_name, "' from ", r.model_path, " -> ",
                                  r.out_dir, ", precision ", ModelPrecisionName(r.precision),
                                  "\n");
  absl::StrAppend(&text, Float32NodesText(r));
  if (!r.float32_gemms_notice.empty()) {
    absl::StrAppend(&text, "note: ", r.float32_gemms_notice, "\n");
  }
  const size_t graphs = r.batch_sizes.size() * static_cast<size_t>(r.num_streams);
  absl::StrAppendFormat(&text,
                        "%d graphs (%d sizes x %d streams) captured and checked in %.1f ms: "
                        "capture %.1f ms, checks %.1f ms, planning %.1f ms (kernels %.1f, "
                        "memory %.1f, algorithm choice %.1f), binding and the rest %.1f ms; "
                        "worst replay-vs-eager relative error %.2g\n",
                        graphs, r.batch_sizes.size(), r.num_streams, r.setup.total_ms,
                        r.setup.capture_ms, r.setup.check_ms, r.setup.plan_ms(),
                        r.setup.plan_kernels_ms, r.setup.plan_memory_ms,
                        r.setup.plan_autotune_ms, r.setup.rest_ms(), r.worst_check_rel_err);
  absl::StrAppendFormat(&text,
                        "worst relative error against the independent reference (the model "
                        "before its precision pass on a plain float32 plan) %.2g, tolerance "
                        "%.2g\n",
                        r.worst_reference_rel_err, r.reference_tolerance);
  if (r.choice && r.pow2_ladder) {
    absl::StrAppendFormat(&text,
                          "sizes chosen from the history: expected padded rows per request "
                          "%.4g (power-of-two ladder [%s]: %.4g)\n",
                          r.choice->expected_padded_rows, absl::StrJoin(r.pow2_ladder->sizes, ", "),
                          r.pow2_ladder->expected_padded_rows);
  }
  absl::StrAppend(&text,
                  "\nlatency per launch, all rows, host copies included (median wall time):\n"
                  "| graph | eager us | graph us | eager / graph | graph nodes |\n"
                  "| ---: | ---: | ---: | ---: | ---: |\n");
  for (size_t i = 0; i < r.costs.size(); ++i) {
    const CaptureCostEntry& c = r.costs[i];
    absl::StrAppendFormat(&text, "| %s | %.1f | %.1f | %.2f | %d |\n", GraphKeyString(c.key),
                          c.eager_us, c.graph_us, c.graph_us > 0 ? c.eager_us / c.graph_us : 0.0,
                          i < r.graph_nodes.size() ? r.graph_nodes[i] : 0);
  }
  if (!r.schedules.empty()) {
    absl::StrAppendFormat(&text,
                          "\nmulti-stream schedules (requested %s, at most %d streams per graph%s):\n"
                          "| batch | schedule | streams | events | graph width | critical path "
                          "(steps) | candidates timed (bare replay) |\n"
                          "| ---: | --- | ---: | ---: | ---: | ---: | --- |\n",
                          r.schedule_request, r.max_lanes,
                          r.schedule_choice_ms > 0
                              ? absl::StrFormat("; choosing took %.1f ms", r.schedule_choice_ms)
                              : "");
    for (const ScheduleChoice& c : r.schedules) {
      std::string timed = ScheduleCandidatesText(c);
      if (timed.empty()) timed = r.schedule_request == "auto" ? "none (one candidate)" : "none (given)";
      absl::StrAppendFormat(&text, "| %s | %s | %d | %d | %d | %d | %s |\n", GraphKeyString(c.key),
                            SchedulePolicyName(c.policy), c.lanes, c.events, c.max_width,
                            c.critical_path, timed);
    }
  }
  absl::StrAppend(&text, "\nmemory: weights ", MiB(r.weight_bytes),
                  " (uploaded once, shared by every slot and size)\n"
                  "| slot | arena (shared by sizes) | arena on one stream | arena without "
                  "sharing | device I/O | pinned staging | largest library workspace (in the arena) | streams | "
                  "graph execs |\n"
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  size_t arena_total = 0;
  size_t unshared_total = 0;
  size_t single_lane_total = 0;
  for (size_t m = 0; m < r.slots.size(); ++m) {
    const SlotMemory& s = r.slots[m];
    arena_total += s.arena;
    single_lane_total += s.arena_single_lane;
    unshared_total += s.arena_unshared;
    absl::StrAppend(&text, "| ", m, " | ", MiB(s.arena), " | ", MiB(s.arena_single_lane), " | ",
                    MiB(s.arena_unshared), " | ", MiB(s.io_device), " | ", MiB(s.staging_pinned),
                    " | ", MiB(s.workspace), " | ", s.lanes, " | ", GraphExecMemory(s.graph_execs),
                    " |\n");
  }
  absl::StrAppendFormat(&text,
                        "activation memory of all %d graphs: %s with one arena per slot, %s "
                        "with one per graph (%.2fx)\n",
                        graphs, MiB(arena_total), MiB(unshared_total),
                        arena_total > 0 ? static_cast<double>(unshared_total) / arena_total : 0.0);
  if (arena_total > single_lane_total) {
    absl::StrAppend(&text, "running branches on several streams grows the arenas by ",
                    MiB(arena_total - single_lane_total), " over one stream's ",
                    MiB(single_lane_total), "\n");
  }
  return text;
}

}  // namespace graphserve
