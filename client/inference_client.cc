#include "client/inference_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/datatype.h"
#include "common/status.h"

namespace graphserve {
namespace {

// The one place a grpc::Status becomes an absl::Status. gRPC's and Abseil's
// codes are both google.rpc.Code, number for number, so the cast keeps the
// code; the message is passed on unchanged so that callers (and tests) see
// exactly what the server said.
absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Durations of client-side work are taken on the monotonic clock: absl::Now()
// follows the wall clock, which may step while a request is in flight.
using SteadyClock = std::chrono::steady_clock;

using Stub = inference::GRPCInferenceService::Stub;

absl::Duration Since(SteadyClock::time_point start) {
  return absl::FromChrono(SteadyClock::now() - start);
}

absl::Status CheckRange(const SharedMemoryRange& range, absl::string_view where) {
  if (range.region.empty() || range.offset < 0 || range.byte_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": a shared-memory range needs a region name, an offset >= 0 and a ",
                     "byte size >= 1, got '", range.region, "' offset ", range.offset, " size ",
                     range.byte_size));
  }
  return absl::OkStatus();
}

absl::Status CheckInput(const InferTensor& input) {
  if (input.name.empty()) return absl::InvalidArgumentError("an input has no name");
  absl::StatusOr<int64_t> expected_bytes = TensorByteSize(input.datatype, input.shape);
  if (!expected_bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", input.name, ": ", expected_bytes.status().message()));
  }
  if (input.shared_memory.has_value()) {
    const std::string where = absl::StrCat("input ", input.name);
    RETURN_IF_ERROR(CheckRange(*input.shared_memory, where));
    if (!input.data.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " is in shared memory region ", input.shared_memory->region,
                       " but also carries ", input.data.size(), " bytes; send it one way"));
    }
    if (input.shared_memory->byte_size != *expected_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": ", input.datatype, " ", FormatShape(input.shape), " needs ", *expected_bytes,
          " bytes, its shared-memory range has ", input.shared_memory->byte_size));
    }
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(input.data.size()) != *expected_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("input ", input.name, ": ", input.datatype, " ", FormatShape(input.shape),
                     " needs ", *expected_bytes, " bytes, got ", input.data.size()));
  }
  return absl::OkStatus();
}

// The offset goes out even when it is 0: the protocol makes it optional, and
// an explicit 0 reads the same to every server.
void SetRangeParameters(const SharedMemoryRange& range,
                        google::protobuf::Map<std::string, inference::InferParameter>* parameters) {
  (*parameters)["shared_memory_region"].set_string_param(range.region);
  (*parameters)["shared_memory_byte_size"].set_int64_param(range.byte_size);
  (*parameters)["shared_memory_offset"].set_int64_param(range.offset);
}

// The region an output's shared_memory_region parameter names, or "" when it
// has none.
std::string OutputRegion(const inference::ModelInferResponse::InferOutputTensor& output) {
  const auto region = output.parameters().find("shared_memory_region");
  return region == output.parameters().end() ? "" : region->second.string_param();
}

template <typename T>
void AppendBytes(const T* values, int count, std::string* bytes) {
  bytes->append(reinterpret_cast<const char*>(values), sizeof(T) * static_cast<size_t>(count));
}

// A server may answer with typed `contents` instead of raw bytes (the protocol
// allows both); this turns the common types into raw bytes so that the rest
// of the client sees one layout. The host is little-endian, as the raw layout.
absl::Status MoveTypedContentsToRaw(inference::ModelInferResponse* response) {
  for (const auto& output : response->outputs()) {
    const inference::InferTensorContents& contents = output.contents();
    std::string* raw = response->add_raw_output_contents();
    if (!OutputRegion(output).empty()) continue;  // Note [Outputs in shared memory]
    if (output.datatype() == "FP32") {
      AppendBytes(contents.fp32_contents().data(), contents.fp32_contents_size(), raw);
    } else if (output.datatype() == "FP64") {
      AppendBytes(contents.fp64_contents().data(), contents.fp64_contents_size(), raw);
    } else if (output.datatype() == "INT64") {
      AppendBytes(contents.int64_contents().data(), contents.int64_contents_size(), raw);
    } else if (output.datatype() == "INT32") {
      AppendBytes(contents.int_contents().data(), contents.int_contents_size(), raw);
    } else if (output.datatype() == "BOOL") {
      for (const bool value : contents.bool_contents()) raw->push_back(value ? 1 : 0);
    } else {
      return absl::UnimplementedError(absl::StrCat(
          "output ", output.name(), " came as typed contents of datatype ", output.datatype(),
          "; the client reads FP32, FP64, INT32, INT64 and "
          "BOOL that way, other datatypes only as raw_output_contents"));
    }
  }
  return absl::OkStatus();
}

