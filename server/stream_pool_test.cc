#include "server/stream_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using std::chrono::milliseconds;

// A runner whose chunks take `delay`, compute out = 2 * in on one float per
// row, and record which slot ran them, how many ran at once and the chunks'
// sizes.
class RecordingRunner : public ChunkRunner {
 public:
  RecordingRunner(int slots, milliseconds delay) : slots_(slots), delay_(delay) {}
  int num_slots() const override { return slots_; }
  absl::Status PrepareWorkerThread(int) override { return absl::OkStatus(); }
  // Runs the whole chunk (depth 1).
  absl::Status Start(int slot, int /*staging*/, const ChunkJob& job,
                     ChunkTiming* timing) override {
    const int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(delay_);
    std::vector<float> batch(static_cast<size_t>(job.key.batch_size));
    GatherInputRows(
        job, 1, [&](size_t) { return reinterpret_cast<std::byte*>(batch.data()); }, AllStaged);
    for (float& value : batch) value *= 2;
    ScatterOutputRows(
        job, 1, [&](size_t) { return reinterpret_cast<const std::byte*>(batch.data()); },
        AllStaged);
    {
      absl::MutexLock lock(&mu_);
      slots_used_.insert(slot);
      chunk_rows_.push_back(job.rows);
      threads_.push_back(std::this_thread::get_id());
    }
    timing->infer_ns = 1;
    --running_;
    if (job.rows > job.key.batch_size) return absl::InternalError("rows beyond the batch");
    if (fail_) return absl::InternalError("the runner failed");
    return absl::OkStatus();
  }
  absl::Status Finish(int, int, const ChunkJob&, ChunkTiming*) override {
    return absl::OkStatus();
  }
  std::string description() const override { return "recording"; }

  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};
  std::atomic<bool> fail_{false};
  absl::Mutex mu_;
  std::set<int> slots_used_;
  std::vector<int64_t> chunk_rows_;
  std::vector<std::thread::id> threads_;  // that ran each chunk

 private:
  const int slots_;
  const milliseconds delay_;
};

// Waits until `runner` runs a chunk (for a second at most), rather than
// guessing how long another thread takes to start one.
void WaitUntilAChunkRuns(const RecordingRunner& runner) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (runner.running_.load() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  ASSERT_GT(runner.running_.load(), 0) << "no chunk started within a second";
}

// A runner of depth 2 that stands for a GPU stream: Start computes the
// chunk into the staging buffer's outputs and gives it a completion time
// `delay` after the slot's previous chunk completes (stream order); Finish
// sleeps until then and copies the rows out. Records what happened, in
// order.
class PipelinedRunner : public ChunkRunner {
 public:
  explicit PipelinedRunner(milliseconds delay) : delay_(delay) {}
  int num_slots() const override { return 1; }
  int depth() const override { return 2; }
  bool StartsBehindRunning(int64_t batch_size) const override {
    return batch_size >= min_size_behind_;
  }
  // The worker starts once the test says go: requests submitted before are
  // all queued when it takes its first chunk.
  absl::Status PrepareWorkerThread(int) override {
    go_.get_future().wait();
    return absl::OkStatus();
  }
  void Go() { go_.set_value(); }
  absl::Status Start(int, int staging, const ChunkJob& job, ChunkTiming*) override {
    std::vector<float>& out = outputs_[staging];
    out.assign(static_cast<size_t>(job.key.batch_size), 0);
    GatherInputRows(
        job, 1, [&](size_t) { return reinterpret_cast<std::byte*>(out.data()); }, AllStaged);
    for (float& value : out) value *= 2;
    const auto now = std::chrono::steady_clock::now();
    done_at_[staging] = std::max(now, last_done_) + delay_;
    last_done_ = done_at_[staging];
    absl::MutexLock lock(&mu_);
    in_flight_ += 1;
    max_in_flight_ = std::max(max_in_flight_, in_flight_);
    events_.push_back("start " + std::to_string(staging));
    return absl::OkStatus();
  }
  absl::Status Finish(int, int staging, const ChunkJob& job, ChunkTiming*) override {
    std::this_thread::sleep_until(done_at_[staging]);
    ScatterOutputRows(
        job, 1,
        [&](size_t) { return reinterpret_cast<const std::byte*>(outputs_[staging].data()); },
        AllStaged);
    absl::MutexLock lock(&mu_);
    in_flight_ -= 1;
    events_.push_back("finish " + std::to_string(staging));
    return absl::OkStatus();
  }
  std::string description() const override { return "pipelined"; }

