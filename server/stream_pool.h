#pragma once
// The stream pool: M slots (a GraphSet's streams, or host worker threads),
// one worker thread per slot, all pulling from one queue of request rows
// (server/request_queue.h). A free slot takes the next chunk the queue forms:
// the next piece of a split request, or rows of several requests merged
// (dynamic batching). A request is queued whole or refused whole.
//
// A worker whose runner has depth 2 (Note [Double-buffered staging] in
// capture/graph_set.h) starts the next chunk behind its running one before it
// waits for the running one, so the slot's GPU stream never waits on the
// worker's host copies, for the chunk sizes the runner measured faster that
// way (ChunkRunner::StartsBehindRunning). With dynamic batching it does so only when a full
// chunk of the largest size is queued: otherwise rows are left to gather
// into a bigger chunk while the slot is busy, as they would without the
// second buffer.
//
// Threads: Submit is called from RPC threads (the gRPC completion-queue
// threads, HTTP workers). When a slot is idle, nothing was queued before the
// request and the queue forms a chunk at once, the caller runs that chunk
// itself (Note [Chunks on the caller's thread]); otherwise it only queues. Each worker runs its
// slot's chunks one at a time; segments report to their requests on the
// thread that ran the chunk.
//
// Note [Chunks on the caller's thread]
// A quiet server's request used to cross two sleeping threads: the stream
// worker (woken by Submit) and the responder (woken by the worker). Each
// wake-up costs 30-60 us on the H200 machine, together more than a small
// chunk's replay (bench/results/2026-11-26_29d975f_serve_spin_encoder_h200:
// 124-168 us served overhead). So Submit runs the chunk on the calling RPC
// thread when it can start now: a slot is idle (its worker is waiting, not
// running), nothing was queued before this request, and the queue would
// hand a free slot a chunk this instant (no batch delay pending). The slot
// is marked as the caller's until the chunk is done, so its worker cannot
// take it meanwhile. At most one caller per slot blocks on the GPU, so the
// RPC threads blocked are bounded by M; under load the slots are busy and
// requests queue for the workers as before, which is where merging happens.
//
// Only the first request in an empty queue: a caller that took any idle
// slot ran the queue's oldest chunk, and behind a backlog that made a pump
// of one chunk per arrival. A slot a caller freed went to the next arriving
// request's caller before the slot's sleeping worker woke, so the slots ran
// exactly as many chunks as requests arrived and the backlog never drained:
// at half the saturated rate, after a short stall, latency sat at the load
// generator's cap (1024 requests in flight, ~41 ms) for 0.5-0.8 s, while
// the hand-off path (run_on_caller false) drained the same stalls in a few
// ms (bench/results/2026-11-26_3b3fc8e_tail_probe_h100). Now a backlog is
// the workers', which loop without sleeping while rows are queued.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "planning/batch_planner.h"
#include "server/chunk_runner.h"
#include "server/request_queue.h"

namespace graphserve {

// The rows of each shape bucket a model's graphs are captured at, smallest
// first (one, for a model without shape dims): a chunk runs in the largest
// of its segments' QueuedRows::bucket (Note [Shape buckets] in
// server/shape_buckets.h).
struct RowLayout {
  std::vector<std::vector<int64_t>> buckets;  // GraphKey::bucket of each
  std::vector<RowShape> rows;                 // parallel to `buckets`
};

struct StreamPoolOptions {
  QueuePolicy queue;
  // How long an idle worker polls the queue before it sleeps. Waking a
  // sleeping thread costs tens of microseconds on an idle core, as much as
  // a whole small-batch replay, so polling helps where every chunk goes
  // through a worker (run_on_caller false). By default none polls: under
  // load polling threads take cores from gRPC's, and a quiet server runs
  // its chunks on the RPC thread anyway (Note [Idle polling off by default]
  // in server/served_model.h).
  std::chrono::microseconds idle_spin{0};
  // Submit runs a chunk it can start at once on the calling thread (Note
  // [Chunks on the caller's thread]); false: only the workers run chunks.
  bool run_on_caller = true;
  // Called once per chunk run (or failed), on the worker of runner slot
  // `slot`, before its segments report: executions for the statistics.
  // `bucket`: the RowLayout bucket it ran at.
  std::function<void(int slot, const FormedChunk&, size_t bucket, const absl::Status&,
                     const ChunkTiming&)>
      on_chunk;
};

class StreamPool {
 public:
  using Clock = QueueClock;

  // Starts one worker per runner slot; each calls PrepareWorkerThread before
  // its first chunk. Takes ownership of the runner; chunks are planned by
  // `planner`.
  static absl::StatusOr<std::unique_ptr<StreamPool>> Create(std::unique_ptr<ChunkRunner> runner,
                                                            BatchPlanner planner, RowLayout layout,
                                                            StreamPoolOptions options);

