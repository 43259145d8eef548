#include "server/inference_server.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_handles.h"
#include "common/status.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "proto/health.pb.h"
#include "server/listen_address.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// The service name health clients ask about, besides "" (the whole server).
constexpr char kInferenceServiceName[] = "inference.GRPCInferenceService";

// Note [Listen addresses]
// Each listener binds the address its own Triton flag gives (--grpc-address,
// --http-address, --metrics-address), so an operator can keep HTTP and
// metrics off the public interface while gRPC serves on it; an address left
// out is --host's (GraphServe's one flag for all three), and metrics follow
// HTTP first, as Triton's --metrics-address defaults to --http-address.
// Errors name the flag that set the address.

std::string GrpcHost(const InferenceServerOptions& options) {
  return options.grpc_host.empty() ? options.host : options.grpc_host;
}

std::string HttpHost(const InferenceServerOptions& options) {
  return options.http_host.empty() ? options.host : options.http_host;
}

std::string MetricsHost(const InferenceServerOptions& options) {
  return options.metrics_host.empty() ? HttpHost(options) : options.metrics_host;
}

TcpListenAddress GrpcListenAddress(const InferenceServerOptions& options) {
  TcpListenAddress address;
  address.host = GrpcHost(options);
  address.host_flag = options.grpc_host.empty() ? "--host" : "--grpc-address";
  address.port = options.grpc_port;
  address.reuse_port = options.reuse_grpc_port;
  address.port_flag = "--grpc-port";
  address.reuse_flag = "--reuse-grpc-port";
  return address;
}

HttpEndpointOptions HttpOptions(const InferenceServerOptions& options) {
  HttpEndpointOptions http;
  http.host = HttpHost(options);
  http.port = options.http_port;
  http.reuse_port = options.reuse_http_port;
  http.max_body_bytes = static_cast<size_t>(options.http_max_input_bytes);
  http.max_json_depth = options.http_max_json_depth;
  http.threads = options.http_threads;
  http.max_connections = options.http_max_connections;
  http.read_timeout_secs = options.http_read_timeout_secs;
  http.max_header_bytes = static_cast<size_t>(options.http_max_header_bytes);
  http.restricted = options.http_restricted;
  return http;
}

TcpListenAddress HttpAddress(const InferenceServerOptions& options) {
  TcpListenAddress address = HttpListenAddress(HttpOptions(options));
  address.host_flag = options.http_host.empty() ? "--host" : "--http-address";
  return address;
}

TcpListenAddress MetricsAddress(const InferenceServerOptions& options) {
  TcpListenAddress address = MetricsListenAddress(MetricsHost(options), options.metrics_port);
  address.host_flag = !options.metrics_host.empty() ? "--metrics-address"
                      : !options.http_host.empty()  ? "--http-address"
                                                    : "--host";
  return address;
}

// Every address the server will listen on, before the models load: a port
// in use is reported in a moment rather than after minutes of capture.
absl::Status CheckListenAddresses(const InferenceServerOptions& options) {
  if (options.allow_grpc) {
    RETURN_IF_ERROR(CheckCanListen(GrpcListenAddress(options)));
    if (!options.grpc_unix_socket.empty()) {
      RETURN_IF_ERROR(CheckCanListenUnix(options.grpc_unix_socket, "--grpc-address"));
    }
  }
  if (options.allow_http) RETURN_IF_ERROR(CheckCanListen(HttpAddress(options)));
  if (options.allow_metrics) RETURN_IF_ERROR(CheckCanListen(MetricsAddress(options)));
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": cannot read it (", std::strerror(errno), ")"));
  }
  std::stringstream text;
  text << in.rdbuf();
  // Every PEM block starts so; a DER file or a wrong path's contents would
  // otherwise fail later, in the first client's handshake.
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return text.str();
}

