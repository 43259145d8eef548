#include "capture/reference_plans.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

// Note [An independent reference]: a float32 model whose plans may use TF32
// (the server's --allow-tf32) is checked at TF32's tolerance, not at exact
// float32's 1e-4, which its right replays exceed (about 1e-3 on BERT-base).
TEST(ReferenceTolerance, FollowsWhatTheReplaysComputeIn) {
  EXPECT_EQ(CheckedPrecision(ModelPrecision::kFp32, false), ModelPrecision::kFp32);
  EXPECT_EQ(CheckedPrecision(ModelPrecision::kFp32, true), ModelPrecision::kTf32);
  EXPECT_EQ(CheckedPrecision(ModelPrecision::kFp16, true), ModelPrecision::kFp16);
  EXPECT_EQ(CheckedPrecision(ModelPrecision::kAuto, false), ModelPrecision::kAuto);
  EXPECT_DOUBLE_EQ(ReferenceTolerance(ModelPrecision::kFp32), 1e-4);
  EXPECT_DOUBLE_EQ(ReferenceTolerance(CheckedPrecision(ModelPrecision::kFp32, true)), 1e-2);
  EXPECT_DOUBLE_EQ(ReferenceTolerance(ModelPrecision::kFp16), 3e-2);
  EXPECT_DOUBLE_EQ(ReferenceTolerance(ModelPrecision::kAuto), 3e-2);
  EXPECT_DOUBLE_EQ(ReferenceTolerance(ModelPrecision::kBf16), 6e-2);
}

}  // namespace
}  // namespace graphserve