  int64_t min_size_behind_ = 1;  // chunks this large start behind a running one
  absl::Mutex mu_;
  std::vector<std::string> events_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;

 private:
  const milliseconds delay_;
  std::promise<void> go_;
  // Touched by the slot's one thread only.
  std::vector<float> outputs_[2];
  std::chrono::steady_clock::time_point done_at_[2];
  std::chrono::steady_clock::time_point last_done_;
};

// One float in, one float out per row, one bucket.
const RowLayout kLayout{.buckets = {{}},
                        .rows = {RowShape{.inputs = {TensorRowOf({}, sizeof(float))},
                                          .outputs = {TensorRowOf({}, sizeof(float))}}}};

// One request of `rows` float rows 0, 1, ...; counts its rows by status.
struct Request {
  explicit Request(int64_t rows) : in(static_cast<size_t>(rows)), out(in.size(), -1) {
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    auto queued = std::make_shared<QueuedRows>();
    queued->view.rows = rows;
    queued->view.inputs = {{reinterpret_cast<const std::byte*>(in.data()), sizeof(float)}};
    queued->view.outputs = {{reinterpret_cast<std::byte*>(out.data()), sizeof(float)}};
    queued->on_segment = [this](int64_t n, const absl::Status& status, StreamPool::Clock::duration,
                                const ChunkTiming&, SegmentEnd end) {
      (status.ok() ? ok_rows : failed_rows) += n;
      if (!status.ok()) {
        last_error = status.code();
        last_failure_ran = end == SegmentEnd::kRan;
      }
    };
    this->queued = queued;
  }
  bool Doubled() const {
    for (size_t i = 0; i < in.size(); ++i) {
      if (out[i] != 2 * in[i]) return false;
    }
    return true;
  }
  std::vector<float> in, out;
  std::shared_ptr<const QueuedRows> queued;
  std::atomic<int64_t> ok_rows{0}, failed_rows{0};
  std::atomic<absl::StatusCode> last_error{absl::StatusCode::kOk};
  // Whether the last failed segment was run (a runner error) or refused.
  std::atomic<bool> last_failure_ran{false};
};

// Options for a pool whose chunks run on its workers only: the tests that
// submit several requests from one thread stand for several clients, and
// with run_on_caller each Submit would run its own chunk before returning.
StreamPoolOptions WorkersOnly() {
  StreamPoolOptions options;
  options.run_on_caller = false;
  return options;
}

std::unique_ptr<StreamPool> MakePool(std::unique_ptr<ChunkRunner> runner,
                                     std::vector<int64_t> sizes,
                                     StreamPoolOptions options = WorkersOnly()) {
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(BatchOnlyKeys(sizes), {}, 1024);
  EXPECT_TRUE(planner.ok());
  absl::StatusOr<std::unique_ptr<StreamPool>> pool =
      StreamPool::Create(std::move(runner), *std::move(planner), kLayout, std::move(options));
  EXPECT_TRUE(pool.ok()) << pool.status();
  return *std::move(pool);
}

TEST(StreamPool, ASplitRequestRunsInParallelOnDifferentSlots) {
  constexpr int kSlots = 3;
  auto runner = std::make_unique<RecordingRunner>(kSlots, milliseconds(50));
  RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {4});
  Request request(12);  // three chunks of 4
  ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  pool->Drain();
  EXPECT_EQ(request.ok_rows.load(), 12);
  EXPECT_TRUE(request.Doubled());
  EXPECT_EQ(recording->max_running_.load(), kSlots);
  EXPECT_EQ(recording->slots_used_.size(), static_cast<size_t>(kSlots));
}

