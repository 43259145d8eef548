#include "server/model_counters.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace graphserve {
namespace {

TEST(ModelCountersTest, FillsTritonsStatisticsFromRequestsAndChunks) {
  ModelCounters counters({1, 4, 16});
  // A request of 6 rows run as chunks at sizes 4 and 2 (counted under 4).
  counters.RecordChunk(4, {.input_ns = 10, .infer_ns = 100, .output_ns = 1});
  counters.RecordChunk(2, {.input_ns = 20, .infer_ns = 200, .output_ns = 2});
  counters.RecordSuccess(6, /*elapsed_ns=*/5000, /*queue_ns=*/70,
                         {.input_ns = 30, .infer_ns = 300, .output_ns = 3});
  counters.RecordFailure(900);

  inference::ModelStatistics statistics;
  counters.Fill(&statistics);
  EXPECT_EQ(statistics.inference_count(), 6u);
  EXPECT_EQ(statistics.execution_count(), 2u);
  EXPECT_GT(statistics.last_inference(), 0u);
  const inference::InferStatistics& stats = statistics.inference_stats();
  EXPECT_EQ(stats.success().count(), 1u);
  EXPECT_EQ(stats.success().ns(), 5000u);
  EXPECT_EQ(stats.fail().count(), 1u);
  EXPECT_EQ(stats.fail().ns(), 900u);
  EXPECT_EQ(stats.queue().ns(), 70u);
  EXPECT_EQ(stats.compute_infer().ns(), 300u);
  // Only the size that ran appears, with both chunks.
  ASSERT_EQ(statistics.batch_stats_size(), 1);
  EXPECT_EQ(statistics.batch_stats(0).batch_size(), 4u);
  EXPECT_EQ(statistics.batch_stats(0).compute_infer().count(), 2u);
  EXPECT_EQ(statistics.batch_stats(0).compute_infer().ns(), 300u);
}

TEST(ModelCountersTest, PendingFollowsAcceptAndAnswerAcrossThreads) {
  ModelCounters counters({8});
  constexpr int kThreads = 4;
  constexpr int kRequests = 1000;  // per thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters] {
      for (int i = 0; i < kRequests; ++i) {
        counters.RequestAccepted();
        counters.RecordChunk(8, {});
        counters.RecordSuccess(1, 1, 0, {});
        counters.RequestAnswered();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counters.pending(), 0);
  inference::ModelStatistics statistics;
  counters.Fill(&statistics);
  EXPECT_EQ(statistics.inference_count(), uint64_t{kThreads * kRequests});
  EXPECT_EQ(statistics.execution_count(), uint64_t{kThreads * kRequests});
}

}  // namespace
}  // namespace graphserve
