#include "server/inference_protocol.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/lost_cuda_context.h"
#include "common/status.h"
#include "server/classification.h"
#include "server/client_text.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

void FillTensorMetadata(const TensorSpec& spec, bool batching,
                        inference::ModelMetadataResponse::TensorMetadata* metadata) {
  metadata->set_name(spec.name);
  metadata->set_datatype(spec.datatype());
  if (batching) metadata->add_shape(-1);  // the batch
  for (int64_t dim : spec.dims) metadata->add_shape(dim);
}

}  // namespace

void InferenceProtocol::ServerLive(inference::ServerLiveResponse* response) const {
  response->set_live(true);
}

// A lost CUDA context fails every later launch until the process restarts
// (Note [CUDA faults in a served model] in server/graph_set_runner.h): the
// server and its models are not ready from then on.
void InferenceProtocol::ServerReady(inference::ServerReadyResponse* response) const {
  response->set_ready(registry_->all_ready() && !gate_->closed() && !CudaContextLost());
}

void InferenceProtocol::ModelReady(const inference::ModelReadyRequest& request,
                                   inference::ModelReadyResponse* response) const {
  response->set_ready(registry_->Find(request.name(), request.version()).ok() &&
                      !gate_->closed() && !CudaContextLost());
}

void InferenceProtocol::ServerMetadata(inference::ServerMetadataResponse* response) const {
  response->set_name(kServerName);
  response->set_version(kServerVersion);
  response->add_extensions("model_configuration");
  response->add_extensions("statistics");
  response->add_extensions("model_repository");
  response->add_extensions("system_shared_memory");
  response->add_extensions("cuda_shared_memory");
  response->add_extensions("binary_tensor_data");  // over HTTP/REST
  response->add_extensions("classification");
}

absl::Status InferenceProtocol::ModelMetadata(const inference::ModelMetadataRequest& request,
                                              inference::ModelMetadataResponse* response) const {
  absl::StatusOr<std::shared_ptr<ServedModel>> model =
      registry_->Find(request.name(), request.version());
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
    FillTensorMetadata(spec, served.interface().batching, response->add_inputs());
  }
  for (const TensorSpec& spec : served.interface().outputs) {
    FillTensorMetadata(spec, served.interface().batching, response->add_outputs());
  }
  return absl::OkStatus();
}

absl::Status InferenceProtocol::ModelConfig(const inference::ModelConfigRequest& request,
                                            inference::ModelConfigResponse* response) const {
  absl::StatusOr<std::shared_ptr<ServedModel>> model =
      registry_->Find(request.name(), request.version());
  if (!model.ok()) return model.status();
  *response->mutable_config() = (*model)->config();
  return absl::OkStatus();
}