// Note [gRPC over TLS]
// Triton's flags: --grpc-use-ssl serves gRPC over TLS with the server's
// certificate and key; --grpc-use-ssl-mutual also requires every client to
// present a certificate that --grpc-root-cert signed, and refuses the
// handshake otherwise. The files are read at startup, before the models
// load, so a wrong path fails in a moment with the file named. The same
// credentials serve the Unix socket (--grpc-address unix:PATH): asking for
// TLS never leaves a plaintext way in.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> GrpcCredentials(
    const GrpcTlsOptions& tls) {
  if (!tls.enabled) return grpc::InsecureServerCredentials();
  const grpc_ssl_client_certificate_request_type client_certificate =
      tls.mutual ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                 : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  grpc::SslServerCredentialsOptions ssl(client_certificate);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.private_key, ReadPemFile(tls.server_key, "--grpc-server-key"));
  ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile(tls.server_cert, "--grpc-server-cert"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.root_cert.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPemFile(tls.root_cert, "--grpc-root-cert"));
  }
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::SslServerCredentials(ssl);
  // gRPC checks the certificates and the key only when a listener starts
  // with them: start a throwaway one now, so that a bad file is refused
  // before the models load rather than after.
  grpc::ServerBuilder probe;
  int probe_port = 0;
  probe.AddListeningPort("127.0.0.1:0", credentials, &probe_port);
  std::unique_ptr<grpc::Server> started = probe.BuildAndStart();
  if (started == nullptr || probe_port == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--grpc-server-cert ", tls.server_cert, ", --grpc-server-key ", tls.server_key,
        tls.root_cert.empty() ? "" : absl::StrCat(", --grpc-root-cert ", tls.root_cert),
        ": gRPC refused them as TLS credentials (a certificate chain, its private key and a CA "
        "certificate, PEM; see gRPC's message above)"));
  }
  started->Shutdown();
  return credentials;
}

void SetHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  health->SetServingStatus(kInferenceServiceName, serving);
}

}  // namespace

absl::StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Start(
    const InferenceServerOptions& options, std::ostream& out) {
  RETURN_IF_ERROR(CheckListenAddresses(options));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> grpc_credentials,
                   GrpcCredentials(options.grpc_tls));
  // auto leaves CUDA's own flags as they are, and touches no GPU (Note [How
  // threads wait for the GPU] in server/served_model.h).
  const GpuWait wait = options.models.gpu_wait;
  if (options.models.executor == ExecutorKind::kCuda && wait != GpuWait::kAuto) {
    RETURN_IF_ERROR(SetGpuWait(wait, options.models.devices));
  }
  ModelRegistryOptions registry_options;
  registry_options.models = options.models;
  registry_options.control = options.model_control;
  registry_options.startup_models = options.load_models;
  registry_options.poll_interval = options.repository_poll;
  registry_options.read = options.repository_read;
  absl::StatusOr<std::unique_ptr<ModelRegistry>> registry =
      ModelRegistry::Load(options.model_repositories, registry_options, out);
  if (!registry.ok()) return registry.status();
  out << "\n" << (*registry)->StartupTable() << "\n" << std::flush;
  if ((*registry)->states().empty()) {
    spdlog::warn("the model repository {} holds no models",
                 absl::StrJoin(options.model_repositories, ", "));
  }
  if (!(*registry)->all_ready() && options.exit_on_error) {
    return absl::FailedPreconditionError(
        "a model failed to load (see the table above); start with --exit-on-error=false to "
        "serve the others");
  }

  std::unique_ptr<InferenceServer> server(new InferenceServer(options, *std::move(registry)));
  SharedMemoryRegistryOptions shared_memory{
      .max_regions = options.shared_memory_max_regions,
      .owner_required = options.shared_memory_owner_required};
  if (options.pin_shared_memory && options.models.executor == ExecutorKind::kCuda &&
      !options.models.devices.empty()) {
    shared_memory.pin_device = options.models.devices.front();
  }
  server->protocol_ = std::make_unique<InferenceProtocol>(
      server->registry_.get(), &server->gate_, &server->responder_, shared_memory);
  server->service_ =
      std::make_unique<InferenceService>(server->protocol_.get(), options.grpc_restricted);
  if (options.allow_http) {
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> endpoint =
        HttpEndpoint::Start(server->protocol_.get(), HttpOptions(options));
    if (!endpoint.ok()) return endpoint.status();
    server->http_ = *std::move(endpoint);
    out << "graphserve: serving HTTP/REST on " << HostPort(HttpHost(options), server->http_->port())
        << "\n";
  }
  if (options.allow_metrics) {
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> metrics =
        MetricsEndpoint::Start(server->registry_.get(), MetricsHost(options), options.metrics_port,
                               options.metrics);
    if (!metrics.ok()) return metrics.status();
    server->metrics_ = *std::move(metrics);
    out << "graphserve: serving metrics on "
        << HostPort(MetricsHost(options), server->metrics_->port()) << "/metrics\n";
  }
  const char* state =
      server->registry_->all_ready() ? "SERVING" : "NOT_SERVING: a model failed to load";
  if (!options.allow_grpc) {
    // Tools wait for the last line; without gRPC it says so.
    out << "graphserve: serving without gRPC (--allow-grpc=false) (" << state << ")\n"
        << std::flush;
    server->serving_ = true;
    return server;
  }
  RETURN_IF_ERROR(server->StartGrpc(std::move(grpc_credentials)));
  if (!options.grpc_unix_socket.empty()) {
    out << "graphserve: serving gRPC" << (options.grpc_tls.enabled ? " over TLS" : "")
        << " also on unix:" << options.grpc_unix_socket << "\n";
  }
  // Last, once everything listens: tools wait for this line.
  SetHealth(*server->grpc_server_, server->registry_->all_ready());
  out << "graphserve: serving gRPC on " << HostPort(GrpcHost(options), server->port_) << " ("
      << state << ")"
      << (options.grpc_tls.enabled
              ? (options.grpc_tls.mutual ? " over TLS, client certificates required"
                                         : " over TLS")
              : "")
      << "\n"
      << std::flush;
  server->serving_ = true;
  return server;
}

