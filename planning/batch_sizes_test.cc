#include "planning/batch_sizes.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// The best cost over every set of at most `num_sizes` sizes drawn from
// 1..top that holds top (every candidate, not only the needed sizes).
double BruteForceBest(const BatchHistogram& h, int num_sizes, int64_t top) {
  double best = std::numeric_limits<double>::infinity();
  const int64_t others = top - 1;  // candidates 1..top-1, as a bit mask
  for (int64_t mask = 0; mask < (int64_t{1} << others); ++mask) {
    if (__builtin_popcountll(static_cast<unsigned long long>(mask)) > num_sizes - 1) continue;
    std::vector<int64_t> sizes;
    for (int64_t s = 1; s <= others; ++s) {
      if (mask & (int64_t{1} << (s - 1))) sizes.push_back(s);
    }
    sizes.push_back(top);
    best = std::min(best, ExpectedPaddedRows(h, sizes));
  }
  return best;
}

TEST(ChooseBatchSizesTest, MatchesBruteForceOnRandomHistories) {
  std::mt19937 rng(20240611);
  for (int iteration = 0; iteration < 600; ++iteration) {
    BatchHistogram h;
    const int max_size = std::uniform_int_distribution<int>(1, 14)(rng);
    const int distinct = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int d = 0; d < distinct; ++d) {
      h[std::uniform_int_distribution<int>(1, max_size)(rng)] +=
          std::uniform_int_distribution<int>(1, 50)(rng);
    }
    const int num_sizes = std::uniform_int_distribution<int>(1, 5)(rng);
    std::optional<int64_t> max_batch;
    if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
      max_batch = std::uniform_int_distribution<int>(1, 16)(rng);
    }
    SCOPED_TRACE(absl::StrCat("iteration ", iteration, " num_sizes ", num_sizes, " max_batch ",
                              max_batch.value_or(-1)));

    absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, num_sizes, max_batch);
    ASSERT_TRUE(choice.ok()) << choice.status();
    const int64_t top = TopBatchSize(h, max_batch);
    ASSERT_FALSE(choice->sizes.empty());
    EXPECT_EQ(choice->sizes.back(), top);
    EXPECT_LE(choice->sizes.size(), static_cast<size_t>(num_sizes));
    EXPECT_TRUE(std::is_sorted(choice->sizes.begin(), choice->sizes.end()));
    EXPECT_EQ(choice->expected_padded_rows, ExpectedPaddedRows(h, choice->sizes));
    EXPECT_NEAR(choice->expected_padded_rows, BruteForceBest(h, num_sizes, top), 1e-9);
  }
}

TEST(ChooseBatchSizesTest, FewerNeededSizesThanAskedReturnsThemWithoutPadding) {
  const BatchHistogram h = {{3, 5}, {7, 1}, {16, 2}};
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, 8, std::nullopt);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->sizes, (std::vector<int64_t>{3, 7, 16}));
  EXPECT_EQ(choice->expected_padded_rows, 0.0);
}

TEST(ChooseBatchSizesTest, ChoosesByHand) {
  // 1 x90, 2 x5, 8 x5, two sizes: top 8 is forced; 1 pads 2 by one (5 rows)
  // where 2 would pad 1 by one (90 rows).
  const BatchHistogram h = {{1, 90}, {2, 5}, {8, 5}};
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, 2, std::nullopt);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->sizes, (std::vector<int64_t>{1, 8}));
  EXPECT_DOUBLE_EQ(choice->expected_padded_rows, 5.0 * 6 / 100);
}

TEST(ChooseBatchSizesTest, MaxBatchSizeChunksLargeRequests) {
  // X = 8. 20 = 2 x 8 + 4; 16 = 2 x 8 (no remainder); 3 and 4 themselves.
  const BatchHistogram h = {{3, 1}, {4, 1}, {16, 1}, {20, 1}};
  EXPECT_EQ(TopBatchSize(h, 8), 8);
  // With {4, 8}: 3 pads 1, 4 none, 16 none, remainder 4 none.
  EXPECT_DOUBLE_EQ(ExpectedPaddedRows(h, {4, 8}), 1.0 / 4);
  // With {8} alone: 3 pads 5, 4 pads 4, remainder 4 pads 4.
  EXPECT_DOUBLE_EQ(ExpectedPaddedRows(h, {8}), 13.0 / 4);
  absl::StatusOr<SizeChoice> one = ChooseBatchSizes(h, 1, 8);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->sizes, (std::vector<int64_t>{8}));
  EXPECT_DOUBLE_EQ(one->expected_padded_rows, 13.0 / 4);
  absl::StatusOr<SizeChoice> two = ChooseBatchSizes(h, 2, 8);
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_DOUBLE_EQ(two->expected_padded_rows, 1.0 / 4);
  absl::StatusOr<SizeChoice> three = ChooseBatchSizes(h, 3, 8);
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ(three->sizes, (std::vector<int64_t>{3, 4, 8}));
  EXPECT_EQ(three->expected_padded_rows, 0.0);
}

TEST(ChooseBatchSizesTest, RemainderIsANeededSizeEvenWhenNoRequestHasIt) {
  // X = 10: 23 = 2 x 10 + 3, and only the remainder 3 is needed below 10.
  const BatchHistogram h = {{23, 4}, {30, 1}};
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, 2, 10);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->sizes, (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(choice->expected_padded_rows, 0.0);
  absl::StatusOr<SizeChoice> alone = ChooseBatchSizes(h, 1, 10);
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_DOUBLE_EQ(alone->expected_padded_rows, 4.0 * 7 / 5);
}

