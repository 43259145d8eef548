#pragma once
// One cpp-httplib server listening on its own thread: what the HTTP/REST
// endpoint (port 8000) and the metrics endpoint (port 8002) share.

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/listen_address.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace graphserve {

class HttpListener {
 public:
  // Binds `address` (port 0: a free port) and serves `server`'s routes. The
  // socket shares its port only when address.reuse_port asks (Note [Refusing
  // a port in use]). CheckCanListen's error, naming the address, why and the
  // flags, when it cannot bind.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      std::unique_ptr<httplib::Server> server, const TcpListenAddress& address);

  [[nodiscard]] int port() const { return port_; }
  // Stops listening and waits for the requests being served. Idempotent.
  void Stop();
  ~HttpListener();

 private:
  HttpListener() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;  // runs the server's accept loop
  int port_ = 0;
};

}  // namespace graphserve
