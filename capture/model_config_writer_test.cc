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

// A config as prepare writes it (capture_cli/prepare.h).
inference::ModelConfig Config() {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "mlp"
        max_batch_size: 64
        input { name: "x" data_type: TYPE_FP32 dims: 16 }
        output {
          name: "y"
          data_type: TYPE_FP32
          dims: [ 2, 3 ]
        }
        capture {
          batch_sizes: [ 1, 8, 64 ]
          streams: 4
        })pb",
      &config));
  return config;
}

// Each size's schedule as config.pbtxt records it, with the candidates timed.
TEST(ModelConfigWriterTest, ScheduleToProtoRecordsTheChoiceAndItsCandidates) {
  ScheduleChoice choice;
  choice.key = {1, {128}};
  choice.policy = SchedulePolicy::kAsap;
  choice.lanes = 3;
  choice.events = 7;
  choice.max_width = 4;
  choice.critical_path = 9;
  choice.candidates = {{SchedulePolicy::kSingle, 1, 40.5}, {SchedulePolicy::kAsap, 3, 31.25}};
  const inference::CaptureSchedule schedule = ScheduleToProto(choice);
  EXPECT_EQ(schedule.batch_size(), 1);
  ASSERT_EQ(schedule.bucket_size(), 1);
  EXPECT_EQ(schedule.bucket(0), 128);
  EXPECT_EQ(schedule.policy(), "asap");
  EXPECT_EQ(schedule.lanes(), 3);
  EXPECT_EQ(schedule.events(), 7);
  EXPECT_EQ(schedule.max_width(), 4);
  EXPECT_EQ(schedule.critical_path(), 9);
  ASSERT_EQ(schedule.candidates_size(), 2);
  EXPECT_EQ(schedule.candidates(1).policy(), "asap");
  EXPECT_EQ(schedule.candidates(1).replay_us(), 31.25);
}

TEST(ModelConfigWriterTest, CostToProtoRecordsTheKeyAndBothModes) {
  const inference::CaptureCost cost = CostToProto({{8, {64}}, 33, 14});
  EXPECT_EQ(cost.batch_size(), 8);
  ASSERT_EQ(cost.bucket_size(), 1);
  EXPECT_EQ(cost.bucket(0), 64);
  EXPECT_EQ(cost.eager_us(), 33);
  EXPECT_EQ(cost.graph_us(), 14);
}

TEST(ModelConfigWriterTest, TextRoundTrips) {
  const inference::ModelConfig config = Config();
  const std::string text = ModelConfigText(config);
  EXPECT_THAT(text, HasSubstr("# Written by GraphServe"));
  EXPECT_THAT(text, HasSubstr("max_batch_size: 64"));
  inference::ModelConfig parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
  EXPECT_EQ(parsed.SerializeAsString(), config.SerializeAsString());
}

TEST(ModelConfigWriterTest, WritesTheRepositoryLayout) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "repo_layout";
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path model_file = root / "source.onnx";
  std::ofstream(model_file) << "onnx bytes";
  const inference::ModelConfig config = Config();
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
