#include "tensor_holder/memory_planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace graphserve {
namespace {

constexpr size_t kKiB = 1024;

// --- An independent checker: plain graph search, no bitsets, no sorting. ---

// happens_before[a][b]: step a is a transitive predecessor of step b.
std::vector<std::vector<bool>> BruteForceHappensBefore(
    const std::vector<std::vector<int>>& predecessors) {
  const int n = static_cast<int>(predecessors.size());
  std::vector<std::vector<bool>> before(n, std::vector<bool>(n, false));
  for (int target = 0; target < n; ++target) {
    std::vector<int> stack = predecessors[target];
    while (!stack.empty()) {
      const int step = stack.back();
      stack.pop_back();
      if (before[step][target]) continue;
      before[step][target] = true;
      for (int pred : predecessors[step]) stack.push_back(pred);
    }
  }
  return before;
}

bool BruteForceFinishesBefore(const PlannedBuffer& first, const PlannedBuffer& second,
                              const std::vector<std::vector<bool>>& before) {
  if (!before[first.producer_step][second.producer_step]) return false;
  for (int reader : first.reader_steps) {
    if (!before[reader][second.producer_step]) return false;
  }
  return true;
}

// Every conflicting pair is disjoint, offsets are aligned, the arena holds
// every buffer and is at least the lower bound.
void ExpectValidPlan(const MemoryPlanInput& input, const MemoryPlan& plan,
                     const std::string& context) {
  ASSERT_EQ(plan.offsets.size(), input.buffers.size()) << context;
  const auto before = BruteForceHappensBefore(input.step_predecessors);
  size_t needed = 0;
  for (size_t i = 0; i < input.buffers.size(); ++i) {
    const PlannedBuffer& a = input.buffers[i];
    EXPECT_EQ(plan.offsets[i] % input.alignment, 0u) << context << " buffer " << i;
    if (a.bytes == 0) {
      EXPECT_EQ(plan.offsets[i], 0u) << context << " buffer " << i;
      continue;
    }
    needed = std::max(needed, plan.offsets[i] + a.bytes);
    for (size_t j = i + 1; j < input.buffers.size(); ++j) {
      const PlannedBuffer& b = input.buffers[j];
      if (b.bytes == 0) continue;
      const bool may_share =
          BruteForceFinishesBefore(a, b, before) || BruteForceFinishesBefore(b, a, before);
      if (may_share) continue;
      const bool disjoint = plan.offsets[i] + a.bytes <= plan.offsets[j] ||
                            plan.offsets[j] + b.bytes <= plan.offsets[i];
      EXPECT_TRUE(disjoint) << context << ": buffers " << i << " [" << plan.offsets[i] << ", +"
                            << a.bytes << ") and " << j << " [" << plan.offsets[j] << ", +"
                            << b.bytes << ") may be live at once but overlap";
    }
  }
  EXPECT_EQ(plan.arena_bytes, needed) << context;
  EXPECT_GE(plan.arena_bytes, plan.lower_bound_bytes) << context;
}

// Peak over steps in index order of the bytes whose [producer, last reader]
// covers the step; only meaningful when index order is topological.
size_t BruteForcePeakLiveBytes(const MemoryPlanInput& input) {
  size_t peak = 0;
  for (int step = 0; step < input.num_steps; ++step) {
    size_t live = 0;
    for (const PlannedBuffer& buffer : input.buffers) {
      int last = buffer.producer_step;
      for (int reader : buffer.reader_steps) last = std::max(last, reader);
      if (buffer.producer_step <= step && step <= last) live += buffer.bytes;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

PlannedBuffer Buffer(size_t bytes, int producer, std::vector<int> readers) {
  PlannedBuffer buffer;
  buffer.bytes = bytes;
  buffer.producer_step = producer;
  buffer.reader_steps = std::move(readers);
  return buffer;
}

// --- Hand cases. ---

TEST(LinearScheduleTest, EachStepDependsOnThePreviousOne) {
  const std::vector<std::vector<int>> expected = {{}, {0}, {1}, {2}};
  EXPECT_EQ(LinearSchedule(4), expected);
  EXPECT_TRUE(LinearSchedule(0).empty());
}

TEST(MemoryPlannerTest, EmptyInputGivesEmptyPlan) {
  absl::StatusOr<MemoryPlan> plan = PlanMemory(MemoryPlanInput{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->offsets.empty());
  EXPECT_EQ(plan->arena_bytes, 0u);
  EXPECT_EQ(plan->lower_bound_bytes, 0u);
}

TEST(MemoryPlannerTest, ChainReusesBuffersThatAreDead) {
  // a -> b -> c: `a` is last read by step 1, before `c` is written at step 2.
  MemoryPlanInput input;
  input.num_steps = 4;
  input.step_predecessors = LinearSchedule(4);
  input.buffers = {Buffer(kKiB, 0, {1}), Buffer(kKiB, 1, {2}), Buffer(kKiB, 2, {3})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "chain");
  EXPECT_EQ(plan->offsets[0], plan->offsets[2]);
  EXPECT_NE(plan->offsets[0], plan->offsets[1]);
  EXPECT_EQ(plan->arena_bytes, 2 * kKiB);
  EXPECT_EQ(plan->lower_bound_bytes, 2 * kKiB);
}

TEST(MemoryPlannerTest, LowerBoundIsReachedOnShrinkingChain) {
  // An MLP's activations: each layer's output is read by the next layer only.
  const std::vector<size_t> sizes = {64 * kKiB, 32 * kKiB, 16 * kKiB, 16 * kKiB, 4 * kKiB, kKiB};
  const int steps = static_cast<int>(sizes.size()) + 1;
  MemoryPlanInput input;
  input.num_steps = steps;
  input.step_predecessors = LinearSchedule(steps);
  for (size_t i = 0; i < sizes.size(); ++i) {
    input.buffers.push_back(Buffer(sizes[i], static_cast<int>(i), {static_cast<int>(i) + 1}));
  }
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "shrinking chain");
  EXPECT_EQ(plan->lower_bound_bytes, 96 * kKiB);  // the first two layers
  EXPECT_EQ(plan->lower_bound_bytes, BruteForcePeakLiveBytes(input));
  EXPECT_EQ(plan->arena_bytes, plan->lower_bound_bytes);
}

TEST(MemoryPlannerTest, ParallelBranchesNeverShare) {
  //     1
  //   /   \      steps 1 and 2 may run at once on two streams
  // 0       3
  //   \   /
  //     2
  // Scratch buffers of steps 1 and 2 have no readers. In index order they are
  // never live together (so the lower bound is one buffer), but the DAG lets
  // the branches overlap in time, so they must not share bytes.
  MemoryPlanInput input;
  input.num_steps = 4;
  input.step_predecessors = {{}, {0}, {0}, {1, 2}};
  input.buffers = {Buffer(kKiB, 1, {}), Buffer(kKiB, 2, {})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "diamond");
  EXPECT_NE(plan->offsets[0], plan->offsets[1]);
  EXPECT_EQ(plan->arena_bytes, 2 * kKiB);
  EXPECT_EQ(plan->lower_bound_bytes, kKiB);

  // The same buffers on one stream share.
  input.step_predecessors = LinearSchedule(4);
  plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "diamond linearised");
  EXPECT_EQ(plan->arena_bytes, kKiB);
}

TEST(MemoryPlannerTest, BranchOutputsReadAtTheJoinDoNotShareButReuseTheInput) {
  // Step 0 writes `in`, both branches read it and write `left` / `right`,
  // step 3 reads both and writes `out`. `out` may reuse `in` (all of `in`'s
  // readers happen before step 3), never `left` or `right`.
  MemoryPlanInput input;
  input.num_steps = 5;
  input.step_predecessors = {{}, {0}, {0}, {1, 2}, {3}};
  input.buffers = {Buffer(4 * kKiB, 0, {1, 2}), Buffer(4 * kKiB, 1, {3}), Buffer(4 * kKiB, 2, {3}),
                   Buffer(4 * kKiB, 3, {4})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "diamond with join");
  EXPECT_EQ(plan->arena_bytes, 12 * kKiB);
  EXPECT_EQ(plan->offsets[3], plan->offsets[0]);
}

TEST(MemoryPlannerTest, OffsetsAreAlignedAndZeroByteBuffersTakeNoSpace) {
  MemoryPlanInput input;
  input.num_steps = 2;
  input.step_predecessors = LinearSchedule(2);
  input.alignment = 256;
  input.buffers = {Buffer(100, 0, {1}), Buffer(0, 0, {1}), Buffer(300, 0, {1})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "alignment");
  EXPECT_EQ(plan->offsets[1], 0u);
  EXPECT_EQ(plan->offsets[2], 0u);    // largest first
  EXPECT_EQ(plan->offsets[0], 512u);  // 300 rounded up to the alignment
  EXPECT_EQ(plan->arena_bytes, 612u);
  EXPECT_EQ(plan->lower_bound_bytes, 400u);
}

TEST(MemoryPlannerTest, BestFitPicksTheSmallestGapThatHolds) {
  // On one stream: a, c, e live through steps 0-3; b and d die after step 1.
  // Largest first lays them out as [a 4K | b 3K | c 2K | d 1K | e 1K]. Then
  // f (1K, live at steps 2-3) may reuse b's or d's bytes: first fit would
  // take b's 3K hole, best fit takes d's 1K hole and keeps 3K free.
  MemoryPlanInput input;
  input.num_steps = 4;
  input.step_predecessors = LinearSchedule(4);
  input.buffers = {Buffer(4 * kKiB, 0, {3}), Buffer(3 * kKiB, 0, {1}), Buffer(2 * kKiB, 0, {3}),
                   Buffer(1 * kKiB, 0, {1}), Buffer(1 * kKiB, 0, {3}), Buffer(1 * kKiB, 2, {3})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "best fit");
  const std::vector<size_t> expected = {0, 4 * kKiB, 7 * kKiB, 9 * kKiB, 10 * kKiB, 9 * kKiB};
  EXPECT_EQ(plan->offsets, expected);
  EXPECT_EQ(plan->arena_bytes, 11 * kKiB);
  EXPECT_EQ(plan->lower_bound_bytes, 11 * kKiB);
}

TEST(MemoryPlannerTest, IndexOrderNeedNotBeTopological) {
  // Execution order is 1, 2, 0.
  MemoryPlanInput input;
  input.num_steps = 3;
  input.step_predecessors = {{2}, {}, {1}};
  input.buffers = {Buffer(kKiB, 1, {2}), Buffer(kKiB, 0, {}), Buffer(kKiB, 2, {0})};
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ExpectValidPlan(input, *plan, "reversed");
  EXPECT_EQ(plan->offsets[0], plan->offsets[1]);  // buffer 0 is dead when step 0 runs
  EXPECT_EQ(plan->arena_bytes, 2 * kKiB);
  EXPECT_EQ(plan->lower_bound_bytes, 2 * kKiB);  // measured in execution order
}

// --- Invalid input. ---

void ExpectInvalid(const MemoryPlanInput& input, const std::string& message_part) {
  absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(message_part), absl::string_view::npos) << plan.status();
}

TEST(MemoryPlannerTest, RejectsCycleAndNamesIt) {
  MemoryPlanInput input;
  input.num_steps = 4;
  input.step_predecessors = {{}, {0, 3}, {1}, {2}};  // 1 -> 2 -> 3 -> 1
  ExpectInvalid(input, "not a DAG");
  ExpectInvalid(input, "1 -> 2 -> 3 -> 1");
}

TEST(MemoryPlannerTest, RejectsSelfDependency) {
  MemoryPlanInput input;
  input.num_steps = 2;
  input.step_predecessors = {{}, {1}};
  ExpectInvalid(input, "step 1 depends on itself");
}

TEST(MemoryPlannerTest, RejectsOutOfRangeSteps) {
  MemoryPlanInput input;
  input.num_steps = 2;
  input.step_predecessors = {{}, {5}};
  ExpectInvalid(input, "depends on step 5");

  input.step_predecessors = LinearSchedule(2);
  input.buffers = {Buffer(kKiB, 2, {})};
  ExpectInvalid(input, "producer step 2");
  input.buffers = {Buffer(kKiB, 0, {-1})};
  ExpectInvalid(input, "reader step -1");
}

TEST(MemoryPlannerTest, RejectsReaderThatDoesNotDependOnProducer) {
  MemoryPlanInput input;
  input.num_steps = 3;
  input.step_predecessors = {{}, {0}, {0}};  // 1 and 2 are parallel
  input.buffers = {Buffer(kKiB, 1, {2})};
  ExpectInvalid(input, "reader step 2 does not depend on producer step 1");
}

TEST(MemoryPlannerTest, RejectsMissingPredecessorListsAndBadAlignment) {
  MemoryPlanInput input;
  input.num_steps = 3;
  input.step_predecessors = LinearSchedule(2);
  ExpectInvalid(input, "step_predecessors has 2 entries for 3 steps");

  input.step_predecessors = LinearSchedule(3);
  input.alignment = 384;
  ExpectInvalid(input, "alignment 384 is not a power of two");
  input.alignment = 0;
  ExpectInvalid(input, "alignment 0");
}

TEST(MemoryPlannerTest, RejectsSizesThatOverflow) {
  MemoryPlanInput input;
  input.num_steps = 1;
  input.step_predecessors = LinearSchedule(1);
  input.buffers = {Buffer(~size_t{0} / 2, 0, {}), Buffer(~size_t{0} / 2, 0, {})};
  ExpectInvalid(input, "overflow");
}

// --- Randomised DAGs against the brute-force checker. ---

// A random DAG over `n` steps whose step numbers are shuffled, so index order
// is usually not a topological order.
std::vector<std::vector<int>> RandomDag(int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double edge_probability = 0.02 + 0.4 * unit(rng);
  std::vector<int> label(n);
  std::iota(label.begin(), label.end(), 0);
  const bool shuffle = unit(rng) < 0.5;
  if (shuffle) std::shuffle(label.begin(), label.end(), rng);
  std::vector<std::vector<int>> predecessors(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) {
      if (unit(rng) < edge_probability) predecessors[label[i]].push_back(label[j]);
    }
  }
  return predecessors;
}

std::vector<PlannedBuffer> RandomBuffers(const std::vector<std::vector<int>>& predecessors,
                                         std::mt19937& rng) {
  const int n = static_cast<int>(predecessors.size());
  const auto before = BruteForceHappensBefore(predecessors);
  std::uniform_int_distribution<int> count_dist(0, 3 * n);
  std::uniform_int_distribution<int> step_dist(0, n - 1);
  std::uniform_int_distribution<int> readers_dist(0, 4);
  std::uniform_int_distribution<size_t> bytes_dist(1, 64 * kKiB);
  std::uniform_int_distribution<int> kind_dist(0, 9);
  std::vector<PlannedBuffer> buffers(count_dist(rng));
  for (PlannedBuffer& buffer : buffers) {
    const int kind = kind_dist(rng);
    buffer.bytes = kind == 0 ? 0 : kind == 1 ? 256 * (bytes_dist(rng) % 64 + 1) : bytes_dist(rng);
    buffer.producer_step = step_dist(rng);
    std::vector<int> later;
    for (int step = 0; step < n; ++step) {
      if (before[buffer.producer_step][step]) later.push_back(step);
    }
    if (later.empty()) continue;
    const int readers = readers_dist(rng);
    for (int r = 0; r < readers; ++r) {
      std::uniform_int_distribution<size_t> pick(0, later.size() - 1);
      buffer.reader_steps.push_back(later[pick(rng)]);
    }
  }
  return buffers;
}

TEST(MemoryPlannerTest, RandomDagsNeverOverlapLiveBuffers) {
  constexpr int kIterations = 1500;  // about a second; thousands of conflicting pairs
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> steps_dist(1, 40);
  std::uniform_int_distribution<int> alignment_log2(0, 9);
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    MemoryPlanInput input;
    input.num_steps = steps_dist(rng);
    input.step_predecessors = RandomDag(input.num_steps, rng);
    input.buffers = RandomBuffers(input.step_predecessors, rng);
    input.alignment = size_t{1} << alignment_log2(rng);
    absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
    ASSERT_TRUE(plan.ok()) << "iteration " << iteration << ": " << plan.status();
    ExpectValidPlan(input, *plan, absl::StrCat("iteration ", iteration));
    if (HasFailure()) return;  // one bad plan is enough to read
  }
}

TEST(MemoryPlannerTest, RandomLinearChainsStayCloseToTheLowerBound) {
  // Activations of a single-stream network: each buffer is read by one to
  // three of the next few steps (skip connections), sizes from 4 KiB to
  // 1 MiB so 256-byte alignment is noise.
  constexpr int kIterations = 300;
  // The design asks for 1.5x on average; measured with this seed: mean 1.08,
  // worst 1.39.
  constexpr double kMeanRatioLimit = 1.25;
  constexpr double kWorstRatioLimit = 1.5;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> steps_dist(4, 80);
  std::uniform_int_distribution<size_t> bytes_dist(4 * kKiB, 1024 * kKiB);
  std::uniform_int_distribution<int> reach_dist(1, 4);
  std::uniform_int_distribution<int> readers_dist(1, 3);
  double ratio_sum = 0;
  double worst = 0;
  size_t planned = 0;
  size_t unshared = 0;
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    MemoryPlanInput input;
    input.num_steps = steps_dist(rng);
    input.step_predecessors = LinearSchedule(input.num_steps);
    for (int step = 0; step + 1 < input.num_steps; ++step) {
      PlannedBuffer buffer = Buffer(bytes_dist(rng), step, {});
      const int readers = readers_dist(rng);
      for (int r = 0; r < readers; ++r) {
        buffer.reader_steps.push_back(std::min(step + reach_dist(rng), input.num_steps - 1));
      }
      unshared += buffer.bytes;
      input.buffers.push_back(buffer);
    }
    absl::StatusOr<MemoryPlan> plan = PlanMemory(input);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ExpectValidPlan(input, *plan, absl::StrCat("chain ", iteration));
    ASSERT_EQ(plan->lower_bound_bytes, BruteForcePeakLiveBytes(input)) << "chain " << iteration;
    const double ratio = static_cast<double>(plan->arena_bytes) / plan->lower_bound_bytes;
    ratio_sum += ratio;
    worst = std::max(worst, ratio);
    planned += plan->arena_bytes;
  }
  const double mean = ratio_sum / kIterations;
  std::cout << "arena / lower bound over " << kIterations << " random chains: mean " << mean
            << ", worst " << worst
            << "; arena / no reuse: " << static_cast<double>(planned) / unshared << "\n";
  EXPECT_LE(mean, kMeanRatioLimit);
  EXPECT_LE(worst, kWorstRatioLimit);
  // Reuse pays: far less than giving every buffer its own bytes.
  EXPECT_LT(planned, unshared / 2);
}

}  // namespace
}  // namespace graphserve