// Note [Outputs in shared memory]
// An output the server wrote into a shared-memory region comes back with its
// name, datatype, shape and the region's parameters, but no bytes. GraphServe
// keeps an empty raw_output_contents entry for it, so that entries pair with
// outputs by index (as tritonclient reads them); a server may instead leave
// the entry out, the entries then pairing with the other outputs in order.
// The client reads both: this puts the missing empty entries back, and the
// InferOutput says which region holds the bytes (shared_memory_region).
void AddEntriesForOutputsInRegions(inference::ModelInferResponse* response) {
  int in_regions = 0;
  for (const auto& output : response->outputs()) in_regions += OutputRegion(output).empty() ? 0 : 1;
  if (in_regions == 0 ||
      response->raw_output_contents_size() != response->outputs_size() - in_regions) {
    return;  // paired already, or malformed: FromResponse says which
  }
  google::protobuf::RepeatedPtrField<std::string> sent;
  sent.Swap(response->mutable_raw_output_contents());
  int next = 0;
  for (const auto& output : response->outputs()) {
    std::string* entry = response->add_raw_output_contents();
    if (OutputRegion(output).empty()) *entry = std::move(*sent.Mutable(next++));
  }
}

template <typename T>
absl::StatusOr<absl::Span<const T>> ViewAs(const InferOutput& output, absl::string_view datatype) {
  if (output.datatype != datatype) {
    return absl::InvalidArgumentError(
        absl::StrCat("output ", output.name, " is ", output.datatype, ", not ", datatype));
  }
  if (output.data.size() % sizeof(T) != 0) {
    return absl::InternalError(absl::StrCat("output ", output.name, " has ", output.data.size(),
                                            " bytes, not a whole number of ", datatype));
  }
  if (output.data.empty()) return absl::Span<const T>();
  // The bytes live in a heap-allocated std::string, aligned for any scalar;
  // checked rather than assumed because a misaligned view would be UB.
  if (reinterpret_cast<uintptr_t>(output.data.data()) % alignof(T) != 0) {
    return absl::InternalError(
        absl::StrCat("output ", output.name, " is not aligned for ", datatype));
  }
  return absl::Span<const T>(reinterpret_cast<const T*>(output.data.data()),
                             output.data.size() / sizeof(T));
}

// Times the conversion of `response` (the "receive" side of InferTiming).
absl::StatusOr<InferResult> ToResult(inference::ModelInferResponse response, absl::Duration send) {
  const SteadyClock::time_point receive_start = SteadyClock::now();
  ASSIGN_OR_RETURN(InferResult result, InferResult::FromResponse(std::move(response)));
  result.set_timing({.send = send, .receive = Since(receive_start)});
  return result;
}

// The answer to a stream's request `request_id` ("": not checked).
absl::StatusOr<InferResult> ToStreamAnswer(inference::ModelStreamInferResponse answer,
                                           const std::string& request_id, absl::Duration send) {
  if (!request_id.empty() && answer.infer_response().id() != request_id) {
    return absl::InternalError(absl::StrCat("the stream answered request '",
                                            answer.infer_response().id(), "' while request '",
                                            request_id, "' was outstanding"));
  }
  if (!answer.error_message().empty()) return absl::UnknownError(answer.error_message());
  return ToResult(std::move(*answer.mutable_infer_response()), send);
}

}  // namespace

