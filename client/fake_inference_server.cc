#include "client/fake_inference_server.h"

#include <grpcpp/grpcpp.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/callback_queue_keepalive.h"
#include "common/status.h"

namespace graphserve {
namespace {

// A tensor of a toy model, without its batch dimension.
struct ToyTensor {
  std::string name;
  std::string datatype;                 // protocol spelling
  inference::DataType config_datatype;  // model_config.proto spelling
  std::vector<int64_t> dims;
  size_t element_bytes;
};

// Computes the outputs' raw bytes from the inputs' (in the model's order).
using ToyCompute = std::function<std::vector<std::string>(
    int64_t batch, const std::vector<absl::string_view>& inputs)>;

struct ToyModel {
  std::string name;
  std::vector<ToyTensor> inputs;
  std::vector<ToyTensor> outputs;
  ToyCompute compute;
};

constexpr char kVersion[] = "1";

std::vector<std::string> ComputeDouble(int64_t batch,
                                       const std::vector<absl::string_view>& inputs) {
  std::vector<float> values(inputs[0].size() / sizeof(float));
  std::memcpy(values.data(), inputs[0].data(), inputs[0].size());
  for (float& value : values) value *= 2.0f;
  return {std::string(reinterpret_cast<const char*>(values.data()), inputs[0].size())};
}

std::vector<std::string> ComputeCountTrue(int64_t batch,
                                          const std::vector<absl::string_view>& inputs) {
  const absl::string_view flags = inputs[0];
  std::vector<int64_t> counts(batch);
  std::memcpy(counts.data(), inputs[1].data(), inputs[1].size());
  const size_t row = flags.size() / static_cast<size_t>(batch);
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < row; ++i) counts[b] += flags[b * row + i] != 0 ? 1 : 0;
  }
  return {
      std::string(reinterpret_cast<const char*>(counts.data()), counts.size() * sizeof(int64_t))};
}

std::vector<ToyModel> ToyModels() {
  return {
      {.name = "double",
       .inputs = {{"x", "FP32", inference::TYPE_FP32, {4}, 4}},
       .outputs = {{"y", "FP32", inference::TYPE_FP32, {4}, 4}},
       .compute = ComputeDouble},
      {.name = "count_true",
       .inputs = {{"flags", "BOOL", inference::TYPE_BOOL, {3}, 1},
                  {"offset", "INT64", inference::TYPE_INT64, {1}, 8}},
       .outputs = {{"count", "INT64", inference::TYPE_INT64, {1}, 8}},
       .compute = ComputeCountTrue},
  };
}

// The fake's one absl::Status -> grpc::Status conversion (the codes share
// their numbering).
grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

void AddDuration(inference::StatisticDuration* duration, absl::Duration elapsed) {
  duration->set_count(duration->count() + 1);
  duration->set_ns(duration->ns() + static_cast<uint64_t>(absl::ToInt64Nanoseconds(elapsed)));
}

int64_t RowElements(const ToyTensor& tensor) {
  int64_t count = 1;
  for (const int64_t dim : tensor.dims) count *= dim;
  return count;
}

