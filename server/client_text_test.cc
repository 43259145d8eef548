#include "server/client_text.h"

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include <unistd.h>

#include <filesystem>
#include <string>

namespace graphserve {
namespace {

// A model name of 64 KiB: eight times gRPC's default limit on the metadata a
// client accepts (8 KiB), where the status message travels.
constexpr size_t kHugeName = 64 << 10;

TEST(ClientTextTest, ShortPrintableTextIsQuotedWhole) {
  EXPECT_EQ(QuoteClientText("mlp"), "'mlp'");
  EXPECT_EQ(QuoteClientText(""), "''");
  EXPECT_EQ(QuoteClientText(std::string(kClientTextQuoteLimit, 'a')),
            "'" + std::string(kClientTextQuoteLimit, 'a') + "'");
}

TEST(ClientTextTest, LongTextKeepsAPrefixAndSaysItsLength) {
  const std::string quoted = QuoteClientText(std::string(kHugeName, 'm'));
  EXPECT_EQ(quoted, "'" + std::string(kClientTextQuoteLimit, 'm') + "...' (65536 bytes)");
  // One byte over the limit is cut too: the length tells the reader.
  EXPECT_EQ(QuoteClientText(std::string(kClientTextQuoteLimit + 1, 'a')),
            "'" + std::string(kClientTextQuoteLimit, 'a') + "...' (65 bytes)");
}

TEST(ClientTextTest, NonPrintableBytesAndQuotesAreEscaped) {
  EXPECT_EQ(QuoteClientText(std::string("a\nb\x01'\xc3", 6)), R"('a\nb\x01\'\xc3')");
}

TEST(ClientTextTest, EscapesAreNeverCutAndTheQuoteStaysBounded) {
  // Every byte escapes to four characters: sixteen fit in the limit.
  const std::string quoted = QuoteClientText(std::string(kHugeName, '\x01'));
  std::string sixteen;
  for (int i = 0; i < 16; ++i) sixteen += "\\x01";
  EXPECT_EQ(quoted, "'" + sixteen + "...' (65536 bytes)");
  // 63 plain bytes, then a four-character escape that no longer fits.
  const std::string mixed = std::string(63, 'a') + "\x02";
  EXPECT_EQ(QuoteClientText(mixed), "'" + std::string(63, 'a') + "...' (64 bytes)");
  EXPECT_LE(QuoteClientText(std::string(kHugeName, '\xff')).size(), kClientTextQuoteLimit + 40);
}

TEST(ClientTextTest, PrefixIsTheQuoteWithoutQuotes) {
  EXPECT_EQ(ClientTextPrefix("[4,3,1]"), "[4,3,1]");
  EXPECT_EQ(ClientTextPrefix(std::string(kHugeName, '1')),
            std::string(kClientTextQuoteLimit, '1') + "... (65536 bytes)");
  EXPECT_EQ(ClientTextPrefix("a\tb"), "a\\tb");
  EXPECT_EQ(ClientTextPrefix("a\x7f"), "a\\x7f");
}

TEST(ClientTextTest, ValidUtf8KeepsValidTextAndReplacesEveryOtherByte) {
  EXPECT_EQ(ValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  // A stray continuation byte, a truncated sequence, an overlong form and a
  // surrogate: each bad byte one U+FFFD.
  EXPECT_EQ(ValidUtf8("a\x80" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(ValidUtf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(ValidUtf8("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_EQ(ValidUtf8("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(ClientTextTest, ErrorTextsAreBoundedAtACharacterWithTheirLength) {
  EXPECT_EQ(BoundedErrorText("short"), "short");
  // A 2 MB text of two-byte characters: a cut at any odd byte would split one.
  std::string long_text;
  for (int i = 0; i < 1'000'000; ++i) long_text += "\xc3\xa9";
  const std::string bounded = BoundedErrorText(long_text);
  EXPECT_LE(bounded.size(), kErrorTextLimit);
  EXPECT_TRUE(absl::EndsWith(bounded, absl::StrCat("... (message cut: ", long_text.size(),
                                                    " bytes in all)")))
      << bounded.substr(bounded.size() - 80);
  EXPECT_EQ(ValidUtf8(bounded), bounded);
}

// Note [Server paths in error texts]
TEST(ClientTextTest, ServerDirectoryIsCutFromPaths) {
  EXPECT_EQ(WithoutServerDirectory("/srv/models/mlp/config.pbtxt:1:5: bad", "/srv/models"),
            "mlp/config.pbtxt:1:5: bad");
  EXPECT_EQ(WithoutServerDirectory("no version directory of /srv/models/mlp (expected "
                                   "/srv/models/mlp/1/model.onnx)",
                                   "/srv/models/"),
            "no version directory of mlp (expected mlp/1/model.onnx)");
  EXPECT_EQ(WithoutServerDirectory("no such model in /srv/models", "/srv/models"),
            "no such model in the model repository");
  // Other paths and longer names are left alone.
  EXPECT_EQ(WithoutServerDirectory("/srv/models2/a and /x/srv/models/b", "/srv/models"),
            "/srv/models2/a and /x/srv/models/b");
  EXPECT_EQ(WithoutServerDirectory("any text", "/"), "any text");
}

TEST(ClientTextTest, ServerDirectoryIsCutWithItsLinksFollowed) {
  const std::filesystem::path base =
      std::filesystem::temp_directory_path() / absl::StrCat("client_text_test_", getpid());
  std::filesystem::create_directories(base / "real");
  std::filesystem::create_directory_symlink(base / "real", base / "link");
  const std::string real = std::filesystem::canonical(base / "real").string();
  EXPECT_EQ(WithoutServerDirectory(real + "/mlp/1/model.onnx: cannot open", (base / "link").string()),
            "mlp/1/model.onnx: cannot open");
  EXPECT_EQ(WithoutServerDirectory((base / "link/mlp").string() + " is bad", (base / "link").string()),
            "mlp is bad");
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace graphserve
