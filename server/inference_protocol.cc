#include "server/inference_protocol.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

void FillTensorMetadata(const TensorSpec& spec,
                        inference::ModelMetadataResponse::TensorMetadata* metadata) {
  metadata->set_name(spec.name);
  metadata->set_datatype(KServeDatatype(spec.dtype));
  metadata->add_shape(-1);  // the batch
  for (int64_t dim : spec.dims) metadata->add_shape(dim);
}

}  // namespace

void InferenceProtocol::ServerLive(inference::ServerLiveResponse* response) const {
  response->set_live(true);
}

void InferenceProtocol::ServerReady(inference::ServerReadyResponse* response) const {
  response->set_ready(registry_->all_ready() && !gate_->closed());
}

void InferenceProtocol::ModelReady(const inference::ModelReadyRequest& request,
                                   inference::ModelReadyResponse* response) const {
  response->set_ready(registry_->Find(request.name(), request.version()).ok() && !gate_->closed());
}

void InferenceProtocol::ServerMetadata(inference::ServerMetadataResponse* response) const {
  response->set_name(kServerName);
  response->set_version(kServerVersion);
  response->add_extensions("model_configuration");
  response->add_extensions("statistics");
  response->add_extensions("binary_tensor_data");  // over HTTP/REST
}

absl::Status InferenceProtocol::ModelMetadata(const inference::ModelMetadataRequest& request,
                                              inference::ModelMetadataResponse* response) const {
  absl::StatusOr<ServedModel*> model = registry_->Find(request.name(), request.version());
  if (!model.ok()) return model.status();
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
  return absl::OkStatus();
}

absl::Status InferenceProtocol::ModelConfig(const inference::ModelConfigRequest& request,
                                            inference::ModelConfigResponse* response) const {
  absl::StatusOr<ServedModel*> model = registry_->Find(request.name(), request.version());
  if (!model.ok()) return model.status();
  *response->mutable_config() = (*model)->config();
  return absl::OkStatus();
}

absl::Status InferenceProtocol::ModelStatistics(
    const inference::ModelStatisticsRequest& request,
    inference::ModelStatisticsResponse* response) const {
  if (!request.name().empty()) {
    absl::StatusOr<ServedModel*> model = registry_->Find(request.name(), request.version());
    if (!model.ok()) return model.status();
    (*model)->FillStatistics(response->add_model_stats());
    return absl::OkStatus();
  }
  for (const ModelVersionState& state : registry_->states()) {
    if (state.model != nullptr) state.model->FillStatistics(response->add_model_stats());
  }
  return absl::OkStatus();
}

void InferenceProtocol::ModelInfer(const inference::ModelInferRequest* request,
                                   inference::ModelInferResponse* response,
                                   std::function<void(const absl::Status&)> done) const {
  if (!gate_->Enter()) {
    done(absl::UnavailableError("the server is shutting down and accepts no new requests"));
    return;
  }
  absl::StatusOr<ServedModel*> model =
      registry_->Find(request->model_name(), request->model_version());
  if (!model.ok()) {
    done(model.status());
    gate_->Leave();
    return;
  }
  RequestGate* gate = gate_;
  Responder* responder = responder_;
  (*model)->Infer(request, response,
                  [gate, responder, done = std::move(done)](const absl::Status& status) {
                    if (!status.ok()) spdlog::debug("ModelInfer: {}", status.ToString());
                    // Off the stream worker: see server/responder.h.
                    responder->Post([gate, done, status] {
                      done(status);
                      gate->Leave();
                    });
                  });
}

}  // namespace graphserve
