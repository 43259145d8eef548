#pragma once
// The server's unit of work: a request's rows, queued until free stream
// slots pull them in chunks. See Note [Row segments].
//
// Not thread safe: the stream pool (server/stream_pool.h) holds its lock
// around every call.

#include <chrono>
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "planning/batch_planner.h"
#include "server/chunk_runner.h"

namespace graphserve {

using QueueClock = std::chrono::steady_clock;

// How a segment's rows ended: run by a runner (a failure is then the
// runner's), or refused by the queue without running (a queue timeout, or
// abandoned when a drain's deadline passed).
enum class SegmentEnd { kRan, kRefused };

// One request's rows and where its chunks report back. The view's pointers
// are borrowed: the request and its response outlive every segment.
struct QueuedRows {
  // The rows; view.shape null: the model's one row shape (RowLayout::rows,
  // a model without shape dims).
  RowView view;
  // Holds view.shape, for a model with shape dims (the request's extents:
  // Note [Shape buckets] in server/shape_buckets.h).
  std::shared_ptr<const RowShape> own_shape;
  // The index of the smallest bucket that holds these rows (RowLayout's
  // order; 0 for a model with one): a merged chunk takes rows of its oldest
  // request's bucket and smaller ones (Note [Chunks of one bucket]).
  size_t bucket = 0;
  // Called once per segment of these rows, on the thread that ran or refused
  // it: `rows` rows ended with `status` after `queued` in the queue (the
  // segment's chunk's timing; zero for refused rows), and `end` says whether
  // a runner ran them or the queue refused them unrun. The request is done
  // when the segments' rows add up to view.rows.
  std::function<void(int64_t rows, const absl::Status& status, QueueClock::duration queued,
                     const ChunkTiming& timing, SegmentEnd end)>
      on_segment;
};

// Triton's ModelQueuePolicy for one priority level.
struct LevelPolicy {
  enum class TimeoutAction { kReject, kDelay };
  TimeoutAction timeout_action = TimeoutAction::kReject;
  std::chrono::microseconds default_timeout{0};  // 0: none
  bool allow_timeout_override = false;           // a request may ask for less
  size_t max_queue_size = 0;                     // requests; 0: unbounded
};

// How rows wait and merge: Triton's dynamic_batching, or its absence.
struct QueuePolicy {
  // Merge the rows of several queued requests into one chunk (dynamic
  // batching). Off: a chunk holds rows of one request only.
  bool merge = false;
  // With merge: how long a free slot may wait for more rows when fewer are
  // queued than the target size (the largest preferred size, else the
  // largest captured size), counted from the oldest queued request.
  std::chrono::microseconds max_queue_delay{0};
  // With merge: sizes worth launching at once when exactly that many rows
  // are queued (Triton's preferred_batch_size).
  std::vector<int64_t> preferred_batch_sizes;
  // Priority levels 1 (first served) to levels.size(); at least one.
  std::vector<LevelPolicy> levels = {LevelPolicy{}};
  int default_level = 1;
  // Back-pressure over all levels: queued rows beyond this are refused
  // (ResourceExhausted), so latency never grows without bound.
  int64_t max_queued_rows = 1 << 20;
};

// Rows [first_row, first_row + rows) of one queued request.
struct RowSegment {
  std::shared_ptr<const QueuedRows> request;
  int64_t first_row = 0;
  int64_t rows = 0;
  QueueClock::time_point enqueued;
};

// What a free slot runs: its segments' rows, in order, padded up to
// batch_size (a captured size).
struct FormedChunk {
  int64_t batch_size = 0;
  int64_t rows = 0;
  std::vector<RowSegment> segments;
  // With merge: the rows queued that the chunk could have taken when it
  // formed (up to the planner's largest rows), whatever the captured sizes
  // let it take: what larger sizes would merge (Note [Demand rows] in
  // server/model_counters.h). 0 without merge.
  int64_t demand_rows = 0;
};

// The RPC a request came on, as far as the queue cares: when its client
// stops waiting (the gRPC deadline) and whether it has gone (cancelled).
// Note [Rows nobody waits for]. Thread-safe: the transport cancels it from
// its own threads while the queue reads it under the pool's lock.
class CallLiveness {
 public:
  // `deadline`: none for a call that waits forever.
  explicit CallLiveness(std::optional<QueueClock::time_point> deadline = std::nullopt) {
    if (deadline.has_value()) set_deadline(*deadline);
  }
  CallLiveness(const CallLiveness&) = delete;
  CallLiveness& operator=(const CallLiveness&) = delete;

  // The client's deadline, known once its call started (after the liveness
  // was made, so that a cancellation can never find it missing).
  void set_deadline(QueueClock::time_point deadline) {
    deadline_.store(deadline.time_since_epoch().count(), std::memory_order_release);
  }
  // The client cancelled the call, or is gone.
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  // OK while the client still waits at `now`; Cancelled or DeadlineExceeded,
  // with what the server did, once it does not.
  [[nodiscard]] absl::Status Check(QueueClock::time_point now) const;

