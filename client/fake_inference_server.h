#pragma once
// An in-process inference.GRPCInferenceService for the client's tests: a
// callback-API gRPC server on a loopback port that serves two toy models,
//
//   "double"      x FP32 [-1,4]                   -> y FP32 [-1,4], y = 2x
//   "count_true"  flags BOOL [-1,3], offset INT64 [-1,1]
//                                                 -> count INT64 [-1,1],
//                                                    count = offset + (number of true flags)
//
// (the first dimension is the batch, 1 to max_batch_size), and answers every
// other RPC of the protocol as a real server would: metadata, configs,
// statistics, and errors with their codes (NOT_FOUND for an unknown model,
// INVALID_ARGUMENT for a malformed request). Of Triton's shared-memory
// extensions it serves the system one, as GraphServe answers it: a registered
// range of a POSIX shared memory object is mapped, inputs that name it are
// read from it and outputs that name it written into it (the response then
// carries their metadata, region and an empty raw entry); CUDA shared
// memory answers UNIMPLEMENTED. ModelStreamInfer answers each request it reads
// as ModelInfer would, in order, one at a time; a request ModelInfer would
// fail is answered with its error_message (and the request's id, model name
// and version), and the stream goes on, as Triton and GraphServe serve it.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/model_config.pb.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace graphserve {

struct FakeInferenceServerOptions {
  // Both models' max_batch_size: the largest first dimension accepted.
  int64_t max_batch_size = 8;

  // When N > 0, every Nth ModelInfer call fails with INTERNAL "injected
  // failure", so that tests can check that clients count errors. Requests
  // on streams count among the calls.
  int64_t fail_every_nth_infer = 0;

  // When N > 0, a ModelStreamInfer stream that has answered N requests ends
  // with UNAVAILABLE "injected stream end" when it reads the next, leaving it
  // unanswered, so that tests can check how clients meet a stream's end.
  int64_t end_streams_after_answers = 0;

  // The capture section of both models' configs (ModelConfig), e.g. measured
  // costs for `perf`'s full-chunk replay. Empty by default.
  inference::ModelCapture capture;
};

class FakeInferenceServer {
 public:
  // Starts serving on 127.0.0.1 at a port the kernel picks.
  static absl::StatusOr<std::unique_ptr<FakeInferenceServer>> Start(
      const FakeInferenceServerOptions& options = {});

  // Shuts the server down, cancelling calls still in flight.
  ~FakeInferenceServer();

  FakeInferenceServer(const FakeInferenceServer&) = delete;
  FakeInferenceServer& operator=(const FakeInferenceServer&) = delete;

  // "127.0.0.1:PORT", for InferenceClientOptions::address.
  const std::string& address() const { return address_; }

  // ModelInfer calls received so far, failed ones included, and requests read
  // on streams.
  int64_t infer_calls() const;
  // ModelStreamInfer calls (streams) opened so far.
  int64_t stream_calls() const;
  // ServerLive calls received so far.
  int64_t live_calls() const;
  // System shared-memory regions registered now.
  int64_t registered_regions() const;
  // Calls of ServerLive, ModelInfer, ModelStreamInfer and the system
  // shared-memory RPCs so far whose metadata had `key` (lower case) with
  // `value`.
  int64_t calls_with_metadata(const std::string& key, const std::string& value) const;

  // Implementation details follow.
 private:
  class Service;

  FakeInferenceServer(std::unique_ptr<Service> service, std::unique_ptr<grpc::Server> server,
                      std::string address);

  // The service must outlive the server that dispatches to it.
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace graphserve