// A registered system shared-memory region: byte_size bytes at `offset` of a
// POSIX object, mapped read-write from the object's start. A request holds
// the shared_ptr while it reads and writes, so Unregister never unmaps
// under it.
class MappedRegion {
 public:
  static absl::StatusOr<std::shared_ptr<MappedRegion>> Map(const std::string& key, uint64_t offset,
                                                           uint64_t byte_size) {
    const int fd = shm_open(key.c_str(), O_RDWR, 0);
    if (fd < 0) {
      return absl::NotFoundError(absl::StrCat("no shared memory object '", key, "'"));
    }
    struct stat object;
    const size_t length = static_cast<size_t>(offset + byte_size);
    if (fstat(fd, &object) != 0 || byte_size == 0 ||
        static_cast<uint64_t>(object.st_size) < length) {
      close(fd);
      return absl::InvalidArgumentError(absl::StrCat(
          "shared memory object '", key, "' does not hold ", byte_size, " bytes at ", offset));
    }
    void* mapping = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapping == MAP_FAILED) {
      return absl::InternalError(absl::StrCat("mmap of '", key, "' failed"));
    }
    return std::shared_ptr<MappedRegion>(
        new MappedRegion(static_cast<char*>(mapping), length, offset, byte_size));
  }

  ~MappedRegion() { munmap(mapping_, length_); }

  // The range `byte_size` bytes at `offset` of the region, or an error.
  absl::StatusOr<char*> Range(int64_t offset, int64_t byte_size) const {
    if (offset < 0 || byte_size < 0 || static_cast<uint64_t>(offset + byte_size) > byte_size_) {
      return absl::InvalidArgumentError(absl::StrCat(byte_size, " bytes at offset ", offset,
                                                     " lie outside the region's ", byte_size_));
    }
    return mapping_ + offset_ + offset;
  }

 private:
  MappedRegion(char* mapping, size_t length, uint64_t offset, uint64_t byte_size)
      : mapping_(mapping), length_(length), offset_(offset), byte_size_(byte_size) {}

  char* const mapping_;
  const size_t length_;
  const uint64_t offset_;
  const uint64_t byte_size_;
};

// A tensor's shared-memory parameters, or nullopt when it names no region.
struct RegionParameters {
  std::string region;
  int64_t byte_size = 0;
  int64_t offset = 0;
};

std::optional<RegionParameters> ReadRegionParameters(
    const google::protobuf::Map<std::string, inference::InferParameter>& parameters) {
  const auto region = parameters.find("shared_memory_region");
  if (region == parameters.end()) return std::nullopt;
  RegionParameters read{.region = region->second.string_param()};
  if (auto size = parameters.find("shared_memory_byte_size"); size != parameters.end()) {
    read.byte_size = size->second.int64_param();
  }
  if (auto offset = parameters.find("shared_memory_offset"); offset != parameters.end()) {
    read.offset = offset->second.int64_param();
  }
  return read;
}

}  // namespace

class FakeInferenceServer::Service : public inference::GRPCInferenceService::CallbackService {
 public:
  explicit Service(const FakeInferenceServerOptions& options)
      : options_(options), models_(ToyModels()) {
    for (const ToyModel& model : models_) {
      inference::ModelStatistics& stats = stats_[model.name];
      stats.set_name(model.name);
      stats.set_version(kVersion);
    }
  }

  int64_t infer_calls() const {
    absl::MutexLock lock(&mu_);
    return infer_calls_;
  }

  int64_t live_calls() const {
    absl::MutexLock lock(&mu_);
    return live_calls_;
  }

  int64_t stream_calls() const {
    absl::MutexLock lock(&mu_);
    return stream_calls_;
  }

  int64_t registered_regions() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(regions_.size());
  }

  int64_t calls_with_metadata(const std::string& key, const std::string& value) const {
    absl::MutexLock lock(&mu_);
    const auto found = metadata_seen_.find({key, value});
    return found == metadata_seen_.end() ? 0 : found->second;
  }

  // Counts the call's metadata (calls_with_metadata).
  void SeeMetadata(const grpc::CallbackServerContext& context) {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, value] : context.client_metadata()) {
      ++metadata_seen_[{std::string(key.data(), key.size()),
                        std::string(value.data(), value.size())}];
    }
  }

  grpc::ServerUnaryReactor* SystemSharedMemoryRegister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryRegisterRequest* request,
      inference::SystemSharedMemoryRegisterResponse* response) override {
    SeeMetadata(*context);
    absl::StatusOr<std::shared_ptr<MappedRegion>> region =
        MappedRegion::Map(request->key(), request->offset(), request->byte_size());
    if (!region.ok()) return Finish(context, region.status());
    absl::MutexLock lock(&mu_);
    if (!regions_.emplace(request->name(), *std::move(region)).second) {
      return Finish(context, absl::AlreadyExistsError(absl::StrCat(
                                 "shared memory region '", request->name(), "' already exists")));
    }
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* SystemSharedMemoryUnregister(
      grpc::CallbackServerContext* context,
      const inference::SystemSharedMemoryUnregisterRequest* request,
      inference::SystemSharedMemoryUnregisterResponse* response) override {
    SeeMetadata(*context);
    absl::MutexLock lock(&mu_);
    if (request->name().empty()) {
      regions_.clear();
    } else {
      regions_.erase(request->name());
    }
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest* request,
                                       inference::ServerLiveResponse* response) override {
    SeeMetadata(*context);
    {
      absl::MutexLock lock(&mu_);
      ++live_calls_;
    }
    response->set_live(true);
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context,
                                        const inference::ServerReadyRequest* request,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(true);
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    response->set_ready(Find(request->name(), request->version()).ok());
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest* request,
                                           inference::ServerMetadataResponse* response) override {
    response->set_name("fake-inference-server");
    response->set_version("0.1");
    response->add_extensions("model_configuration");
    response->add_extensions("statistics");
    response->add_extensions("system_shared_memory");
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    absl::StatusOr<const ToyModel*> model = Find(request->name(), request->version());
    if (!model.ok()) return Finish(context, model.status());
    response->set_name((*model)->name);
    response->add_versions(kVersion);
    response->set_platform("graphserve_fake");
    auto describe = [](const ToyTensor& tensor, auto* metadata) {
      metadata->set_name(tensor.name);
      metadata->set_datatype(tensor.datatype);
      metadata->add_shape(-1);  // the batch dimension
      for (const int64_t dim : tensor.dims) metadata->add_shape(dim);
    };
    for (const ToyTensor& input : (*model)->inputs) describe(input, response->add_inputs());
    for (const ToyTensor& output : (*model)->outputs) describe(output, response->add_outputs());
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override {
    absl::StatusOr<const ToyModel*> model = Find(request->name(), request->version());
    if (!model.ok()) return Finish(context, model.status());
    inference::ModelConfig* config = response->mutable_config();
    config->set_name((*model)->name);
    config->set_platform("graphserve_fake");
    config->set_max_batch_size(static_cast<int32_t>(options_.max_batch_size));
    if (options_.capture.ByteSizeLong() > 0) *config->mutable_capture() = options_.capture;
    for (const ToyTensor& tensor : (*model)->inputs) {
      inference::ModelInput* input = config->add_input();
      input->set_name(tensor.name);
      input->set_data_type(tensor.config_datatype);
      for (const int64_t dim : tensor.dims) input->add_dims(dim);
    }
    for (const ToyTensor& tensor : (*model)->outputs) {
      inference::ModelOutput* output = config->add_output();
      output->set_name(tensor.name);
      output->set_data_type(tensor.config_datatype);
      for (const int64_t dim : tensor.dims) output->add_dims(dim);
    }
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ModelStatistics(grpc::CallbackServerContext* context,
                                            const inference::ModelStatisticsRequest* request,
                                            inference::ModelStatisticsResponse* response) override {
    if (!request->name().empty()) {
      if (absl::Status found = Find(request->name(), request->version()).status(); !found.ok()) {
        return Finish(context, found);
      }
    }
    absl::MutexLock lock(&mu_);
    for (const auto& [name, stats] : stats_) {
      if (request->name().empty() || request->name() == name) {
        *response->add_model_stats() = stats;
      }
    }
    return Finish(context, absl::OkStatus());
  }

  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    SeeMetadata(*context);
    return Finish(context, Infer(*request, response));
  }

  grpc::ServerBidiReactor<inference::ModelInferRequest, inference::ModelStreamInferResponse>*
  ModelStreamInfer(grpc::CallbackServerContext* context) override {
    SeeMetadata(*context);
    {
      absl::MutexLock lock(&mu_);
      ++stream_calls_;
    }
    return new StreamReactor(this);
  }

 private:
  // One ModelStreamInfer call: read a request, write its answer, read the
  // next, until the client's WritesDone.
  class StreamReactor final : public grpc::ServerBidiReactor<inference::ModelInferRequest,
                                                             inference::ModelStreamInferResponse> {
   public:
    explicit StreamReactor(Service* service) : service_(service) { StartRead(&request_); }

    void OnReadDone(bool ok) override {
      if (!ok) {  // the client's WritesDone, or a cancelled call
        Finish(grpc::Status::OK);
        return;
      }
      const int64_t end_after = service_->options_.end_streams_after_answers;
      if (end_after > 0 && answered_ == end_after) {
        Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "injected stream end"));
        return;
      }
      answer_.Clear();
      const absl::Status status = service_->Infer(request_, answer_.mutable_infer_response());
      if (!status.ok()) {
        answer_.set_error_message(std::string(status.message()));
        inference::ModelInferResponse* response = answer_.mutable_infer_response();
        response->Clear();
        response->set_id(request_.id());
        response->set_model_name(request_.model_name());
        response->set_model_version(request_.model_version());
      }
      StartWrite(&answer_);
    }

    void OnWriteDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the answer could not be written"));
        return;
      }
      ++answered_;
      StartRead(&request_);
    }

    void OnDone() override { delete this; }

   private:
    Service* const service_;
    inference::ModelInferRequest request_;
    inference::ModelStreamInferResponse answer_;
    int64_t answered_ = 0;
  };

  // ModelInfer's work, for a call or a request on a stream: counts the call,
  // fails it when asked to, and keeps the model's statistics.
  absl::Status Infer(const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response) {
    const absl::Time received = absl::Now();
    int64_t call_number = 0;
    {
      absl::MutexLock lock(&mu_);
      call_number = ++infer_calls_;
    }
    absl::Status status;
    if (options_.fail_every_nth_infer > 0 && call_number % options_.fail_every_nth_infer == 0) {
      status = absl::InternalError("injected failure");
    } else {
      status = RunInfer(request, response);
    }
    if (!status.ok()) {
      // Only known models keep statistics; an unknown name adds no entry.
      absl::MutexLock lock(&mu_);
      if (auto it = stats_.find(request.model_name()); it != stats_.end()) {
        AddDuration(it->second.mutable_inference_stats()->mutable_fail(), absl::Now() - received);
      }
    }
    return status;
  }

  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context,
                                   const absl::Status& status) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  }

  absl::StatusOr<const ToyModel*> Find(const std::string& name, const std::string& version) const {
    for (const ToyModel& model : models_) {
      if (model.name != name) continue;
      if (!version.empty() && version != kVersion) {
        return absl::NotFoundError(
            absl::StrCat("model '", name, "' has no version '", version, "'"));
      }
      return &model;
    }
    return absl::NotFoundError(absl::StrCat("unknown model '", name, "'"));
  }

  // The `byte_size` bytes a tensor's parameters name; `held` keeps their
  // region mapped until the request is answered.
  absl::StatusOr<char*> RegionBytes(const RegionParameters& parameters,
                                    std::vector<std::shared_ptr<MappedRegion>>* held) const {
    std::shared_ptr<MappedRegion> region;
    {
      absl::MutexLock lock(&mu_);
      const auto found = regions_.find(parameters.region);
      if (found == regions_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown shared memory region '", parameters.region, "'"));
      }
      region = found->second;
    }
    ASSIGN_OR_RETURN(char* bytes, region->Range(parameters.offset, parameters.byte_size));
    held->push_back(std::move(region));
    return bytes;
  }

  // The inputs' bytes in the model's order, after checking names, datatypes,
  // shapes and sizes; `batch` gets the common first dimension. An input in
  // shared memory is viewed in its region, which `held` keeps mapped; the
  // others take the raw_input_contents entries in order.
  absl::StatusOr<std::vector<absl::string_view>> CheckInputs(
      const ToyModel& model, const inference::ModelInferRequest& request, int64_t* batch,
      std::vector<std::shared_ptr<MappedRegion>>* held) const {
    std::vector<int> raw_index(request.inputs_size(), -1);
    int in_message = 0;
    for (int j = 0; j < request.inputs_size(); ++j) {
      if (!ReadRegionParameters(request.inputs(j).parameters()).has_value()) {
        raw_index[j] = in_message++;
      }
    }
    if (request.raw_input_contents_size() != in_message) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected raw_input_contents for each of the ", in_message,
                       " inputs outside shared memory, got ", request.raw_input_contents_size()));
    }
    if (request.inputs_size() != static_cast<int>(model.inputs.size())) {
      return absl::InvalidArgumentError(absl::StrCat("model '", model.name, "' takes ",
                                                     model.inputs.size(), " inputs, got ",
                                                     request.inputs_size()));
    }
    std::vector<absl::string_view> data(model.inputs.size());
    *batch = -1;
    for (size_t i = 0; i < model.inputs.size(); ++i) {
      const ToyTensor& expected = model.inputs[i];
      int found = -1;
      for (int j = 0; j < request.inputs_size(); ++j) {
        if (request.inputs(j).name() == expected.name) found = j;
      }
      if (found < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("model '", model.name, "' needs input '", expected.name, "'"));
      }
      const auto& tensor = request.inputs(found);
      if (tensor.datatype() != expected.datatype) {
        return absl::InvalidArgumentError(absl::StrCat("input '", expected.name, "' must be ",
                                                       expected.datatype, ", got ",
                                                       tensor.datatype()));
      }
      const std::vector<int64_t> shape(tensor.shape().begin(), tensor.shape().end());
      std::vector<int64_t> want = {shape.empty() ? -1 : shape[0]};
      want.insert(want.end(), expected.dims.begin(), expected.dims.end());
      if (shape != want || shape[0] < 1 || shape[0] > options_.max_batch_size ||
          (*batch >= 0 && shape[0] != *batch)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", expected.name, "' has shape [", absl::StrJoin(shape, ","),
            "], expected [batch,", absl::StrJoin(expected.dims, ","), "] with batch 1 to ",
            options_.max_batch_size, " and the same for all inputs"));
      }
      *batch = shape[0];
      absl::string_view bytes;
      if (const std::optional<RegionParameters> in_region =
              ReadRegionParameters(tensor.parameters())) {
        ASSIGN_OR_RETURN(const char* data, RegionBytes(*in_region, held));
        bytes = absl::string_view(data, static_cast<size_t>(in_region->byte_size));
      } else {
        bytes = request.raw_input_contents(raw_index[found]);
      }
      const auto want_bytes =
          static_cast<size_t>(*batch * RowElements(expected)) * expected.element_bytes;
      if (bytes.size() != want_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", expected.name, "' has ", bytes.size(), " bytes, expected ", want_bytes));
      }
      data[i] = bytes;
    }
    return data;
  }

  absl::Status RunInfer(const inference::ModelInferRequest& request,
                        inference::ModelInferResponse* response) {
    const absl::Time start = absl::Now();
    ASSIGN_OR_RETURN(const ToyModel* model, Find(request.model_name(), request.model_version()));
    for (const auto& requested : request.outputs()) {
      bool known = false;
      for (const ToyTensor& output : model->outputs) known |= output.name == requested.name();
      if (!known) {
        return absl::InvalidArgumentError(
            absl::StrCat("model '", model->name, "' has no output '", requested.name(), "'"));
      }
    }
    int64_t batch = 0;
    std::vector<std::shared_ptr<MappedRegion>> held;  // regions in use until answered
    ASSIGN_OR_RETURN(const std::vector<absl::string_view> inputs,
                     CheckInputs(*model, request, &batch, &held));
    const absl::Time inputs_checked = absl::Now();
    const std::vector<std::string> outputs = model->compute(batch, inputs);
    const absl::Time computed = absl::Now();

    response->set_model_name(model->name);
    response->set_model_version(kVersion);
    response->set_id(request.id());
    for (size_t i = 0; i < model->outputs.size(); ++i) {
      const ToyTensor& tensor = model->outputs[i];
      const inference::ModelInferRequest::InferRequestedOutputTensor* requested = nullptr;
      for (const auto& candidate : request.outputs()) {
        if (candidate.name() == tensor.name) requested = &candidate;
      }
      if (requested == nullptr && !request.outputs().empty()) continue;
      auto* output = response->add_outputs();
      output->set_name(tensor.name);
      output->set_datatype(tensor.datatype);
      output->add_shape(batch);
      for (const int64_t dim : tensor.dims) output->add_shape(dim);
      std::string* raw = response->add_raw_output_contents();
      const std::optional<RegionParameters> in_region =
          requested != nullptr ? ReadRegionParameters(requested->parameters()) : std::nullopt;
      if (!in_region.has_value()) {
        *raw = outputs[i];
        continue;
      }
      // As GraphServe answers: the output's rows in the region, its
      // metadata and region in the response, and an empty raw entry.
      if (static_cast<size_t>(in_region->byte_size) < outputs[i].size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("output '", tensor.name, "' needs ", outputs[i].size(),
                         " bytes, its shared memory range has ", in_region->byte_size));
      }
      ASSIGN_OR_RETURN(char* destination, RegionBytes(*in_region, &held));
      std::memcpy(destination, outputs[i].data(), outputs[i].size());
      auto& parameters = *output->mutable_parameters();
      parameters["shared_memory_region"].set_string_param(in_region->region);
      parameters["shared_memory_byte_size"].set_int64_param(
          static_cast<int64_t>(outputs[i].size()));
    }
    const absl::Time done = absl::Now();

    absl::MutexLock lock(&mu_);
    inference::ModelStatistics& stats = stats_[model->name];
    stats.set_inference_count(stats.inference_count() + static_cast<uint64_t>(batch));
    stats.set_execution_count(stats.execution_count() + 1);
    stats.set_last_inference(static_cast<uint64_t>(absl::ToUnixMillis(done)));
    inference::InferStatistics* infer = stats.mutable_inference_stats();
    AddDuration(infer->mutable_success(), done - start);
    // No scheduler: a request never waits, but is counted as perf_analyzer
    // expects one queue entry per request.
    AddDuration(infer->mutable_queue(), absl::ZeroDuration());
    AddDuration(infer->mutable_compute_input(), inputs_checked - start);
    AddDuration(infer->mutable_compute_infer(), computed - inputs_checked);
    AddDuration(infer->mutable_compute_output(), done - computed);
    return absl::OkStatus();
  }

  const FakeInferenceServerOptions options_;
  const std::vector<ToyModel> models_;

  mutable absl::Mutex mu_;
  int64_t infer_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t live_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t stream_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, inference::ModelStatistics> stats_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<MappedRegion>> regions_ ABSL_GUARDED_BY(mu_);
  // (key, value) of every watched call's metadata: how many calls had it.
  std::map<std::pair<std::string, std::string>, int64_t> metadata_seen_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<FakeInferenceServer>> FakeInferenceServer::Start(
    const FakeInferenceServerOptions& options) {
  if (options.max_batch_size < 1) {
    return absl::InvalidArgumentError("max_batch_size must be at least 1");
  }
  KeepCallbackQueueAlive();  // see Note [Callback queue keep-alive]
  auto service = std::make_unique<Service>(options);
  int port = 0;
  // grpc.health.v1 as the real server has it, for `graphserve-client health`.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError("the fake inference server could not bind a loopback port");
  }
  return std::unique_ptr<FakeInferenceServer>(new FakeInferenceServer(
      std::move(service), std::move(server), absl::StrCat("127.0.0.1:", port)));
}

FakeInferenceServer::FakeInferenceServer(std::unique_ptr<Service> service,
                                         std::unique_ptr<grpc::Server> server, std::string address)
    : service_(std::move(service)), server_(std::move(server)), address_(std::move(address)) {}

FakeInferenceServer::~FakeInferenceServer() {
  // A deadline in the past cancels what is still in flight instead of
  // waiting for it; the server goes before the service it dispatches to.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

int64_t FakeInferenceServer::infer_calls() const { return service_->infer_calls(); }

int64_t FakeInferenceServer::live_calls() const { return service_->live_calls(); }

int64_t FakeInferenceServer::stream_calls() const { return service_->stream_calls(); }

int64_t FakeInferenceServer::registered_regions() const { return service_->registered_regions(); }
int64_t FakeInferenceServer::calls_with_metadata(const std::string& key,
                                                 const std::string& value) const {
  return service_->calls_with_metadata(key, value);
}

}  // namespace graphserve
