#include "server/stream_pool.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "common/thread_name.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// Set inside a StreamPool::QueueOnly scope.
thread_local bool queue_only_on_this_thread = false;

// Triton's status and message for a request whose queue timeout passed.
absl::Status TimeoutError() {
  return absl::UnavailableError(
      "Request timeout expired (dynamic_batching queue policy or the request's timeout)");
}

}  // namespace

absl::StatusOr<std::unique_ptr<StreamPool>> StreamPool::Create(std::unique_ptr<ChunkRunner> runner,
                                                               BatchPlanner planner,
                                                               RowLayout layout,
                                                               StreamPoolOptions options) {
  if (runner == nullptr || runner->num_slots() < 1) {
    return absl::InvalidArgumentError("a stream pool needs a runner with at least one slot");
  }
  if (options.queue.max_queued_rows < 1) {
    return absl::InvalidArgumentError("a stream pool needs max_queued_rows >= 1");
  }
  if (layout.rows.empty() || layout.rows.size() != layout.buckets.size()) {
    return absl::InvalidArgumentError("a stream pool needs the rows of one bucket or more");
  }
  // A request's bucket indexes both (Note [Chunks of one bucket]).
  if (planner.buckets() != layout.buckets) {
    return absl::InvalidArgumentError(
        "a stream pool needs its planner's buckets to be its row layout's, in its order");
  }
  const int levels = static_cast<int>(options.queue.levels.size());
  if (levels < 1 || options.queue.default_level < 1 || options.queue.default_level > levels) {
    return absl::InvalidArgumentError(
        absl::StrCat("the default priority level ", options.queue.default_level,
                     " must be one of the ", levels, " priority levels"));
  }
  return std::unique_ptr<StreamPool>(
      new StreamPool(std::move(runner), std::move(planner), std::move(layout), std::move(options)));
}

StreamPool::StreamPool(std::unique_ptr<ChunkRunner> runner, BatchPlanner planner,
                       RowLayout layout, StreamPoolOptions options)
    : runner_(std::move(runner)),
      planner_(std::move(planner)),
      layout_(std::move(layout)),
      options_(std::move(options)),
      queue_(&planner_, options_.queue),
      slot_users_(static_cast<size_t>(runner_->num_slots()), SlotUser::kNone) {
  for (int slot = 0; slot < runner_->num_slots(); ++slot) {
    workers_.emplace_back([this, slot] {
      NameThisThread(absl::StrCat("gs-stream-", slot));
      WorkerLoop(slot);
    });
  }
  const bool timeouts = std::any_of(
      options_.queue.levels.begin(), options_.queue.levels.end(), [](const LevelPolicy& level) {
        return level.default_timeout.count() > 0 || level.allow_timeout_override;
      });
  if (timeouts) {
    timeout_thread_ = std::thread([this] {
      NameThisThread("gs-timeouts");
      TimeoutLoop();
    });
  }
}


StreamPool::~StreamPool() { Drain(); }

StreamPool::QueueOnly::QueueOnly() : outer_(queue_only_on_this_thread) {
  queue_only_on_this_thread = true;
}

StreamPool::QueueOnly::~QueueOnly() { queue_only_on_this_thread = outer_; }

absl::Status StreamPool::Submit(std::shared_ptr<const QueuedRows> rows,
                                const QueueRequestOptions& options) {
  // One chunk's rows wake one worker; more may keep several busy.
  const bool one_chunk = rows->view.rows <= planner_.batch_sizes().back();
  std::optional<std::pair<int, FormedChunk>> mine;
  bool rows_left = false;
  bool callers_hold_slots = false;
  {
    absl::MutexLock lock(&mu_);
    if (draining_) return absl::UnavailableError("the server is shutting down");
    // Only a request with nothing queued before it runs on its caller's
    // thread (Note [Chunks on the caller's thread]).
    const bool first_in_queue = queue_.empty();
    RETURN_IF_ERROR(queue_.Push(std::move(rows), options, Clock::now()));
    if (options_.run_on_caller && first_in_queue && !queue_only_on_this_thread) {
      mine = TakeChunkForCaller();
    }
    queued_rows_.store(queue_.queued_rows(), std::memory_order_release);
    rows_left = !queue_.empty();
    callers_hold_slots = std::find(slot_users_.begin(), slot_users_.end(), SlotUser::kCaller) !=
                         slot_users_.end();
  }
  queue_changed_.Signal();
  if (rows_left) {
    // Signal might wake only a worker whose slot a caller holds (this
    // one's, or another's), which goes back to waiting while an idle worker
    // sleeps on.
    if (one_chunk && !callers_hold_slots) {
      work_available_.Signal();
    } else {
      work_available_.SignalAll();
    }
  }
  if (mine.has_value()) {
    // Nothing else runs on the slot: staging buffer 0 is free.
    auto& [slot, chunk] = *mine;
    FinishChunk(slot,
                StartChunk(slot, 0, runner_->PrepareWorkerThread(slot), std::move(chunk)));
    ReleaseSlot(slot);
  }
  return absl::OkStatus();
}

