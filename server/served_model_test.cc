// Which models' stream workers sleep while their chunks run (Note [How
// threads wait for the GPU] in server/served_model.h): a decision on the
// cost table alone, so it runs without a GPU.
#include "server/served_model.h"

#include <gtest/gtest.h>

#include <vector>

namespace graphserve {
namespace {

// auto sleeps from the threshold on, judged by the smallest size's chunk
// (the first entry); larger sizes' costs do not count.
TEST(SleepsWhileWaitingTest, AutoSleepsWhenTheSmallestChunkIsLong) {
  EXPECT_FALSE(SleepsWhileWaiting(GpuWait::kAuto, {kSleepingWaitFromUs - 1, 900}));
  EXPECT_TRUE(SleepsWhileWaiting(GpuWait::kAuto, {kSleepingWaitFromUs, 900}));
  EXPECT_TRUE(SleepsWhileWaiting(GpuWait::kAuto, {221.3, 271.5, 334.3}));  // the encoder
  EXPECT_FALSE(SleepsWhileWaiting(GpuWait::kAuto, {29.8, 33.1, 55.0}));    // the demo MLP
  // No cost table (a host-only model): nothing to judge by.
  EXPECT_FALSE(SleepsWhileWaiting(GpuWait::kAuto, {}));
}

// The explicit waits are one way for every model.
TEST(SleepsWhileWaitingTest, ExplicitWaitsIgnoreTheCosts) {
  for (const std::vector<double>& costs : {std::vector<double>{}, {30.0}, {500.0}}) {
    EXPECT_TRUE(SleepsWhileWaiting(GpuWait::kBlock, costs));
    EXPECT_FALSE(SleepsWhileWaiting(GpuWait::kSpin, costs));
    EXPECT_FALSE(SleepsWhileWaiting(GpuWait::kYield, costs));
  }
}

}  // namespace
}  // namespace graphserve
