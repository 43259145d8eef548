#include "common/lost_cuda_context.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace graphserve {
namespace {

std::atomic<int> handler_calls{0};
void CountCall() { handler_calls.fetch_add(1); }

class LostCudaContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ResetLostCudaContextForTest();
    handler_calls = 0;
  }
  void TearDown() override { ResetLostCudaContextForTest(); }
};

TEST_F(LostCudaContextTest, NothingLostUntilReported) {
  EXPECT_FALSE(CudaContextLost());
  EXPECT_EQ(LostCudaContextReason(), "");
}

// Every slot of a lost GPU fails its chunks and reports; the process reacts
// once, and the first cause is the one kept.
TEST_F(LostCudaContextTest, FirstReportIsKeptAndTheHandlerRunsOnce) {
  SetLostCudaContextHandler(&CountCall);
  constexpr int kSlots = 8;  // as many concurrent reporters as a busy model's slots
  std::vector<std::thread> reporters;
  for (int slot = 0; slot < kSlots; ++slot) {
    reporters.emplace_back([] {
      ReportLostCudaContext(1, absl::InternalError("cudaEventSynchronize failed: "
                                                   "cudaErrorIllegalAddress"));
    });
  }
  for (std::thread& reporter : reporters) reporter.join();
  ReportLostCudaContext(0, absl::InternalError("a later, different report"));
  EXPECT_TRUE(CudaContextLost());
  EXPECT_EQ(handler_calls.load(), 1);
  EXPECT_EQ(LostCudaContextReason(),
            "GPU 1: cudaEventSynchronize failed: cudaErrorIllegalAddress");
}

TEST_F(LostCudaContextTest, WithoutAHandlerTheLossIsStillRecorded) {
  ReportLostCudaContext(0, absl::InternalError("cudaErrorLaunchFailure"));
  EXPECT_TRUE(CudaContextLost());
  EXPECT_EQ(handler_calls.load(), 0);
}

}  // namespace
}  // namespace graphserve