std::optional<std::pair<int, FormedChunk>> StreamPool::TakeChunkForCaller() {
  const auto idle = std::find(slot_users_.begin(), slot_users_.end(), SlotUser::kNone);
  if (idle == slot_users_.end()) return std::nullopt;
  const Clock::time_point now = Clock::now();
  // Expired rows are the workers' (and the timeout thread's) to answer.
  if (queue_.next_deadline().value_or(Clock::time_point::max()) <= now) return std::nullopt;
  std::optional<Clock::time_point> wake_at;
  std::optional<FormedChunk> chunk = queue_.Pop(now, &wake_at);
  if (!chunk.has_value()) return std::nullopt;
  *idle = SlotUser::kCaller;
  return std::make_pair(static_cast<int>(idle - slot_users_.begin()), *std::move(chunk));
}

void StreamPool::ReleaseSlot(int slot) {
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    slot_users_[static_cast<size_t>(slot)] = SlotUser::kNone;
    // Rows queued while the slot was taken, or a drain waiting for it.
    wake = !queue_.empty() || draining_;
  }
  if (wake) work_available_.SignalAll();
}

void StreamPool::Drain(std::optional<Clock::time_point> deadline) {
  {
    absl::MutexLock lock(&mu_);
    if (!draining_ || (deadline.has_value() && (!drain_deadline_.has_value() ||
                                                *deadline < *drain_deadline_))) {
      drain_deadline_ = deadline;
    }
    draining_ = true;
  }
  work_available_.SignalAll();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  {
    // A caller still running a chunk it took before the drain began.
    absl::MutexLock lock(&mu_);
    while (std::find(slot_users_.begin(), slot_users_.end(), SlotUser::kCaller) !=
           slot_users_.end()) {
      work_available_.Wait(&mu_);
    }
  }
  queue_changed_.SignalAll();
  if (timeout_thread_.joinable()) timeout_thread_.join();
}

void StreamPool::TimeoutLoop() {
  absl::MutexLock lock(&mu_);
  // The workers are joined before this thread is told to stop, so once
  // draining_ is set and they are gone the queue is empty.
  while (!(draining_ && queue_.empty())) {
    std::vector<RefusedRows> expired = queue_.RemoveExpired(Clock::now());
    queued_rows_.store(queue_.queued_rows(), std::memory_order_release);
    if (!expired.empty()) {
      mu_.Unlock();
      Refuse(expired, TimeoutError());
      mu_.Lock();
      continue;
    }
    if (const std::optional<Clock::time_point> deadline = queue_.next_deadline()) {
      queue_changed_.WaitWithTimeout(&mu_, absl::FromChrono(*deadline - Clock::now()));
    } else {
      queue_changed_.Wait(&mu_);
    }
  }
}

void StreamPool::Refuse(const std::vector<RefusedRows>& refused, const absl::Status& status) {
  const Clock::time_point now = Clock::now();
  for (const RefusedRows& rows : refused) {
    // The queue's own reason (a call nobody waits for) before the caller's.
    rows.request->on_segment(rows.rows, rows.status.ok() ? status : rows.status,
                             now - rows.enqueued, ChunkTiming{}, SegmentEnd::kRefused);
  }
}

std::optional<FormedChunk> StreamPool::NextChunk(int slot) {
  absl::MutexLock lock(&mu_);
  SlotUser& user = slot_users_[static_cast<size_t>(slot)];
  if (user == SlotUser::kWorker) user = SlotUser::kNone;  // its last chunk is done
  while (true) {
    // A caller runs a chunk on this slot: wait until it hands the slot back.
    if (user == SlotUser::kCaller) {
      if (draining_ && queue_.empty()) return std::nullopt;
      work_available_.Wait(&mu_);
      continue;
    }
    const Clock::time_point now = Clock::now();
    std::vector<RefusedRows> expired = queue_.RemoveExpired(now);
    std::vector<RefusedRows> abandoned;
    if (PastDrainDeadline(now)) abandoned = queue_.RemoveAll();
    std::optional<Clock::time_point> wake_at;
    std::optional<FormedChunk> chunk = queue_.Pop(now, &wake_at);
    // A draining pool launches a batch at once rather than wait to fill it.
    if (!chunk.has_value() && draining_ && !queue_.empty()) {
      chunk = queue_.Pop(Clock::time_point::max(), nullptr);
    }
    queued_rows_.store(queue_.queued_rows(), std::memory_order_release);
    if (!expired.empty() || !abandoned.empty()) {
      mu_.Unlock();
      Refuse(expired, TimeoutError());
      Refuse(abandoned, absl::UnavailableError(
                            "the server is shutting down and its exit timeout passed before "
                            "this request ran"));
      mu_.Lock();
      if (!chunk.has_value()) continue;
    }
    if (chunk.has_value()) {
      user = SlotUser::kWorker;
      return chunk;
    }
    if (draining_ && queue_.empty()) return std::nullopt;

    std::optional<Clock::time_point> until = wake_at;
    const auto earlier = [&](std::optional<Clock::time_point> t) {
      if (t.has_value() && (!until.has_value() || *t < *until)) until = t;
    };
    earlier(queue_.next_deadline());
    if (draining_) earlier(drain_deadline_);
    if (until.has_value()) {
      work_available_.WaitWithTimeout(&mu_, absl::FromChrono(*until - Clock::now()));
    } else {
      work_available_.Wait(&mu_);
    }
  }
}

