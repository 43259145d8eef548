// An ensemble of a preprocessing model and a CNN, served three ways side by
// side in one process on one GPU, each model loaded as the server loads it:
//   pipeline  the ensemble replayed as one CUDA graph (Note [Ensembles as one
//             graph] in server/ensemble_scheduler.h);
//   steps     the same ensemble run step by step (capture.graphs_disabled on
//             the ensemble): two requests, the tensor between them in the
//             ensemble's device buffer (Note [Ensemble tensors on the
//             device]);
//   host      step by step with capture.host_step_tensors: the tensor
//             through the host, as Triton passes it;
//   calls     the two models called one after the other, as a client
//             without ensembles would (in process: no network in any mode).
// Prints per batch size the median and mean latency of each, the ratios, and
// the pipeline's and the steps' relative errors against the calls; --out
// writes them as JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "common/command_line.h"
#include "common/dtype_table.h"
#include "common/status.h"
#include "common/tensor.h"
#include "proto/config_dtype.h"
#include "server/ensemble_scheduler.h"
#include "server/served_model.h"

namespace graphserve {
namespace {

using Clock = std::chrono::steady_clock;

// Loads `model_file` as model `name` of a repository in `directory`, its
// interface completed from the file, its graphs at `sizes`.
absl::StatusOr<std::shared_ptr<ServedModel>> LoadModel(const std::filesystem::path& directory,
                                                       const std::string& name,
                                                       const std::string& model_file,
                                                       const std::vector<int64_t>& sizes) {
  const std::filesystem::path version = directory / name / "1";
  std::filesystem::create_directories(version);
  const std::filesystem::path path = version / "model.onnx";
  std::filesystem::copy_file(model_file, path, std::filesystem::copy_options::overwrite_existing);
  RepositoryModel entry;
  entry.name = name;
  entry.directory = (directory / name).string();
  entry.config.set_name(name);
  entry.config.set_max_batch_size(sizes.back());
  for (int64_t size : sizes) entry.config.mutable_capture()->add_batch_sizes(size);
  ASSIGN_OR_RETURN(std::unique_ptr<ServedModel> model,
                   ServedModel::Load(entry, {.version = 1, .model_path = path.string()},
                                     ServedModelOptions{}));
  return std::shared_ptr<ServedModel>(std::move(model));
}

// How the ensemble runs.
enum class Mode { kPipeline, kSteps, kHostSteps };

// The ensemble IMAGE -> preprocess -> PIXELS -> cnn -> SCORES over the two
// models' one input and first output.
inference::ModelConfig EnsembleConfig(const ServedModel& preprocess, const ServedModel& cnn,
                                      Mode mode) {
  inference::ModelConfig config;
  config.set_name("pipeline");
  config.set_platform("ensemble");
  config.set_max_batch_size(preprocess.config().max_batch_size());
  *config.add_input() = preprocess.config().input(0);
  config.mutable_input(0)->set_name("IMAGE");
  *config.add_output() = cnn.config().output(0);
  config.mutable_output(0)->set_name("SCORES");
  config.mutable_capture()->set_graphs_disabled(mode != Mode::kPipeline);
  config.mutable_capture()->set_host_step_tensors(mode == Mode::kHostSteps);
  auto* first = config.mutable_ensemble_scheduling()->add_step();
  first->set_model_name("preprocess");
  first->set_model_version(-1);
  (*first->mutable_input_map())[preprocess.config().input(0).name()] = "IMAGE";
  (*first->mutable_output_map())[preprocess.config().output(0).name()] = "PIXELS";
  auto* second = config.mutable_ensemble_scheduling()->add_step();
  second->set_model_name("cnn");
  second->set_model_version(-1);
  (*second->mutable_input_map())[cnn.config().input(0).name()] = "PIXELS";
  (*second->mutable_output_map())[cnn.config().output(0).name()] = "SCORES";
  return config;
}

absl::Status Call(ServedModel& model, const inference::ModelInferRequest& request,
                  inference::ModelInferResponse* response) {
  absl::Notification answered;
  absl::Status status;
  model.Infer(&request, response, [&](const absl::Status& answer) {
    status = answer;
    answered.Notify();
  });
  answered.WaitForNotification();
  return status;
}

// A request for `model`'s first input (named `input_name`) holding `bytes`.
inference::ModelInferRequest Request(const std::string& model, const std::string& input_name,
                                     const inference::ModelInput& spec, int64_t rows,
                                     std::string bytes) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  auto* input = request.add_inputs();
  input->set_name(input_name);
  input->set_datatype(KServeDatatype(*DTypeFromConfig(spec.data_type())));
  input->add_shape(rows);
  for (int64_t dim : spec.dims()) input->add_shape(dim);
  request.add_raw_input_contents(std::move(bytes));
  return request;
}

struct Timing {
  double p50_us = 0;
  double mean_us = 0;
};

// Runs `once` `warmup` times, then `iters` times timed.
absl::StatusOr<Timing> Time(int64_t warmup, int64_t iters,
                            const std::function<absl::Status()>& once) {
  for (int64_t i = 0; i < warmup; ++i) RETURN_IF_ERROR(once());
  std::vector<double> us;
  for (int64_t i = 0; i < iters; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(once());
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  return Timing{us[us.size() / 2], std::accumulate(us.begin(), us.end(), 0.0) / us.size()};
}

double RelativeErrorOf(const std::string& got, const std::string& want, DType dtype, int64_t rows,
                       const Dims& row_dims) {
  Dims dims = {rows};
  dims.insert(dims.end(), row_dims.begin(), row_dims.end());
  HostTensor a(dtype, dims);
  HostTensor b(dtype, dims);
  if (got.size() != a.bytes() || want.size() != b.bytes()) return 1e30;
  std::memcpy(a.raw(), got.data(), a.bytes());
  std::memcpy(b.raw(), want.data(), b.bytes());
  return RelativeError(a, b);
}

absl::Status Main(int argc, char** argv) {
  std::string preprocess_file;
  std::string cnn_file;
  std::string batch_sizes = "1,8";
  int64_t iters = 200;
  int64_t warmup = 20;
  std::string out;
  CommandLine command_line(
      "ensemble_bench --preprocess FILE --cnn FILE [--batch-sizes 1,8] [--iters N] [--out FILE]\n"
      "Times an ensemble of two ONNX models replayed as one CUDA graph against the same\n"
      "ensemble run step by step and the two models called one after the other.");
  command_line.AddString("preprocess", &preprocess_file, "the first model (one input, its first "
                                                         "output the second model's input)");
  command_line.AddString("cnn", &cnn_file, "the second model");
  command_line.AddString("batch-sizes", &batch_sizes, "captured and timed, comma-separated");
  command_line.AddInt("iters", &iters, "timed requests per batch size and mode");
  command_line.AddInt("warmup", &warmup, "untimed requests first");
  command_line.AddString("out", &out, "JSON results file (optional)");
  RETURN_IF_ERROR(command_line.Parse(argc, argv));
  if (command_line.help_requested()) {
    std::printf("%s", command_line.Help().c_str());
    return absl::OkStatus();
  }
  if (preprocess_file.empty() || cnn_file.empty()) {
    return absl::InvalidArgumentError("--preprocess and --cnn are required (see --help)");
  }
  std::vector<int64_t> sizes;
  for (absl::string_view size : absl::StrSplit(batch_sizes, ',')) {
    int64_t value = 0;
    if (!absl::SimpleAtoi(size, &value) || value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--batch-sizes: bad size '", size, "'"));
    }
    sizes.push_back(value);
  }
  std::sort(sizes.begin(), sizes.end());

  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / "ensemble_bench_repository";
  ASSIGN_OR_RETURN(const std::shared_ptr<ServedModel> preprocess,
                   LoadModel(directory, "preprocess", preprocess_file, sizes));
  ASSIGN_OR_RETURN(const std::shared_ptr<ServedModel> cnn,
                   LoadModel(directory, "cnn", cnn_file, sizes));
  const ComposingConfigLookup lookup = [&](const inference::ModelEnsembling::Step& step)
      -> absl::StatusOr<inference::ModelConfig> {
    return step.model_name() == "preprocess" ? preprocess->config() : cnn->config();
  };
  const ModelFinder find = [&](absl::string_view name, absl::string_view)
      -> absl::StatusOr<std::shared_ptr<ServedModel>> {
    return name == "preprocess" ? preprocess : cnn;
  };
  std::unique_ptr<ServedModel> ensembles[3];
  const char* const mode_names[3] = {"pipeline", "steps", "host"};
  for (Mode mode : {Mode::kPipeline, Mode::kSteps, Mode::kHostSteps}) {
    const int m = static_cast<int>(mode);
    RepositoryModel entry;
    entry.name = "pipeline";
    entry.config = EnsembleConfig(*preprocess, *cnn, mode);
    ASSIGN_OR_RETURN(ensembles[m],
                     LoadEnsemble(entry, {.version = 1, .model_path = ""}, lookup, find));
    std::printf("%s ensemble: %s\n", mode_names[m], ensembles[m]->summary().executor.c_str());
  }
  if (ensembles[0]->summary().executor.find("one CUDA graph") == std::string::npos) {
    return absl::FailedPreconditionError("the ensemble was not built as one CUDA graph");
  }

  const inference::ModelInput& image = preprocess->config().input(0);
  const inference::ModelOutput& scores = cnn->config().output(0);
  ASSIGN_OR_RETURN(const DType image_dtype, DTypeFromConfig(image.data_type()));
  ASSIGN_OR_RETURN(const DType scores_dtype, DTypeFromConfig(scores.data_type()));
  const Dims score_dims(scores.dims().begin(), scores.dims().end());
  std::string json = "{\"rows\": [";
  std::printf(
      "| batch | pipeline p50 us | steps p50 us | host steps p50 us | calls p50 us | "
      "pipeline / calls | pipeline / steps | steps / host steps | rel err vs calls "
      "(pipeline, steps) |\n|---|---|---|---|---|---|---|---|---|\n");
  for (int64_t rows : sizes) {
    Dims dims = {rows};
    dims.insert(dims.end(), image.dims().begin(), image.dims().end());
    const HostTensor input = RandomTensor(image_dtype, dims, 20261129 + rows);
    const std::string bytes(static_cast<const char*>(input.raw()), input.bytes());
    const inference::ModelInferRequest to_ensemble =
        Request("pipeline", "IMAGE", image, rows, bytes);
    const inference::ModelInferRequest to_preprocess =
        Request("preprocess", image.name(), image, rows, bytes);
    inference::ModelInferResponse piped;
    inference::ModelInferResponse stepped;
    inference::ModelInferResponse host_stepped;
    inference::ModelInferResponse called;
    auto calls = [&]() -> absl::Status {
      inference::ModelInferResponse pixels;
      RETURN_IF_ERROR(Call(*preprocess, to_preprocess, &pixels));
      inference::ModelInferRequest to_cnn = Request(
          "cnn", cnn->config().input(0).name(), cnn->config().input(0), rows,
          std::move(*pixels.mutable_raw_output_contents(0)));
      return Call(*cnn, to_cnn, &called);
    };
    ASSIGN_OR_RETURN(const Timing pipeline_time, Time(warmup, iters, [&] {
                       return Call(*ensembles[0], to_ensemble, &piped);
                     }));
    ASSIGN_OR_RETURN(const Timing steps_time, Time(warmup, iters, [&] {
                       return Call(*ensembles[1], to_ensemble, &stepped);
                     }));
    ASSIGN_OR_RETURN(const Timing host_steps_time, Time(warmup, iters, [&] {
                       return Call(*ensembles[2], to_ensemble, &host_stepped);
                     }));
    ASSIGN_OR_RETURN(const Timing calls_time, Time(warmup, iters, calls));
    const auto error_of = [&](const inference::ModelInferResponse& response) {
      return RelativeErrorOf(response.raw_output_contents(0), called.raw_output_contents(0),
                             scores_dtype, rows, score_dims);
    };
    const double error = error_of(piped);
    const double steps_error = std::max(error_of(stepped), error_of(host_stepped));
    std::printf("| %ld | %.1f | %.1f | %.1f | %.1f | %.2fx | %.2fx | %.2fx | %.1e, %.1e |\n",
                static_cast<long>(rows), pipeline_time.p50_us, steps_time.p50_us,
                host_steps_time.p50_us, calls_time.p50_us, pipeline_time.p50_us / calls_time.p50_us,
                pipeline_time.p50_us / steps_time.p50_us,
                steps_time.p50_us / host_steps_time.p50_us, error, steps_error);
    absl::StrAppend(
        &json, rows == sizes.front() ? "" : ", ",
        absl::StrFormat("{\"batch\": %d, \"pipeline_p50_us\": %.2f, \"pipeline_mean_us\": %.2f, "
                        "\"steps_p50_us\": %.2f, \"steps_mean_us\": %.2f, "
                        "\"host_steps_p50_us\": %.2f, \"host_steps_mean_us\": %.2f, "
                        "\"calls_p50_us\": %.2f, \"calls_mean_us\": %.2f, "
                        "\"rel_err_vs_calls\": %.3e, \"steps_rel_err_vs_calls\": %.3e}",
                        rows, pipeline_time.p50_us, pipeline_time.mean_us, steps_time.p50_us,
                        steps_time.mean_us, host_steps_time.p50_us, host_steps_time.mean_us,
                        calls_time.p50_us, calls_time.mean_us, error, steps_error));
  }
  absl::StrAppend(&json, "], \"pipeline\": \"",
                  ensembles[0]->summary().executor, "\"}\n");
  if (!out.empty()) std::ofstream(out) << json;
  return absl::OkStatus();
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) {
  const absl::Status status = graphserve::Main(argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "ensemble_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
