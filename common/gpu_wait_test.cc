#include "common/gpu_wait.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

TEST(ParseGpuWaitTest, NamesEachWaitAndRefusesOthers) {
  EXPECT_EQ(*ParseGpuWait("auto"), GpuWait::kAuto);
  EXPECT_EQ(*ParseGpuWait("spin"), GpuWait::kSpin);
  EXPECT_EQ(*ParseGpuWait("yield"), GpuWait::kYield);
  EXPECT_EQ(*ParseGpuWait("block"), GpuWait::kBlock);
  for (const char* bad : {"nap", "sleep"}) {
    const absl::StatusOr<GpuWait> wait = ParseGpuWait(bad);
    ASSERT_FALSE(wait.ok());
    EXPECT_EQ(wait.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(wait.status().message().find("auto, spin, yield or block, got '"),
              absl::string_view::npos)
        << wait.status();
  }
}

}  // namespace
}  // namespace graphserve
