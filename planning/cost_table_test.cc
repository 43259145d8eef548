#include "planning/cost_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Sizes 1 and 4 measured both ways; 8 with its graph only (eager_us 0).
inference::ModelCapture Measured() {
  inference::ModelCapture capture;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        cost { batch_size: 4 eager_us: 120 graph_us: 41.5 }
        cost { batch_size: 1 eager_us: 90 graph_us: 30 }
        cost { batch_size: 8 graph_us: 60 }
      )pb",
      &capture));
  return capture;
}

TEST(MeasuredCostUs, GraphOrEagerAsAsked) {
  EXPECT_EQ(MeasuredCostUs(Measured(), {4}, /*graphs=*/true), 41.5);
  EXPECT_EQ(MeasuredCostUs(Measured(), {4}, /*graphs=*/false), 120);
}

TEST(MeasuredCostUs, AbsentOrZeroIsUnmeasured) {
  EXPECT_EQ(MeasuredCostUs(Measured(), {2}, /*graphs=*/true), std::nullopt);
  EXPECT_EQ(MeasuredCostUs(Measured(), {8}, /*graphs=*/false), std::nullopt);
  EXPECT_EQ(MeasuredCostUs(inference::ModelCapture(), {1}, /*graphs=*/true), std::nullopt);
}

TEST(CostsForKeys, OnePerKeyInTheOrderAsked) {
  EXPECT_THAT(CostsForKeys(Measured(), BatchOnlyKeys({1, 4, 8}), /*graphs=*/true),
              ElementsAre(30, 41.5, 60));
  EXPECT_THAT(CostsForKeys(Measured(), BatchOnlyKeys({4, 1}), /*graphs=*/false),
              ElementsAre(120, 90));
}

// A bucketed model's costs are its graphs': batch and bucket both match. An
// entry without a bucket (a config from before buckets had costs) matches
// no bucketed graph.
TEST(CostsForKeys, MatchTheBucketToo) {
  inference::ModelCapture capture;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        cost { batch_size: 4 graph_us: 900 bucket: 512 }
        cost { batch_size: 4 graph_us: 50 bucket: 16 }
        cost { batch_size: 1 graph_us: 40 bucket: 16 }
        cost { batch_size: 1 graph_us: 300 }
      )pb",
      &capture));
  EXPECT_THAT(CostsForKeys(capture, {{1, {16}}, {4, {16}}, {4, {512}}}, /*graphs=*/true),
              ElementsAre(40, 50, 900));
  EXPECT_THAT(CostsForKeys(capture, {{1, {512}}, {4, {512}}}, /*graphs=*/true), IsEmpty());
  EXPECT_EQ(CostKey(capture.cost(0)), (GraphKey{4, {512}}));
}

// A table missing one size plans by padding, as the server does: not a
// partial list the planner would misalign.
TEST(CostsForKeys, IncompleteIsEmpty) {
  EXPECT_THAT(CostsForKeys(Measured(), BatchOnlyKeys({1, 2, 4}), /*graphs=*/true), IsEmpty());
  EXPECT_THAT(CostsForKeys(Measured(), BatchOnlyKeys({1, 8}), /*graphs=*/false), IsEmpty());
}

}  // namespace
}  // namespace graphserve
