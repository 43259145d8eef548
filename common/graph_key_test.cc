#include "common/graph_key.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(GraphKeyTest, KeysWithoutBucketsReadAndSortAsBatchSizes) {
  std::vector<GraphKey> keys = BatchOnlyKeys({8, 1, 4});
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, BatchOnlyKeys({1, 4, 8}));
  EXPECT_EQ(GraphKeyString(keys[2]), "8");
}

TEST(GraphKeyTest, KeysOrderByBatchThenBucket) {
  std::vector<GraphKey> keys = {{4, {128}}, {1, {512}}, {4, {32}}};
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<GraphKey>{{1, {512}}, {4, {32}}, {4, {128}}}));
  EXPECT_EQ(GraphKeyString({8, {224, 320}}), "8x[224,320]");
}

TEST(GraphKeyTest, HoldsNeedsEveryDimAtLeastAsLarge) {
  const GraphKey key{8, {128, 64}};
  EXPECT_TRUE(key.Holds({8, {128, 64}}));
  EXPECT_TRUE(key.Holds({3, {100, 1}}));
  EXPECT_FALSE(key.Holds({9, {100, 1}}));
  EXPECT_FALSE(key.Holds({3, {129, 1}}));
  EXPECT_FALSE(key.Holds({3, {100}}));  // another model's bucket
}

}  // namespace
}  // namespace graphserve