TEST(StreamPool, RequestsQueuedWhileTheSlotIsBusyRunMergedWithDynamicBatching) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(30));
  RecordingRunner* recording = runner.get();
  StreamPoolOptions options = WorkersOnly();
  options.queue.merge = true;
  std::atomic<int> executions{0};
  options.on_chunk = [&](int, const FormedChunk&, size_t, const absl::Status&,
                         const ChunkTiming&) {
    ++executions;
  };
  auto pool = MakePool(std::move(runner), {1, 2, 4, 8, 16}, std::move(options));
  std::vector<std::unique_ptr<Request>> requests;
  for (int64_t rows : {1, 3, 2, 5, 1}) requests.push_back(std::make_unique<Request>(rows));
  for (const auto& request : requests) ASSERT_TRUE(pool->Submit(request->queued, {}).ok());
  pool->Drain();
  for (const auto& request : requests) {
    EXPECT_EQ(request->ok_rows.load(), static_cast<int64_t>(request->in.size()));
    EXPECT_TRUE(request->Doubled());
  }
  // The first request may start alone; the rest queued behind it and merged.
  EXPECT_LE(executions.load(), 2);
  int64_t rows = 0;
  for (int64_t chunk_rows : recording->chunk_rows_) rows += chunk_rows;
  EXPECT_EQ(rows, 12);
}

TEST(StreamPool, APlannerOfOtherBucketsIsRefused) {
  // A request's bucket indexes the layout and the planner alike.
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create({{4, {16}}, {4, {64}}}, {}, 16);
  ASSERT_TRUE(planner.ok()) << planner.status();
  absl::StatusOr<std::unique_ptr<StreamPool>> pool =
      StreamPool::Create(std::make_unique<RecordingRunner>(1, milliseconds(0)), *std::move(planner),
                         kLayout, WorkersOnly());
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(pool.status().message().find("planner's buckets"), std::string::npos);
}

TEST(StreamPool, AFullQueueRefusesAWholeRequestAndReportsNothing) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(100));
  const RecordingRunner* recording = runner.get();
  StreamPoolOptions options = WorkersOnly();
  options.queue.max_queued_rows = 12;
  auto pool = MakePool(std::move(runner), {4}, std::move(options));
  Request first(12), second(12);
  ASSERT_TRUE(pool->Submit(first.queued, {}).ok());
  WaitUntilAChunkRuns(*recording);  // the first chunk is running, 8 rows queued
  const absl::Status refused = pool->Submit(second.queued, {});
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  pool->Drain();
  EXPECT_EQ(first.ok_rows.load(), 12);
  EXPECT_EQ(second.ok_rows.load() + second.failed_rows.load(), 0);
}

TEST(StreamPool, DrainRunsEveryAcceptedRequestThenRefuses) {
  auto runner = std::make_unique<RecordingRunner>(2, milliseconds(5));
  auto pool = MakePool(std::move(runner), {1});
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 40; ++i) {
    requests.push_back(std::make_unique<Request>(1));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  pool->Drain();
  for (const auto& request : requests) EXPECT_EQ(request->ok_rows.load(), 1);
  Request late(1);
  EXPECT_EQ(pool->Submit(late.queued, {}).code(), absl::StatusCode::kUnavailable);
}

TEST(StreamPool, ADrainDeadlineAnswersWhatIsStillQueuedUnavailable) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(20));
  auto pool = MakePool(std::move(runner), {1});
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 100; ++i) {  // 2 s of work
    requests.push_back(std::make_unique<Request>(1));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  const auto start = StreamPool::Clock::now();
  pool->Drain(start + milliseconds(100));
  EXPECT_LT(StreamPool::Clock::now() - start, milliseconds(1000));
  int ran = 0, refused = 0;
  for (const auto& request : requests) {
    ASSERT_EQ(request->ok_rows.load() + request->failed_rows.load(), 1);  // every one answered
    if (request->ok_rows.load() == 1) ++ran;
    if (request->failed_rows.load() == 1) {
      ++refused;
      EXPECT_EQ(request->last_error.load(), absl::StatusCode::kUnavailable);
      EXPECT_FALSE(request->last_failure_ran.load());
    }
  }
  EXPECT_GT(ran, 0);
  EXPECT_GT(refused, 0);
}

