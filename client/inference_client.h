#pragma once
// A C++ client for GraphServe's KServe v2 / Open Inference Protocol gRPC
// service (inference.GRPCInferenceService). It works against any server of
// that protocol, Triton included.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<InferenceClient> client,
//                    InferenceClient::Create({.address = "localhost:8001"}));
//   InferRequest request{.model_name = "double"};
//   request.inputs.push_back({"x", "FP32", {1, 4}, bytes});
//   ASSIGN_OR_RETURN(InferResult result, client->Infer(request));
//   ASSIGN_OR_RETURN(const InferOutput* y, result.Output("y"));
//   ASSIGN_OR_RETURN(absl::Span<const float> values, y->AsFloat32());
//
// InferAsync starts a request and calls back with its result; an InferStream
// (OpenStream) sends requests one at a time over Triton's ModelStreamInfer
// stream instead of a call each.
//
// Every call returns the server's error as an absl::Status with the gRPC
// code and message unchanged (NOT_FOUND for an unknown model stays NOT_FOUND).

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/grpc_channel_args.h"
#include "grpcpp/completion_queue.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/grpc_service.pb.h"
#include "proto/health.grpc.pb.h"

namespace graphserve {

struct InferenceClientOptions {
  // The server's gRPC endpoint, host:port or any gRPC target string
  // ("unix:/path", "dns:///host:port"). 8001 is the protocol's usual gRPC port.
  std::string address = "localhost:8001";

  // Deadline of every call, counted from its start. Zero: no deadline (a call
  // to a hung server then waits for ever). A ModelStreamInfer stream has none:
  // it lasts as long as its InferStream keeps it, and InferStream::Close takes
  // a deadline of its own.
  absl::Duration call_timeout = absl::Seconds(30);

  // Largest message sent or received, in bytes. A request carries all its
  // input tensors in one message, so gRPC's default of 4 MiB for receiving is
  // too small for large batches; the protocol's clients allow 2 GiB - 1.
  int max_message_bytes = std::numeric_limits<int32_t>::max();

  // Open a TCP connection of this client's own. By default gRPC shares one
  // connection among all channels to the same address, so many clients in
  // one process funnel through one socket; a load generator standing for
  // many independent clients wants several.
  bool private_connection = false;

  // gRPC core arguments for the channel, applied after the ones above
  // (common/grpc_channel_args.h).
  std::vector<GrpcChannelArg> channel_args;

  // Metadata sent with every call, streams too: (lower-case key, value), as
  // perf_analyzer's -H sends headers. A restricted API's key (Triton's
  // --grpc-restricted-protocol), or graphserve-shared-memory-owner (Note
  // [Shared memory owners] in server/shared_memory.h).
  std::vector<std::pair<std::string, std::string>> metadata;
};

// A tensor's bytes in a shared-memory region the client registered with the
// server (Triton's system and CUDA shared-memory extensions): `byte_size`
// bytes at `offset` of region `region`. Sent as the tensor's parameters
// shared_memory_region, shared_memory_byte_size and shared_memory_offset.
struct SharedMemoryRange {
  std::string region;
  int64_t offset = 0;
  int64_t byte_size = 0;
};

// One input tensor: its bytes are the flattened row-major elements,
// little-endian, exactly ElementCount(shape) * DatatypeByteSize(datatype)
// long. Sent as raw_input_contents, or, with `shared_memory`, left in the
// region for the server to read (`data` then empty).
struct InferTensor {
  std::string name;
  std::string datatype;  // protocol spelling: "FP32", "INT64", "BOOL", ...
  std::vector<int64_t> shape;
  std::string data;
  std::optional<SharedMemoryRange> shared_memory;
};

struct InferRequest {
  std::string model_name;
  // Empty: the version the server chooses.
  std::string model_version;
  std::vector<InferTensor> inputs;
  // The outputs to return. Empty: all outputs of the model.
  std::vector<std::string> requested_outputs;
  // Outputs the server writes into a shared-memory region instead of the
  // response, by name; each must be one of requested_outputs.
  std::map<std::string, SharedMemoryRange> output_shared_memory;
  // Echoed in the result. Optional.
  std::string id;
};

// One output tensor of an InferResult. `data` views bytes the InferResult
// owns: an InferOutput is valid as long as some copy of its result is.
struct InferOutput {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
  absl::string_view data;
  // Non-empty when the server wrote the output into this shared-memory
  // region (InferRequest::output_shared_memory): `data` is then empty and
  // the bytes are read from the region (SharedMemorySlot::ReadOutput).
  std::string shared_memory_region;

