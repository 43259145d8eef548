#include "server/stream_pool.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// A runner whose chunks take `delay` and record which slot ran them and how
// many ran at once.
class RecordingRunner : public ChunkRunner {
 public:
  RecordingRunner(int slots, std::chrono::milliseconds delay) : slots_(slots), delay_(delay) {}
  int num_slots() const override { return slots_; }
  absl::Status PrepareWorkerThread(int) override { return absl::OkStatus(); }
  absl::Status Run(int slot, const ChunkJob& job, ChunkTiming* timing) override {
    const int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(delay_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_used_.insert(slot);
    }
    timing->infer_ns = 1;
    --running_;
    if (job.chunk.rows < 0) return absl::InternalError("negative rows");
    return absl::OkStatus();
  }
  std::string description() const override { return "recording"; }

  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};
  std::mutex mu_;
  std::set<int> slots_used_;

 private:
  const int slots_;
  const std::chrono::milliseconds delay_;
};

StreamPool::Task MakeTask(int64_t rows, std::atomic<int>* ok, std::atomic<int>* failed) {
  StreamPool::Task task;
  task.job.chunk = {4, 0, rows};
  task.done = [ok, failed](const absl::Status& status, StreamPool::Clock::duration,
                           const ChunkTiming&) { ++(status.ok() ? *ok : *failed); };
  return task;
}

TEST(StreamPool, ChunksOfOneRequestRunInParallelOnDifferentSlots) {
  constexpr int kSlots = 3;
  auto runner = std::make_unique<RecordingRunner>(kSlots, std::chrono::milliseconds(50));
  RecordingRunner* recording = runner.get();
  auto pool = StreamPool::Create(std::move(runner), {});
  ASSERT_TRUE(pool.ok());
  std::atomic<int> ok{0}, failed{0};
  std::vector<StreamPool::Task> tasks;
  for (int i = 0; i < kSlots; ++i) tasks.push_back(MakeTask(1, &ok, &failed));
  ASSERT_TRUE((*pool)->Submit(std::move(tasks)).ok());
  (*pool)->Drain();
  EXPECT_EQ(ok.load(), kSlots);
  EXPECT_EQ(recording->max_running_.load(), kSlots);
  EXPECT_EQ(recording->slots_used_.size(), static_cast<size_t>(kSlots));
}

TEST(StreamPool, FullQueueRefusesAWholeRequestAndCallsNoCallback) {
  auto runner = std::make_unique<RecordingRunner>(1, std::chrono::milliseconds(100));
  StreamPoolOptions options;
  options.max_queued_chunks = 3;  // room for one waiting request of three chunks
  auto pool = StreamPool::Create(std::move(runner), options);
  ASSERT_TRUE(pool.ok());
  std::atomic<int> ok{0}, failed{0};
  std::vector<StreamPool::Task> first;
  for (int i = 0; i < 3; ++i) first.push_back(MakeTask(1, &ok, &failed));
  ASSERT_TRUE((*pool)->Submit(std::move(first)).ok());
  std::vector<StreamPool::Task> second;
  for (int i = 0; i < 3; ++i) second.push_back(MakeTask(1, &ok, &failed));
  const absl::Status refused = (*pool)->Submit(std::move(second));
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  (*pool)->Drain();
  EXPECT_EQ(ok.load(), 3);  // the first request, whole; nothing of the second
  EXPECT_EQ(failed.load(), 0);
}

TEST(StreamPool, DrainRunsEveryAcceptedChunkThenRefuses) {
  auto runner = std::make_unique<RecordingRunner>(2, std::chrono::milliseconds(5));
  auto pool = StreamPool::Create(std::move(runner), {});
  ASSERT_TRUE(pool.ok());
  std::atomic<int> ok{0}, failed{0};
  constexpr int kChunks = 40;
  for (int i = 0; i < kChunks; ++i) {
    std::vector<StreamPool::Task> tasks;
    tasks.push_back(MakeTask(1, &ok, &failed));
    ASSERT_TRUE((*pool)->Submit(std::move(tasks)).ok());
  }
  (*pool)->Drain();
  EXPECT_EQ(ok.load(), kChunks);
  std::vector<StreamPool::Task> late;
  late.push_back(MakeTask(1, &ok, &failed));
  EXPECT_EQ((*pool)->Submit(std::move(late)).code(), absl::StatusCode::kUnavailable);
}

TEST(StreamPool, RunnerErrorsReachTheCallback) {
  auto runner = std::make_unique<RecordingRunner>(1, std::chrono::milliseconds(0));
  auto pool = StreamPool::Create(std::move(runner), {});
  ASSERT_TRUE(pool.ok());
  std::atomic<int> ok{0}, failed{0};
  std::vector<StreamPool::Task> tasks;
  tasks.push_back(MakeTask(-1, &ok, &failed));
  ASSERT_TRUE((*pool)->Submit(std::move(tasks)).ok());
  (*pool)->Drain();
  EXPECT_EQ(failed.load(), 1);
}

}  // namespace
}  // namespace graphserve