TEST(StreamPool, QueueTimeoutsAnswerUnavailable) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(100));
  StreamPoolOptions options = WorkersOnly();
  options.queue.levels[0].default_timeout = std::chrono::microseconds(20'000);
  auto pool = MakePool(std::move(runner), {1}, std::move(options));
  Request running(1), waiting(1);
  ASSERT_TRUE(pool->Submit(running.queued, {}).ok());
  std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(pool->Submit(waiting.queued, {}).ok());
  std::this_thread::sleep_for(milliseconds(60));  // timed out while the slot is busy
  EXPECT_EQ(waiting.failed_rows.load(), 1);
  EXPECT_EQ(waiting.last_error.load(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(waiting.last_failure_ran.load());  // refused, never run
  pool->Drain();
  EXPECT_EQ(running.ok_rows.load(), 1);
}

TEST(StreamPool, RunnerErrorsReachEverySegment) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(0));
  runner->fail_ = true;
  auto pool = MakePool(std::move(runner), {4});
  Request request(6);
  ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  pool->Drain();
  EXPECT_EQ(request.failed_rows.load(), 6);
  EXPECT_EQ(request.last_error.load(), absl::StatusCode::kInternal);
  EXPECT_TRUE(request.last_failure_ran.load());
}

// on_chunk names the slot that ran the chunk: the launches per stream
// metric is counted from it.
TEST(StreamPool, OnChunkNamesTheSlotThatRanIt) {
  constexpr int kSlots = 3;
  auto runner = std::make_unique<RecordingRunner>(kSlots, milliseconds(50));
  RecordingRunner* recording = runner.get();
  StreamPoolOptions options = WorkersOnly();
  absl::Mutex mu;
  std::set<int> slots;
  int chunks = 0;
  options.on_chunk = [&](int slot, const FormedChunk&, size_t, const absl::Status&,
                         const ChunkTiming&) {
    absl::MutexLock lock(&mu);
    slots.insert(slot);
    ++chunks;
  };
  auto pool = MakePool(std::move(runner), {4}, std::move(options));
  Request request(12);  // three chunks of 4, one per slot while each sleeps
  ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  pool->Drain();
  EXPECT_EQ(chunks, 3);
  EXPECT_EQ(slots, recording->slots_used_);
  EXPECT_EQ(slots, (std::set<int>{0, 1, 2}));
}

// Note [Chunks on the caller's thread]: a request that finds a slot idle is
// run, and answered, before Submit returns, on the submitting thread.
TEST(StreamPool, ARequestFindingAnIdleSlotRunsOnTheCallersThread) {
  auto runner = std::make_unique<RecordingRunner>(2, milliseconds(0));
  RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {1, 4}, StreamPoolOptions{});
  Request request(3);
  ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  EXPECT_EQ(request.ok_rows.load(), 3);  // answered already
  EXPECT_TRUE(request.Doubled());
  pool->Drain();
  ASSERT_EQ(recording->threads_.size(), 1u);
  EXPECT_EQ(recording->threads_[0], std::this_thread::get_id());
}

// A RecordingRunner whose workers start only once the test says go; the
// thread that made it, submitting as a caller, is never held.
class GatedRunner : public RecordingRunner {
 public:
  using RecordingRunner::RecordingRunner;
  absl::Status PrepareWorkerThread(int) override {
    if (std::this_thread::get_id() != test_thread_) go_.wait();
    return absl::OkStatus();
  }
  // Idempotent: a test's cleanup calls it again however the test ended.
  void Go() {
    std::call_once(went_, [this] { promise_.set_value(); });
  }

 private:
  const std::thread::id test_thread_ = std::this_thread::get_id();
  std::once_flag went_;
  std::promise<void> promise_;
  std::shared_future<void> go_ = promise_.get_future().share();
};

// Behind a backlog a request only queues, even with a slot idle: a caller
// that ran the queue's oldest chunk there turned every arrival into one
// chunk, and the backlog never drained (Note [Chunks on the caller's
// thread]). Here the worker has not started yet, so the slot stays idle
// with a request queued.
TEST(StreamPool, ARequestBehindQueuedOnesOnlyQueuesEvenWithASlotIdle) {
  auto runner = std::make_unique<GatedRunner>(1, milliseconds(0));
  GatedRunner* gated = runner.get();
  Request queued(1), behind(1);  // outlive the pool, which answers them
  auto pool = MakePool(std::move(runner), {1}, StreamPoolOptions{});
  // Declared after the pool, so gone before it: releases the worker before
  // the pool drains, even when an assertion below ends the test early.
  struct ReleaseWorkers {
    GatedRunner* runner;
    ~ReleaseWorkers() { runner->Go(); }
  } release{gated};
  {
    const StreamPool::QueueOnly queue_only;  // the backlog: one request queued
    ASSERT_TRUE(pool->Submit(queued.queued, {}).ok());
  }
  ASSERT_TRUE(pool->Submit(behind.queued, {}).ok());
  EXPECT_EQ(queued.ok_rows.load(), 0);  // neither ran on this thread
  EXPECT_EQ(behind.ok_rows.load(), 0);
  gated->Go();
  pool->Drain();
  EXPECT_TRUE(queued.Doubled());
  EXPECT_TRUE(behind.Doubled());
  ASSERT_EQ(gated->threads_.size(), 2u);
  EXPECT_NE(gated->threads_[0], std::this_thread::get_id());
  EXPECT_NE(gated->threads_[1], std::this_thread::get_id());
}

