#include "server/row_shape.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

PadElement PadOf(int32_t value) {
  PadElement pad{};
  std::memcpy(pad.data(), &value, sizeof(value));
  return pad;
}

const std::byte* Bytes(const std::vector<int32_t>& v) {
  return reinterpret_cast<const std::byte*>(v.data());
}
std::byte* Bytes(std::vector<int32_t>& v) { return reinterpret_cast<std::byte*>(v.data()); }

TEST(RowShapeTest, PadsEachRowAlongItsLastDim) {
  // Two rows of 3 tokens into rows of 5, padded with -1.
  const std::vector<int32_t> given = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> padded(10, 99);
  PadRows(Bytes(given), TensorRowOf({3}, 4), Bytes(padded), TensorRowOf({5}, 4), PadOf(-1), 2);
  EXPECT_EQ(padded, (std::vector<int32_t>{1, 2, 3, -1, -1, 4, 5, 6, -1, -1}));
}

TEST(RowShapeTest, PadsAnInnerDimAndSlicesItBack) {
  // One row of [2 tokens, 2 features] into [3, 2]: a whole padded token.
  const std::vector<int32_t> given = {1, 2, 3, 4};
  std::vector<int32_t> padded(6, 99);
  PadRows(Bytes(given), TensorRowOf({2, 2}, 4), Bytes(padded), TensorRowOf({3, 2}, 4), PadOf(0),
          1);
  EXPECT_EQ(padded, (std::vector<int32_t>{1, 2, 3, 4, 0, 0}));
  std::vector<int32_t> sliced(4, 99);
  SliceRows(Bytes(padded), TensorRowOf({3, 2}, 4), Bytes(sliced), TensorRowOf({2, 2}, 4), 1);
  EXPECT_EQ(sliced, given);
}

TEST(RowShapeTest, PadsAnImageInBothDims) {
  // [1 channel, 2, 2] into [1, 3, 3]: the bottom row and right column pad.
  const std::vector<int32_t> given = {1, 2, 3, 4};
  std::vector<int32_t> padded(9, 99);
  PadRows(Bytes(given), TensorRowOf({1, 2, 2}, 4), Bytes(padded), TensorRowOf({1, 3, 3}, 4),
          PadOf(7), 1);
  EXPECT_EQ(padded, (std::vector<int32_t>{1, 2, 7, 3, 4, 7, 7, 7, 7}));
  std::vector<int32_t> sliced(4, 99);
  SliceRows(Bytes(padded), TensorRowOf({1, 3, 3}, 4), Bytes(sliced), TensorRowOf({1, 2, 2}, 4),
            1);
  EXPECT_EQ(sliced, given);
}

TEST(RowShapeTest, BucketHoldsComparesEveryExtent) {
  EXPECT_TRUE(BucketHolds({128, 64}, {128, 64}));
  EXPECT_TRUE(BucketHolds({128, 64}, {10, 64}));
  EXPECT_FALSE(BucketHolds({128, 64}, {10, 65}));
  EXPECT_FALSE(BucketHolds({128, 64}, {10}));
}

// Note [Pitched row copies]: the rows the device pads and slices itself.
TEST(RowShapeTest, LeadingBlockIsARowThatDiffersOnlyInItsFirstDim) {
  EXPECT_TRUE(LeadingBlock(TensorRowOf({3}, 4), TensorRowOf({5}, 4)));
  EXPECT_TRUE(LeadingBlock(TensorRowOf({12, 768}, 4), TensorRowOf({64, 768}, 4)));
  EXPECT_TRUE(LeadingBlock(TensorRowOf({}, 4), TensorRowOf({}, 4)));
  EXPECT_FALSE(LeadingBlock(TensorRowOf({1, 2, 2}, 4), TensorRowOf({1, 3, 3}, 4)));  // an image
  EXPECT_FALSE(LeadingBlock(TensorRowOf({768, 12}, 4), TensorRowOf({768, 64}, 4)));
  EXPECT_FALSE(LeadingBlock(TensorRowOf({6}, 4), TensorRowOf({5}, 4)));
  EXPECT_FALSE(LeadingBlock(TensorRowOf({3}, 4), TensorRowOf({1, 3}, 4)));
}

TEST(RowShapeTest, RepeatedByteOfAPadElement) {
  EXPECT_EQ(RepeatedByte(PadOf(0), 4), uint8_t{0});
  EXPECT_EQ(RepeatedByte(PadOf(-1), 4), uint8_t{0xFF});
  EXPECT_EQ(RepeatedByte(PadOf(50256), 4), std::nullopt);
  EXPECT_EQ(RepeatedByte(PadOf(1), 1), uint8_t{1});  // a BOOL true
  EXPECT_EQ(RepeatedByte(PadOf(1), 4), std::nullopt);
}

}  // namespace
}  // namespace graphserve
