#include "server/eager_fallback.h"

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/host/host_executor.h"
#include "server/masked_model_testing.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The masked sequence model served at one bucket of 8, eagerly up to 48.
MaskedModel LoadMasked() {
  return LoadMaskedModel(R"pb(capture {
                                shape_dims: "sequence"
                                buckets { extents: 8 }
                                eager_extents: 48
                              })pb");
}

// One request of `rows` at `length`: its inputs (a mask admitting every
// position), the rows' output buffer, and the host reference's answer at
// exactly that shape.
struct EagerRequest {
  std::vector<float> x;
  std::vector<int64_t> mask;
  std::vector<float> y;
  std::vector<float> want;
  std::shared_ptr<const ValidatedRequest> validated;

  EagerRequest(const Model& model, int64_t rows, int64_t length) {
    x.resize(rows * length * 16);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.25f - 1.0f;
    mask.assign(rows * length, 1);
    y.assign(x.size(), 0.0f);
    auto request = std::make_shared<ValidatedRequest>();
    request->view.rows = rows;
    request->extents = {length};
    const auto positions = static_cast<size_t>(length);
    request->view.inputs = {
        {reinterpret_cast<const std::byte*>(x.data()), positions * 16 * sizeof(float)},
        {reinterpret_cast<const std::byte*>(mask.data()), positions * sizeof(int64_t)}};
    validated = std::move(request);

    want = MaskedReference(model, rows, length, x, mask);
  }

  std::vector<std::byte*> outputs() { return {reinterpret_cast<std::byte*>(y.data())}; }
};

// Submit returns at once; the worker, a thread of its own, runs the queued
// requests one at a time in arrival order and answers each as the host
// reference at its own extents.
TEST(EagerFallbackTest, RunsTheQueueInOrderOnItsOwnThread) {
  const MaskedModel masked = LoadMasked();
  std::vector<std::unique_ptr<EagerRequest>> requests;
  for (const auto& [rows, length] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 40}, {3, 20}, {1, 40}, {2, 48}}) {
    requests.push_back(std::make_unique<EagerRequest>(*masked.model, rows, length));
  }
  absl::Mutex mu;
  std::vector<int> answered;
  std::vector<std::thread::id> threads;
  absl::BlockingCounter done(static_cast<int>(requests.size()));
  // Declared after what its worker touches, so that it is destroyed, and
  // its worker joined, first.
  EagerFallback eager(masked.model, HostExecutorFactory());
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(eager
                    .Submit(masked.interface, requests[i]->validated, requests[i]->outputs(),
                            [&, i](const absl::Status& status, const ChunkTiming& timing) {
                              EXPECT_TRUE(status.ok()) << status;
                              EXPECT_GT(timing.infer_ns, 0u);
                              absl::MutexLock lock(&mu);
                              answered.push_back(static_cast<int>(i));
                              threads.push_back(std::this_thread::get_id());
                              done.DecrementCount();
                            })
                    .ok());
  }
  done.Wait();
  EXPECT_THAT(answered, ElementsAre(0, 1, 2, 3));
  for (const std::thread::id& thread : threads) {
    EXPECT_EQ(thread, threads.front());
    EXPECT_NE(thread, std::this_thread::get_id());
  }
  for (const std::unique_ptr<EagerRequest>& request : requests) {
    EXPECT_EQ(request->y, request->want);
  }
}

// Draining past its deadline answers what is still queued Unavailable, each
// request exactly once, waits for the one running, and refuses what comes
// after. The first request's answer holds the worker until the rest have
// been abandoned.
TEST(EagerFallbackTest, DrainAnswersEveryQueuedRequestAndRefusesNewOnes) {
  const MaskedModel masked = LoadMasked();
  constexpr int kRequests = 12;
  std::vector<std::unique_ptr<EagerRequest>> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.push_back(std::make_unique<EagerRequest>(*masked.model, 1, 40));
  }
  absl::Notification first_running;
  absl::Notification release_first;
  absl::Mutex mu;
  int ran = 0;
  int abandoned = 0;
  EagerFallback eager(masked.model, HostExecutorFactory());
  for (const std::unique_ptr<EagerRequest>& request : requests) {
    ASSERT_TRUE(eager
                    .Submit(masked.interface, request->validated, request->outputs(),
                            [&](const absl::Status& status, const ChunkTiming&) {
                              if (status.ok()) {
                                first_running.Notify();
                                release_first.WaitForNotification();
                                absl::MutexLock lock(&mu);
                                ++ran;
                                return;
                              }
                              EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
                              EXPECT_THAT(status.message(), HasSubstr("exit timeout passed"));
                              absl::MutexLock lock(&mu);
                              ++abandoned;
                            })
                    .ok());
  }
  first_running.WaitForNotification();
  std::thread drain([&] { eager.Drain(EagerFallback::Clock::now()); });
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* count) { return *count == kRequests - 1; }, &abandoned));
  }
  release_first.Notify();
  drain.join();  // returns once the running request is answered
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(ran, 1);
    EXPECT_EQ(abandoned, kRequests - 1);
  }
  EXPECT_EQ(requests[0]->y, requests[0]->want);
  const absl::Status refused =
      eager.Submit(masked.interface, requests[1]->validated, requests[1]->outputs(),
                   [](const absl::Status&, const ChunkTiming&) { ADD_FAILURE() << "answered"; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphserve
