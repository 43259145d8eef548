#include "client/shared_memory_layout.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/inference_client.h"
#include "gtest/gtest.h"
#include "proto/grpc_service.pb.h"

namespace graphserve {
namespace {

// Two rows of x FP32 [-1,4] (32 bytes) and mask BOOL [-1,3] (6 bytes).
InferRequest TwoInputs() {
  InferRequest request{.model_name = "m", .model_version = "1", .id = "r7"};
  request.inputs.push_back({"x", "FP32", {2, 4}, std::string(32, '\1')});
  request.inputs.push_back({"mask", "BOOL", {2, 3}, std::string(6, '\1')});
  return request;
}

// y FP32 [2,4] (32 bytes) and z FP32 [2,-1], whose size only the response
// can tell.
std::vector<ExpectedOutput> TwoOutputs() {
  return {{.name = "y", .datatype = "FP32", .shape = {2, 4}, .byte_size = 32},
          {.name = "z", .datatype = "FP32", .shape = {2, -1}}};
}

constexpr int64_t kOutputRoom = 1000;  // above y's 32 bytes

TEST(PlanSharedMemoryTest, InputsThenOutputsEachOnAnAlignedOffset) {
  absl::StatusOr<SharedMemoryLayout> layout =
      PlanSharedMemory(TwoInputs(), TwoOutputs(), kOutputRoom);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->inputs.size(), 2u);
  EXPECT_EQ(layout->inputs[0].name, "x");
  EXPECT_EQ(layout->inputs[0].offset, 0);
  EXPECT_EQ(layout->inputs[0].byte_size, 32);
  EXPECT_EQ(layout->inputs[1].name, "mask");
  EXPECT_EQ(layout->inputs[1].offset, kSharedMemoryTensorAlignment);
  EXPECT_EQ(layout->inputs[1].byte_size, 6);
  ASSERT_EQ(layout->outputs.size(), 2u);
  EXPECT_EQ(layout->outputs[0].name, "y");
  EXPECT_EQ(layout->outputs[0].offset, 2 * kSharedMemoryTensorAlignment);
  EXPECT_EQ(layout->outputs[0].byte_size, 32);
  EXPECT_EQ(layout->outputs[1].name, "z");
  EXPECT_EQ(layout->outputs[1].offset, 3 * kSharedMemoryTensorAlignment);
  EXPECT_EQ(layout->outputs[1].byte_size, kOutputRoom);  // the whole room: size unknown
  EXPECT_EQ(layout->byte_size, 3 * kSharedMemoryTensorAlignment + kOutputRoom);
}

TEST(PlanSharedMemoryTest, RefusesAnOutputLargerThanTheOutputSize) {
  const std::vector<ExpectedOutput> large = {
      {.name = "y", .datatype = "FP32", .shape = {512, 512}, .byte_size = 1048576}};
  absl::StatusOr<SharedMemoryLayout> layout =
      PlanSharedMemory(TwoInputs(), large, kDefaultOutputSharedMemoryBytes);
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(layout.status().message(),
            "output y (FP32 [512,512]) needs 1048576 bytes of shared memory but "
            "--output-shared-memory-size is 102400; pass --output-shared-memory-size 1048576 "
            "or more");
  EXPECT_TRUE(PlanSharedMemory(TwoInputs(), large, 1048576).ok());
  EXPECT_EQ(PlanSharedMemory(TwoInputs(), large, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PlaceInRegionTest, TheMessageNamesTheRegionAndCarriesNoTensorBytes) {
  const InferRequest request = TwoInputs();
  absl::StatusOr<SharedMemoryLayout> layout = PlanSharedMemory(request, TwoOutputs(), kOutputRoom);
  ASSERT_TRUE(layout.ok()) << layout.status();
  const InferRequest placed = PlaceInRegion(request, *layout, "slot_3");
  EXPECT_EQ(placed.model_name, "m");
  EXPECT_EQ(placed.model_version, "1");
  EXPECT_EQ(placed.id, "r7");
  EXPECT_EQ(placed.requested_outputs, (std::vector<std::string>{"y", "z"}));

  inference::ModelInferRequest message;
  ASSERT_TRUE(BuildInferMessage(placed, &message).ok());
  EXPECT_EQ(message.raw_input_contents_size(), 0);
  ASSERT_EQ(message.inputs_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& input = message.inputs(i);
    const auto& parameters = input.parameters();
    EXPECT_EQ(input.name(), request.inputs[i].name);
    EXPECT_EQ(input.datatype(), request.inputs[i].datatype);
    EXPECT_EQ(std::vector<int64_t>(input.shape().begin(), input.shape().end()),
              request.inputs[i].shape);
    EXPECT_FALSE(input.has_contents());
    ASSERT_EQ(parameters.count("shared_memory_region"), 1u) << input.name();
    EXPECT_EQ(parameters.at("shared_memory_region").string_param(), "slot_3");
    ASSERT_EQ(parameters.count("shared_memory_byte_size"), 1u);
    EXPECT_EQ(parameters.at("shared_memory_byte_size").int64_param(), layout->inputs[i].byte_size);
    ASSERT_EQ(parameters.count("shared_memory_offset"), 1u);
    EXPECT_EQ(parameters.at("shared_memory_offset").int64_param(), layout->inputs[i].offset);
  }
  ASSERT_EQ(message.outputs_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const auto& parameters = message.outputs(i).parameters();
    EXPECT_EQ(message.outputs(i).name(), layout->outputs[i].name);
    EXPECT_EQ(parameters.at("shared_memory_region").string_param(), "slot_3");
    EXPECT_EQ(parameters.at("shared_memory_byte_size").int64_param(), layout->outputs[i].byte_size);
    EXPECT_EQ(parameters.at("shared_memory_offset").int64_param(), layout->outputs[i].offset);
  }
}

TEST(PlaceInRegionTest, AnInputOutsideSharedMemoryKeepsItsRawEntry) {
  InferRequest request = TwoInputs();
  request.inputs[0].data.clear();
  request.inputs[0].shared_memory = SharedMemoryRange{.region = "r", .offset = 64, .byte_size = 32};
  inference::ModelInferRequest message;
  ASSERT_TRUE(BuildInferMessage(request, &message).ok());
  ASSERT_EQ(message.raw_input_contents_size(), 1);  // mask's, the one not in a region
  EXPECT_EQ(message.raw_input_contents(0), request.inputs[1].data);
  EXPECT_TRUE(message.inputs(1).parameters().empty());
}

TEST(PlaceInRegionTest, CheckInferRequestRefusesInconsistentRanges) {
  InferRequest both = TwoInputs();  // bytes and a region at once
  both.inputs[0].shared_memory = SharedMemoryRange{.region = "r", .byte_size = 32};
  EXPECT_TRUE(absl::StrContains(CheckInferRequest(both).message(), "send it one way"));

  InferRequest wrong_size = TwoInputs();
  wrong_size.inputs[0].data.clear();
  wrong_size.inputs[0].shared_memory = SharedMemoryRange{.region = "r", .byte_size = 31};
  EXPECT_TRUE(absl::StrContains(CheckInferRequest(wrong_size).message(), "needs 32 bytes"));

  InferRequest unnamed = TwoInputs();
  unnamed.output_shared_memory["y"] = SharedMemoryRange{.region = "r", .byte_size = 32};
  EXPECT_TRUE(
      absl::StrContains(CheckInferRequest(unnamed).message(), "not among the requested outputs"));
  unnamed.requested_outputs = {"y"};
  EXPECT_TRUE(CheckInferRequest(unnamed).ok());
  unnamed.output_shared_memory["y"].region.clear();
  EXPECT_EQ(CheckInferRequest(unnamed).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
