#pragma once
// Whether a listener can bind its address, and if not, why, in words: checked
// before gRPC or cpp-httplib try, because neither says which address failed
// or why (gRPC logs its raw error and hands back no server at all).
//
// Note [Refusing a port in use]
// gRPC and cpp-httplib both set SO_REUSEPORT by default, so a second
// graphserve started on a busy port binds it too and the kernel splits the
// connections between the two servers. GraphServe refuses a port in use, as
// Triton does: the listeners bind without SO_REUSEPORT unless
// --reuse-grpc-port / --reuse-http-port ask for it (Triton's flags), and
// CheckCanListen binds the same way first, so that the refusal names the
// address and the flag. The metrics port has no such flag: it always refuses.

#include <string>

#include "absl/status/status.h"

namespace graphserve {

// A TCP address a listener binds, and the flags the error messages name.
struct TcpListenAddress {
  // A name or an address of this machine; "0.0.0.0" and "::" are every one.
  std::string host = "0.0.0.0";
  // The flag that gave `host`, e.g. "--http-address".
  std::string host_flag = "--host";
  // 0: any free port (only the host is checked then).
  int port = 0;
  // SO_REUSEPORT, as the listener will set it.
  bool reuse_port = false;
  // The flag that picks another port, e.g. "--grpc-port".
  std::string port_flag;
  // The flag that shares the port, e.g. "--reuse-grpc-port"; "" if none.
  std::string reuse_flag;
};

// "0.0.0.0:8001", "[::1]:8001": what gRPC's AddListeningPort takes, and what
// messages print.
std::string HostPort(const std::string& host, int port);

// Binds every address `address.host` resolves to, as the listener would
// (SO_REUSEADDR, SO_REUSEPORT only when asked), then lets go. Unavailable,
// "cannot listen on HOST:PORT: address in use (another server? ...)", when a
// process holds the port; InvalidArgument when the host does not resolve or
// is not an address of this machine; the system's reason otherwise.
absl::Status CheckCanListen(const TcpListenAddress& address);

// The same for a Unix domain socket path (gRPC's "unix:PATH"). A path where a
// server answers is in use (gRPC would unlink it and take it over silently);
// a socket file nobody answers on is stale and gRPC replaces it. Errors name
// `flag` (e.g. "--grpc-address") and say why: in use, not a socket, no such
// directory, path too long.
absl::Status CheckCanListenUnix(const std::string& path, const std::string& flag);

}  // namespace graphserve
