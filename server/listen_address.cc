#include "server/listen_address.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

// Closes a socket when it goes out of scope.
class SocketCloser {
 public:
  explicit SocketCloser(int fd) : fd_(fd) {}
  SocketCloser(const SocketCloser&) = delete;
  SocketCloser& operator=(const SocketCloser&) = delete;
  ~SocketCloser() {
    if (fd_ >= 0) close(fd_);
  }

 private:
  const int fd_;
};

// 0, or the errno of binding one socket to `address` as the listener would.
int TryBind(const addrinfo& address, bool reuse_port) {
  const int fd = socket(address.ai_family, address.ai_socktype, address.ai_protocol);
  if (fd < 0) return errno;
  SocketCloser closer(fd);
  const int yes = 1;
  // Both listeners set SO_REUSEADDR, so a port in TIME_WAIT is free to them.
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (reuse_port) (void)setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
  if (bind(fd, address.ai_addr, address.ai_addrlen) != 0) return errno;
  return 0;
}

std::string InUseAdvice(const TcpListenAddress& address) {
  if (address.reuse_port) {
    // Shared only with processes that also asked for SO_REUSEPORT.
    return absl::StrCat("another server holds it without sharing; ", address.port_flag,
                        " picks another port");
  }
  if (address.reuse_flag.empty()) {
    return absl::StrCat("another server? ", address.port_flag, " picks another port");
  }
  return absl::StrCat("another server? ", address.reuse_flag, " shares it, ", address.port_flag,
                      " picks another port");
}

}  // namespace

std::string HostPort(const std::string& host, int port) {
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return bare_ipv6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

absl::Status CheckCanListen(const TcpListenAddress& address) {
  const std::string where = HostPort(address.host, address.port);
  std::string host = address.host;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* resolved = nullptr;
  const std::string port = absl::StrCat(address.port);
  if (const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &resolved); error != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot listen on ", where, ": ",
                                                   address.host_flag, " ", address.host,
                                                   " does not resolve (",
                                                   gai_strerror(error), ")"));
  }
  int failure = 0;
  for (const addrinfo* a = resolved; a != nullptr && failure == 0; a = a->ai_next) {
    failure = TryBind(*a, address.reuse_port);
  }
  freeaddrinfo(resolved);
  switch (failure) {
    case 0:
      return absl::OkStatus();
    case EADDRINUSE:
      return absl::UnavailableError(absl::StrCat("cannot listen on ", where, ": address in use (",
                                                 InUseAdvice(address), ")"));
    case EADDRNOTAVAIL:
      return absl::InvalidArgumentError(absl::StrCat("cannot listen on ", where, ": ",
                                                     address.host_flag, " ", address.host,
                                                     " is not an address of this machine"));
    case EACCES:
      return absl::PermissionDeniedError(
          absl::StrCat("cannot listen on ", where,
                       ": permission denied (ports below 1024 need CAP_NET_BIND_SERVICE; ",
                       address.port_flag, " picks another port)"));
    default:
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", where, ": ", std::strerror(failure)));
  }
}

absl::Status CheckCanListenUnix(const std::string& path, const std::string& flag) {
  const std::string where = absl::StrCat("unix:", path);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", where, ": a socket path needs 1 to ",
                                                   sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket(AF_UNIX): ", std::strerror(errno)));
  SocketCloser closer(fd);
  const auto* raw = reinterpret_cast<const sockaddr*>(&address);
  struct stat existing {};
  if (stat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat("cannot listen on ", where, ": ", path,
                                                     " exists and is not a socket (", flag, ")"));
    }
    if (connect(fd, raw, sizeof(address)) == 0) {
      return absl::UnavailableError(absl::StrCat("cannot listen on ", where,
                                                 ": address in use (another server answers there; ",
                                                 flag, " picks another path)"));
    }
    return absl::OkStatus();  // stale: gRPC unlinks it before binding
  }
  // Bind once, as gRPC will, so a missing directory or a read-only one is
  // reported here; the probe's socket file is removed again.
  if (bind(fd, raw, sizeof(address)) != 0) {
    const int error = errno;
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", where, ": ", std::strerror(error), " (", flag, ")"));
  }
  unlink(path.c_str());
  return absl::OkStatus();
}

}  // namespace graphserve
