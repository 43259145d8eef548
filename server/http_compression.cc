#include "server/http_compression.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graphserve {

ContentEncoding ResponseEncoding(absl::string_view accept_encoding) {
  ContentEncoding chosen = ContentEncoding::kIdentity;
  double chosen_weight = 0;
  for (absl::string_view entry : absl::StrSplit(accept_encoding, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    double weight = 1;
    if (const size_t q = entry.find(";q="); q != absl::string_view::npos) {
      // A weight that is not a number drops the entry, as Triton does.
      if (!absl::SimpleAtod(entry.substr(q + 3), &weight)) continue;
      entry = entry.substr(0, q);
    }
    ContentEncoding encoding;
    if (entry == "identity") {
      encoding = ContentEncoding::kIdentity;
    } else if (entry == "gzip") {
      encoding = ContentEncoding::kGzip;
    } else if (entry == "deflate") {
      encoding = ContentEncoding::kDeflate;
    } else {
      continue;
    }
    if (weight > chosen_weight) {
      chosen = encoding;
      chosen_weight = weight;
    }
  }
  return chosen;
}

absl::string_view ContentEncodingName(ContentEncoding encoding) {
  switch (encoding) {
    case ContentEncoding::kGzip:
      return "gzip";
    case ContentEncoding::kDeflate:
      return "deflate";
    case ContentEncoding::kIdentity:
      break;
  }
  return "";
}

absl::StatusOr<std::string> Compress(absl::string_view body, ContentEncoding encoding) {
  if (encoding == ContentEncoding::kIdentity) return std::string(body);
  z_stream stream{};
  // zlib's window bits: 15 the largest window; +16 writes a gzip wrapper
  // instead of zlib's.
  const int window_bits = encoding == ContentEncoding::kGzip ? 15 + 16 : 15;
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, window_bits, /*memLevel=*/8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("cannot start zlib to compress the response");
  }
  std::string out;
  // zlib counts in uInt: a body over 4 GiB goes in several pieces.
  constexpr size_t kPiece = std::numeric_limits<uInt>::max();
  std::vector<char> buffer(1 << 16);
  size_t consumed = 0;
  int result = Z_OK;
  while (result != Z_STREAM_END) {
    const size_t piece = std::min(kPiece, body.size() - consumed);
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data() + consumed));
    stream.avail_in = static_cast<uInt>(piece);
    const bool last = consumed + piece == body.size();
    do {
      stream.next_out = reinterpret_cast<Bytef*>(buffer.data());
      stream.avail_out = static_cast<uInt>(buffer.size());
      result = deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH);
      if (result == Z_STREAM_ERROR) {
        deflateEnd(&stream);
        return absl::InternalError("zlib failed to compress the response");
      }
      out.append(buffer.data(), buffer.size() - stream.avail_out);
    } while (stream.avail_out == 0);
    consumed += piece - stream.avail_in;
  }
  deflateEnd(&stream);
  return out;
}

}  // namespace graphserve
