#include "server/http_compression.h"

#include <zlib.h>

#include <string>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

// zlib's inflate, which reads both wrappers (window bits + 32): the
// independent check of what Compress wrote.
std::string Inflate(const std::string& compressed) {
  z_stream stream{};
  EXPECT_EQ(inflateInit2(&stream, 15 + 32), Z_OK);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  char buffer[4096];
  int result = Z_OK;
  while (result == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef*>(buffer);
    stream.avail_out = sizeof(buffer);
    result = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
  }
  EXPECT_EQ(result, Z_STREAM_END);
  inflateEnd(&stream);
  return out;
}

TEST(HttpCompressionTest, AcceptEncodingPicksTritonsChoice) {
  EXPECT_EQ(ResponseEncoding(""), ContentEncoding::kIdentity);
  EXPECT_EQ(ResponseEncoding("gzip"), ContentEncoding::kGzip);
  EXPECT_EQ(ResponseEncoding("deflate"), ContentEncoding::kDeflate);
  // Python's requests and aiohttp send these.
  EXPECT_EQ(ResponseEncoding("gzip, deflate"), ContentEncoding::kGzip);
  EXPECT_EQ(ResponseEncoding("gzip, deflate, br"), ContentEncoding::kGzip);
  EXPECT_EQ(ResponseEncoding("deflate, gzip"), ContentEncoding::kDeflate);  // first on a tie
  EXPECT_EQ(ResponseEncoding("gzip;q=0.5, deflate;q=0.8"), ContentEncoding::kDeflate);
  EXPECT_EQ(ResponseEncoding("identity, gzip;q=0.9"), ContentEncoding::kIdentity);
  // A weight of 0 refuses the coding; codings Triton does not write are skipped.
  EXPECT_EQ(ResponseEncoding("gzip;q=0"), ContentEncoding::kIdentity);
  EXPECT_EQ(ResponseEncoding("br"), ContentEncoding::kIdentity);
  EXPECT_EQ(ResponseEncoding("*"), ContentEncoding::kIdentity);
  EXPECT_EQ(ResponseEncoding("gzip;q=high, deflate"), ContentEncoding::kDeflate);
}

TEST(HttpCompressionTest, GzipAndDeflateRoundTrip) {
  std::string body = R"({"model_name":"mlp","outputs":[)";
  for (int i = 0; i < 5000; ++i) body += R"({"name":"y","data":[1.5,2.5]},)";
  body += "]}";
  for (const ContentEncoding encoding : {ContentEncoding::kGzip, ContentEncoding::kDeflate}) {
    const absl::StatusOr<std::string> compressed = Compress(body, encoding);
    ASSERT_TRUE(compressed.ok()) << compressed.status();
    EXPECT_LT(compressed->size(), body.size() / 10);  // the repeated text compresses well
    EXPECT_EQ(Inflate(*compressed), body);
    if (encoding == ContentEncoding::kGzip) {
      // RFC 1952's magic number.
      EXPECT_EQ(compressed->substr(0, 2), "\x1f\x8b");
    } else {
      // RFC 1950's header: deflate with a 32 KiB window.
      EXPECT_EQ((*compressed)[0], '\x78');
    }
  }
  EXPECT_EQ(Inflate(*Compress("", ContentEncoding::kGzip)), "");
  EXPECT_EQ(*Compress("as is", ContentEncoding::kIdentity), "as is");
  EXPECT_EQ(ContentEncodingName(ContentEncoding::kGzip), "gzip");
  EXPECT_EQ(ContentEncodingName(ContentEncoding::kDeflate), "deflate");
}

}  // namespace
}  // namespace graphserve
