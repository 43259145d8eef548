#include "planning/batch_planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <tuple>

namespace graphserve {

// Found by argument-dependent lookup, so it lives in PlannedChunk's namespace.
void PrintTo(const PlannedChunk& chunk, std::ostream* os) {
  *os << "{size " << chunk.batch_size << ", rows [" << chunk.first_row << ", "
      << chunk.first_row + chunk.rows << ")}";
}

namespace {

using ::testing::HasSubstr;

using Chunks = std::vector<PlannedChunk>;

BatchPlanner MakePlanner(std::vector<int64_t> sizes, std::vector<double> costs, int64_t max_rows) {
  absl::StatusOr<BatchPlanner> planner =
      BatchPlanner::Create(BatchOnlyKeys(sizes), std::move(costs), max_rows);
  EXPECT_TRUE(planner.ok()) << planner.status();
  return *std::move(planner);
}

TEST(BatchPlannerTest, WithoutCostsPadsUpToTheSmallestSizeThatHolds) {
  const BatchPlanner planner = MakePlanner({64, 1, 8}, {}, 64);
  EXPECT_FALSE(planner.has_costs());
  EXPECT_EQ(planner.batch_sizes(), std::vector<int64_t>({1, 8, 64}));
  EXPECT_EQ(planner.Plan(1), Chunks({{1, 0, 1}}));
  EXPECT_EQ(planner.Plan(2), Chunks({{8, 0, 2}}));
  EXPECT_EQ(planner.Plan(8), Chunks({{8, 0, 8}}));
  EXPECT_EQ(planner.Plan(9), Chunks({{64, 0, 9}}));
  EXPECT_EQ(planner.Plan(64), Chunks({{64, 0, 64}}));
  EXPECT_EQ(planner.EstimatedCostUs(9), 64);  // padded rows stand in for a cost
}

TEST(BatchPlannerTest, WithoutCostsSplitsAboveTheLargestSize) {
  const BatchPlanner planner = MakePlanner({1, 8, 64}, {}, 200);
  // 150 = 64 + 64 + 22, and 22 pads up to 64.
  EXPECT_EQ(planner.Plan(150), Chunks({{64, 0, 64}, {64, 64, 64}, {64, 128, 22}}));
  // 129 = 64 + 64 + 1: the remainder fits size 1 exactly.
  EXPECT_EQ(planner.Plan(129), Chunks({{64, 0, 64}, {64, 64, 64}, {1, 128, 1}}));
  EXPECT_EQ(planner.Plan(128), Chunks({{64, 0, 64}, {64, 64, 64}}));
  EXPECT_EQ(planner.EstimatedCostUs(150), 192);
  EXPECT_EQ(planner.EstimatedCostUs(129), 129);
}

TEST(BatchPlannerTest, SplitsSixtyFiveRowsWhenTwoSixtyFoursAreCheaperThanOneHundredTwentyEight) {
  // A launch-bound model: 128 rows cost more than two 64-row launches.
  const BatchPlanner planner = MakePlanner({128, 64}, {25.0, 10.0}, 128);
  EXPECT_TRUE(planner.has_costs());
  EXPECT_EQ(planner.Plan(65), Chunks({{64, 0, 64}, {64, 64, 1}}));
  EXPECT_DOUBLE_EQ(planner.EstimatedCostUs(65), 20.0);
  EXPECT_EQ(planner.Plan(64), Chunks({{64, 0, 64}}));
  EXPECT_EQ(planner.Plan(128), Chunks({{64, 0, 64}, {64, 64, 64}}));
}

TEST(BatchPlannerTest, PadsSixtyFiveRowsWhenOneHundredTwentyEightIsCheaper) {
  // 128 rows cost 15 us, less than two 64-row launches at 10 us each.
  const BatchPlanner planner = MakePlanner({64, 128}, {10.0, 15.0}, 128);
  EXPECT_EQ(planner.Plan(65), Chunks({{128, 0, 65}}));
  EXPECT_DOUBLE_EQ(planner.EstimatedCostUs(65), 15.0);
  EXPECT_EQ(planner.Plan(30), Chunks({{64, 0, 30}}));
}

TEST(BatchPlannerTest, NonMonotonicCostsPickTheFasterLargerSize) {
  // Size 16 measured slower than 32 (a worse GEMM tile), as happens on GPUs.
  const BatchPlanner planner = MakePlanner({8, 16, 32}, {5.0, 12.0, 9.0}, 64);
  EXPECT_EQ(planner.Plan(8), Chunks({{8, 0, 8}}));
  EXPECT_EQ(planner.Plan(12), Chunks({{32, 0, 12}}));  // not 16 (12 us) nor 8 + 8 (10 us)
  EXPECT_EQ(planner.Plan(16), Chunks({{32, 0, 16}}));
  EXPECT_EQ(planner.Plan(40), Chunks({{32, 0, 32}, {8, 32, 8}}));  // 14 us
  EXPECT_DOUBLE_EQ(planner.EstimatedCostUs(40), 14.0);
}

TEST(BatchPlannerTest, EqualCostsGoToFewerChunksThenToFewerPaddedRows) {
  // 8 rows: one 8 (10 us) or two 4s (10 us): one chunk holds one slot.
  const BatchPlanner linear = MakePlanner({4, 8}, {5.0, 10.0}, 16);
  EXPECT_EQ(linear.Plan(8), Chunks({{8, 0, 8}}));
  // 0.1 + 0.2 != 0.3 in floating point; rounding is still a tie.
  const BatchPlanner rounded = MakePlanner({1, 2, 3}, {0.1, 0.2, 0.3}, 3);
  EXPECT_EQ(rounded.Plan(3), Chunks({{3, 0, 3}}));
  // 5 rows: size 5 or size 6 at the same cost; 5 pads nothing.
  const BatchPlanner flat = MakePlanner({6, 5}, {10.0, 10.0}, 6);
  EXPECT_EQ(flat.Plan(5), Chunks({{5, 0, 5}}));
  EXPECT_EQ(flat.Plan(4), Chunks({{5, 0, 4}}));
}

// The best (cost, chunks, padded rows) over every multiset of chunks whose
// capacity holds `rows` with no chunk idle, by exhaustive search: an
// independent check of the dynamic programme.
using Score = std::tuple<double, int64_t, int64_t>;

Score BruteForceBest(const std::vector<int64_t>& sizes, const std::vector<double>& costs,
                     int64_t rows) {
  Score best(std::numeric_limits<double>::infinity(), 0, 0);
  // Choose counts per size, in index order; `capacity` rows so far.
  std::function<void(size_t, int64_t, double, int64_t)> search = [&](size_t index, int64_t capacity,
                                                                     double cost, int64_t chunks) {
    if (capacity >= rows) {
      const Score score(cost, chunks, capacity - rows);
      if (std::get<0>(score) < std::get<0>(best) - 1e-9 ||
          (std::abs(std::get<0>(score) - std::get<0>(best)) <= 1e-9 && score < best)) {
        best = score;
      }
      return;  // one more chunk would sit idle
    }
    if (index == sizes.size()) return;
    for (int64_t count = 0; capacity + (count - 1) * sizes[index] < rows; ++count) {
      search(index + 1, capacity + count * sizes[index], cost + count * costs[index],
             chunks + count);
    }
  };
  search(0, 0, 0, 0);
  return best;
}

// Checks the properties every plan has: chunks in row order, contiguous,
// covering [0, rows) exactly, each fitting its captured size, only the last
// padded, and the estimate the sum of the chunks' costs.
void ExpectValidPlan(const BatchPlanner& planner, const std::map<int64_t, double>& cost_of,
                     int64_t rows) {
  const Chunks chunks = planner.Plan(rows);
  ASSERT_FALSE(chunks.empty()) << rows;
  int64_t next_row = 0;
  double cost = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const PlannedChunk& chunk = chunks[k];
    EXPECT_EQ(chunk.first_row, next_row) << rows;
    EXPECT_GE(chunk.rows, 1) << rows;
    EXPECT_LE(chunk.rows, chunk.batch_size) << rows;
    ASSERT_TRUE(cost_of.contains(chunk.batch_size)) << rows << ": size " << chunk.batch_size;
    if (k + 1 < chunks.size()) {
      EXPECT_EQ(chunk.rows, chunk.batch_size) << rows;
    }
    next_row += chunk.rows;
    cost += planner.has_costs() ? cost_of.at(chunk.batch_size) : chunk.batch_size;
  }
  EXPECT_EQ(next_row, rows);
  EXPECT_NEAR(planner.EstimatedCostUs(rows), cost, 1e-9 * cost) << rows;
}

TEST(BatchPlannerTest, EveryPlanCoversItsRowsExactly) {
  const std::vector<std::vector<int64_t>> size_sets = {
      {1}, {7}, {1, 2, 4, 8, 16, 32, 64}, {3, 5}, {1, 8, 64, 256}, {6, 10, 15}, {128, 64}};
  constexpr int64_t kMaxRows = 300;  // above every largest size, so splits are covered
  std::mt19937 generator(7);
  std::uniform_real_distribution<double> cost(1.0, 100.0);
  for (const std::vector<int64_t>& sizes : size_sets) {
    std::vector<double> costs;
    std::map<int64_t, double> cost_of;
    for (int64_t size : sizes) {
      costs.push_back(cost(generator));
      cost_of[size] = costs.back();
    }
    const BatchPlanner padded = MakePlanner(sizes, {}, kMaxRows);
    const BatchPlanner costed = MakePlanner(sizes, costs, kMaxRows);
    for (int64_t rows = 1; rows <= kMaxRows; ++rows) {
      ExpectValidPlan(padded, cost_of, rows);
      ExpectValidPlan(costed, cost_of, rows);
    }
  }
}

TEST(BatchPlannerTest, CostedPlansMatchExhaustiveSearch) {
  const std::vector<std::vector<int64_t>> size_sets = {{1, 2, 4, 8}, {3, 5, 7}, {2, 9}, {4, 6, 16}};
  constexpr int64_t kMaxRows = 40;  // small enough to enumerate every multiset
  std::mt19937 generator(11);
  // Integer costs make ties common, so the tie-breaks are exercised too.
  std::uniform_int_distribution<int> cost(1, 12);
  for (int trial = 0; trial < 20; ++trial) {
    for (const std::vector<int64_t>& sizes : size_sets) {
      std::vector<double> costs(sizes.size());
      for (double& c : costs) c = cost(generator);
      const BatchPlanner planner = MakePlanner(sizes, costs, kMaxRows);
      for (int64_t rows = 1; rows <= kMaxRows; ++rows) {
        const Chunks chunks = planner.Plan(rows);
        int64_t capacity = 0;
        for (const PlannedChunk& chunk : chunks) capacity += chunk.batch_size;
        const Score got(planner.EstimatedCostUs(rows), static_cast<int64_t>(chunks.size()),
                        capacity - rows);
        const Score want = BruteForceBest(sizes, costs, rows);
        EXPECT_NEAR(std::get<0>(got), std::get<0>(want), 1e-9) << "rows " << rows;
        EXPECT_EQ(std::get<1>(got), std::get<1>(want)) << "rows " << rows;
        EXPECT_EQ(std::get<2>(got), std::get<2>(want)) << "rows " << rows;
      }
    }
  }
}

TEST(BatchPlannerTest, RowsOutsideTheRangeGetNoPlan) {
  const BatchPlanner planner = MakePlanner({1, 8}, {2.0, 4.0}, 16);
  EXPECT_TRUE(planner.Plan(0).empty());
  EXPECT_TRUE(planner.Plan(-3).empty());
  EXPECT_TRUE(planner.Plan(17).empty());
  EXPECT_EQ(planner.EstimatedCostUs(17), 0);
  EXPECT_EQ(planner.max_rows(), 16);
}

TEST(BatchPlannerTest, BadArgumentsAreRejected) {
  struct Case {
    std::vector<int64_t> sizes;
    std::vector<double> costs;
    int64_t max_rows;
    const char* expected;
  };
  const double kNan = std::nan("");
  const Case cases[] = {
      {{}, {}, 8, "at least one captured batch size"},
      {{0, 8}, {}, 8, "batch size 0 is below 1"},
      {{-2}, {}, 8, "batch size -2 is below 1"},
      {{8, 1, 8}, {}, 8, "graph 8 is listed twice"},
      {{1, 8}, {3.0}, 8, "1 costs for 2 graphs"},
      {{1, 8}, {3.0, 0.0}, 8, "cost of graph 8 is 0 us"},
      {{1, 8}, {-1.0, 2.0}, 8, "cost of graph 1 is -1 us"},
      {{1, 8}, {kNan, 2.0}, 8, "positive and finite"},
      {{1, 8}, {}, 0, "max_rows is 0"},
      {{1, 8}, {}, BatchPlanner::kMaxPlannedRows + 1, "max_rows is 1048577"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<BatchPlanner> planner =
        BatchPlanner::Create(BatchOnlyKeys(c.sizes), c.costs, c.max_rows);
    ASSERT_FALSE(planner.ok()) << c.expected;
    EXPECT_EQ(planner.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(planner.status().message()), HasSubstr(c.expected));
  }
}

TEST(BatchPlannerTest, EachBucketIsPlannedWithItsOwnCosts) {
  // At 512 positions 32 rows cost more than 16 + 4 (compute-bound); at 16
  // they cost about as much as 16 (launch-bound). Keys in any order.
  const std::vector<GraphKey> keys = {{32, {512}}, {4, {16}},  {16, {512}},
                                      {4, {512}},  {16, {16}}, {32, {16}}};
  const std::vector<double> costs = {4000, 100, 2000, 600, 110, 120};
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(keys, costs, 64);
  ASSERT_TRUE(planner.ok()) << planner.status();
  EXPECT_EQ(planner->batch_sizes(), std::vector<int64_t>({4, 16, 32}));
  EXPECT_EQ(planner->buckets(), std::vector<std::vector<int64_t>>({{16}, {512}}));
  EXPECT_EQ(planner->Plan(20, 0), Chunks({{32, 0, 20}}));
  EXPECT_DOUBLE_EQ(planner->EstimatedCostUs(20, 0), 120);
  EXPECT_EQ(planner->Plan(20, 1), Chunks({{16, 0, 16}, {4, 16, 4}}));
  EXPECT_DOUBLE_EQ(planner->EstimatedCostUs(20, 1), 2600);
  EXPECT_EQ(planner->FirstChunk(20, 1), (PlannedChunk{16, 0, 16}));
  // Out of range: no plan.
  EXPECT_TRUE(planner->Plan(20, 2).empty());
  EXPECT_EQ(planner->FirstChunk(20, 2), PlannedChunk{});
  EXPECT_EQ(planner->EstimatedCostUs(20, 2), 0);
}

TEST(BatchPlannerTest, WithoutCostsEveryBucketPadsAlike) {
  absl::StatusOr<BatchPlanner> planner =
      BatchPlanner::Create({{1, {64}}, {8, {64}}, {1, {128}}, {8, {128}}}, {}, 16);
  ASSERT_TRUE(planner.ok()) << planner.status();
  EXPECT_EQ(planner->Plan(5, 0), Chunks({{8, 0, 5}}));
  EXPECT_EQ(planner->Plan(5, 1), Chunks({{8, 0, 5}}));
  EXPECT_EQ(planner->Plan(9, 1), Chunks({{8, 0, 8}, {1, 8, 1}}));
}

TEST(BatchPlannerTest, EveryBatchSizeMustBeAtEveryBucket) {
  // Size 8 is missing at bucket [128].
  absl::StatusOr<BatchPlanner> missing =
      BatchPlanner::Create({{1, {64}}, {8, {64}}, {1, {128}}}, {}, 16);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("every batch size at every bucket; it got 3 graphs for 2 batch sizes "
                        "at 2 buckets"));
  // As many keys, but [128] has 2 where [64] has 8.
  absl::StatusOr<BatchPlanner> other =
      BatchPlanner::Create({{1, {64}}, {8, {64}}, {1, {128}}, {2, {128}}}, {}, 16);
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("graph 2x[128] is not at batch 8"));
}

TEST(BatchPlannerTest, SizesAboveMaxRowsStillServeAsPadding) {
  // A model captured at 64 with max_batch_size 10: every request pads to 64.
  const BatchPlanner planner = MakePlanner({64}, {5.0}, 10);
  EXPECT_EQ(planner.Plan(10), Chunks({{64, 0, 10}}));
}

}  // namespace
}  // namespace graphserve