absl::Status CheckInferRequest(const InferRequest& request) {
  if (request.model_name.empty()) return absl::InvalidArgumentError("no model name");
  for (const InferTensor& input : request.inputs) RETURN_IF_ERROR(CheckInput(input));
  for (const auto& [name, range] : request.output_shared_memory) {
    const std::string where = absl::StrCat("output ", name);
    RETURN_IF_ERROR(CheckRange(range, where));
    // The protocol carries an output's region on its requested-output entry:
    // an output not asked for by name has nowhere to say it.
    if (std::find(request.requested_outputs.begin(), request.requested_outputs.end(), name) ==
        request.requested_outputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " is placed in shared memory region ", range.region,
                       " but is not among the requested outputs"));
    }
  }
  return absl::OkStatus();
}

absl::Status BuildInferMessage(const InferRequest& request, inference::ModelInferRequest* message) {
  RETURN_IF_ERROR(CheckInferRequest(request));
  message->set_model_name(request.model_name);
  message->set_model_version(request.model_version);
  message->set_id(request.id);
  for (const InferTensor& input : request.inputs) {
    inference::ModelInferRequest::InferInputTensor* tensor = message->add_inputs();
    tensor->set_name(input.name);
    tensor->set_datatype(input.datatype);
    for (const int64_t dim : input.shape) tensor->add_shape(dim);
    if (input.shared_memory.has_value()) {
      // raw_input_contents holds the other inputs only, in order (Triton).
      SetRangeParameters(*input.shared_memory, tensor->mutable_parameters());
    } else {
      message->add_raw_input_contents(input.data);
    }
  }
  for (const std::string& name : request.requested_outputs) {
    inference::ModelInferRequest::InferRequestedOutputTensor* output = message->add_outputs();
    output->set_name(name);
    if (auto range = request.output_shared_memory.find(name);
        range != request.output_shared_memory.end()) {
      SetRangeParameters(range->second, output->mutable_parameters());
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const float>> InferOutput::AsFloat32() const {
  return ViewAs<float>(*this, "FP32");
}

absl::StatusOr<absl::Span<const int64_t>> InferOutput::AsInt64() const {
  return ViewAs<int64_t>(*this, "INT64");
}

absl::StatusOr<absl::Span<const uint8_t>> InferOutput::AsBool() const {
  return ViewAs<uint8_t>(*this, "BOOL");
}

absl::StatusOr<InferResult> InferResult::FromResponse(inference::ModelInferResponse response) {
  if (response.raw_output_contents_size() == 0 && response.outputs_size() > 0) {
    RETURN_IF_ERROR(MoveTypedContentsToRaw(&response));
  } else {
    AddEntriesForOutputsInRegions(&response);
  }
  if (response.raw_output_contents_size() != response.outputs_size()) {
    return absl::InternalError(absl::StrCat("malformed response: ", response.outputs_size(),
                                            " outputs but ", response.raw_output_contents_size(),
                                            " raw_output_contents entries"));
  }
  auto shared = std::make_shared<const inference::ModelInferResponse>(std::move(response));
  std::vector<InferOutput> outputs;
  outputs.reserve(shared->outputs_size());
  for (int i = 0; i < shared->outputs_size(); ++i) {
    const auto& tensor = shared->outputs(i);
    InferOutput output{.name = tensor.name(),
                       .datatype = tensor.datatype(),
                       .shape = {tensor.shape().begin(), tensor.shape().end()},
                       .data = shared->raw_output_contents(i),
                       .shared_memory_region = OutputRegion(tensor)};
    if (!output.shared_memory_region.empty() && !output.data.empty()) {
      return absl::InternalError(absl::StrCat(
          "malformed response: output ", output.name, " is in shared memory region ",
          output.shared_memory_region, " but also carries ", output.data.size(), " bytes"));
    }
    // BYTES and datatypes this client does not know pass through unchecked,
    // as do outputs in shared memory (their bytes are in the region).
    if (output.shared_memory_region.empty() && DatatypeByteSize(output.datatype).ok()) {
      absl::StatusOr<int64_t> expected = TensorByteSize(output.datatype, output.shape);
      if (!expected.ok() || *expected != static_cast<int64_t>(output.data.size())) {
        return absl::InternalError(
            absl::StrCat("malformed response: output ", output.name, " (", output.datatype, " ",
                         FormatShape(output.shape), ") has ", output.data.size(), " bytes",
                         expected.ok() ? absl::StrCat(", expected ", *expected) : ""));
      }
    }
    outputs.push_back(std::move(output));
  }
  return InferResult(std::move(shared), std::move(outputs));
}

absl::StatusOr<const InferOutput*> InferResult::Output(absl::string_view name) const {
  std::vector<absl::string_view> names;
  for (const InferOutput& output : outputs_) {
    if (output.name == name) return &output;
    names.push_back(output.name);
  }
  return absl::NotFoundError(absl::StrCat(
      "no output '", name, "' in the result (outputs: ", absl::StrJoin(names, ", "), ")"));
}

// Every tag on the client's queue is one of these: Poll hands each completion
// to the tag it carries.
struct InferenceClient::QueueTag {
  virtual ~QueueTag() = default;
  // On the queue's thread; `ok` as the queue returns it.
  virtual void OnCompletion(InferenceClient& client, bool ok) = 0;
};

// One asynchronous call, in the client's in_flight_ set from its start until
// UntrackAsync deletes it, so that the destructor can cancel it.
struct InferenceClient::AsyncCall : QueueTag {
  grpc::ClientContext context;
  grpc::Status status;
};

// An InferAsync or ServerLiveAsync: its one tag is its Finish.
struct InferenceClient::UnaryCall : AsyncCall {
  void OnCompletion(InferenceClient& client, bool ok) final {
    Complete();
    // The destructor may be running once the set is empty: it waits for this
    // thread (the queue's) before anything of the client goes.
    client.UntrackAsync(this);
  }
  // Hands the call's outcome (`status`, set by the queue) to the caller's
  // callback.
  virtual void Complete() = 0;
};

struct InferenceClient::AsyncInfer final : UnaryCall {
  void Complete() override {
    absl::Status grpc_status = FromGrpcStatus(status);
    if (grpc_status.ok()) {
      done(ToResult(std::move(response), send));
    } else {
      done(std::move(grpc_status));
    }
  }
  inference::ModelInferRequest request;
  inference::ModelInferResponse response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ModelInferResponse>> reader;
  absl::Duration send;
  InferCallback done;
};

struct InferenceClient::AsyncServerLive final : UnaryCall {
  void Complete() override { done(FromGrpcStatus(status)); }
  inference::ServerLiveRequest request;
  inference::ServerLiveResponse response;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ServerLiveResponse>> reader;
  std::function<void(absl::Status)> done;
};

absl::StatusOr<std::unique_ptr<InferenceClient>> InferenceClient::Create(
    const InferenceClientOptions& options) {
  if (options.address.empty()) return absl::InvalidArgumentError("no server address");
  if (options.call_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("call timeout must not be negative, got ",
                                                   absl::FormatDuration(options.call_timeout)));
  }
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max message size must be positive, got ", options.max_message_bytes));
  }
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(options.max_message_bytes);
  arguments.SetMaxSendMessageSize(options.max_message_bytes);
  if (options.private_connection) arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  ForEachGrpcChannelArg(options.channel_args, [&](const std::string& name, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, int>) {
      arguments.SetInt(name, value);
    } else {
      arguments.SetString(name, value);
    }
  });
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateCustomChannel(options.address, grpc::InsecureChannelCredentials(), arguments);
  if (channel == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot open a channel to '", options.address, "'"));
  }
  return std::unique_ptr<InferenceClient>(
      new InferenceClient(options, inference::GRPCInferenceService::NewStub(channel),
                          grpc::health::v1::Health::NewStub(channel)));
}

