#include "server/request_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace graphserve {

namespace {
thread_local std::shared_ptr<const CallLiveness> call_on_this_thread;
}  // namespace

absl::Status CallLiveness::Check(QueueClock::time_point now) const {
  if (cancelled_.load(std::memory_order_acquire)) {
    return absl::CancelledError("the client cancelled the request before it ran");
  }
  if (now.time_since_epoch().count() >= deadline_.load(std::memory_order_acquire)) {
    return absl::DeadlineExceededError(
        "the request's deadline passed while it waited in the queue; it did not run");
  }
  return absl::OkStatus();
}

QueueForCall::QueueForCall(std::shared_ptr<const CallLiveness> call)
    : outer_(std::exchange(call_on_this_thread, std::move(call))) {}

QueueForCall::~QueueForCall() { call_on_this_thread = std::move(outer_); }

const std::shared_ptr<const CallLiveness>& QueueForCall::Current() { return call_on_this_thread; }

RequestQueue::RequestQueue(const BatchPlanner* planner, QueuePolicy policy)
    : planner_(planner), policy_(std::move(policy)), levels_(policy_.levels.size()) {}

size_t RequestQueue::LevelFor(uint64_t priority) const {
  // Triton serves a priority of 0, or one outside 1..levels, at the default.
  if (priority < 1 || priority > levels_.size()) {
    return static_cast<size_t>(policy_.default_level - 1);
  }
  return static_cast<size_t>(priority - 1);
}

absl::Status RequestQueue::Push(std::shared_ptr<const QueuedRows> request,
                                const QueueRequestOptions& options, QueueClock::time_point now) {
  const std::shared_ptr<const CallLiveness>& call = QueueForCall::Current();
  if (call != nullptr) RETURN_IF_ERROR(call->Check(now));
  const size_t level = LevelFor(options.priority);
  const LevelPolicy& level_policy = policy_.levels[level];
  Level& queue = levels_[level];
  const size_t queued = queue.waiting.size() + queue.delayed.size();
  if (level_policy.max_queue_size > 0 && queued >= level_policy.max_queue_size) {
    return absl::UnavailableError(
        absl::StrCat("Exceeds maximum queue size: ", queued, " requests wait at priority ",
                     level + 1, " (dynamic_batching max_queue_size ",
                     level_policy.max_queue_size, ")"));
  }
  if (queued_rows_ + request->view.rows > policy_.max_queued_rows) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the model's queue is full (", queued_rows_, " rows waiting, limit ",
                     policy_.max_queued_rows, "); retry later or add streams"));
  }
  std::chrono::microseconds timeout = level_policy.default_timeout;
  if (options.timeout.has_value() && level_policy.allow_timeout_override &&
      *options.timeout > std::chrono::microseconds(0) &&
      (timeout.count() == 0 || *options.timeout < timeout)) {
    timeout = *options.timeout;  // Triton: an override may shorten, never lengthen
  }
  Entry entry{.request = std::move(request), .enqueued = now, .call = call};
  if (timeout.count() > 0) {
    entry.deadline = now + timeout;
    ++with_deadline_;
  }
  if (call != nullptr) ++with_call_;
  queued_rows_ += entry.request->view.rows;
  queue.waiting.push_back(std::move(entry));
  return absl::OkStatus();
}

template <typename Visit>
void RequestQueue::ForEachInOrder(Visit visit) {
  for (Level& level : levels_) {
    for (std::deque<Entry>* entries : {&level.waiting, &level.delayed}) {
      for (Entry& entry : *entries) {
        if (!visit(entry)) return;
      }
    }
  }
}