  // The elements, viewed in place. InvalidArgument when the datatype is not
  // the one asked for.
  absl::StatusOr<absl::Span<const float>> AsFloat32() const;
  absl::StatusOr<absl::Span<const int64_t>> AsInt64() const;
  // BOOL elements are one byte each, 0 or 1.
  absl::StatusOr<absl::Span<const uint8_t>> AsBool() const;
};

// Client-side time spent on a request outside the network and the server,
// as perf_analyzer splits it: `send` builds the request message from an
// InferRequest (copying the input bytes), `receive` turns the response
// message into an InferResult.
struct InferTiming {
  absl::Duration send;
  absl::Duration receive;
};

// The outputs of one inference. Cheap to copy: copies share the response.
class InferResult {
 public:
  // Takes the response and checks it: one raw_output_contents entry per
  // output (or typed `contents` for FP32, INT64 and BOOL), each of the size
  // its datatype and shape imply. An output in a shared-memory region has no
  // bytes in the response: its raw entry is empty, or absent (see
  // Note [Outputs in shared memory]). Internal error for a malformed response.
  static absl::StatusOr<InferResult> FromResponse(inference::ModelInferResponse response);

  const std::string& model_name() const { return response_->model_name(); }
  const std::string& model_version() const { return response_->model_version(); }
  const std::string& id() const { return response_->id(); }

  // In the response's order.
  const std::vector<InferOutput>& outputs() const { return outputs_; }

  // NotFound, naming the outputs present, when there is no output `name`.
  absl::StatusOr<const InferOutput*> Output(absl::string_view name) const;

  const InferTiming& timing() const { return timing_; }
  void set_timing(const InferTiming& timing) { timing_ = timing; }

  // Implementation details follow.
 private:
  InferResult(std::shared_ptr<const inference::ModelInferResponse> response,
              std::vector<InferOutput> outputs)
      : response_(std::move(response)), outputs_(std::move(outputs)) {}

  // Owns the bytes that outputs_[i].data view.
  std::shared_ptr<const inference::ModelInferResponse> response_;
  std::vector<InferOutput> outputs_;
  InferTiming timing_;
};

// The checks Infer and InferAsync apply before sending: a model name, and
// for each input a name and exactly the bytes its datatype and shape need.
// InvalidArgument naming the input otherwise.
absl::Status CheckInferRequest(const InferRequest& request);

// The ModelInfer message Infer and InferAsync send for `request`, after
// CheckInferRequest: inputs in shared memory carry the region's parameters
// and take no raw_input_contents entry, as do the outputs in
// output_shared_memory.
absl::Status BuildInferMessage(const InferRequest& request, inference::ModelInferRequest* message);

// Called once per InferAsync, on the client's completion-queue thread (Note
// [The client's completion queue]). It must not block: a blocked callback
// holds up every other call of the same client. Issuing another InferAsync
// from it is fine.
using InferCallback = std::function<void(absl::StatusOr<InferResult>)>;

class InferStream;

// Thread-safe: any number of threads may call any method at once.
class InferenceClient {
 public:
  // Validates the options and opens a channel. Connecting is lazy: an
  // unreachable server shows as UNAVAILABLE on the first call, not here.
  static absl::StatusOr<std::unique_ptr<InferenceClient>> Create(
      const InferenceClientOptions& options);

  // Cancels the asynchronous calls still in flight, a stream's included, and
  // waits for their callbacks (which see CANCELLED) to return. Never from one
  // of this client's callbacks (it would wait for itself).
  ~InferenceClient();

  InferenceClient(const InferenceClient&) = delete;
  InferenceClient& operator=(const InferenceClient&) = delete;

  // grpc.health.v1's Check of `service` ("": the whole server): what
  // container and load-balancer health checks ask.
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> Health(
      absl::string_view service = "");
  absl::StatusOr<inference::ServerLiveResponse> ServerLive();
  absl::StatusOr<inference::ServerReadyResponse> ServerReady();
  absl::StatusOr<inference::ServerMetadataResponse> ServerMetadata();
  // `version` empty: the version the server chooses.
  absl::StatusOr<inference::ModelReadyResponse> ModelReady(absl::string_view name,
                                                           absl::string_view version = "");
  absl::StatusOr<inference::ModelMetadataResponse> ModelMetadata(absl::string_view name,
                                                                 absl::string_view version = "");
  absl::StatusOr<inference::ModelConfigResponse> ModelConfig(absl::string_view name,
                                                             absl::string_view version = "");
  // `name` empty: every model; `version` empty: every version.
  absl::StatusOr<inference::ModelStatisticsResponse> ModelStatistics(
      absl::string_view name = "", absl::string_view version = "");

