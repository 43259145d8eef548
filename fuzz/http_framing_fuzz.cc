// Raw bytes on a connection to the HTTP/REST endpoint: the request line,
// headers, Content-Length or chunked framing and body of one or more
// requests, parsed by the server's HTTP library and routed by the endpoint
// (server/http_endpoint.h) of a whole InferenceServer serving the demo
// repository on the host executor, started once. Each input is one
// connection: the bytes are sent, the write side is shut, and everything the
// server answers is read until it closes. Invariants: every answer begins
// with an HTTP/1.1 status line, a framing the endpoint refuses (a
// Content-Length that is not a byte count) is answered 400, and the server
// keeps answering /v2/health/live.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "examples/demo_repository.h"
#include "fuzz/fuzz_check.h"
#include "server/inference_server.h"

namespace graphserve {
namespace {

struct FuzzedServer {
  std::unique_ptr<InferenceServer> server;
  int http_port = 0;
};

FuzzedServer StartServer() {
  namespace fs = std::filesystem;
  const fs::path repository = fs::temp_directory_path() / "graphserve_http_framing_fuzz";
  DemoRepositoryOptions demo;
  demo.batch_sizes = {1, 4};  // small: the host executor runs each request
  demo.max_batch_size = 8;
  FUZZ_CHECK(WriteDemoRepository(repository.string(), demo).ok(), "the demo repository");
  InferenceServerOptions options;
  options.model_repositories = {repository.string()};
  options.host = "127.0.0.1";
  options.grpc_port = 0;
  options.http_port = 0;
  options.metrics_port = 0;
  options.models.executor = ExecutorKind::kHost;
  options.models.cost_iters = 1;
  options.exit_on_error = false;
  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server = InferenceServer::Start(options, log);
  if (!server.ok()) std::fprintf(stderr, "%s\n%s\n", server.status().ToString().c_str(), log.str().c_str());
  FUZZ_CHECK(server.ok(), "the server starts");
  FuzzedServer fuzzed;
  fuzzed.http_port = (*server)->http_port();
  fuzzed.server = *std::move(server);
  return fuzzed;
}

// Sends `bytes` on a new connection, shuts the write side when `half_close`
// and returns what the server sent until it closed (or 10 s passed).
// Half-closing ends an incomplete request at once instead of at the server's
// read timeout, but cpp-httplib 0.11.4 then at times drops the answer (it
// checks that the peer is "alive" before writing, and a peer that shut its
// write side reads as gone): an empty answer is no finding.
std::string Exchange(int port, const std::string& bytes, bool half_close) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  FUZZ_CHECK(fd >= 0, "a socket");
  timeval timeout{.tv_sec = 10, .tv_usec = 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  // Close with a reset: a million connections in TIME_WAIT would exhaust
  // the ephemeral ports long before a million inputs.
  const linger reset{.l_onoff = 1, .l_linger = 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // libFuzzer's -timeout ticks with SIGALRM, which interrupts system calls:
  // an interrupted connect goes on by itself (EALREADY, then EISCONN).
  int connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  while (connected != 0 && (errno == EINTR || errno == EALREADY)) {
    connected = connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    if (connected != 0 && errno == EISCONN) connected = 0;
  }
  if (connected != 0) std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
  FUZZ_CHECK(connected == 0, "the server accepts connections");
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the server closed early: what it said is still read
    sent += static_cast<size_t>(n);
  }
  if (half_close) (void)shutdown(fd, SHUT_WR);
  std::string answer;
  char buffer[1 << 14];
  ssize_t n = 0;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) answer.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return answer;
}

bool IsStatusLine(const std::string& answer) {
  return answer.size() >= 12 && answer.compare(0, 9, "HTTP/1.1 ") == 0 && isdigit(answer[9]) &&
         isdigit(answer[10]) && isdigit(answer[11]);
}

// Whether the first request's headers, read as cpp-httplib 0.11.4 reads
// them (read_headers), carry a negative Content-Length: lines end at '\n',
// the request line comes first, a blank CRLF line ends the headers, and a
// line that does not end in CRLF is skipped, not read as a header. False
// when the headers never end.
bool HasNegativeContentLength(const std::string& bytes) {
  bool negative = false;
  size_t line = bytes.find('\n');
  while (line != std::string::npos) {
    const size_t begin = line + 1;
    line = bytes.find('\n', begin);
    if (line == std::string::npos) break;
    if (line == begin || bytes[line - 1] != '\r') continue;  // skipped
    if (line - begin == 1) return negative;                  // the blank line
    negative = negative || bytes.compare(begin, 17, "Content-Length: -") == 0;
  }
  return false;
}

}  // namespace
}  // namespace graphserve

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  static FuzzedServer fuzzed = StartServer();
  static uint64_t executions = 0;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string answer = Exchange(fuzzed.http_port, bytes, /*half_close=*/true);
  FUZZ_CHECK(answer.empty() || IsStatusLine(answer), "answers begin with a status line");
  // A negative Content-Length among the first request's headers is never
  // run: it is refused (Note [HTTP framing] in server/http_endpoint.cc).
  if (!answer.empty() && HasNegativeContentLength(bytes)) {
    // 4xx, or 501 for a Transfer-Encoding the endpoint does not serve.
    FUZZ_CHECK(answer[9] != '2', "a negative Content-Length is refused");
  }
  // The check asks the server to close the connection, and does not
  // half-close, so it always gets its answer.
  if (++executions % 256 == 1) {
    const std::string live =
        Exchange(fuzzed.http_port, "GET /v2/health/live HTTP/1.1\r\nHost: f\r\nConnection: close\r\n\r\n",
                 /*half_close=*/false);
    FUZZ_CHECK(live.compare(0, 12, "HTTP/1.1 200") == 0, "the server stays live");
  }
  return 0;
}