// A transport thread its queue's other calls wait on opens a QueueOnly
// scope: its request finds the slot idle yet is run by the slot's worker.
TEST(StreamPool, InsideQueueOnlyARequestIsRunByAWorkerEvenWithTheSlotIdle) {
  auto runner = std::make_unique<RecordingRunner>(2, milliseconds(0));
  RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {1, 4}, StreamPoolOptions{});
  Request request(3);
  {
    const StreamPool::QueueOnly queue_only;
    ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  }
  pool->Drain();
  EXPECT_EQ(request.ok_rows.load(), 3);
  EXPECT_TRUE(request.Doubled());
  ASSERT_EQ(recording->threads_.size(), 1u);
  EXPECT_NE(recording->threads_[0], std::this_thread::get_id());
}

// While a caller holds a slot its worker leaves it alone: a request arriving
// meanwhile waits for the slot (it is the only one) and never runs beside.
TEST(StreamPool, TheSlotACallerHoldsIsNotRunByItsWorker) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(100));
  RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {1}, StreamPoolOptions{});
  Request first(1), second(1);
  std::thread caller([&] { ASSERT_TRUE(pool->Submit(first.queued, {}).ok()); });
  WaitUntilAChunkRuns(*recording);  // the caller runs its chunk
  const auto queued_at = StreamPool::Clock::now();
  ASSERT_TRUE(pool->Submit(second.queued, {}).ok());
  EXPECT_LT(StreamPool::Clock::now() - queued_at, milliseconds(50));  // only queued
  caller.join();
  pool->Drain();
  EXPECT_EQ(first.ok_rows.load(), 1);
  EXPECT_EQ(second.ok_rows.load(), 1);
  EXPECT_EQ(recording->max_running_.load(), 1);
  ASSERT_EQ(recording->threads_.size(), 2u);
  EXPECT_NE(recording->threads_[1], std::this_thread::get_id());  // a worker ran it
}

// A split request: the caller runs one chunk, idle workers the others at
// the same time.
TEST(StreamPool, ASplitRequestsOtherChunksRunOnWorkersBesideTheCaller) {
  constexpr int kSlots = 3;
  auto runner = std::make_unique<RecordingRunner>(kSlots, milliseconds(50));
  RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {4}, StreamPoolOptions{});
  Request request(12);
  ASSERT_TRUE(pool->Submit(request.queued, {}).ok());
  pool->Drain();
  EXPECT_EQ(request.ok_rows.load(), 12);
  EXPECT_TRUE(request.Doubled());
  EXPECT_EQ(recording->max_running_.load(), kSlots);
}

TEST(StreamPool, DrainWaitsForTheChunkACallerRuns) {
  auto runner = std::make_unique<RecordingRunner>(1, milliseconds(100));
  const RecordingRunner* recording = runner.get();
  auto pool = MakePool(std::move(runner), {1}, StreamPoolOptions{});
  Request request(1);
  std::thread caller([&] { ASSERT_TRUE(pool->Submit(request.queued, {}).ok()); });
  WaitUntilAChunkRuns(*recording);  // the caller runs its chunk
  pool->Drain();
  EXPECT_EQ(request.ok_rows.load(), 1);
  caller.join();
}

