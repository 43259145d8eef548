#include "server/model_counters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace graphserve {
namespace {

TEST(ModelCountersTest, FillsTritonsStatisticsFromRequestsAndChunks) {
  ModelCounters counters({1, 4, 16}, /*max_batch_size=*/16, /*num_streams=*/1);
  // A request of 6 rows run as chunks at sizes 4 and 2 (counted under 4).
  counters.RecordChunk({.batch_size = 4, .rows = 4},
                       {.input_ns = 10, .infer_ns = 100, .output_ns = 1});
  counters.RecordChunk({.batch_size = 2, .rows = 2},
                       {.input_ns = 20, .infer_ns = 200, .output_ns = 2});
  counters.RecordSuccess(6, /*length=*/0, /*elapsed_ns=*/5000, /*queue_ns=*/70,
                         {.input_ns = 30, .infer_ns = 300, .output_ns = 3}, /*split=*/true);
  counters.RecordFailure(900, FailureReason::kBackend);

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
  ModelCounters counters({8}, /*max_batch_size=*/8, /*num_streams=*/1);
  constexpr int kThreads = 4;
  constexpr int kRequests = 1000;  // per thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&counters] {
      for (int i = 0; i < kRequests; ++i) {
        counters.RequestAccepted();
        counters.RecordChunk({.batch_size = 8, .rows = 1}, {});
        counters.RecordSuccess(1, /*length=*/0, 1, 0, {});
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
  EXPECT_EQ(counters.padded_rows(), uint64_t{kThreads * kRequests} * 7);  // 1 row of 8
  EXPECT_EQ(counters.RequestRows().cumulative_counts.back(), uint64_t{kThreads * kRequests});
}

TEST(ModelCountersTest, HistogramsCountRowsAndLatencyInTheirBuckets) {
  ModelCounters counters({1, 8, 200}, /*max_batch_size=*/200, /*num_streams=*/1);
  for (int64_t rows : {1, 1, 3, 64, 65, 200}) {
    counters.RecordSuccess(rows, /*length=*/0, 1000 * rows, 0, {});
  }
  counters.RecordFailure(5000, FailureReason::kOther);  // failures are not in the histograms

  const ModelCounters::Histogram rows = counters.RequestRows();
  // 1..64 one bucket each, then 128, then 200, then +Inf.
  ASSERT_EQ(rows.upper_bounds.size(), 64u + 2u + 1u);
  EXPECT_EQ(rows.upper_bounds[0], 1.0);
  EXPECT_EQ(rows.upper_bounds[63], 64.0);
  EXPECT_EQ(rows.upper_bounds[64], 128.0);
  EXPECT_EQ(rows.upper_bounds[65], 200.0);
  EXPECT_TRUE(std::isinf(rows.upper_bounds[66]));
  EXPECT_EQ(rows.cumulative_counts[0], 2u);   // le 1
  EXPECT_EQ(rows.cumulative_counts[1], 2u);   // le 2
  EXPECT_EQ(rows.cumulative_counts[2], 3u);   // le 3
  EXPECT_EQ(rows.cumulative_counts[63], 4u);  // le 64
  EXPECT_EQ(rows.cumulative_counts[64], 5u);  // le 128
  EXPECT_EQ(rows.cumulative_counts[65], 6u);  // le 200
  EXPECT_EQ(rows.cumulative_counts[66], 6u);  // +Inf
  EXPECT_EQ(rows.sum, 1u + 1 + 3 + 64 + 65 + 200);

  const ModelCounters::Histogram micros = counters.RequestDurationUs();
  EXPECT_EQ(micros.upper_bounds.front(), 50.0);
  EXPECT_EQ(micros.cumulative_counts.front(), 3u);  // 1, 1 and 3 us
  EXPECT_EQ(micros.cumulative_counts.back(), 6u);
  EXPECT_EQ(micros.sum, 1u + 1 + 3 + 64 + 65 + 200);

  counters.RecordChunk({.batch_size = 8, .rows = 3}, {});
  counters.RecordChunk({.batch_size = 8, .rows = 8}, {});
  counters.RecordChunk({.batch_size = 200, .rows = 65}, {});
  EXPECT_EQ(counters.padded_rows(), 5u + 135u);
  const std::vector<ModelCounters::Launches> launches = counters.LaunchesPerKeyAndStream();
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].key.batch_size, 1);
  EXPECT_EQ(launches[0].count, 0u);
  EXPECT_EQ(launches[1].key.batch_size, 8);
  EXPECT_EQ(launches[1].count, 2u);
  EXPECT_EQ(launches[2].key.batch_size, 200);
  EXPECT_EQ(launches[2].count, 1u);
}

