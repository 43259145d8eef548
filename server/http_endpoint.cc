#include "server/http_endpoint.h"

#include <httplib.h>

#include <algorithm>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "server/client_text.h"
#include "server/http_compression.h"
#include "server/http_connection.h"
#include "server/http_json.h"

namespace graphserve {

namespace {

int HttpCode(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

// Note [HTTP response compression]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Triton compresses inference answers only, in the encoding the request's
// Accept-Encoding weighs highest of gzip and deflate (ResponseEncoding), JSON
// and binary answers alike; everything else goes as is. Clients count on
// that: tritonclient.http.aio sends "Accept-Encoding: gzip, deflate" (aiohttp's
// default) and reads health, metadata and config answers without
// decompressing them. cpp-httplib (with its zlib and brotli support, as
// Debian builds it) would instead compress every JSON or text body set with
// set_content whenever the client accepts gzip or br. It leaves a body alone
// that a content provider of known length writes, so every answer goes out
// that way (SendBody), and the inference answer is compressed here, by
// Compress, when the client asked.

// Answers `code` with `body` exactly as given: the library neither
// compresses nor re-encodes it (Note [HTTP response compression]).
void SendBody(httplib::Response& response, int code, std::string body,
              const std::string& content_type) {
  response.status = code;
  if (body.empty()) {
    // Nothing to compress; a provider of length 0 would be read as one of
    // unknown length.
    response.set_content(std::string(), content_type);
    return;
  }
  auto shared = std::make_shared<const std::string>(std::move(body));
  response.set_content_provider(shared->size(), content_type,
                                [shared](size_t offset, size_t length, httplib::DataSink& sink) {
                                  sink.write(shared->data() + offset, length);
                                  return true;
                                });
}

void SendJson(httplib::Response& response, int code, std::string body) {
  SendBody(response, code, std::move(body), "application/json");
}

void SendStatus(httplib::Response& response, const absl::Status& status) {
  SendJson(response, HttpCode(status), ErrorJson(status.message()));
}

// Triton's health and readiness answers: 200 with an empty body, or 400,
// with an empty body for the server and {"error": "Model version not
// ready"} for a model.
void SendServerReady(httplib::Response& response, bool ready) {
  response.status = ready ? 200 : 400;
}

void SendModelReady(httplib::Response& response, bool ready) {
  if (ready) {
    response.status = 200;
  } else {
    SendJson(response, 400, ErrorJson("Model version not ready"));
  }
}

// Note [HTTP framing]
// ~~~~~~~~~~~~~~~~~~~~
// cpp-httplib (0.11.4, Debian's) finds where a request ends from its
// Content-Length, read with strtoull: "-1" becomes 2^64-1, the body is read
// until the read times out and the handler still ran on the partial body and
// answered 200. And a handler that answers without reading the body leaves
// it on the connection, where the library parses it as the next request: a
// request hidden in a POST body was executed. So the endpoint checks the
// framing headers before anything is read, reads every POST body before it
// routes, and answers any request whose framing it cannot trust with
// "Connection: close" and then closes the connection (AnswerAndClose), so
// that nothing after it on that connection is read as a request. Below the
// library's parser, each connection is read through a stream that checks
// RFC 9112's framing byte by byte (bounded head, CRLF line ends, no NUL,
// strict chunk sizes) and keeps pipelined requests: Note [Framing under the
// library] in server/http_connection.cc.

// The first value of header `name` (matched without case), or nullopt
// without one: a restricted API tells a header sent empty from none.
std::optional<std::string> HeaderValue(const httplib::Request& request, const std::string& name) {
  const auto found = request.headers.find(name);
  if (found == request.headers.end()) return std::nullopt;
  return found->second;
}

// Answers `code` with {"error": message} and closes the connection once the
// answer is written (server/http_listener.h). Note [HTTP framing].
void AnswerAndClose(httplib::Response& response, int code, const std::string& message) {
  AnswerJsonAndClose(response, code, ErrorJson(message));
}

// Checks a request's path and framing headers before its body is read: no
// encoded '/' in the path (400); one Content-Length, all digits, at most
// `max_body_bytes` (else 413); a Transfer-Encoding only "chunked" and never
// beside a Content-Length (RFC 9112 6.3: a request with both is how requests
// are smuggled). Answers and closes (AnswerAndClose) and returns false when
// they are not right.
bool CheckFraming(const httplib::Request& request, httplib::Response& response,
                  size_t max_body_bytes) {
  // The library decodes the path before it routes, so "mlp%2Fready" reached
  // the route of mlp/ready: a proxy allowing or blocking by the raw path was
  // bypassed (bench/attack_probe.py, encoded_slash_routing). No name the
  // routes take holds a '/'.
  const std::string raw_path =
      absl::AsciiStrToLower(request.target.substr(0, request.target.find('?')));
  if (absl::StrContains(raw_path, "%2f")) {
    AnswerAndClose(response, 400, "an encoded '/' (%2F) in the path is refused");
    return false;
  }
  const size_t lengths = request.get_header_value_count("Content-Length");
  const size_t encodings = request.get_header_value_count("Transfer-Encoding");
  if (encodings > 0) {
    const std::string encoding = request.get_header_value("Transfer-Encoding");
    if (encodings > 1 || !absl::EqualsIgnoreCase(encoding, "chunked")) {
      AnswerAndClose(response, 501,
                     absl::StrCat("Transfer-Encoding ", QuoteClientText(encoding),
                                  " is not served; send the body as is, or chunked"));
      return false;
    }
    if (lengths > 0) {
      AnswerAndClose(response, 400,
                     "a request may not carry both Transfer-Encoding and Content-Length");
      return false;
    }
    return true;
  }
  if (lengths == 0) return true;
  const std::string length = request.get_header_value("Content-Length");
  for (size_t i = 1; i < lengths; ++i) {
    if (request.get_header_value("Content-Length", i) != length) {
      AnswerAndClose(response, 400, "the request carries differing Content-Length headers");
      return false;
    }
  }
  uint64_t bytes = 0;
  if (length.empty() || length.size() > 19 ||
      length.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(length, &bytes)) {
    AnswerAndClose(response, 400,
                   absl::StrCat("Content-Length ", QuoteClientText(length),
                                " is not a byte count (decimal digits only)"));
    return false;
  }
  if (bytes > max_body_bytes) {
    AnswerAndClose(response, 413,
                   absl::StrCat("the request body's ", bytes, " bytes exceed the limit of ",
                                max_body_bytes, " bytes"));
    return false;
  }
  return true;
}

void SendNotFound(const httplib::Request& request, httplib::Response& response) {
  // The path is the client's: Note [Quoting client text].
  SendJson(response, 404,
           ErrorJson(absl::StrCat("no route ", QuoteClientText(request.path),
                                  " in the KServe v2 HTTP/REST protocol")));
}

// "/v2/models/m/infer" -> {"v2", "models", "m", "infer"}.
std::vector<std::string> Parts(const std::string& path) {
  return absl::StrSplit(path, '/', absl::SkipEmpty());
}

// /v2/models/M[/versions/V][/action]: the model, version and action.
struct ModelRoute {
  std::string model;
  std::string version;
  std::string action;  // "", "ready", "config", "stats" or "infer"
};

std::optional<ModelRoute> ParseModelRoute(const std::vector<std::string>& parts) {
  if (parts.size() < 3 || parts[0] != "v2" || parts[1] != "models") return std::nullopt;
  ModelRoute route;
  route.model = parts[2];
  size_t next = 3;
  if (parts.size() >= 5 && parts[3] == "versions") {
    route.version = parts[4];
    next = 5;
  }
  if (parts.size() == next + 1) route.action = parts[next];
  if (parts.size() > next + 1) return std::nullopt;
  return route;
}

// /v2/{system,cuda}sharedmemory[/region/R]/action: the kind, region and
// action ("status", "register" or "unregister"; register needs a region).
struct SharedMemoryRoute {
  bool cuda = false;
  std::string region;  // empty: every region
  std::string action;
};

std::optional<SharedMemoryRoute> ParseSharedMemoryRoute(const std::vector<std::string>& parts) {
  if (parts.size() < 3 || parts[0] != "v2" ||
      (parts[1] != "systemsharedmemory" && parts[1] != "cudasharedmemory")) {
    return std::nullopt;
  }
  SharedMemoryRoute route;
  route.cuda = parts[1] == "cudasharedmemory";
  if (parts.size() == 3) {
    route.action = parts[2];
  } else if (parts.size() == 5 && parts[2] == "region") {
    route.region = parts[3];
    route.action = parts[4];
  } else {
    return std::nullopt;
  }
  return route;
}

// /v2/repository/index and /v2/repository/models/M/{load,unload}.
struct RepositoryRoute {
  std::string model;   // empty for the index
  std::string action;  // "index", "load" or "unload"
};

std::optional<RepositoryRoute> ParseRepositoryRoute(const std::vector<std::string>& parts) {
  if (parts.size() < 3 || parts[0] != "v2" || parts[1] != "repository") return std::nullopt;
  if (parts.size() == 3 && parts[2] == "index") return RepositoryRoute{"", "index"};
  if (parts.size() == 5 && parts[2] == "models" && (parts[4] == "load" || parts[4] == "unload")) {
    return RepositoryRoute{parts[3], parts[4]};
  }
  return std::nullopt;
}

}  // namespace

// The routes of the file comment in http_endpoint.h, over the protocol.
class HttpEndpoint::Handler {
 public:
  Handler(const InferenceProtocol* protocol, const HttpEndpointOptions& options)
      : protocol_(protocol),
        max_body_bytes_(options.max_body_bytes),
        max_json_depth_(options.max_json_depth),
        restricted_(options.restricted) {}

