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
  EXPECT_EQ(MeasuredCostUs(Measured(), 4, /*graphs=*/true), 41.5);
  EXPECT_EQ(MeasuredCostUs(Measured(), 4, /*graphs=*/false), 120);
}

TEST(MeasuredCostUs, AbsentOrZeroIsUnmeasured) {
  EXPECT_EQ(MeasuredCostUs(Measured(), 2, /*graphs=*/true), std::nullopt);
  EXPECT_EQ(MeasuredCostUs(Measured(), 8, /*graphs=*/false), std::nullopt);
  EXPECT_EQ(MeasuredCostUs(inference::ModelCapture(), 1, /*graphs=*/true), std::nullopt);
}

TEST(CostsForSizes, OnePerSizeInTheOrderAsked) {
  EXPECT_THAT(CostsForSizes(Measured(), {1, 4, 8}, /*graphs=*/true), ElementsAre(30, 41.5, 60));
  EXPECT_THAT(CostsForSizes(Measured(), {4, 1}, /*graphs=*/false), ElementsAre(120, 90));
}

// A table missing one size plans by padding, as the server does: not a
// partial list the planner would misalign.
TEST(CostsForSizes, IncompleteIsEmpty) {
  EXPECT_THAT(CostsForSizes(Measured(), {1, 2, 4}, /*graphs=*/true), IsEmpty());
  EXPECT_THAT(CostsForSizes(Measured(), {1, 8}, /*graphs=*/false), IsEmpty());
}

}  // namespace
}  // namespace graphserve