 private:
  // The deadline's ticks since the clock's epoch; the maximum for none.
  std::atomic<QueueClock::rep> deadline_{std::numeric_limits<QueueClock::rep>::max()};
  std::atomic<bool> cancelled_{false};
};

// While it lives, the requests this thread queues belong to `call` (the
// transport's RPC thread sets it around InferenceProtocol::ModelInfer, which
// queues on the calling thread; as StreamPool::QueueOnly, a scope rather
// than a parameter through every layer between). Scopes nest.
class QueueForCall {
 public:
  explicit QueueForCall(std::shared_ptr<const CallLiveness> call);
  QueueForCall(const QueueForCall&) = delete;
  QueueForCall& operator=(const QueueForCall&) = delete;
  ~QueueForCall();

  // The innermost scope's call on this thread; null outside any.
  [[nodiscard]] static const std::shared_ptr<const CallLiveness>& Current();

 private:
  std::shared_ptr<const CallLiveness> outer_;
};

// What a request asks of the queue (Triton's request parameters).
struct QueueRequestOptions {
  uint64_t priority = 0;                             // 0: the default level
  std::optional<std::chrono::microseconds> timeout;  // used only if allowed
};

// Rows taken out without running: a REJECT timeout, a call nobody waits for
// any more, or shutdown.
struct RefusedRows {
  std::shared_ptr<const QueuedRows> request;
  int64_t rows = 0;
  QueueClock::time_point enqueued;
  // Why, when the queue knows better than its caller: the call's
  // Cancelled or DeadlineExceeded. OK for a queue timeout or shutdown, whose
  // answer the caller chooses.
  absl::Status status;
};

class RequestQueue {
 public:
  // `planner` must outlive the queue; `policy` as above (levels non-empty,
  // default_level among them).
  RequestQueue(const BatchPlanner* planner, QueuePolicy policy);

  // Queues all of `request`'s rows, or none: Unavailable when its level
  // holds max_queue_size requests (Triton's answer), ResourceExhausted past
  // max_queued_rows, the call's own status when its client no longer waits
  // (QueueForCall::Current's, Note [Rows nobody waits for]).
  absl::Status Push(std::shared_ptr<const QueuedRows> request, const QueueRequestOptions& options,
                    QueueClock::time_point now);

  // The next chunk for a free slot, or nullopt when nothing is queued or the
  // batch should wait for more rows; then *wake_at, if set, says when the
  // wait ends. Call RemoveExpired first.
  std::optional<FormedChunk> Pop(QueueClock::time_point now,
                                 std::optional<QueueClock::time_point>* wake_at);

  // Requests whose timeout passed before any of their rows ran: REJECT ones
  // are removed and returned; DELAY ones move behind their level's requests
  // that have not timed out. Also the rows not yet taken of requests whose
  // call nobody waits for, among those the next chunk would take (Note
  // [Rows nobody waits for]), returned with the call's status.
  std::vector<RefusedRows> RemoveExpired(QueueClock::time_point now);
  // Everything still queued (shutdown).
  std::vector<RefusedRows> RemoveAll();

  // The earliest timeout among queued requests, for the pool's sleep.
  [[nodiscard]] std::optional<QueueClock::time_point> next_deadline() const;
  [[nodiscard]] bool empty() const { return queued_rows_ == 0; }
  [[nodiscard]] int64_t queued_rows() const { return queued_rows_; }

  // Implementation details follow.
 private:
  struct Entry {
    std::shared_ptr<const QueuedRows> request;
    int64_t next_row = 0;  // rows before it are in chunks already
    QueueClock::time_point enqueued;
    std::optional<QueueClock::time_point> deadline;
    std::shared_ptr<const CallLiveness> call;  // null: not from a watched RPC
  };
  // Per level: requests that have not timed out, then delayed ones.
  struct Level {
    std::deque<Entry> waiting;
    std::deque<Entry> delayed;
  };

  // Level index (0-based) for a request's priority.
  [[nodiscard]] size_t LevelFor(uint64_t priority) const;
  // Visits queued entries in service order until `visit` returns false.
  template <typename Visit>
  void ForEachInOrder(Visit visit);
  // Takes `rows` rows from the front, in service order, as segments,
  // passing over requests of a bucket above `bucket`.
  std::vector<RowSegment> TakeRows(int64_t rows, size_t bucket);
  // Removes the entries whose call nobody waits for among the next chunk's
  // candidates, adding their rows to `refused`.
  void RemoveAbandoned(QueueClock::time_point now, std::vector<RefusedRows>* refused);
  // Bookkeeping for an entry leaving the queue (taken whole or refused).
  void Forget(const Entry& entry);
  // Whether a merged batch of `rows` rows should wait (max_queue_delay).
  [[nodiscard]] bool ShouldWait(int64_t rows, QueueClock::time_point oldest,
                                QueueClock::time_point now) const;

