#include "capture/model_config_writer.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "google/protobuf/text_format.h"

namespace graphserve {

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
