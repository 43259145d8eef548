#include "server/request_queue.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

using std::chrono::microseconds;

BatchPlanner Planner(std::vector<int64_t> sizes, int64_t max_rows = 64) {
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(BatchOnlyKeys(sizes), {}, max_rows);
  EXPECT_TRUE(planner.ok()) << planner.status();
  return *std::move(planner);
}

// A request of `rows` rows at the planner's bucket `bucket`.
std::shared_ptr<const QueuedRows> Rows(int64_t rows, size_t bucket = 0) {
  auto request = std::make_shared<QueuedRows>();
  request->view.rows = rows;
  request->bucket = bucket;
  return request;
}

// (request, first_row, rows) of each segment, for comparisons.
struct Seg {
  const QueuedRows* request;
  int64_t first_row;
  int64_t rows;
  friend bool operator==(const Seg&, const Seg&) = default;
};
std::vector<Seg> Segments(const FormedChunk& chunk) {
  std::vector<Seg> segments;
  for (const RowSegment& s : chunk.segments) {
    segments.push_back({s.request.get(), s.first_row, s.rows});
  }
  return segments;
}

const QueueClock::time_point kT0 = QueueClock::now();

TEST(RequestQueue, WithoutMergingALargeRequestIsSplitAsThePlannerPlansIt) {
  const BatchPlanner planner = Planner({1, 4, 16});
  RequestQueue queue(&planner, {});
  const auto request = Rows(40);
  ASSERT_TRUE(queue.Push(request, {}, kT0).ok());
  std::vector<FormedChunk> chunks;
  while (std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr)) chunks.push_back(*chunk);
  ASSERT_EQ(chunks.size(), 3u);
  const std::vector<PlannedChunk> plan = planner.Plan(40);
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].batch_size, plan[i].batch_size);
    EXPECT_EQ(chunks[i].rows, plan[i].rows);
    EXPECT_EQ(Segments(chunks[i]),
              (std::vector<Seg>{{request.get(), plan[i].first_row, plan[i].rows}}));
  }
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, WithoutMergingEveryChunkHoldsOneRequest) {
  const BatchPlanner planner = Planner({1, 4, 16});
  RequestQueue queue(&planner, {});
  const auto a = Rows(3), b = Rows(5);
  ASSERT_TRUE(queue.Push(a, {}, kT0).ok());
  ASSERT_TRUE(queue.Push(b, {}, kT0).ok());
  const std::optional<FormedChunk> first = queue.Pop(kT0, nullptr);
  const std::optional<FormedChunk> second = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->batch_size, 4);
  EXPECT_EQ(Segments(*first), (std::vector<Seg>{{a.get(), 0, 3}}));
  EXPECT_EQ(second->batch_size, 16);
  EXPECT_EQ(Segments(*second), (std::vector<Seg>{{b.get(), 0, 5}}));
  EXPECT_EQ(first->demand_rows, 0);  // Note [Demand rows]: only merging chunks say
}

TEST(RequestQueue, MergingRunsQueuedRequestsAsOneChunk) {
  const BatchPlanner planner = Planner({1, 4, 8});
  RequestQueue queue(&planner, {.merge = true});
  const auto a = Rows(3), b = Rows(5);
  ASSERT_TRUE(queue.Push(a, {}, kT0).ok());
  ASSERT_TRUE(queue.Push(b, {}, kT0).ok());
  const std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->batch_size, 8);
  EXPECT_EQ(chunk->rows, 8);
  EXPECT_EQ(Segments(*chunk), (std::vector<Seg>{{a.get(), 0, 3}, {b.get(), 0, 5}}));
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, AMergedRequestMayStraddleTwoChunks) {
  const BatchPlanner planner = Planner({4});
  RequestQueue queue(&planner, {.merge = true});
  const auto a = Rows(3), b = Rows(3);
  ASSERT_TRUE(queue.Push(a, {}, kT0).ok());
  ASSERT_TRUE(queue.Push(b, {}, kT0).ok());
  const std::optional<FormedChunk> first = queue.Pop(kT0, nullptr);
  const std::optional<FormedChunk> second = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(Segments(*first), (std::vector<Seg>{{a.get(), 0, 3}, {b.get(), 0, 1}}));
  EXPECT_EQ(second->rows, 2);
  EXPECT_EQ(Segments(*second), (std::vector<Seg>{{b.get(), 1, 2}}));
  // Note [Demand rows]: the first chunk could have merged all 6 queued rows
  // had a size that large been captured; the second, the 2 left.
  EXPECT_EQ(first->demand_rows, 6);
  EXPECT_EQ(second->demand_rows, 2);
}