  void Get(const httplib::Request& request, httplib::Response& response) const {
    const std::vector<std::string> parts = Parts(request.path);
    if (parts.size() == 1 && parts[0] == "v2") {
      if (!Allowed(ApiCategory::kMetadata, request, response)) return;
      inference::ServerMetadataResponse metadata;
      protocol_->ServerMetadata(&metadata);
      return SendJson(response, 200, ServerMetadataToJson(metadata));
    }
    if (parts.size() == 3 && parts[0] == "v2" && parts[1] == "health") {
      if (parts[2] != "live" && parts[2] != "ready") return SendNotFound(request, response);
      if (!Allowed(ApiCategory::kHealth, request, response)) return;
      if (parts[2] == "live") {
        inference::ServerLiveResponse live;
        protocol_->ServerLive(&live);
        return SendServerReady(response, live.live());
      }
      inference::ServerReadyResponse ready;
      protocol_->ServerReady(&ready);
      return SendServerReady(response, ready.ready());
    }
    if (parts.size() == 3 && parts[0] == "v2" && parts[1] == "models" && parts[2] == "stats") {
      if (!Allowed(ApiCategory::kStatistics, request, response)) return;
      return Statistics({}, response);
    }
    if (SharedMemoryGet(parts, request, response)) return;
    const std::optional<ModelRoute> route = ParseModelRoute(parts);
    if (!route) return SendNotFound(request, response);
    const std::optional<ApiCategory> category = ModelRouteCategory(route->action);
    if (!category.has_value()) return SendNotFound(request, response);
    if (!Allowed(*category, request, response)) return;
    if (route->action.empty()) {
      inference::ModelMetadataRequest metadata_request;
      metadata_request.set_name(route->model);
      metadata_request.set_version(route->version);
      inference::ModelMetadataResponse metadata;
      const absl::Status status = protocol_->ModelMetadata(metadata_request, &metadata);
      if (!status.ok()) return SendStatus(response, status);
      return SendJson(response, 200, ModelMetadataToJson(metadata));
    }
    if (route->action == "ready") {
      inference::ModelReadyRequest ready_request;
      ready_request.set_name(route->model);
      ready_request.set_version(route->version);
      inference::ModelReadyResponse ready;
      protocol_->ModelReady(ready_request, &ready);
      return SendModelReady(response, ready.ready());
    }
    if (route->action == "config") {
      inference::ModelConfigRequest config_request;
      config_request.set_name(route->model);
      config_request.set_version(route->version);
      inference::ModelConfigResponse config;
      const absl::Status status = protocol_->ModelConfig(config_request, &config);
      if (!status.ok()) return SendStatus(response, status);
      return SendJson(response, 200, ModelConfigToJson(config.config()));
    }
    Statistics(*route, response);  // "stats": ModelRouteCategory knows no other action
  }

  // GET .../status of the shared-memory routes; false for any other path.
  bool SharedMemoryGet(const std::vector<std::string>& parts, const httplib::Request& http_request,
                       httplib::Response& response) const {
    const std::optional<SharedMemoryRoute> route = ParseSharedMemoryRoute(parts);
    if (!route || route->action != "status") return false;
    if (!Allowed(ApiCategory::kSharedMemory, http_request, response)) return true;
    if (route->cuda) {
      inference::CudaSharedMemoryStatusRequest request;
      request.set_name(route->region);
      inference::CudaSharedMemoryStatusResponse status;
      const absl::Status found =
          protocol_->CudaSharedMemoryStatus(request, &status, SharedMemoryOwner(http_request));
      if (found.ok()) {
        SendJson(response, 200, CudaSharedMemoryStatusToJson(status));
      } else {
        SendStatus(response, found);
      }
      return true;
    }
    inference::SystemSharedMemoryStatusRequest request;
    request.set_name(route->region);
    inference::SystemSharedMemoryStatusResponse status;
    const absl::Status found =
        protocol_->SystemSharedMemoryStatus(request, &status, SharedMemoryOwner(http_request));
    if (found.ok()) {
      SendJson(response, 200, SystemSharedMemoryStatusToJson(status));
    } else {
      SendStatus(response, found);
    }
    return true;
  }

