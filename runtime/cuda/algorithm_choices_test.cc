#include "runtime/cuda/algorithm_choices.h"

#include <memory>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(AlgorithmChoicesTest, RecordsPerNodeAndBatchSize) {
  AlgorithmChoices choices;
  EXPECT_FALSE(choices.Find(AlgorithmChoices::Key("fc1", 8)).has_value());
  choices.Record(AlgorithmChoices::Key("fc1", 8), 3);
  EXPECT_EQ(choices.Find(AlgorithmChoices::Key("fc1", 8)), 3);
  EXPECT_FALSE(choices.Find(AlgorithmChoices::Key("fc1", 16)).has_value());  // another shape
  EXPECT_FALSE(choices.Find(AlgorithmChoices::Key("fc2", 8)).has_value());
}

TEST(AlgorithmChoicesTest, SharesPlansByKey) {
  AlgorithmChoices choices;
  EXPECT_EQ(choices.FindPlan("Conv a"), nullptr);
  auto plan = std::make_shared<const int>(7);
  choices.RecordPlan("Conv a", plan);
  EXPECT_EQ(choices.FindPlan("Conv a"), plan);  // the same object, not a copy
  EXPECT_EQ(choices.FindPlan("Conv b"), nullptr);
}

TEST(AlgorithmChoicesTest, KeepsSlowdownsPerShape) {
  AlgorithmChoices choices;
  EXPECT_TRUE(choices.FindSlowdowns("Conv a").empty());
  choices.RecordSlowdowns("Conv a", {{"eng0", 1.0f}, {"eng5", 40.0f}});
  const AlgorithmChoices::Slowdowns want = {{"eng0", 1.0f}, {"eng5", 40.0f}};
  EXPECT_EQ(choices.FindSlowdowns("Conv a"), want);
  EXPECT_TRUE(choices.FindSlowdowns("Conv b").empty());
  choices.RecordSlowdowns("Conv a", {{"eng0", 1.0f}});  // the caller merged: replaced
  EXPECT_EQ(choices.FindSlowdowns("Conv a").size(), 1u);
}

}  // namespace
}  // namespace graphserve