// Note [Chunks of one bucket]: a merged chunk takes rows of its oldest
// request's bucket and smaller ones; a longer request waits until it is the
// oldest, then runs with whatever its bucket holds.
// Each size at three buckets, [16], [64] and [256]; `costs` one per key in
// the order (bucket, size), or none.
BatchPlanner BucketedPlanner(const std::vector<int64_t>& sizes, std::vector<double> costs = {}) {
  std::vector<GraphKey> keys;
  for (int64_t extent : {16, 64, 256}) {
    for (int64_t size : sizes) keys.push_back({size, {extent}});
  }
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(keys, std::move(costs), 64);
  EXPECT_TRUE(planner.ok()) << planner.status();
  return *std::move(planner);
}

TEST(RequestQueue, AMergedChunkTakesRowsOfItsOldestRequestsBucket) {
  const BatchPlanner planner = BucketedPlanner({1, 4, 8});
  RequestQueue queue(&planner, {.merge = true});
  const auto short_a = Rows(1, 0), long_b = Rows(1, 2), short_c = Rows(2, 0), middle_d = Rows(1, 1);
  for (const auto& request : {short_a, long_b, short_c, middle_d}) {
    ASSERT_TRUE(queue.Push(request, {}, kT0).ok());
  }
  const std::optional<FormedChunk> first = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(Segments(*first), (std::vector<Seg>{{short_a.get(), 0, 1}, {short_c.get(), 0, 2}}));
  // The long request is the oldest now: it takes the middle one along.
  const std::optional<FormedChunk> second = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(Segments(*second), (std::vector<Seg>{{long_b.get(), 0, 1}, {middle_d.get(), 0, 1}}));
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, AChunkIsPlannedWithItsBucketsCosts) {
  // 6 rows: at [16] one launch of 8 (10 us) beats 4 + 4 (12 us); at [64]
  // 8 costs 20 us, so the chunk is 4 rows and 2 stay queued.
  const BatchPlanner planner = BucketedPlanner({4, 8}, {6, 10, 6, 20, 6, 40});
  RequestQueue queue(&planner, {.merge = true});
  ASSERT_TRUE(queue.Push(Rows(6, 0), {}, kT0).ok());
  const std::optional<FormedChunk> short_chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(short_chunk);
  EXPECT_EQ(short_chunk->batch_size, 8);
  EXPECT_EQ(short_chunk->rows, 6);
  ASSERT_TRUE(queue.Push(Rows(6, 1), {}, kT0).ok());
  const std::optional<FormedChunk> long_chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(long_chunk);
  EXPECT_EQ(long_chunk->batch_size, 4);
  EXPECT_EQ(long_chunk->rows, 4);
}

TEST(RequestQueue, MergingFollowsTheCostTable) {
  // Size 8 costs as much as two launches of 4: 6 rows run as 4 + 2 rows
  // padded to 4 only if that is cheaper; here 8 (10 us) beats 4 + 4 (12 us).
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(BatchOnlyKeys({4, 8}), {6, 10}, 64);
  ASSERT_TRUE(planner.ok());
  RequestQueue queue(&*planner, {.merge = true});
  ASSERT_TRUE(queue.Push(Rows(2), {}, kT0).ok());
  ASSERT_TRUE(queue.Push(Rows(4), {}, kT0).ok());
  const std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->batch_size, 8);
  EXPECT_EQ(chunk->rows, 6);
}

TEST(RequestQueue, AFreeSlotWaitsUpToMaxQueueDelayForAFullerBatch) {
  const BatchPlanner planner = Planner({1, 8});
  RequestQueue queue(&planner, {.merge = true, .max_queue_delay = microseconds(100)});
  ASSERT_TRUE(queue.Push(Rows(3), {}, kT0).ok());
  std::optional<QueueClock::time_point> wake_at;
  EXPECT_FALSE(queue.Pop(kT0 + microseconds(10), &wake_at));
  ASSERT_TRUE(wake_at);
  EXPECT_EQ(*wake_at, kT0 + microseconds(100));
  ASSERT_TRUE(queue.Push(Rows(5), {}, kT0 + microseconds(20)).ok());
  // A full largest size goes at once.
  const std::optional<FormedChunk> chunk = queue.Pop(kT0 + microseconds(20), &wake_at);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->rows, 8);

  ASSERT_TRUE(queue.Push(Rows(2), {}, kT0 + microseconds(30)).ok());
  EXPECT_FALSE(queue.Pop(kT0 + microseconds(129), &wake_at));
  EXPECT_TRUE(queue.Pop(kT0 + microseconds(130), &wake_at));
}

