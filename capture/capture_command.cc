#include "capture/capture_command.h"

#include <unistd.h>

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/command_line.h"
#include "capture/batch_sizes.h"
#include "capture/prepare.h"
#include "capture/schedule_choice.h"
#include "runtime/bind.h"
#include "runtime/fusion.h"
#include "runtime/onnx_import.h"
#include "runtime/schedule.h"

namespace graphserve {
namespace {

constexpr char kProgram[] = "graphserve-capture";

constexpr char kSelectUsage[] =
    "graphserve-capture select --history FILE --num-sizes N [--max-batch-size X] [--json]\n"
    "\n"
    "Chooses the N typical batch sizes to capture CUDA graphs for, minimising the\n"
    "expected padded rows per request exactly, and compares them with a power-of-two\n"
    "ladder of N sizes. FILE holds one request batch size per line, or `size,count`\n"
    "lines; blank lines and # comments are ignored. The largest size is the largest\n"
    "in the history, or X when smaller: a request of b > X rows runs as floor(b/X)\n"
    "graphs of X rows plus its remainder padded up to a chosen size.";

int Usage(std::ostream& err, absl::string_view message) {
  err << kProgram << ": " << message << "\n";
  return kCaptureExitUsage;
}

std::string FormatRows(double rows) { return absl::StrFormat("%.10g", rows); }

void PrintText(const std::string& history_path, const BatchHistogram& h,
               const SizeChoice& choice, const SizeChoice& ladder, std::ostream& out) {
  int64_t requests = 0;
  for (const auto& [size, count] : h) requests += count;
  out << "history: " << history_path << " (" << requests << " requests, " << h.size()
      << " distinct sizes, largest " << h.rbegin()->first << ")\n";
  out << "chosen sizes: " << absl::StrJoin(choice.sizes, ", ") << "\n";
  out << "  expected padded rows per request: " << FormatRows(choice.expected_padded_rows)
      << "\n";
  out << "power-of-two ladder: " << absl::StrJoin(ladder.sizes, ", ") << "\n";
  out << "  expected padded rows per request: " << FormatRows(ladder.expected_padded_rows)
      << "\n";
}

void PrintJson(const SizeChoice& choice, const SizeChoice& ladder, std::ostream& out) {
  out << "{\"sizes\":[" << absl::StrJoin(choice.sizes, ",")
      << "],\"expected_padded_rows\":" << FormatRows(choice.expected_padded_rows)
      << ",\"pow2_sizes\":[" << absl::StrJoin(ladder.sizes, ",")
      << "],\"pow2_expected_padded_rows\":" << FormatRows(ladder.expected_padded_rows)
      << "}\n";
}

// `args` starts with "select".
int RunSelect(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::string history_path;
  int64_t num_sizes = 0;
  int64_t max_batch_size = 0;
  bool json = false;
  CommandLine command_line(kSelectUsage);
  command_line.AddString("history", &history_path, "Batch-size history file (required).");
  command_line.AddInt("num-sizes", &num_sizes, "How many batch sizes to choose, >= 1 (required).");
  command_line.AddInt("max-batch-size", &max_batch_size,
                      "Largest batch a graph may hold, >= 1; 0 means no limit beyond the "
                      "history's largest size.");
  command_line.AddBool("json", &json,
                       "Print one JSON object: {\"sizes\":[...],\"expected_padded_rows\":x,"
                       "\"pow2_sizes\":[...],\"pow2_expected_padded_rows\":y}.");

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
  if (history_path.empty()) return Usage(err, "select: --history is required (see --help)");
  if (num_sizes < 1) {
    return Usage(err, num_sizes == 0
                          ? "select: --num-sizes is required (see --help)"
                          : absl::StrCat("select: --num-sizes must be at least 1, got ",
                                         num_sizes));
  }
  if (num_sizes > 4096) {
    return Usage(err,
                 absl::StrCat("select: --num-sizes must be at most 4096, got ", num_sizes));
  }
  if (max_batch_size < 0) {
    return Usage(err, absl::StrCat("select: --max-batch-size must be at least 1, got ",
                                   max_batch_size));
  }
  const std::optional<int64_t> max_batch =
      max_batch_size > 0 ? std::optional<int64_t>(max_batch_size) : std::nullopt;

  absl::StatusOr<BatchHistogram> history = ReadBatchHistory(history_path);
  if (!history.ok()) {
    err << kProgram << ": select: " << history.status().message() << "\n";
    return kCaptureExitFailure;
  }
  absl::StatusOr<SizeChoice> choice =
      ChooseBatchSizes(*history, static_cast<int>(num_sizes), max_batch);
  if (!choice.ok()) {
    err << kProgram << ": select: " << choice.status().message() << "\n";
    return kCaptureExitFailure;
  }
  const SizeChoice ladder = PowerOfTwoLadder(*history, static_cast<int>(num_sizes), max_batch);
  if (json) {
    PrintJson(*choice, ladder, out);
  } else {
    PrintText(history_path, *history, *choice, ladder, out);
  }
  return kCaptureExitOk;
}

constexpr char kPrepareUsage[] =
    "graphserve-capture prepare --model model.onnx --out REPO/MODEL [--streams M]\n"
    "    (--batch-sizes 1,8,64 | --history FILE --num-sizes N) [--max-batch-size X]\n"
    "    [--schedule auto|single|wavefront|asap] [--max-lanes L]\n"
    "\n"
    "Captures the model's run at each batch size on each of M streams into CUDA\n"
    "graphs, checks every graph against an eager run (and that padding rows never\n"
    "change real rows), measures each size's eager and graph latency, and writes\n"
    "REPO/MODEL/config.pbtxt, REPO/MODEL/1/model.onnx and REPO/MODEL/capture_report.txt.\n"
    "Independent branches of the model run on up to L streams inside each graph;\n"
    "--schedule auto (the default) times the schedules that differ at each size and\n"
    "keeps the fastest (single unless another is more than 2% faster).\n"
    "The report (latency per size, schedules, memory per slot with and without arena\n"
    "sharing, capture time) is printed too. Needs a CUDA GPU.";

// `args` starts with "prepare".
int RunPrepare(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  PrepareOptions options;
  std::string batch_sizes;
  int64_t streams = options.num_streams;
  int64_t num_sizes = 0;
  int64_t device = options.device;
  int64_t max_lanes = options.max_lanes;
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
  command_line.AddInt("max-batch-size", &options.max_batch_size,
                      "Largest request the server accepts (split above the largest captured "
                      "size); with --history also the largest size chosen. 0: the largest "
                      "captured size.");
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
  if (batch_sizes.empty() == options.history_path.empty()) {
    return Usage(err, "prepare: give exactly one of --batch-sizes and --history");
  }
  if (!options.history_path.empty() && num_sizes < 1) {
    return Usage(err, "prepare: --history needs --num-sizes >= 1");
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
  options.max_lanes = static_cast<int>(max_lanes);
  if (options.cost_iters < 1 || options.max_batch_size < 0) {
    return Usage(err, "prepare: --cost-iters must be >= 1 and --max-batch-size >= 0");
  }
  if (!batch_sizes.empty()) {
    absl::StatusOr<std::vector<int64_t>> sizes = ParseIntList(batch_sizes, 1);
    if (!sizes.ok()) return Usage(err, absl::StrCat("prepare: --batch-sizes: ", sizes.status().message()));
    options.batch_sizes = *std::move(sizes);
  }
  options.num_streams = static_cast<int>(streams);
  options.num_sizes = static_cast<int>(num_sizes);
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
    "    [--max-lanes L] [--json]\n"
    "\n"
    "Prints how the model's run at batch size B would be issued, without a GPU: the\n"
    "steps after fusion (each names the ONNX nodes it runs), the lane (stream) of\n"
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
  absl::StatusOr<Model> model = ImportOnnxFile(model_path);
  if (!model.ok()) {
    err << kProgram << ": schedule: " << model.status().message() << "\n";
    return kCaptureExitFailure;
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
      << " GEMM bias epilogues, " << plan.erf_gelus << " fused GELUs)\n";
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
         "           [--max-batch-size X] [--json]. See `graphserve-capture select --help`.\n"
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
