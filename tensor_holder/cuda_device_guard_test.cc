#include "tensor_holder/cuda_device_guard.h"

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

// Runs everywhere: without a GPU every ordinal is missing.
TEST(ValidateCudaDeviceTest, RejectsNegativeAndMissingOrdinals) {
  EXPECT_EQ(ValidateCudaDevice(-1).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status missing = ValidateCudaDevice(CudaDeviceCount());
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("the driver sees"), absl::string_view::npos) << missing;
}

class CudaDeviceGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

TEST_F(CudaDeviceGuardTest, ValidOrdinalsPass) {
  EXPECT_TRUE(ValidateCudaDevice(0).ok());
  EXPECT_TRUE(ValidateCudaDevice(CudaDeviceCount() - 1).ok());
}

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
