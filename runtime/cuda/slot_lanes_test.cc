#include "runtime/cuda/slot_lanes.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

class SlotLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(SlotLanesTest, StartsWithOneLaneAndGrowsWithoutShrinking) {
  absl::StatusOr<std::shared_ptr<SlotLanes>> lanes = SlotLanes::Create(0);
  ASSERT_TRUE(lanes.ok()) << lanes.status();
  SlotLanes& l = **lanes;
  EXPECT_EQ(l.lanes(), 1);
  EXPECT_EQ(l.events(), 0);

  ASSERT_TRUE(l.Reserve(3, 5).ok());
  EXPECT_EQ(l.lanes(), 3);
  EXPECT_EQ(l.events(), 5);
  EXPECT_NE(l.side_stream(1).get(), l.side_stream(2).get());
  EXPECT_EQ(l.side_stream(2).device(), 0);

  const cudaStream_t before = l.side_stream(1).get();
  ASSERT_TRUE(l.Reserve(2, 1).ok());  // smaller: a no-op
  EXPECT_EQ(l.lanes(), 3);
  EXPECT_EQ(l.events(), 5);
  EXPECT_EQ(l.side_stream(1).get(), before);
}

}  // namespace
}  // namespace graphserve