  const BatchPlanner* planner_;
  const QueuePolicy policy_;
  std::vector<Level> levels_;
  int64_t queued_rows_ = 0;
  // Entries in `waiting` deques that hold a deadline (Note [A deep queue
  // stays cheap]).
  int64_t with_deadline_ = 0;
  // Entries, waiting or delayed, that hold a call.
  int64_t with_call_ = 0;
};

// Note [Rows nobody waits for]
// A gRPC client's deadline may pass, or the client cancel, while its request
// waits: gRPC has already answered it DEADLINE_EXCEEDED or CANCELLED, and
// running its rows would only delay the requests behind it (under load with
// 1 ms deadlines, a whole backlog of them). So a request queued from an RPC
// holds its call's liveness, and RemoveExpired, which the pool calls before
// every Pop, takes out the rows of such requests before they reach a chunk:
// rows already running run on, the rest are refused with Cancelled or
// DeadlineExceeded (Triton drops a cancelled request from its queue with
// CANCELLED the same way). Only the entries the next chunk could take
// (max_rows live rows in service order) are looked at, so each call costs
// at most a chunk's worth of entries, however deep the queue (Note [A deep
// queue stays cheap]); an abandoned request further back is refused when it
// comes that far. A call already abandoned when its request arrives is
// refused by Push. The liveness comes with the thread (QueueForCall), set
// by the RPC threads (server/queued_rpcs.cc); HTTP has no deadline
// (Triton's `timeout` parameter and the queue policy serve it instead).

// Note [A deep queue stays cheap]
// Every chunk a slot takes first asks for the expired requests and every
// caller for the next deadline, under the stream pool's lock. Both walked
// the whole queue, and RemoveExpired rebuilt it, even when no request could
// expire: with 1000 requests queued each chunk cost a thousand moves under
// the lock, and the graphs-on server without batching answered 26-27k
// batch-1 requests a second with 1024 in flight against 50-60k with 64
// (bench/results/2026-11-26_2aea2d7_tail_collapse_h100 and the next run).
// A backlog at half the saturated rate then never drained. So the queue
// counts the waiting entries that hold a deadline: with none (no queue
// timeouts configured, the default) both answer at once, and with some,
// RemoveExpired rebuilds a level only when one has expired. With timeouts
// configured both still walk the queue on each call (a deadline-ordered
// index would end that; not built).

// Note [Chunks of one bucket]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With shape buckets (Note [Shape buckets] in server/shape_buckets.h) a
// chunk runs at the bucket of its longest row, so one 400-token request
// merged with 31 of 20 tokens makes all 32 pay for 512. Measured on the
// H200 with BERT-base over a length mix, merging the oldest rows whatever
// their length served fewer requests a second than PyTorch eager batching
// 32 at a time. So a merged chunk takes, in service order, the rows whose
// bucket is at most its oldest request's: a longer request is passed over
// and runs in a chunk of its own bucket once it is the oldest, which it
// becomes as soon as the requests queued before it have run. Looking past
// longer requests stops after max_rows of them, as Note [A deep queue stays
// cheap] asks.

// Note [Row segments]
// ~~~~~~~~~~~~~~~~~~~
// A request of r rows is queued whole; free stream slots pull chunks from
// the queue's front. A chunk is one or more row segments: rows of one request
// or of several, each segment reporting to its own request. Splitting a large
// request and merging small ones are the same operation on this queue:
//  * without merging, a slot takes the next chunk of the front request's
//    cheapest plan for its remaining rows (BatchPlanner::FirstChunk), so a
//    request of 40 rows becomes the chunks the planner chose, run on as many
//    slots as are free;
//  * with merging (Triton's dynamic_batching), a slot takes the first chunk
//    of the cheapest plan for ALL queued rows, in service order: requests of
//    3 and 5 rows queued while every slot was busy run as one chunk of 8.
//    A request's rows may then straddle two chunks; it ends when its last
//    segment ends.
// Deciding when a slot frees, not when a request arrives, is what lets rows
// that queued up during a busy period run as one launch, and it makes a
// split request's chunks start as soon as slots free instead of waiting
// behind later requests' chunks.
// Every stage sees a request's rows through one RowView (server/row_view.h):
// validation makes it (ValidatedRequest::view), the queue holds it
// (QueuedRows::view), and a segment is a slice of it (RowView::Rows), each
// tensor's pointer, pitch and memory carried along, so that the runner
// copies each segment by where it lies (Note [Pitched row copies] in
// capture/graph_set.h).

}  // namespace graphserve
