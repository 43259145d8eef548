// FramedHttpServer through an HttpListener, spoken to over raw sockets: what
// cpp-httplib's own connection loop got wrong (Note [Framing under the
// library] in http_connection.cc).
#include "server/http_connection.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http_listener.h"
#include "server/listen_address.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr size_t kMaxHeaderBytes = 4096;
constexpr size_t kMaxBodyBytes = 1000;

// A listener serving GET /hello ("hi") and POST /echo (the body back), with
// a 4 KiB head limit and a check refusing a Content-Length over 1000 (413),
// as the endpoint's framing check does.
std::unique_ptr<HttpListener> StartEchoServer() {
  auto server = std::make_unique<FramedHttpServer>();
  server->Get("/hello", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("hi", "text/plain");
  });
  server->Post("/echo", [](const httplib::Request&, httplib::Response& response,
                           const httplib::ContentReader& reader) {
    std::string body;
    reader([&body](const char* data, size_t length) {
      body.append(data, length);
      return true;
    });
    response.set_content(body, "text/plain");
  });
  HttpListenerOptions options;
  options.max_header_bytes = kMaxHeaderBytes;
  options.streams_body = [](const httplib::Request& request) { return request.path == "/echo"; };
  options.check = [](const httplib::Request& request, httplib::Response& response) {
    uint64_t length = 0;
    if (absl::SimpleAtoi(request.get_header_value("Content-Length"), &length) &&
        length > kMaxBodyBytes) {
      AnswerJsonAndClose(response, 413, R"({"error":"too large"})");
      return false;
    }
    return true;
  };
  TcpListenAddress address;
  address.host = "127.0.0.1";
  auto listener = HttpListener::Start(std::move(server), address, std::move(options));
  EXPECT_TRUE(listener.ok()) << listener.status();
  return listener.ok() ? *std::move(listener) : nullptr;
}

