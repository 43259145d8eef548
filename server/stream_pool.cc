#include "server/stream_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace graphserve {

absl::StatusOr<std::unique_ptr<StreamPool>> StreamPool::Create(std::unique_ptr<ChunkRunner> runner,
                                                               const StreamPoolOptions& options) {
  if (runner == nullptr || runner->num_slots() < 1) {
    return absl::InvalidArgumentError("a stream pool needs a runner with at least one slot");
  }
  if (options.max_queued_chunks < 1) {
    return absl::InvalidArgumentError("a stream pool needs max_queued_chunks >= 1");
  }
  return std::unique_ptr<StreamPool>(new StreamPool(std::move(runner), options));
}

StreamPool::StreamPool(std::unique_ptr<ChunkRunner> runner, const StreamPoolOptions& options)
    : runner_(std::move(runner)), options_(options) {
  for (int slot = 0; slot < runner_->num_slots(); ++slot) {
    workers_.emplace_back([this, slot] { WorkerLoop(slot); });
  }
}

StreamPool::~StreamPool() { Drain(); }

absl::Status StreamPool::Submit(std::vector<Task> tasks) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return absl::UnavailableError("the server is shutting down");
    if (queue_.size() + tasks.size() > options_.max_queued_chunks) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the model's queue is full (", queue_.size(), " chunks waiting, limit ",
          options_.max_queued_chunks, "); retry later or add streams"));
    }
    const Clock::time_point now = Clock::now();
    for (Task& task : tasks) queue_.push_back({std::move(task), now});
    queued_.store(queue_.size(), std::memory_order_release);
  }
  if (tasks.size() == 1) {
    work_available_.notify_one();
  } else {
    work_available_.notify_all();
  }
  return absl::OkStatus();
}

void StreamPool::Drain() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  work_available_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

void StreamPool::WorkerLoop(int slot) {
  const absl::Status prepared = runner_->PrepareWorkerThread(slot);
  if (!prepared.ok()) spdlog::error("stream slot {}: {}", slot, prepared.ToString());
  while (true) {
    Queued queued;
    const Clock::time_point spin_end = Clock::now() + options_.idle_spin;
    while (queued_.load(std::memory_order_acquire) == 0 && Clock::now() < spin_end) {
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_available_.wait(lock, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return draining_ || !queue_.empty();
      });
      if (queue_.empty()) return;  // draining, and every accepted chunk has run
      queued = std::move(queue_.front());
      queue_.pop_front();
      queued_.store(queue_.size(), std::memory_order_release);
    }
    const Clock::duration waited = Clock::now() - queued.enqueued;
    ChunkTiming timing;
    // A slot whose thread could not be prepared fails its chunks rather than
    // running them on the wrong device.
    const absl::Status status =
        prepared.ok() ? runner_->Run(slot, queued.task.job, &timing) : prepared;
    queued.task.done(status, waited, timing);
  }
}

}  // namespace graphserve
