#include "server/http_listener.h"

#include <httplib.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    std::unique_ptr<httplib::Server> server, const TcpListenAddress& address) {
  // cpp-httplib's default options add SO_REUSEPORT: Note [Refusing a port in use].
  const bool reuse_port = address.reuse_port;
  server->set_socket_options([reuse_port](int socket) {
    const int yes = 1;
    (void)setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (reuse_port) (void)setsockopt(socket, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
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
