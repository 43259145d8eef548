#pragma once
// cpp-httplib's server, reading each connection through a stream of our own
// that checks its framing (server/request_framing.h) and keeps what it read
// ahead for the next request: Note [Framing under the library] in
// http_connection.cc.

#include <httplib.h>

#include <cstddef>

#include "server/request_framing.h"

namespace graphserve {

class FramedHttpServer : public httplib::Server {
 public:
  // The largest request line and header section together; a longer one is
  // answered 431 and its connection closed.
  void set_max_header_bytes(size_t bytes) { max_header_bytes_ = bytes; }

 private:
  // Serves one connection's requests, in order, until the client closes it,
  // it stays silent past the keep-alive timeout, or a request's framing is
  // refused; then closes it. Called by the library on a worker thread.
  bool process_and_close_socket(socket_t socket) override;

  size_t max_header_bytes_ = kDefaultMaxHeaderBytes;
};

}  // namespace graphserve
