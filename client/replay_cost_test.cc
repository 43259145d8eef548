#include "client/replay_cost.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// Captured 1, 4 and 16, as graphserve-capture prepare writes the section.
inference::ModelConfig CapturedConfig(bool graphs_disabled = false) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "mlp"
        max_batch_size: 32
        capture {
          batch_sizes: [ 1, 4, 16 ]
          cost { batch_size: 1 eager_us: 90 graph_us: 30 }
          cost { batch_size: 4 eager_us: 120 graph_us: 41.5 }
          cost { batch_size: 16 eager_us: 300 graph_us: 88 }
        }
      )pb",
      &config));
  config.mutable_capture()->set_graphs_disabled(graphs_disabled);
  return config;
}

TEST(ReplayCostTest, ACapturedSizeGetsItsOwnGraphReplay) {
  const ReplayCost replay = FullChunkReplay(CapturedConfig(), 4);
  ASSERT_TRUE(replay.us.has_value());
  EXPECT_DOUBLE_EQ(*replay.us, 41.5);
  EXPECT_EQ(replay.captured_size, 4);
  EXPECT_TRUE(replay.graphs);
  EXPECT_EQ(replay.note, "");
}

TEST(ReplayCostTest, GraphsOffGetTheEagerRun) {
  const ReplayCost replay = FullChunkReplay(CapturedConfig(/*graphs_disabled=*/true), 16);
  ASSERT_TRUE(replay.us.has_value());
  EXPECT_DOUBLE_EQ(*replay.us, 300);
  EXPECT_FALSE(replay.graphs);
}

TEST(ReplayCostTest, ASizeNotCapturedGetsThePaddedSizeAndSaysSo) {
  const ReplayCost replay = FullChunkReplay(CapturedConfig(), 5);
  ASSERT_TRUE(replay.us.has_value());
  EXPECT_DOUBLE_EQ(*replay.us, 88);
  EXPECT_EQ(replay.captured_size, 16);
  EXPECT_EQ(replay.note, "batch 5 is not captured: the cost of 16, the size it pads to");
}

TEST(ReplayCostTest, UnknownCostsSayWhy) {
  EXPECT_THAT(FullChunkReplay(CapturedConfig(), 17).note,
              HasSubstr("batch 17 exceeds the largest captured size 16"));
  EXPECT_FALSE(FullChunkReplay(CapturedConfig(), 17).us.has_value());

  inference::ModelConfig uncosted = CapturedConfig();
  uncosted.mutable_capture()->clear_cost();
  EXPECT_THAT(FullChunkReplay(uncosted, 4).note, HasSubstr("no measured costs"));
  EXPECT_FALSE(FullChunkReplay(uncosted, 4).us.has_value());

  inference::ModelConfig eager_unmeasured = CapturedConfig(/*graphs_disabled=*/true);
  eager_unmeasured.mutable_capture()->mutable_cost(1)->set_eager_us(0);
  EXPECT_EQ(FullChunkReplay(eager_unmeasured, 3).note,
            "capture.cost has no measured eager run of batch 4");
  EXPECT_FALSE(FullChunkReplay(eager_unmeasured, 3).us.has_value());
}

}  // namespace
}  // namespace graphserve