class Connection {
 public:
  explicit Connection(int port) : socket_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{10, 0};
    ::setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    ::setsockopt(socket_, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    connected_ = ::connect(socket_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  }
  ~Connection() { ::close(socket_); }

  [[nodiscard]] bool connected() const { return connected_; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(socket_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  void ShutWrite() { ::shutdown(socket_, SHUT_WR); }

  // Everything until the server closes (or 10 s pass).
  std::string ReadAll() {
    std::string answer;
    char buffer[4096];
    while (true) {
      const ssize_t n = ::recv(socket_, buffer, sizeof(buffer), 0);
      if (n <= 0) return answer;
      answer.append(buffer, static_cast<size_t>(n));
    }
  }

  // At least `bytes` of the answer (or all there is within 10 s).
  std::string Read(size_t bytes) {
    std::string answer;
    char buffer[4096];
    while (answer.size() < bytes) {
      const ssize_t n = ::recv(socket_, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      answer.append(buffer, static_cast<size_t>(n));
    }
    return answer;
  }

 private:
  int socket_;
  bool connected_ = false;
};

int Count(std::string_view text, std::string_view word) {
  int count = 0;
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    ++count;
  }
  return count;
}

// Whether the server still answers a fresh connection.
bool StillServes(int port) {
  Connection connection(port);
  return connection.Send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") &&
         absl::StartsWith(connection.ReadAll(), "HTTP/1.1 200");
}

TEST(FramedHttpServer, PipelinedRequestsAreAllAnswered) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  Connection connection(listener->port());
  ASSERT_TRUE(connection.connected());
  // One write: the library read all three in one read, and lost two.
  ASSERT_TRUE(
      connection.Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde"
                      "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string answers = connection.ReadAll();
  EXPECT_EQ(Count(answers, "HTTP/1.1 200"), 3) << answers;
  EXPECT_THAT(answers, HasSubstr("abcde"));
}

// Triton's HTTP server keeps a connection for any number of requests;
// cpp-httplib's default closed it after the fifth answer.
TEST(FramedHttpServer, AConnectionServesAnyNumberOfRequests) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  Connection connection(listener->port());
  ASSERT_TRUE(connection.connected());
  constexpr int kRequests = 12;
  for (int i = 1; i < kRequests; ++i) {
    ASSERT_TRUE(connection.Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string answer;
    while (!absl::EndsWith(answer, "\r\n\r\nhi")) {
      const std::string more = connection.Read(1);
      ASSERT_FALSE(more.empty()) << "request " << i << " unanswered: " << answer;
      answer += more;
    }
    ASSERT_THAT(answer, StartsWith("HTTP/1.1 200")) << "request " << i;
    EXPECT_THAT(answer, Not(HasSubstr("Connection: close"))) << "request " << i;
  }
  ASSERT_TRUE(connection.Send("GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_THAT(connection.ReadAll(), StartsWith("HTTP/1.1 200"));
}

TEST(FramedHttpServer, AHeadOverTheLimitIsAnswered431) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  Connection connection(listener->port());
  std::string head = "GET /hello HTTP/1.1\r\nHost: x\r\n";
  while (head.size() <= kMaxHeaderBytes) head += "X-Filler: " + std::string(50, 'a') + "\r\n";
  ASSERT_TRUE(connection.Send(head + "\r\n"));
  const std::string answer = connection.ReadAll();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(answer, HasSubstr("--http-max-header-size"));
  EXPECT_TRUE(StillServes(listener->port()));
}

TEST(FramedHttpServer, AClientStillSendingItsHeadReadsThe431) {
  // The server stops reading at the limit; closing on the unread bytes would
  // reset the connection before the client read the answer.
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  Connection connection(listener->port());
  std::string head = "GET /hello HTTP/1.1\r\n";
  while (head.size() < (256 << 10)) head += "X-Filler: " + std::string(100, 'a') + "\r\n";
  ASSERT_TRUE(connection.Send(head));
  EXPECT_THAT(connection.Read(12), StartsWith("HTTP/1.1 431"));
}

TEST(FramedHttpServer, NulAndBareLineEndsInTheHeadAre400) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  constexpr char kNulInValue[] = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Key: a\0b\r\n\r\n";
  for (std::string_view request :
       {std::string_view(kNulInValue, sizeof(kNulInValue) - 1),
        std::string_view("GET /hello HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\n\r\n")}) {
    Connection connection(listener->port());
    ASSERT_TRUE(connection.Send(request));
    const std::string answer = connection.ReadAll();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400")) << request;
    EXPECT_EQ(Count(answer, "HTTP/1.1"), 1) << "the library's own answer follows ours: " << answer;
  }
  EXPECT_TRUE(StillServes(listener->port()));
}

TEST(FramedHttpServer, ARequestLineTheLibraryRefusesEndsTheConnection) {
  // Kept read-ahead would otherwise read the rest of the refused request
  // as more requests, each answered 400, and the next one too.
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  for (std::string_view refused : {"NOT A REQUEST LINE\r\n", "get /hello HTTP/1.1\r\n",
                                   "GET /hello HTTP/2.0\r\nHost: x\r\n\r\n"}) {
    Connection connection(listener->port());
    ASSERT_TRUE(connection.Send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(refused) +
                                "Host: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string answers = connection.ReadAll();
    EXPECT_THAT(answers, StartsWith("HTTP/1.1 200")) << refused;
    EXPECT_EQ(Count(answers, "HTTP/1.1 400"), 1) << refused << answers;
    EXPECT_EQ(Count(answers, "HTTP/1.1 200"), 1) << refused << answers;
  }
}

std::string Chunked(std::string_view body) {
  return "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
}

TEST(FramedHttpServer, ChunkedBodiesAreReadStrictly) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  {
    Connection connection(listener->port());
    ASSERT_TRUE(connection.Send(Chunked("3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n")));
    connection.ShutWrite();
    const std::string answer = connection.ReadAll();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
    EXPECT_THAT(answer, HasSubstr("abcde"));
  }
  for (std::string_view body :
       {"0x2\r\nab\r\n0\r\n\r\n", "+2\r\nab\r\n0\r\n\r\n", " 2\r\nab\r\n0\r\n\r\n",
        "-2\r\nab\r\n0\r\n\r\n", "2\r\nabGET /hello HTTP/1.1\r\n\r\n"}) {
    Connection connection(listener->port());
    ASSERT_TRUE(connection.Send(Chunked(body)));
    const std::string answer = connection.ReadAll();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 400")) << body;
    EXPECT_EQ(Count(answer, "HTTP/1.1"), 1) << answer;
  }
}

TEST(FramedHttpServer, AClientThatShutItsWriteSideIsAnswered) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  Connection connection(listener->port());
  ASSERT_TRUE(connection.Send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nxyz"));
  connection.ShutWrite();
  const std::string answer = connection.ReadAll();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 200"));
  EXPECT_THAT(answer, HasSubstr("xyz"));
}

TEST(FramedHttpServer, ExpectContinueIsRefusedBeforeTheBodyWhenTooLarge) {
  auto listener = StartEchoServer();
  ASSERT_NE(listener, nullptr);
  {
    Connection connection(listener->port());
    ASSERT_TRUE(connection.Send(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"));
    const std::string answer = connection.ReadAll();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 413"));
    EXPECT_THAT(answer, Not(HasSubstr("100 Continue")));
  }
  Connection connection(listener->port());
  ASSERT_TRUE(connection.Send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n"
      "Connection: close\r\n\r\n"));
  EXPECT_THAT(connection.Read(12), StartsWith("HTTP/1.1 100"));
  ASSERT_TRUE(connection.Send("ok"));
  const std::string answer = connection.ReadAll();
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 200"));
  EXPECT_THAT(answer, HasSubstr("ok"));
}

}  // namespace
}  // namespace graphserve