InferenceClient::~InferenceClient() {
  {
    absl::MutexLock lock(&mu_);
    for (AsyncCall* call : in_flight_) call->context.TryCancel();
    // A call leaves the set only after the user's callback has returned,
    // so once it is empty no callback can touch anything the caller owns.
    mu_.Await(absl::Condition(
        +[](std::unordered_set<AsyncCall*>* calls) { return calls->empty(); }, &in_flight_));
  }
  // Nothing is left on the queue but its shutdown. gRPC wants a queue
  // drained before it goes, even one no call ever used.
  queue_.Shutdown();
  if (poller_.joinable()) {
    poller_.join();
  } else {
    Poll();
  }
}

void InferenceClient::PrepareContext(grpc::ClientContext* context) const {
  if (options_.call_timeout > absl::ZeroDuration()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + options_.call_timeout));
  }
  AddMetadata(context);
}

void InferenceClient::AddMetadata(grpc::ClientContext* context) const {
  for (const auto& [key, value] : options_.metadata) context->AddMetadata(key, value);
}

template <typename Request, typename Response>
absl::StatusOr<Response> InferenceClient::Call(
    grpc::Status (inference::GRPCInferenceService::Stub::*method)(grpc::ClientContext*,
                                                                   const Request&, Response*),
    const Request& request) {
  grpc::ClientContext context;
  PrepareContext(&context);
  Response response;
  RETURN_IF_ERROR(FromGrpcStatus((stub_.get()->*method)(&context, request, &response)));
  return response;
}

absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> InferenceClient::Health(
    absl::string_view service) {
  grpc::ClientContext context;
  PrepareContext(&context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(std::string(service));
  grpc::health::v1::HealthCheckResponse response;
  RETURN_IF_ERROR(FromGrpcStatus(health_->Check(&context, request, &response)));
  return response.status();
}

absl::StatusOr<inference::ServerLiveResponse> InferenceClient::ServerLive() {
  return Call(&Stub::ServerLive, inference::ServerLiveRequest());
}

absl::StatusOr<inference::ServerReadyResponse> InferenceClient::ServerReady() {
  return Call(&Stub::ServerReady, inference::ServerReadyRequest());
}

absl::StatusOr<inference::ServerMetadataResponse> InferenceClient::ServerMetadata() {
  return Call(&Stub::ServerMetadata, inference::ServerMetadataRequest());
}

absl::StatusOr<inference::ModelReadyResponse> InferenceClient::ModelReady(
    absl::string_view name, absl::string_view version) {
  inference::ModelReadyRequest request;
  request.set_name(std::string(name));
  request.set_version(std::string(version));
  return Call(&Stub::ModelReady, request);
}

absl::StatusOr<inference::ModelMetadataResponse> InferenceClient::ModelMetadata(
    absl::string_view name, absl::string_view version) {
  inference::ModelMetadataRequest request;
  request.set_name(std::string(name));
  request.set_version(std::string(version));
  return Call(&Stub::ModelMetadata, request);
}

absl::StatusOr<inference::ModelConfigResponse> InferenceClient::ModelConfig(
    absl::string_view name, absl::string_view version) {
  inference::ModelConfigRequest request;
  request.set_name(std::string(name));
  request.set_version(std::string(version));
  return Call(&Stub::ModelConfig, request);
}

absl::StatusOr<inference::ModelStatisticsResponse> InferenceClient::ModelStatistics(
    absl::string_view name, absl::string_view version) {
  inference::ModelStatisticsRequest request;
  request.set_name(std::string(name));
  request.set_version(std::string(version));
  return Call(&Stub::ModelStatistics, request);
}

absl::Status InferenceClient::SystemSharedMemoryRegister(absl::string_view name,
                                                         absl::string_view key, uint64_t offset,
                                                         uint64_t byte_size) {
  inference::SystemSharedMemoryRegisterRequest request;
  request.set_name(std::string(name));
  request.set_key(std::string(key));
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  return Call(&Stub::SystemSharedMemoryRegister, request).status();
}

absl::Status InferenceClient::SystemSharedMemoryUnregister(absl::string_view name) {
  inference::SystemSharedMemoryUnregisterRequest request;
  request.set_name(std::string(name));
  return Call(&Stub::SystemSharedMemoryUnregister, request).status();
}

absl::Status InferenceClient::CudaSharedMemoryRegister(absl::string_view name,
                                                       absl::string_view raw_handle,
                                                       int64_t device_id, uint64_t byte_size) {
  inference::CudaSharedMemoryRegisterRequest request;
  request.set_name(std::string(name));
  request.set_raw_handle(std::string(raw_handle));
  request.set_device_id(device_id);
  request.set_byte_size(byte_size);
  return Call(&Stub::CudaSharedMemoryRegister, request).status();
}

absl::Status InferenceClient::CudaSharedMemoryUnregister(absl::string_view name) {
  inference::CudaSharedMemoryUnregisterRequest request;
  request.set_name(std::string(name));
  return Call(&Stub::CudaSharedMemoryUnregister, request).status();
}

absl::StatusOr<InferResult> InferenceClient::Infer(const InferRequest& request) {
  const SteadyClock::time_point send_start = SteadyClock::now();
  inference::ModelInferRequest message;
  RETURN_IF_ERROR(BuildInferMessage(request, &message));
  const absl::Duration send = Since(send_start);

  grpc::ClientContext context;
  PrepareContext(&context);
  inference::ModelInferResponse response;
  RETURN_IF_ERROR(FromGrpcStatus(stub_->ModelInfer(&context, message, &response)));
  return ToResult(std::move(response), send);
}

void InferenceClient::InferAsync(const InferRequest& request, InferCallback done) {
  const SteadyClock::time_point send_start = SteadyClock::now();
  auto call = std::make_unique<AsyncInfer>();
  if (absl::Status built = BuildInferMessage(request, &call->request); !built.ok()) {
    done(std::move(built));
    return;
  }
  call->send = Since(send_start);
  call->done = std::move(done);
  PrepareContext(&call->context);

  AsyncInfer* raw = call.release();
  TrackAsync(raw);
  raw->reader = stub_->AsyncModelInfer(&raw->context, raw->request, &queue_);
  raw->reader->Finish(&raw->response, &raw->status, raw);
}

void InferenceClient::ServerLiveAsync(std::function<void(absl::Status)> done) {
  auto call = std::make_unique<AsyncServerLive>();
  call->done = std::move(done);
  PrepareContext(&call->context);
  AsyncServerLive* raw = call.release();
  TrackAsync(raw);
  raw->reader = stub_->AsyncServerLive(&raw->context, raw->request, &queue_);
  raw->reader->Finish(&raw->response, &raw->status, raw);
}

std::unique_ptr<InferStream> InferenceClient::OpenStream() {
  return std::unique_ptr<InferStream>(new InferStream(this));
}

void InferenceClient::TrackAsync(AsyncCall* call) {
  std::call_once(poller_started_, [this] { poller_ = std::thread(&InferenceClient::Poll, this); });
  absl::MutexLock lock(&mu_);
  in_flight_.insert(call);
}

void InferenceClient::Poll() {
  void* tag = nullptr;
  bool ok = false;
  while (queue_.Next(&tag, &ok)) static_cast<QueueTag*>(tag)->OnCompletion(*this, ok);
}

void InferenceClient::UntrackAsync(AsyncCall* call) {
  {
    absl::MutexLock lock(&mu_);
    in_flight_.erase(call);
  }
  delete call;
}

// ------------------------------------------------------------------ InferStream

// The step's tag: Write, Read and WritesDone come back through it.
struct InferStream::StepTag final : InferenceClient::QueueTag {
  explicit StepTag(Call* call) : call(call) {}
  void OnCompletion(InferenceClient& client, bool ok) override;
  Call* const call;
};

// One ModelStreamInfer call (Note [Stream calls]). The call itself is the tag
// of its Finish. `step` and `finished` are guarded by the stream's mu_.
struct InferStream::Call final : InferenceClient::AsyncCall {
  explicit Call(InferStream* stream) : stream(stream) {}
  void OnCompletion(InferenceClient& client, bool ok) override { stream->OnFinished(this); }

  InferStream* const stream;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<inference::ModelInferRequest,
                                                inference::ModelStreamInferResponse>>
      reader_writer;
  inference::ModelStreamInferResponse answer;
  StepTag step_tag{this};
  Step step = Step::kNone;
  bool finished = false;
};

void InferStream::StepTag::OnCompletion(InferenceClient& client, bool ok) {
  call->stream->OnStep(call, ok);
}

InferStream::~InferStream() {
  absl::MutexLock lock(&mu_);
  if (call_ != nullptr) call_->context.TryCancel();
  mu_.Await(absl::Condition(this, &InferStream::Ended));
}

void InferStream::InferAsync(const InferRequest& request, InferCallback done) {
  const SteadyClock::time_point send_start = SteadyClock::now();
  inference::ModelInferRequest message;
  if (absl::Status built = BuildInferMessage(request, &message); !built.ok()) {
    done(std::move(built));
    return;
  }
  const absl::Duration send = Since(send_start);
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (closing_) {
      refused = absl::FailedPreconditionError("the stream is closing");
    } else if (done_ != nullptr) {
      refused = absl::FailedPreconditionError(
          "a request is outstanding on the stream; send the next once its callback is called");
    } else {
      // A call the server ended while no request was outstanding goes now
      // (its callback, if any, has returned): this request starts another.
      if (call_ != nullptr && call_->finished) EndCallIfOver();
      if (call_ == nullptr) StartCall();
      done_ = std::move(done);
      request_id_ = request.id;
      send_ = send;
      call_->step = Step::kWrite;
      // Write serializes the message before it returns.
      call_->reader_writer->Write(message, &call_->step_tag);
      return;
    }
  }
  done(std::move(refused));
}

