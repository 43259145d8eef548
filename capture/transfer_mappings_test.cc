#include "capture/transfer_mappings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBatch = 4;
constexpr size_t kInputRowBytes = 16;   // four float32 features
constexpr size_t kOutputRowBytes = 8;   // two float32 outputs

// Host memory standing in for pinned staging and device buffers: only the
// addresses matter to the bookkeeping.
struct FakeMemory {
  std::array<char, kBatch * kInputRowBytes> input_staging{};
  std::array<char, kBatch * kOutputRowBytes> output_staging{};
  std::array<char, 64> constant{};
  std::array<char, 64> stray{};
  std::array<char, 256> device{};

  TransferRegistry Registry() const {
    TransferRegistry registry;
    registry.input_staging = {{"x", input_staging.data(), input_staging.size()}};
    registry.output_staging = {{"y", output_staging.data(), output_staging.size()}};
    registry.held_constants = {{"table", constant.data(), constant.size()}};
    registry.batch_size = kBatch;
    return registry;
  }
};

CapturedMemcpy Copy(int node, TransferDirection direction, const void* src, const void* dst,
                    size_t bytes) {
  CapturedMemcpy memcpy;
  memcpy.node = node;
  memcpy.direction = direction;
  memcpy.src = src;
  memcpy.dst = dst;
  memcpy.bytes = bytes;
  return memcpy;
}

// The shape of a captured run: input copy (0) -> kernel (1) -> output copy (2).
std::vector<CapturedMemcpy> ModelRun(const FakeMemory& memory) {
  CapturedMemcpy input = Copy(0, TransferDirection::kHostToDevice, memory.input_staging.data(),
                              memory.device.data(), memory.input_staging.size());
  input.successors = {1};
  CapturedMemcpy output =
      Copy(2, TransferDirection::kDeviceToHost, memory.device.data() + 128,
           memory.output_staging.data(), memory.output_staging.size());
  output.predecessors = {1};
  return {input, output};
}

TEST(PlanTransfersTest, InputAndOutputCopiesBecomeMappings) {
  FakeMemory memory;
  absl::StatusOr<TransferPlan> plan = PlanTransfers(ModelRun(memory), memory.Registry());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->inputs.size(), 1u);
  EXPECT_EQ(plan->inputs[0].name, "x");
  EXPECT_EQ(plan->inputs[0].host_src, memory.input_staging.data());
  EXPECT_EQ(plan->inputs[0].device_dst, memory.device.data());
  EXPECT_EQ(plan->inputs[0].bytes, kBatch * kInputRowBytes);
  EXPECT_EQ(plan->inputs[0].bytes_per_row, kInputRowBytes);
  ASSERT_EQ(plan->outputs.size(), 1u);
  EXPECT_EQ(plan->outputs[0].name, "y");
  EXPECT_EQ(plan->outputs[0].device_src, memory.device.data() + 128);
  EXPECT_EQ(plan->outputs[0].host_dst, memory.output_staging.data());
  EXPECT_EQ(plan->outputs[0].bytes_per_row, kOutputRowBytes);
  EXPECT_EQ(plan->removed_nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(plan->constant_uploads, 0);
}

TEST(PlanTransfersTest, ConstantUploadsAndDeviceCopiesStayInTheGraph) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys.push_back(Copy(3, TransferDirection::kHostToDevice, memory.constant.data() + 8,
                         memory.device.data() + 64, 32));
  memcpys.push_back(Copy(4, TransferDirection::kDeviceToDevice, memory.device.data(),
                         memory.device.data() + 64, 32));
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->constant_uploads, 1);
  EXPECT_EQ(plan->device_copies, 1);
  EXPECT_EQ(plan->removed_nodes, (std::vector<int>{0, 2}));
}

TEST(PlanTransfersTest, StrayHostToDeviceCopyIsRejectedByNode) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys.push_back(Copy(7, TransferDirection::kHostToDevice, memory.stray.data(),
                         memory.device.data(), 16));
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("node 7 (memcpy host-to-device"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("neither a registered input"));
}

TEST(PlanTransfersTest, CopyRunningPastTheStagingBufferIsRejected) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  // Starts inside the staging buffer but reads one row past its end.
  memcpys[0].src = memory.input_staging.data() + kInputRowBytes;
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("node 0"));
}

TEST(PlanTransfersTest, StrayDeviceToHostCopyIsRejectedByNode) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys.push_back(Copy(5, TransferDirection::kDeviceToHost, memory.device.data(),
                         memory.stray.data(), 16));
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("node 5 (memcpy device-to-host"));
}

TEST(PlanTransfersTest, HostToHostCopyIsRejected) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys.push_back(Copy(6, TransferDirection::kHostToHost, memory.input_staging.data(),
                         memory.output_staging.data(), 8));
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("node 6"));
}

TEST(PlanTransfersTest, CopyThatIsNotWholeRowsIsRejected) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys[0].bytes = kBatch * kInputRowBytes - 2;  // not divisible by the batch of 4
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("whole number of rows"));
}

TEST(PlanTransfersTest, InputCopyAfterOtherWorkIsRejected) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys[0].predecessors = {9};  // a kernel runs before the input copy
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("waits for node 9"));
}

TEST(PlanTransfersTest, OutputCopyBeforeOtherWorkIsRejected) {
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  memcpys[1].successors = {8};
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("followed by node 8"));
}

TEST(PlanTransfersTest, ChainedInputCopiesAreAllowed) {
  // A single-stream capture orders the input copies one after another.
  FakeMemory memory;
  std::vector<CapturedMemcpy> memcpys = ModelRun(memory);
  CapturedMemcpy second =
      Copy(1, TransferDirection::kHostToDevice, memory.input_staging.data() + kInputRowBytes,
           memory.device.data() + 200, 2 * kBatch);
  second.predecessors = {0};
  memcpys[0].successors = {1};
  memcpys[1].node = 3;
  memcpys.insert(memcpys.begin() + 1, second);
  absl::StatusOr<TransferPlan> plan = PlanTransfers(memcpys, memory.Registry());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->inputs.size(), 2u);
  EXPECT_EQ(plan->inputs[1].bytes_per_row, 2u);
  EXPECT_EQ(plan->removed_nodes, (std::vector<int>{0, 1, 3}));
}

}  // namespace
}  // namespace graphserve
