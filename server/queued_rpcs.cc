#include "server/queued_rpcs.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/thread_name.h"
#include "server/grpc_status.h"
#include "server/request_queue.h"
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
class StreamCall;
}  // namespace

// The streams open on a server, so that Shutdown can end them.
class QueuedRpcs::OpenStreams {
 public:
  explicit OpenStreams(int max_open) : max_open_(max_open) {}
  // Registers an accepted stream; OK, or what it must end with at once:
  // Unavailable once EndAll was called (it then ends as soon as it owes
  // nothing), ResourceExhausted past max_open streams.
  absl::Status Add(StreamCall* call);
  // Forgets a stream and deletes it; it must owe nothing and have no
  // operation in flight.
  void Delete(StreamCall* call);
  // Ends every open stream and every one accepted from now on.
  void EndAll();

 private:
  const int max_open_;
  absl::Mutex mu_;
  std::unordered_set<StreamCall*> calls_ ABSL_GUARDED_BY(mu_);
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
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

// A call's gRPC deadline on the queue's clock; none when the client set none
// (gRPC's infinite future).
std::optional<QueueClock::time_point> QueueDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  const auto left = deadline - std::chrono::system_clock::now();
  // Beyond a year is no deadline (and would overflow the conversion).
  if (left > std::chrono::hours(24 * 365)) return std::nullopt;
  return QueueClock::now() + std::chrono::duration_cast<QueueClock::duration>(left);
}

// One call of a unary method on one queue, from being asked for until its
// answer is written. `Method` supplies the method's types, the service's
// member that asks for a call (kAsk), how to answer one (Answer, which
// calls its `finish` once, on any thread), and whether the queue should know
// when its client goes (kWatched: Note [Rows nobody waits for] in
// server/request_queue.h).
//
// A watched call asks gRPC to say when it is done (AsyncNotifyWhenDone),
// which comes as a second step after it started, in no order with its
// Finish; the call is deleted when the last of the two returns. One never
// started gets no such step (gRPC issue 10136).
template <typename Method>
class UnaryCall final : public QueuedCall {
 public:
  UnaryCall(InferenceService* service, const InferenceProtocol* protocol, QueuedRpcs::Queue* queue)
      : service_(service), protocol_(protocol), queue_(queue), writer_(&context_) {
    grpc::ServerCompletionQueue* completion = queue_->completion.get();
    if (Method::kWatched) context_.AsyncNotifyWhenDone(&done_step_);
    (service_->*Method::kAsk)(&context_, &request_, &writer_, completion, completion, this);
  }

  void Proceed(bool ok) override {
    QueuedRpcs::Queue& queue = *queue_;  // `this` may be gone by the end
    queue.active.fetch_add(1);
    if (!started_ && !ok) {
      delete this;  // never started: no other step comes
    } else if (started_ || queue.stopping.load()) {
      started_ = true;
      Release();  // finished, or started while stopping: never answered
    } else {
      started_ = true;
      new UnaryCall(service_, protocol_, queue_);
      auto finish = [this](const absl::Status& status) {
        writer_.Finish(response_, ToGrpcStatus(status), this);
      };
      if (absl::Status allowed = service_->CheckAllowed(Method::kCategory, context_);
          !allowed.ok()) {
        finish(allowed);
      } else {
        if (const auto deadline = QueueDeadline(context_); call_ != nullptr && deadline) {
          call_->set_deadline(*deadline);
        }
        Method::Answer(*protocol_, queue_, call_, context_, &request_, &response_,
                       std::move(finish));
      }
    }
    queue.active.fetch_sub(1);
  }

 private:
  // gRPC says the call is done: answered, or cancelled by its client or its
  // deadline.
  void OnDone(bool) {
    if (call_ != nullptr && context_.IsCancelled()) call_->Cancel();
    Release();
  }

  // Deletes the call once its last step came back.
  void Release() {
    if (steps_left_.fetch_sub(1) == 1) delete this;
  }

  class DoneStep final : public QueuedCall {
   public:
    explicit DoneStep(UnaryCall* call) : call_(call) {}
    void Proceed(bool ok) override {
      QueuedRpcs::Queue& queue = *call_->queue_;  // the call may be gone by the end
      queue.active.fetch_add(1);
      call_->OnDone(ok);
      queue.active.fetch_sub(1);
    }

   private:
    UnaryCall* const call_;
  };

