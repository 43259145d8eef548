#include "capture/model_config_writer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "google/protobuf/text_format.h"
#include "proto/config_dtype.h"

namespace graphserve {

namespace {

// dims without the leading batch dimension.
std::vector<int64_t> RowDims(const BoundValue& value) {
  return std::vector<int64_t>(value.dims.begin() + (value.dims.empty() ? 0 : 1), value.dims.end());
}

}  // namespace

absl::StatusOr<inference::ModelConfig> MakeModelConfig(const BoundGraph& graph,
                                                       const CaptureSummary& summary) {
  if (summary.batch_sizes.empty()) {
    return absl::InvalidArgumentError("a model config needs at least one captured batch size");
  }
  std::vector<int64_t> sizes = summary.batch_sizes;
  std::sort(sizes.begin(), sizes.end());
  const int64_t max_batch_size =
      summary.max_batch_size > 0 ? summary.max_batch_size : sizes.back();
  if (max_batch_size < sizes.back()) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch_size ", max_batch_size, " is below the largest captured size ",
                     sizes.back()));
  }
  if (max_batch_size > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("max_batch_size ", max_batch_size,
                                                   " does not fit the config's int32 field"));
  }

  inference::ModelConfig config;
  config.set_name(summary.model_name);
  config.set_platform("graphserve_onnx");
  config.set_backend("graphserve");
  config.set_default_model_filename("model.onnx");
  config.set_max_batch_size(static_cast<int32_t>(max_batch_size));
  for (ValueId id : graph.inputs) {
    const BoundValue& value = graph.value(id);
    inference::ModelInput* input = config.add_input();
    input->set_name(value.name);
    input->set_data_type(summary.string_tensors.contains(value.name)
                             ? inference::TYPE_STRING
                             : ConfigDataType(value.dtype));
    SetConfigRowDims(RowDims(value), input);
  }
  for (ValueId id : graph.outputs) {
    const BoundValue& value = graph.value(id);
    inference::ModelOutput* output = config.add_output();
    output->set_name(value.name);
    output->set_data_type(summary.string_tensors.contains(value.name)
                              ? inference::TYPE_STRING
                              : ConfigDataType(value.dtype));
    SetConfigRowDims(RowDims(value), output);
  }

  inference::ModelCapture* capture = config.mutable_capture();
  for (int64_t size : sizes) capture->add_batch_sizes(size);
  capture->set_streams(summary.num_streams);
  std::vector<CaptureCostEntry> costs = summary.costs;
  std::sort(costs.begin(), costs.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  for (const CaptureCostEntry& entry : costs) *capture->add_cost() = CostToProto(entry);
  capture->set_schedule(summary.schedule);
  capture->set_max_lanes(summary.max_lanes);
  std::vector<ScheduleChoice> schedules = summary.schedules;
  std::sort(schedules.begin(), schedules.end(),
            [](const auto& a, const auto& b) { return a.key < b.key; });
  for (const ScheduleChoice& choice : schedules) *capture->add_schedules() = ScheduleToProto(choice);
  if (summary.precision != ModelPrecision::kFp32) {
    capture->set_precision(ModelPrecisionName(summary.precision));
  }
  return config;
}

inference::CaptureSchedule ScheduleToProto(const ScheduleChoice& choice) {
  inference::CaptureSchedule schedule;
  schedule.set_batch_size(choice.key.batch_size);
  for (int64_t extent : choice.key.bucket) schedule.add_bucket(extent);
  schedule.set_policy(SchedulePolicyName(choice.policy));
  schedule.set_lanes(choice.lanes);
  schedule.set_events(choice.events);
  schedule.set_max_width(choice.max_width);
  schedule.set_critical_path(choice.critical_path);
  for (const ScheduleCandidateTime& time : choice.candidates) {
    inference::CaptureScheduleCandidate* candidate = schedule.add_candidates();
    candidate->set_policy(SchedulePolicyName(time.policy));
    candidate->set_lanes(time.lanes);
    candidate->set_replay_us(time.replay_us);
  }
  return schedule;
}

inference::CaptureCost CostToProto(const CaptureCostEntry& entry) {
  inference::CaptureCost cost;
  cost.set_batch_size(entry.key.batch_size);
  for (int64_t extent : entry.key.bucket) cost.add_bucket(extent);
  cost.set_eager_us(entry.eager_us);
  cost.set_graph_us(entry.graph_us);
  return cost;
}

std::string ModelConfigText(const inference::ModelConfig& config) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return absl::StrCat(
      "# Written by GraphServe. The capture section lists the batch sizes with a CUDA\n"
      "# graph per stream and each graph's measured latency (cost), which the server\n"
      "# uses to choose between padding a request and splitting it; without costs the\n"
      "# server measures them when it loads the model on a GPU.\n",
      text);
}

absl::Status WriteModelDirectory(const std::string& model_dir, const std::string& model_file,
                                 const inference::ModelConfig& config, int version) {
  namespace fs = std::filesystem;
  const fs::path version_dir = fs::path(model_dir) / std::to_string(version);
  std::error_code error;
  fs::create_directories(version_dir, error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot create ", version_dir.string(), ": ", error.message()));
  }
  const fs::path model_path = version_dir / "model.onnx";
  fs::copy_file(model_file, model_path, fs::copy_options::overwrite_existing, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot copy ", model_file, " to ",
                                            model_path.string(), ": ", error.message()));
  }
  const fs::path config_path = fs::path(model_dir) / "config.pbtxt";
  std::ofstream out(config_path, std::ios::trunc);
  out << ModelConfigText(config);
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", config_path.string()));
  return absl::OkStatus();
}

}  // namespace graphserve
