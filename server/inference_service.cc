#include "server/inference_service.h"

#include <optional>
#include <string>

#include "server/grpc_status.h"

namespace graphserve {

namespace {

// Finishes a unary RPC that was answered without waiting.
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

}  // namespace

std::optional<std::string> ClientMetadata(const grpc::ServerContextBase& context,
                                          absl::string_view key) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(grpc::string_ref(key.data(), key.size()));
  return found == metadata.end() ? std::nullopt
                                 : std::optional<std::string>(std::in_place, found->second.data(),
                                                              found->second.size());
}

std::string SharedMemoryOwner(const grpc::ServerContextBase& context) {
  return ClientMetadata(context, kSharedMemoryOwnerHeader).value_or("");
}

absl::Status InferenceService::CheckAllowed(ApiCategory category,
                                            const grpc::ServerContextBase& context) const {
  return restricted_.Check(
      category, [&context](absl::string_view key) { return ClientMetadata(context, key); });
}

grpc::ServerUnaryReactor* InferenceService::Refused(ApiCategory category,
                                                    grpc::CallbackServerContext* context) const {
  const absl::Status allowed = CheckAllowed(category, *context);
  return allowed.ok() ? nullptr : FinishNow(context, allowed);
}

grpc::ServerUnaryReactor* InferenceService::ServerReady(grpc::CallbackServerContext* context,
                                                        const inference::ServerReadyRequest*,
                                                        inference::ServerReadyResponse* response) {
  if (auto* refused = Refused(ApiCategory::kHealth, context)) return refused;
  protocol_->ServerReady(response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelReady(grpc::CallbackServerContext* context,
                                                       const inference::ModelReadyRequest* request,
                                                       inference::ModelReadyResponse* response) {
  if (auto* refused = Refused(ApiCategory::kHealth, context)) return refused;
  protocol_->ModelReady(*request, response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerMetadata(
    grpc::CallbackServerContext* context, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  if (auto* refused = Refused(ApiCategory::kMetadata, context)) return refused;
  protocol_->ServerMetadata(response);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelMetadata(
    grpc::CallbackServerContext* context, const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  if (auto* refused = Refused(ApiCategory::kMetadata, context)) return refused;
  return FinishNow(context, protocol_->ModelMetadata(*request, response));
}

grpc::ServerUnaryReactor* InferenceService::ModelConfig(grpc::CallbackServerContext* context,
                                                        const inference::ModelConfigRequest* request,
                                                        inference::ModelConfigResponse* response) {
  if (auto* refused = Refused(ApiCategory::kModelConfig, context)) return refused;
  return FinishNow(context, protocol_->ModelConfig(*request, response));
}

grpc::ServerUnaryReactor* InferenceService::ModelStatistics(
    grpc::CallbackServerContext* context, const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (auto* refused = Refused(ApiCategory::kStatistics, context)) return refused;
  return FinishNow(context, protocol_->ModelStatistics(*request, response));
}

grpc::ServerUnaryReactor* InferenceService::RepositoryIndex(
    grpc::CallbackServerContext* context, const inference::RepositoryIndexRequest* request,
    inference::RepositoryIndexResponse* response) {
  if (auto* refused = Refused(ApiCategory::kModelRepository, context)) return refused;
  return FinishNow(context, protocol_->RepositoryIndex(*request, response));
}

// Loading takes seconds (capture and checks): it runs on the registry's
// control thread, and the RPC finishes from there.
grpc::ServerUnaryReactor* InferenceService::RepositoryModelLoad(
    grpc::CallbackServerContext* context, const inference::RepositoryModelLoadRequest* request,
    inference::RepositoryModelLoadResponse*) {
  if (auto* refused = Refused(ApiCategory::kModelRepository, context)) return refused;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  protocol_->RepositoryModelLoad(*request, [reactor](const absl::Status& status) {
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::RepositoryModelUnload(
    grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
    inference::RepositoryModelUnloadResponse*) {
  if (auto* refused = Refused(ApiCategory::kModelRepository, context)) return refused;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  protocol_->RepositoryModelUnload(*request, [reactor](const absl::Status& status) {
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryStatus(
    grpc::CallbackServerContext* context, const inference::SystemSharedMemoryStatusRequest* request,
    inference::SystemSharedMemoryStatusResponse* response) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  return FinishNow(context, protocol_->SystemSharedMemoryStatus(*request, response,
                                                                SharedMemoryOwner(*context)));
}

grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryRegister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryRegisterRequest* request,
    inference::SystemSharedMemoryRegisterResponse*) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  return FinishNow(context,
                   protocol_->SystemSharedMemoryRegister(*request, SharedMemoryOwner(*context)));
}

grpc::ServerUnaryReactor* InferenceService::SystemSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::SystemSharedMemoryUnregisterRequest* request,
    inference::SystemSharedMemoryUnregisterResponse*) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  protocol_->SystemSharedMemoryUnregister(*request, SharedMemoryOwner(*context));
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryStatus(
    grpc::CallbackServerContext* context, const inference::CudaSharedMemoryStatusRequest* request,
    inference::CudaSharedMemoryStatusResponse* response) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  return FinishNow(
      context, protocol_->CudaSharedMemoryStatus(*request, response, SharedMemoryOwner(*context)));
}

grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryRegister(
    grpc::CallbackServerContext* context, const inference::CudaSharedMemoryRegisterRequest* request,
    inference::CudaSharedMemoryRegisterResponse*) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  return FinishNow(context,
                   protocol_->CudaSharedMemoryRegister(*request, SharedMemoryOwner(*context)));
}

grpc::ServerUnaryReactor* InferenceService::CudaSharedMemoryUnregister(
    grpc::CallbackServerContext* context,
    const inference::CudaSharedMemoryUnregisterRequest* request,
    inference::CudaSharedMemoryUnregisterResponse*) {
  if (auto* refused = Refused(ApiCategory::kSharedMemory, context)) return refused;
  protocol_->CudaSharedMemoryUnregister(*request, SharedMemoryOwner(*context));
  return FinishNow(context, absl::OkStatus());
}

}  // namespace graphserve