TEST(RequestQueue, APreferredSizeGoesWithoutWaiting) {
  const BatchPlanner planner = Planner({1, 4, 8});
  RequestQueue queue(&planner, {.merge = true,
                                .max_queue_delay = microseconds(1000),
                                .preferred_batch_sizes = {4, 8}});
  ASSERT_TRUE(queue.Push(Rows(3), {}, kT0).ok());
  EXPECT_FALSE(queue.Pop(kT0, nullptr));
  ASSERT_TRUE(queue.Push(Rows(1), {}, kT0).ok());
  const std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->rows, 4);
}

TEST(RequestQueue, HigherPriorityLevelsAreServedFirst) {
  const BatchPlanner planner = Planner({1, 8});
  QueuePolicy policy;
  policy.levels = {LevelPolicy{}, LevelPolicy{}};
  policy.default_level = 2;
  RequestQueue queue(&planner, policy);
  const auto low = Rows(1), high = Rows(1), unset = Rows(1);
  ASSERT_TRUE(queue.Push(low, {.priority = 2}, kT0).ok());
  ASSERT_TRUE(queue.Push(unset, {}, kT0).ok());  // the default: level 2
  ASSERT_TRUE(queue.Push(high, {.priority = 1}, kT0).ok());
  std::vector<const QueuedRows*> order;
  while (std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr)) {
    order.push_back(chunk->segments[0].request.get());
  }
  EXPECT_EQ(order, (std::vector<const QueuedRows*>{high.get(), low.get(), unset.get()}));
}

TEST(RequestQueue, AFullLevelRefusesWithUnavailable) {
  const BatchPlanner planner = Planner({1});
  QueuePolicy policy;
  policy.levels[0].max_queue_size = 1;
  RequestQueue queue(&planner, policy);
  ASSERT_TRUE(queue.Push(Rows(1), {}, kT0).ok());
  const absl::Status refused = queue.Push(Rows(1), {}, kT0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.message().find("Exceeds maximum queue size"), std::string::npos);
  EXPECT_EQ(queue.queued_rows(), 1);
}

TEST(RequestQueue, QueuedRowsBeyondTheBoundAreRefused) {
  const BatchPlanner planner = Planner({8});
  RequestQueue queue(&planner, {.max_queued_rows = 10});
  ASSERT_TRUE(queue.Push(Rows(8), {}, kT0).ok());
  EXPECT_EQ(queue.Push(Rows(3), {}, kT0).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(queue.Push(Rows(2), {}, kT0).ok());
}

TEST(RequestQueue, RejectTimeoutsRemoveRequestsThatHaveNotStarted) {
  const BatchPlanner planner = Planner({1, 8});
  QueuePolicy policy;
  policy.levels[0].default_timeout = microseconds(100);
  policy.levels[0].allow_timeout_override = true;
  RequestQueue queue(&planner, policy);
  const auto plain = Rows(2), shorter = Rows(3), longer = Rows(1);
  ASSERT_TRUE(queue.Push(plain, {}, kT0).ok());
  ASSERT_TRUE(queue.Push(shorter, {.timeout = microseconds(50)}, kT0).ok());
  // An override may shorten the timeout, never lengthen it (Triton).
  ASSERT_TRUE(queue.Push(longer, {.timeout = microseconds(500)}, kT0).ok());
  EXPECT_EQ(queue.next_deadline(), kT0 + microseconds(50));

  std::vector<RefusedRows> refused = queue.RemoveExpired(kT0 + microseconds(60));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].request, shorter);
  EXPECT_EQ(refused[0].rows, 3);
  refused = queue.RemoveExpired(kT0 + microseconds(100));
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, AStartedRequestIsNeverTimedOut) {
  const BatchPlanner planner = Planner({16});
  QueuePolicy policy;
  policy.levels[0].default_timeout = microseconds(100);
  RequestQueue queue(&planner, policy);
  ASSERT_TRUE(queue.Push(Rows(32), {}, kT0).ok());
  ASSERT_TRUE(queue.Pop(kT0, nullptr));
  EXPECT_TRUE(queue.RemoveExpired(kT0 + std::chrono::seconds(1)).empty());
  const std::optional<FormedChunk> rest = queue.Pop(kT0 + std::chrono::seconds(1), nullptr);
  ASSERT_TRUE(rest);
  EXPECT_EQ(rest->segments[0].first_row, 16);
}

