#include "server/http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace graphserve {

// Note [Framing under the library]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cpp-httplib (0.11.4, Debian's compiled library) parses requests leniently
// where RFC 9112 is strict, and its defaults cannot be rebuilt here
// (bench/attack_probe.py found each):
// - it bounds each header line (8 KiB) only after reading it whole, and the
//   number of lines not at all: 12 connections each sending a 4 MiB header
//   section grew RSS by 83 MiB, and 20,000 headers were answered 200;
// - it reads a chunk size with strtoul ("0x2", " 2" and "+2" taken; "-2"
//   waited for the read timeout), and ends a chunked body early, as if it
//   were whole, when a chunk's data is not followed by CRLF;
// - it skips a header line ending in a bare LF, where a proxy in front may
//   read that header (RFC 9112 allows a bare LF as a line end): the two then
//   disagree on where the body is;
// - it gives each request a fresh read buffer, so the bytes of a pipelined
//   request read ahead with the one before it were lost (and, kept, the
//   rest of a request whose line it could not parse is read as more
//   requests: a connection ends after such an answer);
// - it checks that a peer is still "alive" before each write by reading
//   from it, so a client that shut its write side after sending got no
//   answer.
// Its server loop is a virtual hook (process_and_close_socket) and its
// request parser reads through an abstract Stream, so FramedHttpServer
// keeps the parser and replaces the loop and the stream: one
// ConnectionStream per connection, whose read-ahead serves the next request,
// and whose RequestFraming checks every byte before the library sees it.
// A head over --http-max-header-size is answered 431, a NUL or bare CR or LF
// in it 400 (RFC 9110 5.5, RFC 9112 2.2), a chunk size that is not hex
// digits or data without its CRLF 400; the stream writes that answer itself,
// swallows the library's own answer to the failed read, and the connection
// is closed after a brief drain (Note [Closing without losing the answer]).
// An `Expect: 100-continue` is answered by the listener's checks first
// (server/http_listener.cc), so a body over the limit gets 413, not 100.

// Note [Closing without losing the answer]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A connection closed while the client's bytes are still unread makes the
// kernel send a reset, and a client still sending (the rest of a header
// section refused at 64 KiB) then gets ECONNRESET instead of the 431 already
// written. So a connection that ends refused or unserved is shut for
// writing first and read until the client closes, goes quiet for half a
// second, or two seconds have passed (RFC 9112 9.6's "lingering close"; nginx
// lingers up to 30 s). What a client sends that fast is drained whatever its
// size: 12 clients sending 4 MiB heads each read their 431.

