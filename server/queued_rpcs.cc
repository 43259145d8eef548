#include "server/queued_rpcs.h"

#include <utility>

#include "server/grpc_status.h"

namespace graphserve {

namespace {

// Calls of each method asked for per queue at a time, so that a burst of
// arrivals on one queue need not wait for each to be asked for again.
constexpr int kCallsAskedPerQueue = 16;

// What a queue returns: the step of one call that completed.
class QueuedCall {
 public:
  virtual ~QueuedCall() = default;
  // `ok` is the queue's verdict on the step: false when the call was never
  // asked for (the server shut down) or its answer could not be written.
  virtual void Proceed(bool ok) = 0;
};

// One call of a unary method on one queue, from being asked for until its
// answer is written. `Method` supplies the method's types, how to ask for a
// call (Ask) and how to answer one (Answer, which calls its `finish` once,
// on any thread).
template <typename Method>
class UnaryCall final : public QueuedCall {
 public:
  UnaryCall(InferenceService* service, const InferenceProtocol* protocol,
            grpc::ServerCompletionQueue* queue)
      : service_(service), protocol_(protocol), queue_(queue), writer_(&context_) {
    Method::Ask(service_, &context_, &request_, &writer_, queue_, this);
  }

  void Proceed(bool ok) override {
    if (!ok || answered_) {
      delete this;
      return;
    }
    new UnaryCall(service_, protocol_, queue_);
    answered_ = true;
    Method::Answer(*protocol_, &request_, &response_, [this](const absl::Status& status) {
      writer_.Finish(response_, ToGrpcStatus(status), this);
    });
  }

 private:
  InferenceService* const service_;
  const InferenceProtocol* const protocol_;
  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  typename Method::Request request_;
  typename Method::Response response_;
  grpc::ServerAsyncResponseWriter<typename Method::Response> writer_;
  bool answered_ = false;  // set on this queue's thread before Finish can be called
};

struct ModelInferMethod {
  using Request = inference::ModelInferRequest;
  using Response = inference::ModelInferResponse;
  static void Ask(InferenceService* service, grpc::ServerContext* context, Request* request,
                  grpc::ServerAsyncResponseWriter<Response>* writer,
                  grpc::ServerCompletionQueue* queue, void* tag) {
    service->RequestModelInfer(context, request, writer, queue, queue, tag);
  }
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, const Request* request,
                     Response* response, Finish finish) {
    protocol.ModelInfer(request, response, std::move(finish));
  }
};

struct ServerLiveMethod {
  using Request = inference::ServerLiveRequest;
  using Response = inference::ServerLiveResponse;
  static void Ask(InferenceService* service, grpc::ServerContext* context, Request* request,
                  grpc::ServerAsyncResponseWriter<Response>* writer,
                  grpc::ServerCompletionQueue* queue, void* tag) {
    service->RequestServerLive(context, request, writer, queue, queue, tag);
  }
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, const Request*, Response* response,
                     Finish finish) {
    protocol.ServerLive(response);
    finish(absl::OkStatus());
  }
};

// Runs the steps `queue` returns until it is shut down and empty.
void Poll(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) static_cast<QueuedCall*>(tag)->Proceed(ok);
}

}  // namespace

QueuedRpcs::QueuedRpcs(grpc::ServerBuilder* builder, InferenceService* service,
                       const InferenceProtocol* protocol, int threads)
    : service_(service), protocol_(protocol) {
  for (int i = 0; i < threads; ++i) queues_.push_back(builder->AddCompletionQueue());
}

void QueuedRpcs::Start() {
  for (const std::unique_ptr<grpc::ServerCompletionQueue>& queue : queues_) {
    for (int i = 0; i < kCallsAskedPerQueue; ++i) {
      new UnaryCall<ModelInferMethod>(service_, protocol_, queue.get());
      new UnaryCall<ServerLiveMethod>(service_, protocol_, queue.get());
    }
    threads_.emplace_back(Poll, queue.get());
  }
}

void QueuedRpcs::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // Next returns false only once a shut-down queue is empty: each thread
  // deletes the calls still asked for (their steps come back not ok) first.
  for (const std::unique_ptr<grpc::ServerCompletionQueue>& queue : queues_) queue->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  // Queues of a server that never started (Start not called) hold at most
  // their shutdown: gRPC wants them drained all the same.
  if (threads_.empty()) {
    for (const std::unique_ptr<grpc::ServerCompletionQueue>& queue : queues_) Poll(queue.get());
  }
  threads_.clear();
}

QueuedRpcs::~QueuedRpcs() { Stop(); }

}  // namespace graphserve
