#pragma once
// One cpp-httplib server listening on its own thread: what the HTTP/REST
// endpoint (port 8000) and the metrics endpoint (port 8002) share, with the
// defences both need against hostile clients (Note [Bodies nobody reads],
// Note [Slow clients] in http_listener.cc).

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/listen_address.h"
#include "server/request_framing.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace graphserve {

class FramedHttpServer;

struct HttpListenerOptions {
  // Connections served at once: a connection holds a worker thread for its
  // whole life, so this many slow clients stall the port. Threads start as
  // connections need them (Note [Slow clients]); beyond the limit new
  // connections wait for one to close.
  int max_connections = 1024;
  // Seconds a connection may stay silent while a request is being read, or
  // between requests, before it is closed.
  int read_timeout_secs = 5;
  // The largest request line and header section together; longer is 431
  // (Note [Framing under the library] in server/http_connection.cc).
  size_t max_header_bytes = kDefaultMaxHeaderBytes;
  // Whether a route reads this request's body itself, as a stream within its
  // own bound (the endpoint's POST routes). Every other request that has a
  // body is answered before its body is read (Note [Bodies nobody reads]).
  // Unset: no route reads a body.
  std::function<bool(const httplib::Request&)> streams_body;
  // The routes' own checks on a request's line and headers, before its body
  // is read; false when it answered the request itself. Unset: none.
  std::function<bool(const httplib::Request&, httplib::Response&)> check;
};

// Answers `code` with `json_body`, "Connection: close", and closes the
// connection once the answer is written, so that whatever the client sent
// after the headers (a body nobody read, a request hidden in it) is never
// read as a request: Note [HTTP framing] in server/http_endpoint.cc.
void AnswerJsonAndClose(httplib::Response& response, int code, std::string json_body);
// Whether AnswerJsonAndClose answered `response`.
bool AnsweredAndClosing(const httplib::Response& response);

class HttpListener {
 public:
  // Binds `address` (port 0: a free port) and serves `server`'s routes with
  // `options`' limits; the listener owns the server's task queue, its
  // pre-routing and Expect: 100-continue handlers. The socket shares its port only when
  // address.reuse_port asks (Note [Refusing a port in use]).
  // CheckCanListen's error, naming the address, why and the flags, when it
  // cannot bind.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      std::unique_ptr<FramedHttpServer> server, const TcpListenAddress& address,
      HttpListenerOptions options = {});

  [[nodiscard]] int port() const { return port_; }
  // Stops listening and waits for the requests being served. Idempotent.
  void Stop();
  ~HttpListener();

 private:
  HttpListener() = default;
  std::unique_ptr<FramedHttpServer> server_;
  std::thread thread_;  // runs the server's accept loop
  int port_ = 0;
};

}  // namespace graphserve