absl::Status InferStream::Close(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (closing_) return absl::FailedPreconditionError("the stream is closing already");
  closing_ = true;
  const bool had_call = call_ != nullptr;
  bool cancelled = !AwaitOrCancel(absl::Condition(this, &InferStream::Idle), deadline);
  if (call_ != nullptr && !cancelled) {
    call_->step = Step::kWritesDone;
    call_->reader_writer->WritesDone(&call_->step_tag);
  }
  cancelled = !AwaitOrCancel(absl::Condition(this, &InferStream::Ended), deadline) || cancelled;
  closing_ = false;
  if (cancelled) {
    return absl::DeadlineExceededError(
        "the stream did not end by the deadline given to Close, and was cancelled");
  }
  return had_call ? last_end_ : absl::OkStatus();
}

void InferStream::StartCall() {
  call_ = new Call(this);
  // No deadline: the stream lasts as long as its user keeps it, and Close
  // takes one of its own.
  client_->AddMetadata(&call_->context);
  call_->context.set_initial_metadata_corked(true);
  client_->TrackAsync(call_);
  call_->reader_writer =
      client_->stub_->PrepareAsyncModelStreamInfer(&call_->context, &client_->queue_);
  // Corked, StartCall sends nothing and so returns no tag: the headers go
  // with the first Write.
  call_->reader_writer->StartCall(nullptr);
  call_->reader_writer->Finish(&call_->status, call_);
}

