#include "capture/model_config_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// x [B, 16] float32 -> y [B, 2, 3] float32, bound at B = 8.
BoundGraph TwoTensorGraph() {
  BoundGraph graph;
  graph.batch_size = 8;
  graph.values = {{"x", DType::kFloat32, {8, 16}, nullptr},
                  {"y", DType::kFloat32, {8, 2, 3}, nullptr}};
  graph.inputs = {0};
  graph.outputs = {1};
  return graph;
}

CaptureSummary Summary() {
  CaptureSummary summary;
  summary.model_name = "mlp";
  summary.num_streams = 4;
  summary.batch_sizes = {64, 1, 8};
  summary.costs = {{{64}, 80.5, 40.25}, {{1}, 30, 12}, {{8}, 33, 14}};
  return summary;
}

TEST(ModelConfigWriterTest, ConfigHoldsInterfaceSizesStreamsAndCosts) {
  absl::StatusOr<inference::ModelConfig> config = MakeModelConfig(TwoTensorGraph(), Summary());
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name(), "mlp");
  EXPECT_EQ(config->max_batch_size(), 64);  // the largest captured size by default
  ASSERT_EQ(config->input_size(), 1);
  EXPECT_EQ(config->input(0).name(), "x");
  EXPECT_EQ(config->input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(config->input(0).dims(), ::testing::ElementsAre(16));  // no batch dim
  ASSERT_EQ(config->output_size(), 1);
  EXPECT_THAT(config->output(0).dims(), ::testing::ElementsAre(2, 3));
  EXPECT_THAT(config->capture().batch_sizes(), ::testing::ElementsAre(1, 8, 64));
  EXPECT_EQ(config->capture().streams(), 4);
  ASSERT_EQ(config->capture().cost_size(), 3);
  EXPECT_EQ(config->capture().cost(0).batch_size(), 1);  // sorted by size
  EXPECT_EQ(config->capture().cost(2).graph_us(), 40.25);
  EXPECT_FALSE(config->capture().graphs_disabled());
}

// The server imports the model in the precision it was captured in.
TEST(ModelConfigWriterTest, ConfigRecordsAPrecisionOtherThanTheDefault) {
  EXPECT_EQ(MakeModelConfig(TwoTensorGraph(), Summary())->capture().precision(), "");
  CaptureSummary summary = Summary();
  summary.precision = ModelPrecision::kBf16;
  const inference::ModelConfig config = *MakeModelConfig(TwoTensorGraph(), summary);
  EXPECT_EQ(config.capture().precision(), "bf16");
  EXPECT_THAT(ModelConfigText(config), HasSubstr("precision: \"bf16\""));
  // The interface stays as declared: float32 in and out.
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
}

// Note [Strings at the model's edges]: a tensor the file types STRING,
// which the graph holds as numbers, is what clients send: TYPE_STRING.
TEST(ModelConfigWriterTest, StringTensorsAreWrittenTypeString) {
  CaptureSummary summary = Summary();
  summary.string_tensors = {"y"};
  const inference::ModelConfig config = *MakeModelConfig(TwoTensorGraph(), summary);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(config.output(0).data_type(), inference::TYPE_STRING);
}

TEST(ModelConfigWriterTest, ConfigRecordsEachSizesScheduleAscending) {
  CaptureSummary summary = Summary();
  summary.schedule = "auto";
  summary.max_lanes = 3;
  summary.schedules = {
      {.key = {64}, .policy = SchedulePolicy::kSingle, .max_width = 4, .critical_path = 9},
      {.key = {1},
       .policy = SchedulePolicy::kAsap,
       .lanes = 3,
       .events = 7,
       .max_width = 4,
       .critical_path = 9,
       .candidates = {{SchedulePolicy::kSingle, 1, 50.5}, {SchedulePolicy::kAsap, 3, 31.25}}},
  };
  absl::StatusOr<inference::ModelConfig> config = MakeModelConfig(TwoTensorGraph(), summary);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->capture().schedule(), "auto");
  EXPECT_EQ(config->capture().max_lanes(), 3);
  ASSERT_EQ(config->capture().schedules_size(), 2);
  const inference::CaptureSchedule& first = config->capture().schedules(0);
  EXPECT_EQ(first.batch_size(), 1);
  EXPECT_EQ(first.policy(), "asap");
  EXPECT_EQ(first.lanes(), 3);
  EXPECT_EQ(first.events(), 7);
  EXPECT_EQ(first.max_width(), 4);
  EXPECT_EQ(first.critical_path(), 9);
  ASSERT_EQ(first.candidates_size(), 2);
  EXPECT_EQ(first.candidates(1).policy(), "asap");
  EXPECT_EQ(first.candidates(1).replay_us(), 31.25);
  EXPECT_EQ(config->capture().schedules(1).policy(), "single");
  EXPECT_EQ(config->capture().schedules(1).candidates_size(), 0);
}

TEST(ModelConfigWriterTest, TextRoundTrips) {
  const inference::ModelConfig config = *MakeModelConfig(TwoTensorGraph(), Summary());
  const std::string text = ModelConfigText(config);
  EXPECT_THAT(text, HasSubstr("# Written by GraphServe"));
  EXPECT_THAT(text, HasSubstr("max_batch_size: 64"));
  inference::ModelConfig parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), config.SerializeAsString());
}

TEST(ModelConfigWriterTest, MaxBatchSizeBelowLargestCapturedSizeIsRejected) {
  CaptureSummary summary = Summary();
  summary.max_batch_size = 32;
  absl::StatusOr<inference::ModelConfig> config = MakeModelConfig(TwoTensorGraph(), summary);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("below the largest"));
  summary.max_batch_size = 256;  // split above 64
  EXPECT_EQ(MakeModelConfig(TwoTensorGraph(), summary)->max_batch_size(), 256);
}

TEST(ModelConfigWriterTest, WritesTheRepositoryLayout) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "repo_layout";
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path model_file = root / "source.onnx";
  std::ofstream(model_file) << "onnx bytes";
  const inference::ModelConfig config = *MakeModelConfig(TwoTensorGraph(), Summary());
  ASSERT_TRUE(WriteModelDirectory((root / "repo" / "mlp").string(), model_file.string(), config)
                  .ok());
  std::ifstream copied(root / "repo" / "mlp" / "1" / "model.onnx");
  std::stringstream bytes;
  bytes << copied.rdbuf();
  EXPECT_EQ(bytes.str(), "onnx bytes");
  std::ifstream config_file(root / "repo" / "mlp" / "config.pbtxt");
  std::stringstream text;
  text << config_file.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("name: \"mlp\""));

  const absl::Status missing =
      WriteModelDirectory((root / "repo" / "x").string(), (root / "nope.onnx").string(), config);
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.message()), HasSubstr("nope.onnx"));
}

}  // namespace
}  // namespace graphserve
