#include "server/request_framing.h"

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

constexpr std::string_view kHead = "POST /v2 HTTP/1.1\r\nHost: x\r\n\r\n";

// The status refusing `bytes` as one request's head, or 0 when they pass.
int HeadStatus(std::string_view bytes, size_t max_header_bytes = 1024) {
  RequestFraming framing(max_header_bytes);
  framing.StartRequest();
  const std::optional<FramingError> error = framing.Check(bytes);
  return error.has_value() ? error->status : 0;
}

// The status refusing `body` as a chunked body after kHead, fed in pieces of
// `piece` bytes, or 0 when it passes.
int ChunkedStatus(std::string_view body, size_t piece = 1) {
  RequestFraming framing(1024);
  framing.StartRequest();
  EXPECT_FALSE(framing.Check(kHead).has_value());
  framing.ExpectChunkedBody();
  for (size_t at = 0; at < body.size(); at += piece) {
    const std::optional<FramingError> error = framing.Check(body.substr(at, piece));
    if (error.has_value()) return error->status;
  }
  return 0;
}

TEST(RequestFraming, AHeadWithinTheLimitPasses) {
  EXPECT_EQ(HeadStatus(kHead), 0);
  EXPECT_EQ(HeadStatus(kHead, kHead.size()), 0);
}

TEST(RequestFraming, AHeadOverTheLimitIs431) {
  EXPECT_EQ(HeadStatus(kHead, kHead.size() - 1), 431);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 100; ++i) many += "X-Filler: " + std::string(20, 'a') + "\r\n";
  EXPECT_EQ(HeadStatus(many), 431);  // never ended: counted as it comes
}

TEST(RequestFraming, NulAndBareLineEndsInTheHeadAre400) {
  EXPECT_EQ(HeadStatus(std::string("GET / HTTP/1.1\r\nKey: s3cret\0x\r\n\r\n", 33)), 400);
  EXPECT_EQ(HeadStatus("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\n\r\n"), 400);
  EXPECT_EQ(HeadStatus("GET / HTTP/1.1\r\nA: b\rC: d\r\n\r\n"), 400);
  EXPECT_EQ(HeadStatus("GET / HTTP/1.1\n\n"), 400);
}

TEST(RequestFraming, TheBodyAfterTheHeadIsNotChecked) {
  RequestFraming framing(64);
  framing.StartRequest();
  ASSERT_FALSE(framing.Check(kHead).has_value());
  EXPECT_FALSE(framing.Check(std::string(1000, '\0')).has_value());
  // The next request is checked again, from its first byte.
  framing.StartRequest();
  EXPECT_TRUE(framing.Check(std::string("GET / HTTP/1.1\0", 15)).has_value());
}

TEST(RequestFraming, WellFormedChunksPassInAnyPieces) {
  constexpr std::string_view kBody =
      "4\r\nWiki\r\n5;name=value\r\npedia\r\nA\r\n0123456789\r\n0\r\n\r\n";
  for (size_t piece : {size_t{1}, size_t{3}, kBody.size()}) {
    EXPECT_EQ(ChunkedStatus(kBody, piece), 0) << "pieces of " << piece;
  }
  EXPECT_EQ(ChunkedStatus("00\r\n\r\n"), 0);
}

TEST(RequestFraming, AChunkSizeIsHexDigitsOnly) {
  for (std::string_view body :
       {"0x2\r\nab\r\n0\r\n\r\n", " 2\r\nab\r\n0\r\n\r\n", "+2\r\nab\r\n0\r\n\r\n",
        "-2\r\nab\r\n0\r\n\r\n", "\r\nab\r\n0\r\n\r\n", "2\nab\r\n0\r\n\r\n",
        "2 \r\nab\r\n0\r\n\r\n", "2 x\r\nab\r\n0\r\n\r\n"}) {
    EXPECT_EQ(ChunkedStatus(body), 400) << body;
  }
  // Whitespace only before an extension (RFC 9112 7.1.1's BWS).
  EXPECT_EQ(ChunkedStatus("2 ;a=b\r\nab\r\n0\r\n\r\n"), 0);
}

TEST(RequestFraming, ChunkDataEndsInCrlf) {
  EXPECT_EQ(ChunkedStatus("2\r\nabc\r\n0\r\n\r\n"), 400);
  EXPECT_EQ(ChunkedStatus("2\r\nab\n0\r\n\r\n"), 400);
}

TEST(RequestFraming, TrailerFieldsAreRefused) {
  EXPECT_EQ(ChunkedStatus("2\r\nab\r\n0\r\nX-Trailer: 1\r\n\r\n"), 400);
}

TEST(RequestFraming, HugeChunkSizesAndLongLinesAreRefused) {
  EXPECT_EQ(ChunkedStatus("fffffffffffffffff\r\n"), 400);
  EXPECT_EQ(ChunkedStatus("2;" + std::string(5000, 'x') + "\r\n"), 400);
}

TEST(RequestFraming, EveryMessageIsJsonSafe) {
  // The connection writes a message into a JSON string as it is.
  const std::string heads[] = {std::string(2000, 'a'), std::string("\0", 1), "\n"};
  const std::string bodies[] = {"x\r\n", "2;" + std::string(5000, 'x'), "fffffffffffffffff",
                                "1\r\nab", "0\r\nX"};
  std::vector<FramingError> errors;
  for (const std::string& head : heads) {
    RequestFraming framing(1024);
    framing.StartRequest();
    std::optional<FramingError> error = framing.Check(head);
    ASSERT_TRUE(error.has_value()) << head.substr(0, 20);
    errors.push_back(*error);
  }
  for (const std::string& body : bodies) {
    RequestFraming framing(1024);
    framing.StartRequest();
    ASSERT_FALSE(framing.Check(kHead).has_value());
    framing.ExpectChunkedBody();
    std::optional<FramingError> error = framing.Check(body);
    ASSERT_TRUE(error.has_value()) << body.substr(0, 20);
    errors.push_back(*error);
  }
  std::set<std::string_view> messages;
  for (const FramingError& error : errors) {
    const std::string_view message = error.message;
    EXPECT_EQ(message.find_first_of("\"\\"), std::string_view::npos) << message;
    messages.insert(message);
  }
  EXPECT_EQ(messages.size(), errors.size());  // one test per message
}

}  // namespace
}  // namespace graphserve
