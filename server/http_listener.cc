#include "server/http_listener.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/http_connection.h"

namespace graphserve {

namespace {

// Note [Answers without Nagle's delay]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cpp-httplib writes a response's headers and its body in separate writes.
// With Nagle's algorithm on (the socket default), the body then waits in
// the kernel until the client acknowledges the headers, and clients delay
// that acknowledgement by up to 40 ms: perf_analyzer over HTTP measured
// 42.6 ms p50 for every request, batch 1 or 8, on the H200 machine, where
// gRPC answered in 0.2 ms (bench/results/2026-11-29_*_perf_analyzer_h200).
// The listening socket gets TCP_NODELAY, which the sockets it accepts
// inherit on Linux, as Triton's HTTP server and gRPC set it.

// Note [Slow clients]
// ~~~~~~~~~~~~~~~~~~~
// cpp-httplib serves each connection on one worker thread from accept to
// close, and its read timeout counts from the last byte read: a client that
// sends its headers a byte every few seconds holds a worker indefinitely.
// With a fixed pool of 32 workers (8 on the metrics port), 200 such clients
// stopped every HTTP answer and 16 stopped metrics scrapes (issue 30,
// finding 6). The library has no deadline for a whole request, and no hook
// that sees a connection's socket; so the pool grows instead: a worker starts
// whenever a connection arrives and none is idle, up to max_connections,
// and idle workers stay for the next ones. Slow clients then hold only their
// own threads (a thread waiting on a socket costs its stack's touched pages,
// not a core), and a port stalls only past max_connections of them at once.
class GrowingThreadPool final : public httplib::TaskQueue {
 public:
  explicit GrowingThreadPool(int max_threads) : max_threads_(std::max(1, max_threads)) {}
  ~GrowingThreadPool() override { shutdown(); }

  void enqueue(std::function<void()> task) override {
    {
      absl::MutexLock lock(&mu_);
      tasks_.push_back(std::move(task));
      if (idle_ < static_cast<int>(tasks_.size()) &&
          static_cast<int>(threads_.size()) < max_threads_) {
        threads_.emplace_back([this] { Work(); });
      }
    }
    ready_.Signal();
  }

  // Called by the listener's Stop: runs what was accepted, then joins.
  void shutdown() override {
    std::vector<std::thread> threads;
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      threads.swap(threads_);
    }
    ready_.SignalAll();
    for (std::thread& thread : threads) thread.join();
  }

 private:
  void Work() {
    absl::MutexLock lock(&mu_);
    while (true) {
      ++idle_;
      while (!stopping_ && tasks_.empty()) ready_.Wait(&mu_);
      --idle_;
      if (tasks_.empty()) return;  // stopping, nothing left
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      mu_.Unlock();
      task();
      mu_.Lock();
    }
  }