  // Triton's shared-memory extension: registers `byte_size` bytes at
  // `offset` of the POSIX shared memory object `key` (system) or the device
  // allocation whose cudaIpcMemHandle_t bytes are `raw_handle` (CUDA) under
  // `name`, for requests to name; unregister forgets it ("" : every region
  // of that kind). The server's error comes back as it is (ALREADY_EXISTS
  // for a name in use, UNIMPLEMENTED from a server without the extension).
  absl::Status SystemSharedMemoryRegister(absl::string_view name, absl::string_view key,
                                          uint64_t offset, uint64_t byte_size);
  absl::Status SystemSharedMemoryUnregister(absl::string_view name);
  absl::Status CudaSharedMemoryRegister(absl::string_view name, absl::string_view raw_handle,
                                        int64_t device_id, uint64_t byte_size);
  absl::Status CudaSharedMemoryUnregister(absl::string_view name);

  // Runs one inference and waits for it. InvalidArgument, without a call,
  // when CheckInferRequest fails.
  absl::StatusOr<InferResult> Infer(const InferRequest& request);

  // Starts one inference and returns at once; `done` gets the result. The
  // request is copied before InferAsync returns, so the caller may reuse or
  // destroy it. The client must outlive the call (its destructor cancels
  // what is left and waits). A request that fails CheckInferRequest calls
  // `done` with its error before InferAsync returns, on the caller's thread.
  void InferAsync(const InferRequest& request, InferCallback done);

  // Starts one ServerLive and returns at once; `done` gets its status, on the
  // completion-queue thread, under InferAsync's rules. The empty RPC: `perf` times it as
  // the floor under its served measurements (Note [The served floor] in
  // client/perf_report.h).
  void ServerLiveAsync(std::function<void(absl::Status)> done);

  // A stream of inference requests over ModelStreamInfer, sent one at a time
  // (InferStream below). Nothing goes to the server before its first request.
  // The client must outlive the stream.
  std::unique_ptr<InferStream> OpenStream();

  const InferenceClientOptions& options() const { return options_; }

  // Implementation details follow.
 private:
  friend class InferStream;
  struct QueueTag;
  struct AsyncCall;
  struct UnaryCall;
  struct AsyncInfer;
  struct AsyncServerLive;

  InferenceClient(const InferenceClientOptions& options,
                  std::unique_ptr<inference::GRPCInferenceService::Stub> stub,
                  std::unique_ptr<grpc::health::v1::Health::Stub> health)
      : options_(options), stub_(std::move(stub)), health_(std::move(health)) {}

  // A context carrying the per-call deadline and the metadata.
  void PrepareContext(grpc::ClientContext* context) const;
  // Adds options_.metadata to `context`.
  void AddMetadata(grpc::ClientContext* context) const;

  // Runs one unary method of the synchronous stub.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Call(
      grpc::Status (inference::GRPCInferenceService::Stub::*method)(grpc::ClientContext*,
                                                                     const Request&, Response*),
      const Request& request);

  // Registers `call` as in flight, starting the queue's thread with the
  // first; UntrackAsync removes and deletes it.
  void TrackAsync(AsyncCall* call);
  void UntrackAsync(AsyncCall* call);
  // The queue's thread: hands each completion to its tag.
  void Poll();

  const InferenceClientOptions options_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;

  // Note [The client's completion queue]
  // Asynchronous calls complete on a completion queue of this client's own,
  // polled by one thread, not on gRPC's callback API: against the same
  // server an empty RPC took 63 us p50 this way and 142 us through the
  // callback API, whose completions hop through gRPC's shared thread pool
  // (bench/results/2026-11-26_d39704a_serve_queues_h200, grpc_path.txt). A
  // load generator with one client per connection gets a thread per
  // connection.
  grpc::CompletionQueue queue_;
  std::once_flag poller_started_;
  std::thread poller_;

  // The asynchronous calls in flight (InferAsync, ServerLiveAsync and the
  // calls of streams), so that the destructor can cancel them.
  absl::Mutex mu_;
  std::unordered_set<AsyncCall*> in_flight_ ABSL_GUARDED_BY(mu_);
};

