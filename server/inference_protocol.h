#pragma once
// The KServe v2 / Open Inference Protocol's server side without a transport:
// what every request means, answered from the model registry. The gRPC
// service (server/inference_service.h) and the HTTP/REST endpoint
// (server/http_endpoint.h) are thin adapters over it, so both serve the
// same requests the same way.

#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "proto/grpc_service.pb.h"
#include "server/model_registry.h"
#include "server/request_gate.h"
#include "server/responder.h"
#include "server/shared_memory.h"

namespace graphserve {

// Server name and version in ServerMetadata.
inline constexpr char kServerName[] = "graphserve";
inline constexpr char kServerVersion[] = "0.4.0";

// Thread-safe: any number of transport threads may call it at once.
class InferenceProtocol {
 public:
  // Borrows all three; they must outlive every call in flight.
  // `shared_memory`: how the shared-memory registry pins regions and how
  // many it holds (SharedMemoryRegistryOptions).
  InferenceProtocol(ModelRegistry* registry, RequestGate* gate, Responder* responder,
                    SharedMemoryRegistryOptions shared_memory = {})
      : registry_(registry),
        gate_(gate),
        responder_(responder),
        shared_memory_(std::make_unique<SharedMemoryRegistry>(shared_memory)) {}

  void ServerLive(inference::ServerLiveResponse* response) const;
  void ServerReady(inference::ServerReadyResponse* response) const;
  // Like Triton: an unknown or failed model is simply not ready.
  void ModelReady(const inference::ModelReadyRequest& request,
                  inference::ModelReadyResponse* response) const;
  void ServerMetadata(inference::ServerMetadataResponse* response) const;
  // NotFound (or Unavailable, for a model that failed to load) names the model.
  absl::Status ModelMetadata(const inference::ModelMetadataRequest& request,
                             inference::ModelMetadataResponse* response) const;
  absl::Status ModelConfig(const inference::ModelConfigRequest& request,
                           inference::ModelConfigResponse* response) const;
  absl::Status ModelStatistics(const inference::ModelStatisticsRequest& request,
                               inference::ModelStatisticsResponse* response) const;

  // Starts one inference. `done` is called exactly once: inline when the
  // request is refused at once (shutting down, unknown model, bad input),
  // otherwise on a responder thread, never on a GPU stream worker. `request`
  // and `response` must stay alive until then; when the status is OK the
  // response is complete. The request counts as in flight for the drain
  // until `done` returns.
  // `shared_memory_owner`: the caller's kSharedMemoryOwnerHeader, whose
  // regions its inputs and outputs may name ("" without the header; Note
  // [Shared memory owners] in server/shared_memory.h).
  void ModelInfer(const inference::ModelInferRequest* request,
                  inference::ModelInferResponse* response,
                  std::function<void(const absl::Status&)> done,
                  const std::string& shared_memory_owner = "") const;

  // Model control (Triton's model repository extension). The index lists
  // every model directory, with each loaded or failed version's state. Load
  // and unload run on the registry's control thread and call `done` there,
  // when the model serves (or failed, the old versions still serving) or is
  // gone; FailedPrecondition unless --model-control-mode=explicit.
  absl::Status RepositoryIndex(const inference::RepositoryIndexRequest& request,
                               inference::RepositoryIndexResponse* response) const;
  void RepositoryModelLoad(const inference::RepositoryModelLoadRequest& request,
                           std::function<void(const absl::Status&)> done) const;
  void RepositoryModelUnload(const inference::RepositoryModelUnloadRequest& request,
                             std::function<void(const absl::Status&)> done) const;

  // Shared memory (Triton's extension). System regions: Register maps one
  // (AlreadyExists for a name in use; NotFound or InvalidArgument, with the
  // errno text, for a key that cannot be opened or a range outside the
  // object), Unregister forgets one, or every one when the name is empty (a
  // name not registered is no error), Status lists them (NotFound for a name
  // not registered). A running request keeps its regions mapped until it is
  // answered (Note [Shared memory lifetime]). The Cuda* calls do the same for
  // regions of a client's device memory opened through CUDA IPC (Note [CUDA
  // shared memory]); FailedPrecondition on a server without a GPU. Each
  // sees only the regions of `owner`, the caller's kSharedMemoryOwnerHeader
  // ("" without it: Note [Shared memory owners] in server/shared_memory.h).
  absl::Status SystemSharedMemoryStatus(const inference::SystemSharedMemoryStatusRequest& request,
                                        inference::SystemSharedMemoryStatusResponse* response,
                                        const std::string& owner = "") const;
  absl::Status SystemSharedMemoryRegister(
      const inference::SystemSharedMemoryRegisterRequest& request,
      const std::string& owner = "") const;
  void SystemSharedMemoryUnregister(const inference::SystemSharedMemoryUnregisterRequest& request,
                                    const std::string& owner = "") const;
  absl::Status CudaSharedMemoryStatus(const inference::CudaSharedMemoryStatusRequest& request,
                                      inference::CudaSharedMemoryStatusResponse* response,
                                      const std::string& owner = "") const;
  absl::Status CudaSharedMemoryRegister(const inference::CudaSharedMemoryRegisterRequest& request,
                                        const std::string& owner = "") const;
  void CudaSharedMemoryUnregister(const inference::CudaSharedMemoryUnregisterRequest& request,
                                  const std::string& owner = "") const;

 private:
  ModelRegistry* const registry_;
  RequestGate* const gate_;
  Responder* const responder_;
  // The regions requests name; thread-safe itself. Owned here so that gRPC
  // and HTTP see the same regions.
  const std::unique_ptr<SharedMemoryRegistry> shared_memory_;
};

}  // namespace graphserve
