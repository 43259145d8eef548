#include "server/inference_service.h"

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// Finishes a unary RPC that was answered without waiting.
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

absl::Status ShuttingDown() {
  return absl::UnavailableError("the server is shutting down and accepts no new requests");
}

void FillTensorMetadata(const TensorSpec& spec,
                        inference::ModelMetadataResponse::TensorMetadata* metadata) {
  metadata->set_name(spec.name);
  metadata->set_datatype(KServeDatatype(spec.dtype));
  metadata->add_shape(-1);  // the batch
  for (int64_t dim : spec.dims) metadata->add_shape(dim);
}

}  // namespace

grpc::ServerUnaryReactor* InferenceService::ServerLive(grpc::CallbackServerContext* context,
                                                       const inference::ServerLiveRequest*,
                                                       inference::ServerLiveResponse* response) {
  response->set_live(true);
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerReady(grpc::CallbackServerContext* context,
                                                        const inference::ServerReadyRequest*,
                                                        inference::ServerReadyResponse* response) {
  response->set_ready(registry_->all_ready() && !gate_->closed());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelReady(grpc::CallbackServerContext* context,
                                                       const inference::ModelReadyRequest* request,
                                                       inference::ModelReadyResponse* response) {
  // Like Triton: an unknown or failed model is simply not ready.
  response->set_ready(registry_->Find(request->name(), request->version()).ok() &&
                      !gate_->closed());
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ServerMetadata(
    grpc::CallbackServerContext* context, const inference::ServerMetadataRequest*,
    inference::ServerMetadataResponse* response) {
  response->set_name(kServerName);
  response->set_version(kServerVersion);
  response->add_extensions("model_configuration");
  response->add_extensions("statistics");
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelMetadata(
    grpc::CallbackServerContext* context, const inference::ModelMetadataRequest* request,
    inference::ModelMetadataResponse* response) {
  absl::StatusOr<ServedModel*> model = registry_->Find(request->name(), request->version());
  if (!model.ok()) return FinishNow(context, model.status());
  const ServedModel& served = **model;
  response->set_name(served.name());
  for (const ModelVersionState& state : registry_->states()) {
    if (state.name == served.name() && state.status.ok()) {
      response->add_versions(absl::StrCat(state.version));
    }
  }
  response->set_platform(served.config().platform());
  for (const TensorSpec& spec : served.interface().inputs) {
    FillTensorMetadata(spec, response->add_inputs());
  }
  for (const TensorSpec& spec : served.interface().outputs) {
    FillTensorMetadata(spec, response->add_outputs());
  }
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelInfer(grpc::CallbackServerContext* context,
                                                       const inference::ModelInferRequest* request,
                                                       inference::ModelInferResponse* response) {
  if (!gate_->Enter()) return FinishNow(context, ShuttingDown());
  absl::StatusOr<ServedModel*> model =
      registry_->Find(request->model_name(), request->model_version());
  if (!model.ok()) {
    gate_->Leave();
    return FinishNow(context, model.status());
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  RequestGate* gate = gate_;
  Responder* responder = responder_;
  (*model)->Infer(request, response, [reactor, gate, responder](const absl::Status& status) {
    if (!status.ok()) spdlog::debug("ModelInfer: {}", status.ToString());
    // Off the stream worker: see server/responder.h.
    responder->Post([reactor, gate, grpc_status = ToGrpcStatus(status)] {
      reactor->Finish(grpc_status);
      gate->Leave();
    });
  });
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::ModelConfig(grpc::CallbackServerContext* context,
                                                        const inference::ModelConfigRequest* request,
                                                        inference::ModelConfigResponse* response) {
  absl::StatusOr<ServedModel*> model = registry_->Find(request->name(), request->version());
  if (!model.ok()) return FinishNow(context, model.status());
  *response->mutable_config() = (*model)->config();
  return FinishNow(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* InferenceService::ModelStatistics(
    grpc::CallbackServerContext* context, const inference::ModelStatisticsRequest* request,
    inference::ModelStatisticsResponse* response) {
  if (!request->name().empty()) {
    absl::StatusOr<ServedModel*> model = registry_->Find(request->name(), request->version());
    if (!model.ok()) return FinishNow(context, model.status());
    (*model)->FillStatistics(response->add_model_stats());
    return FinishNow(context, absl::OkStatus());
  }
  for (const ModelVersionState& state : registry_->states()) {
    if (state.model != nullptr) state.model->FillStatistics(response->add_model_stats());
  }
  return FinishNow(context, absl::OkStatus());
}

}  // namespace graphserve
