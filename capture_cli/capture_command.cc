#include "capture_cli/capture_command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "capture/schedule_choice.h"
#include "capture_cli/live_metrics.h"
#include "capture_cli/model_reload.h"
#include "capture_cli/prepare.h"
#include "common/command_line.h"
#include "common/json_text.h"
#include "common/status.h"
#include "planning/batch_sizes.h"
#include "planning/shape_grid.h"
#include "runtime/bind.h"
#include "runtime/fusion.h"
#include "runtime/onnx_import.h"
#include "runtime/passes/model_passes.h"
#include "runtime/passes/precision.h"
#include "runtime/schedule.h"

namespace graphserve {
namespace {

constexpr char kProgram[] = "graphserve-capture";

constexpr char kSelectUsage[] =
    "graphserve-capture select (--history FILE | --from-metrics URL --model NAME\n"
    "    [--model-version V] [--reload GRPC_ADDRESS]) (--num-sizes N | --max-graphs G)\n"
    "    [--max-batch-size X] [--json]\n"
    "\n"
    "Chooses the N typical batch sizes to capture CUDA graphs for, minimising the\n"
    "expected padded rows per request exactly, and compares them with a power-of-two\n"
    "ladder of N sizes. The largest size is the largest request seen, or X when\n"
    "smaller: a request of b > X rows runs as floor(b/X) graphs of X rows plus its\n"
    "remainder padded up to a chosen size.\n"
    "\n"
    "With --max-graphs G instead, for a model with one shape dim (a sequence length):\n"
    "chooses batch sizes and length buckets together, at most G graphs (sizes x\n"
    "buckets), minimising the expected padded positions (rows x length) per request;\n"
    "the largest bucket is the longest request seen. Compared with the best power-of-two\n"
    "grid of at most G graphs. The requests come from one of:\n"
    "\n"
    "--history FILE: one request batch size per line, or `size,count` lines; blank\n"
    "lines and # comments are ignored. With --max-graphs, `ROWSxLENGTH` or\n"
    "`ROWSxLENGTH,COUNT` lines (e.g. `4x128,17`).\n"
    "\n"
    "--from-metrics URL: the live batch-size histogram of a running GraphServe, from\n"
    "its Prometheus page (e.g. http://host:8002/metrics; a URL without a path reads\n"
    "/metrics): graphserve_request_rows of model NAME, version V (default: the latest\n"
    "there), which counts the requests answered since that version was (re)loaded.\n"
    "Requests of up to 64 rows are counted exactly; above 64 the histogram's buckets\n"
    "are powers of two, so each such request is counted at its bucket's upper bound\n"
    "and the padding shown for it is approximate (the output says how many requests\n"
    "that concerns). The sizes the model serves now (graphserve_graph_launches_total's\n"
    "batch_size labels) are compared too.\n"
    "--plan-rows chunk-demand plans from what the chunks of a model under dynamic\n"
    "batching could have merged (graphserve_chunk_demand_rows) instead of each request's\n"
    "rows: sizes from requests of 1-4 rows cap every merge at 4. Larger merges pay where\n"
    "a launch costs more than its rows; a model with shape buckets pads a merged chunk\n"
    "to its longest request, which the plan does not price (Note [Demand rows] in\n"
    "server/model_counters.h says what was measured): measure both.\n"
    "\n"
    "With --max-graphs, the model's live length histogram (graphserve_request_length,\n"
    "exported for a model with one shape dim) joins the rows: the two histograms are\n"
    "planned as independent, and the grid served now (graphserve_graph_launches_total's\n"
    "batch_size and bucket labels) is compared too.\n"
    "\n"
    "--reload GRPC_ADDRESS (with --from-metrics; e.g. localhost:8001): then reloads the\n"
    "model on that server with the chosen sizes (and with --max-graphs the chosen\n"
    "buckets), without downtime: its config from ModelConfig, capture.batch_sizes\n"
    "(and capture.buckets) replaced (capture.cost and capture.schedules cleared: the\n"
    "server measures them again), sent as RepositoryModelLoad's \"config\".\n"
    "The old version serves until the new sizes are captured. The server must run with\n"
    "--model-control-mode=explicit. Only the running server changes: the repository's\n"
    "config.pbtxt keeps its sizes, and a restart serves those. Nothing is reloaded when\n"
    "the chosen sizes are the ones served now.\n"
    "\n"
    "Both sources count requests. A model with dynamic batching runs several requests\n"
    "in one execution, whose rows neither source records: for it the sizes chosen\n"
    "are those that pad requests run one at a time least, not its executions.\n"
    "\n"
    "  graphserve-capture select --from-metrics http://localhost:8002/metrics \\\n"
    "      --model mlp --num-sizes 4 --reload localhost:8001";

int Usage(std::ostream& err, absl::string_view message) {
  err << kProgram << ": " << message << "\n";
  return kCaptureExitUsage;
}

int Failure(std::ostream& err, absl::string_view message) {
  err << kProgram << ": select: " << message << "\n";
  return kCaptureExitFailure;
}

std::string FormatRows(double rows) { return absl::StrFormat("%.10g", rows); }

struct SelectFlags {
  std::string history_path;
  std::string metrics_url;
  std::string model;
  std::string model_version;
  std::string reload_address;
  int64_t reload_timeout_secs = 600;
  int64_t num_sizes = 0;
  int64_t max_graphs = 0;  // > 0: sizes and buckets together
  int64_t max_batch_size = 0;
  bool json = false;
  // With --from-metrics: "requests" plans from each request's rows,
  // "chunk-demand" from what each chunk could have merged (Note [Demand
  // rows] in server/model_counters.h).
  std::string plan_rows = "requests";
};

// The usage error of `flags`, or "" when they are fine.
std::string SelectFlagsError(const SelectFlags& flags) {
  const bool from_metrics = !flags.metrics_url.empty();
  if (flags.history_path.empty() == !from_metrics) {
    return "select: give exactly one of --history and --from-metrics (see --help)";
  }
  if (from_metrics && flags.model.empty()) return "select: --from-metrics needs --model NAME";
  if (flags.plan_rows != "requests" && flags.plan_rows != "chunk-demand") {
    return absl::StrCat("select: --plan-rows is requests or chunk-demand, got '",
                        flags.plan_rows.substr(0, 32), "'");
  }
  if (!from_metrics && flags.plan_rows != "requests") {
    return "select: --plan-rows chunk-demand goes with --from-metrics";
  }
  if (!from_metrics &&
      (!flags.model.empty() || !flags.model_version.empty() || !flags.reload_address.empty())) {
    return "select: --model, --model-version and --reload go with --from-metrics";
  }
  if ((flags.num_sizes != 0) == (flags.max_graphs != 0)) {
    return "select: give exactly one of --num-sizes and --max-graphs (see --help)";
  }
  if (flags.max_graphs != 0) {
    if (flags.max_graphs < 1 || flags.max_graphs > 4096) {
      return absl::StrCat("select: --max-graphs must be in [1, 4096], got ", flags.max_graphs);
    }
  } else if (flags.num_sizes < 1 || flags.num_sizes > 4096) {
    return absl::StrCat("select: --num-sizes must be in [1, 4096], got ", flags.num_sizes);
  }
  if (flags.max_batch_size < 0) {
    return absl::StrCat("select: --max-batch-size must be at least 1, got ", flags.max_batch_size);
  }
  if (flags.reload_timeout_secs < 1) {
    return absl::StrCat("select: --reload-timeout-secs must be at least 1, got ",
                        flags.reload_timeout_secs);
  }
  return "";
}

// The chosen sizes and the sizes they are compared with.
struct Selection {
  SizeChoice chosen;
  SizeChoice ladder;
  std::optional<SizeChoice> current;  // the sizes served now, when known
};

void PrintSizes(absl::string_view title, const SizeChoice& sizes, std::ostream& out) {
  out << title << ": " << absl::StrJoin(sizes.sizes, ", ") << "\n";
  out << "  expected padded rows per request: " << FormatRows(sizes.expected_padded_rows) << "\n";
}

void PrintText(const std::string& history_path, const BatchHistogram& h, const Selection& selection,
               std::ostream& out) {
  int64_t requests = 0;
  for (const auto& [size, count] : h) requests += count;
  out << "history: " << history_path << " (" << requests << " requests, " << h.size()
      << " distinct sizes, largest " << h.rbegin()->first << ")\n";
  PrintSizes("chosen sizes", selection.chosen, out);
  PrintSizes("power-of-two ladder", selection.ladder, out);
}

// What the metrics say of the model's traffic, and how far to trust it.
void PrintLiveHeader(const std::string& url, const LiveBatchSizes& live, std::ostream& out) {
  const RowHistogram& rows = live.rows;
  out << "metrics: " << url << ", model '" << live.model << "' version " << live.version << " ("
      << rows.requests << (live.rows_are_demand ? " chunks under dynamic batching" : " requests")
      << ", " << rows.histogram.size() << " distinct sizes, largest "
      << rows.histogram.rbegin()->first << ")\n";
  if (live.rows_are_demand) {
    out << "note: sizes are planned from the rows queued that each chunk could have merged "
           "(graphserve_chunk_demand_rows), not from each request's rows\n";
  }
  if (!rows.wide_buckets.empty()) {
    int64_t approximated = 0;
    std::vector<std::string> buckets;
    for (const WideBucket& bucket : rows.wide_buckets) {
      approximated += bucket.requests;
      buckets.push_back(
          absl::StrCat(bucket.first_row, "-", bucket.last_row, " rows: ", bucket.requests));
    }
    // Note [Rows of a wide bucket] in planning/row_histogram.cc.
    out << "note: " << approximated << (approximated == 1 ? " request lies" : " requests lie")
        << " in histogram buckets wider than one row (" << absl::StrJoin(buckets, ", ")
        << "); each is counted at its bucket's upper bound, so the padding shown for them is "
           "approximate\n";
  }
  if (rows.scale != 1) {
    out << "note: request counts scaled by " << FormatRows(rows.scale) << " to fit "
        << kMaxHistoryRequests << "\n";
  }
}

void PrintLiveText(const std::string& url, const LiveBatchSizes& live, const Selection& selection,
                   std::ostream& out) {
  PrintLiveHeader(url, live, out);
  if (selection.current.has_value()) {
    PrintSizes("current sizes", *selection.current, out);
  } else {
    out << "current sizes: unknown (no graphserve_graph_launches_total for this version)\n";
  }
  PrintSizes("chosen sizes", selection.chosen, out);
  PrintSizes("power-of-two ladder", selection.ladder, out);
}

std::string JsonSizes(const SizeChoice& sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes.sizes, ","), "]");
}

