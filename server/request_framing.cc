#include "server/request_framing.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace graphserve {

namespace {

constexpr FramingError kHeadTooLarge{
    431, "the request line and header fields exceed the server's limit (--http-max-header-size)"};
constexpr FramingError kNulInHead{
    400, "a NUL byte in the request line or a header field: RFC 9110 section 5.5"};
constexpr FramingError kBareLineEnd{
    400, "a line of the request head ends without CRLF, or holds a bare CR: RFC 9112 section 2.2"};
constexpr FramingError kBadChunkSize{
    400, "a chunk size is hex digits, an optional extension and CRLF: RFC 9112 section 7.1"};
constexpr FramingError kChunkLineTooLong{400, "a chunk size line over 4096 bytes"};
constexpr FramingError kChunkTooLarge{400, "a chunk size over 2^60 bytes"};
constexpr FramingError kChunkDataUnended{400,
                                         "chunk data not followed by CRLF: RFC 9112 section 7.1"};
constexpr FramingError kTrailerFields{
    400, "trailer fields after the last chunk are not read; end the body with 0 CRLF CRLF"};

constexpr size_t kMaxChunkLineBytes = 4096;
constexpr uint64_t kMaxChunkBytes = uint64_t{1} << 60;

int HexValue(char byte) {
  if (byte >= '0' && byte <= '9') return byte - '0';
  const char lower = absl::ascii_tolower(static_cast<unsigned char>(byte));
  if (lower >= 'a' && lower <= 'f') return lower - 'a' + 10;
  return -1;
}

}  // namespace

void RequestFraming::StartRequest() {
  state_ = State::kHead;
  head_bytes_ = 0;
  line_bytes_ = 0;
  first_line_ = true;
  after_cr_ = false;
}

void RequestFraming::ExpectChunkedBody() {
  state_ = State::kChunkSizeFirst;
  line_bytes_ = 0;
}

std::optional<FramingError> RequestFraming::Check(std::string_view bytes) {
  while (!bytes.empty()) {
    if (state_ == State::kBody) return std::nullopt;
    if (state_ == State::kChunkData) {
      const size_t taken = static_cast<size_t>(std::min<uint64_t>(chunk_left_, bytes.size()));
      chunk_left_ -= taken;
      bytes.remove_prefix(taken);
      if (chunk_left_ == 0) state_ = State::kChunkDataCr;
      continue;
    }
    const char byte = bytes.front();
    bytes.remove_prefix(1);
    std::optional<FramingError> error =
        state_ == State::kHead ? CheckHeadByte(byte) : CheckChunkByte(byte);
    if (error.has_value()) return error;
  }
  return std::nullopt;
}

// The head ends at its first empty line after the request line; every line
// ends in CRLF, and no byte is NUL.
std::optional<FramingError> RequestFraming::CheckHeadByte(char byte) {
  if (++head_bytes_ > max_header_bytes_) return kHeadTooLarge;
  if (byte == '\0') return kNulInHead;
  if (after_cr_) {
    if (byte != '\n') return kBareLineEnd;
    after_cr_ = false;
    const bool empty_line = line_bytes_ == 1;
    if (empty_line && !first_line_) state_ = State::kBody;
    first_line_ = false;
    line_bytes_ = 0;
    return std::nullopt;
  }
  if (byte == '\n') return kBareLineEnd;
  if (byte == '\r') after_cr_ = true;
  ++line_bytes_;
  return std::nullopt;
}

std::optional<FramingError> RequestFraming::CheckChunkByte(char byte) {
  if (state_ == State::kChunkSizeFirst || state_ == State::kChunkSize ||
      state_ == State::kChunkSizeSpace || state_ == State::kChunkExtension) {
    if (++line_bytes_ > kMaxChunkLineBytes) return kChunkLineTooLong;
  }
  switch (state_) {
    case State::kChunkSizeFirst:
      if (HexValue(byte) < 0) return kBadChunkSize;
      chunk_left_ = HexValue(byte);
      state_ = State::kChunkSize;
      return std::nullopt;
    case State::kChunkSize:
      if (const int digit = HexValue(byte); digit >= 0) {
        chunk_left_ = chunk_left_ * 16 + digit;
        if (chunk_left_ > kMaxChunkBytes) return kChunkTooLarge;
      } else if (byte == ';') {
        state_ = State::kChunkExtension;
      } else if (byte == ' ' || byte == '\t') {
        state_ = State::kChunkSizeSpace;
      } else if (byte == '\r') {
        state_ = State::kChunkSizeLf;
      } else {
        return kBadChunkSize;
      }
      return std::nullopt;
    case State::kChunkSizeSpace:  // RFC 9112 7.1.1: BWS before an extension only
      if (byte == ';') {
        state_ = State::kChunkExtension;
      } else if (byte != ' ' && byte != '\t') {
        return kBadChunkSize;
      }
      return std::nullopt;
    case State::kChunkExtension:
      if (byte == '\r') {
        state_ = State::kChunkSizeLf;
      } else if (byte == '\n' || byte == '\0') {
        return kBadChunkSize;
      }
      return std::nullopt;
    case State::kChunkSizeLf:
      if (byte != '\n') return kBadChunkSize;
      line_bytes_ = 0;
      state_ = chunk_left_ == 0 ? State::kLastChunkCr : State::kChunkData;
      return std::nullopt;
    case State::kChunkDataCr:
      if (byte != '\r') return kChunkDataUnended;
      state_ = State::kChunkDataLf;
      return std::nullopt;
    case State::kChunkDataLf:
      if (byte != '\n') return kChunkDataUnended;
      state_ = State::kChunkSizeFirst;
      return std::nullopt;
    case State::kLastChunkCr:
      if (byte != '\r') return kTrailerFields;
      state_ = State::kLastChunkLf;
      return std::nullopt;
    case State::kLastChunkLf:
      if (byte != '\n') return kTrailerFields;
      state_ = State::kBody;
      return std::nullopt;
    case State::kHead:
    case State::kBody:
    case State::kChunkData:
      break;  // handled by Check
  }
  return std::nullopt;
}

}  // namespace graphserve
