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
// Every call returns the server's error as an absl::Status with the gRPC
// code and message unchanged (NOT_FOUND for an unknown model stays NOT_FOUND).

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/grpc_service.pb.h"
#include "proto/health.grpc.pb.h"

namespace graphserve {

struct InferenceClientOptions {
  // The server's gRPC endpoint, host:port or any gRPC target string
  // ("unix:/path", "dns:///host:port"). 8001 is the protocol's usual gRPC port.
  std::string address = "localhost:8001";

  // Deadline of every call, counted from its start. Zero: no deadline (a call
  // to a hung server then waits for ever).
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
};

// One input tensor: its bytes are the flattened row-major elements,
// little-endian, exactly ElementCount(shape) * DatatypeByteSize(datatype)
// long. Sent as raw_input_contents.
struct InferTensor {
  std::string name;
  std::string datatype;  // protocol spelling: "FP32", "INT64", "BOOL", ...
  std::vector<int64_t> shape;
  std::string data;
};

struct InferRequest {
  std::string model_name;
  // Empty: the version the server chooses.
  std::string model_version;
  std::vector<InferTensor> inputs;
  // The outputs to return. Empty: all outputs of the model.
  std::vector<std::string> requested_outputs;
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
  // its datatype and shape imply. Internal error for a malformed response.
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

// Called once per InferAsync, on a gRPC thread. It must not block: a blocked
// callback holds one of gRPC's few callback threads. Issuing another
// InferAsync from it is fine.
using InferCallback = std::function<void(absl::StatusOr<InferResult>)>;

// Thread-safe: any number of threads may call any method at once.
class InferenceClient {
 public:
  // Validates the options and opens a channel. Connecting is lazy: an
  // unreachable server shows as UNAVAILABLE on the first call, not here.
  static absl::StatusOr<std::unique_ptr<InferenceClient>> Create(
      const InferenceClientOptions& options);

  // Cancels the InferAsync calls still in flight and waits for their
  // callbacks (which see CANCELLED) to return.
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

  // Runs one inference and waits for it. InvalidArgument, without a call,
  // when CheckInferRequest fails.
  absl::StatusOr<InferResult> Infer(const InferRequest& request);

  // Starts one inference and returns at once; `done` gets the result. The
  // request is copied before InferAsync returns, so the caller may reuse or
  // destroy it. The client must outlive the call (its destructor cancels
  // what is left and waits). A request that fails CheckInferRequest calls
  // `done` with its error before InferAsync returns, on the caller's thread.
  void InferAsync(const InferRequest& request, InferCallback done);

  // Starts one ServerLive and returns at once; `done` gets its status, on a
  // gRPC thread, under InferAsync's rules. The empty RPC: `perf` times it as
  // the floor under its served measurements (Note [The served floor] in
  // client/perf_report.h).
  void ServerLiveAsync(std::function<void(absl::Status)> done);

  const InferenceClientOptions& options() const { return options_; }

  // Implementation details follow.
 private:
  struct AsyncCall;
  struct AsyncInfer;
  struct AsyncServerLive;

  InferenceClient(const InferenceClientOptions& options,
                  std::unique_ptr<inference::GRPCInferenceService::Stub> stub,
                  std::unique_ptr<grpc::health::v1::Health::Stub> health)
      : options_(options), stub_(std::move(stub)), health_(std::move(health)) {}

  // A context carrying the per-call deadline.
  void PrepareContext(grpc::ClientContext* context) const;

  // Runs one unary method of the synchronous stub.
  template <typename Request, typename Response, typename Method>
  absl::StatusOr<Response> Call(Method method, const Request& request);

  // Registers `call` as in flight; FinishAsync removes and deletes it.
  void TrackAsync(AsyncCall* call);
  void FinishAsync(AsyncCall* call, const grpc::Status& status);

  const InferenceClientOptions options_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;

  // The InferAsync calls in flight, so that the destructor can cancel them.
  absl::Mutex mu_;
  std::unordered_set<AsyncCall*> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphserve
