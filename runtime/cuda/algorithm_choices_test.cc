#include "runtime/cuda/algorithm_choices.h"

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "runtime/cuda/gemm.h"

namespace graphserve {
namespace {

TEST(AlgorithmChoicesTest, RecordsPerKey) {
  AlgorithmChoices choices;
  EXPECT_FALSE(choices.Find("GEMM 8x768x768").has_value());
  choices.Record("GEMM 8x768x768", 3);
  EXPECT_EQ(choices.Find("GEMM 8x768x768"), 3);
  EXPECT_FALSE(choices.Find("GEMM 16x768x768").has_value());
}

// One problem, one key, wherever it occurs; any option that shapes
// cuBLASLt's proposals makes another.
TEST(AlgorithmChoicesTest, GemmKeysNameTheProblemNotTheNode) {
  GemmOptions qkv{.m = 4096, .n = 768, .k = 768};
  const GemmOptions out = qkv;
  EXPECT_EQ(GemmChoiceKey(qkv), GemmChoiceKey(out));
  GemmOptions longer = qkv;
  longer.m = 8192;
  EXPECT_NE(GemmChoiceKey(longer), GemmChoiceKey(qkv));
  GemmOptions transposed = qkv;
  transposed.trans_b = true;
  EXPECT_NE(GemmChoiceKey(transposed), GemmChoiceKey(qkv));
  GemmOptions biased = qkv;
  biased.epilogue = GemmEpilogue::kBias;
  EXPECT_NE(GemmChoiceKey(biased), GemmChoiceKey(qkv));
  GemmOptions half = qkv;
  half.a_dtype = half.b_dtype = DType::kFloat16;
  EXPECT_NE(GemmChoiceKey(half), GemmChoiceKey(qkv));
}

TEST(AlgorithmChoicesTest, SharesPlansByKey) {
  AlgorithmChoices choices;
  EXPECT_EQ(choices.FindPlan("Conv a"), nullptr);
  auto plan = std::make_shared<const int>(7);
  choices.RecordPlan("Conv a", plan);
  EXPECT_EQ(choices.FindPlan("Conv a"), plan);  // the same object, not a copy
  EXPECT_EQ(choices.FindPlan("Conv b"), nullptr);
}

TEST(AlgorithmChoicesTest, KeepsSlowdownsPerShape) {
  AlgorithmChoices choices;
  EXPECT_TRUE(choices.FindSlowdowns("Conv a").empty());
  choices.RecordSlowdowns("Conv a", {{"eng0", 1.0f}, {"eng5", 40.0f}});
  const AlgorithmChoices::Slowdowns want = {{"eng0", 1.0f}, {"eng5", 40.0f}};
  EXPECT_EQ(choices.FindSlowdowns("Conv a"), want);
  EXPECT_TRUE(choices.FindSlowdowns("Conv b").empty());
  choices.RecordSlowdowns("Conv a", {{"eng0", 1.0f}});  // the caller merged: replaced
  EXPECT_EQ(choices.FindSlowdowns("Conv a").size(), 1u);
}

// Host memory stands in for device memory: only ownership is tested.
TEST(AlgorithmChoicesTest, SharesOneTimingScratchAndGrowsIt) {
  AlgorithmChoices choices;
  int allocations = 0;
  int live = 0;  // buffers not yet freed
  const AlgorithmChoices::ScratchAllocator allocate =
      [&](size_t bytes) -> absl::StatusOr<std::shared_ptr<void>> {
    ++allocations;
    ++live;
    return std::shared_ptr<void>(new char[bytes], [&live](void* p) {
      delete[] static_cast<char*>(p);
      --live;
    });
  };
  absl::StatusOr<void*> a = choices.TimingScratch(64, allocate);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<void*> b = choices.TimingScratch(32, allocate);  // fits: the same buffer
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(allocations, 1);
  absl::StatusOr<void*> c = choices.TimingScratch(128, allocate);  // grows
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(allocations, 2);
  EXPECT_EQ(live, 1) << "the smaller buffer is freed";
  absl::StatusOr<void*> d = choices.TimingScratch(128, allocate);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*c, *d);
  EXPECT_EQ(allocations, 2);
  choices.ReleaseTimingScratch();  // a loaded model holds none
  EXPECT_EQ(live, 0);
  ASSERT_TRUE(choices.TimingScratch(16, allocate).ok());
  EXPECT_EQ(allocations, 3);
  EXPECT_EQ(live, 1);
}

TEST(AlgorithmChoicesTest, TimingScratchReportsAllocationFailure) {
  AlgorithmChoices choices;
  absl::StatusOr<void*> scratch =
      choices.TimingScratch(64, [](size_t) -> absl::StatusOr<std::shared_ptr<void>> {
        return absl::ResourceExhaustedError("out of device memory");
      });
  EXPECT_EQ(scratch.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace graphserve