// Note [Compressed gRPC requests]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// gRPC (Debian's 1.51) inflates a gzip- or deflate-compressed message whole
// and only then holds it to the receive limit: a message of 1 MB of gzip
// that inflates to 1 GiB took the server's peak RSS from 0.5 to 1.6 GB
// before it was refused RESOURCE_EXHAUSTED, and one at the 64 MiB limit
// would inflate to about 64 GB (issue 30, finding 5). The inflation happens
// in gRPC's core, before any code of ours sees the call, so the only guard
// is not to enable the algorithms: then gRPC refuses a compressed request
// UNIMPLEMENTED ("Compression algorithm 'gzip' is disabled.") from its
// headers, before reading its message, and the peak RSS stays where it was.
// Triton inflates them; its clients send uncompressed requests unless told
// otherwise (tritonclient's compression_algorithm, perf_analyzer's
// --grpc-compression-algorithm). --grpc-accept-compressed-requests turns
// them on where every client is trusted, and so does response compression
// (--grpc-infer-response-compression-level): gRPC enables an algorithm for
// both directions at once. The startup log says which.
namespace {
bool AcceptsCompressedRequests(const InferenceServerOptions& options) {
  return options.grpc_accept_compressed_requests ||
         options.grpc_compression_level != GRPC_COMPRESS_LEVEL_NONE;
}
}  // namespace

absl::Status InferenceServer::StartGrpc(std::shared_ptr<grpc::ServerCredentials> credentials) {
  // Checked again, right before the bind: the models took a while to load.
  RETURN_IF_ERROR(CheckCanListen(GrpcListenAddress(options_)));
  const std::string unix_address =
      options_.grpc_unix_socket.empty() ? "" : absl::StrCat("unix:", options_.grpc_unix_socket);
  if (!unix_address.empty()) {
    RETURN_IF_ERROR(CheckCanListenUnix(options_.grpc_unix_socket, "--grpc-address"));
  }
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's built-in health service carries no protobuf descriptor, so
  // reflection (what grpcurl describes and calls through) would list
  // grpc.health.v1.Health yet fail to find its symbols. Touching our
  // generated copy links it in and registers it in the descriptor pool.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = HostPort(GrpcHost(options_), options_.grpc_port);
  builder.AddListeningPort(address, credentials, &port_);
  int unix_bound = 0;  // gRPC sets it to 1 for a Unix socket it bound
  if (!unix_address.empty()) builder.AddListeningPort(unix_address, credentials, &unix_bound);
  // Note [Refusing a port in use].
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, options_.reuse_grpc_port ? 1 : 0);
  if (options_.grpc_compression_level != GRPC_COMPRESS_LEVEL_NONE) {
    builder.SetDefaultCompressionLevel(
        static_cast<grpc_compression_level>(options_.grpc_compression_level));
  }
  // Note [Compressed gRPC requests].
  if (AcceptsCompressedRequests(options_)) {
    spdlog::warn("gRPC accepts gzip- and deflate-compressed requests (--grpc-accept-compressed-"
                 "requests, or response compression): gRPC inflates each whole before "
                 "--grpc-max-message-bytes ({} bytes) applies, up to about 1000 times its size",
                 options_.max_message_bytes);
  } else {
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_GZIP, false);
    builder.SetCompressionAlgorithmSupportStatus(GRPC_COMPRESS_DEFLATE, false);
  }
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  ForEachGrpcChannelArg(options_.grpc_channel_args, [&](const std::string& name, const auto& value) {
    builder.AddChannelArgument(name, value);
  });
  builder.RegisterService(service_.get());
  queued_rpcs_ = std::make_unique<QueuedRpcs>(&builder, service_.get(), protocol_.get(),
                                               options_.grpc_queues,
                                               options_.grpc_threads_per_queue,
                                               options_.grpc_stream_limits);
  std::unique_ptr<grpc::Server> started = builder.BuildAndStart();
  const bool bound = started != nullptr && port_ != 0 && (unix_address.empty() || unix_bound != 0);
  if (!bound) {
    // Taken between the check and the bind: gRPC logged its own reason.
    if (started != nullptr) started->Shutdown();
    started.reset();  // the server before its queues, as gRPC wants
    queued_rpcs_.reset();
    port_ = 0;
    return absl::UnavailableError(absl::StrCat("cannot listen on ", address,
                                               unix_address.empty() ? "" : " or ", unix_address,
                                               ": gRPC could not bind it (see its message above)"));
  }
  grpc_server_ = std::move(started);
  queued_rpcs_->Start();
  return absl::OkStatus();
}

