#include "capture_cli/model_reload.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/grpc_service.pb.h"

namespace graphserve {
namespace {

// The server's code and message, with what was asked where in front.
absl::Status CallError(const grpc::Status& status, absl::string_view call,
                       const ModelReloadOptions& options) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(call, " of '", options.model, "' at ", options.address,
                                   " failed: ", status.error_message()));
}

void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

}  // namespace

inference::ModelConfig WithCaptureSizes(inference::ModelConfig config,
                                        const std::vector<int64_t>& sizes,
                                        const std::vector<int64_t>& buckets) {
  inference::ModelCapture* capture = config.mutable_capture();
  capture->clear_batch_sizes();
  for (int64_t size : sizes) capture->add_batch_sizes(size);
  if (!buckets.empty()) {
    capture->clear_buckets();
    for (int64_t bucket : buckets) capture->add_buckets()->add_extents(bucket);
  }
  capture->clear_cost();
  capture->clear_schedules();
  return config;
}

absl::StatusOr<ModelReloadResult> ReloadWithCaptureSizes(const ModelReloadOptions& options) {
  const std::unique_ptr<inference::GRPCInferenceService::Stub> stub =
      inference::GRPCInferenceService::NewStub(
          grpc::CreateChannel(options.address, grpc::InsecureChannelCredentials()));

  inference::ModelConfigResponse current;
  {
    grpc::ClientContext context;
    SetDeadline(context, options.config_timeout);
    inference::ModelConfigRequest request;
    request.set_name(options.model);
    request.set_version(options.version);
    if (grpc::Status status = stub->ModelConfig(&context, request, &current); !status.ok()) {
      return CallError(status, "ModelConfig", options);
    }
  }

  ModelReloadResult result;
  const auto& previous = current.config().capture().batch_sizes();
  result.previous_sizes.assign(previous.begin(), previous.end());
  for (const inference::CaptureBucket& bucket : current.config().capture().buckets()) {
    if (bucket.extents_size() == 1) result.previous_buckets.push_back(bucket.extents(0));
  }
  result.config = WithCaptureSizes(current.config(), options.batch_sizes, options.buckets);
  std::string json;
  if (const auto printed = google::protobuf::util::MessageToJsonString(result.config, &json);
      !printed.ok()) {
    return absl::InternalError(absl::StrCat("cannot write the config of '", options.model,
                                            "' as JSON: ", printed.ToString()));
  }

  grpc::ClientContext context;
  SetDeadline(context, options.load_timeout);
  inference::RepositoryModelLoadRequest request;
  request.set_model_name(options.model);
  (*request.mutable_parameters())["config"].set_string_param(json);
  inference::RepositoryModelLoadResponse response;
  const absl::Time start = absl::Now();
  const grpc::Status loaded = stub->RepositoryModelLoad(&context, request, &response);
  result.load_time = absl::Now() - start;
  if (!loaded.ok()) return CallError(loaded, "RepositoryModelLoad", options);
  return result;
}

}  // namespace graphserve