  InferenceService* const service_;
  const InferenceProtocol* const protocol_;
  QueuedRpcs::Queue* const queue_;
  grpc::ServerContext context_;
  typename Method::Request request_;
  typename Method::Response response_;
  grpc::ServerAsyncResponseWriter<typename Method::Response> writer_;
  DoneStep done_step_{this};
  // Set before Finish or the done step can come; the queue orders the rest.
  bool started_ = false;
  // Made before the call is asked for: the done step may come while the
  // call is being started.
  const std::shared_ptr<CallLiveness> call_ =
      Method::kWatched ? std::make_shared<CallLiveness>() : nullptr;
  // The Finish (or the refusal to answer) and, when watched, the done step.
  std::atomic<int> steps_left_{Method::kWatched ? 2 : 1};
};

// Starts one inference for a call of this queue. Runs the request's chunk
// on this thread only with a turn to spare: the queue's other thread keeps
// taking calls meanwhile.
// `call`: the RPC's liveness, for the queue (null: not watched).
// `shared_memory_owner`: the RPC's SharedMemoryOwner, a copy (a stream's
// answer may end its call before this returns).
void RunInference(const InferenceProtocol& protocol, QueuedRpcs::Queue* queue,
                  std::shared_ptr<const CallLiveness> call,
                  const inference::ModelInferRequest* request,
                  inference::ModelInferResponse* response,
                  std::function<void(const absl::Status&)> done, std::string shared_memory_owner) {
  const QueueForCall for_call(std::move(call));
  if (queue->inline_turns.Take()) {
    protocol.ModelInfer(request, response, std::move(done), shared_memory_owner);
    queue->inline_turns.Return();
  } else {
    StreamPool::QueueOnly queue_only;
    protocol.ModelInfer(request, response, std::move(done), shared_memory_owner);
  }
}

struct ModelInferMethod {
  using Request = inference::ModelInferRequest;
  using Response = inference::ModelInferResponse;
  static constexpr auto kAsk = &InferenceService::RequestModelInfer;
  static constexpr ApiCategory kCategory = ApiCategory::kInference;
  static constexpr bool kWatched = true;
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, QueuedRpcs::Queue* queue,
                     std::shared_ptr<const CallLiveness> call,
                     const grpc::ServerContextBase& context, const Request* request,
                     Response* response, Finish finish) {
    RunInference(protocol, queue, std::move(call), request, response, std::move(finish),
                 SharedMemoryOwner(context));
  }
};

struct ServerLiveMethod {
  using Request = inference::ServerLiveRequest;
  using Response = inference::ServerLiveResponse;
  static constexpr auto kAsk = &InferenceService::RequestServerLive;
  static constexpr ApiCategory kCategory = ApiCategory::kHealth;
  // The empty RPC every benchmark measures as its floor: nothing queues.
  static constexpr bool kWatched = false;
  template <typename Finish>
  static void Answer(const InferenceProtocol& protocol, QueuedRpcs::Queue*,
                     std::shared_ptr<const CallLiveness>, const grpc::ServerContextBase&,
                     const Request*, Response* response, Finish finish) {
    protocol.ServerLive(response);
    finish(absl::OkStatus());
  }
};

// Note [Inference streams]
// ModelStreamInfer carries any number of requests over one call: each read
// from the stream runs as a ModelInfer would (RunInference), and its answer
// is written back when it completes, so answers leave in the order they
// complete, a failed request's as an error_message. A stream has at most one
// read and one write in flight (gRPC's rule); answers that complete while one
// is being written wait in `answered_`. A sequence's requests (those with a
// "sequence_id" parameter), sent back to back on one stream, must reach the
// sequence batcher in the order they were read (Note [Sequence batching] in
// server/sequence_batcher.h), but the next read may complete on another of
// the queue's threads before this one has handed its request over: each of
// them waits until the one before has returned from RunInference. Other
// requests do not wait: RunInference may run a chunk on the calling thread
// (Note [Chunks on the caller's thread]), and requests pipelined on one
// stream would run one after another. While a sequence request is being
// handed over (`handing_`), the call cannot end, since its thread still
// needs the call afterwards. The call ends once the client has
// half-closed (a read comes back not ok) and every answer owed is written:
// Finish with OK. Until then the call lives whatever the order of its
// events, which come from this queue's threads (read, write, finish) and
// from whoever answers a request (a responder or this thread), so every
// step takes the call's lock and asks Advance what may start now.
//
// A client that sends faster than it reads would make the answers pile up
// here without bound: while kMaxOwedPerStream answers are owed, or
// StreamLimits::max_owed_bytes of answers wait to be written or are being
// written, the stream reads no further request (gRPC's flow control then
// holds the client's writes) and reads again as answers leave. Counting
// answers alone let a stream that never reads hold ~570 MB with large
// outputs (issue 30, finding 5). The server's open streams are bounded too
// (StreamLimits::max_open_streams): one past it finishes RESOURCE_EXHAUSTED
// as it opens.
//
// Shutdown: a stream is a long call that the server's Shutdown would cancel
// at its deadline, its client seeing CANCELLED. Instead, once the server has
// drained, every open stream is ended (EndAll): it finishes with UNAVAILABLE
// as soon as it owes nothing, the read in flight coming back not ok. Requests
// read between the gate's closing and then were answered UNAVAILABLE one by
// one, as unary calls are.

