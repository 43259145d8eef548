#pragma once
// A running GraphServe server: the model registry (loaded, captured and
// checked first), then gRPC on the requested port (and a Unix domain socket
// when asked) with the inference service, grpc.health.v1 and server
// reflection. A port in use is refused (Note [Refusing a port in use]).
//
// Shutdown (SIGTERM) order, so that nothing accepted is lost:
//   1. health goes NOT_SERVING and ServerReady false: load balancers stop
//      sending;
//   2. the request gate closes: new ModelInfer calls get UNAVAILABLE, and
//      keep getting it while the port stays open through the drain;
//   3. every model's queue runs for up to exit_timeout; requests still
//      queued then are answered UNAVAILABLE, so every accepted request is
//      answered and none is cancelled;
//   4. the answers are written, then gRPC stops and the GPU is released.

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/grpc_channel_args.h"
#include "server/http_endpoint.h"
#include "server/http_json.h"
#include "server/inference_service.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/queued_rpcs.h"
#include "server/request_framing.h"
#include "server/request_gate.h"
#include "server/responder.h"
#include "server/restricted_api.h"

namespace grpc {
class Server;
class ServerCredentials;
}  // namespace grpc

namespace graphserve {

// gRPC over TLS (Triton's --grpc-use-ssl and --grpc-use-ssl-mutual): the
// files hold PEM text, read at startup.
struct GrpcTlsOptions {
  bool enabled = false;
  // Clients must present a certificate that root_cert signed; without one
  // the handshake fails.
  bool mutual = false;
  std::string server_cert;  // the server's certificate chain
  std::string server_key;   // its private key
  std::string root_cert;    // the CA clients' certificates are checked against (mutual)
};

struct InferenceServerOptions {
  // Triton's --model-repository, which may be given several times: each
  // <repo>/<model>/config.pbtxt and <repo>/<model>/<version>/model.onnx; a
  // model name is unique across them (ScanModelRepositories).
  std::vector<std::string> model_repositories;
  // How the model directories are read (--model-config-name,
  // --disable-auto-complete-config).
  RepositoryReadOptions repository_read;
  // Where the listeners bind when their own address is empty: an address of
  // this machine, or 0.0.0.0 / :: for every one.
  std::string host = "0.0.0.0";
  // Each listener's own address (Triton's --grpc-address, --http-address and
  // --metrics-address); "" is `host`, and for metrics the HTTP address
  // first, as Triton's --metrics-address defaults to --http-address.
  std::string grpc_host;
  std::string http_host;
  std::string metrics_host;
  // Serve gRPC (Triton's --allow-grpc); without it the server serves
  // HTTP/REST alone.
  bool allow_grpc = true;
  // Port 0 picks a free one (see port()).
  int grpc_port = 8001;
  // Share the gRPC port with other processes that ask the same (SO_REUSEPORT,
  // Triton's --reuse-grpc-port): the kernel then splits connections between
  // them. Otherwise a port in use is refused (Note [Refusing a port in use]).
  bool reuse_grpc_port = false;
  // A Unix domain socket gRPC serves on as well as TCP ("" for none), e.g.
  // /run/graphserve/grpc.sock: clients on the same machine skip the TCP stack.
  std::string grpc_unix_socket;
  // TLS on every gRPC listener, the Unix socket included (Note [gRPC over
  // TLS]).
  GrpcTlsOptions grpc_tls;
  // Compression of gRPC responses (Triton's
  // --grpc-infer-response-compression-level): GRPC_COMPRESS_LEVEL_NONE (0)
  // to _HIGH (3); the client's accepted encodings decide the algorithm.
  int grpc_compression_level = 0;
  // Inflate gzip- and deflate-compressed gRPC requests (Note [Compressed gRPC
  // requests]); off, they are refused UNIMPLEMENTED before any inflation.
  // Response compression turns it on too: gRPC enables an algorithm for both
  // directions.
  bool grpc_accept_compressed_requests = false;
  // The KServe v2 HTTP/REST endpoint (server/http_endpoint.h); port 0 picks
  // a free one (see http_port()).
  bool allow_http = true;
  int http_port = 8000;
  // As reuse_grpc_port, for the HTTP port (Triton's --reuse-http-port).
  bool reuse_http_port = false;
  // Threads serving HTTP requests at once (Triton's --http-thread-count).
  int http_threads = 32;
  // HTTP connections served at once, and how long one may stay silent
  // (HttpEndpointOptions).
  int http_max_connections = 1024;
  int http_read_timeout_secs = 5;
  // The largest HTTP request line and header section together; longer is
  // 431 (HttpEndpointOptions).
  int64_t http_max_header_bytes = kDefaultMaxHeaderBytes;
  // Largest HTTP request body (Triton's --http-max-input-size); larger ones
  // get 413.
  int64_t http_max_input_bytes = int64_t{64} << 20;
  // Prometheus metrics (server/metrics.h); port 0 picks a free one (see
  // metrics_port()).
  bool allow_metrics = true;
  int metrics_port = 8002;
  // Triton's --allow-cpu-metrics and --metrics-interval-ms.
  MetricsOptions metrics;
  // How every model runs (executor, graphs on/off, queue bound).
  ServedModelOptions models;
  // Triton's --model-control-mode, --load-model and --repository-poll-secs.
  ModelControlMode model_control = ModelControlMode::kNone;
  std::vector<std::string> load_models;
  std::chrono::seconds repository_poll{15};
  // Largest gRPC request or response message; a larger one is refused by
  // gRPC with RESOURCE_EXHAUSTED.
  int max_message_bytes = 64 << 20;
  // How deeply an HTTP request's JSON may nest (Note [JSON nesting depth]).
  int http_max_json_depth = kDefaultMaxJsonDepth;
  // How long shutdown waits for accepted requests.
  std::chrono::seconds exit_timeout{30};
  // Threads that write ModelInfer responses (server/responder.h).
  int responder_threads = 4;
  // gRPC completion queues for ModelInfer, ModelStreamInfer and ServerLive,
  // and the threads polling each (Note [Hot RPCs on completion queues]).
  int grpc_queues = 4;
  int grpc_threads_per_queue = 2;
  // ModelStreamInfer streams open at once and answers owed per stream
  // (server/queued_rpcs.h).
  StreamLimits grpc_stream_limits;
  // gRPC core arguments for the server's transport, applied after the
  // server's own (common/grpc_channel_args.h).
  std::vector<GrpcChannelArg> grpc_channel_args;
  // On GPUs, page-lock system shared-memory regions at registration so the
  // device copies straight from and into them (Note [Pinned shared memory]).
  bool pin_shared_memory = true;
  // Shared-memory regions registered at once (Note [Shared memory region
  // limit]).
  int shared_memory_max_regions = 1024;
  // Shared-memory registrations without an owner refused (Note [Shared
  // memory owners]).
  bool shared_memory_owner_required = false;
  // Refuse to start when a model fails to load (Triton's default). When
  // false the server starts, the model answers UNAVAILABLE with the reason
  // and health stays NOT_SERVING.
  bool exit_on_error = true;
  // The categories of RPCs and routes that need a header (Triton's
  // --grpc-restricted-protocol and --http-restricted-api,
  // server/restricted_api.h); none by default.
  RestrictedApis grpc_restricted;
  RestrictedApis http_restricted;
};

class InferenceServer {
 public:
  // Checks that every address can be bound (before the models load, which
  // may take minutes), loads the repository (progress, then the startup
  // table, on `out`), starts HTTP and metrics, then gRPC, and prints the
  // addresses it serves on. Errors: an address cannot be bound (the message
  // names it and says why: CheckCanListen); the repository is missing; a
  // model failed and exit_on_error is set.
  static absl::StatusOr<std::unique_ptr<InferenceServer>> Start(
      const InferenceServerOptions& options, std::ostream& out);

