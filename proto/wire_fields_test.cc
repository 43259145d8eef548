#include "proto/wire_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;

// The bytes of the examples in the protobuf encoding guide, spelled out so the
// decoder is checked against the specification, not against protobuf itself.
TEST(WireFieldsTest, DecodesEveryProto3WireType) {
  const std::string bytes =
      std::string("\x08\x96\x01", 3) +              // field 1, varint 150
      std::string("\x12\x07testing", 9) +           // field 2, 7 bytes "testing"
      std::string("\x19\x01\0\0\0\0\0\0\x80", 9) +  // field 3, 64-bit 0x8000000000000001
      std::string("\x25\x04\x03\x02\x01", 5) +      // field 4, 32-bit 0x01020304
      std::string("\x08\x01", 2);                   // field 1 again: a repeated field
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(1, 2, 3, 4, 1));

  EXPECT_EQ((*fields)[0].wire_type, WireType::kVarint);
  EXPECT_EQ((*fields)[0].value, 150u);
  EXPECT_EQ((*fields)[1].wire_type, WireType::kLen);
  EXPECT_EQ((*fields)[1].payload, "testing");
  EXPECT_EQ((*fields)[2].wire_type, WireType::kI64);
  EXPECT_EQ((*fields)[2].value, 0x8000000000000001u);
  EXPECT_EQ((*fields)[3].wire_type, WireType::kI32);
  EXPECT_EQ((*fields)[3].value, 0x01020304u);

  const std::vector<WireField> ones = FieldsNumbered(*fields, 1);
  ASSERT_EQ(ones.size(), 2u);
  EXPECT_EQ(ones[1].value, 1u);
}

TEST(WireFieldsTest, EmptyMessageHasNoFields) {
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields("");
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_TRUE(fields->empty());
}

TEST(WireFieldsTest, RejectsTruncatedPayload) {
  // Field 2 announces 7 bytes but only 3 follow.
  EXPECT_FALSE(DecodeWireFields(std::string("\x12\x07tes", 5)).ok());
}

TEST(WireFieldsTest, RejectsGroups) {
  // Field 1 with wire type 3 (start group), which proto3 never writes.
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(std::string("\x0b\x0c", 2));
  ASSERT_FALSE(fields.ok());
  EXPECT_THAT(std::string(fields.status().message()), ::testing::HasSubstr("wire type 3"));
}

}  // namespace
}  // namespace graphserve
