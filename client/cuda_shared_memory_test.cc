#include "client/cuda_shared_memory.h"

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// Whether this machine has a CUDA device for the client to use.
bool HaveGpu() { return CheckCudaDevice(0).ok(); }

TEST(CudaSharedMemoryTest, WithoutAGpuEveryCallSaysSoClearly) {
  if (HaveGpu()) GTEST_SKIP() << "this machine has a GPU; the no-GPU error cannot happen";
  const absl::Status checked = CheckCudaDevice(0);
  EXPECT_EQ(checked.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(
      absl::StartsWith(checked.message(),
                       "no CUDA device: --shared-memory cuda needs a GPU on the client's machine"))
      << checked;
  const absl::StatusOr<std::unique_ptr<CudaSharedMemory>> memory = CudaSharedMemory::Create(0, 256);
  EXPECT_EQ(memory.status(), checked);
}

TEST(CudaSharedMemoryTest, CopiesInAndOutAndExportsAnIpcHandle) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device: " << CheckCudaDevice(0);
  absl::StatusOr<std::unique_ptr<CudaSharedMemory>> memory = CudaSharedMemory::Create(0, 1000);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ((*memory)->device(), 0);
  EXPECT_EQ((*memory)->byte_size(), 1000u);
  EXPECT_EQ((*memory)->ipc_handle().size(), 64u);  // sizeof(cudaIpcMemHandle_t)

  absl::StatusOr<std::string> zeros = (*memory)->CopyOut(0, 1000);
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  EXPECT_EQ(*zeros, std::string(1000, '\0'));
  ASSERT_TRUE((*memory)->CopyIn(512, "graphserve").ok());
  absl::StatusOr<std::string> back = (*memory)->CopyOut(512, 10);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, "graphserve");
}

TEST(CudaSharedMemoryTest, RefusesRangesPastTheEndAndUnknownDevices) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device: " << CheckCudaDevice(0);
  absl::StatusOr<std::unique_ptr<CudaSharedMemory>> memory = CudaSharedMemory::Create(0, 16);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ((*memory)->CopyIn(10, "seven b").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*memory)->CopyOut(17, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CheckCudaDevice(1 << 20).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