  // POST .../register and .../unregister of the shared-memory routes, with
  // the request body read.
  void SharedMemoryPost(const SharedMemoryRoute& route, const httplib::Request& http_request,
                        const std::string& body, httplib::Response& response) const {
    const std::string owner = SharedMemoryOwner(http_request);
    absl::Status status;
    if (route.action == "unregister" && !route.cuda) {
      inference::SystemSharedMemoryUnregisterRequest request;
      request.set_name(route.region);
      protocol_->SystemSharedMemoryUnregister(request, owner);
    } else if (route.action == "unregister") {
      inference::CudaSharedMemoryUnregisterRequest request;
      request.set_name(route.region);
      protocol_->CudaSharedMemoryUnregister(request, owner);
    } else if (route.action == "register" && !route.cuda) {
      absl::StatusOr<inference::SystemSharedMemoryRegisterRequest> request =
          ParseSystemSharedMemoryRegister(body, route.region);
      status =
          request.ok() ? protocol_->SystemSharedMemoryRegister(*request, owner) : request.status();
    } else if (route.action == "register") {
      absl::StatusOr<inference::CudaSharedMemoryRegisterRequest> request =
          ParseCudaSharedMemoryRegister(body, route.region);
      status =
          request.ok() ? protocol_->CudaSharedMemoryRegister(*request, owner) : request.status();
    }
    if (!status.ok()) return SendStatus(response, status);
    response.status = 200;
  }

  // POST of the model repository routes, with the request body read. A load
  // or unload waits on this worker for the registry's control thread, as an
  // inference waits for the responder: Triton answers when the model serves
  // or is gone.
  void RepositoryPost(const RepositoryRoute& route, const std::string& body,
                      httplib::Response& response) const {
    if (route.action == "index") {
      absl::StatusOr<inference::RepositoryIndexRequest> request = ParseRepositoryIndex(body);
      if (!request.ok()) return SendStatus(response, request.status());
      inference::RepositoryIndexResponse index;
      const absl::Status status = protocol_->RepositoryIndex(*request, &index);
      if (!status.ok()) return SendStatus(response, status);
      return SendJson(response, 200, RepositoryIndexToJson(index));
    }
    std::promise<absl::Status> finished;
    auto done = [&finished](const absl::Status& status) { finished.set_value(status); };
    if (route.action == "load") {
      absl::StatusOr<inference::RepositoryModelLoadRequest> request =
          ParseRepositoryModelLoad(body, route.model);
      if (!request.ok()) return SendStatus(response, request.status());
      protocol_->RepositoryModelLoad(*request, done);
    } else {
      absl::StatusOr<inference::RepositoryModelUnloadRequest> request =
          ParseRepositoryModelUnload(body, route.model);
      if (!request.ok()) return SendStatus(response, request.status());
      protocol_->RepositoryModelUnload(*request, done);
    }
    const absl::Status status = finished.get_future().get();
    if (!status.ok()) return SendStatus(response, status);
    response.status = 200;
  }