std::vector<RowSegment> RequestQueue::TakeRows(int64_t rows, size_t bucket) {
  std::vector<RowSegment> segments;
  for (Level& level : levels_) {
    for (std::deque<Entry>* entries : {&level.waiting, &level.delayed}) {
      for (auto it = entries->begin(); rows > 0 && it != entries->end();) {
        Entry& entry = *it;
        if (entry.request->bucket > bucket) {  // waits for a chunk of its own bucket
          ++it;
          continue;
        }
        const int64_t taken = std::min(rows, entry.request->view.rows - entry.next_row);
        segments.push_back({entry.request, entry.next_row, taken, entry.enqueued});
        entry.next_row += taken;
        rows -= taken;
        queued_rows_ -= taken;
        if (entry.next_row == entry.request->view.rows) {
          Forget(entry);
          it = entries->erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  return segments;
}

bool RequestQueue::ShouldWait(int64_t rows, QueueClock::time_point oldest,
                              QueueClock::time_point now) const {
  if (policy_.max_queue_delay.count() == 0 || now >= oldest + policy_.max_queue_delay) {
    return false;
  }
  const std::vector<int64_t>& preferred = policy_.preferred_batch_sizes;
  if (std::find(preferred.begin(), preferred.end(), rows) != preferred.end()) return false;
  const int64_t target = preferred.empty()
                             ? planner_->batch_sizes().back()
                             : *std::max_element(preferred.begin(), preferred.end());
  return rows < target;
}

std::optional<FormedChunk> RequestQueue::Pop(QueueClock::time_point now,
                                             std::optional<QueueClock::time_point>* wake_at) {
  if (wake_at != nullptr) wake_at->reset();
  if (empty()) return std::nullopt;
  int64_t rows = 0;  // what the next chunk plans for
  QueueClock::time_point oldest = now;
  // The bucket of the oldest request: what the chunk runs at (Note [Chunks
  // of one bucket]).
  size_t bucket = 0;
  ForEachInOrder([&](const Entry& entry) {
    bucket = entry.request->bucket;
    return false;
  });
  if (policy_.merge) {
    int64_t passed = 0;  // longer requests left for a later chunk
    ForEachInOrder([&](const Entry& entry) {
      if (entry.request->bucket > bucket) return ++passed < planner_->max_rows();
      rows += entry.request->view.rows - entry.next_row;
      oldest = std::min(oldest, entry.enqueued);
      return rows < planner_->max_rows();
    });
    rows = std::min(rows, planner_->max_rows());
    if (ShouldWait(rows, oldest, now)) {
      if (wake_at != nullptr) *wake_at = oldest + policy_.max_queue_delay;
      return std::nullopt;
    }
  } else {
    ForEachInOrder([&](const Entry& entry) {
      rows = entry.request->view.rows - entry.next_row;
      return false;  // the front request alone
    });
  }
  const PlannedChunk planned = planner_->FirstChunk(rows, bucket);
  FormedChunk chunk{.batch_size = planned.batch_size,
                    .rows = planned.rows,
                    .demand_rows = policy_.merge ? rows : 0};
  chunk.segments = TakeRows(planned.rows, bucket);
  return chunk;
}

void RequestQueue::Forget(const Entry& entry) {
  // Only waiting entries hold deadlines (a delayed one lost its own).
  if (entry.deadline.has_value()) --with_deadline_;
  if (entry.call != nullptr) --with_call_;
}

void RequestQueue::RemoveAbandoned(QueueClock::time_point now,
                                   std::vector<RefusedRows>* refused) {
  if (with_call_ == 0) return;
  int64_t live_rows = 0;  // rows the next chunk may take, so far
  for (Level& level : levels_) {
    for (std::deque<Entry>* entries : {&level.waiting, &level.delayed}) {
      for (auto it = entries->begin(); it != entries->end();) {
        if (live_rows >= planner_->max_rows()) return;
        const int64_t rows = it->request->view.rows - it->next_row;
        absl::Status status =
            it->call != nullptr ? it->call->Check(now) : absl::OkStatus();
        if (status.ok()) {
          live_rows += rows;
          ++it;
          continue;
        }
        queued_rows_ -= rows;
        Forget(*it);
        refused->push_back({std::move(it->request), rows, it->enqueued, std::move(status)});
        it = entries->erase(it);
      }
    }
  }
}

std::vector<RefusedRows> RequestQueue::RemoveExpired(QueueClock::time_point now) {
  std::vector<RefusedRows> refused;
  RemoveAbandoned(now, &refused);  // Note [Rows nobody waits for]
  if (with_deadline_ == 0) return refused;  // Note [A deep queue stays cheap]
  // Rows already running cannot be taken back: a started request runs on.
  const auto expired = [now](const Entry& entry) {
    return entry.deadline.has_value() && *entry.deadline <= now && entry.next_row == 0;
  };
  for (size_t l = 0; l < levels_.size(); ++l) {
    Level& level = levels_[l];
    if (std::none_of(level.waiting.begin(), level.waiting.end(), expired)) continue;
    const bool reject =
        policy_.levels[l].timeout_action == LevelPolicy::TimeoutAction::kReject;
    std::deque<Entry> kept;
    for (Entry& entry : level.waiting) {
      if (!expired(entry)) {
        kept.push_back(std::move(entry));
        continue;
      }
      if (reject) {
        Forget(entry);
        const int64_t rows = entry.request->view.rows;
        queued_rows_ -= rows;
        refused.push_back({std::move(entry.request), rows, entry.enqueued});
      } else {
        --with_deadline_;
        entry.deadline.reset();
        level.delayed.push_back(std::move(entry));
      }
    }
    level.waiting = std::move(kept);
  }
  return refused;
}

std::vector<RefusedRows> RequestQueue::RemoveAll() {
  std::vector<RefusedRows> refused;
  for (Level& level : levels_) {
    for (std::deque<Entry>* entries : {&level.waiting, &level.delayed}) {
      for (Entry& entry : *entries) {
        refused.push_back(
            {entry.request, entry.request->view.rows - entry.next_row, entry.enqueued});
      }
      entries->clear();
    }
  }
  queued_rows_ = 0;
  with_deadline_ = 0;
  with_call_ = 0;
  return refused;
}

std::optional<QueueClock::time_point> RequestQueue::next_deadline() const {
  std::optional<QueueClock::time_point> earliest;
  if (with_deadline_ == 0) return earliest;  // Note [A deep queue stays cheap]
  for (const Level& level : levels_) {
    for (const Entry& entry : level.waiting) {
      if (entry.deadline.has_value() && entry.next_row == 0 &&
          (!earliest.has_value() || *entry.deadline < *earliest)) {
        earliest = entry.deadline;
      }
    }
  }
  return earliest;
}

}  // namespace graphserve