// The keys `select --history --json` prints, without the braces.
std::string JsonSelection(const Selection& selection) {
  return absl::StrCat(
      "\"sizes\":", JsonSizes(selection.chosen),
      ",\"expected_padded_rows\":", FormatRows(selection.chosen.expected_padded_rows),
      ",\"pow2_sizes\":", JsonSizes(selection.ladder),
      ",\"pow2_expected_padded_rows\":", FormatRows(selection.ladder.expected_padded_rows));
}

// `select --from-metrics --json`'s keys beyond JsonSelection's.
std::string JsonLive(const LiveBatchSizes& live, const Selection& selection) {
  int64_t approximated = 0;
  for (const WideBucket& bucket : live.rows.wide_buckets) approximated += bucket.requests;
  return absl::StrCat(
      ",\"model\":", JsonString(live.model), ",\"version\":", JsonString(live.version),
      ",\"requests\":", live.rows.requests, ",\"approximated_requests\":", approximated,
      ",\"rows_from\":", live.rows_are_demand ? "\"chunk_demand\"" : "\"requests\"",
      ",\"current_sizes\":", selection.current.has_value() ? JsonSizes(*selection.current) : "null",
      ",\"current_expected_padded_rows\":",
      selection.current.has_value() ? FormatRows(selection.current->expected_padded_rows) : "null");
}

