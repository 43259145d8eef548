#include "common/dtype.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

TEST(DTypeTest, SizesMatchTheHostTypes) {
  EXPECT_EQ(DTypeSize(DType::kFloat32), sizeof(float));
  EXPECT_EQ(DTypeSize(DType::kInt64), sizeof(int64_t));
  EXPECT_EQ(DTypeSize(DType::kBool), sizeof(bool));
}

TEST(DTypeTest, OnnxNumbersConvert) {
  EXPECT_EQ(*DTypeFromOnnx(1), DType::kFloat32);
  EXPECT_EQ(*DTypeFromOnnx(7), DType::kInt64);
  EXPECT_EQ(*DTypeFromOnnx(9), DType::kBool);
}

TEST(DTypeTest, UnsupportedTypeIsNamed) {
  absl::StatusOr<DType> half = DTypeFromOnnx(10);
  ASSERT_FALSE(half.ok());
  EXPECT_NE(half.status().message().find("FLOAT16"), std::string::npos);
}

}  // namespace
}  // namespace graphserve
