#include "planning/row_histogram.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planning/batch_sizes.h"
#include "planning/row_histogram_testing.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RowHistogramFromBuckets, OneRowBucketsAreExact) {
  // Requests of 1, 1, 3, 3, 3, 4 rows.
  absl::StatusOr<RowHistogram> rows =
      RowHistogramFromBuckets({{1, 2}, {2, 2}, {3, 5}, {4, 6}, {kInf, 6}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(rows->histogram, ElementsAre(Pair(1, 2), Pair(3, 3), Pair(4, 1)));
  EXPECT_EQ(rows->requests, 6);
  EXPECT_TRUE(rows->wide_buckets.empty());
  EXPECT_EQ(rows->scale, 1);
}

TEST(RowHistogramFromBuckets, WideBucketsCountAtTheirUpperBound) {
  // max_batch_size 256: 100 lies in 65..128 and 200 in 129..256 (Note [Rows
  // of a wide bucket]); 64 is still a bucket of its own.
  absl::StatusOr<RowHistogram> rows = RowHistogramFromBuckets(
      CumulativeBucketsOf(ServerRowBounds(256), {1, 1, 1, 64, 100, 100, 200}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(rows->histogram, ElementsAre(Pair(1, 3), Pair(64, 1), Pair(128, 2), Pair(256, 1)));
  EXPECT_EQ(rows->requests, 7);
  ASSERT_EQ(rows->wide_buckets.size(), 2u);
  EXPECT_EQ(rows->wide_buckets[0].first_row, 65);
  EXPECT_EQ(rows->wide_buckets[0].last_row, 128);
  EXPECT_EQ(rows->wide_buckets[0].requests, 2);
  EXPECT_EQ(rows->wide_buckets[1].first_row, 129);
  EXPECT_EQ(rows->wide_buckets[1].last_row, 256);
  EXPECT_EQ(rows->wide_buckets[1].requests, 1);
}

TEST(RowHistogramFromBuckets, TheLastBucketEndsAtMaxBatchSize) {
  // max_batch_size 100: the bucket after 64 is 65..100, not a power of two.
  absl::StatusOr<RowHistogram> rows =
      RowHistogramFromBuckets(CumulativeBucketsOf(ServerRowBounds(100), {70, 2}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(rows->histogram, ElementsAre(Pair(2, 1), Pair(100, 1)));
  ASSERT_EQ(rows->wide_buckets.size(), 1u);
  EXPECT_EQ(rows->wide_buckets[0].first_row, 65);
}

TEST(RowHistogramFromBuckets, OrderOfTheBucketsDoesNotMatter) {
  absl::StatusOr<RowHistogram> rows = RowHistogramFromBuckets({{kInf, 3}, {2, 3}, {1, 1}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT(rows->histogram, ElementsAre(Pair(1, 1), Pair(2, 2)));
}

TEST(RowHistogramFromBuckets, NoRequestsIsAnEmptyHistogram) {
  absl::StatusOr<RowHistogram> rows =
      RowHistogramFromBuckets(CumulativeBucketsOf(ServerRowBounds(8), {}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_TRUE(rows->histogram.empty());
  EXPECT_EQ(rows->requests, 0);
}

TEST(RowHistogramFromBuckets, CountsBeyondTheRequestBoundAreScaled) {
  // Three billion requests of 1 row, one of 5: over ChooseBatchSizes' bound.
  constexpr double kMany = 3e9;
  absl::StatusOr<RowHistogram> rows =
      RowHistogramFromBuckets({{1, kMany}, {5, kMany + 1}, {kInf, kMany + 1}});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->requests, static_cast<int64_t>(kMany) + 1);
  EXPECT_LT(rows->scale, 1);
  int64_t total = 0;
  for (const auto& [size, count] : rows->histogram) total += count;
  EXPECT_LE(total, kMaxHistoryRequests);
  EXPECT_NEAR(static_cast<double>(rows->histogram.at(1)), kMany * rows->scale, 1);
  EXPECT_EQ(rows->histogram.at(5), 1);  // rare, but kept
}

TEST(RowHistogramFromBuckets, MalformedHistogramsSayWhichBucket) {
  const std::vector<std::pair<std::vector<CumulativeBucket>, std::string>> cases = {
      {{{1, 1}, {2, 2}}, "no le=\"+Inf\" bucket"},
      {{}, "no le=\"+Inf\" bucket"},
      {{{1, 1}, {1, 1}, {kInf, 1}}, "le=\"1\": appears twice"},
      {{{1, 3}, {2, 2}, {kInf, 3}}, "le=\"2\": count 2 is below the previous bucket's 3"},
      {{{1, 0.5}, {kInf, 1}}, "le=\"1\": count 0.5 is not a whole number"},
      {{{1, -1}, {kInf, 1}}, "le=\"1\": count -1 is not a whole number"},
      {{{4, 1}, {kInf, 3}}, "le=\"+Inf\": 2 requests lie above the largest finite bound 4"},
      {{{kInf, 3}}, "requests lie above the largest finite bound"},
      {{{0.5, 1}, {kInf, 1}}, "le=\"0.5\": holds 1 requests but no positive row count"},
  };
  for (const auto& [buckets, message] : cases) {
    absl::StatusOr<RowHistogram> rows = RowHistogramFromBuckets(buckets);
    ASSERT_FALSE(rows.ok()) << message;
    EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(rows.status().message()), HasSubstr(message));
  }
}

}  // namespace
}  // namespace graphserve