// --max-batch-size, where given (0: no limit beyond the largest request).
std::optional<int64_t> MaxBatchOf(const SelectFlags& flags) {
  return flags.max_batch_size > 0 ? std::optional<int64_t>(flags.max_batch_size) : std::nullopt;
}

absl::StatusOr<Selection> Select(const BatchHistogram& h, const SelectFlags& flags) {
  Selection selection;
  ASSIGN_OR_RETURN(selection.chosen,
                   ChooseBatchSizes(h, static_cast<int>(flags.num_sizes), MaxBatchOf(flags)));
  selection.ladder = PowerOfTwoLadder(h, static_cast<int>(flags.num_sizes), MaxBatchOf(flags));
  return selection;
}

int SelectFromHistory(const SelectFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<BatchHistogram> history = ReadBatchHistory(flags.history_path);
  if (!history.ok()) return Failure(err, history.status().message());
  absl::StatusOr<Selection> selection = Select(*history, flags);
  if (!selection.ok()) return Failure(err, selection.status().message());
  if (flags.json) {
    out << "{" << JsonSelection(*selection) << "}\n";
  } else {
    PrintText(flags.history_path, *history, *selection, out);
  }
  return kCaptureExitOk;
}

// `select --max-graphs`: the chosen grid and the power-of-two grid.
struct GridSelection {
  GridChoice chosen;
  GridChoice power_of_two;
};

absl::StatusOr<GridSelection> SelectGrid(const ShapeHistogram& h, const SelectFlags& flags) {
  GridSelection selection;
  ASSIGN_OR_RETURN(selection.chosen, ChooseSizesAndBuckets(h, static_cast<int>(flags.max_graphs),
                                                           MaxBatchOf(flags)));
  selection.power_of_two =
      PowerOfTwoGrid(h, static_cast<int>(flags.max_graphs), MaxBatchOf(flags));
  return selection;
}

void PrintGrid(absl::string_view title, const GridChoice& grid, std::ostream& out) {
  out << title << ": sizes " << absl::StrJoin(grid.sizes, ", ") << " x buckets "
      << absl::StrJoin(grid.buckets, ", ") << " (" << grid.sizes.size() * grid.buckets.size()
      << " graphs)\n";
  out << "  expected padded positions per request: "
      << FormatRows(grid.expected_padded_positions) << "\n";
}

std::string JsonGrid(const GridSelection& selection) {
  const auto list = [](const std::vector<int64_t>& values) {
    return absl::StrCat("[", absl::StrJoin(values, ","), "]");
  };
  return absl::StrCat(
      "\"sizes\":", list(selection.chosen.sizes), ",\"buckets\":", list(selection.chosen.buckets),
      ",\"expected_padded_positions\":", FormatRows(selection.chosen.expected_padded_positions),
      ",\"pow2_sizes\":", list(selection.power_of_two.sizes),
      ",\"pow2_buckets\":", list(selection.power_of_two.buckets),
      ",\"pow2_expected_padded_positions\":",
      FormatRows(selection.power_of_two.expected_padded_positions));
}

int SelectGridFromHistory(const SelectFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ShapeHistogram> history = ReadShapeHistory(flags.history_path);
  if (!history.ok()) return Failure(err, history.status().message());
  absl::StatusOr<GridSelection> selection = SelectGrid(*history, flags);
  if (!selection.ok()) return Failure(err, selection.status().message());
  if (flags.json) {
    out << "{" << JsonGrid(*selection) << "}\n";
    return kCaptureExitOk;
  }
  int64_t requests = 0, longest = 0;
  std::set<int64_t> rows;
  for (const auto& [shape, count] : *history) {
    requests += count;
    rows.insert(shape.first);
    longest = std::max(longest, shape.second);
  }
  out << "history: " << flags.history_path << " (" << requests << " requests, " << rows.size()
      << " distinct row counts, " << history->size() << " distinct shapes, longest " << longest
      << ")\n";
  PrintGrid("chosen grid", selection->chosen, out);
  PrintGrid("power-of-two grid", selection->power_of_two, out);
  return kCaptureExitOk;
}

// Reloads the model with the chosen sizes (unless they are served already)
// and says so; returns the reload's JSON object, or "" on failure (reported
// on `err`).
std::string ReloadChosenSizes(const SelectFlags& flags, const LiveBatchSizes& live,
                              const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& buckets, std::ostream& out,
                              std::ostream& err) {
  const std::string address = JsonString(flags.reload_address);
  if (sizes == live.captured_sizes && (buckets.empty() || buckets == live.captured_buckets)) {
    if (!flags.json) {
      out << "not reloaded: the chosen " << (buckets.empty() ? "sizes are the sizes" : "grid is the grid")
          << " served now\n";
    }
    return absl::StrCat("{\"address\":", address, ",\"reloaded\":false}");
  }
  ModelReloadOptions options;
  options.address = flags.reload_address;
  options.model = live.model;
  options.version = live.version;
  options.batch_sizes = sizes;
  options.buckets = buckets;
  options.load_timeout = absl::Seconds(flags.reload_timeout_secs);
  absl::StatusOr<ModelReloadResult> reloaded = ReloadWithCaptureSizes(options);
  if (!reloaded.ok()) {
    Failure(err, absl::StrCat("reload: ", reloaded.status().ToString()));
    return "";
  }
  const double seconds = absl::ToDoubleSeconds(reloaded->load_time);
  if (!flags.json) {
    out << "reloaded '" << live.model << "' at " << flags.reload_address << " with capture sizes "
        << absl::StrJoin(sizes, ", ") << " (were " << absl::StrJoin(reloaded->previous_sizes, ", ")
        << ")";
    if (!buckets.empty()) {
      out << " and buckets " << absl::StrJoin(buckets, ", ") << " (were "
          << absl::StrJoin(reloaded->previous_buckets, ", ") << ")";
    }
    out << ": the load took " << absl::StrFormat("%.3f", seconds) << " s\n"
        << "  the repository's config.pbtxt is unchanged: a restarted server serves its "
        << (buckets.empty() ? "sizes" : "sizes and buckets") << "\n";
  }
  return absl::StrCat("{\"address\":", address, ",\"reloaded\":true,\"previous_sizes\":[",
                      absl::StrJoin(reloaded->previous_sizes, ","), "]",
                      buckets.empty() ? ""
                                      : absl::StrCat(",\"previous_buckets\":[",
                                                     absl::StrJoin(reloaded->previous_buckets, ","),
                                                     "]"),
                      ",\"load_seconds\":", FormatRows(seconds), "}");
}