TEST(ChooseBatchSizesTest, MaxBatchSizeAboveHistoryKeepsTheLargestSize) {
  const BatchHistogram h = {{5, 1}, {6, 1}};
  EXPECT_EQ(TopBatchSize(h, 100), 6);
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, 1, 100);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->sizes, (std::vector<int64_t>{6}));
  EXPECT_DOUBLE_EQ(choice->expected_padded_rows, 0.5);
}

TEST(ChooseBatchSizesTest, RejectsBadArguments) {
  const BatchHistogram h = {{4, 1}};
  EXPECT_FALSE(ChooseBatchSizes(h, 0, std::nullopt).ok());
  EXPECT_FALSE(ChooseBatchSizes(h, 2, 0).ok());
  EXPECT_FALSE(ChooseBatchSizes({}, 2, std::nullopt).ok());
  EXPECT_FALSE(ChooseBatchSizes({{0, 3}}, 2, std::nullopt).ok());
  EXPECT_FALSE(ChooseBatchSizes({{4, -1}}, 2, std::nullopt).ok());
}

TEST(PowerOfTwoLadderTest, HalvesFromTheRoundedUpLargestSize) {
  const BatchHistogram h = {{1, 1}, {3, 1}, {20, 2}};
  const SizeChoice ladder = PowerOfTwoLadder(h, 3, std::nullopt);
  EXPECT_EQ(ladder.sizes, (std::vector<int64_t>{8, 16, 32}));
  // 1 -> 8 pads 7, 3 -> 8 pads 5, 20 -> 32 pads 12 twice.
  EXPECT_DOUBLE_EQ(ladder.expected_padded_rows, (7.0 + 5 + 24) / 4);
  EXPECT_EQ(ladder.expected_padded_rows, ExpectedPaddedRows(h, ladder.sizes));
  // The exact choice is never worse.
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(h, 3, std::nullopt);
  ASSERT_TRUE(choice.ok());
  EXPECT_LE(choice->expected_padded_rows, ladder.expected_padded_rows);
}

TEST(PowerOfTwoLadderTest, StopsAtOne) {
  const SizeChoice ladder = PowerOfTwoLadder({{4, 1}, {3, 1}}, 10, std::nullopt);
  EXPECT_EQ(ladder.sizes, (std::vector<int64_t>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(ladder.expected_padded_rows, 0.5);
}

TEST(PowerOfTwoLadderTest, CappedAtMaxBatchSize) {
  // Top min(64, 48) = 48, then 32 and 16. 50 = 48 + 2 pads 14 on 16; 40 pads 8.
  const BatchHistogram h = {{40, 1}, {50, 1}};
  const SizeChoice ladder = PowerOfTwoLadder(h, 3, 48);
  EXPECT_EQ(ladder.sizes, (std::vector<int64_t>{16, 32, 48}));
  EXPECT_DOUBLE_EQ(ladder.expected_padded_rows, (8.0 + 14) / 2);
}

TEST(PowerOfTwoLadderTest, EmptyHistoryGivesNothing) {
  const SizeChoice ladder = PowerOfTwoLadder({}, 3, std::nullopt);
  EXPECT_TRUE(ladder.sizes.empty());
  EXPECT_EQ(ladder.expected_padded_rows, 0.0);
}

TEST(ParseBatchHistoryTest, ReadsBothFormatsCommentsAndBlankLines) {
  absl::StatusOr<BatchHistogram> h = ParseBatchHistory(
      "# batch sizes of last week\n"
      "4\n"
      "\n"
      "  8 , 10  # trailing comment\n"
      "4\n"
      "16,0\n"
      "2,3",
      "history.txt");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, (BatchHistogram{{2, 3}, {4, 2}, {8, 10}}));
}

TEST(ParseBatchHistoryTest, ErrorsNameTheSourceAndLine) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"4\n0\n", "h.txt:2: batch size 0 is not positive"},
      {"4\n\n-3,2\n", "h.txt:3: batch size -3 is not positive"},
      {"4,x\n", "h.txt:1: count 'x' is not an integer"},
      {"# c\n4,-1\n", "h.txt:2: count -1 is negative"},
      {"4\nfour\n", "h.txt:2: batch size 'four' is not an integer"},
      {"4,1,2\n", "h.txt:1: expected `size` or `size,count`"},
      {"2.5\n", "h.txt:1: batch size '2.5' is not an integer"},
      {"4,\n", "h.txt:1: count '' is not an integer"},
      {"99999999999\n", "h.txt:1: batch size 99999999999 is above"},
      {"# only comments\n\n", "h.txt: the batch-size history has no requests"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<BatchHistogram> h = ParseBatchHistory(c.text, "h.txt");
    ASSERT_FALSE(h.ok()) << c.text;
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(h.status().message(), c.expected))
        << h.status() << " should contain " << c.expected;
  }
}

TEST(ReadBatchHistoryTest, ReadsAFileAndNamesItInErrors) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/history_test.txt");
  {
    std::ofstream file(path);
    file << "1\n2,4\nbad\n";
  }
  absl::StatusOr<BatchHistogram> h = ReadBatchHistory(path);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(absl::StrContains(h.status().message(), absl::StrCat(path, ":3:")))
      << h.status();
  {
    std::ofstream file(path);
    file << "1\n2,4\n";
  }
  h = ReadBatchHistory(path);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, (BatchHistogram{{1, 1}, {2, 4}}));
  std::remove(path.c_str());

  absl::StatusOr<BatchHistogram> missing = ReadBatchHistory(path + ".missing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace graphserve