absl::Status InferenceProtocol::ModelStatistics(
    const inference::ModelStatisticsRequest& request,
    inference::ModelStatisticsResponse* response) const {
  if (!request.name().empty()) {
    absl::StatusOr<std::shared_ptr<ServedModel>> model =
        registry_->Find(request.name(), request.version());
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
                                   std::function<void(const absl::Status&)> done,
                                   const std::string& shared_memory_owner) const {
  if (!gate_->Enter()) {
    done(absl::UnavailableError("the server is shutting down and accepts no new requests"));
    return;
  }
  absl::StatusOr<std::shared_ptr<ServedModel>> model =
      registry_->Find(request->model_name(), request->model_version());
  if (!model.ok()) {
    gate_->Handed();
    done(model.status());
    gate_->Leave();
    return;
  }
  RequestGate* gate = gate_;
  Responder* responder = responder_;
  // This thread may run the request's chunk and finish its RPC before Infer
  // returns (Note [Chunks on the caller's thread]); `keep` lets the model go
  // only after Infer has left the model's stream pool, whoever finishes.
  const std::shared_ptr<ServedModel> keep = *model;
  const Responder::OwnThread finish_here;
  ServedModel& served = *keep;
  // Note [Shared memory owners]: an owner's view of the regions, kept with
  // the request until it is answered; without one, the registry itself.
  std::shared_ptr<const SharedMemoryRegistry> owned_regions =
      shared_memory_owner.empty() ? nullptr
                                  : std::make_shared<const SharedMemoryRegistry>(
                                        shared_memory_->ForOwner(shared_memory_owner));
  const SharedMemoryRegistry* regions =
      owned_regions != nullptr ? owned_regions.get() : shared_memory_.get();
  // The request holds its model until it is answered: a reload or unload
  // meanwhile never cuts it off (Note [Reloading without downtime]).
  served.Infer(
      request, response,
      [gate, responder, request, response, held = *std::move(model), done = std::move(done),
       owned_regions = std::move(owned_regions)](const absl::Status& status) mutable {
        if (!status.ok()) spdlog::debug("ModelInfer: {}", status.ToString());
        // Off the stream worker: see server/responder.h. The model
        // is let go there too, never on its own stream worker, and the
        // classes are computed there (Note [Classification]).
        responder->Post([gate, done, status, request, response, held = std::move(held)] {
          done(status.ok() ? ClassifyOutputs(*request, held->interface(), response) : status);
          gate->Leave();
        });
      },
      regions);
  // Queued (or refused): a drain that starts now sees it.
  gate_->Handed();
}

absl::Status InferenceProtocol::RepositoryIndex(
    const inference::RepositoryIndexRequest& request,
    inference::RepositoryIndexResponse* response) const {
  ASSIGN_OR_RETURN(const std::vector<ModelIndexEntry> index, registry_->Index(request.ready()));
  for (const ModelIndexEntry& entry : index) {
    inference::RepositoryIndexResponse::ModelIndex* model = response->add_models();
    model->set_name(entry.name);
    model->set_version(entry.version);
    model->set_state(entry.state);
    model->set_reason(entry.reason);
  }
  return absl::OkStatus();
}

void InferenceProtocol::RepositoryModelLoad(const inference::RepositoryModelLoadRequest& request,
                                            std::function<void(const absl::Status&)> done) const {
  std::optional<std::string> config_json;
  for (const auto& [key, parameter] : request.parameters()) {
    if (key == "config" && parameter.has_string_param()) {
      config_json = parameter.string_param();
    } else if (key == "config") {
      done(absl::InvalidArgumentError("load parameter 'config' must be a string (JSON)"));
      return;
    } else {
      done(absl::InvalidArgumentError(absl::StrCat("unknown load parameter ",
                                                   QuoteClientText(key),
                                                   "; GraphServe reads 'config'")));
      return;
    }
  }
  registry_->RequestLoad(request.model_name(), std::move(config_json), std::move(done));
}

void InferenceProtocol::RepositoryModelUnload(
    const inference::RepositoryModelUnloadRequest& request,
    std::function<void(const absl::Status&)> done) const {
  registry_->RequestUnload(request.model_name(), std::move(done));
}

absl::Status InferenceProtocol::SystemSharedMemoryStatus(
    const inference::SystemSharedMemoryStatusRequest& request,
    inference::SystemSharedMemoryStatusResponse* response, const std::string& owner) const {
  ASSIGN_OR_RETURN(const std::vector<std::shared_ptr<const SharedMemoryRegion>> regions,
                   shared_memory_->ForOwner(owner).Status(request.name()));
  for (const std::shared_ptr<const SharedMemoryRegion>& region : regions) {
    inference::SystemSharedMemoryStatusResponse::RegionStatus& status =
        (*response->mutable_regions())[region->name()];
    status.set_name(region->name());
    status.set_key(region->key());
    status.set_offset(region->offset());
    status.set_byte_size(region->byte_size());
  }
  return absl::OkStatus();
}

absl::Status InferenceProtocol::SystemSharedMemoryRegister(
    const inference::SystemSharedMemoryRegisterRequest& request, const std::string& owner) const {
  return shared_memory_->ForOwner(owner).Register(request.name(), request.key(), request.offset(),
                                                  request.byte_size());
}

void InferenceProtocol::SystemSharedMemoryUnregister(
    const inference::SystemSharedMemoryUnregisterRequest& request, const std::string& owner) const {
  SharedMemoryRegistry regions = shared_memory_->ForOwner(owner);
  if (request.name().empty()) {
    regions.UnregisterAll();
  } else {
    regions.Unregister(request.name());
  }
}

absl::Status InferenceProtocol::CudaSharedMemoryStatus(
    const inference::CudaSharedMemoryStatusRequest& request,
    inference::CudaSharedMemoryStatusResponse* response, const std::string& owner) const {
  ASSIGN_OR_RETURN(const std::vector<std::shared_ptr<const SharedMemoryRegion>> regions,
                   shared_memory_->ForOwner(owner).Status(request.name(), RegionKind::kCuda));
  for (const std::shared_ptr<const SharedMemoryRegion>& region : regions) {
    inference::CudaSharedMemoryStatusResponse::RegionStatus& status =
        (*response->mutable_regions())[region->name()];
    status.set_name(region->name());
    status.set_device_id(static_cast<uint64_t>(region->device_id()));
    status.set_byte_size(region->byte_size());
  }
  return absl::OkStatus();
}

absl::Status InferenceProtocol::CudaSharedMemoryRegister(
    const inference::CudaSharedMemoryRegisterRequest& request, const std::string& owner) const {
  return shared_memory_->ForOwner(owner).RegisterCuda(request.name(), request.raw_handle(),
                                                      request.device_id(), request.byte_size());
}

void InferenceProtocol::CudaSharedMemoryUnregister(
    const inference::CudaSharedMemoryUnregisterRequest& request, const std::string& owner) const {
  SharedMemoryRegistry regions = shared_memory_->ForOwner(owner);
  if (request.name().empty()) {
    regions.UnregisterAll(RegionKind::kCuda);
  } else {
    regions.Unregister(request.name(), RegionKind::kCuda);
  }
}

}  // namespace graphserve