// The live traffic of the model --from-metrics names; an error when it has
// answered nothing yet.
absl::StatusOr<LiveBatchSizes> ReadLiveTraffic(const SelectFlags& flags) {
  ASSIGN_OR_RETURN(LiveBatchSizes live, ReadLiveBatchSizesFromUrl(
                                            flags.metrics_url, flags.model, flags.model_version));
  if (live.rows.requests == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model '", live.model, "' version ", live.version,
        " has answered no requests since it was loaded (its graphserve_request_rows histogram "
        "at ",
        flags.metrics_url, " is empty): send it traffic first, or use --history"));
  }
  if (flags.plan_rows == "chunk-demand") {
    if (!live.chunk_demand.has_value() || live.chunk_demand->requests == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", live.model, "' version ", live.version,
          " has no graphserve_chunk_demand_rows samples at ", flags.metrics_url,
          ": it does not batch dynamically (no dynamic_batching in its config), or no chunk has "
          "run since it was loaded; --plan-rows chunk-demand needs them"));
    }
    live.rows = *live.chunk_demand;
    live.rows_are_demand = true;
  }
  return live;
}

int SelectFromMetrics(const SelectFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<LiveBatchSizes> live = ReadLiveTraffic(flags);
  if (!live.ok()) return Failure(err, live.status().message());
  absl::StatusOr<Selection> selection = Select(live->rows.histogram, flags);
  if (!selection.ok()) return Failure(err, selection.status().message());
  if (!live->captured_sizes.empty()) {
    selection->current = SizeChoice{live->captured_sizes,
                                    ExpectedPaddedRows(live->rows.histogram, live->captured_sizes)};
  }
  if (!flags.json) {
    PrintLiveText(flags.metrics_url, *live, *selection, out);
    out.flush();  // a reload may take minutes: show the choice first
  }
  std::string reload_json;
  if (!flags.reload_address.empty()) {
    reload_json = ReloadChosenSizes(flags, *live, selection->chosen.sizes, {}, out, err);
    if (reload_json.empty()) return kCaptureExitFailure;
  }
  if (flags.json) {
    out << "{" << JsonSelection(*selection) << JsonLive(*live, *selection);
    if (!reload_json.empty()) out << ",\"reload\":" << reload_json;
    out << "}\n";
  }
  return kCaptureExitOk;
}

// `select --from-metrics --max-graphs`: the grid from the live rows and
// lengths histograms, read as independent (the page gives them apart).
int SelectGridFromMetrics(const SelectFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<LiveBatchSizes> live = ReadLiveTraffic(flags);
  if (!live.ok()) return Failure(err, live.status().message());
  if (!live->lengths.has_value() || live->lengths->requests == 0) {
    return Failure(err, absl::StrCat("model '", live->model, "' version ", live->version,
                                     " has no graphserve_request_length histogram at ",
                                     flags.metrics_url,
                                     ": --max-graphs plans a model with one shape dim (a "
                                     "sequence length); for others use --num-sizes"));
  }
  const ShapeHistogram h = IndependentShapes(live->rows.histogram, live->lengths->histogram);
  absl::StatusOr<GridSelection> selection = SelectGrid(h, flags);
  if (!selection.ok()) return Failure(err, selection.status().message());
  const bool current_known = !live->captured_sizes.empty() && !live->captured_buckets.empty();
  GridChoice current;
  if (current_known) {
    current = {live->captured_sizes, live->captured_buckets,
               ExpectedPaddedPositions(h, live->captured_sizes, live->captured_buckets)};
  }
  if (!flags.json) {
    PrintLiveHeader(flags.metrics_url, *live, out);
    out << "note: rows and lengths come from two histograms and are planned as independent\n";
    if (!live->lengths->wide_buckets.empty()) {
      out << "note: lengths are known to the histogram's buckets (multiples of 8 and the "
             "buckets served); each request is counted at its bucket's upper bound\n";
    }
    if (current_known) {
      PrintGrid("current grid", current, out);
    } else {
      out << "current grid: unknown (no graphserve_graph_launches_total buckets for this "
             "version)\n";
    }
    PrintGrid("chosen grid", selection->chosen, out);
    PrintGrid("power-of-two grid", selection->power_of_two, out);
    out.flush();  // a reload may take minutes: show the choice first
  }
  std::string reload_json;
  if (!flags.reload_address.empty()) {
    reload_json = ReloadChosenSizes(flags, *live, selection->chosen.sizes,
                                    selection->chosen.buckets, out, err);
    if (reload_json.empty()) return kCaptureExitFailure;
  }
  if (flags.json) {
    const auto list = [](const std::vector<int64_t>& values) {
      return absl::StrCat("[", absl::StrJoin(values, ","), "]");
    };
    out << "{" << JsonGrid(*selection) << ",\"model\":" << JsonString(live->model)
        << ",\"version\":" << JsonString(live->version) << ",\"requests\":" << live->rows.requests
        << ",\"rows_from\":" << (live->rows_are_demand ? "\"chunk_demand\"" : "\"requests\"")
        << ",\"current_sizes\":" << (current_known ? list(current.sizes) : "null")
        << ",\"current_buckets\":" << (current_known ? list(current.buckets) : "null")
        << ",\"current_expected_padded_positions\":"
        << (current_known ? FormatRows(current.expected_padded_positions) : "null");
    if (!reload_json.empty()) out << ",\"reload\":" << reload_json;
    out << "}\n";
  }
  return kCaptureExitOk;
}