TEST(ModelCountersTest, LengthHistogramOfAModelWithOneShapeDim) {
  // Buckets 12 and 32 along a sequence: bounds 8, 12, 16, 24, 32.
  ModelCounters counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1, {{12}, {32}});
  for (const auto& [rows, length] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 5}, {2, 12}, {1, 13}, {4, 32}, {1, 8}}) {
    counters.RecordSuccess(rows, length, 1, 0, {});
  }
  counters.RecordFailure(1, FailureReason::kBackend);  // failures are not in it

  const std::optional<ModelCounters::Histogram> lengths = counters.RequestLength();
  ASSERT_TRUE(lengths.has_value());
  const double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(lengths->upper_bounds, (std::vector<double>{8, 12, 16, 24, 32, kInf}));
  // 5 and 8 at most 8; 12 in bucket 12 exactly; 13 up to 16; 32.
  EXPECT_EQ(lengths->cumulative_counts, (std::vector<uint64_t>{2, 3, 4, 4, 5, 5}));
  EXPECT_EQ(lengths->sum, 5u + 12 + 13 + 32 + 8);
  // The rows histogram still has one observation per request.
  EXPECT_EQ(counters.RequestRows().cumulative_counts.back(), 5u);
  EXPECT_EQ(counters.RequestRows().sum, 1u + 2 + 1 + 4 + 1);
}

