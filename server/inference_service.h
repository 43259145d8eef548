#pragma once
// The KServe v2 / Open Inference Protocol service (proto/grpc_service.proto)
// on gRPC's callback API. Every handler either answers at once from memory
// (health, metadata, config, statistics) or, for ModelInfer, hands the
// request to its model's stream pool and returns: the RPC is finished from
// the worker that completes the request's last chunk. No gRPC thread ever
// waits on the GPU.

#include "proto/grpc_service.grpc.pb.h"
#include "server/model_registry.h"
#include "server/request_gate.h"
#include "server/responder.h"

namespace graphserve {

// Server name and version in ServerMetadata.
inline constexpr char kServerName[] = "graphserve";
inline constexpr char kServerVersion[] = "0.4.0";

class InferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  // Borrows all three; they must outlive the gRPC server that runs this
  // service. ModelInfer calls end on `responder`'s threads.
  InferenceService(const ModelRegistry* registry, RequestGate* gate, Responder* responder)
      : registry_(registry), gate_(gate), responder_(responder) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override;
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
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override;
  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override;
  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override;

  // Implementation details follow.
 private:
  const ModelRegistry* const registry_;
  RequestGate* const gate_;
  Responder* const responder_;
};

}  // namespace graphserve