// Answers owed on one stream (running or waiting to be written) at which it
// stops reading requests.
constexpr int kMaxOwedPerStream = 256;

// One ModelStreamInfer call, from being asked for until it finished.
class StreamCall {
 public:
  StreamCall(InferenceService* service, const InferenceProtocol* protocol,
             QueuedRpcs::Queue* queue, QueuedRpcs::OpenStreams* streams, int64_t max_owed_bytes)
      : service_(service),
        protocol_(protocol),
        queue_(queue),
        streams_(streams),
        max_owed_bytes_(max_owed_bytes),
        stream_(&context_) {
    grpc::ServerCompletionQueue* completion = queue_->completion.get();
    service_->RequestModelStreamInfer(&context_, &stream_, completion, completion,
                                      &accepted_step_);
  }
  StreamCall(const StreamCall&) = delete;
  StreamCall& operator=(const StreamCall&) = delete;

  // Called by OpenStreams::EndAll, under its lock.
  void End() {
    absl::MutexLock lock(&mu_);
    ending_ = true;
    Advance();  // never deletes: finishing needs a step of its own
  }

 private:
  // A request read from the stream and its answer, alive until the answer is
  // written.
  struct Exchange {
    inference::ModelInferRequest request;
    inference::ModelStreamInferResponse answer;
    int64_t answer_bytes = 0;  // once answered: what it counts in owed_bytes_
  };

  // A tag on the queue: one kind of operation of the call.
  class Step final : public QueuedCall {
   public:
    Step(StreamCall* call, void (StreamCall::*on)(bool)) : call_(call), on_(on) {}
    void Proceed(bool ok) override {
      QueuedRpcs::Queue& queue = *call_->queue_;  // the call may be gone by the end
      queue.active.fetch_add(1);
      (call_->*on_)(ok);
      queue.active.fetch_sub(1);
    }

   private:
    StreamCall* const call_;
    void (StreamCall::*const on_)(bool);
  };

  void OnAccepted(bool ok) {
    if (!ok || queue_->stopping.load()) {
      delete this;  // never accepted: no operation in flight, not registered
      return;
    }
    new StreamCall(service_, protocol_, queue_, streams_, max_owed_bytes_);
    const absl::Status added = streams_->Add(this);
    // A restricted stream is refused as it opens, before any read (Triton's).
    const absl::Status allowed = service_->CheckAllowed(ApiCategory::kInference, context_);
    if (const auto deadline = QueueDeadline(context_)) call_->set_deadline(*deadline);
    shared_memory_owner_ = SharedMemoryOwner(context_);
    absl::MutexLock lock(&mu_);
    ending_ = !added.ok() || !allowed.ok();
    if (!allowed.ok()) {
      end_status_ = ToGrpcStatus(allowed);
    } else if (absl::IsResourceExhausted(added)) {
      end_status_ = ToGrpcStatus(added);
    }
    Advance();  // the first read, or Finish when the server is ending streams
  }