std::optional<FormedChunk> StreamPool::NextChunkBehind() {
  std::vector<RefusedRows> expired;
  std::optional<FormedChunk> chunk;
  {
    absl::MutexLock lock(&mu_);
    const Clock::time_point now = Clock::now();
    // Past a drain's deadline NextChunk answers what is queued; take none.
    if (PastDrainDeadline(now)) return std::nullopt;
    expired = queue_.RemoveExpired(now);
    const bool full_chunk = queue_.queued_rows() >= planner_.batch_sizes().back();
    if (!options_.queue.merge || full_chunk || draining_) {
      std::optional<Clock::time_point> wake_at;
      chunk = queue_.Pop(draining_ ? Clock::time_point::max() : now, &wake_at);
    }
    queued_rows_.store(queue_.queued_rows(), std::memory_order_release);
  }
  Refuse(expired, TimeoutError());
  return chunk;
}

StreamPool::StartedChunk StreamPool::StartChunk(int slot, int staging,
                                                const absl::Status& prepared, FormedChunk chunk) {
  StartedChunk started{.chunk = std::move(chunk), .staging = staging, .start = Clock::now()};
  ChunkJob& job = started.job;
  const size_t bucket = BucketFor(started.chunk);
  job.key = {started.chunk.batch_size, layout_.buckets[bucket]};
  job.shape = &layout_.rows[bucket];
  job.rows = started.chunk.rows;
  job.segments.reserve(started.chunk.segments.size());
  for (const RowSegment& segment : started.chunk.segments) {
    RowView& rows =
        job.segments.emplace_back(segment.request->view.Rows(segment.first_row, segment.rows));
    rows.shape = &ShapeOf(*segment.request);
  }
  // A slot whose thread could not be prepared fails its chunks rather than
  // running them on the wrong device.
  started.status = prepared.ok() ? runner_->Start(slot, staging, job, &started.timing) : prepared;
  return started;
}

const RowShape& StreamPool::ShapeOf(const QueuedRows& request) const {
  return request.view.shape != nullptr ? *request.view.shape : layout_.rows.front();
}

size_t StreamPool::BucketFor(const FormedChunk& chunk) const {
  // Buckets each hold the ones before (server/shape_buckets.h): the largest
  // of the segments' own buckets holds them all.
  size_t bucket = 0;
  for (const RowSegment& segment : chunk.segments) {
    bucket = std::max(bucket, segment.request->bucket);
  }
  return std::min(bucket, layout_.rows.size() - 1);
}

void StreamPool::FinishChunk(int slot, StartedChunk started) {
  absl::Status status = std::move(started.status);
  if (status.ok()) status = runner_->Finish(slot, started.staging, started.job, &started.timing);
  if (options_.on_chunk) {
    options_.on_chunk(slot, started.chunk, BucketFor(started.chunk), status, started.timing);
  }
  for (const RowSegment& segment : started.chunk.segments) {
    segment.request->on_segment(segment.rows, status, started.start - segment.enqueued,
                                started.timing, SegmentEnd::kRan);
  }
}

void StreamPool::WorkerLoop(int slot) {
  const absl::Status prepared = runner_->PrepareWorkerThread(slot);
  if (!prepared.ok()) spdlog::error("stream slot {}: {}", slot, prepared.ToString());
  const int depth = std::max(1, runner_->depth());
  int staging = 0;  // the buffer the next chunk goes through
  std::optional<StartedChunk> running;
  while (true) {
    if (!running.has_value()) {
      const Clock::time_point spin_end = Clock::now() + options_.idle_spin;
      while (queued_rows_.load(std::memory_order_acquire) == 0 && Clock::now() < spin_end) {
      }
      std::optional<FormedChunk> chunk = NextChunk(slot);
      if (!chunk.has_value()) return;  // draining, and every accepted row is answered
      running = StartChunk(slot, staging, prepared, *std::move(chunk));
      staging = (staging + 1) % depth;
    }
    // Start the next chunk behind the running one before waiting for it,
    // where its size runs faster that way; else right after.
    std::optional<StartedChunk> next;
    std::optional<FormedChunk> after;
    if (depth > 1 && running->status.ok()) {
      if (std::optional<FormedChunk> chunk = NextChunkBehind()) {
        if (runner_->StartsBehindRunning(chunk->batch_size)) {
          next = StartChunk(slot, staging, prepared, *std::move(chunk));
          staging = (staging + 1) % depth;
        } else {
          after = std::move(chunk);
        }
      }
    }
    FinishChunk(slot, *std::move(running));
    running = std::move(next);
    if (after.has_value()) {
      running = StartChunk(slot, staging, prepared, *std::move(after));
      staging = (staging + 1) % depth;
    }
  }
}

}  // namespace graphserve