TEST(ModelCountersTest, NoLengthHistogramWithoutExactlyOneShapeDim) {
  ModelCounters fixed({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1);
  fixed.RecordSuccess(2, /*length=*/0, 1, 0, {});
  EXPECT_FALSE(fixed.RequestLength().has_value());
  // Height and width: a histogram per dim would lose which came together.
  ModelCounters image({1}, /*max_batch_size=*/1, /*num_streams=*/1, {{224, 224}, {320, 320}});
  image.RecordSuccess(1, /*length=*/0, 1, 0, {});
  EXPECT_FALSE(image.RequestLength().has_value());
  EXPECT_EQ(image.RequestRows().cumulative_counts.back(), 1u);
}

// Note [Demand rows]: each chunk formed under dynamic batching records the
// rows it could have merged, beyond the captured sizes; chunks without it
// record none.
TEST(ModelCountersTest, DemandRowsOfChunksUnderDynamicBatching) {
  ModelCounters counters({1, 2, 4}, /*max_batch_size=*/32, /*num_streams=*/1);
  counters.RecordChunk({.batch_size = 4, .rows = 4, .requests = 3, .demand_rows = 11}, {});
  counters.RecordChunk({.batch_size = 4, .rows = 4, .requests = 2, .demand_rows = 4}, {});
  counters.RecordChunk({.batch_size = 2, .rows = 2}, {});  // no dynamic batching
  const ModelCounters::Histogram demand = counters.ChunkDemandRows();
  ASSERT_FALSE(demand.cumulative_counts.empty());
  EXPECT_EQ(demand.cumulative_counts.back(), 2u);
  EXPECT_EQ(demand.sum, 15u);
  const auto at_most = [&](double bound) {
    const size_t i = static_cast<size_t>(
        std::find(demand.upper_bounds.begin(), demand.upper_bounds.end(), bound) -
        demand.upper_bounds.begin());
    return demand.cumulative_counts.at(i);
  };
  EXPECT_EQ(at_most(4), 1u);
  EXPECT_EQ(at_most(11), 2u);
  EXPECT_EQ(counters.RequestRows().cumulative_counts.back(), 0u);  // requests count apart
}

// Note [Live length histogram]: multiples of 8 up to the largest bucket
// and every bucket's extent.
TEST(LengthBoundsTest, MultiplesOfEightAndEveryBucketExtent) {
  EXPECT_EQ(LengthBounds({8, 32}), (std::vector<uint64_t>{8, 16, 24, 32}));
  // Extents off the multiples of 8 are bounds too, in any order given.
  EXPECT_EQ(LengthBounds({30, 12}), (std::vector<uint64_t>{8, 12, 16, 24, 30}));
  EXPECT_EQ(LengthBounds({5}), (std::vector<uint64_t>{5}));
  EXPECT_TRUE(LengthBounds({}).empty());
  // BERT's 512 at step 8: 64 bounds.
  const std::vector<uint64_t> bert = LengthBounds({128, 512});
  ASSERT_EQ(bert.size(), 64u);
  EXPECT_EQ(bert.front(), 8u);
  EXPECT_EQ(bert.back(), 512u);
}

TEST(LengthBoundsTest, LongBucketsWidenTheStepInMultiplesOfEight) {
  constexpr size_t kMaxSteps = 128;  // the cap on multiples of the step
  // 8192: step 64, exactly 128 bounds.
  const std::vector<uint64_t> long_context = LengthBounds({512, 8192});
  ASSERT_EQ(long_context.size(), kMaxSteps);
  for (size_t i = 0; i < long_context.size(); ++i) {
    EXPECT_EQ(long_context[i], 64 * (i + 1)) << "bound " << i;
  }
  // 1025 widens to step 16 (1024 / 16 = 64 multiples); 1000 and 1025 are
  // not multiples of 16 and are bounds of their own.
  const std::vector<uint64_t> odd = LengthBounds({1000, 1025});
  EXPECT_EQ(odd.size(), 64u + 2u);
  EXPECT_EQ(odd[0], 16u);
  EXPECT_TRUE(std::binary_search(odd.begin(), odd.end(), 1000u));
  EXPECT_EQ(odd.back(), 1025u);
  // Over a sweep of largest extents: ascending, ending at the extent, the
  // step the narrowest multiple of 8 whose 128 multiples reach it.
  for (int64_t largest : {1, 7, 8, 9, 100, 1023, 1024, 1025, 4096, 8191, 8192, 8193, 100000}) {
    const std::vector<uint64_t> bounds = LengthBounds({largest});
    ASSERT_FALSE(bounds.empty()) << largest;
    EXPECT_TRUE(std::is_sorted(bounds.begin(), bounds.end()) &&
                std::adjacent_find(bounds.begin(), bounds.end()) == bounds.end())
        << largest;
    EXPECT_EQ(bounds.back(), static_cast<uint64_t>(largest));
    if (largest < 8) continue;
    const int64_t step = static_cast<int64_t>(bounds.front());
    EXPECT_EQ(step % 8, 0) << largest;
    EXPECT_GE(step * static_cast<int64_t>(kMaxSteps), largest) << largest;
    if (step > 8) {
      EXPECT_LT((step - 8) * static_cast<int64_t>(kMaxSteps), largest) << largest;
    }
    EXPECT_LE(bounds.size(), kMaxSteps + 1) << largest;
  }
}

TEST(ModelCountersTest, LaunchesAreCountedPerSizeAndStream) {
  constexpr int kStreams = 3;
  ModelCounters counters({2, 8}, /*max_batch_size=*/8, kStreams);
  counters.RecordChunk({.stream = 0, .batch_size = 2, .rows = 2}, {});
  counters.RecordChunk({.stream = 2, .batch_size = 2, .rows = 1}, {});
  counters.RecordChunk({.stream = 2, .batch_size = 2, .rows = 2}, {});
  counters.RecordChunk({.stream = 1, .batch_size = 8, .rows = 5}, {});
  // Every (size, stream), launched or not, sizes then streams ascending.
  const std::vector<ModelCounters::Launches> launches = counters.LaunchesPerKeyAndStream();
  ASSERT_EQ(launches.size(), 2u * kStreams);
  const std::vector<std::tuple<int64_t, int, uint64_t>> expected = {
      {2, 0, 1}, {2, 1, 0}, {2, 2, 2}, {8, 0, 0}, {8, 1, 1}, {8, 2, 0}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(std::make_tuple(launches[i].key.batch_size, launches[i].stream, launches[i].count),
              expected[i])
        << "entry " << i;
  }
  // The same chunks through Triton's statistics: per size, all streams.
  inference::ModelStatistics statistics;
  counters.Fill(&statistics);
  EXPECT_EQ(statistics.execution_count(), 4u);
  ASSERT_EQ(statistics.batch_stats_size(), 2);
  EXPECT_EQ(statistics.batch_stats(0).compute_infer().count(), 3u);
  EXPECT_EQ(statistics.batch_stats(1).compute_infer().count(), 1u);
  EXPECT_EQ(counters.padded_rows(), 1u + 3u);
}

TEST(ModelCountersTest, SplitRequestsAndMergedExecutions) {
  ModelCounters counters({4}, /*max_batch_size=*/16, /*num_streams=*/2);
  // A request of 6 rows split in two chunks, the second merged with the 2
  // rows of another request; a request of 4 rows alone in one chunk.
  counters.RecordChunk({.stream = 0, .batch_size = 4, .rows = 4, .requests = 1}, {});
  counters.RecordChunk({.stream = 1, .batch_size = 4, .rows = 4, .requests = 2}, {});
  counters.RecordChunk({.stream = 0, .batch_size = 4, .rows = 4, .requests = 1}, {});
  counters.RecordSuccess(6, /*length=*/0, 1, 0, {}, /*split=*/true);
  counters.RecordSuccess(2, /*length=*/0, 1, 0, {}, /*split=*/false);
  counters.RecordSuccess(4, /*length=*/0, 1, 0, {}, /*split=*/false);
  EXPECT_EQ(counters.split_requests(), 1u);
  EXPECT_EQ(counters.merged_executions(), 1u);
  EXPECT_EQ(counters.padded_rows(), 0u);
}

TEST(ModelCountersTest, FailuresAreCountedByReasonAndInTotal) {
  ModelCounters counters({4}, /*max_batch_size=*/4, /*num_streams=*/1);
  counters.RecordFailure(10, FailureReason::kRejected);
  counters.RecordFailure(20, FailureReason::kRejected);
  counters.RecordFailure(30, FailureReason::kBackend);
  counters.RecordFailure(40, FailureReason::kOther);
  const std::array<uint64_t, kNumFailureReasons> failures = counters.FailuresByReason();
  EXPECT_EQ(failures[static_cast<size_t>(FailureReason::kRejected)], 2u);
  EXPECT_EQ(failures[static_cast<size_t>(FailureReason::kCanceled)], 0u);
  EXPECT_EQ(failures[static_cast<size_t>(FailureReason::kBackend)], 1u);
  EXPECT_EQ(failures[static_cast<size_t>(FailureReason::kOther)], 1u);
  // Triton's statistics keep one fail duration: the four reasons together.
  inference::ModelStatistics statistics;
  counters.Fill(&statistics);
  EXPECT_EQ(statistics.inference_stats().fail().count(), 4u);
  EXPECT_EQ(statistics.inference_stats().fail().ns(), 100u);

  EXPECT_STREQ(FailureReasonLabel(FailureReason::kRejected), "REJECTED");
  EXPECT_STREQ(FailureReasonLabel(FailureReason::kCanceled), "CANCELED");
  EXPECT_STREQ(FailureReasonLabel(FailureReason::kBackend), "BACKEND");
  EXPECT_STREQ(FailureReasonLabel(FailureReason::kOther), "OTHER");
}

TEST(ModelCountersTest, LaunchesAndPaddedPositionsAreCountedPerBucket) {
  ModelCounters counters({1, 4}, /*max_batch_size=*/4, /*num_streams=*/1, {{32}, {128}});
  counters.RecordChunk({.batch_size = 4, .rows = 3, .bucket = 1, .launched_positions = 4 * 128,
                        .real_positions = 100 + 20 + 7},
                       {});
  counters.RecordChunk({.batch_size = 1, .rows = 1, .bucket = 0, .launched_positions = 32,
                        .real_positions = 32},
                       {});
  EXPECT_EQ(counters.padded_positions(), 512u - 127u);
  EXPECT_EQ(counters.padded_rows(), 1u);
  const std::vector<ModelCounters::Launches> launches = counters.LaunchesPerKeyAndStream();
  ASSERT_EQ(launches.size(), 4u);  // (size, bucket) keys, one stream
  const std::vector<std::pair<GraphKey, uint64_t>> expected = {
      {{1, {32}}, 1}, {{1, {128}}, 0}, {{4, {32}}, 0}, {{4, {128}}, 1}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(launches[i].key, expected[i].first) << "entry " << i;
    EXPECT_EQ(launches[i].count, expected[i].second) << "entry " << i;
  }
}

}  // namespace
}  // namespace graphserve