// `args` starts with "select".
int RunSelect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SelectFlags flags;
  CommandLine command_line(kSelectUsage);
  command_line.AddString("history", &flags.history_path, "Batch-size history file.");
  command_line.AddString("from-metrics", &flags.metrics_url,
                         "A running GraphServe's metrics URL, http://host:8002/metrics.");
  command_line.AddString("model", &flags.model, "With --from-metrics: the model (required).");
  command_line.AddString("model-version", &flags.model_version,
                         "With --from-metrics: the version; empty means the latest in the "
                         "metrics.");
  command_line.AddString("reload", &flags.reload_address,
                         "With --from-metrics: the server's gRPC address, host:port, to reload "
                         "the model on with the chosen sizes (needs "
                         "--model-control-mode=explicit there).");
  command_line.AddInt("reload-timeout-secs", &flags.reload_timeout_secs,
                      "How long the reload may take (capturing every new size), >= 1.");
  command_line.AddInt("num-sizes", &flags.num_sizes,
                      "How many batch sizes to choose, >= 1 (this or --max-graphs).");
  command_line.AddInt("max-graphs", &flags.max_graphs,
                      "Choose batch sizes and length buckets together, at most this many "
                      "graphs (sizes x buckets), for a model with one shape dim.");
  command_line.AddInt("max-batch-size", &flags.max_batch_size,
                      "Largest batch a graph may hold, >= 1; 0 means no limit beyond the "
                      "largest request seen.");
  command_line.AddString("plan-rows", &flags.plan_rows,
                         "With --from-metrics: requests (each request's rows) or chunk-demand "
                         "(what each chunk under dynamic batching could have merged; see above).");
  command_line.AddBool("json", &flags.json,
                       "Print one JSON object: {\"sizes\":[...],\"expected_padded_rows\":x,"
                       "\"pow2_sizes\":[...],\"pow2_expected_padded_rows\":y}; with "
                       "--from-metrics also \"model\", \"version\", \"requests\", "
                       "\"approximated_requests\", \"current_sizes\", "
                       "\"current_expected_padded_rows\" (null when unknown) and with --reload "
                       "\"reload\":{\"address\",\"reloaded\",\"previous_sizes\","
                       "\"load_seconds\"}.");

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  if (absl::Status status = command_line.Parse(static_cast<int>(argv.size()), argv.data());
      !status.ok()) {
    return Usage(err, absl::StrCat("select: ", status.message()));
  }
  if (command_line.help_requested()) {
    const std::string help = command_line.Help();
    out << help << (help.empty() || help.back() != '\n' ? "\n" : "");
    return kCaptureExitOk;
  }
  if (const std::string error = SelectFlagsError(flags); !error.empty()) return Usage(err, error);
  if (flags.max_graphs > 0) {
    return flags.metrics_url.empty() ? SelectGridFromHistory(flags, out, err)
                                     : SelectGridFromMetrics(flags, out, err);
  }
  return flags.metrics_url.empty() ? SelectFromHistory(flags, out, err)
                                   : SelectFromMetrics(flags, out, err);
}

constexpr char kPrepareUsage[] =
    "graphserve-capture prepare --model model.onnx --out REPO/MODEL [--streams M]\n"
    "    (--batch-sizes 1,8,64 | --history FILE --num-sizes N) [--max-batch-size X]\n"
    "    [--history FILE --max-graphs G]\n"
    "    [--buckets 64,128,512 | --buckets 480x640,736x1280] [--pad INPUT=VALUE,...]\n"
    "    [--shape-padding checked|exact] [--eager-extents 1024 | 1280x1280]\n"
    "    [--schedule auto|single|wavefront|asap] [--max-lanes L]\n"
    "    [--precision fp32|tf32|fp16|bf16|auto]\n"
    "\n"
    "Writes the model's config (its inputs and outputs as the file declares them, and\n"
    "a capture section from these flags), then loads it exactly as the server does:\n"
    "captures the model's run at each batch size (and shape bucket) on each of M\n"
    "streams into CUDA graphs, checks every graph against an eager run and an\n"
    "independent reference (and that padding rows never change real rows), measures\n"
    "each graph's eager and graph latency, and writes REPO/MODEL/config.pbtxt as\n"
    "loaded, REPO/MODEL/1/model.onnx and REPO/MODEL/capture_report.txt.\n"
    "\n"
    "A model with dims a request chooses (a sequence length, an image's height and\n"
    "width) is captured at every size at each bucket of --buckets: one extent per\n"
    "such dim, joined by x, in the order the model's inputs name them (prepare's\n"
    "first line names them, and so does its refusal of a bucket of the wrong\n"
    "length); without --buckets at the server's default buckets, 16 to 512 for\n"
    "each dim. A request runs in the smallest bucket that holds it, padded with\n"
    "each input's --pad value (0 when not given) where the load's check finds\n"
    "padding leaves the answer unchanged (--shape-padding checked, the default),\n"
    "else only at a bucket's exact extents.\n"
    "With --history FILE --max-graphs G instead, for a model with one such dim, the\n"
    "history holds `ROWSxLENGTH[,COUNT]` lines (see `select --help`) and the buckets\n"
    "are chosen from it with the sizes, at most G graphs a stream: with\n"
    "--batch-sizes too, only the buckets, for those sizes (what a model under dynamic\n"
    "batching wants: its executions merge the history's requests).\n"
    "--max-batch-size 0 serves the model without a batch dim, as Triton does: every\n"
    "dynamic dim, the first included, is a bucketed dim, and each request runs alone\n"
    "(give no batch sizes then). A request that no bucket takes is refused naming the\n"
    "buckets, or with --eager-extents (one limit per such dim) runs eagerly at its own\n"
    "extents, kernel by kernel, when each is within the limit.\n"
    "\n"
    "Independent branches of the model run on up to L streams inside each graph;\n"
    "--schedule auto (the default) times the schedules that differ at each graph and\n"
    "keeps the fastest (single unless another is more than 2% faster).\n"
    "The report (latency per graph, schedules, memory per slot with and without arena\n"
    "sharing, capture time) is printed too. Needs a CUDA GPU.";

