#pragma once
// The KServe v2 / Open Inference Protocol's server side without a transport:
// what every request means, answered from the model registry. The gRPC
// service (server/inference_service.h) and the HTTP/REST endpoint
// (server/http_endpoint.h) are thin adapters over it, so both serve the
// same requests the same way.

#include <functional>

#include "absl/status/status.h"
#include "proto/grpc_service.pb.h"
#include "server/model_registry.h"
#include "server/request_gate.h"
#include "server/responder.h"

namespace graphserve {

// Server name and version in ServerMetadata.
inline constexpr char kServerName[] = "graphserve";
inline constexpr char kServerVersion[] = "0.4.0";

// Thread-safe: any number of transport threads may call it at once.
class InferenceProtocol {
 public:
  // Borrows all three; they must outlive every call in flight.
  InferenceProtocol(ModelRegistry* registry, RequestGate* gate, Responder* responder)
      : registry_(registry), gate_(gate), responder_(responder) {}

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
  void ModelInfer(const inference::ModelInferRequest* request,
                  inference::ModelInferResponse* response,
                  std::function<void(const absl::Status&)> done) const;

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

 private:
  ModelRegistry* const registry_;
  RequestGate* const gate_;
  Responder* const responder_;
};

}  // namespace graphserve
