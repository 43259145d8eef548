#include "server/queued_rpcs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <utility>

#include "common/thread_name.h"
#include "server/grpc_status.h"
#include "server/stream_pool.h"

namespace graphserve {

InlineTurns::InlineTurns(int threads) : turns_(std::max(0, threads - 1)) {}

bool InlineTurns::Take() {
  int turns = turns_.load(std::memory_order_relaxed);
  while (turns > 0) {
    if (turns_.compare_exchange_weak(turns, turns - 1)) return true;
  }
  return false;
}

void InlineTurns::Return() { turns_.fetch_add(1); }

// A completion queue and its threads' turns at running a chunk inline.
struct QueuedRpcs::Queue {
  Queue(std::unique_ptr<grpc::ServerCompletionQueue> completion, int threads)
      : completion(std::move(completion)), inline_turns(threads) {}

  const std::unique_ptr<grpc::ServerCompletionQueue> completion;
  InlineTurns inline_turns;
  // Stop's handshake with the threads (Note [Stopping the queues]).
  std::atomic<bool> stopping{false};
  std::atomic<int> active{0};  // threads inside a call's Proceed
};

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
// answer is written. `Method` supplies the method's types, the service's
// member that asks for a call (kAsk) and how to answer one (Answer, which
// calls its `finish` once, on any thread).
template <typename Method>
class UnaryCall final : public QueuedCall {
 public:
  UnaryCall(InferenceService* service, const InferenceProtocol* protocol, QueuedRpcs::Queue* queue)
      : service_(service), protocol_(protocol), queue_(queue), writer_(&context_) {
    grpc::ServerCompletionQueue* completion = queue_->completion.get();
    (service_->*Method::kAsk)(&context_, &request_, &writer_, completion, completion, this);
  }

  void Proceed(bool ok) override {
    QueuedRpcs::Queue& queue = *queue_;  // `this` may be gone by the end
    queue.active.fetch_add(1);
    if (!ok || answered_ || queue.stopping.load()) {
      delete this;
    } else {
      new UnaryCall(service_, protocol_, queue_);
      answered_ = true;
      Method::Answer(*protocol_, queue_, &request_, &response_,
                     [this](const absl::Status& status) {
                       writer_.Finish(response_, ToGrpcStatus(status), this);
                     });
    }
    queue.active.fetch_sub(1);
  }

 private:
  InferenceService* const service_;
  const InferenceProtocol* const protocol_;
  QueuedRpcs::Queue* const queue_;
  grpc::ServerContext context_;
  typename Method::Request request_;
  typename Method::Response response_;
  grpc::ServerAsyncResponseWriter<typename Method::Response> writer_;
  bool answered_ = false;  // set before Finish can be called; the queue orders the rest
};

struct ModelInferMethod {
  using Request = inference::ModelInferRequest;
  using Response = inference::ModelInferResponse;
  static constexpr auto kAsk = &InferenceService::RequestModelInfer;
  // Runs the request's chunk on this thread only with a turn to spare: the
  // queue's other thread keeps taking calls meanwhile.
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, QueuedRpcs::Queue* queue,
                     const Request* request, Response* response, Finish finish) {
    if (queue->inline_turns.Take()) {
      protocol.ModelInfer(request, response, std::move(finish));
      queue->inline_turns.Return();
    } else {
      StreamPool::QueueOnly queue_only;
      protocol.ModelInfer(request, response, std::move(finish));
    }
  }
};

struct ServerLiveMethod {
  using Request = inference::ServerLiveRequest;
  using Response = inference::ServerLiveResponse;
  static constexpr auto kAsk = &InferenceService::RequestServerLive;
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, QueuedRpcs::Queue*, const Request*,
                     Response* response, Finish finish) {
    protocol.ServerLive(response);
    finish(absl::OkStatus());
  }
};

// Runs the steps `queue` returns until it is shut down and empty. Idle
// threads block in Next. Polling with zero deadlines instead (as the stream
// workers do for --idle-spin-us) kept the server at up to 7 cores while its
// saturated throughput fell (bench/results/2026-11-26_a533c7c_serve_queue_client_h200,
// measured together with two threads per queue).
void Poll(grpc::ServerCompletionQueue* queue) {
  void* tag = nullptr;
  bool ok = false;
  while (queue->Next(&tag, &ok)) static_cast<QueuedCall*>(tag)->Proceed(ok);
}

}  // namespace

QueuedRpcs::QueuedRpcs(grpc::ServerBuilder* builder, InferenceService* service,
                       const InferenceProtocol* protocol, int queues, int threads_per_queue)
    // At least one queue and one thread on it: with none, ModelInfer would
    // never be asked for or answered (ServerCommand checks its flags; this
    // guards options built in code).
    : service_(service), protocol_(protocol), threads_per_queue_(std::max(1, threads_per_queue)) {
  for (int i = 0; i < std::max(1, queues); ++i) {
    queues_.push_back(std::make_unique<Queue>(builder->AddCompletionQueue(), threads_per_queue_));
  }
}

void QueuedRpcs::Start() {
  for (const std::unique_ptr<Queue>& queue : queues_) {
    for (int i = 0; i < kCallsAskedPerQueue; ++i) {
      new UnaryCall<ModelInferMethod>(service_, protocol_, queue.get());
      new UnaryCall<ServerLiveMethod>(service_, protocol_, queue.get());
    }
    for (int i = 0; i < threads_per_queue_; ++i) {
      threads_.emplace_back([completion = queue->completion.get()] {
        NameThisThread("gs-grpc-queue");
        Poll(completion);
      });
    }
  }
}

// Note [Stopping the queues]
// A call popped just before Stop may still be running Proceed, which asks
// for the next call and may Finish this one: on a queue already shut down
// either aborts inside gRPC. So Stop first raises `stopping`, then waits until
// no thread is inside Proceed, and only then shuts the queues down. A thread
// that enters Proceed afterwards sees `stopping` (both sides use sequentially
// consistent atomics: one of them sees the other's write) and only deletes
// its call, which the server's Shutdown has already cancelled.
void QueuedRpcs::Stop() {
  if (stopped_) return;
  stopped_ = true;
  for (const std::unique_ptr<Queue>& queue : queues_) queue->stopping.store(true);
  for (const std::unique_ptr<Queue>& queue : queues_) {
    while (queue->active.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  // Next returns false only once a shut-down queue is empty: each thread
  // deletes the calls still asked for (their steps come back not ok) first.
  for (const std::unique_ptr<Queue>& queue : queues_) queue->completion->Shutdown();
  for (std::thread& thread : threads_) thread.join();
  // Queues of a server that never started (Start not called) hold at most
  // their shutdown: gRPC wants them drained all the same.
  if (threads_.empty()) {
    for (const std::unique_ptr<Queue>& queue : queues_) Poll(queue->completion.get());
  }
  threads_.clear();
}

QueuedRpcs::~QueuedRpcs() { Stop(); }

}  // namespace graphserve