// Note [Double-buffered staging]: with requests queued, the worker starts
// the next chunk through the other staging buffer before it waits for the
// running one; never more than two in flight, each answered correctly.
TEST(StreamPool, ADepthTwoRunnerGetsTheNextChunkStartedBeforeTheRunningOneFinishes) {
  auto runner = std::make_unique<PipelinedRunner>(milliseconds(20));
  PipelinedRunner* pipelined = runner.get();
  auto pool = MakePool(std::move(runner), {1, 2});
  std::vector<std::unique_ptr<Request>> requests;
  for (int64_t rows : {1, 2, 1, 2, 1}) {
    requests.push_back(std::make_unique<Request>(rows));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  pipelined->Go();
  pool->Drain();
  for (const auto& request : requests) {
    EXPECT_EQ(request->ok_rows.load(), static_cast<int64_t>(request->in.size()));
    EXPECT_TRUE(request->Doubled());
  }
  EXPECT_EQ(pipelined->max_in_flight_, 2);
  // The buffers alternate, and every chunk after the first started while
  // the one before it ran.
  EXPECT_EQ(pipelined->events_,
            (std::vector<std::string>{"start 0", "start 1", "finish 0", "start 0", "finish 1",
                                      "start 1", "finish 0", "start 0", "finish 1", "finish 0"}));
}

// A size the runner did not measure faster double-buffered waits for the
// running chunk to finish, and still starts right after it.
TEST(StreamPool, SizesNotFasterDoubleBufferedWaitForTheRunningChunk) {
  auto runner = std::make_unique<PipelinedRunner>(milliseconds(10));
  PipelinedRunner* pipelined = runner.get();
  pipelined->min_size_behind_ = 2;  // 1-row chunks do not start behind
  auto pool = MakePool(std::move(runner), {1, 2});
  std::vector<std::unique_ptr<Request>> requests;
  for (int64_t rows : {2, 1, 2, 2}) {
    requests.push_back(std::make_unique<Request>(rows));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  pipelined->Go();
  pool->Drain();
  for (const auto& request : requests) EXPECT_TRUE(request->Doubled());
  EXPECT_EQ(pipelined->events_,
            (std::vector<std::string>{"start 0", "finish 0", "start 1", "start 0", "finish 1",
                                      "start 1", "finish 0", "finish 1"}));
}

// A drain's deadline bounds a pipelining worker too: past it, what is still
// queued is answered UNAVAILABLE instead of started behind a running chunk.
TEST(StreamPool, ADrainDeadlineStopsAPipeliningWorker) {
  auto runner = std::make_unique<PipelinedRunner>(milliseconds(20));
  PipelinedRunner* pipelined = runner.get();
  auto pool = MakePool(std::move(runner), {1});
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 100; ++i) {  // 2 s of work
    requests.push_back(std::make_unique<Request>(1));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  pipelined->Go();
  const auto start = StreamPool::Clock::now();
  pool->Drain(start + milliseconds(100));
  EXPECT_LT(StreamPool::Clock::now() - start, milliseconds(1000));
  int refused = 0;
  for (const auto& request : requests) {
    ASSERT_EQ(request->ok_rows.load() + request->failed_rows.load(), 1);
    if (request->failed_rows.load() == 1) ++refused;
  }
  EXPECT_GT(refused, 50);
}

// With dynamic batching, rows that would not fill the largest size wait for
// the running chunk instead, so that more rows can merge into the next one.
TEST(StreamPool, WithDynamicBatchingOnlyAFullChunkStartsBehindTheRunningOne) {
  auto runner = std::make_unique<PipelinedRunner>(milliseconds(30));
  PipelinedRunner* pipelined = runner.get();
  StreamPoolOptions options = WorkersOnly();
  options.queue.merge = true;
  auto pool = MakePool(std::move(runner), {1, 2, 4}, std::move(options));
  Request first(1);
  ASSERT_TRUE(pool->Submit(first.queued, {}).ok());
  pipelined->Go();
  std::this_thread::sleep_for(milliseconds(10));  // the first chunk runs (usually)
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(std::make_unique<Request>(1));
    ASSERT_TRUE(pool->Submit(requests.back()->queued, {}).ok());
  }
  pool->Drain();
  EXPECT_TRUE(first.Doubled());
  for (const auto& request : requests) EXPECT_TRUE(request->Doubled());
  // Never 4 rows queued behind a running chunk: nothing started early, and
  // the rows merged (two chunks, or one if all four were queued at once).
  EXPECT_EQ(pipelined->max_in_flight_, 1);
  EXPECT_LE(pipelined->events_.size(), 4u);
}

}  // namespace
}  // namespace graphserve