TEST(RequestQueue, DelayedRequestsGoBehindTheirLevel) {
  const BatchPlanner planner = Planner({1});
  QueuePolicy policy;
  policy.levels[0].timeout_action = LevelPolicy::TimeoutAction::kDelay;
  policy.levels[0].allow_timeout_override = true;
  RequestQueue queue(&planner, policy);
  const auto hasty = Rows(1), patient = Rows(1);
  ASSERT_TRUE(queue.Push(hasty, {.timeout = microseconds(10)}, kT0).ok());
  ASSERT_TRUE(queue.Push(patient, {}, kT0).ok());
  EXPECT_TRUE(queue.RemoveExpired(kT0 + microseconds(20)).empty());
  std::optional<FormedChunk> first = queue.Pop(kT0 + microseconds(20), nullptr);
  std::optional<FormedChunk> second = queue.Pop(kT0 + microseconds(20), nullptr);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->segments[0].request, patient);
  EXPECT_EQ(second->segments[0].request, hasty);
}

// Note [A deep queue stays cheap]: the count of entries with deadlines
// follows pops, expiries, delays and RemoveAll, so timeouts still fire for
// the requests that have them among others that do not, and a queue whose
// timed requests are gone reports no deadline.
TEST(RequestQueue, DeadlinesAreFollowedThroughPopsExpiriesAndDelays) {
  const BatchPlanner planner = Planner({1});
  QueuePolicy policy;
  policy.levels[0].allow_timeout_override = true;  // no default timeout
  RequestQueue queue(&planner, policy);
  const auto timed_popped = Rows(1), plain = Rows(1), timed = Rows(1);
  ASSERT_TRUE(queue.Push(timed_popped, {.timeout = microseconds(10)}, kT0).ok());
  ASSERT_TRUE(queue.Push(plain, {}, kT0).ok());
  ASSERT_TRUE(queue.Push(timed, {.timeout = microseconds(30)}, kT0).ok());
  const std::optional<FormedChunk> first = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->segments[0].request, timed_popped);
  EXPECT_EQ(queue.next_deadline(), kT0 + microseconds(30));
  EXPECT_TRUE(queue.RemoveExpired(kT0 + microseconds(20)).empty());
  const std::vector<RefusedRows> refused = queue.RemoveExpired(kT0 + microseconds(30));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].request, timed);
  EXPECT_EQ(queue.next_deadline(), std::nullopt);
  EXPECT_TRUE(queue.RemoveExpired(kT0 + std::chrono::seconds(1)).empty());
  // Timed again after the count reached zero, then cleared.
  ASSERT_TRUE(queue.Push(Rows(1), {.timeout = microseconds(5)}, kT0).ok());
  EXPECT_EQ(queue.next_deadline(), kT0 + microseconds(5));
  queue.RemoveAll();
  EXPECT_EQ(queue.next_deadline(), std::nullopt);
  ASSERT_TRUE(queue.Push(plain, {}, kT0).ok());
  EXPECT_EQ(queue.next_deadline(), std::nullopt);
}

TEST(RequestQueue, DelayedRequestsHoldNoDeadline) {
  const BatchPlanner planner = Planner({1});
  QueuePolicy policy;
  policy.levels[0].timeout_action = LevelPolicy::TimeoutAction::kDelay;
  policy.levels[0].default_timeout = microseconds(10);
  RequestQueue queue(&planner, policy);
  ASSERT_TRUE(queue.Push(Rows(1), {}, kT0).ok());
  EXPECT_TRUE(queue.RemoveExpired(kT0 + microseconds(10)).empty());  // delayed, not refused
  EXPECT_EQ(queue.next_deadline(), std::nullopt);
  ASSERT_TRUE(queue.Push(Rows(1), {}, kT0 + microseconds(10)).ok());
  EXPECT_EQ(queue.next_deadline(), kT0 + microseconds(20));
}

TEST(RequestQueue, RemoveAllReturnsTheRowsNotYetTaken) {
  const BatchPlanner planner = Planner({4});
  RequestQueue queue(&planner, {});
  const auto request = Rows(10);
  ASSERT_TRUE(queue.Push(request, {}, kT0).ok());
  ASSERT_TRUE(queue.Pop(kT0, nullptr));
  const std::vector<RefusedRows> refused = queue.RemoveAll();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].rows, 6);
  EXPECT_TRUE(queue.empty());
}

