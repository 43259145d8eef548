#pragma once
// The stream pool: M slots (a GraphSet's streams, or host worker threads),
// one worker thread per slot, fed from one bounded queue of chunks. A chunk
// takes the next free slot; when all are busy it waits in the queue; when
// the queue is full the request is refused as a whole (RESOURCE_EXHAUSTED),
// so a request is never half accepted. Consecutive chunks of one request go
// to different idle workers, so they run in parallel on different streams.
//
// Threads: Submit is called from gRPC threads and never blocks on the GPU;
// each worker runs its slot's chunks one at a time and calls the chunk's
// `done` on its own thread, where the response is finished.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/chunk_runner.h"

namespace graphserve {

struct StreamPoolOptions {
  // Chunks that may wait for a slot. Beyond this a Submit is refused with
  // ResourceExhausted: back-pressure instead of unbounded latency.
  size_t max_queued_chunks = 1024;
  // How long an idle worker polls the queue before it sleeps. Waking a
  // sleeping thread costs tens of microseconds on an idle core, as much as
  // a whole small-batch replay; a worker that polls briefly after each
  // chunk picks up the next one at once under load. 0: sleep at once.
  std::chrono::microseconds idle_spin{50};
};

class StreamPool {
 public:
  using Clock = std::chrono::steady_clock;
  // Called exactly once per task, on a worker thread, with the chunk's
  // outcome, its time in the queue and where its run's time went.
  using DoneCallback =
      std::function<void(const absl::Status&, Clock::duration queued, const ChunkTiming&)>;
  struct Task {
    ChunkJob job;
    DoneCallback done;
  };

  // Starts one worker per runner slot; each calls PrepareWorkerThread before
  // its first chunk. Takes ownership of the runner.
  static absl::StatusOr<std::unique_ptr<StreamPool>> Create(std::unique_ptr<ChunkRunner> runner,
                                                            const StreamPoolOptions& options);

  // Queues all of `tasks` or none: ResourceExhausted (naming the limit) when
  // the queue lacks room for them all, Unavailable once Drain has begun.
  // When it fails no `done` is called.
  absl::Status Submit(std::vector<Task> tasks);

  // Stops accepting, runs every chunk already accepted, joins the workers.
  // Idempotent; the destructor calls it.
  void Drain();
  ~StreamPool();

  [[nodiscard]] const ChunkRunner& runner() const { return *runner_; }
  [[nodiscard]] int num_slots() const { return runner_->num_slots(); }

  // Implementation details follow.
 private:
  struct Queued {
    Task task;
    Clock::time_point enqueued;
  };
  StreamPool(std::unique_ptr<ChunkRunner> runner, const StreamPoolOptions& options);
  void WorkerLoop(int slot);

  const std::unique_ptr<ChunkRunner> runner_;
  const StreamPoolOptions options_;
  std::mutex mu_;
  std::condition_variable work_available_;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  // queue_.size(), readable without the lock: what idle workers poll.
  std::atomic<size_t> queued_{0};
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  // Teardown order: Drain sets draining_ under mu_, wakes every worker, and
  // joins them; a worker exits only once draining_ is set and the queue is
  // empty, so accepted chunks always run. The runner outlives the workers.
  std::vector<std::thread> workers_;
};

}  // namespace graphserve