// "64,128" or "480x640,736x1280": buckets of one extent per shape dim.
absl::StatusOr<std::vector<std::vector<int64_t>>> ParseBuckets(const std::string& text) {
  std::vector<std::vector<int64_t>> buckets;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<int64_t>& bucket = buckets.emplace_back();
    for (absl::string_view extent : absl::StrSplit(part, 'x')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(extent, &value) || value < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", part.substr(0, 32),
                         "' is not a bucket: give extents of 1 or more joined by x, "
                         "e.g. 128 or 480x640"));
      }
      bucket.push_back(value);
    }
  }
  return buckets;
}

// "input_ids=0,attention_mask=0": each input's pad value.
absl::StatusOr<std::vector<std::pair<std::string, double>>> ParsePadding(const std::string& text) {
  std::vector<std::pair<std::string, double>> padding;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    const std::pair<absl::string_view, absl::string_view> pair = absl::StrSplit(part, '=');
    double value = 0;
    if (pair.first.empty() || !absl::SimpleAtod(pair.second, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part.substr(0, 32), "' is not INPUT=VALUE, e.g. input_ids=0"));
    }
    padding.emplace_back(std::string(pair.first), value);
  }
  return padding;
}

// `args` starts with "prepare".
int RunPrepare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  PrepareOptions options;
  std::string batch_sizes;
  int64_t streams = options.num_streams;
  int64_t num_sizes = 0;
  int64_t max_graphs = 0;
  int64_t device = options.device;
  int64_t max_lanes = options.max_lanes;
  int64_t max_batch_size = -1;  // unset
  std::string precision;
  std::string buckets;
  std::string padding;
  std::string eager_extents;
  CommandLine command_line(kPrepareUsage);
  command_line.AddString("model", &options.model_path, "ONNX model file (required).");
  command_line.AddString("out", &options.out_dir,
                         "Model directory in a repository, REPO/MODEL (required); MODEL names "
                         "the model.");
  command_line.AddInt("streams", &streams, "Stream slots M, each with its own graphs, >= 1.");
  command_line.AddString("batch-sizes", &batch_sizes, "Comma-separated batch sizes to capture.");
  command_line.AddString("history", &options.history_path,
                         "Batch-size history to choose the sizes from (see `select --help`).");
  command_line.AddInt("num-sizes", &num_sizes, "How many sizes to choose from --history.");
  command_line.AddInt("max-graphs", &max_graphs,
                      "Instead of --num-sizes, for a model with one dim a request chooses: "
                      "choose the buckets from a ROWSxLENGTH --history too, at most this many "
                      "graphs a stream (with --batch-sizes, the buckets for those sizes).");
  command_line.AddInt("max-batch-size", &max_batch_size,
                      "Largest request the server accepts (split above the largest captured "
                      "size); with --history also the largest size chosen. Default: the "
                      "largest captured size. 0: the model does not batch (Triton's "
                      "max_batch_size 0).");
  command_line.AddString("buckets", &buckets,
                         "Shape buckets to capture every size at: comma-separated, each one "
                         "extent per dim a request chooses, joined by x (128 or 480x640).");
  command_line.AddString("eager-extents", &eager_extents,
                         "Largest extents, one per dim a request chooses, joined by x, of a "
                         "request no bucket takes that runs eagerly at its own extents; without: "
                         "such requests are refused.");
  command_line.AddString("pad", &padding,
                         "What padded positions of an input hold: INPUT=VALUE, comma-separated "
                         "(0 for an input not named).");
  command_line.AddString("shape-padding", &options.shape_padding,
                         "checked (the default): requests shorter than a bucket are padded into "
                         "it where the load's check finds the answer unchanged; exact: requests "
                         "bring a bucket's extents.");
  command_line.AddInt("device", &device, "CUDA device ordinal.");
  command_line.AddBool("allow-tf32", &options.allow_tf32,
                       "Allow TF32 tensor-core GEMMs and convolutions (faster, relative error near 3e-4).");
  command_line.AddInt("cost-iters", &options.cost_iters,
                      "Timed launches per size and mode for the cost table, >= 1.");
  command_line.AddString("schedule", &options.schedule,
                         "How each graph runs independent branches on several streams: auto "
                         "(time the candidates per size, keep the fastest), single (one "
                         "stream), wavefront or asap (see `graphserve-capture schedule`).");
  command_line.AddInt("max-lanes", &max_lanes, "Most streams one graph may use, 1 to 16.");
  command_line.AddString("precision", &precision,
                         "What the model computes in: fp32 (the default, as written), tf32 "
                         "(float32 GEMMs and convolutions on TF32 tensor cores), fp16 or bf16 "
                         "(weights converted once; LayerNorm, Softmax, sums and exp/log/pow kept "
                         "in float32; inputs and outputs keep their declared types), or auto "
                         "(float16, keeping also the nodes whose values on one calibration batch "
                         "pass float16's range; the report lists each and why). Written into "
                         "config.pbtxt's capture.precision.");

  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  if (absl::Status status = command_line.Parse(static_cast<int>(argv.size()), argv.data());
      !status.ok()) {
    return Usage(err, absl::StrCat("prepare: ", status.message()));
  }
  if (command_line.help_requested()) {
    out << command_line.Help() << "\n";
    return kCaptureExitOk;
  }
  if (options.model_path.empty()) return Usage(err, "prepare: --model is required (see --help)");
  if (options.out_dir.empty()) return Usage(err, "prepare: --out is required (see --help)");
  if (max_batch_size == 0 && !(batch_sizes.empty() && options.history_path.empty())) {
    return Usage(err,
                 "prepare: --max-batch-size 0 serves the model without a batch dim, each "
                 "request alone: give no --batch-sizes or --history");
  }
  if (max_graphs != 0) {
    if (max_graphs < 1 || max_graphs > 4096) {
      return Usage(err,
                   absl::StrCat("prepare: --max-graphs must be in [1, 4096], got ", max_graphs));
    }
    if (options.history_path.empty() || num_sizes != 0 || !buckets.empty()) {
      return Usage(err,
                   "prepare: --max-graphs chooses buckets from a --history, instead of "
                   "--num-sizes and --buckets");
    }
  } else {
    if (max_batch_size != 0 && batch_sizes.empty() == options.history_path.empty()) {
      return Usage(err, "prepare: give exactly one of --batch-sizes and --history");
    }
    if (!options.history_path.empty() && num_sizes < 1) {
      return Usage(err, "prepare: --history needs --num-sizes >= 1 or --max-graphs");
    }
  }
  if (streams < 1 || streams > 64) {
    return Usage(err, absl::StrCat("prepare: --streams must be between 1 and 64, got ", streams));
  }
  if (max_lanes < 1 || max_lanes > 16) {
    return Usage(err, absl::StrCat("prepare: --max-lanes must be between 1 and 16, got ",
                                   max_lanes));
  }
  if (absl::Status status = ParseScheduleRequest(options.schedule).status(); !status.ok()) {
    return Usage(err, absl::StrCat("prepare: --schedule: ", status.message()));
  }
  absl::StatusOr<ModelPrecision> parsed_precision = ParseModelPrecision(precision);
  if (!parsed_precision.ok()) {
    return Usage(err, absl::StrCat("prepare: --precision: ", parsed_precision.status().message()));
  }
  options.precision = *parsed_precision;
  options.max_lanes = static_cast<int>(max_lanes);
  if (options.cost_iters < 1 || max_batch_size < -1) {
    return Usage(err, "prepare: --cost-iters must be >= 1 and --max-batch-size >= 0");
  }
  if (max_batch_size >= 0) options.max_batch_size = max_batch_size;
  if (!buckets.empty()) {
    absl::StatusOr<std::vector<std::vector<int64_t>>> parsed = ParseBuckets(buckets);
    if (!parsed.ok())
      return Usage(err, absl::StrCat("prepare: --buckets: ", parsed.status().message()));
    options.buckets = *std::move(parsed);
  }
  if (!eager_extents.empty()) {
    absl::StatusOr<std::vector<std::vector<int64_t>>> parsed = ParseBuckets(eager_extents);
    if (!parsed.ok() || parsed->size() != 1) {
      return Usage(err, absl::StrCat("prepare: --eager-extents: give one extent per dim joined "
                                     "by x, e.g. 1024 or 1280x1280, not '",
                                     eager_extents.substr(0, 32), "'"));
    }
    options.eager_extents = parsed->front();
  }
  if (!padding.empty()) {
    absl::StatusOr<std::vector<std::pair<std::string, double>>> parsed = ParsePadding(padding);
    if (!parsed.ok())
      return Usage(err, absl::StrCat("prepare: --pad: ", parsed.status().message()));
    options.padding = *std::move(parsed);
  }
  if (!options.shape_padding.empty() && options.shape_padding != "checked" &&
      options.shape_padding != "exact") {
    return Usage(err, absl::StrCat("prepare: --shape-padding must be checked or exact, got '",
                                   options.shape_padding.substr(0, 32), "'"));
  }
  if (!batch_sizes.empty()) {
    absl::StatusOr<std::vector<int64_t>> sizes = ParseIntList(batch_sizes, 1);
    if (!sizes.ok()) return Usage(err, absl::StrCat("prepare: --batch-sizes: ", sizes.status().message()));
    options.batch_sizes = *std::move(sizes);
  }
  options.num_streams = static_cast<int>(streams);
  options.num_sizes = static_cast<int>(num_sizes);
  options.max_graphs = static_cast<int>(max_graphs);
  options.device = static_cast<int>(device);
  options.interactive_progress = isatty(STDERR_FILENO) != 0;

  absl::StatusOr<PrepareReport> report = Prepare(options, err);
  if (!report.ok()) {
    err << kProgram << ": prepare: " << report.status() << "\n";
    return kCaptureExitFailure;
  }
  out << FormatPrepareReport(*report);
  out << "wrote " << options.out_dir << "/config.pbtxt, " << options.out_dir
      << "/1/model.onnx and " << options.out_dir << "/capture_report.txt\n";
  return kCaptureExitOk;
}

}  // namespace

