#pragma once
// The KServe v2 HTTP/REST endpoint beside gRPC: Triton's routes over the
// same InferenceProtocol, so `curl` and tritonclient.http work unchanged
// and KServe can route REST to GraphServe.
//
//   GET  /v2                                     server metadata
//   GET  /v2/health/live, /v2/health/ready       200, or 400 when not
//   GET  /v2/models/M[/versions/V]               model metadata
//   GET  /v2/models/M[/versions/V]/ready         200, or 400 when not
//   GET  /v2/models/M[/versions/V]/config        config.pbtxt as JSON
//   GET  /v2/models[/M[/versions/V]]/stats       statistics
//   POST /v2/models/M[/versions/V]/infer         JSON tensors, or Triton's
//        binary tensor data extension (server/http_json.h)
//   GET  /v2/systemsharedmemory[/region/R]/status      registered regions
//   POST /v2/systemsharedmemory/region/R/register      {"key", "offset",
//        "byte_size"}
//   POST /v2/systemsharedmemory[/region/R]/unregister  one region, or all
//   .../cudasharedmemory/...                           the same for CUDA
//        regions; register takes {"raw_handle": {"b64"}, "device_id",
//        "byte_size"}
//   POST /v2/repository/index                    the repository's models and
//        their states; body optional {"ready": true}
//   POST /v2/repository/models/M/load, .../unload   model control: 200 once
//        the model serves or is gone; body optional {"parameters":
//        {"config": "<JSON config>"}} (load)
//
// An inference answer is compressed, gzip or deflate, when the request's
// Accept-Encoding asks for it; no other answer is (Triton's rule: Note [HTTP
// response compression] in http_endpoint.cc).
// Errors answer {"error": "..."} with 400 (bad request), 403 (a restricted
// API without its header: server/restricted_api.h), 404 (unknown model,
// region or route), 409 (a region name in use), 413 (body too large), 501
// (not served), 503 (not serving, draining) or 500.
// Requests run on the HTTP library's (cpp-httplib) worker threads; an
// inference waits on its own worker until the responder finishes it.
// (civetweb, which prometheus-cpp bundles, cannot start its threads in a
// process that loads cuBLASLt: their fixed 100 KiB stacks are smaller than
// cuBLASLt's 94 KiB of static thread-local storage plus everyone else's.)

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/http_json.h"
#include "server/http_listener.h"
#include "server/inference_protocol.h"
#include "server/request_framing.h"
#include "server/restricted_api.h"

namespace graphserve {

struct HttpEndpointOptions {
  std::string host = "0.0.0.0";
  // 0 picks a free port (see port()).
  int port = 8000;
  // Share the port with other processes that ask the same (SO_REUSEPORT,
  // --reuse-http-port); otherwise a port in use is refused (Note [Refusing a
  // port in use]).
  bool reuse_port = false;
  // Largest request body; larger ones get 413.
  size_t max_body_bytes = 64 << 20;
  // How deeply a request's JSON may nest; deeper is 400 naming the limit
  // (Note [JSON nesting depth] in server/http_json.cc).
  int max_json_depth = kDefaultMaxJsonDepth;
  // Worker threads: requests served at once (Triton's --http-thread-count);
  // the pool grows past it up to max_connections (Note [Slow clients] in
  // server/http_listener.cc).
  int threads = 32;
  // Connections served at once (--http-max-connections).
  int max_connections = 1024;
  // Seconds a connection may stay silent mid-request or between requests
  // (--http-read-timeout-secs).
  int read_timeout_secs = 5;
  // The largest request line and header section together; longer is 431
  // (--http-max-header-size).
  size_t max_header_bytes = kDefaultMaxHeaderBytes;
  // Routes that need a header (Triton's --http-restricted-api); none by
  // default.
  RestrictedApis restricted;
};

// The address an endpoint with `options` listens on, named by the server's
// flags in errors (CheckCanListen).
TcpListenAddress HttpListenAddress(const HttpEndpointOptions& options);

class HttpEndpoint {
 public:
  // Borrows `protocol`. An error naming the address and why (CheckCanListen)
  // when it cannot listen.
  static absl::StatusOr<std::unique_ptr<HttpEndpoint>> Start(const InferenceProtocol* protocol,
                                                             const HttpEndpointOptions& options);
  [[nodiscard]] int port() const;
  // Stops listening and waits for the requests being served. Idempotent.
  void Stop();
  ~HttpEndpoint();

  // Implementation details follow.
  class Handler;

 private:
  HttpEndpoint() = default;
  std::unique_ptr<Handler> handler_;
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace graphserve