  void OnRead(bool ok) {
    Exchange* exchange = nullptr;
    bool over = false;
    std::optional<uint64_t> turn;  // a sequence request's place among them
    {
      absl::MutexLock lock(&mu_);
      std::unique_ptr<Exchange> read = std::move(reading_);
      if (ok && !queue_->stopping.load()) {
        exchange = read.release();
        ++running_;
        if (exchange->request.parameters().contains("sequence_id")) {
          turn = sequence_reads_taken_++;
          ++handing_;
        }
      } else {
        reads_over_ = true;  // the client half-closed, or the call is gone
      }
      over = Advance();  // the next read, unless too many answers are owed
    }
    if (over) {
      streams_->Delete(this);
      return;
    }
    if (exchange == nullptr) return;
    // In the order read (Note [Inference streams]): the next sequence
    // request, whose read may come back on another thread, waits for this
    // hand-off.
    if (turn.has_value()) WaitForTurn(*turn);
    // Outside the lock: the answer may come on this thread before this
    // returns. A request of no sequence leaves the call alone from here on:
    // the answer may have ended it.
    RunInference(
        *protocol_, queue_, call_, &exchange->request, exchange->answer.mutable_infer_response(),
        [this, exchange](const absl::Status& status) { OnAnswered(exchange, status); },
        shared_memory_owner_);
    if (!turn.has_value()) return;
    {
      absl::MutexLock lock(&mu_);
      ++sequence_reads_handed_;
      --handing_;
      if (!Advance()) return;
    }
    streams_->Delete(this);
  }

  // Blocks until every sequence request read before the one numbered `turn`
  // has been handed to the protocol.
  void WaitForTurn(uint64_t turn) {
    struct Wait {
      StreamCall* call;
      uint64_t turn;
    } wait{this, turn};
    mu_.LockWhen(absl::Condition(
        +[](Wait* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return w->call->sequence_reads_handed_ == w->turn;
        },
        &wait));
    mu_.Unlock();
  }

  void OnAnswered(Exchange* exchange, const absl::Status& status) {
    if (!status.ok()) {
      exchange->answer.set_error_message(std::string(status.message()));
      inference::ModelInferResponse* response = exchange->answer.mutable_infer_response();
      response->Clear();
      // The id lets the client match the error to its request; the model's
      // name is not echoed (a client's text: Note [Quoting client text]).
      response->set_id(exchange->request.id());
    }
    exchange->answer_bytes = static_cast<int64_t>(exchange->answer.ByteSizeLong());
    {
      absl::MutexLock lock(&mu_);
      --running_;
      owed_bytes_ += exchange->answer_bytes;
      answered_.emplace_back(exchange);
      if (!Advance()) return;
    }
    streams_->Delete(this);
  }

  void OnWritten(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      owed_bytes_ -= writing_->answer_bytes;
      writing_.reset();
      if (!ok) {
        write_failed_ = true;  // the client is gone: its answers go nowhere
        call_->Cancel();       // nor should its queued requests run
      }
      if (!Advance()) return;
    }
    streams_->Delete(this);
  }

  void OnFinished(bool) {
    {
      absl::MutexLock lock(&mu_);
      finishing_ = false;
      finished_ = true;
      if (!Advance()) return;
    }
    streams_->Delete(this);
  }

  int Owed() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return running_ + static_cast<int>(answered_.size()) + (writing_ != nullptr ? 1 : 0);
  }

  void Read() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    reading_ = std::make_unique<Exchange>();
    stream_.Read(&reading_->request, &read_step_);
  }

  // Starts what the call's state allows (Note [Inference streams]); true
  // when the call is over and nothing of it is in flight, for the caller to
  // delete it once it has let go of the lock.
  bool Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (over_) return false;
    // On a queue being stopped nothing may start (Note [Stopping the queues]).
    const bool stopping = queue_->stopping.load();
    if (write_failed_) {
      for (const std::unique_ptr<Exchange>& dropped : answered_) {
        owed_bytes_ -= dropped->answer_bytes;
      }
      answered_.clear();
    }
    if (!stopping && !finishing_ && !finished_) {
      if (writing_ == nullptr && !answered_.empty()) {
        writing_ = std::move(answered_.front());
        answered_.pop_front();
        stream_.Write(writing_->answer, &written_step_);
      }
      if (reading_ == nullptr && !reads_over_ && !ending_ && Owed() < kMaxOwedPerStream &&
          owed_bytes_ < max_owed_bytes_) {
        Read();
      }
      if (Owed() == 0 && (reads_over_ || ending_)) {
        finishing_ = true;
        stream_.Finish(reads_over_ ? grpc::Status::OK : end_status_, &finished_step_);
      }
    }
    over_ = (finished_ || stopping) && reading_ == nullptr && writing_ == nullptr &&
            !finishing_ && running_ == 0 && handing_ == 0;
    return over_;
  }

  InferenceService* const service_;
  const InferenceProtocol* const protocol_;
  QueuedRpcs::Queue* const queue_;
  QueuedRpcs::OpenStreams* const streams_;
  const int64_t max_owed_bytes_;
  grpc::ServerContext context_;
  grpc::ServerAsyncReaderWriter<inference::ModelStreamInferResponse, inference::ModelInferRequest>
      stream_;
  Step accepted_step_{this, &StreamCall::OnAccepted};
  Step read_step_{this, &StreamCall::OnRead};
  Step written_step_{this, &StreamCall::OnWritten};
  Step finished_step_{this, &StreamCall::OnFinished};
  // The stream's deadline and, once a write failed, its client's going, for
  // the queue (Note [Rows nobody waits for] in server/request_queue.h).
  const std::shared_ptr<CallLiveness> call_ = std::make_shared<CallLiveness>();
  // Set as the call is accepted, before any read (SharedMemoryOwner).
  std::string shared_memory_owner_;

  absl::Mutex mu_;
  std::unique_ptr<Exchange> reading_ ABSL_GUARDED_BY(mu_);  // a read in flight
  bool reads_over_ ABSL_GUARDED_BY(mu_) = false;
  // Sequence requests read, and those handed to the protocol: each is
  // handed in the order read (Note [Inference streams]); those being handed
  // over now keep the call alive.
  uint64_t sequence_reads_taken_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sequence_reads_handed_ ABSL_GUARDED_BY(mu_) = 0;
  int handing_ ABSL_GUARDED_BY(mu_) = 0;
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // requests handed to the protocol, unanswered
  std::deque<std::unique_ptr<Exchange>> answered_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Exchange> writing_ ABSL_GUARDED_BY(mu_);  // a write in flight
  // The answer_bytes of answered_ and writing_.
  int64_t owed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  // What an ending stream finishes with.
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_){grpc::StatusCode::UNAVAILABLE,
                                                "the server is shutting down"};
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // Finish in flight
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool over_ ABSL_GUARDED_BY(mu_) = false;  // to be deleted: nothing may start
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

