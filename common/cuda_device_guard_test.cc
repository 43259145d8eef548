#include "common/cuda_device_guard.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "common/cuda_handles.h"

namespace graphserve {
namespace {

int CurrentDevice() {
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
  return device;
}

class CudaDeviceGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

TEST_F(CudaDeviceGuardTest, SelectsTheDeviceAndRestoresThePreviousOne) {
  const int last = CudaDeviceCount() - 1;  // device 0 itself on a one-GPU machine
  {
    CudaDeviceGuard guard(last);
    ASSERT_TRUE(guard.status().ok()) << guard.status();
    EXPECT_EQ(CurrentDevice(), last);
  }
  EXPECT_EQ(CurrentDevice(), 0);
}

TEST_F(CudaDeviceGuardTest, RestoresANonZeroPreviousDeviceOnTwoGpus) {
  if (CudaDeviceCount() < 2) GTEST_SKIP() << "needs two CUDA devices";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  {
    CudaDeviceGuard outer(0);
    ASSERT_TRUE(outer.status().ok()) << outer.status();
    EXPECT_EQ(CurrentDevice(), 0);
    {
      CudaDeviceGuard inner(1);
      ASSERT_TRUE(inner.status().ok()) << inner.status();
      EXPECT_EQ(CurrentDevice(), 1);
    }
    EXPECT_EQ(CurrentDevice(), 0);
  }
  EXPECT_EQ(CurrentDevice(), 1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST_F(CudaDeviceGuardTest, MissingDeviceIsAnErrorAndChangesNothing) {
  {
    CudaDeviceGuard guard(CudaDeviceCount());
    EXPECT_FALSE(guard.status().ok());
    EXPECT_NE(guard.status().message().find("cudaSetDevice"), absl::string_view::npos)
        << guard.status();
    EXPECT_EQ(CurrentDevice(), 0);
  }
  EXPECT_EQ(CurrentDevice(), 0);
  // The failure was cleared, so it cannot surface in an unrelated check later.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace graphserve