InferenceServer::InferenceServer(const InferenceServerOptions& options,
                                 std::unique_ptr<ModelRegistry> registry)
    : options_(options),
      responder_(ResponderOptions{options.responder_threads, options.models.idle_spin}),
      registry_(std::move(registry)) {}

// Shutdown keeps the port open, refusing, until no request has come for
// kShutdownQuiet (at most kShutdownGraceLimit after the drain).
constexpr std::chrono::milliseconds kShutdownQuiet{250};
constexpr std::chrono::seconds kShutdownGraceLimit{5};

absl::Status InferenceServer::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  if (grpc_server_ != nullptr) SetHealth(*grpc_server_, false);
  gate_.Close();
  // Model loads queued behind the control thread would hold their RPCs open
  // through the drain (and be cut off by the port closing): answer them now.
  registry_->StopControl();
  spdlog::info("shutting down: {} requests in flight; running them for up to {} s",
               gate_.in_flight(), options_.exit_timeout.count());
  // The exit timeout bounds the drain: queued rows run until it passes, and
  // whatever is still queued then is answered UNAVAILABLE, so every request
  // the server accepted gets an answer, none is cancelled. New requests have
  // been refused (UNAVAILABLE) since the gate closed, and keep being refused
  // while the port stays open through the drain.
  const auto deadline = std::chrono::steady_clock::now() + options_.exit_timeout;
  // A request the gate let in just before it closed may not have reached its
  // model's queue yet; draining first would refuse it.
  gate_.WaitHanded(std::chrono::seconds(5));
  registry_->DrainAll(deadline);
  // Every model has answered; the answers still have to leave through the
  // responder and gRPC (the gate counts a request until its response is
  // written).
  const bool drained = gate_.WaitIdle(std::chrono::seconds(2));
  const int64_t cut_off = gate_.in_flight();
  // Requests still arriving are refused, not cut off by the closing port:
  // keep refusing until none has come for a while.
  gate_.WaitQuiet(kShutdownQuiet, kShutdownGraceLimit);
  // Streams stay open through the drain (their requests refused one by one,
  // as unary calls are); end them with UNAVAILABLE rather than let the
  // server's Shutdown cancel them.
  if (grpc_server_ != nullptr) {
    queued_rpcs_->EndStreams();
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    grpc_server_->Wait();
  }
  // After the drain: HTTP workers still waiting on an inference are
  // answered by then, so stopping (which joins them) cannot hang.
  if (http_ != nullptr) http_->Stop();
  if (metrics_ != nullptr) metrics_->Stop();
  responder_.Stop();
  // Last: the responder's finishes complete on these queues.
  if (queued_rpcs_ != nullptr) queued_rpcs_->Stop();
  if (!drained) {
    return absl::DeadlineExceededError(
        absl::StrCat(cut_off, " responses were still being written after the drain (",
                     "--exit-timeout-secs=", options_.exit_timeout.count(), ") and were cut off"));
  }
  spdlog::info("shutdown complete: every accepted request was answered");
  return absl::OkStatus();
}

InferenceServer::~InferenceServer() {
  // A server whose Start failed has accepted nothing over gRPC and has
  // nothing to drain: its members stop themselves (HTTP and metrics
  // listeners join their workers, the pools and the responder theirs).
  if (!serving_) return;
  if (const absl::Status status = Shutdown(); !status.ok()) spdlog::warn("{}", status.ToString());
}

}  // namespace graphserve