constexpr char kScheduleUsage[] =
    "graphserve-capture schedule --model model.onnx [--batch-size B] [--policy P]\n"
    "    [--max-lanes L] [--precision fp32|tf32|fp16|bf16] [--json]\n"
    "\n"
    "Prints how the model's run at batch size B would be issued, without a GPU: the\n"
    "steps after fusion (each names the ONNX nodes it runs; nodes the precision pass\n"
    "adds are named after the value they convert), the lane (stream) of\n"
    "each and the steps of other lanes it waits for. P is single (one lane),\n"
    "wavefront (each wave of ready steps spread over lanes) or asap (the heaviest\n"
    "remaining chain of steps per lane). --json prints {\"policy\", \"lanes\",\n"
    "\"max_width\", \"critical_path\", \"steps\": [{\"nodes\", \"lane\", \"after\"}]}.";

// `args` starts with "schedule".
int RunSchedule(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string model_path;
  int64_t batch_size = 1;
  std::string policy_name = "single";
  int64_t max_lanes = 4;
  bool json = false;
  CommandLine command_line(kScheduleUsage);
  command_line.AddString("model", &model_path, "ONNX model file (required).");
  command_line.AddInt("batch-size", &batch_size, "Batch size to bind the model for, >= 1.");
  command_line.AddString("policy", &policy_name, "single, wavefront or asap.");
  command_line.AddInt("max-lanes", &max_lanes, "Most lanes (streams) to use, >= 1.");
  std::string precision;
  command_line.AddString("precision", &precision,
                         "What the model computes in, as config.pbtxt's capture.precision: fp32 "
                         "(the default: as written), tf32, fp16 or bf16. auto chooses per node "
                         "on a calibration batch and is prepare's.");
  command_line.AddBool("json", &json, "Print the schedule as one JSON object.");
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  if (absl::Status status = command_line.Parse(static_cast<int>(argv.size()), argv.data());
      !status.ok()) {
    return Usage(err, absl::StrCat("schedule: ", status.message()));
  }
  if (command_line.help_requested()) {
    const std::string help = command_line.Help();
    out << help << (help.empty() || help.back() != '\n' ? "\n" : "");
    return kCaptureExitOk;
  }
  if (model_path.empty()) return Usage(err, "schedule: --model is required (see --help)");
  if (batch_size < 1) {
    return Usage(err, absl::StrCat("schedule: --batch-size must be at least 1, got ", batch_size));
  }
  if (max_lanes < 1 || max_lanes > 64) {
    return Usage(err, absl::StrCat("schedule: --max-lanes must be in [1, 64], got ", max_lanes));
  }
  absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(policy_name);
  if (!policy.ok()) {
    return Usage(err, absl::StrCat("schedule: --policy: ", policy.status().message()));
  }
  absl::StatusOr<ModelPrecision> parsed_precision = ParseModelPrecision(precision);
  if (!parsed_precision.ok()) {
    return Usage(err, absl::StrCat("schedule: --precision: ", parsed_precision.status().message()));
  }
  if (*parsed_precision == ModelPrecision::kAuto) {
    return Usage(err,
                 "schedule: --precision auto chooses per node on a calibration batch; "
                 "prepare --precision auto lists its choice in capture_report.txt");
  }
  ModelPassOptions passes;
  passes.precision = *parsed_precision;
  absl::StatusOr<Model> model = ImportOnnxFile(model_path, passes);
  if (!model.ok()) {
    err << kProgram << ": schedule: " << model.status().message() << "\n";
    return kCaptureExitFailure;
  }
  if (std::optional<std::string> notice = Float32GemmsOfHalfModel(*model, passes.precision)) {
    err << kProgram << ": schedule: note: " << *notice << "\n";
  }
  absl::StatusOr<BoundGraph> graph = BindModel(*model, {.batch_size = batch_size});
  if (!graph.ok()) {
    err << kProgram << ": schedule: " << graph.status().message() << "\n";
    return kCaptureExitFailure;
  }
  const FusionPlan plan = PlanFusion(*graph, {});
  const Schedule schedule =
      MakeSchedule(*graph, plan, {.policy = *policy, .max_lanes = static_cast<int>(max_lanes)});
  if (json) {
    out << ScheduleToJson(*graph, plan, schedule);
    return kCaptureExitOk;
  }
  out << model_path << " at batch " << batch_size << ": " << graph->nodes.size() << " nodes in "
      << plan.steps.size() << " steps (" << plan.conv_steps << " convolutions with "
      << plan.fused_into_convs << " nodes fused into their epilogues, " << plan.gemm_bias_epilogues
      << " GEMM bias epilogues, " << plan.gemm_scales << " GEMMs with scales in alpha, "
      << plan.erf_gelus << " fused GELUs, " << plan.add_layer_norms
      << " residual Adds with their LayerNorm, " << plan.fused_into_pointwise << " nodes in "
      << plan.pointwise_regions << " pointwise regions, " << plan.contiguous_views
      << " Gathers read in place)\n";
  out << "policy " << SchedulePolicyName(schedule.policy) << ": " << schedule.lanes
      << " lane(s); graph width " << schedule.max_width << ", critical path "
      << schedule.critical_path << " steps\n";
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const ScheduledStep& step = schedule.steps[i];
    std::vector<std::string> names;
    for (int n : plan.steps[step.step].nodes) names.push_back(graph->nodes[n].name);
    out << absl::StrFormat("%5d  lane %d  %s", i, step.lane, absl::StrJoin(names, " + "));
    if (!step.after.empty()) out << "  (after " << absl::StrJoin(step.after, ", ") << ")";
    out << "\n";
  }
  return kCaptureExitOk;
}

