#include "tensor_holder/io_buffers.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/cuda_handles.h"

namespace graphserve {
namespace {

constexpr size_t kImpossibleBytes = size_t{1} << 50;  // 1 PiB: no GPU has it

// Runs everywhere: without a GPU every ordinal is missing.
TEST(IoBuffersCreateTest, RejectsMissingDevice) {
  EXPECT_EQ(IoBuffers::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(IoBuffers::Create(CudaDeviceCount()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class IoBuffersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<std::shared_ptr<IoBuffers>> io = IoBuffers::Create(0);
    ASSERT_TRUE(io.ok()) << io.status();
    io_ = *io;
  }
  std::shared_ptr<IoBuffers> io_;
};

TEST_F(IoBuffersTest, UnknownNamesHaveNoBuffers) {
  EXPECT_EQ(io_->device("input"), nullptr);
  EXPECT_EQ(io_->host("input"), nullptr);
  EXPECT_EQ(io_->bytes("input"), 0u);
  EXPECT_EQ(io_->device_bytes(), 0u);
  EXPECT_EQ(io_->pinned_bytes(), 0u);
}

TEST_F(IoBuffersTest, ReserveRoundsUpToGranulesAndAccounts) {
  ASSERT_TRUE(io_->Reserve("input", 1000).ok());    // -> 1024
  ASSERT_TRUE(io_->Reserve("scalar_out", 0).ok());  // -> 256, still non-null
  EXPECT_EQ(io_->bytes("input"), 1024u);
  EXPECT_EQ(io_->bytes("scalar_out"), 256u);
  EXPECT_NE(io_->device("scalar_out"), nullptr);
  EXPECT_NE(io_->host("scalar_out"), nullptr);
  EXPECT_EQ(io_->device_bytes(), 1280u);
  EXPECT_EQ(io_->pinned_bytes(), 1280u);
}

// Note [Double-buffered staging]: two host sides per name, both pinned,
// grown together by Reserve and counted in pinned_bytes.
TEST_F(IoBuffersTest, SeveralHostSidesArePinnedAndGrowTogether) {
  EXPECT_EQ(IoBuffers::Create(0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(IoBuffers::Create(0, IoBuffers::kMaxHostBuffers + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::shared_ptr<IoBuffers> io = *IoBuffers::Create(0, 2);
  ASSERT_TRUE(io->Reserve("x", 1000).ok());
  ASSERT_TRUE(io->Reserve("x", 5000).ok());  // grows every side
  EXPECT_EQ(io->pinned_bytes(), 2 * io->device_bytes());
  EXPECT_NE(io->host("x", 0), io->host("x", 1));
  for (int side : {0, 1}) {
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, io->host("x", side)), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "side " << side;
    std::memset(io->host("x", side), side, 5000);  // each holds the grown size
  }
  EXPECT_EQ(io->host("x", 2), nullptr);
  ASSERT_TRUE(io_->Reserve("x", 1000).ok());
  EXPECT_NE(io_->host("x", 0), nullptr);
  EXPECT_EQ(io_->host("x", 1), nullptr);  // a one-sided set has no side 1
}

TEST_F(IoBuffersTest, HostSideIsPinnedAndDeviceSideIsOnTheDevice) {
  ASSERT_TRUE(io_->Reserve("x", 4096).ok());
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, io_->host("x")), cudaSuccess);
  // Pageable memory would read cudaMemoryTypeUnregistered.
  EXPECT_EQ(attributes.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, io_->device("x")), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);
}

TEST_F(IoBuffersTest, RoundTripThroughStagingOnAStream) {
  constexpr size_t kCount = 3000;  // 12000 bytes: not a multiple of the granule
  constexpr size_t kBytes = kCount * sizeof(float);
  ASSERT_TRUE(io_->Reserve("in", kBytes).ok());
  ASSERT_TRUE(io_->Reserve("out", kBytes).ok());
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();

  std::vector<float> values(kCount);
  for (size_t i = 0; i < kCount; ++i) values[i] = 1.5f * static_cast<float>(i) - 100.0f;
  std::memcpy(io_->host("in"), values.data(), kBytes);
  std::memset(io_->host("out"), 0, kBytes);
  ASSERT_EQ(cudaMemcpyAsync(io_->device("in"), io_->host("in"), kBytes, cudaMemcpyHostToDevice,
                            stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(io_->device("out"), io_->device("in"), kBytes, cudaMemcpyDeviceToDevice,
                            stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(io_->host("out"), io_->device("out"), kBytes, cudaMemcpyDeviceToHost,
                            stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  EXPECT_EQ(std::memcmp(io_->host("out"), values.data(), kBytes), 0);
}

TEST_F(IoBuffersTest, GrowsButNeverShrinksAndLeavesOtherNamesAlone) {
  ASSERT_TRUE(io_->Reserve("x", 256).ok());
  ASSERT_TRUE(io_->Reserve("y", 256).ok());
  void* const x_device = io_->device("x");
  void* const y_device = io_->device("y");
  void* const y_host = io_->host("y");

  ASSERT_TRUE(io_->Reserve("x", 100).ok());
  EXPECT_EQ(io_->device("x"), x_device);
  EXPECT_EQ(io_->bytes("x"), 256u);

  ASSERT_TRUE(io_->Reserve("x", 1 << 20).ok());
  EXPECT_EQ(io_->bytes("x"), size_t{1} << 20);
  EXPECT_NE(io_->device("x"), nullptr);
  EXPECT_NE(io_->host("x"), nullptr);
  EXPECT_EQ(io_->device("y"), y_device);
  EXPECT_EQ(io_->host("y"), y_host);
  EXPECT_EQ(io_->device_bytes(), (size_t{1} << 20) + 256);
  EXPECT_EQ(io_->pinned_bytes(), (size_t{1} << 20) + 256);
  // The grown buffers cover their whole size.
  EXPECT_EQ(cudaMemset(io_->device("x"), 0, size_t{1} << 20), cudaSuccess);
  std::memset(io_->host("x"), 0, size_t{1} << 20);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(IoBuffersTest, FailedGrowthKeepsTheOldBuffers) {
  ASSERT_TRUE(io_->Reserve("x", 4096).ok());
  void* const device = io_->device("x");
  void* const host = io_->host("x");
  const absl::Status status = io_->Reserve("x", kImpossibleBytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_NE(status.message().find("'x'"), absl::string_view::npos) << status;
  EXPECT_EQ(io_->device("x"), device);
  EXPECT_EQ(io_->host("x"), host);
  EXPECT_EQ(io_->bytes("x"), 4096u);
  // A failed first reservation registers nothing.
  EXPECT_FALSE(io_->Reserve("huge", kImpossibleBytes).ok());
  EXPECT_EQ(io_->device("huge"), nullptr);
}

}  // namespace
}  // namespace graphserve