absl::Status QueuedRpcs::OpenStreams::Add(StreamCall* call) {
  absl::MutexLock lock(&mu_);
  // Registered either way: it lives until its Finish comes back.
  calls_.insert(call);
  if (ending_) return absl::UnavailableError("the server is shutting down");
  if (static_cast<int64_t>(calls_.size()) > max_open_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the server has ", max_open_, " ModelStreamInfer streams open, its limit "
        "(--grpc-max-open-streams); close one or retry later"));
  }
  return absl::OkStatus();
}

// Under the lock, so that EndAll never reaches a call being deleted.
void QueuedRpcs::OpenStreams::Delete(StreamCall* call) {
  absl::MutexLock lock(&mu_);
  calls_.erase(call);
  delete call;
}

void QueuedRpcs::OpenStreams::EndAll() {
  absl::MutexLock lock(&mu_);
  ending_ = true;
  for (StreamCall* call : calls_) call->End();
}

QueuedRpcs::QueuedRpcs(grpc::ServerBuilder* builder, InferenceService* service,
                       const InferenceProtocol* protocol, int queues, int threads_per_queue,
                       StreamLimits stream_limits)
    // At least one queue and one thread on it: with none, ModelInfer would
    // never be asked for or answered (ServerCommand checks its flags; this
    // guards options built in code).
    : service_(service),
      protocol_(protocol),
      threads_per_queue_(std::max(1, threads_per_queue)),
      stream_limits_(stream_limits),
      streams_(std::make_unique<OpenStreams>(stream_limits.max_open_streams)) {
  for (int i = 0; i < std::max(1, queues); ++i) {
    queues_.push_back(std::make_unique<Queue>(builder->AddCompletionQueue(), threads_per_queue_));
  }
}

void QueuedRpcs::Start() {
  for (const std::unique_ptr<Queue>& queue : queues_) {
    for (int i = 0; i < kCallsAskedPerQueue; ++i) {
      new UnaryCall<ModelInferMethod>(service_, protocol_, queue.get());
      new UnaryCall<ServerLiveMethod>(service_, protocol_, queue.get());
      new StreamCall(service_, protocol_, queue.get(), streams_.get(),
                     stream_limits_.max_owed_bytes);
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

void QueuedRpcs::EndStreams() { streams_->EndAll(); }

QueuedRpcs::~QueuedRpcs() { Stop(); }

}  // namespace graphserve
