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

// The server's plan decides: 3 rows pad to 4 (41.5 us, cheaper than three
// replays of 1); 5 rows run as 4 + 1 (71.5 us, cheaper than padding to 16 at
// 88 us), which is no single replay.
TEST(ReplayCostTest, ASizeNotCapturedGetsTheServersPlan) {
  const ReplayCost padded = FullChunkReplay(CapturedConfig(), 3);
  ASSERT_TRUE(padded.us.has_value());
  EXPECT_DOUBLE_EQ(*padded.us, 41.5);
  EXPECT_EQ(padded.captured_size, 4);
  EXPECT_EQ(padded.note, "batch 3 is not captured: the cost of 4, the size it pads to");

  const ReplayCost split = FullChunkReplay(CapturedConfig(), 5);
  EXPECT_FALSE(split.us.has_value());
  EXPECT_EQ(split.note, "the server runs batch 5 as 4 + 1: no single replay");

  // Where padding to 16 is the cheaper plan, 5 rows get 16's cost.
  inference::ModelConfig cheap_sixteen = CapturedConfig();
  cheap_sixteen.mutable_capture()->mutable_cost(2)->set_graph_us(50);
  const ReplayCost to_sixteen = FullChunkReplay(cheap_sixteen, 5);
  ASSERT_TRUE(to_sixteen.us.has_value());
  EXPECT_DOUBLE_EQ(*to_sixteen.us, 50);
  EXPECT_EQ(to_sixteen.captured_size, 16);
}

// A bucketed model's config costs each size at each bucket: the client reads
// the largest bucket's, whatever the order, sizes taken from the costs.
TEST(ReplayCostTest, ABucketedModelIsReadAtItsLargestBucket) {
  inference::ModelConfig config;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        name: "bert"
        max_batch_size: 8
        capture {
          cost { batch_size: 8 graph_us: 900 bucket: 512 }
          cost { batch_size: 1 graph_us: 30 bucket: 16 }
          cost { batch_size: 1 graph_us: 300 bucket: 512 }
          cost { batch_size: 8 graph_us: 35 bucket: 16 }
        }
      )pb",
      &config));
  const ReplayCost replay = FullChunkReplay(config, 8);
  ASSERT_TRUE(replay.us.has_value()) << replay.note;
  EXPECT_DOUBLE_EQ(*replay.us, 900);
  EXPECT_EQ(replay.captured_size, 8);
}

TEST(ReplayCostTest, UnknownCostsSayWhy) {
  EXPECT_EQ(FullChunkReplay(CapturedConfig(), 17).note,
            "the server runs batch 17 as 16 + 1: no single replay");
  EXPECT_FALSE(FullChunkReplay(CapturedConfig(), 17).us.has_value());
  EXPECT_EQ(FullChunkReplay(CapturedConfig(), 33).note, "batch 33 exceeds max_batch_size 32");

  inference::ModelConfig uncosted = CapturedConfig();
  uncosted.mutable_capture()->clear_cost();
  EXPECT_THAT(FullChunkReplay(uncosted, 4).note, HasSubstr("no measured costs"));
  EXPECT_FALSE(FullChunkReplay(uncosted, 4).us.has_value());

  // An incomplete table: the server pads up, and the padded size's cost is
  // what is missing.
  inference::ModelConfig eager_unmeasured = CapturedConfig(/*graphs_disabled=*/true);
  eager_unmeasured.mutable_capture()->mutable_cost(1)->set_eager_us(0);
  EXPECT_EQ(FullChunkReplay(eager_unmeasured, 3).note,
            "capture.cost has no measured eager run of batch 4");
  EXPECT_FALSE(FullChunkReplay(eager_unmeasured, 3).us.has_value());
}

}  // namespace
}  // namespace graphserve