  // The body is read here, not by the library: it refuses form-encoded
  // bodies over 8 KiB, and `curl -d` labels JSON that way.
  void Post(const httplib::Request& request, httplib::Response& response,
            const httplib::ContentReader& reader) const {
    // The body is read before anything else, so that no answer leaves it on
    // the connection (Note [HTTP framing]).
    std::string body;
    bool too_large = false;
    // RFC 9112 6.3: a request with neither header has no body (`curl -X
    // POST .../load` sends neither), where the library would read one until
    // the connection timed out.
    const bool has_body =
        request.has_header("Content-Length") || request.has_header("Transfer-Encoding");
    const bool complete = !has_body || reader([&](const char* data, size_t length) {
      too_large = body.size() + length > max_body_bytes_;
      if (!too_large) body.append(data, length);
      return !too_large;
    });
    if (too_large) {
      return AnswerAndClose(response, 413,
                            absl::StrCat("the request body exceeds the limit of ",
                                         max_body_bytes_, " bytes"));
    }
    if (!complete) {
      return AnswerAndClose(response, 400,
                            "the request body ended before its Content-Length or last chunk");
    }
    const std::vector<std::string> parts = Parts(request.path);
    const std::optional<ModelRoute> route = ParseModelRoute(parts);
    std::optional<SharedMemoryRoute> shared_memory = ParseSharedMemoryRoute(parts);
    if (shared_memory && shared_memory->action != "unregister" &&
        (shared_memory->action != "register" || shared_memory->region.empty())) {
      shared_memory.reset();  // status is GET only; a register names its region
    }
    const std::optional<RepositoryRoute> repository = ParseRepositoryRoute(parts);
    if (!shared_memory && !repository && (!route || route->action != "infer")) {
      return SendNotFound(request, response);
    }
    if (!Allowed(shared_memory ? ApiCategory::kSharedMemory
                 : repository  ? ApiCategory::kModelRepository
                               : ApiCategory::kInference,
                 request, response)) {
      return;
    }
    if (shared_memory) return SharedMemoryPost(*shared_memory, request, body, response);
    if (repository) return RepositoryPost(*repository, body, response);
    size_t header_length = body.size();
    const size_t header_lengths = request.get_header_value_count("Inference-Header-Content-Length");
    if (header_lengths > 1 ||
        (header_lengths == 1 &&
         !absl::SimpleAtoi(request.get_header_value("Inference-Header-Content-Length"),
                           &header_length))) {
      return SendStatus(response, absl::InvalidArgumentError(
                                      "Inference-Header-Content-Length must be one byte count"));
    }
    absl::StatusOr<HttpInferRequest> parsed =
        ParseInferRequest(body, header_length, route->model, route->version, max_json_depth_);
    if (!parsed.ok()) return SendStatus(response, parsed.status());
    inference::ModelInferResponse inferred;
    std::promise<absl::Status> finished;
    protocol_->ModelInfer(
        &parsed->request, &inferred,
        [&finished](const absl::Status& status) { finished.set_value(status); },
        SharedMemoryOwner(request));
    const absl::Status status = finished.get_future().get();
    if (!status.ok()) return SendStatus(response, status);
    HttpBody out = InferResponseToHttp(inferred, *parsed);
    if (out.header_length > 0) {
      // The JSON's length before compression, as Triton's.
      response.set_header("Inference-Header-Content-Length", absl::StrCat(out.header_length));
    }
    SendBody(response, 200, Encode(request, std::move(out.content), response),
             out.header_length == 0 ? "application/json" : "application/octet-stream");
  }

 private:
  // The category of a GET on /v2/models/M[/versions/V][/action]; nullopt
  // for an action no GET route serves.
  static std::optional<ApiCategory> ModelRouteCategory(const std::string& action) {
    if (action.empty()) return ApiCategory::kMetadata;
    if (action == "ready") return ApiCategory::kHealth;
    if (action == "config") return ApiCategory::kModelConfig;
    if (action == "stats") return ApiCategory::kStatistics;
    return std::nullopt;
  }

  // The request's shared-memory owner: kSharedMemoryOwnerHeader's value,
  // "" without it (Note [Shared memory owners] in server/shared_memory.h).
  static std::string SharedMemoryOwner(const httplib::Request& request) {
    return request.get_header_value(kSharedMemoryOwnerHeader);
  }

