#include "server/bytes_tensor.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Serialized(const std::vector<std::string>& elements) {
  std::string out;
  for (const std::string& element : elements) AppendBytesElement(element, &out);
  return out;
}

TEST(AppendBytesElementTest, WritesALittleEndianLengthThenTheBytes) {
  std::string out;
  AppendBytesElement("ab", &out);
  AppendBytesElement("", &out);
  AppendBytesElement(std::string(300, 'x'), &out);
  ASSERT_EQ(out.size(), 4u + 2 + 4 + 4 + 300);
  EXPECT_EQ(out.substr(0, 6), std::string("\x02\x00\x00\x00" "ab", 6));
  EXPECT_EQ(out.substr(6, 4), std::string("\x00\x00\x00\x00", 4));
  EXPECT_EQ(out.substr(10, 4), std::string("\x2c\x01\x00\x00", 4));  // 300
}

TEST(SplitBytesElementsTest, ReadsBackWhatWasWritten) {
  const std::string data = Serialized({"12", "", std::string("\0\xff", 2), "-7"});
  const absl::StatusOr<std::vector<absl::string_view>> elements = SplitBytesElements(data, 4);
  ASSERT_TRUE(elements.ok()) << elements.status();
  EXPECT_THAT(*elements, ElementsAre("12", "", absl::string_view("\0\xff", 2), "-7"));
  EXPECT_TRUE(SplitBytesElements("", 0).ok());
}

// Each malformed block is refused with what is wrong, and never read past
// its end (ASan checks it under --config=asan_ubsan).
TEST(SplitBytesElementsTest, RefusesMalformedBlocks) {
  const std::string two = Serialized({"a", "b"});
  const struct {
    std::string data;
    int64_t count;
    const char* message;
  } cases[] = {
      {two, 3, "holds 10 bytes, too few for the 3 elements"},
      {two, 1, "has 5 bytes after its 1 elements: unexpected number of string elements"},
      {two, 0, "has 10 bytes after its 0 elements"},
      {Serialized({"abcdefgh"}) + std::string("\x01\x00", 2), 2, "incomplete string length indicator for element 1, expecting 4 bytes "
                            "but only 2 bytes available"},
      {two.substr(0, 9), 2, "has element 1 of length 1 but only 0 bytes after its length"},
      // A length prefix that claims 4 GiB - 1 in a 12-byte block.
      {std::string("\xff\xff\xff\xff" "abcdefgh", 12), 1,
       "has element 0 of length 4294967295 but only 8 bytes"},
      {Serialized({"abcdefgh"}), 2, "holds 1 string elements, expected 2 for its shape"},
      {two, -1, "has -1 elements"},
      // A shape whose count no block of this size could hold: refused before
      // anything is sized by it.
      {two, std::numeric_limits<int64_t>::max(), "too few for the 9223372036854775807 elements"},
  };
  for (const auto& c : cases) {
    const absl::StatusOr<std::vector<absl::string_view>> elements =
        SplitBytesElements(c.data, c.count);
    ASSERT_FALSE(elements.ok()) << c.message;
    EXPECT_EQ(elements.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(elements.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace graphserve