namespace {

constexpr size_t kReadAheadBytes = 4096;
constexpr int kPollSliceMs = 100;
constexpr int kLingerQuietMs = 500;
constexpr auto kLingerTime = std::chrono::seconds(2);

// `call()` (a system call returning < 0 with errno on failure), again while
// a signal interrupts it.
template <typename Call>
auto RetryOnSignal(Call call) {
  decltype(call()) result;
  do {
    result = call();
  } while (result < 0 && errno == EINTR);
  return result;
}

// poll(2) on one socket.
int PollSocket(int socket, short events, int timeout_ms) {
  pollfd entry{socket, events, 0};
  return RetryOnSignal([&] { return ::poll(&entry, 1, timeout_ms); });
}

int TimeoutMs(time_t secs, time_t usecs) {
  return static_cast<int>(std::min<int64_t>(int64_t{secs} * 1000 + usecs / 1000, 1 << 30));
}

const char* Reason(int status) {
  return status == 431 ? "Request Header Fields Too Large" : "Bad Request";
}

// The address and port of a TCP socket's own end or its peer's.
void AddressAndPort(int socket, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  const int got = peer ? ::getpeername(socket, reinterpret_cast<sockaddr*>(&address), &length)
                       : ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
  ip.clear();
  port = 0;
  if (got != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// One connection's bytes, in both directions, for the library's parser and
// handlers: Note [Framing under the library].
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int socket, size_t max_header_bytes, int read_timeout_ms, int write_timeout_ms)
      : socket_(socket),
        read_timeout_ms_(read_timeout_ms),
        write_timeout_ms_(write_timeout_ms),
        framing_(max_header_bytes) {}

  // Whether a request's first bytes came (or the client closed) within
  // `timeout_ms`, while `listening` is open.
  bool WaitForRequest(int timeout_ms, const std::atomic<socket_t>& listening) const {
    if (begin_ < end_) return true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (listening != INVALID_SOCKET) {
      const int ready = PollSocket(socket_, POLLIN, kPollSliceMs);
      if (ready != 0) return ready > 0;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
    return false;
  }

  void StartRequest() {
    framing_.StartRequest();
    head_parsed_ = false;
  }

  // Called by the library once the request's head is parsed, before its
  // body is read: the same test as the library's for a chunked body.
  void HeadParsed(const httplib::Request& request) {
    head_parsed_ = true;
    if (absl::EqualsIgnoreCase(request.get_header_value("Transfer-Encoding"), "chunked")) {
      framing_.ExpectChunkedBody();
    }
  }

  // Whether the stream refused the request's bytes (and answered it).
  [[nodiscard]] bool refused() const { return refused_; }
  // Whether the library parsed the request's line and headers. When it
  // answers without (a request line it cannot parse, a target over 8 KiB,
  // headers it cannot read: 400, 414) the rest of the request is still
  // unread, and would be read as the next request.
  [[nodiscard]] bool head_parsed() const { return head_parsed_; }

  // Shuts the sending side and reads what the client still sends, within
  // Note [Closing without losing the answer]'s bounds.
  void Linger() {
    ::shutdown(socket_, SHUT_WR);
    const auto deadline = std::chrono::steady_clock::now() + kLingerTime;
    char sink[16 << 10];
    while (std::chrono::steady_clock::now() < deadline) {
      if (PollSocket(socket_, POLLIN, kLingerQuietMs) <= 0) return;
      if (Receive(sink, sizeof(sink)) <= 0) return;
    }
  }

  bool is_readable() const override {
    return begin_ < end_ || PollSocket(socket_, POLLIN, read_timeout_ms_) > 0;
  }

  bool is_writable() const override { return PollSocket(socket_, POLLOUT, write_timeout_ms_) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (refused_) return -1;
    if (size == 0) return 0;
    if (begin_ == end_) {
      if (!is_readable()) return -1;  // the read timeout passed
      // A read as large as the read-ahead is body the library counted
      // (its reads never pass the body's end): straight into its buffer.
      const bool direct = size >= kReadAheadBytes;
      const ssize_t n = Receive(direct ? ptr : read_ahead_, direct ? size : kReadAheadBytes);
      if (n <= 0) return n;
      if (direct) return Checked(ptr, static_cast<size_t>(n)) ? n : -1;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, end_ - begin_);
    if (!Checked(read_ahead_ + begin_, n)) return -1;
    std::memcpy(ptr, read_ahead_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    // The library answers the read refused with its own 400: ours went first.
    if (refused_) return static_cast<ssize_t>(size);
    if (!is_writable()) return -1;
    return RetryOnSignal([&] { return ::send(socket_, ptr, size, MSG_NOSIGNAL); });
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    AddressAndPort(socket_, /*peer=*/true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    AddressAndPort(socket_, /*peer=*/false, ip, port);
  }
  socket_t socket() const override { return socket_; }

 private:
  ssize_t Receive(char* into, size_t size) {
    return RetryOnSignal([&] { return ::recv(socket_, into, size, 0); });
  }

  // Whether `bytes`, the next the library reads, keep RFC 9112's framing;
  // answers the request and refuses the connection when they do not.
  bool Checked(const char* bytes, size_t size) {
    const std::optional<FramingError> error = framing_.Check(std::string_view(bytes, size));
    if (!error.has_value()) return true;
    const std::string body = absl::StrCat(R"({"error":")", error->message, R"("})");
    const std::string answer =
        absl::StrCat("HTTP/1.1 ", error->status, " ", Reason(error->status),
                     "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                     "\r\nConnection: close\r\n\r\n", body);
    for (size_t written = 0; written < answer.size();) {
      const ssize_t n = write(answer.data() + written, answer.size() - written);
      if (n <= 0) break;
      written += static_cast<size_t>(n);
    }
    refused_ = true;
    return false;
  }

  const int socket_;
  const int read_timeout_ms_;
  const int write_timeout_ms_;
  RequestFraming framing_;
  char read_ahead_[kReadAheadBytes];
  size_t begin_ = 0;  // unread read-ahead is [begin_, end_)
  size_t end_ = 0;
  bool refused_ = false;
  bool head_parsed_ = false;
};

}  // namespace

bool FramedHttpServer::process_and_close_socket(socket_t socket) {
  ConnectionStream stream(socket, max_header_bytes_,
                          TimeoutMs(read_timeout_sec_, read_timeout_usec_),
                          TimeoutMs(write_timeout_sec_, write_timeout_usec_));
  const int keep_alive_ms = TimeoutMs(keep_alive_timeout_sec_, 0);
  bool served = false;
  // The last request was not answered whole: refused, or not read (its head
  // unparsed, or no request at all where a client closed between requests).
  // The linger drains what the client still sends, and ends at once on EOF.
  bool unanswered = false;
  for (size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!stream.WaitForRequest(keep_alive_ms, svr_sock_)) break;
    stream.StartRequest();
    bool client_closes = false;
    served = process_request(stream, /*close_connection=*/left == 1, client_closes,
                             [&stream](httplib::Request& request) { stream.HeadParsed(request); });
    unanswered = !served || stream.refused() || !stream.head_parsed();
    if (unanswered || client_closes) break;
  }
  if (unanswered) stream.Linger();
  ::shutdown(socket, SHUT_RDWR);
  ::close(socket);
  return served;
}

}  // namespace graphserve
