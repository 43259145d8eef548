#pragma once
// Where an HTTP/1.1 request's head and chunked body begin and end, checked
// byte by byte as cpp-httplib reads them: the rules of RFC 9112 that the
// library reads leniently or not at all (Note [Framing under the library] in
// server/http_connection.cc).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace graphserve {

// The largest request line and header section together, by default
// (--http-max-header-size).
inline constexpr size_t kDefaultMaxHeaderBytes = 64 << 10;

// Why a request's bytes were refused: the HTTP status to answer and what
// the client should know.
struct FramingError {
  int status;
  const char* message;  // static
};

class RequestFraming {
 public:
  explicit RequestFraming(size_t max_header_bytes) : max_header_bytes_(max_header_bytes) {}

  // The next bytes read are a request's first.
  void StartRequest();
  // The request's head has been read and its body will be read as chunks
  // (Transfer-Encoding: chunked); otherwise the library counts the body.
  void ExpectChunkedBody();

  // Checks the next `bytes` of the connection, in order, before the library
  // sees them; an error leaves the state undefined: answer and close.
  std::optional<FramingError> Check(std::string_view bytes);

 private:
  enum class State {
    kHead,            // request line and header fields
    kBody,            // after the head: counted by the library, or done
    kChunkSizeFirst,  // the first hex digit of a chunk size
    kChunkSize,       // more hex digits, an extension or CR
    kChunkSizeSpace,  // whitespace after the size, before ';'
    kChunkExtension,  // ";name=value" up to CR
    kChunkSizeLf,     // the LF after a chunk size line
    kChunkData,       // chunk_left_ bytes of data
    kChunkDataCr,     // the CRLF after the data
    kChunkDataLf,
    kLastChunkCr,  // the CRLF ending the body (no trailer fields)
    kLastChunkLf,
  };

  std::optional<FramingError> CheckHeadByte(char byte);
  std::optional<FramingError> CheckChunkByte(char byte);

  const size_t max_header_bytes_;
  State state_ = State::kHead;
  size_t head_bytes_ = 0;
  size_t line_bytes_ = 0;  // of the head line or chunk size line being read
  bool first_line_ = true;
  bool after_cr_ = false;
  uint64_t chunk_left_ = 0;
};

}  // namespace graphserve