void InferStream::OnStep(Call* call, bool ok) {
  absl::MutexLock lock(&mu_);
  const Step step = std::exchange(call->step, Step::kNone);
  if (ok && step == Step::kWrite) {
    call->step = Step::kRead;
    call->reader_writer->Read(&call->answer, &call->step_tag);
    return;
  }
  if (ok && step == Step::kRead) {
    InferCallback done = std::exchange(done_, nullptr);
    absl::StatusOr<InferResult> answer =
        ToStreamAnswer(std::exchange(call->answer, {}), request_id_, send_);
    // `call` may be gone once the callback returns (its next request may
    // have found it ended and started another).
    RunCallback(std::move(done), std::move(answer));
  }
  // A write or read that failed has ended the call (its Finish says how);
  // after WritesDone, the server ends it.
  EndCallIfOver();
}

void InferStream::OnFinished(Call* call) {
  absl::MutexLock lock(&mu_);
  call->finished = true;
  EndCallIfOver();
}

void InferStream::EndCallIfOver() {
  Call* const call = call_;
  if (call == nullptr || !call->finished || call->step != Step::kNone) return;
  call_ = nullptr;
  last_end_ = FromGrpcStatus(call->status);
  if (done_ != nullptr) {
    absl::Status lost = last_end_.ok() ? absl::InternalError(
                                             "the server ended the stream without answering "
                                             "the request outstanding")
                                       : last_end_;
    RunCallback(std::exchange(done_, nullptr), std::move(lost));
  }
  // Out of the client's in_flight_ set only now, the callback having
  // returned (the client's destructor relies on it).
  client_->UntrackAsync(call);
}

void InferStream::RunCallback(InferCallback done, absl::StatusOr<InferResult> result) {
  in_callback_ = true;
  mu_.Unlock();
  done(std::move(result));
  mu_.Lock();
  in_callback_ = false;
}

bool InferStream::AwaitOrCancel(const absl::Condition& condition, absl::Time deadline) {
  if (mu_.AwaitWithDeadline(condition, deadline)) return true;
  if (call_ != nullptr) call_->context.TryCancel();
  mu_.Await(condition);
  return false;
}

}  // namespace graphserve