// Note [Rows nobody waits for]: the rows of a request whose call was
// cancelled or whose deadline passed never reach a chunk.
TEST(RequestQueue, ACancelledCallsRowsAreRefusedNotRun) {
  const BatchPlanner planner = Planner({1, 4, 8});
  RequestQueue queue(&planner, {.merge = true});
  const auto call = std::make_shared<CallLiveness>(std::nullopt);
  const auto gone = Rows(3), kept = Rows(5);
  {
    QueueForCall scope(call);
    ASSERT_TRUE(queue.Push(gone, {}, kT0).ok());
  }
  ASSERT_TRUE(queue.Push(kept, {}, kT0).ok());  // no scope: no call
  call->Cancel();
  const std::vector<RefusedRows> refused = queue.RemoveExpired(kT0);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].request, gone);
  EXPECT_EQ(refused[0].rows, 3);
  EXPECT_EQ(refused[0].status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(queue.queued_rows(), 5);
  const std::optional<FormedChunk> chunk = queue.Pop(kT0, nullptr);
  ASSERT_TRUE(chunk);
  EXPECT_EQ(Segments(*chunk), (std::vector<Seg>{{kept.get(), 0, 5}}));
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, ACallsDeadlineDropsItsRowsNotYetTaken) {
  const BatchPlanner planner = Planner({4});
  RequestQueue queue(&planner, {});
  const auto request = Rows(10);
  {
    QueueForCall scope(std::make_shared<CallLiveness>(kT0 + microseconds(5)));
    ASSERT_TRUE(queue.Push(request, {}, kT0).ok());
  }
  EXPECT_TRUE(queue.RemoveExpired(kT0).empty());  // still waited for
  ASSERT_TRUE(queue.Pop(kT0, nullptr));           // 4 rows run
  const std::vector<RefusedRows> refused = queue.RemoveExpired(kT0 + microseconds(5));
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].rows, 6);
  EXPECT_EQ(refused[0].status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(queue.empty());
  EXPECT_FALSE(queue.Pop(kT0 + microseconds(5), nullptr));
}

TEST(RequestQueue, ACallAlreadyPastItsDeadlineIsNotQueued) {
  const BatchPlanner planner = Planner({4});
  RequestQueue queue(&planner, {});
  QueueForCall scope(std::make_shared<CallLiveness>(kT0));
  EXPECT_EQ(queue.Push(Rows(1), {}, kT0).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, OnlyTheNextChunksCandidatesAreLookedAt) {
  // Note [Rows nobody waits for]: a deep queue is not walked; an abandoned
  // request further back is refused once it comes within a chunk's reach.
  const BatchPlanner planner = Planner({1}, /*max_rows=*/1);
  RequestQueue queue(&planner, {});
  const auto front = Rows(1), back = Rows(1);
  const auto call = std::make_shared<CallLiveness>(std::nullopt);
  ASSERT_TRUE(queue.Push(front, {}, kT0).ok());
  {
    QueueForCall scope(call);
    ASSERT_TRUE(queue.Push(back, {}, kT0).ok());
  }
  call->Cancel();
  EXPECT_TRUE(queue.RemoveExpired(kT0).empty());
  ASSERT_TRUE(queue.Pop(kT0, nullptr));
  const std::vector<RefusedRows> refused = queue.RemoveExpired(kT0);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].request, back);
  EXPECT_TRUE(queue.empty());
}

TEST(RequestQueue, QueueTimeoutsAndCallsCountedApartStayConsistent) {
  // A call's entry that also holds a queue timeout leaves both counts when
  // refused either way; RemoveAll resets both.
  const BatchPlanner planner = Planner({4});
  QueuePolicy policy;
  policy.levels[0].default_timeout = microseconds(10);
  RequestQueue queue(&planner, policy);
  const auto call = std::make_shared<CallLiveness>(std::nullopt);
  {
    QueueForCall scope(call);
    ASSERT_TRUE(queue.Push(Rows(1), {}, kT0).ok());
    ASSERT_TRUE(queue.Push(Rows(1), {}, kT0).ok());
  }
  EXPECT_EQ(queue.RemoveExpired(kT0 + microseconds(10)).size(), 2u);
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.next_deadline(), std::nullopt);
  call->Cancel();
  EXPECT_TRUE(queue.RemoveExpired(kT0 + microseconds(20)).empty());
}

}  // namespace
}  // namespace graphserve
