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
#include "capture/reference_plans.h"
#include "capture/schedule_choice.h"
#include "common/cuda_handles.h"
#include "common/graph_key.h"
#include "common/status.h"
#include "runtime/onnx_import.h"
#include "server/model_repository.h"
#include "server/served_model.h"
#include "server/triton_config.h"

namespace graphserve {

namespace {

std::string ModelNameOf(const std::string& out_dir) {
  std::filesystem::path path(out_dir);
  if (path.filename().empty()) path = path.parent_path();  // "repo/mlp/"
  return path.filename().string();
}

// What the capture section lists: the sizes and buckets given, or chosen
// from the history.
struct CaptureGrid {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> buckets;
};

// --history --max-graphs: the buckets (and, without --batch-sizes, the
// sizes) from a (rows x length) history.
absl::StatusOr<CaptureGrid> ChooseGrid(const PrepareOptions& options, PrepareReport& report) {
  if (!options.buckets.empty()) {
    return absl::InvalidArgumentError(
        "give the buckets (--buckets) or a budget to choose them from the history "
        "(--max-graphs), not both");
  }
  ASSIGN_OR_RETURN(const ShapeHistogram history, ReadShapeHistory(options.history_path));
  GridChoice grid;
  if (options.batch_sizes.empty()) {
    ASSIGN_OR_RETURN(grid,
                     ChooseSizesAndBuckets(history, options.max_graphs, options.max_batch_size));
    report.pow2_grid = PowerOfTwoGrid(history, options.max_graphs, options.max_batch_size);
  } else {
    ASSIGN_OR_RETURN(grid, ChooseBucketsForSizes(history, options.batch_sizes, options.max_graphs));
  }
  report.grid = grid;
  CaptureGrid chosen{.sizes = grid.sizes};
  for (int64_t bucket : grid.buckets) chosen.buckets.push_back({bucket});
  return chosen;
}

absl::StatusOr<CaptureGrid> ChooseSizes(const PrepareOptions& options, PrepareReport& report) {
  if (options.max_batch_size == 0) {
    // Note [Models without a batch dim]: one request an execution.
    if (!options.batch_sizes.empty() || !options.history_path.empty()) {
      return absl::InvalidArgumentError(
          "a model served without a batch (max_batch_size 0) runs each request alone: give "
          "no batch sizes or history; its buckets (--buckets) hold the request's dims");
    }
    return CaptureGrid{.sizes = {1}, .buckets = options.buckets};
  }
  if (options.max_graphs > 0) {
    if (options.history_path.empty()) {
      return absl::InvalidArgumentError(
          "--max-graphs chooses buckets from a (rows x length) history: give --history");
    }
    return ChooseGrid(options, report);
  }
  if (!options.batch_sizes.empty()) {
    return CaptureGrid{.sizes = options.batch_sizes, .buckets = options.buckets};
  }
  if (options.history_path.empty() || options.num_sizes < 1) {
    return absl::InvalidArgumentError(
        "give the sizes to capture (--batch-sizes) or a history to choose them from "
        "(--history and --num-sizes or --max-graphs)");
  }
  ASSIGN_OR_RETURN(const BatchHistogram history, ReadBatchHistory(options.history_path));
  ASSIGN_OR_RETURN(SizeChoice choice,
                   ChooseBatchSizes(history, options.num_sizes, options.max_batch_size));
  report.pow2_ladder = PowerOfTwoLadder(history, options.num_sizes, options.max_batch_size);
  report.choice = choice;
  return CaptureGrid{.sizes = choice.sizes, .buckets = options.buckets};
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

absl::StatusOr<inference::ModelConfig> PrepareConfig(
    const PrepareOptions& options, const std::vector<int64_t>& batch_sizes,
    const std::vector<std::vector<int64_t>>& buckets, Model* model) {
  if (batch_sizes.empty()) {
    return absl::InvalidArgumentError("a model config needs at least one captured batch size");
  }
  const int64_t largest = *std::max_element(batch_sizes.begin(), batch_sizes.end());
  const int64_t max_batch_size = options.max_batch_size.value_or(largest);
  if (max_batch_size > 0 && max_batch_size < largest) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_batch_size ", max_batch_size, " is below the largest captured size ", largest));
  }
  if (max_batch_size > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_size ", max_batch_size, " does not fit the config's int32 field"));
  }
  inference::ModelConfig config;
  config.set_name(ModelNameOf(options.out_dir));
  config.set_platform("graphserve_onnx");
  config.set_backend("graphserve");
  config.set_default_model_filename("model.onnx");
  config.set_max_batch_size(static_cast<int32_t>(max_batch_size));
  RETURN_IF_ERROR(DeclareConfigFromModel(model, &config));

  inference::ModelCapture* capture = config.mutable_capture();
  std::vector<int64_t> sizes = batch_sizes;
  std::sort(sizes.begin(), sizes.end());
  for (int64_t size : sizes) capture->add_batch_sizes(size);
  capture->set_streams(options.num_streams);
  capture->set_schedule(options.schedule);
  capture->set_max_lanes(options.max_lanes);
  if (options.precision != ModelPrecision::kFp32) {
    capture->set_precision(ModelPrecisionName(options.precision));
  }
  // The completed config gives every shape dim as -1 (Note [Shape buckets]).
  const std::vector<std::string> names = ShapeDimNames(*model);
  if (options.max_graphs > 0 && names.size() != 1) {
    const std::string dims =
        names.empty() ? "none" : absl::StrCat(names.size(), " (", absl::StrJoin(names, ", "), ")");
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-graphs chooses buckets of one dim a request chooses (a sequence length); the "
        "model has ",
        dims, ": give --buckets, or --num-sizes to choose batch sizes only"));
  }
  if (!buckets.empty()) {
    if (names.empty()) {
      return absl::InvalidArgumentError(
          "--buckets: the model has no dims a request chooses (its inputs' dims are fixed, "
          "past the batch): there is nothing to bucket");
    }
    for (const std::string& name : names) capture->add_shape_dims(name);
    for (const std::vector<int64_t>& bucket : buckets) {
      if (bucket.size() != names.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--buckets: ", absl::StrJoin(bucket, "x"), " has ", bucket.size(),
                         " extents; the model's shape dims are ", absl::StrJoin(names, ", "),
                         ": give each bucket as ",
                         absl::StrJoin(std::vector<std::string>(names.size(), "N"), "x")));
      }
      inference::CaptureBucket* extents = capture->add_buckets();
      for (int64_t extent : bucket) extents->add_extents(extent);
    }
  }
  if (!options.eager_extents.empty()) {
    if (options.eager_extents.size() != names.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--eager-extents gives ", options.eager_extents.size(),
                       " extents; the model's shape dims are [", absl::StrJoin(names, ", "),
                       "]: give one for each, joined by x"));
    }
    if (capture->shape_dims().empty()) {
      for (const std::string& name : names) capture->add_shape_dims(name);
    }
    for (int64_t extent : options.eager_extents) capture->add_eager_extents(extent);
  }
  for (const auto& [input, value] : options.padding) {
    inference::CapturePadding* padding = capture->add_padding();
    padding->set_input(input);
    padding->set_value(value);
  }
  capture->set_shape_padding(options.shape_padding);
  return config;
}

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
  ASSIGN_OR_RETURN(const CaptureGrid grid, ChooseSizes(options, report));
  report.batch_sizes = grid.sizes;
  std::sort(report.batch_sizes.begin(), report.batch_sizes.end());
  inference::ModelConfig config;
  {
    // The interface as written; the load imports the model again with its
    // precision pass.
    ASSIGN_OR_RETURN(Model model, ImportOnnxFile(options.model_path));
    if (!model.passed_strings.empty()) {
      // Note [Strings at the model's edges]: graphserve serves it as it is.
      return absl::FailedPreconditionError(absl::StrCat(
          "'", options.model_path, "' hands STRING input '", model.passed_strings.front().input,
          "' back unchanged: there is nothing to capture; serve it with graphserve as it is"));
    }
    ASSIGN_OR_RETURN(config, PrepareConfig(options, report.batch_sizes, grid.buckets, &model));
    const std::vector<std::string> shape_dims = ShapeDimNames(model);
    const std::string buckets =
        shape_dims.empty() ? ""
        : config.capture().buckets().empty()
            ? absl::StrCat(" at the default buckets of ", absl::StrJoin(shape_dims, " x "))
            : absl::StrCat(" at ", config.capture().buckets_size(), " buckets of ",
                           absl::StrJoin(shape_dims, " x "));
    progress << "graphserve-capture: " << options.model_path << ": " << model.nodes.size()
             << " nodes; capturing " << report.batch_sizes.size() << " sizes ["
             << absl::StrJoin(report.batch_sizes, ", ") << "]" << buckets << " x "
             << options.num_streams << " streams on GPU " << options.device << "\n";
  }
  report.max_batch_size = config.max_batch_size();
  report.schedule_request = options.schedule;
  report.max_lanes = options.max_lanes;
  if (options.schedule == "auto") {
    progress << "choosing each graph's multi-stream schedule by timing its candidates (at most "
             << options.max_lanes << " streams per graph)\n";
  }

  // Loaded as the server loads it (Note [An independent reference] and all).
  RepositoryModel entry;
  entry.name = report.model_name;
  entry.directory = options.out_dir;
  entry.config = config;
  entry.versions.push_back({.version = 1, .model_path = options.model_path});
  ServedModelOptions served_options;
  served_options.devices = {options.device};
  served_options.allow_tf32 = options.allow_tf32;
  served_options.cost_iters = options.cost_iters;
  served_options.measure_both_modes = true;
  ProgressBar bar(progress, options.interactive_progress);
  served_options.on_capture_progress = [&](const CaptureProgress& p) { bar.Update(p); };
  absl::StatusOr<std::unique_ptr<ServedModel>> served =
      ServedModel::Load(entry, entry.versions.front(), served_options);
  if (!served.ok()) return OutOfMemoryContext(served.status());
  const ModelLoadSummary& summary = (*served)->summary();
  const std::vector<std::shared_ptr<const GraphSet>> sets = (*served)->graph_sets();
  if (sets.empty()) {
    return absl::InternalError(absl::StrCat("model '", report.model_name,
                                            "' loaded without CUDA graphs: ", summary.executor));
  }
  const GraphSet& set = *sets.front();
  report.float32_nodes = summary.float32_nodes;
  report.float32_gemms_notice = summary.float32_gemms_notice;
  report.shape_dims = (*served)->interface().shape_dims;
  report.buckets = (*served)->interface().buckets;
  report.buckets_served = summary.buckets;
  report.load_ms = summary.load_ms;
  report.load_phases = summary.load_phases;
  report.schedules = summary.schedule_choices;
  for (const ScheduleChoice& choice : report.schedules) {
    report.schedule_choice_ms += choice.capture_ms + choice.replay_ms;
  }
  report.setup = set.setup_times();
  for (int slot = 0; slot < set.num_slots(); ++slot) {
    report.slots.push_back(set.slot_memory(slot));
    for (const GraphKey& key : set.keys()) {
      const CapturedGraphInfo& info = set.graph_info(slot, key);
      report.worst_check_rel_err = std::max(report.worst_check_rel_err, info.check_rel_err);
      report.worst_reference_rel_err =
          std::max(report.worst_reference_rel_err, info.reference_rel_err);
      if (slot == 0) report.graph_nodes.push_back(info.nodes);
    }
  }
  report.weight_bytes = set.weight_bytes();
  report.reference_tolerance =
      ReferenceTolerance(CheckedPrecision(options.precision, options.allow_tf32));
  const inference::ModelConfig& loaded = (*served)->config();
  for (const inference::CaptureCost& cost : loaded.capture().cost()) {
    report.costs.push_back(
        {.key = {cost.batch_size(), {cost.bucket().begin(), cost.bucket().end()}},
         .eager_us = cost.eager_us(),
         .graph_us = cost.graph_us()});
  }
  RETURN_IF_ERROR(WriteModelDirectory(options.out_dir, options.model_path, loaded));
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
  const size_t buckets = std::max<size_t>(r.buckets.size(), 1);
  const size_t graphs = r.batch_sizes.size() * buckets * static_cast<size_t>(r.num_streams);
  const std::string bucket_count =
      r.buckets.empty() ? "" : absl::StrCat(" x ", r.buckets.size(), " buckets");
  if (!r.buckets_served.empty()) {
    absl::StrAppend(&text, "shape buckets: ", r.buckets_served, "\n");
  }
  if (r.max_batch_size == 0) {
    absl::StrAppend(&text,
                    "max_batch_size 0: no batch dim, each request runs alone in the "
                    "smallest bucket that holds it\n");
  }
  absl::StrAppendFormat(&text,
                        "%d graphs (%d sizes%s x %d streams) captured and checked in %.1f ms: "
                        "capture %.1f ms, checks %.1f ms, planning %.1f ms (kernels %.1f, "
                        "memory %.1f, algorithm choice %.1f), binding and the rest %.1f ms; "
                        "worst replay-vs-eager relative error %.2g\n",
                        graphs, r.batch_sizes.size(), bucket_count, r.num_streams, r.setup.total_ms,
                        r.setup.capture_ms, r.setup.check_ms, r.setup.plan_ms(),
                        r.setup.plan_kernels_ms, r.setup.plan_memory_ms, r.setup.plan_autotune_ms,
                        r.setup.rest_ms(), r.worst_check_rel_err);
  if (r.load_ms > 0) {
    absl::StrAppendFormat(&text, "loaded as the server loads it in %.1f s: %s\n", r.load_ms / 1e3,
                          r.load_phases);
  }
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
  if (r.grid) {
    absl::StrAppendFormat(&text,
                          "%s chosen from the history: expected padded positions per "
                          "request %.4g",
                          r.pow2_grid ? "sizes and buckets" : "buckets",
                          r.grid->expected_padded_positions);
    if (r.pow2_grid) {
      absl::StrAppendFormat(&text, " (power-of-two grid, sizes [%s] x buckets [%s]: %.4g)",
                            absl::StrJoin(r.pow2_grid->sizes, ", "),
                            absl::StrJoin(r.pow2_grid->buckets, ", "),
                            r.pow2_grid->expected_padded_positions);
    }
    absl::StrAppend(&text, "\n");
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
