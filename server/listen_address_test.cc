#include "server/listen_address.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// A listening TCP socket on 127.0.0.1, another server's stand-in.
class PortHolder {
 public:
  explicit PortHolder(bool reuse_port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int yes = 1;
    if (reuse_port) setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(listen(fd_, 1), 0);
    socklen_t length = sizeof(address);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~PortHolder() { close(fd_); }
  [[nodiscard]] int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TcpListenAddress GrpcAddress(const std::string& host, int port, bool reuse_port = false) {
  TcpListenAddress address;
  address.host = host;
  address.port = port;
  address.reuse_port = reuse_port;
  address.port_flag = "--grpc-port";
  address.reuse_flag = "--reuse-grpc-port";
  return address;
}

// A socket path relative to the test's scratch directory, made the working
// directory: TEST_TMPDIR under Bazel is longer than the 107 bytes a socket
// path may have.
std::string TempPath(const std::string& name) {
  static const bool in_scratch = [] {
    const char* root = std::getenv("TEST_TMPDIR");
    return chdir(root != nullptr ? root : "/tmp") == 0;
  }();
  EXPECT_TRUE(in_scratch);
  return name;
}

TEST(ListenAddressTest, HostPortBracketsIpv6) {
  EXPECT_EQ(HostPort("0.0.0.0", 8001), "0.0.0.0:8001");
  EXPECT_EQ(HostPort("::", 8001), "[::]:8001");
  EXPECT_EQ(HostPort("[::1]", 8001), "[::1]:8001");
  EXPECT_EQ(HostPort("localhost", 0), "localhost:0");
}

TEST(ListenAddressTest, AFreeAddressCanBeBound) {
  EXPECT_TRUE(CheckCanListen(GrpcAddress("127.0.0.1", 0)).ok());
  EXPECT_TRUE(CheckCanListen(GrpcAddress("0.0.0.0", 0)).ok());
  EXPECT_TRUE(CheckCanListen(GrpcAddress("localhost", 0)).ok());
}

TEST(ListenAddressTest, APortInUseIsRefusedNamingTheAddressAndTheFlags) {
  const PortHolder holder(/*reuse_port=*/false);
  const absl::Status status = CheckCanListen(GrpcAddress("127.0.0.1", holder.port()));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            absl::StrCat("cannot listen on 127.0.0.1:", holder.port(),
                         ": address in use (another server? --reuse-grpc-port shares it, "
                         "--grpc-port picks another port)"));
  // The wildcard address overlaps the loopback one.
  EXPECT_EQ(CheckCanListen(GrpcAddress("0.0.0.0", holder.port())).code(),
            absl::StatusCode::kUnavailable);
  // Asking to share does not help against a holder that does not share.
  EXPECT_THAT(CheckCanListen(GrpcAddress("127.0.0.1", holder.port(), true)).message(),
              HasSubstr("another server holds it without sharing"));
}

TEST(ListenAddressTest, APortSharedOnBothSidesIsAccepted) {
  const PortHolder holder(/*reuse_port=*/true);
  EXPECT_TRUE(CheckCanListen(GrpcAddress("127.0.0.1", holder.port(), true)).ok());
  // Without --reuse-grpc-port it is refused, even though the holder shares.
  EXPECT_EQ(CheckCanListen(GrpcAddress("127.0.0.1", holder.port())).code(),
            absl::StatusCode::kUnavailable);
}

TEST(ListenAddressTest, AHostOfAnotherMachineIsRefused) {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
  const absl::Status status = CheckCanListen(GrpcAddress("192.0.2.1", 8001));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "cannot listen on 192.0.2.1:8001: --host 192.0.2.1 is not an address of this machine");
  // The error names the flag that gave the address.
  TcpListenAddress http = GrpcAddress("192.0.2.1", 8000);
  http.host_flag = "--http-address";
  EXPECT_EQ(CheckCanListen(http).message(),
            "cannot listen on 192.0.2.1:8000: --http-address 192.0.2.1 is not an address of this "
            "machine");
  http.host = "no-such-host.invalid";
  EXPECT_THAT(std::string(CheckCanListen(http).message()),
              ::testing::HasSubstr("--http-address no-such-host.invalid does not resolve"));
}

TEST(ListenAddressTest, UnixSocketWhereAServerAnswersIsInUse) {
  const std::string path = TempPath("live.sock");
  std::filesystem::remove(path);
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(address.sun_path));
  std::memcpy(address.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  const absl::Status status = CheckCanListenUnix(path, "--grpc-address");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr("cannot listen on unix:" + path + ": address in use"));
  // Once nobody answers, the socket file is stale and may be replaced.
  close(fd);
  EXPECT_TRUE(CheckCanListenUnix(path, "--grpc-address").ok());
  std::filesystem::remove(path);
}

TEST(ListenAddressTest, UnixSocketPathsThatCannotWorkSayWhy) {
  const std::string fresh = TempPath("fresh.sock");
  std::filesystem::remove(fresh);
  EXPECT_TRUE(CheckCanListenUnix(fresh, "--grpc-address").ok());
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "the probe leaves no socket file behind";

  const std::string file = TempPath("plain_file");
  std::ofstream(file) << "not a socket";
  EXPECT_THAT(CheckCanListenUnix(file, "--grpc-address").message(),
              HasSubstr("exists and is not a socket"));
  EXPECT_THAT(CheckCanListenUnix(TempPath("no_such_dir/x.sock"), "--grpc-address").message(),
              HasSubstr("No such file or directory"));
  EXPECT_THAT(CheckCanListenUnix(std::string(200, 'p'), "--grpc-address").message(),
              HasSubstr("a socket path needs 1 to 107 bytes"));
}

}  // namespace
}  // namespace graphserve