  // While one is alive on a thread, Submit there only queues and never runs a
  // chunk itself: a transport thread that its queue's other calls wait on
  // opens one (Note [Hot RPCs on completion queues]). Scopes nest.
  class QueueOnly {
   public:
    QueueOnly();
    QueueOnly(const QueueOnly&) = delete;
    QueueOnly& operator=(const QueueOnly&) = delete;
    ~QueueOnly();

   private:
    const bool outer_;
  };

  // Queues all of `rows` or none (RequestQueue::Push's errors; Unavailable
  // once Drain has begun). When it fails `on_segment` is never called. May
  // run the first chunk, and report its segments, before it returns (Note
  // [Chunks on the caller's thread]).
  absl::Status Submit(std::shared_ptr<const QueuedRows> rows, const QueueRequestOptions& options);

  // Stops accepting and runs the queued rows until `deadline`; rows still
  // queued then are answered Unavailable. Returns once the workers, and any
  // caller running a chunk, have finished their last chunks. Idempotent;
  // the destructor drains with no deadline.
  void Drain(std::optional<Clock::time_point> deadline = std::nullopt);
  ~StreamPool();

  [[nodiscard]] const ChunkRunner& runner() const { return *runner_; }
  [[nodiscard]] const BatchPlanner& planner() const { return planner_; }
  [[nodiscard]] const RowLayout& layout() const { return layout_; }
  [[nodiscard]] int num_slots() const { return runner_->num_slots(); }

  // Implementation details follow.
 private:
  StreamPool(std::unique_ptr<ChunkRunner> runner, BatchPlanner planner, RowLayout layout,
             StreamPoolOptions options);
  // Who runs a slot's chunks at the moment.
  enum class SlotUser { kNone, kWorker, kCaller };

  void WorkerLoop(int slot);
  // Takes an idle slot and the chunk the queue would start now, for the
  // caller to run; nullopt when either is missing.
  std::optional<std::pair<int, FormedChunk>> TakeChunkForCaller()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands `slot` back after a chunk; wakes the workers when rows wait.
  void ReleaseSlot(int slot);
  // Answers timed-out requests at their deadline even while every slot is
  // busy; runs only when some level has timeouts.
  void TimeoutLoop();
  // The next chunk for a free slot, answering timed-out and (past the drain
  // deadline) abandoned rows on the way; nullopt when the worker should exit.
  std::optional<FormedChunk> NextChunk(int slot);
  // A chunk a slot has started and not yet finished.
  struct StartedChunk {
    FormedChunk chunk;
    ChunkJob job;
    int staging = 0;
    Clock::time_point start;
    ChunkTiming timing;
    absl::Status status;  // Start's; Finish runs only after a good Start
  };
  // The next chunk for a slot that already runs one, if it should start now
  // (see the file comment); never waits.
  std::optional<FormedChunk> NextChunkBehind();
  StartedChunk StartChunk(int slot, int staging, const absl::Status& prepared,
                          FormedChunk chunk);
  // Finishes `started` and reports its segments.
  void FinishChunk(int slot, StartedChunk started);
  // Whether a drain's deadline has passed: what is still queued is then
  // answered, not run.
  [[nodiscard]] bool PastDrainDeadline(Clock::time_point now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return draining_ && drain_deadline_.has_value() && now >= *drain_deadline_;
  }
  // Reports refused rows to their requests (outside the lock).
  static void Refuse(const std::vector<RefusedRows>& refused, const absl::Status& status);

  const std::unique_ptr<ChunkRunner> runner_;
  const BatchPlanner planner_;
  // The index in layout_ of the smallest bucket that holds every segment
  // (QueuedRows::bucket).
  [[nodiscard]] size_t BucketFor(const FormedChunk& chunk) const;
  // A request's row shape: its own, else the model's one.
  [[nodiscard]] const RowShape& ShapeOf(const QueuedRows& request) const;

  const RowLayout layout_;
  const StreamPoolOptions options_;
  absl::Mutex mu_;
  absl::CondVar work_available_;
  // Wakes the timeout thread: a request was queued, or the pool drains.
  absl::CondVar queue_changed_;
  RequestQueue queue_ ABSL_GUARDED_BY(mu_);
  // Rows queued, readable without the lock: what idle workers poll.
  std::atomic<int64_t> queued_rows_{0};
  std::vector<SlotUser> slot_users_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Clock::time_point> drain_deadline_ ABSL_GUARDED_BY(mu_);
  // Teardown order: Drain sets draining_ under mu_, wakes every worker, and
  // joins them; a worker exits only once draining_ is set and the queue is
  // empty, so accepted rows are always answered. The runner outlives the
  // workers.
  std::vector<std::thread> workers_;
  std::thread timeout_thread_;
};

}  // namespace graphserve
