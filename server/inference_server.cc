#include "server/inference_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "proto/health.pb.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// The service name health clients ask about, besides "" (the whole server).
constexpr char kInferenceServiceName[] = "inference.GRPCInferenceService";

void SetHealth(grpc::Server& server, bool serving) {
  grpc::HealthCheckServiceInterface* health = server.GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus("", serving);
  health->SetServingStatus(kInferenceServiceName, serving);
}

}  // namespace

absl::StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Start(
    const InferenceServerOptions& options, std::ostream& out) {
  absl::StatusOr<std::unique_ptr<ModelRegistry>> registry =
      ModelRegistry::Load(options.model_repository, options.models, out);
  if (!registry.ok()) return registry.status();
  out << "\n" << (*registry)->StartupTable() << "\n" << std::flush;
  if ((*registry)->states().empty()) {
    spdlog::warn("the model repository {} holds no models", options.model_repository);
  }
  if (!(*registry)->all_ready() && options.exit_on_error) {
    return absl::FailedPreconditionError(
        "a model failed to load (see the table above); start with --exit-on-error=false to "
        "serve the others");
  }

  std::unique_ptr<InferenceServer> server(new InferenceServer(options, *std::move(registry)));
  server->protocol_ = std::make_unique<InferenceProtocol>(server->registry_.get(),
                                                         &server->gate_, &server->responder_);
  server->service_ = std::make_unique<InferenceService>(server->protocol_.get());

  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's built-in health service carries no protobuf descriptor, so
  // reflection (what grpcurl describes and calls through) would list
  // grpc.health.v1.Health yet fail to find its symbols. Touching our
  // generated copy links it in and registers it in the descriptor pool.
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string address = absl::StrCat(options.host, ":", options.grpc_port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  builder.RegisterService(server->service_.get());
  server->grpc_server_ = builder.BuildAndStart();
  if (server->grpc_server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve gRPC on ", address,
                     " (is the port in use? choose another with --grpc-port)"));
  }
  if (options.allow_http) {
    HttpEndpointOptions http;
    http.host = options.host;
    http.port = options.http_port;
    http.max_body_bytes = static_cast<size_t>(options.max_message_bytes);
    absl::StatusOr<std::unique_ptr<HttpEndpoint>> endpoint =
        HttpEndpoint::Start(server->protocol_.get(), http);
    if (!endpoint.ok()) return endpoint.status();
    server->http_ = *std::move(endpoint);
    out << "graphserve: serving HTTP/REST on " << options.host << ":" << server->http_->port()
        << "\n";
  }
  if (options.allow_metrics) {
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> metrics =
        MetricsEndpoint::Start(server->registry_.get(), options.host, options.metrics_port);
    if (!metrics.ok()) return metrics.status();
    server->metrics_ = *std::move(metrics);
    out << "graphserve: serving metrics on " << options.host << ":" << server->metrics_->port()
        << "/metrics\n";
  }
  // Last, once everything listens: tools wait for this line.
  SetHealth(*server->grpc_server_, server->registry_->all_ready());
  out << "graphserve: serving gRPC on " << options.host << ":" << server->port_ << " ("
      << (server->registry_->all_ready() ? "SERVING" : "NOT_SERVING: a model failed to load")
      << ")\n"
      << std::flush;
  return server;
}

InferenceServer::InferenceServer(const InferenceServerOptions& options,
                                 std::unique_ptr<ModelRegistry> registry)
    : options_(options),
      responder_(ResponderOptions{options.responder_threads}),
      registry_(std::move(registry)) {}

absl::Status InferenceServer::Shutdown() {
  if (shut_down_) return absl::OkStatus();
  shut_down_ = true;
  SetHealth(*grpc_server_, false);
  gate_.Close();
  spdlog::info("shutting down: {} requests in flight; waiting up to {} s for them",
               gate_.in_flight(), options_.exit_timeout.count());
  const bool drained = gate_.WaitIdle(options_.exit_timeout);
  const int64_t cut_off = gate_.in_flight();
  // Every accepted request has been finished (or the timeout passed): give
  // gRPC a moment to flush the responses, then cancel what is left.
  grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc_server_->Wait();
  registry_->DrainAll();
  // After the drain: HTTP workers still waiting on an inference are
  // answered by then, so stopping (which joins them) cannot hang.
  if (http_ != nullptr) http_->Stop();
  if (metrics_ != nullptr) metrics_->Stop();
  responder_.Stop();
  if (!drained) {
    return absl::DeadlineExceededError(absl::StrCat(
        cut_off, " requests were still running after --exit-timeout-secs=",
        options_.exit_timeout.count(), " and were cancelled"));
  }
  spdlog::info("shutdown complete: every accepted request was answered");
  return absl::OkStatus();
}

InferenceServer::~InferenceServer() {
  if (const absl::Status status = Shutdown(); !status.ok()) spdlog::warn("{}", status.ToString());
}

}  // namespace graphserve