  const int max_threads_;
  absl::Mutex mu_;
  absl::CondVar ready_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// Whether the library will read a body after the headers (its own rule:
// these methods always, any other with a length or chunks).
bool HasBody(const httplib::Request& request) {
  const std::string& method = request.method;
  if (method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" ||
      method == "PRI") {
    return true;
  }
  const std::string length = request.get_header_value("Content-Length");
  return (!length.empty() && length != "0") || request.has_header("Transfer-Encoding");
}

// Note [A backlog for bursts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Debian's cpp-httplib is a compiled library that listens with a backlog of
// 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when it was built). Connections the
// kernel cannot queue while the accept thread hands earlier ones to workers
// are dropped, and their clients retry after a second: of 200 connections
// opened at once, 19-25 took a second to connect (bench/attack_probe.py,
// case connection_burst). So the listener listens again on the socket the
// library bound, with the system's SOMAXCONN, before the library accepts.

// Note [Bodies nobody reads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Before it routes, cpp-httplib reads the whole body of any request that no
// streaming route takes (a POST to an unknown path, a PUT, a GET with a
// body) into memory, and inflates it whole when it is gzip or deflate: the
// length limit counts the bytes on the wire, not the inflated ones, so 191
// KiB of gzip cost 250 MB, on the metrics port too (issue 30, finding 5).
// So such requests are answered from their line and headers, before the
// body is read, and the connection closed (AnswerJsonAndClose): 405 for a
// method no route serves, 404 for a POST to a path none serves. A GET or
// HEAD may still carry a body, which the library reads within its length
// limit, but not a compressed one (415). Streaming routes (the endpoint's
// POSTs) read their bodies themselves within their bound, inflated or not.
bool RefuseUnreadBody(const HttpListenerOptions& options, const httplib::Request& request,
                      httplib::Response& response) {
  if (!HasBody(request)) return false;
  if (options.streams_body && options.streams_body(request)) return false;
  const std::string& method = request.method;
  if (method == "GET" || method == "HEAD") {
    const std::string encoding = request.get_header_value("Content-Encoding");
    if (encoding.empty() || absl::EqualsIgnoreCase(encoding, "identity")) return false;
    AnswerJsonAndClose(response, 415,
                   R"({"error":"a GET or HEAD body is not read, and may not be compressed"})");
    return true;
  }
  if (method == "POST") {
    AnswerJsonAndClose(response, 404, R"({"error":"no POST route for this path"})");
    return true;
  }
  AnswerJsonAndClose(response, 405,
                 R"({"error":"method not served: the routes take GET, HEAD and POST"})");
  response.set_header("Allow", "GET, HEAD, POST");
  return true;
}

// RFC 9110 5.1 and 9112 5.1: a field name is a token, and whitespace
// before the colon must be refused (400). The library keeps such a name as
// it came, space included, so "Transfer-Encoding : chunked" beside a
// Content-Length passed the framing check as an unknown header while a
// proxy in front may read it as chunked: a smuggled request
// (bench/attack_probe.py, transfer_encoding_obfuscated).
bool RefuseBadHeaderNames(const httplib::Request& request, httplib::Response& response) {
  constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  for (const auto& [name, value] : request.headers) {
    const bool token = !name.empty() && std::all_of(name.begin(), name.end(), [&](char c) {
      return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
             kTokenPunctuation.find(c) != std::string_view::npos;
    });
    if (!token) {
      AnswerJsonAndClose(response, 400,
                         R"({"error":"a header name is not a token: RFC 9110 section 5.1"})");
      return true;
    }
  }
  return false;
}

}  // namespace

void AnswerJsonAndClose(httplib::Response& response, int code, std::string json_body) {
  response.status = code;
  response.set_header("Connection", "close");
  auto body = std::make_shared<const std::string>(std::move(json_body));
  response.set_content_provider(
      body->size(), "application/json",
      [body](size_t offset, size_t length, httplib::DataSink& sink) {
        sink.write(body->data() + offset, length);
        return false;  // written; now close
      });
}

bool AnsweredAndClosing(const httplib::Response& response) {
  return response.get_header_value("Connection") == "close";
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    std::unique_ptr<FramedHttpServer> server, const TcpListenAddress& address,
    HttpListenerOptions options) {
  // cpp-httplib's default options add SO_REUSEPORT: Note [Refusing a port in use].
  const bool reuse_port = address.reuse_port;
  // The socket the library binds (on this thread, in bind_to_port), for
  // Note [A backlog for bursts].
  auto listening = std::make_shared<int>(-1);
  server->set_socket_options([reuse_port, listening](int socket) {
    *listening = socket;
    const int yes = 1;
    (void)setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (reuse_port) (void)setsockopt(socket, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
    // Note [Answers without Nagle's delay]; accepted sockets inherit it.
    (void)setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  });
  const int max_connections = options.max_connections;
  server->new_task_queue = [max_connections] { return new GrowingThreadPool(max_connections); };
  server->set_read_timeout(options.read_timeout_secs, 0);
  server->set_keep_alive_timeout(options.read_timeout_secs);
  // As many requests on one connection as the client sends, as Triton's HTTP
  // server answers: cpp-httplib's default closed it after five, and clients
  // (tritonclient, perf_analyzer) connected again for every fifth request.
  server->set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  server->set_max_header_bytes(options.max_header_bytes);
  // Whether a request was answered from its line and headers alone.
  auto answered = [options = std::make_shared<const HttpListenerOptions>(std::move(options))](
                      const httplib::Request& request, httplib::Response& response) {
    return RefuseBadHeaderNames(request, response) ||
           RefuseUnreadBody(*options, request, response) ||
           (options->check && !options->check(request, response));
  };
  server->set_pre_routing_handler(
      [answered](const httplib::Request& request, httplib::Response& response) {
        return answered(request, response) ? httplib::Server::HandlerResponse::Handled
                                           : httplib::Server::HandlerResponse::Unhandled;
      });
  // A client sending "Expect: 100-continue" waits to be asked for its body:
  // not when its head alone is refused (a Content-Length over the limit,
  // 413). The library asked first, then refused.
  server->set_expect_100_continue_handler(
      [answered](const httplib::Request& request, httplib::Response& response) {
        return answered(request, response) ? response.status : 100;
      });
  if (absl::Status can_listen = CheckCanListen(address); !can_listen.ok()) return can_listen;
  const std::string& host = address.host;
  const int port = address.port;
  const int bound =
      port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {  // taken between the check and the bind
    return absl::UnavailableError(absl::StrCat("cannot listen on ", HostPort(host, port),
                                               " (is the port in use? choose another with ",
                                               address.port_flag, ")"));
  }
  // Note [A backlog for bursts]: listen() again on a listening socket sets
  // its backlog anew.
  if (*listening >= 0) (void)::listen(*listening, SOMAXCONN);
  auto listener = std::unique_ptr<HttpListener>(new HttpListener());
  listener->server_ = std::move(server);
  listener->port_ = bound;
  httplib::Server* raw = listener->server_.get();
  listener->thread_ = std::thread([raw] { raw->listen_after_bind(); });
  return listener;
}

void HttpListener::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

HttpListener::~HttpListener() { Stop(); }

}  // namespace graphserve
