#pragma once
// The KServe v2 / Open Inference Protocol service (proto/grpc_service.proto):
// an adapter over InferenceProtocol. ModelInfer, ModelStreamInfer and
// ServerLive are served from completion queues (server/queued_rpcs.h, Note
// [Hot RPCs on completion queues]); every other RPC is here, on gRPC's
// callback API, and answers at once from memory (health, metadata, config,
// statistics) or from the model control thread (loads, unloads).

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/grpc_service.grpc.pb.h"
#include "server/inference_protocol.h"
#include "server/restricted_api.h"

namespace graphserve {

// The service's methods: ModelInfer, ModelStreamInfer and ServerLive
// asynchronous (asked for on completion queues), the rest callbacks; each
// method is marked once.
using GrpcService = inference::GRPCInferenceService;
namespace service_layers {
using G = GrpcService;
using Hot = G::WithAsyncMethod_ServerLive<
    G::WithAsyncMethod_ModelInfer<G::WithAsyncMethod_ModelStreamInfer<G::Service>>>;
using Health = G::WithCallbackMethod_ServerReady<G::WithCallbackMethod_ModelReady<Hot>>;
using Metadata = G::WithCallbackMethod_ServerMetadata<G::WithCallbackMethod_ModelMetadata<
    G::WithCallbackMethod_ModelConfig<G::WithCallbackMethod_ModelStatistics<Health>>>>;
using Repository = G::WithCallbackMethod_RepositoryIndex<G::WithCallbackMethod_RepositoryModelLoad<
    G::WithCallbackMethod_RepositoryModelUnload<Metadata>>>;
using SystemMemory = G::WithCallbackMethod_SystemSharedMemoryStatus<
    G::WithCallbackMethod_SystemSharedMemoryRegister<
        G::WithCallbackMethod_SystemSharedMemoryUnregister<Repository>>>;
using CudaMemory = G::WithCallbackMethod_CudaSharedMemoryStatus<
    G::WithCallbackMethod_CudaSharedMemoryRegister<
        G::WithCallbackMethod_CudaSharedMemoryUnregister<SystemMemory>>>;
}  // namespace service_layers
using HybridGrpcService = service_layers::CudaMemory;

// The value of metadata key `key` (lower case) the client sent with a call.
std::optional<std::string> ClientMetadata(const grpc::ServerContextBase& context,
                                          absl::string_view key);

// The call's shared-memory owner: kSharedMemoryOwnerHeader's value, "" when
// the client sent none (Note [Shared memory owners] in server/shared_memory.h).
std::string SharedMemoryOwner(const grpc::ServerContextBase& context);

class InferenceService final : public HybridGrpcService {
 public:
  // Borrows `protocol`, which must outlive the gRPC server running this.
  // `restricted`: the categories whose RPCs need a metadata key (Triton's
  // --grpc-restricted-protocol); none by default.
  explicit InferenceService(const InferenceProtocol* protocol, RestrictedApis restricted = {})
      : protocol_(protocol), restricted_(std::move(restricted)) {}

  // OK, or PermissionDenied with Triton's message when `category` is
  // restricted and the call's metadata lacks its key and value (Note
  // [Restricted APIs] in server/restricted_api.cc). The queued RPCs
  // (server/queued_rpcs.h) ask it too.
  absl::Status CheckAllowed(ApiCategory category, const grpc::ServerContextBase& context) const;

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest* request,
                                        inference::ServerReadyResponse* response) override;
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override;
  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest* request,
                                           inference::ServerMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryIndex(grpc::CallbackServerContext* context,
                                            const inference::RepositoryIndexRequest* request,
                                            inference::RepositoryIndexResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelLoad(
      grpc::CallbackServerContext* context, const inference::RepositoryModelLoadRequest* request,
      inference::RepositoryModelLoadResponse* response) override;
  grpc::ServerUnaryReactor* RepositoryModelUnload(
      grpc::CallbackServerContext* context, const inference::RepositoryModelUnloadRequest* request,
      inference::RepositoryModelUnloadResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryStatus(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryStatusRequest* request,
      inference::SystemSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryRegisterRequest* request,
      inference::SystemSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryUnregisterRequest* request,
      inference::SystemSharedMemoryUnregisterResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryStatus(
      grpc::CallbackServerContext* context, const inference::CudaSharedMemoryStatusRequest* request,
      inference::CudaSharedMemoryStatusResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryRegisterRequest* request,
      inference::CudaSharedMemoryRegisterResponse* response) override;
  grpc::ServerUnaryReactor* CudaSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::CudaSharedMemoryUnregisterRequest* request,
      inference::CudaSharedMemoryUnregisterResponse* response) override;

  // Implementation details follow.
 private:
  // Finished with CheckAllowed's refusal; null when the call may go on.
  grpc::ServerUnaryReactor* Refused(ApiCategory category,
                                    grpc::CallbackServerContext* context) const;

  const InferenceProtocol* const protocol_;
  const RestrictedApis restricted_;
};

}  // namespace graphserve
