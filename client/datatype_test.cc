#include "client/datatype.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(DatatypeTest, ByteSizesFollowTheProtocolNames) {
  EXPECT_EQ(*DatatypeByteSize("BOOL"), 1u);
  EXPECT_EQ(*DatatypeByteSize("FP16"), 2u);
  EXPECT_EQ(*DatatypeByteSize("FP32"), 4u);
  EXPECT_EQ(*DatatypeByteSize("INT64"), 8u);
  EXPECT_EQ(*DatatypeByteSize("FP64"), 8u);
}

TEST(DatatypeTest, RejectsBytesAndUnknownNames) {
  // TYPE_FP32 is model_config.proto's spelling, not the protocol's.
  const absl::Status unknown = DatatypeByteSize("TYPE_FP32").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(unknown.message(), "TYPE_FP32"));
  EXPECT_EQ(DatatypeByteSize("BYTES").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DatatypeTest, CountsElementsAndBytes) {
  const std::vector<int64_t> shape = {3, 4, 5};
  EXPECT_EQ(*ElementCount(shape), 60);
  EXPECT_EQ(*TensorByteSize("FP32", shape), 240);
  EXPECT_EQ(*ElementCount({}), 1);  // a scalar holds one element
  EXPECT_EQ(*TensorByteSize("INT64", {0, 7}), 0);
}

TEST(DatatypeTest, RejectsVariableDimensionsAndOverflow) {
  const absl::Status variable = ElementCount({-1, 4}).status();
  EXPECT_EQ(variable.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(variable.message(), "[-1,4]")) << variable;
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(ElementCount({big, 3}).ok());
  // The count fits but the bytes do not: 8 bytes per element.
  EXPECT_FALSE(TensorByteSize("INT64", {big}).ok());
}

TEST(DatatypeTest, FormatsShapes) {
  EXPECT_EQ(FormatShape({2, 4}), "[2,4]");
  EXPECT_EQ(FormatShape({}), "[]");
}

}  // namespace
}  // namespace graphserve
