#include "tensor_holder/stream_arena.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/cuda_handles.h"

namespace graphserve {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kImpossibleBytes = size_t{1} << 50;  // 1 PiB: no GPU has it

// Runs everywhere: without a GPU every ordinal is missing.
TEST(StreamArenaCreateTest, RejectsMissingDevice) {
  EXPECT_EQ(StreamArena::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(StreamArena::Create(CudaDeviceCount()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class StreamArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<std::shared_ptr<StreamArena>> arena = StreamArena::Create(0);
    ASSERT_TRUE(arena.ok()) << arena.status();
    arena_ = *arena;
  }
  std::shared_ptr<StreamArena> arena_;
};

TEST_F(StreamArenaTest, StartsEmpty) {
  EXPECT_EQ(arena_->bytes(), 0u);
  EXPECT_EQ(arena_->base(), nullptr);
  EXPECT_EQ(arena_->device(), 0);
  ASSERT_TRUE(arena_->Reserve(0).ok());
  EXPECT_EQ(arena_->base(), nullptr);
}

TEST_F(StreamArenaTest, GrowsButNeverShrinks) {
  constexpr size_t kFirst = 1000;  // not a multiple of the alignment
  ASSERT_TRUE(arena_->Reserve(kFirst).ok());
  void* const first_base = arena_->base();
  ASSERT_NE(first_base, nullptr);
  EXPECT_GE(arena_->bytes(), kFirst);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first_base) % 256, 0u);

  // Smaller and equal requests keep the allocation (and captured addresses).
  ASSERT_TRUE(arena_->Reserve(kFirst / 2).ok());
  ASSERT_TRUE(arena_->Reserve(kFirst).ok());
  EXPECT_EQ(arena_->base(), first_base);
  EXPECT_EQ(arena_->bytes(), kFirst);

  ASSERT_TRUE(arena_->Reserve(4 * kMiB).ok());
  EXPECT_NE(arena_->base(), nullptr);
  EXPECT_EQ(arena_->bytes(), 4 * kMiB);
  ASSERT_TRUE(arena_->Reserve(kMiB).ok());
  EXPECT_EQ(arena_->bytes(), 4 * kMiB);
}

TEST_F(StreamArenaTest, FailedGrowthLeavesTheArenaUsable) {
  ASSERT_TRUE(arena_->Reserve(kMiB).ok());
  void* const base = arena_->base();
  const absl::Status status = arena_->Reserve(kImpossibleBytes);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_NE(status.message().find("growing the stream arena"), absl::string_view::npos) << status;
  EXPECT_EQ(arena_->base(), base);
  EXPECT_EQ(arena_->bytes(), kMiB);
  EXPECT_EQ(cudaMemset(arena_->base(), 0, arena_->bytes()), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST_F(StreamArenaTest, LeavesTheCurrentDeviceAlone) {
  ASSERT_EQ(cudaSetDevice(CudaDeviceCount() - 1), cudaSuccess);
  ASSERT_TRUE(arena_->Reserve(kMiB).ok());
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, CudaDeviceCount() - 1);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, arena_->base()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, 0);  // the arena's device, not the current one
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// Every byte of the reserved range is device memory the arena owns.
class StreamArenaSizeTest : public StreamArenaTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(StreamArenaSizeTest, WholeRangeIsWritable) {
  const size_t bytes = GetParam();
  ASSERT_TRUE(arena_->Reserve(bytes).ok());
  ASSERT_EQ(cudaMemset(arena_->base(), 0x5A, bytes), cudaSuccess);
  // Overwrite the last byte alone, to catch an arena shorter than asked.
  ASSERT_EQ(cudaMemset(static_cast<char*>(arena_->base()) + bytes - 1, 0x3C, 1), cudaSuccess);
  std::vector<unsigned char> host(bytes);
  ASSERT_EQ(cudaMemcpy(host.data(), arena_->base(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  for (size_t i = 0; i + 1 < bytes; ++i) {
    ASSERT_EQ(host[i], 0x5A) << "byte " << i << " of " << bytes;
  }
  EXPECT_EQ(host[bytes - 1], 0x3C);
}

INSTANTIATE_TEST_SUITE_P(Sizes, StreamArenaSizeTest,
                         ::testing::Values(size_t{1}, size_t{255}, size_t{4097},
                                           kMiB + 3,     // not page-sized
                                           64 * kMiB));  // a realistic activation arena

}  // namespace
}  // namespace graphserve
