#include "server/http_listener.h"

#include <httplib.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    std::unique_ptr<httplib::Server> server, const std::string& host, int port,
    const std::string& port_flag) {
  const int bound =
      port == 0 ? server->bind_to_any_port(host) : (server->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", host, ":", port,
                                               " (is the port in use? choose another with ",
                                               port_flag, ")"));
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