  // False, having answered 403 with Triton's message, when `category` is
  // restricted and the request lacks its header with the value (Note
  // [Restricted APIs] in server/restricted_api.cc).
  bool Allowed(ApiCategory category, const httplib::Request& request,
               httplib::Response& response) const {
    const absl::Status allowed = restricted_.Check(category, [&request](absl::string_view key) {
      return HeaderValue(request, std::string(key));
    });
    if (allowed.ok()) return true;
    SendStatus(response, allowed);
    return false;
  }

  // An inference answer's body in the encoding the request accepts, with
  // its Content-Encoding header; as is when it accepts neither gzip nor
  // deflate, or compression fails (Note [HTTP response compression]).
  static std::string Encode(const httplib::Request& request, std::string body,
                            httplib::Response& response) {
    const ContentEncoding encoding =
        ResponseEncoding(request.get_header_value("Accept-Encoding"));
    if (encoding == ContentEncoding::kIdentity) return body;
    absl::StatusOr<std::string> compressed = Compress(body, encoding);
    if (!compressed.ok()) return body;
    response.set_header("Content-Encoding", std::string(ContentEncodingName(encoding)));
    return *std::move(compressed);
  }

  void Statistics(const ModelRoute& route, httplib::Response& response) const {
    inference::ModelStatisticsRequest request;
    request.set_name(route.model);
    request.set_version(route.version);
    inference::ModelStatisticsResponse statistics;
    const absl::Status status = protocol_->ModelStatistics(request, &statistics);
    if (!status.ok()) return SendStatus(response, status);
    SendJson(response, 200, ModelStatisticsToJson(statistics));
  }

  const InferenceProtocol* const protocol_;
  const size_t max_body_bytes_;
  const int max_json_depth_;
  const RestrictedApis restricted_;
};

TcpListenAddress HttpListenAddress(const HttpEndpointOptions& options) {
  TcpListenAddress address;
  address.host = options.host;
  address.port = options.port;
  address.reuse_port = options.reuse_port;
  address.port_flag = "--http-port";
  address.reuse_flag = "--reuse-http-port";
  return address;
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(
    const InferenceProtocol* protocol, const HttpEndpointOptions& options) {
  auto endpoint = std::unique_ptr<HttpEndpoint>(new HttpEndpoint());
  endpoint->handler_ = std::make_unique<Handler>(protocol, options);
  auto server = std::make_unique<FramedHttpServer>();
  const Handler* handler = endpoint->handler_.get();
  server->Get(R"(/v2(/.*)?)",
              [handler](const httplib::Request& request, httplib::Response& response) {
                handler->Get(request, response);
              });
  server->Post(R"(/v2(/.*)?)",
               [handler](const httplib::Request& request, httplib::Response& response,
                         const httplib::ContentReader& reader) {
                 handler->Post(request, response, reader);
               });
  const size_t max_body_bytes = options.max_body_bytes;
  // A GET's body, which no route reads, is read by the library: within the
  // same limit.
  server->set_payload_max_length(max_body_bytes);
  HttpListenerOptions listening;
  listening.max_connections = std::max(options.threads, options.max_connections);
  listening.read_timeout_secs = options.read_timeout_secs;
  listening.max_header_bytes = options.max_header_bytes;
  // The POST routes read their bodies as they come, within max_body_bytes
  // inflated (Handler::Post): Note [Bodies nobody reads].
  listening.streams_body = [](const httplib::Request& request) {
    return request.method == "POST" &&
           (request.path == "/v2" || absl::StartsWith(request.path, "/v2/"));
  };
  listening.check = [max_body_bytes](const httplib::Request& request,
                                     httplib::Response& response) {
    return CheckFraming(request, response, max_body_bytes);
  };
  server->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    // A route answered with its own error (SendBody sets a Content-Type), or
    // AnswerAndClose did.
    if (response.has_header("Content-Type") || AnsweredAndClosing(response)) return;
    if (response.status == 404) return SendNotFound(request, response);
    SendJson(response, response.status, ErrorJson(absl::StrCat("HTTP ", response.status)));
  });
  absl::StatusOr<std::unique_ptr<HttpListener>> listener =
      HttpListener::Start(std::move(server), HttpListenAddress(options), std::move(listening));
  if (!listener.ok()) return listener.status();
  endpoint->listener_ = *std::move(listener);
  return endpoint;
}

int HttpEndpoint::port() const { return listener_->port(); }

void HttpEndpoint::Stop() {
  if (listener_ != nullptr) listener_->Stop();
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

}  // namespace graphserve
