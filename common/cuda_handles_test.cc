#include "common/cuda_handles.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace graphserve {
namespace {

class CudaHandlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(CudaHandlesTest, RoundTripThroughDeviceAndPinnedBuffers) {
  constexpr size_t kCount = 1000;  // not a multiple of any page or warp size
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<DeviceBuffer> device = DeviceBuffer::Allocate(kCount * sizeof(float));
  ASSERT_TRUE(device.ok()) << device.status();
  absl::StatusOr<PinnedHostBuffer> pinned = PinnedHostBuffer::Allocate(kCount * sizeof(float));
  ASSERT_TRUE(pinned.ok()) << pinned.status();

  std::vector<float> values(kCount);
  for (size_t i = 0; i < kCount; ++i) values[i] = 0.5f * static_cast<float>(i) - 7.0f;
  std::memcpy(pinned->get(), values.data(), kCount * sizeof(float));
  ASSERT_EQ(cudaMemcpyAsync(device->get(), pinned->get(), kCount * sizeof(float),
                            cudaMemcpyHostToDevice, stream->get()),
            cudaSuccess);
  std::memset(pinned->get(), 0xFF, kCount * sizeof(float));
  ASSERT_EQ(cudaMemcpyAsync(pinned->get(), device->get(), kCount * sizeof(float),
                            cudaMemcpyDeviceToHost, stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  EXPECT_EQ(std::memcmp(pinned->get(), values.data(), kCount * sizeof(float)), 0);
}

TEST_F(CudaHandlesTest, ImpossibleAllocationIsResourceExhausted) {
  absl::StatusOr<DeviceBuffer> huge = DeviceBuffer::Allocate(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  // The process stays usable afterwards.
  EXPECT_TRUE(DeviceBuffer::Allocate(256).ok());
}

}  // namespace
}  // namespace graphserve