std::string CaptureUsage() {
  return "usage: graphserve-capture <command> [flags]\n"
         "\n"
         "Commands:\n"
         "  select   Choose the typical batch sizes to capture from a history of request\n"
         "           batch sizes: graphserve-capture select --history FILE --num-sizes N\n"
         "           [--max-batch-size X] [--json]; or from a running server's live\n"
         "           histogram, reloading the model with them (no downtime):\n"
         "           graphserve-capture select --from-metrics http://host:8002/metrics\n"
         "           --model NAME --num-sizes N [--reload host:8001].\n"
         "           See `graphserve-capture select --help`.\n"
         "  prepare  Capture a model's CUDA graphs on the GPU and write its repository entry:\n"
         "           graphserve-capture prepare --model model.onnx --out REPO/MODEL\n"
         "           [--streams M] (--batch-sizes 1,8,64 | --history FILE --num-sizes N).\n"
         "           See `graphserve-capture prepare --help`.\n"
         "  schedule Print the steps, lanes and waits the model would run with, without a\n"
         "           GPU: graphserve-capture schedule --model model.onnx [--batch-size B]\n"
         "           [--policy single|wavefront|asap] [--json].\n"
         "\n"
         "Exit codes: 0 success, 1 failure (e.g. a bad history file), 2 usage error.\n";
}

int RunCaptureCommand(const std::vector<std::string>& args, std::ostream& out,
                      std::ostream& err) {
  if (args.empty()) {
    err << CaptureUsage();
    return kCaptureExitUsage;
  }
  const std::string& command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    out << CaptureUsage();
    return kCaptureExitOk;
  }
  if (command == "select") return RunSelect(args, out, err);
  if (command == "prepare") return RunPrepare(args, out, err);
  if (command == "schedule") return RunSchedule(args, out, err);
  return Usage(err, absl::StrCat("unknown command '", command, "' (see --help)"));
}

}  // namespace graphserve