  // The port gRPC listens on (0 without gRPC), and HTTP's (0 without HTTP).
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int http_port() const { return http_ != nullptr ? http_->port() : 0; }
  [[nodiscard]] int metrics_port() const { return metrics_ != nullptr ? metrics_->port() : 0; }
  [[nodiscard]] ModelRegistry& registry() const { return *registry_; }
  // ModelInfer calls accepted and not yet finished.
  [[nodiscard]] int64_t in_flight() const { return gate_.in_flight(); }

  // The shutdown sequence in the file comment. DeadlineExceeded, with the
  // count, when requests were still running at exit_timeout. Idempotent.
  absl::Status Shutdown();
  ~InferenceServer();

  // Implementation details follow.
 private:
  InferenceServer(const InferenceServerOptions& options, std::unique_ptr<ModelRegistry> registry);
  // Builds and starts the gRPC server on the TCP address and the Unix
  // socket with `credentials`, last, so that a failure leaves nothing
  // serving gRPC.
  absl::Status StartGrpc(std::shared_ptr<grpc::ServerCredentials> credentials);

  const InferenceServerOptions options_;
  // Teardown order: the gRPC server stops first (it calls into the service),
  // then the service, then the registry whose pools the service feeds (their
  // last chunks post to the responder), then the responder.
  Responder responder_;
  std::unique_ptr<ModelRegistry> registry_;
  RequestGate gate_;
  std::unique_ptr<InferenceProtocol> protocol_;
  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<HttpEndpoint> http_;
  std::unique_ptr<MetricsEndpoint> metrics_;
  // Created with the gRPC server and destroyed after it (gRPC's order).
  std::unique_ptr<QueuedRpcs> queued_rpcs_;
  // Null until StartGrpc succeeds; the destructor only shuts down a server
  // that started.
  std::unique_ptr<grpc::Server> grpc_server_;
  int port_ = 0;
  // Set once Start has everything listening: only then is there a drain.
  bool serving_ = false;
  bool shut_down_ = false;
};

}  // namespace graphserve