// Inference requests over ModelStreamInfer, Triton's bidirectional stream
// (perf_analyzer's --streaming), one at a time: InferAsync writes a request and
// reads its answer, and the next may go once that answer's callback has been
// called (from the callback too). A request on a stream pays for no gRPC call
// of its own (HTTP/2 stream set-up, headers, trailers), which is what bounds a
// server's throughput at saturation.
//
//   std::unique_ptr<InferStream> stream = client->OpenStream();
//   stream->InferAsync(request, [](absl::StatusOr<InferResult> result) { ... });
//   ...  // the next request once the callback has run
//   RETURN_IF_ERROR(stream->Close(absl::Now() + absl::Seconds(5)));
//
// Note [Stream calls]
// An InferStream's gRPC call starts with its first request, whose message
// carries the call's headers (corked), and its Finish is asked for at once,
// so that the call's end is seen whenever it comes: after Close's WritesDone,
// when the server ends it with an error, or when it is cancelled. A call that
// ends fails the request outstanding with its status, and the next request
// starts a new call, so that a caller sending each request from the last
// one's callback never meets a dead stream. An answer with an error_message
// fails its own request only; the call goes on. Besides its Finish, a call
// has one operation in flight at a time: the request's Write, then its Read,
// or Close's WritesDone.
//
// Thread-safe. Made by InferenceClient::OpenStream; the client must outlive it.
class InferStream {
 public:
  // Cancels the call in progress, if any (a request outstanding gets
  // CANCELLED), and waits for it to end and for its callbacks to return.
  // Never from one of the client's callbacks (it would wait for itself).
  ~InferStream();

  InferStream(const InferStream&) = delete;
  InferStream& operator=(const InferStream&) = delete;

  // Sends `request` on the stream and returns at once; `done` gets its answer
  // on the client's completion-queue thread, under InferCallback's rules: the
  // result (whose id must be the request's, when the request has one); an
  // answer's error_message as UNKNOWN (the stream carries no code); or the
  // status of the call's end. The request is copied before InferAsync
  // returns. `done` is called at once, on the caller's thread, with
  // CheckInferRequest's error, and with FAILED_PRECONDITION while another
  // request is outstanding or Close runs.
  void InferAsync(const InferRequest& request, InferCallback done);

  // Ends the call in progress: waits for the request outstanding and its
  // callback, half-closes the stream (WritesDone) and waits for the server to
  // end it. Returns how that call ended: OK when the server ended it cleanly
  // (or no call was in progress), or its error. Past `deadline` it cancels the
  // call (a request outstanding gets CANCELLED) and returns DEADLINE_EXCEEDED.
  // The stream stays usable: a later request starts a new call. Never from
  // one of the client's callbacks.
  absl::Status Close(absl::Time deadline);

  // Implementation details follow.
 private:
  friend class InferenceClient;
  struct Call;
  struct StepTag;

  // The call's one operation in flight besides its Finish.
  enum class Step { kNone, kWrite, kRead, kWritesDone };

  explicit InferStream(InferenceClient* client) : client_(client) {}

  // Starts call_ (Note [Stream calls]).
  void StartCall() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On the queue's thread: `call`'s step, or its Finish, came back.
  void OnStep(Call* call, bool ok) ABSL_LOCKS_EXCLUDED(mu_);
  void OnFinished(Call* call) ABSL_LOCKS_EXCLUDED(mu_);
  // Deletes call_ once both its Finish and its step are back, failing the
  // request outstanding with the call's status.
  void EndCallIfOver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls `done` with `result` outside mu_, counted in in_callback_ so that
  // Close and the destructor wait for it.
  void RunCallback(InferCallback done, absl::StatusOr<InferResult> result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // No request is outstanding, and no callback runs.
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return done_ == nullptr && !in_callback_;
  }
  // No call is in progress, and no callback runs.
  bool Ended() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return call_ == nullptr && !in_callback_;
  }
  // Waits for `condition` until `deadline`; past it, cancels the call in
  // progress and waits for the condition (which the cancellation brings)
  // without one. False when it had to cancel.
  bool AwaitOrCancel(const absl::Condition& condition, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  InferenceClient* const client_;

  absl::Mutex mu_;
  // The call requests go on; null before the first request and once a call
  // has ended, until the next request starts another.
  Call* call_ ABSL_GUARDED_BY(mu_) = nullptr;
  // How the last call ended.
  absl::Status last_end_ ABSL_GUARDED_BY(mu_);
  // The request outstanding: its callback (empty when there is none), id and
  // client-side send time.
  InferCallback done_ ABSL_GUARDED_BY(mu_);
  std::string request_id_ ABSL_GUARDED_BY(mu_);
  absl::Duration send_ ABSL_GUARDED_BY(mu_);
  // A callback is running on the queue's thread.
  bool in_callback_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace graphserve
