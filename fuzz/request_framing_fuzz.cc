// The bytes of one request as the HTTP connection checks them
// (server/request_framing.h): a head, then a chunked body or none. The first
// byte picks the head limit and whether the body is chunked, the second the
// size of the pieces the bytes are fed in. Invariants: the verdict does not
// depend on how the bytes are split into reads (the library reads a head a
// byte at a time and a body in blocks, and a socket splits anywhere); a
// refusal is 400 or 431; a head of well-formed lines within the limit is
// never refused.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "server/request_framing.h"

namespace {

using graphserve::FramingError;
using graphserve::RequestFraming;

// The first refusal of `head` then `body` fed in pieces of `piece` bytes.
std::optional<FramingError> Verdict(size_t max_header_bytes, bool chunked, std::string_view head,
                                    std::string_view body, size_t piece) {
  RequestFraming framing(max_header_bytes);
  framing.StartRequest();
  for (size_t at = 0; at < head.size(); at += piece) {
    if (auto error = framing.Check(head.substr(at, piece))) return error;
  }
  if (chunked) framing.ExpectChunkedBody();
  for (size_t at = 0; at < body.size(); at += piece) {
    if (auto error = framing.Check(body.substr(at, piece))) return error;
  }
  return std::nullopt;
}

// Whether every line of `head` ends in CRLF and holds no NUL, CR or LF.
bool WellFormedLines(std::string_view head) {
  for (size_t at = 0; at < head.size();) {
    const size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos) return false;
    if (head.substr(at, end - at).find_first_of(std::string_view("\0\r\n", 3)) !=
        std::string_view::npos) {
      return false;
    }
    at = end + 2;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_header_bytes = size_t{16} << (data[0] % 8);
  const bool chunked = (data[0] & 0x80) != 0;
  const size_t piece = 1 + data[1] % 32;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  // The head ends at its first empty line: what the library reads as one.
  const size_t head_end = bytes.find("\r\n\r\n");
  const std::string_view head =
      head_end == std::string_view::npos ? bytes : bytes.substr(0, head_end + 4);
  const std::string_view body =
      head_end == std::string_view::npos ? std::string_view() : bytes.substr(head_end + 4);

  const std::optional<FramingError> whole =
      Verdict(max_header_bytes, chunked, head, body, bytes.size() + 1);
  const std::optional<FramingError> pieces = Verdict(max_header_bytes, chunked, head, body, piece);
  FUZZ_CHECK(whole.has_value() == pieces.has_value(), "the same verdict in any pieces");
  if (whole.has_value()) {
    FUZZ_CHECK(whole->message == pieces->message, "the same refusal in any pieces");
    FUZZ_CHECK(whole->status == 400 || whole->status == 431, "400 or 431");
  }
  if (head_end != std::string_view::npos && head.size() <= max_header_bytes &&
      WellFormedLines(head)) {
    FUZZ_CHECK(!Verdict(max_header_bytes, /*chunked=*/false, head, {}, piece).has_value(),
               "a well-formed head within the limit passes");
  }
  return 0;
}
