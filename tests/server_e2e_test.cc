// End-to-end tests of graphserve over loopback gRPC: the real server
// (InferenceServer, the same object the binary runs) on a demo repository,
// called through the generated KServe v2 stub. Every result is compared with
// the host reference executor run on the whole batch at once, so padding and
// splitting must be invisible.
//
// Runs on the host executor by default (CI has no GPU). On a GPU machine,
// GRAPHSERVE_E2E_DEVICE=cuda runs the same suite on CUDA graphs.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/tensor.h"
#include "examples/demo_repository.h"
#include "examples/example_models.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "proto/grpc_service.grpc.pb.h"
#include "proto/health.grpc.pb.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "server/http_json.h"
#include "server/inference_server.h"
#include "server/model_interface.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Float32 on either executor lands far under this against the host
// executor on the whole batch (../.library METHOD: relative error).
constexpr double kTolerance = 1e-5;
// Sizes the test repository captures; its max_batch_size is above the
// largest, so requests of 65..256 rows split.
const std::vector<int64_t> kCapturedSizes = {1, 4, 16, 64};
constexpr int64_t kMaxBatch = 256;
// Small enough that one test can exceed it with a few MiB.
constexpr int kMaxMessageBytes = 2 << 20;

ExecutorKind ExecutorUnderTest() {
  const char* device = std::getenv("GRAPHSERVE_E2E_DEVICE");
  return device != nullptr && std::string(device) == "cuda" ? ExecutorKind::kCuda
                                                            : ExecutorKind::kHost;
}

std::string TempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  return (std::filesystem::path(root != nullptr ? root : "/tmp") / name).string();
}

// A Unix socket path relative to the test's scratch directory, made the
// working directory: an absolute path under Bazel's TEST_TMPDIR is longer
// than the 107 bytes a socket path may have.
std::string ScratchSocketPath(const std::string& name) {
  static const bool in_scratch = [] {
    const char* root = std::getenv("TEST_TMPDIR");
    return chdir(root != nullptr ? root : "/tmp") == 0;
  }();
  EXPECT_TRUE(in_scratch);
  std::filesystem::remove(name);
  return name;
}

std::string WriteTestRepository(const std::string& name) {
  const std::string dir = TempDir(name);
  std::filesystem::remove_all(dir);
  DemoRepositoryOptions options;
  options.batch_sizes = kCapturedSizes;
  options.max_batch_size = kMaxBatch;
  options.num_streams = 2;
  const absl::Status written = WriteDemoRepository(dir, options);
  EXPECT_TRUE(written.ok()) << written;
  return dir;
}

// `model`'s config.pbtxt in `repository`, parsed (empty, with a test
// failure, when it does not parse), and written back.
inference::ModelConfig ReadConfig(const std::string& repository, const std::string& model) {
  std::ifstream in(std::filesystem::path(repository) / model / "config.pbtxt");
  std::stringstream text;
  text << in.rdbuf();
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &config)) << model;
  return config;
}

void WriteConfig(const std::string& repository, const std::string& model,
                 const inference::ModelConfig& config) {
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(config, &text));
  std::ofstream(std::filesystem::path(repository) / model / "config.pbtxt") << text;
}

// One model's statistics (empty, with a test failure, when the call fails).
inference::ModelStatistics FetchStatistics(inference::GRPCInferenceService::Stub& stub,
                                           const std::string& model) {
  grpc::ClientContext context;
  inference::ModelStatisticsRequest request;
  request.set_name(model);
  inference::ModelStatisticsResponse response;
  EXPECT_TRUE(stub.ModelStatistics(&context, request, &response).ok());
  EXPECT_EQ(response.model_stats_size(), 1);
  return response.model_stats_size() == 1 ? response.model_stats(0)
                                          : inference::ModelStatistics();
}

InferenceServerOptions TestServerOptions(const std::string& repository) {
  InferenceServerOptions options;
  options.model_repositories = {repository};
  options.host = "127.0.0.1";
  options.grpc_port = 0;
  options.http_port = 0;
  options.metrics_port = 0;
  options.models.executor = ExecutorUnderTest();
  options.models.cost_iters = 5;
  options.max_message_bytes = kMaxMessageBytes;
  options.exit_timeout = std::chrono::seconds(60);
  options.exit_on_error = false;
  return options;
}

std::unique_ptr<InferenceServer> StartServer(const InferenceServerOptions& options) {
  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server = InferenceServer::Start(options, log);
  EXPECT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  return server.ok() ? *std::move(server) : nullptr;
}

std::shared_ptr<grpc::Channel> Connect(int port) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(64 << 20);
  arguments.SetMaxSendMessageSize(64 << 20);
  return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials(), arguments);
}

// The model `name` of the repository on the host executor, bound at `rows`;
// imported with `passes` (a config's declared inputs: Note [Inputs with
// defaults] in runtime/ir.h).
std::unique_ptr<HostExecutor> Reference(const std::string& repository, const std::string& name,
                                        int64_t rows, const std::vector<int64_t>& bucket = {},
                                        const ModelPassOptions& passes = {}) {
  absl::StatusOr<Model> model = ImportOnnxFile(
      (std::filesystem::path(repository) / name / "1" / "model.onnx").string(), passes);
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<BindOptions> bind = BindOptionsAt(*model, {rows, bucket});
  EXPECT_TRUE(bind.ok()) << bind.status();
  absl::StatusOr<BoundGraph> graph = BindModel(*model, *bind);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*std::move(graph));
  EXPECT_TRUE(executor.ok()) << executor.status();
  return *std::move(executor);
}

// A request carrying `inputs` (named as the graph names them) as raw bytes.
inference::ModelInferRequest RawRequest(const std::string& model, const BoundGraph& graph,
                                        const std::vector<HostTensor>& inputs) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  request.set_id("e2e");
  for (size_t i = 0; i < inputs.size(); ++i) {
    inference::ModelInferRequest::InferInputTensor* input = request.add_inputs();
    input->set_name(graph.value(graph.inputs[i]).name);
    input->set_datatype(KServeDatatype(inputs[i].dtype()));
    for (int64_t dim : inputs[i].dims()) input->add_shape(dim);
    request.add_raw_input_contents(std::string(static_cast<const char*>(inputs[i].raw()),
                                               inputs[i].bytes()));
  }
  return request;
}

HostTensor OutputTensor(const inference::ModelInferResponse& response, size_t k,
                        const HostTensor& like) {
  HostTensor tensor(like.dtype(), like.dims());
  const std::string& bytes = response.raw_output_contents(static_cast<int>(k));
  EXPECT_EQ(bytes.size(), tensor.bytes()) << "output " << k;
  std::memcpy(tensor.raw(), bytes.data(), std::min(bytes.size(), tensor.bytes()));
  return tensor;
}

// One HTTP/1.1 exchange with 127.0.0.1:`port` over a fresh connection.
struct HttpReply {
  int code = 0;
  std::string headers;  // the header lines, as sent
  std::string body;
};

HttpReply HttpExchange(int port, const std::string& method, const std::string& path,
                       const std::string& body = "", const std::string& extra_headers = "") {
  HttpReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return reply;
  }
  const std::string request =
      absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n",
                   "Content-Length: ", body.size(), "\r\n", extra_headers, "\r\n", body);
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, 0);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string raw;
  char buffer[1 << 16];
  ssize_t n = 0;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, static_cast<size_t>(n));
  close(fd);
  const size_t end = raw.find("\r\n\r\n");
  if (raw.size() < 12 || end == std::string::npos) return reply;
  (void)absl::SimpleAtoi(raw.substr(9, 3), &reply.code);  // "HTTP/1.1 200"
  reply.headers = raw.substr(0, end);
  reply.body = raw.substr(end + 4);
  return reply;
}

// What the server sends on one connection given `bytes`, read until it
// closes or stays silent for `quiet`, and how long that took. The write side
// stays open: the server, not the client, decides when the exchange ends.
struct RawHttpReply {
  std::string raw;
  bool closed = false;  // the server closed the connection
  double seconds = 0;
};

RawHttpReply RawHttpExchange(int port, const std::string& bytes,
                             std::chrono::milliseconds quiet = std::chrono::milliseconds(1500)) {
  RawHttpReply reply;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout{.tv_sec = quiet.count() / 1000, .tv_usec = (quiet.count() % 1000) * 1000};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto start = std::chrono::steady_clock::now();
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return reply;
  }
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  char buffer[1 << 16];
  ssize_t n = 0;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) {
    reply.raw.append(buffer, static_cast<size_t>(n));
  }
  reply.closed = n == 0;
  reply.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  return reply;
}

// How many responses `raw` holds (status lines at the start of a line).
int CountResponses(const std::string& raw) {
  int count = 0;
  for (size_t at = raw.find("HTTP/1.1 "); at != std::string::npos;
       at = raw.find("HTTP/1.1 ", at + 1)) {
    if (at == 0 || raw[at - 1] == '\n') ++count;
  }
  return count;
}

// Whether a ModelInfer answered OK with a first output within tolerance of
// `reference` on `inputs`.
bool MatchesReference(const grpc::Status& status, const inference::ModelInferResponse& response,
                      HostExecutor& reference, const std::vector<HostTensor>& inputs) {
  absl::StatusOr<std::vector<HostTensor>> want = reference.Run(inputs);
  return status.ok() && want.ok() &&
         RelativeError(OutputTensor(response, 0, (*want)[0]), (*want)[0]) <= kTolerance;
}

// ModelReady's answer for `model` (`version` empty: any), or nullopt when the
// RPC itself failed.
std::optional<bool> ModelIsReady(inference::GRPCInferenceService::Stub& stub,
                                 const std::string& model, const std::string& version = "") {
  grpc::ClientContext context;
  inference::ModelReadyRequest request;
  request.set_name(model);
  request.set_version(version);
  inference::ModelReadyResponse ready;
  if (!stub.ModelReady(&context, request, &ready).ok()) return std::nullopt;
  return ready.ready();
}

// What a ModelStreamInfer stream answered: its answers by request id (in
// the order they came), and the status it ended with.
struct StreamOutcome {
  std::vector<inference::ModelStreamInferResponse> answers;
  grpc::Status status;

  const inference::ModelStreamInferResponse* Answer(const std::string& id) const {
    for (const inference::ModelStreamInferResponse& answer : answers) {
      if (answer.infer_response().id() == id) return &answer;
    }
    return nullptr;
  }
};

// Writes every request on one stream without waiting for answers, half-closes
// it, then reads until the server ends it.
StreamOutcome StreamAll(inference::GRPCInferenceService::Stub& stub,
                        const std::vector<inference::ModelInferRequest>& requests) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  auto stream = stub.ModelStreamInfer(&context);
  StreamOutcome outcome;
  std::thread reader([&] {
    inference::ModelStreamInferResponse answer;
    while (stream->Read(&answer)) outcome.answers.push_back(answer);
  });
  for (const inference::ModelInferRequest& request : requests) {
    if (!stream->Write(request)) break;
  }
  stream->WritesDone();
  reader.join();
  outcome.status = stream->Finish();
  return outcome;
}

class ServerEndToEnd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // bench/gpu_check.sh reads this line to prove the suite ran on the
    // executor it asked for.
    std::cout << "e2e executor: "
              << (ExecutorUnderTest() == ExecutorKind::kCuda ? "cuda" : "host") << std::endl;
    repository_ = new std::string(WriteTestRepository("e2e_repository"));
    InferenceServerOptions options = TestServerOptions(*repository_);
    options.grpc_unix_socket = ScratchSocketPath("e2e_grpc.sock");
    server_ = StartServer(options).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete repository_;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    channel_ = Connect(server_->port());
    stub_ = inference::GRPCInferenceService::NewStub(channel_);
  }

  grpc::Status Infer(const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return stub_->ModelInfer(&context, request, response);
  }

  // Sends `rows` random rows of `model` and checks every output against the
  // host executor run on the whole batch.
  void ExpectMatchesReference(const std::string& model, int64_t rows, uint64_t seed) {
    std::unique_ptr<HostExecutor> reference = Reference(*repository_, model, rows);
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), seed);
    absl::StatusOr<std::vector<HostTensor>> want = reference->Run(inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    inference::ModelInferResponse response;
    const grpc::Status status = Infer(RawRequest(model, reference->graph(), inputs), &response);
    ASSERT_TRUE(status.ok()) << model << " rows " << rows << ": " << status.error_message();
    ASSERT_EQ(response.outputs_size(), static_cast<int>(want->size()));
    for (size_t k = 0; k < want->size(); ++k) {
      EXPECT_EQ(response.outputs(static_cast<int>(k)).shape(0), rows);
      const HostTensor got = OutputTensor(response, k, (*want)[k]);
      EXPECT_LE(RelativeError(got, (*want)[k]), kTolerance)
          << model << " rows " << rows << " output " << k;
    }
  }

  // A valid one-row mlp request, sent after every bad one to show the server
  // still serves.
  void ExpectGoodRequestStillServed() { ExpectMatchesReference("mlp", 3, 77); }

  static std::string* repository_;
  static InferenceServer* server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

std::string* ServerEndToEnd::repository_ = nullptr;
InferenceServer* ServerEndToEnd::server_ = nullptr;

TEST_F(ServerEndToEnd, LivenessReadinessAndServerMetadata) {
  {
    grpc::ClientContext context;
    inference::ServerLiveResponse live;
    ASSERT_TRUE(stub_->ServerLive(&context, {}, &live).ok());
    EXPECT_TRUE(live.live());
  }
  {
    grpc::ClientContext context;
    inference::ServerReadyResponse ready;
    ASSERT_TRUE(stub_->ServerReady(&context, {}, &ready).ok());
    EXPECT_TRUE(ready.ready());
  }
  for (const char* model : {"mlp", "dlrm_dense"}) {
    EXPECT_EQ(ModelIsReady(*stub_, model), std::optional<bool>(true)) << model;
  }
  EXPECT_EQ(ModelIsReady(*stub_, "no_such_model"), std::optional<bool>(false));
  grpc::ClientContext context;
  inference::ServerMetadataResponse metadata;
  ASSERT_TRUE(stub_->ServerMetadata(&context, {}, &metadata).ok());
  EXPECT_EQ(metadata.name(), "graphserve");
  EXPECT_FALSE(metadata.version().empty());
}

TEST_F(ServerEndToEnd, HealthIsServingWhenEveryModelLoaded) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "inference.GRPCInferenceService"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = health->Check(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << service;
  }
}

TEST_F(ServerEndToEnd, ModelMetadataAndConfig) {
  grpc::ClientContext context;
  inference::ModelMetadataRequest request;
  request.set_name("mlp");
  inference::ModelMetadataResponse metadata;
  ASSERT_TRUE(stub_->ModelMetadata(&context, request, &metadata).ok());
  EXPECT_EQ(metadata.name(), "mlp");
  ASSERT_EQ(metadata.versions_size(), 1);
  EXPECT_EQ(metadata.versions(0), "1");
  ASSERT_EQ(metadata.inputs_size(), 1);
  EXPECT_EQ(metadata.inputs(0).name(), "x");
  EXPECT_EQ(metadata.inputs(0).datatype(), "FP32");
  EXPECT_THAT(metadata.inputs(0).shape(), ::testing::ElementsAre(-1, 512));
  ASSERT_EQ(metadata.outputs_size(), 1);
  EXPECT_THAT(metadata.outputs(0).shape(), ::testing::ElementsAre(-1, 1));

  grpc::ClientContext config_context;
  inference::ModelConfigRequest config_request;
  config_request.set_name("dlrm_dense");
  inference::ModelConfigResponse config;
  ASSERT_TRUE(stub_->ModelConfig(&config_context, config_request, &config).ok());
  EXPECT_EQ(config.config().name(), "dlrm_dense");
  EXPECT_EQ(config.config().max_batch_size(), kMaxBatch);
  EXPECT_THAT(config.config().capture().batch_sizes(),
              ::testing::ElementsAreArray(kCapturedSizes));
  EXPECT_EQ(config.config().capture().streams(), 2);
  EXPECT_EQ(config.config().input_size(), 2);
}

// Triton's codes and leading texts (Note [Triton's error texts]).
TEST_F(ServerEndToEnd, UnknownModelAndVersionAreNotFound) {
  for (const auto& [model, version, code, text] :
       std::vector<std::tuple<std::string, std::string, grpc::StatusCode, std::string>>{
           {"resnet", "", grpc::StatusCode::NOT_FOUND,
            "Request for unknown model: 'resnet' is not found"},
           {"mlp", "7", grpc::StatusCode::NOT_FOUND,
            "Request for unknown model: 'mlp' version 7 is not found"},
           {"mlp", "latest", grpc::StatusCode::INVALID_ARGUMENT,
            "failed to get model version from specified version string 'latest'"},
           {"mlp", "-1", grpc::StatusCode::INVALID_ARGUMENT,
            "invalid model version specified '-1'"}}) {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name(model);
    request.set_version(version);
    inference::ModelMetadataResponse metadata;
    const grpc::Status status = stub_->ModelMetadata(&context, request, &metadata);
    EXPECT_EQ(status.error_code(), code) << model << " " << version;
    EXPECT_THAT(status.error_message(), ::testing::StartsWith(text));
  }
  inference::ModelInferRequest request;
  request.set_model_name("resnet");
  inference::ModelInferResponse response;
  const grpc::Status status = Infer(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(),
              ::testing::StartsWith("Request for unknown model: 'resnet' is not found"));
  EXPECT_THAT(status.error_message(), HasSubstr("mlp"));  // says what is served
  ExpectGoodRequestStillServed();
}

// Note [Quoting client text]: 64 KiB of client text in any name gets the
// right code and a short message. Quoted whole, the message would exceed the
// 8 KiB of status metadata a gRPC client accepts by default, and the client
// would see RESOURCE_EXHAUSTED instead.
TEST_F(ServerEndToEnd, HugeNamesGetTheirCodeAndAShortMessage) {
  constexpr size_t kHugeText = 64 << 10;  // eight times the client's metadata limit
  constexpr size_t kMessageBound = 256;   // one line, whatever the client sent
  const std::string huge(kHugeText, 'm');
  auto expect_short = [&](const grpc::Status& status, grpc::StatusCode code, const char* what) {
    EXPECT_EQ(status.error_code(), code) << what << ": " << status.error_message().substr(0, 300);
    EXPECT_LT(status.error_message().size(), kMessageBound) << what;
    EXPECT_THAT(status.error_message(), HasSubstr("...' (65536 bytes)")) << what;
  };
  {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name(huge);
    inference::ModelMetadataResponse metadata;
    expect_short(stub_->ModelMetadata(&context, request, &metadata), grpc::StatusCode::NOT_FOUND,
                 "ModelMetadata, huge name");
  }
  {
    grpc::ClientContext context;
    inference::ModelConfigRequest request;
    request.set_name("mlp");
    request.set_version(huge);
    inference::ModelConfigResponse config;
    // Not an integer: Triton's INVALID_ARGUMENT.
    expect_short(stub_->ModelConfig(&context, request, &config),
                 grpc::StatusCode::INVALID_ARGUMENT, "ModelConfig, huge version");
  }
  {
    grpc::ClientContext context;
    inference::ModelStatisticsRequest request;
    request.set_name(huge);
    inference::ModelStatisticsResponse statistics;
    expect_short(stub_->ModelStatistics(&context, request, &statistics),
                 grpc::StatusCode::NOT_FOUND, "ModelStatistics, huge name");
  }
  std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", 2);
  const inference::ModelInferRequest good =
      RawRequest("mlp", reference->graph(), RandomInputs(reference->graph(), 5));
  const std::vector<
      std::tuple<const char*, std::function<void(inference::ModelInferRequest*)>, grpc::StatusCode>>
      cases = {
          {"model name", [&](auto* r) { r->set_model_name(huge); }, grpc::StatusCode::NOT_FOUND},
          {"version", [&](auto* r) { r->set_model_version(huge); },
           grpc::StatusCode::INVALID_ARGUMENT},
          {"input name", [&](auto* r) { r->mutable_inputs(0)->set_name(huge); },
           grpc::StatusCode::INVALID_ARGUMENT},
          {"datatype", [&](auto* r) { r->mutable_inputs(0)->set_datatype(huge); },
           grpc::StatusCode::INVALID_ARGUMENT},
          {"output name", [&](auto* r) { r->add_outputs()->set_name(huge); },
           grpc::StatusCode::INVALID_ARGUMENT},
      };
  for (const auto& [what, spoil, code] : cases) {
    inference::ModelInferRequest request = good;
    spoil(&request);
    inference::ModelInferResponse response;
    expect_short(Infer(request, &response), code, what);
  }
  // Over HTTP the model name is in the path: 4 KiB fits cpp-httplib's URI limit.
  const HttpReply reply =
      HttpExchange(server_->http_port(), "GET", "/v2/models/" + std::string(4096, 'm'));
  EXPECT_EQ(reply.code, 404) << reply.body.substr(0, 300);
  EXPECT_LT(reply.body.size(), kMessageBound);
  ExpectGoodRequestStillServed();
}

// --grpc-address unix:PATH: the same service on a Unix domain socket, beside
// TCP.
TEST_F(ServerEndToEnd, UnixSocketServesLikeTcp) {
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel("unix:e2e_grpc.sock", grpc::InsecureChannelCredentials(),
                                           arguments);
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  grpc::ClientContext live_context;
  inference::ServerLiveResponse live;
  const grpc::Status live_status = stub->ServerLive(&live_context, {}, &live);
  ASSERT_TRUE(live_status.ok()) << live_status.error_message();
  EXPECT_TRUE(live.live());

  constexpr int64_t kRows = 5;  // between captured sizes: padded or split
  std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", kRows);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 31);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  const grpc::Status status =
      stub->ModelInfer(&context, RawRequest("mlp", reference->graph(), inputs), &response);
  EXPECT_TRUE(MatchesReference(status, response, *reference, inputs)) << status.error_message();
}

// Note [Refusing a port in use]: a second server on any of the first one's
// ports is refused before it loads a model, naming the address, even when it
// asks to share (the first one did not).
TEST_F(ServerEndToEnd, ASecondServerOnItsPortsIsRefused) {
  struct Taken {
    const char* flag;
    std::function<void(InferenceServerOptions*)> take;
    int port;
  };
  const std::vector<Taken> taken = {
      {"--reuse-grpc-port", [](auto* o) { o->grpc_port = server_->port(); }, server_->port()},
      {"--reuse-http-port", [](auto* o) { o->http_port = server_->http_port(); },
       server_->http_port()},
      {"--metrics-port", [](auto* o) { o->metrics_port = server_->metrics_port(); },
       server_->metrics_port()},
  };
  for (const bool reuse : {false, true}) {
    for (const Taken& t : taken) {
      InferenceServerOptions options = TestServerOptions(*repository_);
      options.reuse_grpc_port = reuse;
      options.reuse_http_port = reuse;
      t.take(&options);
      std::ostringstream log;
      const absl::StatusOr<std::unique_ptr<InferenceServer>> second =
          InferenceServer::Start(options, log);
      ASSERT_FALSE(second.ok()) << t.flag << " reuse " << reuse;
      EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
      EXPECT_THAT(
          second.status().message(),
          HasSubstr(absl::StrCat("cannot listen on 127.0.0.1:", t.port, ": address in use")));
      if (!reuse) {
        EXPECT_THAT(second.status().message(), HasSubstr(t.flag));
      }
      EXPECT_THAT(log.str(), ::testing::Not(HasSubstr("loading model"))) << "checked first";
    }
  }
  // The unix socket too: the first server answers there.
  InferenceServerOptions options = TestServerOptions(*repository_);
  options.grpc_unix_socket = "e2e_grpc.sock";
  std::ostringstream log;
  const absl::StatusOr<std::unique_ptr<InferenceServer>> second =
      InferenceServer::Start(options, log);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(),
              HasSubstr("cannot listen on unix:e2e_grpc.sock: address in use"));
  ExpectGoodRequestStillServed();
}

// Triton's streaming API: requests of several sizes over one stream, one of
// them bad, each answered on the stream with its id; the bad one's error
// does not end the stream, and the requests after it are served.
TEST_F(ServerEndToEnd, StreamAnswersEveryRequestAndAnErrorDoesNotEndIt) {
  const std::vector<int64_t> rows = {1, 5, 17, 65, 3};
  std::vector<std::unique_ptr<HostExecutor>> references;
  std::vector<std::vector<HostTensor>> inputs;
  std::vector<inference::ModelInferRequest> requests;
  for (size_t i = 0; i < rows.size(); ++i) {
    references.push_back(Reference(*repository_, "mlp", rows[i]));
    inputs.push_back(RandomInputs(references.back()->graph(), 300 + i));
    requests.push_back(RawRequest("mlp", references.back()->graph(), inputs.back()));
    requests.back().set_id(absl::StrCat("r", i));
    if (i == 2) {
      inference::ModelInferRequest bad = requests.back();
      bad.set_model_name("no_such_model");
      bad.set_id("bad");
      requests.push_back(bad);
    }
  }
  const StreamOutcome outcome = StreamAll(*stub_, requests);
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.error_message();
  ASSERT_EQ(outcome.answers.size(), requests.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const inference::ModelStreamInferResponse* answer = outcome.Answer(absl::StrCat("r", i));
    ASSERT_NE(answer, nullptr) << "r" << i;
    EXPECT_EQ(answer->error_message(), "") << "r" << i;
    EXPECT_TRUE(MatchesReference(grpc::Status::OK, answer->infer_response(), *references[i],
                                 inputs[i]))
        << "r" << i << ", " << rows[i] << " rows";
  }
  const inference::ModelStreamInferResponse* bad = outcome.Answer("bad");
  ASSERT_NE(bad, nullptr);
  EXPECT_THAT(bad->error_message(), HasSubstr("no_such_model"));
  EXPECT_EQ(bad->infer_response().outputs_size(), 0);
  ExpectGoodRequestStillServed();
}

// Rows around every captured size and above the largest (65..256 split).
class PadAndSplit : public ServerEndToEnd,
                    public ::testing::WithParamInterface<std::tuple<std::string, int64_t>> {};

TEST_P(PadAndSplit, MatchesHostExecutorOnTheWholeBatch) {
  const auto& [model, rows] = GetParam();
  ExpectMatchesReference(model, rows, 1000 + static_cast<uint64_t>(rows));
}

INSTANTIATE_TEST_SUITE_P(Rows, PadAndSplit,
                         ::testing::Combine(::testing::Values("mlp", "dlrm_dense"),
                                            ::testing::Values(1, 2, 4, 5, 16, 17, 64, 65, 129,
                                                              256)));

TEST_F(ServerEndToEnd, TypedContentsGiveTheSameOutputsAsRaw) {
  std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", 5);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 5);
  inference::ModelInferRequest request = RawRequest("mlp", reference->graph(), inputs);
  request.clear_raw_input_contents();
  const float* values = inputs[0].data<float>();
  for (int64_t i = 0; i < inputs[0].num_elements(); ++i) {
    request.mutable_inputs(0)->mutable_contents()->add_fp32_contents(values[i]);
  }
  request.add_outputs()->set_name("y");
  inference::ModelInferResponse response;
  ASSERT_TRUE(Infer(request, &response).ok());
  absl::StatusOr<std::vector<HostTensor>> want = reference->Run(inputs);
  ASSERT_TRUE(want.ok());
  ASSERT_EQ(response.raw_output_contents_size(), 1);  // outputs always go out raw
  EXPECT_LE(RelativeError(OutputTensor(response, 0, (*want)[0]), (*want)[0]), kTolerance);
}

// Each bad request gets the right code and a message that says what was
// expected; a good request right after still succeeds.
struct BadCase {
  std::string name;
  std::function<void(inference::ModelInferRequest*)> spoil;
  grpc::StatusCode code;
  std::string message;  // a substring of the expected message
};

TEST_F(ServerEndToEnd, EveryBadInputIsAnsweredAndTheServerKeepsServing) {
  std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", 4);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 9);
  const inference::ModelInferRequest good = RawRequest("mlp", reference->graph(), inputs);
  const std::vector<BadCase> cases = {
      {"missing input", [](auto* r) { r->clear_inputs(); r->clear_raw_input_contents(); },
       grpc::StatusCode::INVALID_ARGUMENT, "'x'"},
      {"misnamed input", [](auto* r) { r->mutable_inputs(0)->set_name("input"); },
       grpc::StatusCode::INVALID_ARGUMENT, "x"},
      {"extra input",
       [](auto* r) {
         *r->add_inputs() = r->inputs(0);
         r->mutable_inputs(1)->set_name("extra");
         r->add_raw_input_contents(r->raw_input_contents(0));
       },
       grpc::StatusCode::INVALID_ARGUMENT, "extra"},
      {"wrong datatype", [](auto* r) { r->mutable_inputs(0)->set_datatype("INT64"); },
       grpc::StatusCode::INVALID_ARGUMENT, "FP32"},
      {"unsupported datatype", [](auto* r) { r->mutable_inputs(0)->set_datatype("FP16"); },
       grpc::StatusCode::INVALID_ARGUMENT, "FP32"},
      {"wrong non-batch dims", [](auto* r) { r->mutable_inputs(0)->set_shape(1, 256); },
       grpc::StatusCode::INVALID_ARGUMENT, "512"},
      {"wrong rank", [](auto* r) { r->mutable_inputs(0)->add_shape(1); },
       grpc::StatusCode::INVALID_ARGUMENT, "512"},
      {"byte count", [](auto* r) { r->mutable_raw_input_contents(0)->resize(1000); },
       grpc::StatusCode::INVALID_ARGUMENT, "8192"},
      {"raw and typed mixed",
       [](auto* r) { r->mutable_inputs(0)->mutable_contents()->add_fp32_contents(1.0f); },
       grpc::StatusCode::INVALID_ARGUMENT, "raw"},
      {"batch 0",
       [](auto* r) {
         r->mutable_inputs(0)->set_shape(0, 0);
         r->mutable_raw_input_contents(0)->clear();
       },
       grpc::StatusCode::INVALID_ARGUMENT, "batch"},
      {"batch above max_batch_size",
       [](auto* r) {
         r->mutable_inputs(0)->set_shape(0, kMaxBatch + 1);
         r->mutable_raw_input_contents(0)->resize((kMaxBatch + 1) * 512 * 4);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "256"},
      {"negative dim", [](auto* r) { r->mutable_inputs(0)->set_shape(0, -4); },
       grpc::StatusCode::INVALID_ARGUMENT, "x"},
      {"unknown output", [](auto* r) { r->add_outputs()->set_name("z"); },
       grpc::StatusCode::INVALID_ARGUMENT, "y"},
      {"unknown version", [](auto* r) { r->set_model_version("3"); },
       grpc::StatusCode::NOT_FOUND, "served versions: 1"},
  };
  for (const BadCase& bad : cases) {
    SCOPED_TRACE(bad.name);
    inference::ModelInferRequest request = good;
    bad.spoil(&request);
    inference::ModelInferResponse response;
    const grpc::Status status = Infer(request, &response);
    EXPECT_EQ(status.error_code(), bad.code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(bad.message));
    ExpectGoodRequestStillServed();
  }
}

TEST_F(ServerEndToEnd, OversizedMessageIsResourceExhausted) {
  inference::ModelInferRequest request;
  request.set_model_name("mlp");
  request.add_raw_input_contents(std::string(kMaxMessageBytes + 1024, 'x'));
  inference::ModelInferResponse response;
  EXPECT_EQ(Infer(request, &response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ExpectGoodRequestStillServed();
}

TEST_F(ServerEndToEnd, ConcurrentClientsWithBadRequestsInterleaved) {
  constexpr int kClients = 6;           // more than the model's 2 streams
  constexpr int kRequestsPerClient = 8;
  std::atomic<int> wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto stub = inference::GRPCInferenceService::NewStub(channel_);
      for (int i = 0; i < kRequestsPerClient; ++i) {
        const int64_t rows = 1 + (c * 37 + i * 11) % 100;
        std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", rows);
        const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), c * 100 + i);
        inference::ModelInferRequest request = RawRequest("mlp", reference->graph(), inputs);
        const bool spoil = i % 2 == 1;
        if (spoil) request.mutable_raw_input_contents(0)->pop_back();
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const grpc::Status status = stub->ModelInfer(&context, request, &response);
        if (spoil) {
          if (status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) ++wrong;
          continue;
        }
        if (!MatchesReference(status, response, *reference, inputs)) ++wrong;
      }
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(wrong.load(), 0);
}

// /metrics reads the counters the statistics RPC reads: after requests, the
// two agree exactly.
TEST_F(ServerEndToEnd, MetricsAgreeWithTheStatistics) {
  ExpectMatchesReference("mlp", 5, 21);
  grpc::ClientContext context;
  inference::ModelStatisticsRequest request;
  request.set_name("mlp");
  inference::ModelStatisticsResponse statistics;
  ASSERT_TRUE(stub_->ModelStatistics(&context, request, &statistics).ok());
  const inference::ModelStatistics& mlp = statistics.model_stats(0);
  ASSERT_GT(mlp.inference_count(), 0u);
  const HttpReply metrics = HttpExchange(server_->metrics_port(), "GET", "/metrics");
  ASSERT_EQ(metrics.code, 200);
  EXPECT_THAT(metrics.headers, HasSubstr("text/plain"));
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("nv_inference_count{model=\"mlp\",version=\"1\"} ",
                                     mlp.inference_count(), "\n")));
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("nv_inference_request_success{model=\"mlp\",version=\"1\"} ",
                                     mlp.inference_stats().success().count(), "\n")));
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("nv_inference_exec_count{model=\"mlp\",version=\"1\"} ",
                                     mlp.execution_count(), "\n")));
  // GraphServe's own: one row-histogram and latency observation per
  // successful request, the rows summed, and launches per captured size that
  // add up to the executions.
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("graphserve_request_rows_count{model=\"mlp\",version=\"1\"} ",
                                     mlp.inference_stats().success().count(), "\n")));
  EXPECT_THAT(metrics.body,
              HasSubstr(absl::StrCat("graphserve_request_rows_sum{model=\"mlp\",version=\"1\"} ",
                                     mlp.inference_count(), "\n")));
  EXPECT_THAT(metrics.body, HasSubstr(absl::StrCat(
                                "graphserve_request_duration_us_count{model=\"mlp\",version=\"1\"} ",
                                mlp.inference_stats().success().count(), "\n")));
  uint64_t launches = 0;
  std::istringstream lines(metrics.body);
  for (std::string line; std::getline(lines, line);) {
    if (!absl::StartsWith(line, "graphserve_graph_launches_total{model=\"mlp\"")) continue;
    launches += std::stoull(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(launches, mlp.execution_count());
}

TEST_F(ServerEndToEnd, StatisticsCountRequestsRowsAndChunks) {
  auto read = [&]() { return FetchStatistics(*stub_, "dlrm_dense"); };
  const inference::ModelStatistics before = read();
  ExpectMatchesReference("dlrm_dense", 100, 3);  // 100 rows: two chunks of 64
  ExpectMatchesReference("dlrm_dense", 3, 4);    // one chunk of 4
  const inference::ModelStatistics after = read();
  EXPECT_EQ(after.inference_stats().success().count() - before.inference_stats().success().count(),
            2u);
  EXPECT_EQ(after.inference_count() - before.inference_count(), 103u);
  EXPECT_EQ(after.execution_count() - before.execution_count(), 3u);
  EXPECT_GT(after.inference_stats().compute_infer().ns(),
            before.inference_stats().compute_infer().ns());
  EXPECT_GT(after.last_inference(), 0u);

  grpc::ClientContext context;
  inference::ModelStatisticsResponse all;
  ASSERT_TRUE(stub_->ModelStatistics(&context, {}, &all).ok());
  EXPECT_EQ(all.model_stats_size(), 2);
}

// A repository with a model that cannot load: the server starts (with
// --exit-on-error=false), says why, and keeps serving the others.
TEST(ServerWithBrokenModel, ReportsNotServingAndUnavailableWithTheReason) {
  const std::string repository = WriteTestRepository("broken_repository");
  const std::filesystem::path broken = std::filesystem::path(repository) / "broken" / "1";
  std::filesystem::create_directories(broken);
  std::filesystem::copy_file(std::filesystem::path(repository) / "mlp" / "config.pbtxt",
                             broken.parent_path() / "config.pbtxt");
  {
    std::ifstream in(broken.parent_path() / "config.pbtxt");
    std::stringstream text;
    text << in.rdbuf();
    std::string config = text.str();
    config.replace(config.find("name: \"mlp\""), 11, "name: \"broken\"");
    std::ofstream(broken.parent_path() / "config.pbtxt") << config;
  }
  std::ofstream(broken / "model.onnx") << "this is not an ONNX file";

  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->port());
  auto stub = inference::GRPCInferenceService::NewStub(channel);
  {
    grpc::ClientContext context;
    inference::ServerReadyResponse ready;
    ASSERT_TRUE(stub->ServerReady(&context, {}, &ready).ok());
    EXPECT_FALSE(ready.ready());
  }
  {
    auto health = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, {}, &response).ok());
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  }
  {
    grpc::ClientContext context;
    inference::ModelInferRequest request;
    request.set_model_name("broken");
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(&context, request, &response);
    // Triton's answer when no version is ready, then why.
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(status.error_message(),
                ::testing::StartsWith(
                    "Request for unknown model: 'broken' has no available versions"));
    EXPECT_THAT(status.error_message(), HasSubstr("failed to load"));
  }
  {
    grpc::ClientContext context;
    inference::ModelInferRequest request;
    request.set_model_name("broken");
    request.set_model_version("1");
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(status.error_message(),
                ::testing::StartsWith(
                    "Request for unknown model: 'broken' version 1 is not at ready state"));
  }
  // The good model still serves.
  std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", 2);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 11);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  const grpc::Status status =
      stub->ModelInfer(&context, RawRequest("mlp", reference->graph(), inputs), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  absl::StatusOr<std::vector<HostTensor>> want = reference->Run(inputs);
  ASSERT_TRUE(want.ok());
  EXPECT_LE(RelativeError(OutputTensor(response, 0, (*want)[0]), (*want)[0]), kTolerance);
}

// The KServe v2 HTTP/REST endpoint serves the same requests as gRPC.
TEST_F(ServerEndToEnd, HttpHealthMetadataConfigAndStatistics) {
  const int port = server_->http_port();
  ASSERT_GT(port, 0);
  EXPECT_EQ(HttpExchange(port, "GET", "/v2/health/live").code, 200);
  EXPECT_EQ(HttpExchange(port, "GET", "/v2/health/ready").code, 200);
  EXPECT_EQ(HttpExchange(port, "GET", "/v2/models/mlp/ready").code, 200);
  EXPECT_EQ(HttpExchange(port, "GET", "/v2/models/nope/ready").code, 400);
  const nlohmann::json server = nlohmann::json::parse(HttpExchange(port, "GET", "/v2").body);
  EXPECT_EQ(server["name"], "graphserve");
  const HttpReply metadata = HttpExchange(port, "GET", "/v2/models/mlp");
  ASSERT_EQ(metadata.code, 200) << metadata.body;
  const nlohmann::json model = nlohmann::json::parse(metadata.body);
  EXPECT_EQ(model["inputs"][0]["name"], "x");
  EXPECT_EQ(model["inputs"][0]["shape"], nlohmann::json({-1, 512}));
  const HttpReply config = HttpExchange(port, "GET", "/v2/models/mlp/versions/1/config");
  ASSERT_EQ(config.code, 200) << config.body;
  EXPECT_EQ(nlohmann::json::parse(config.body)["max_batch_size"], kMaxBatch);
  const HttpReply stats = HttpExchange(port, "GET", "/v2/models/stats");
  ASSERT_EQ(stats.code, 200) << stats.body;
  EXPECT_TRUE(nlohmann::json::parse(stats.body)["model_stats"].is_array());
  const HttpReply unknown = HttpExchange(port, "GET", "/v2/models/nope");
  EXPECT_EQ(unknown.code, 404);
  EXPECT_THAT(unknown.body, HasSubstr("nope"));
  EXPECT_EQ(HttpExchange(port, "GET", "/v3/whatever").code, 404);
}

TEST_F(ServerEndToEnd, HttpInferJsonAndBinaryMatchTheHostExecutor) {
  const int port = server_->http_port();
  constexpr int64_t kRows = 3;
  std::unique_ptr<HostExecutor> reference = Reference(*repository_, "mlp", kRows);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 42);
  absl::StatusOr<std::vector<HostTensor>> want = reference->Run(inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  const HostTensor& x = inputs[0];

  // JSON tensors in, JSON out.
  nlohmann::json request = {
      {"id", "http-1"},
      {"inputs",
       {{{"name", "x"},
         {"datatype", "FP32"},
         {"shape", {kRows, 512}},
         {"data", std::vector<float>(x.data<float>(), x.data<float>() + x.num_elements())}}}}};
  HttpReply reply = HttpExchange(port, "POST", "/v2/models/mlp/infer", request.dump());
  ASSERT_EQ(reply.code, 200) << reply.body;
  const nlohmann::json answer = nlohmann::json::parse(reply.body);
  EXPECT_EQ(answer["id"], "http-1");
  EXPECT_EQ(answer["outputs"][0]["shape"], nlohmann::json({kRows, 1}));
  HostTensor got((*want)[0].dtype(), (*want)[0].dims());
  const std::vector<float> data = answer["outputs"][0]["data"].get<std::vector<float>>();
  ASSERT_EQ(data.size(), static_cast<size_t>(got.num_elements()));
  std::copy(data.begin(), data.end(), got.data<float>());
  EXPECT_LE(RelativeError(got, (*want)[0]), kTolerance);

  // Triton's binary tensor data extension both ways, on a versioned route.
  const nlohmann::json header = {
      {"inputs",
       {{{"name", "x"},
         {"datatype", "FP32"},
         {"shape", {kRows, 512}},
         {"parameters", {{"binary_data_size", x.bytes()}}}}}},
      {"outputs", {{{"name", "y"}, {"parameters", {{"binary_data", true}}}}}}};
  const std::string json_part = header.dump();
  reply = HttpExchange(port, "POST", "/v2/models/mlp/versions/1/infer",
                       json_part + std::string(static_cast<const char*>(x.raw()), x.bytes()),
                       absl::StrCat("Inference-Header-Content-Length: ", json_part.size(), "\r\n"));
  ASSERT_EQ(reply.code, 200) << reply.body;
  const size_t at = reply.headers.find("Inference-Header-Content-Length: ");
  ASSERT_NE(at, std::string::npos) << reply.headers;
  size_t header_length = 0;
  ASSERT_TRUE(absl::SimpleAtoi(
      reply.headers.substr(at + 33, reply.headers.find("\r\n", at) - at - 33), &header_length));
  ASSERT_EQ(reply.body.size(), header_length + got.bytes());
  std::memcpy(got.raw(), reply.body.data() + header_length, got.bytes());
  EXPECT_LE(RelativeError(got, (*want)[0]), kTolerance);
}

TEST_F(ServerEndToEnd, HttpBadRequestsGetAClearErrorAndTheServerKeepsServing) {
  const int port = server_->http_port();
  HttpReply reply = HttpExchange(port, "POST", "/v2/models/mlp/infer", "{not json");
  EXPECT_EQ(reply.code, 400);
  EXPECT_THAT(reply.body, HasSubstr("not valid JSON"));
  reply = HttpExchange(port, "POST", "/v2/models/mlp/infer",
                       R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 512],
                           "data": [1, 2]}]})");
  EXPECT_EQ(reply.code, 400);
  EXPECT_THAT(reply.body, HasSubstr("its shape holds 512"));
  reply = HttpExchange(port, "POST", "/v2/models/mlp/infer",
                       R"({"inputs": [{"name": "q", "datatype": "FP32", "shape": [1, 1],
                           "data": [1]}]})");
  EXPECT_EQ(reply.code, 400) << reply.body;  // the protocol's own validation
  reply = HttpExchange(port, "POST", "/v2/models/" + std::string(5000, 'm') + "/infer", "{}");
  EXPECT_EQ(reply.code, 400) << reply.body;  // no inputs: refused before the model is looked up
  EXPECT_LT(reply.body.size(), 300u);
  reply = HttpExchange(port, "POST", "/v2/models/nope/infer", R"({"inputs": []})");
  EXPECT_EQ(reply.code, 404) << reply.body;
  // A classification that is not a count is refused with Triton's text.
  std::string values = "0";
  for (int i = 1; i < 512; ++i) values += ",0";
  const std::string classify =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 512], "data": [)" + values +
      R"(]}], "outputs": [{"name": "y", "parameters": {"classification": -2}}]})";
  reply = HttpExchange(port, "POST", "/v2/models/mlp/infer", classify);
  EXPECT_EQ(reply.code, 400) << reply.body;
  EXPECT_THAT(reply.body, HasSubstr("Unable to set 'classification'"));
  ExpectGoodRequestStillServed();
}

// Runs `clients` threads, each sending `requests_each` requests of
// rows_of(client, request) rows to `model`, every answer checked against the
// host executor on the same rows; returns how many were wrong or failed.
int WrongAnswersFromClients(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& repository, const std::string& model,
                            int clients, int requests_each,
                            const std::function<int64_t(int, int)>& rows_of, uint64_t seed) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto stub = inference::GRPCInferenceService::NewStub(channel);
      for (int i = 0; i < requests_each; ++i) {
        std::unique_ptr<HostExecutor> reference = Reference(repository, model, rows_of(c, i));
        const std::vector<HostTensor> inputs =
            RandomInputs(reference->graph(), seed + static_cast<uint64_t>(c * 10 + i));
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const grpc::Status status =
            stub->ModelInfer(&context, RawRequest(model, reference->graph(), inputs), &response);
        if (!MatchesReference(status, response, *reference, inputs)) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return wrong.load();
}

// Triton's instance_group places a model on listed GPUs: GPUs 0 and 1 on a
// machine with two, else GPU 0 twice (the same code path on one GPU), each
// with the config's 2 streams, so 4 slots; concurrent requests spread over
// all of them and every answer matches the host executor. On the host
// executor the group's GPUs do not apply and the model keeps its 2 slots.
// Note [HTTP framing] (server/http_endpoint.cc): a Content-Length that is not
// a byte count is answered 400 at once and the connection closed; it used to
// be read as 2^64-1, waited on until the read timed out (5 s), and the
// partial body run and answered 200.
TEST_F(ServerEndToEnd, HttpContentLengthThatIsNotAByteCountIs400AtOnce) {
  const int port = server_->http_port();
  std::string values = "0";
  for (int i = 1; i < 512; ++i) values += ",0";
  const std::string body =
      R"({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 512], "data": [)" + values +
      "]}]}";
  for (const char* length : {"-1", "+10", "1e3", "0x10", "18446744073709551616"}) {
    const RawHttpReply reply = RawHttpExchange(
        port, absl::StrCat("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ",
                           length, "\r\n\r\n", body));
    EXPECT_TRUE(absl::StartsWith(reply.raw, "HTTP/1.1 400")) << length << ": " << reply.raw;
    EXPECT_THAT(reply.raw, HasSubstr("is not a byte count")) << length;
    EXPECT_TRUE(reply.closed) << length;
    EXPECT_LT(reply.seconds, 1.0) << length;  // at once, not after the read timeout
    EXPECT_EQ(CountResponses(reply.raw), 1) << length;
  }
  // Both framings at once is how requests are smuggled.
  const RawHttpReply both = RawHttpExchange(
      port, absl::StrCat("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"));
  EXPECT_TRUE(absl::StartsWith(both.raw, "HTTP/1.1 400")) << both.raw;
  EXPECT_TRUE(both.closed);
  // A body shorter than its Content-Length is not run.
  const RawHttpReply short_body = RawHttpExchange(
      port,
      absl::StrCat("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\nContent-Length: ",
                   body.size() + 100, "\r\n\r\n", body),
      std::chrono::milliseconds(8000));  // past the server's 5 s read timeout
  EXPECT_TRUE(absl::StartsWith(short_body.raw, "HTTP/1.1 400")) << short_body.raw;
  EXPECT_THAT(short_body.raw, HasSubstr("ended before its Content-Length"));
  ExpectGoodRequestStillServed();
}

// A request hidden in the body of a POST the endpoint refuses (an unknown
// route) was parsed as the next request on the connection and executed.
TEST_F(ServerEndToEnd, HttpRequestHiddenInABodyIsNotExecuted) {
  const int port = server_->http_port();
  const std::string hidden = "GET /v2/models/mlp/stats HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const char* path : {"/v2/nothing/here", "/v2/models/mlp/infer"}) {
    const RawHttpReply reply = RawHttpExchange(
        port, absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: x\r\nContent-Length: ",
                           hidden.size(), "\r\n\r\n", hidden));
    EXPECT_EQ(CountResponses(reply.raw), 1) << path << ": " << reply.raw;
    EXPECT_THAT(reply.raw, Not(HasSubstr("model_stats"))) << path;
  }
  // Two requests one after the other on one connection both get answers:
  // the body read first keeps the connection's framing.
  const std::string index = R"({"ready": true})";
  const RawHttpReply kept = RawHttpExchange(
      port, absl::StrCat("POST /v2/repository/index HTTP/1.1\r\nHost: x\r\nContent-Length: ",
                         index.size(), "\r\n\r\n", index));
  EXPECT_TRUE(absl::StartsWith(kept.raw, "HTTP/1.1 200")) << kept.raw;
  EXPECT_FALSE(kept.closed) << "a well-framed request keeps the connection";
}

// One unauthenticated request of ~200 KB nesting "data" 100k levels deep
// overflowed the stack of the recursive flattening and killed the server
// (Note [JSON nesting depth] in server/http_json.cc).
TEST_F(ServerEndToEnd, HttpDeeplyNestedJsonIs400NamingTheLimit) {
  constexpr int kDepth = 100000;
  const std::string body =
      absl::StrCat(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1,512],"data":)",
                   std::string(kDepth, '['), "1", std::string(kDepth, ']'), "}]}");
  const HttpReply reply = HttpExchange(server_->http_port(), "POST", "/v2/models/mlp/infer", body);
  EXPECT_EQ(reply.code, 400) << reply.body.substr(0, 300);
  EXPECT_THAT(reply.body, HasSubstr("--http-max-json-depth"));
  EXPECT_THAT(reply.body, HasSubstr(absl::StrCat(kDefaultMaxJsonDepth, " levels")));
  ExpectGoodRequestStillServed();
}

TEST(ServerOnSeveralGpus, InstanceGroupGpusEachGetTheirSlots) {
  const std::string repository = WriteTestRepository("instance_group_repository");
  const std::filesystem::path config = std::filesystem::path(repository) / "mlp" / "config.pbtxt";
  const bool two_gpus = CudaDeviceCount() >= 2;
  std::ofstream(config, std::ios::app)
      << "instance_group { kind: KIND_GPU gpus: [0, " << (two_gpus ? 1 : 0) << "] }\n";
  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(TestServerOptions(repository), log);
  ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  if (ExecutorUnderTest() == ExecutorKind::kCuda) {
    EXPECT_THAT(log.str(), HasSubstr(two_gpus ? "CUDA graphs, GPUs 0,1" : "CUDA graphs, GPUs 0,0"))
        << log.str();
    std::cout << "instance_group test on GPUs " << (two_gpus ? "0,1" : "0,0") << "\n";
  }
  auto channel = Connect((*server)->port());
  constexpr int kClients = 8;  // more than the 4 slots
  EXPECT_EQ(WrongAnswersFromClients(
                channel, repository, "mlp", kClients, 4,
                [](int c, int i) -> int64_t { return 1 + (c * 29 + i * 7) % 80; }, 500),
            0);
}

// The config the server answers ModelConfig with (empty on failure, which
// the call reports).
inference::ModelConfig FetchConfig(inference::GRPCInferenceService::Stub& stub,
                                   const std::string& model) {
  grpc::ClientContext context;
  inference::ModelConfigRequest request;
  request.set_name(model);
  inference::ModelConfigResponse response;
  const grpc::Status status = stub.ModelConfig(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.config();
}

inference::ModelMetadataResponse FetchMetadata(inference::GRPCInferenceService::Stub& stub,
                                               const std::string& model) {
  grpc::ClientContext context;
  inference::ModelMetadataRequest request;
  request.set_name(model);
  inference::ModelMetadataResponse response;
  const grpc::Status status = stub.ModelMetadata(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

// Requests of each row count get the host executor's answer.
void ExpectServesRows(inference::GRPCInferenceService::Stub& stub, const std::string& repository,
                      const std::string& model, std::initializer_list<int64_t> row_counts) {
  for (int64_t rows : row_counts) {
    std::unique_ptr<HostExecutor> reference = Reference(repository, model, rows);
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 900 + rows);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status =
        stub.ModelInfer(&context, RawRequest(model, reference->graph(), inputs), &response);
    EXPECT_TRUE(MatchesReference(status, response, *reference, inputs)) << rows << " rows";
  }
}

// A repository written for Triton's onnxruntime backend loads unchanged: the
// fields GraphServe does not act on are named once each in the load log, the
// graph_spec batch sizes are the captured sizes, and every request size is
// served correctly around them.
TEST(ServerWithTritonConfig, ServesATritonRepositoryAndNamesWhatItIgnores) {
  const std::string repository = WriteTestRepository("triton_repository");
  inference::ModelConfig config = ReadConfig(repository, "mlp");
  config.clear_capture();
  config.clear_backend();
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString(R"pb(
    platform: "onnxruntime_onnx"
    instance_group { count: 2 kind: KIND_GPU gpus: [0] host_policy: "gpu_0" }
    dynamic_batching { preferred_batch_size: [8] max_queue_delay_microseconds: 100 }
    optimization {
      cuda {
        graphs: true
        busy_wait_events: true
        graph_spec { batch_size: 16 }
        graph_spec { batch_size: 4 }
      }
    }
    model_warmup { name: "w" batch_size: 1 }
    response_cache { enable: true }
  )pb", &config));
  WriteConfig(repository, "mlp", config);

  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(TestServerOptions(repository), log);
  ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  for (const char* field : {"instance_group.host_policy", "optimization.cuda.busy_wait_events",
                            "model_warmup", "response_cache"}) {
    EXPECT_THAT(log.str(), HasSubstr(absl::StrCat("model 'mlp': config.pbtxt sets ", field,
                                                  ", a Triton field GraphServe accepts and "
                                                  "ignores")));
  }
  EXPECT_THAT(log.str(), ::testing::Not(HasSubstr("sets optimization.cuda.graphs")));
  EXPECT_THAT(log.str(), ::testing::Not(HasSubstr("sets dynamic_batching")));

  auto stub = inference::GRPCInferenceService::NewStub(Connect((*server)->port()));
  const inference::ModelConfig served = FetchConfig(*stub, "mlp");
  EXPECT_EQ(served.platform(), "onnxruntime_onnx");
  EXPECT_THAT(served.capture().batch_sizes(), ::testing::ElementsAre(4, 16));
  EXPECT_FALSE(served.capture().graphs_disabled());
  EXPECT_EQ(served.capture().streams(), 2);  // instance_group count
  // Captured, padded and split sizes.
  ExpectServesRows(*stub, repository, "mlp", {1, 4, 7, 16, 21});
}

// Merges `text` (config.pbtxt syntax) into `model`'s config in `repository`.
void MergeIntoConfig(const std::string& repository, const std::string& model,
                     const std::string& text) {
  inference::ModelConfig config = ReadConfig(repository, model);
  ASSERT_TRUE(google::protobuf::TextFormat::MergeFromString(text, &config)) << text;
  WriteConfig(repository, model, config);
}

// Triton's dynamic_batching: small requests that arrive together run as
// merged chunks, each request's output is the one it gets alone, and the
// statistics count fewer executions than requests.
TEST(ServerWithDynamicBatching, MergedRequestsGetTheirOwnOutputsInFewerExecutions) {
  const std::string repository = WriteTestRepository("batching_repository");
  MergeIntoConfig(repository, "mlp", R"pb(
    capture { streams: 1 }
    dynamic_batching { max_queue_delay_microseconds: 20000 preserve_ordering: true }
  )pb");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->port());
  constexpr int kClients = 12;
  constexpr int kRequestsEach = 4;
  // Each answer is checked against the host executor run on that request
  // alone: its unmerged output.
  EXPECT_EQ(WrongAnswersFromClients(
                channel, repository, "mlp", kClients, kRequestsEach,
                [](int c, int i) -> int64_t { return 1 + (c + i) % 3; }, 700),
            0);

  auto stub = inference::GRPCInferenceService::NewStub(channel);
  const inference::ModelStatistics statistics = FetchStatistics(*stub, "mlp");
  EXPECT_EQ(statistics.inference_stats().success().count(),
            static_cast<uint64_t>(kClients * kRequestsEach));
  EXPECT_LT(statistics.execution_count(), statistics.inference_stats().success().count());
  EXPECT_GT(statistics.execution_count(), 0u);
}

// Requests outstanding together on one stream are merged as concurrent
// calls are: fewer executions than requests, each answer its own.
TEST(ServerWithDynamicBatching, RequestsOnOneStreamAreMerged) {
  const std::string repository = WriteTestRepository("stream_batching_repository");
  MergeIntoConfig(repository, "mlp", R"pb(
    capture { streams: 1 }
    dynamic_batching { max_queue_delay_microseconds: 20000 }
  )pb");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  constexpr int kRequests = 24;
  std::vector<std::unique_ptr<HostExecutor>> references;
  std::vector<std::vector<HostTensor>> inputs;
  std::vector<inference::ModelInferRequest> requests;
  for (int i = 0; i < kRequests; ++i) {
    references.push_back(Reference(repository, "mlp", 1 + i % 3));
    inputs.push_back(RandomInputs(references.back()->graph(), 900 + i));
    requests.push_back(RawRequest("mlp", references.back()->graph(), inputs.back()));
    requests.back().set_id(absl::StrCat(i));
  }
  const StreamOutcome outcome = StreamAll(*stub, requests);
  EXPECT_TRUE(outcome.status.ok()) << outcome.status.error_message();
  ASSERT_EQ(outcome.answers.size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    const inference::ModelStreamInferResponse* answer = outcome.Answer(absl::StrCat(i));
    ASSERT_NE(answer, nullptr) << i;
    EXPECT_EQ(answer->error_message(), "") << i;
    EXPECT_TRUE(MatchesReference(grpc::Status::OK, answer->infer_response(), *references[i],
                                 inputs[i]))
        << "request " << i;
  }
  const inference::ModelStatistics statistics = FetchStatistics(*stub, "mlp");
  EXPECT_EQ(statistics.inference_stats().success().count(), static_cast<uint64_t>(kRequests));
  EXPECT_LT(statistics.execution_count(), statistics.inference_stats().success().count());
}

// A queued request whose timeout passes is answered UNAVAILABLE with
// Triton's message; a full batch goes at once; a request's own shorter
// "timeout" parameter is honoured when the policy allows overrides.
TEST(ServerWithDynamicBatching, QueueTimeoutsAnswerUnavailable) {
  const std::string repository = WriteTestRepository("timeout_repository");
  MergeIntoConfig(repository, "mlp", R"pb(
    dynamic_batching {
      max_queue_delay_microseconds: 2000000
      default_queue_policy { default_timeout_microseconds: 50000 allow_timeout_override: true }
    }
  )pb");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  std::unique_ptr<HostExecutor> one = Reference(repository, "mlp", 1);
  const std::vector<HostTensor> inputs = RandomInputs(one->graph(), 5);

  // One row waits for a fuller batch (2 s) and times out first (50 ms).
  const auto start = std::chrono::steady_clock::now();
  {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status =
        stub->ModelInfer(&context, RawRequest("mlp", one->graph(), inputs), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("Request timeout expired"));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  {
    inference::ModelInferRequest request = RawRequest("mlp", one->graph(), inputs);
    (*request.mutable_parameters())["timeout"].set_int64_param(1000);
    (*request.mutable_parameters())["priority"].set_uint64_param(1);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  }
  {
    inference::ModelInferRequest request = RawRequest("mlp", one->graph(), inputs);
    (*request.mutable_parameters())["timeout"].set_int64_param(-1);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    EXPECT_EQ(stub->ModelInfer(&context, request, &response).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  // The largest captured size fills a batch: no wait, no timeout.
  ExpectServesRows(*stub, repository, "mlp", {kCapturedSizes.back()});
}

// Rewrites `model`'s captured sizes in its config.pbtxt.
void SetCapturedSizes(const std::string& repository, const std::string& model,
                      const std::vector<int64_t>& sizes) {
  inference::ModelConfig config = ReadConfig(repository, model);
  config.mutable_capture()->clear_batch_sizes();
  config.mutable_capture()->clear_cost();
  config.mutable_capture()->clear_schedules();
  for (int64_t size : sizes) config.mutable_capture()->add_batch_sizes(size);
  WriteConfig(repository, model, config);
}

// Loads `model`; with `config`, that configuration (as JSON, Triton's
// `config` load parameter) in place of the repository's config.pbtxt.
grpc::Status LoadModel(inference::GRPCInferenceService::Stub& stub, const std::string& model,
                       const std::optional<inference::ModelConfig>& config = std::nullopt) {
  grpc::ClientContext context;
  inference::RepositoryModelLoadRequest request;
  request.set_model_name(model);
  if (config.has_value()) {
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(*config, &json).ok()) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "the test's config does not convert");
    }
    (*request.mutable_parameters())["config"].set_string_param(json);
  }
  inference::RepositoryModelLoadResponse response;
  return stub.RepositoryModelLoad(&context, request, &response);
}

// A server of `repository` under explicit model control (Triton's
// --model-control-mode=explicit) with mlp loaded at startup.
std::unique_ptr<InferenceServer> StartExplicitControlServer(const std::string& repository) {
  InferenceServerOptions options = TestServerOptions(repository);
  options.model_control = ModelControlMode::kExplicit;
  options.load_models = {"mlp"};
  return StartServer(options);
}

// Triton's explicit model control: the index lists every model, a reload
// with new capture sizes under load fails no request, the new sizes serve,
// an unloaded model is NOT_FOUND; with --model-control-mode=none loads are
// refused.
TEST(ServerModelControl, ReloadUnderLoadFailsNoRequest) {
  const std::string repository = WriteTestRepository("control_repository");
  std::unique_ptr<InferenceServer> server = StartExplicitControlServer(repository);
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->port());
  auto stub = inference::GRPCInferenceService::NewStub(channel);

  {
    grpc::ClientContext context;
    inference::RepositoryIndexResponse index;
    ASSERT_TRUE(stub->RepositoryIndex(&context, {}, &index).ok());
    ASSERT_EQ(index.models_size(), 2);
    EXPECT_EQ(index.models(0).name(), "dlrm_dense");
    EXPECT_EQ(index.models(0).state(), "");  // in the repository, not loaded
    EXPECT_EQ(index.models(1).name(), "mlp");
    EXPECT_EQ(index.models(1).version(), "1");
    EXPECT_EQ(index.models(1).state(), "READY");
  }

  std::atomic<bool> stop{false};
  std::atomic<int> served{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto client = inference::GRPCInferenceService::NewStub(channel);
      for (int i = 0; !stop; ++i) {
        const int64_t rows = 1 + (c * 7 + i * 5) % 20;
        std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", rows);
        const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 300 + c * 1000 + i);
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const grpc::Status status =
            client->ModelInfer(&context, RawRequest("mlp", reference->graph(), inputs), &response);
        if (MatchesReference(status, response, *reference, inputs)) {
          ++served;
        } else {
          ++wrong;
        }
      }
    });
  }
  for (const std::vector<int64_t>& sizes :
       std::vector<std::vector<int64_t>>{{2, 8, 32}, {1, 4, 16, 64}, {3, 12}}) {
    SetCapturedSizes(repository, "mlp", sizes);
    const grpc::Status loaded = LoadModel(*stub, "mlp");
    EXPECT_TRUE(loaded.ok()) << loaded.error_message();
    EXPECT_THAT(FetchConfig(*stub, "mlp").capture().batch_sizes(),
                ::testing::ElementsAreArray(sizes));
  }
  stop = true;
  for (std::thread& client : clients) client.join();
  EXPECT_GT(served.load(), 0);
  EXPECT_EQ(wrong.load(), 0);

  // Load, serve, unload the other model.
  ASSERT_TRUE(LoadModel(*stub, "dlrm_dense").ok());
  ExpectServesRows(*stub, repository, "dlrm_dense", {1, 5});
  {
    grpc::ClientContext context;
    inference::RepositoryModelUnloadRequest request;
    request.set_model_name("dlrm_dense");
    inference::RepositoryModelUnloadResponse response;
    ASSERT_TRUE(stub->RepositoryModelUnload(&context, request, &response).ok());
  }
  {
    std::unique_ptr<HostExecutor> reference = Reference(repository, "dlrm_dense", 1);
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    EXPECT_EQ(stub->ModelInfer(&context, RawRequest("dlrm_dense", reference->graph(), inputs),
                               &response)
                  .error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  // Triton's code and text for a model the repository does not hold.
  const grpc::Status missing = LoadModel(*stub, "no_such_model");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(missing.error_message(),
              ::testing::StartsWith(
                  "failed to load 'no_such_model', failed to poll from model repository"));
}

// --model-control-mode=poll: a changed config is reloaded and a removed
// model unloaded by the repository scan, with no request.
TEST(ServerModelControl, PollFollowsTheRepository) {
  const std::string repository = WriteTestRepository("poll_repository");
  InferenceServerOptions options = TestServerOptions(repository);
  options.model_control = ModelControlMode::kPoll;
  options.repository_poll = std::chrono::seconds(1);
  std::unique_ptr<InferenceServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const std::vector<int64_t> sizes = {2, 8, 32};
  SetCapturedSizes(repository, "mlp", sizes);
  std::filesystem::remove_all(std::filesystem::path(repository) / "dlrm_dense");
  bool reloaded = false, unloaded = false;
  for (int i = 0; i < 100 && !(reloaded && unloaded); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    grpc::ClientContext context;
    inference::ModelConfigRequest request;
    request.set_name("mlp");
    inference::ModelConfigResponse response;
    if (stub->ModelConfig(&context, request, &response).ok()) {
      const auto& served = response.config().capture().batch_sizes();
      reloaded = std::vector<int64_t>(served.begin(), served.end()) == sizes;
    }
    unloaded = server->registry().Find("dlrm_dense", "").status().code() ==
               absl::StatusCode::kNotFound;
  }
  EXPECT_TRUE(reloaded) << "mlp's new capture sizes were not picked up by the poll";
  EXPECT_TRUE(unloaded) << "dlrm_dense left the repository but is still served";
  ExpectServesRows(*stub, repository, "mlp", {1, 5, 40});
  EXPECT_EQ(LoadModel(*stub, "mlp").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

// Triton's "config" load parameter stands for config.pbtxt entirely: a
// broken file on disk is not read, and the override's own version policy
// applies (version 2 exists only as a copy made here; the override serves
// versions 1 and 2, where the default policy, latest 1, would serve 2 alone).
TEST(ServerModelControl, ALoadWithAConfigOverrideIgnoresTheFileOnDisk) {
  const std::string repository = WriteTestRepository("override_repository");
  std::unique_ptr<InferenceServer> server = StartExplicitControlServer(repository);
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));

  inference::ModelConfig config = ReadConfig(repository, "mlp");
  config.mutable_capture()->clear_batch_sizes();
  config.mutable_capture()->clear_cost();
  config.mutable_capture()->clear_schedules();
  config.mutable_capture()->add_batch_sizes(2);
  config.mutable_capture()->add_batch_sizes(8);
  config.mutable_version_policy()->mutable_specific()->add_versions(1);
  config.mutable_version_policy()->mutable_specific()->add_versions(2);
  const std::filesystem::path mlp = std::filesystem::path(repository) / "mlp";
  std::filesystem::copy(mlp / "1", mlp / "2", std::filesystem::copy_options::recursive);
  std::ofstream(mlp / "config.pbtxt") << "this is { not a model configuration";
  {
    // The broken file, read as it is: Triton's leading text.
    const grpc::Status broken = LoadModel(*stub, "mlp");
    EXPECT_EQ(broken.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(broken.error_message(),
                ::testing::StartsWith(
                    "failed to load 'mlp', failed to poll from model repository: "));
  }

  {
    // An override naming another model is refused, its name quoted short.
    inference::ModelConfig other = config;
    other.set_name(std::string(65536, 'x'));
    const grpc::Status refused = LoadModel(*stub, "mlp", other);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(refused.error_message(), HasSubstr("(65536 bytes)"));
    EXPECT_LT(refused.error_message().size(), 400u);
  }
  const grpc::Status loaded = LoadModel(*stub, "mlp", config);
  ASSERT_TRUE(loaded.ok()) << loaded.error_message();
  EXPECT_THAT(FetchConfig(*stub, "mlp").capture().batch_sizes(), ::testing::ElementsAre(2, 8));
  EXPECT_EQ(ModelIsReady(*stub, "mlp", "2"), std::optional<bool>(true));
  EXPECT_EQ(ModelIsReady(*stub, "mlp", "1"), std::optional<bool>(true));
}

// Loads still queued behind the control thread when the server shuts down
// are answered UNAVAILABLE at once, never held open until the port closes
// (CANCELLED) or run through the drain.
TEST(ServerModelControl, ShutdownAnswersQueuedLoadsUnavailable) {
  const std::string repository = WriteTestRepository("control_shutdown_repository");
  InferenceServerOptions options = TestServerOptions(repository);
  options.model_control = ModelControlMode::kExplicit;
  std::unique_ptr<InferenceServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  struct Load {
    grpc::ClientContext context;
    inference::RepositoryModelLoadRequest request;
    inference::RepositoryModelLoadResponse response;
    grpc::Status status;
    std::atomic<bool> done{false};
  };
  constexpr int kLoads = 6;  // one runs; the rest queue behind it
  std::vector<std::unique_ptr<Load>> loads;
  for (int i = 0; i < kLoads; ++i) {
    loads.push_back(std::make_unique<Load>());
    Load* load = loads.back().get();
    load->request.set_model_name(i % 2 == 0 ? "mlp" : "dlrm_dense");
    stub->async()->RepositoryModelLoad(&load->context, &load->request, &load->response,
                                       [load](grpc::Status status) {
                                         load->status = std::move(status);
                                         load->done = true;
                                       });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the first load starts
  EXPECT_TRUE(server->Shutdown().ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int unavailable = 0;
  for (const auto& load : loads) {
    while (!load->done && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(load->done);
    EXPECT_TRUE(load->status.ok() ||
                load->status.error_code() == grpc::StatusCode::UNAVAILABLE)
        << load->status.error_code() << " " << load->status.error_message();
    if (load->status.error_code() == grpc::StatusCode::UNAVAILABLE) ++unavailable;
  }
  EXPECT_GT(unavailable, 0);
}

TEST(ServerModelControl, LoadsAreRefusedWithoutExplicitControl) {
  const std::string repository = WriteTestRepository("no_control_repository");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const grpc::Status refused = LoadModel(*stub, "mlp");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("--model-control-mode"));
}

// Triton's auto-complete: a model directory holding only 1/model.onnx is
// served with the config its model implies, and ModelConfig returns that.
TEST(ServerWithoutConfig, CompletesTheConfigFromTheModel) {
  const std::string repository = WriteTestRepository("autocomplete_repository");
  std::filesystem::remove(std::filesystem::path(repository) / "mlp" / "config.pbtxt");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const inference::ModelConfig config = FetchConfig(*stub, "mlp");
  EXPECT_EQ(config.name(), "mlp");
  EXPECT_EQ(config.max_batch_size(), 4);  // Triton's default-max-batch-size
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), "x");
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(config.input(0).dims(), ::testing::ElementsAre(512));
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_THAT(config.output(0).dims(), ::testing::ElementsAre(1));
  EXPECT_THAT(config.capture().batch_sizes(), ::testing::ElementsAre(1, 2, 4));
  ExpectServesRows(*stub, repository, "mlp", {1, 3, 4});
}

// Triton's reshape: with x declared as dims [2, 256] reshaped to the model's
// [512], and y as dims [1, 1] reshaped to the model's [1], clients send
// [b, 2, 256] rows, see [b, 1, 1] outputs, and get what [b, 512] rows give the
// model; the model's own shape is no longer what clients send.
TEST(ServerWithReshape, ClientsUseDimsAndGetTheModelsOutputs) {
  const std::string repository = WriteTestRepository("reshape_repository");
  inference::ModelConfig config = ReadConfig(repository, "mlp");
  ASSERT_EQ(config.input_size(), 1);
  ASSERT_EQ(config.output_size(), 1);
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(name: "x" data_type: TYPE_FP32 dims: [ 2, 256 ] reshape { shape: [ 512 ] })pb",
      config.mutable_input(0)));
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(name: "y" data_type: TYPE_FP32 dims: [ 1, 1 ] reshape { shape: [ 1 ] })pb",
      config.mutable_output(0)));
  WriteConfig(repository, "mlp", config);

  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(TestServerOptions(repository), log);
  ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  EXPECT_THAT(log.str(), ::testing::Not(HasSubstr("put.reshape")));  // not named as ignored
  auto stub = inference::GRPCInferenceService::NewStub(Connect((*server)->port()));
  {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name("mlp");
    inference::ModelMetadataResponse metadata;
    ASSERT_TRUE(stub->ModelMetadata(&context, request, &metadata).ok());
    ASSERT_EQ(metadata.inputs_size(), 1);
    EXPECT_THAT(metadata.inputs(0).shape(), ::testing::ElementsAre(-1, 2, 256));
    ASSERT_EQ(metadata.outputs_size(), 1);
    EXPECT_THAT(metadata.outputs(0).shape(), ::testing::ElementsAre(-1, 1, 1));
  }
  for (int64_t rows : {1, 3, 7}) {
    std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", rows);
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1200 + rows);
    inference::ModelInferRequest request = RawRequest("mlp", reference->graph(), inputs);
    request.mutable_inputs(0)->clear_shape();
    for (int64_t dim : {rows, int64_t{2}, int64_t{256}}) request.mutable_inputs(0)->add_shape(dim);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(&context, request, &response);
    EXPECT_TRUE(MatchesReference(status, response, *reference, inputs))
        << rows << " rows: " << status.error_message();
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(rows, 1, 1));
  }
  // The model's shape is not the clients': [b, 512] is refused, naming the dims.
  std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", 2);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  const grpc::Status refused = stub->ModelInfer(
      &context, RawRequest("mlp", reference->graph(), RandomInputs(reference->graph(), 7)),
      &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("[-1,2,256]"));
}

// Triton's max_batch_size 0 (issue 27 part 5): the dims are the full shape,
// clients send and get it without a batch dim, and metadata shows no -1.
TEST(ServerWithTritonConfig, MaxBatchSizeZeroServesTheFullShape) {
  const std::string repository = WriteTestRepository("no_batch_repository");
  inference::ModelConfig config = ReadConfig(repository, "mlp");
  config.set_max_batch_size(0);
  config.clear_capture();
  config.clear_dynamic_batching();
  for (auto* tensor : {config.mutable_input(0)->mutable_dims(),
                       config.mutable_output(0)->mutable_dims()}) {
    tensor->Add(0);  // the model's dim 0, fixed at 1: a leading 1 in the full shape
    for (int d = tensor->size() - 1; d > 0; --d) tensor->SwapElements(d, d - 1);
    tensor->Set(0, 1);
  }
  WriteConfig(repository, "mlp", config);

  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(TestServerOptions(repository), log);
  ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  auto stub = inference::GRPCInferenceService::NewStub(Connect((*server)->port()));
  {
    grpc::ClientContext context;
    inference::ModelMetadataRequest request;
    request.set_name("mlp");
    inference::ModelMetadataResponse metadata;
    ASSERT_TRUE(stub->ModelMetadata(&context, request, &metadata).ok());
    EXPECT_THAT(metadata.inputs(0).shape(), ::testing::ElementsAre(1, 512));
  }
  std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", 1);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1400);
  {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status =
        stub->ModelInfer(&context, RawRequest("mlp", reference->graph(), inputs), &response);
    EXPECT_TRUE(MatchesReference(status, response, *reference, inputs)) << status.error_message();
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(1, 1));
  }
  // A batch of the shape is not a shape of the model: refused, naming it.
  std::unique_ptr<HostExecutor> two_rows = Reference(repository, "mlp", 2);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  const grpc::Status refused = stub->ModelInfer(
      &context, RawRequest("mlp", two_rows->graph(), RandomInputs(two_rows->graph(), 9)),
      &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("unexpected shape for input 'x' for model 'mlp'. Expected [1,512], got "
                        "[2,512] (the model does not batch)"));
}

// A model with a dynamic sequence dim (Note [Shape dims]) is served at the
// extent config.pbtxt gives it, on both executors; left -1 there without
// capture buckets, it is served at the default buckets, here at their
// extents only (its softmax over the sequence sees padding).
TEST(ServerWithShapeDims, ServesTheExtentTheConfigFixesOrTheDefaultBuckets) {
  const std::string repository = WriteTestRepository("shape_dims_repository");
  const auto write_model = [&](const std::string& name, int64_t sequence) {
    const std::filesystem::path dir = std::filesystem::path(repository) / name;
    std::filesystem::create_directories(dir / "1");
    std::ofstream(dir / "1" / "model.onnx", std::ios::binary)
        << MakeSequenceSoftmaxModel().SerializeAsString();
    std::ofstream(dir / "config.pbtxt") << absl::StrCat(
        "name: \"", name, "\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n",
        "input [{ name: \"x\" data_type: TYPE_FP32 dims: [ ", sequence, ", 16 ] }]\n",
        "output [{ name: \"y\" data_type: TYPE_FP32 dims: [ ", sequence, ", 16 ] }]\n",
        "capture { batch_sizes: [ 1, 4, 8 ] }\n");
  };
  write_model("sequence_32", 32);
  write_model("sequence_open", -1);

  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const auto infer = [&](const std::string& model, int64_t rows, int64_t sequence) {
    std::unique_ptr<HostExecutor> reference = Reference(repository, model, rows, {sequence});
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1500 + rows);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status =
        stub->ModelInfer(&context, RawRequest(model, reference->graph(), inputs), &response);
    EXPECT_TRUE(!status.ok() || MatchesReference(status, response, *reference, inputs))
        << model << ", " << rows << " rows of " << sequence;
    return status;
  };
  for (int64_t rows : {1, 3, 8}) {
    EXPECT_TRUE(infer("sequence_32", rows, 32).ok()) << rows << " rows";
  }
  EXPECT_TRUE(infer("sequence_open", 2, 16).ok());
  EXPECT_TRUE(infer("sequence_open", 1, 512).ok());
  const grpc::Status refused = infer("sequence_open", 1, 20);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("at exactly the extents of its buckets [16] [32] [64] [128] [256] [512]"));
}

// Writes <repository>/<name>: the masked sequence model (x and its mask) or
// the softmax over the sequence (x only), the sequence -1, the config ending
// in `rest` (its dynamic batching and capture section).
void WriteSequenceModel(const std::string& repository, const std::string& name,
                        const onnx::ModelProto& model, bool masked, const std::string& rest) {
  const std::filesystem::path dir = std::filesystem::path(repository) / name;
  std::filesystem::create_directories(dir / "1");
  std::ofstream(dir / "1" / "model.onnx", std::ios::binary) << model.SerializeAsString();
  std::ofstream(dir / "config.pbtxt") << absl::StrCat(
      "name: \"", name, "\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n",
      "input [{ name: \"x\" data_type: TYPE_FP32 dims: [ -1, 16 ] }",
      masked ? ", { name: \"mask\" data_type: TYPE_INT64 dims: [ -1 ] }" : "", "]\n",
      "output [{ name: \"y\" data_type: TYPE_FP32 dims: [ -1, 16 ] }]\n", rest);
}

// Random features for a model WriteSequenceModel wrote; every real
// position's mask 1.
std::vector<HostTensor> SequenceInputs(const HostExecutor& reference, uint64_t seed) {
  std::vector<HostTensor> inputs = RandomInputs(reference.graph(), seed);
  if (inputs.size() > 1) {
    std::fill_n(inputs[1].data<int64_t>(), inputs[1].num_elements(), int64_t{1});
  }
  return inputs;
}

// Sends `rows` rows of `length` (SequenceInputs) to a model
// WriteSequenceModel wrote: the status, and whether the answer is the host
// reference's at that exact length, `length` long.
std::pair<grpc::Status, bool> InferSequence(inference::GRPCInferenceService::Stub& stub,
                                            const std::string& repository, const std::string& model,
                                            int64_t rows, int64_t length, uint64_t seed) {
  std::unique_ptr<HostExecutor> reference = Reference(repository, model, rows, {length});
  const std::vector<HostTensor> inputs = SequenceInputs(*reference, seed);
  grpc::ClientContext context;
  inference::ModelInferResponse response;
  const grpc::Status status =
      stub.ModelInfer(&context, RawRequest(model, reference->graph(), inputs), &response);
  const bool right = MatchesReference(status, response, *reference, inputs);
  if (status.ok()) {
    EXPECT_EQ(response.outputs(0).shape(1), length) << model << " at " << length;
  }
  return {status, right};
}

// Note [Shape buckets]: models whose config gives the sequence as -1,
// captured at buckets 8 and 32. The masked model pads exactly, so a request
// of any length up to 32 runs in the smallest bucket that holds it, its
// answer sliced to its length, and requests of different lengths merge into
// one chunk; each answer is the host reference's at the request's exact
// length. The softmax over the sequence sees its padding: the check at load
// finds it, and that model takes the buckets' lengths only.
TEST(ServerWithShapeBuckets, PadsRequestsIntoBucketsWhereExactAndMergesLengths) {
  const std::string repository = WriteTestRepository("shape_buckets_repository");
  const std::string rest =
      "dynamic_batching { max_queue_delay_microseconds: 300000 }\n"
      "capture { batch_sizes: [ 1, 4, 8 ] shape_dims: \"sequence\" "
      "buckets { extents: 32 } buckets { extents: 8 } }\n";
  WriteSequenceModel(repository, "masked", MakeMaskedSequenceModel(), true, rest);
  WriteSequenceModel(repository, "softmax", MakeSequenceSoftmaxModel(), false, rest);

  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const auto infer = [&](const std::string& model, int64_t rows, int64_t length, uint64_t seed) {
    return InferSequence(*stub, repository, model, rows, length, seed);
  };
  for (const auto& [rows, length] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 5}, {3, 8}, {2, 9}, {1, 20}, {5, 32}, {8, 1}}) {
    const auto [status, right] = infer("masked", rows, length, 1600 + length);
    EXPECT_TRUE(right) << rows << " rows of " << length << ": " << status.error_message();
  }

  // Four lengths at once merge into one chunk of bucket 32.
  const inference::ModelStatistics before = FetchStatistics(*stub, "masked");
  std::vector<std::thread> clients;
  std::atomic<int> right_answers{0};
  for (int64_t length : {3, 7, 20, 30}) {
    clients.emplace_back([&, length] {
      if (infer("masked", 1, length, 1700 + length).second) ++right_answers;
    });
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(right_answers.load(), 4);
  const inference::ModelStatistics after = FetchStatistics(*stub, "masked");
  EXPECT_EQ(after.inference_count() - before.inference_count(), 4);
  EXPECT_LT(after.execution_count() - before.execution_count(), 4u)
      << "requests of different lengths should merge";
  // /metrics counts launches per (size, bucket) and the padding positions
  // the buckets cost.
  const HttpReply metrics = HttpExchange(server->metrics_port(), "GET", "/metrics");
  EXPECT_THAT(metrics.body, HasSubstr("graphserve_graph_launches_total{model=\"masked\",version="
                                      "\"1\",batch_size=\"8\",bucket=\"32\",stream="));
  EXPECT_THAT(metrics.body, HasSubstr("bucket=\"8\""));
  EXPECT_THAT(metrics.body, HasSubstr("graphserve_padded_positions_total{model=\"masked\""));
  // The lengths of the ten requests answered (5, 8, 9, 20, 32, 1, then 3, 7,
  // 20, 30) in the live length histogram, bounds every 8 up to bucket 32
  // (Note [Live length histogram] in server/model_counters.h).
  for (const auto& [le, count] :
       {std::pair{"8", 5}, std::pair{"16", 6}, std::pair{"24", 8}, std::pair{"32", 10}}) {
    EXPECT_THAT(metrics.body,
                HasSubstr(absl::StrCat("graphserve_request_length_bucket{model=\"masked\","
                                       "version=\"1\",le=\"",
                                       le, "\"} ", count, "\n")));
  }

  // Longer than the largest bucket, and inputs that disagree on the length.
  const auto [too_long, unused] = infer("masked", 1, 33, 1800);
  EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_long.error_message(), HasSubstr("the model takes 1 to 32"));
  {
    std::unique_ptr<HostExecutor> reference = Reference(repository, "masked", 1, {6});
    inference::ModelInferRequest request =
        RawRequest("masked", reference->graph(), SequenceInputs(*reference, 1801));
    request.mutable_inputs(1)->set_shape(1, 7);
    request.mutable_raw_input_contents(1)->append(std::string(sizeof(int64_t), '\1'));
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("share the model's dim 'sequence' but have 6 and 7"));
  }

  // The softmax over the sequence: the buckets' lengths only.
  for (int64_t length : {8, 32}) {
    const auto [status, right] = infer("softmax", 2, length, 1900 + length);
    EXPECT_TRUE(right) << length << ": " << status.error_message();
  }
  const auto [padded, wrong] = infer("softmax", 1, 5, 1905);
  EXPECT_EQ(padded.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(padded.error_message(),
              HasSubstr("takes its dims [sequence] at exactly the extents of its buckets [8] [32], "
                        "but the request has [5]"));

  // On a GPU the planner's costs were timed per graph: every size at each
  // bucket (Note [Planning by total cost]); the host plans by padding.
  const inference::ModelConfig served = FetchConfig(*stub, "masked");
  std::vector<std::pair<int64_t, std::vector<int64_t>>> timed;
  for (const inference::CaptureCost& cost : served.capture().cost()) {
    EXPECT_GT(cost.graph_us(), 0);
    timed.push_back({cost.batch_size(), {cost.bucket().begin(), cost.bucket().end()}});
  }
  if (ExecutorUnderTest() == ExecutorKind::kCuda) {
    EXPECT_THAT(timed, ::testing::UnorderedElementsAreArray(
                           std::vector<std::pair<int64_t, std::vector<int64_t>>>{
                               {1, {8}}, {4, {8}}, {8, {8}}, {1, {32}}, {4, {32}}, {8, {32}}}));
  } else {
    EXPECT_THAT(timed, ::testing::IsEmpty());
  }

  // Clients see the open dim as -1.
  const inference::ModelMetadataResponse metadata = FetchMetadata(*stub, "masked");
  ASSERT_GE(metadata.inputs_size(), 1);
  ASSERT_EQ(metadata.outputs_size(), 1);
  EXPECT_THAT(metadata.inputs(0).shape(), ::testing::ElementsAre(-1, -1, 16));
  EXPECT_THAT(metadata.outputs(0).shape(), ::testing::ElementsAre(-1, -1, 16));
}

// Note [Eager fallback]: with capture.eager_extents, what no bucket takes
// runs at its own extents: the masked model past its largest bucket, the
// softmax (which sees its padding) between its buckets. Each answer is the
// host reference's at the request's exact extents; past the eager extents a
// request is refused naming them, and the eager runs count as successes.
TEST(ServerWithShapeBuckets, RunsWhatNoBucketTakesEagerlyWithinEagerExtents) {
  const std::string repository = WriteTestRepository("eager_fallback_repository");
  const std::string rest =
      "capture { batch_sizes: [ 1, 4 ] shape_dims: \"sequence\" "
      "buckets { extents: 8 } buckets { extents: 32 } eager_extents: 48 }\n";
  WriteSequenceModel(repository, "masked", MakeMaskedSequenceModel(), true, rest);
  WriteSequenceModel(repository, "softmax", MakeSequenceSoftmaxModel(), false, rest);
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  const auto infer = [&](const std::string& model, int64_t rows, int64_t length, uint64_t seed) {
    return InferSequence(*stub, repository, model, rows, length, seed);
  };
  const inference::ModelStatistics before = FetchStatistics(*stub, "masked");
  for (const auto& [rows, length] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 40}, {3, 33}, {1, 40}, {2, 48}, {2, 20}}) {
    const auto [status, right] = infer("masked", rows, length, 2000 + length);
    EXPECT_TRUE(right) << rows << " rows of " << length << ": " << status.error_message();
  }
  const inference::ModelStatistics after = FetchStatistics(*stub, "masked");
  EXPECT_EQ(after.inference_stats().success().count() - before.inference_stats().success().count(),
            5u);
  EXPECT_EQ(after.execution_count() - before.execution_count(), 5u);
  for (const auto& [rows, length] :
       std::vector<std::pair<int64_t, int64_t>>{{2, 5}, {1, 20}, {4, 8}, {1, 40}, {1, 20}}) {
    const auto [status, right] = infer("softmax", rows, length, 2100 + length);
    EXPECT_TRUE(right) << rows << " rows of " << length << ": " << status.error_message();
  }
  const auto [too_long, unused] = infer("masked", 1, 49, 2200);
  EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_long.error_message(), HasSubstr("the model takes 1 to 48"));
}

// Note [Models without a batch dim]: max_batch_size 0 with dims [-1, -1, 16]
// (Triton's non-batching model whose requests choose every dynamic dim):
// dim 0 is a shape dim like the sequence, served at the default buckets
// (16, 32, ... 512 in both). The masked model pads exactly in both dims, so
// requests of any shape inside the largest bucket are answered, each as its
// own execution, like the host reference at the request's exact shape; the
// softmax over the sequence sees padding and takes the buckets' extents
// only. Shapes of the wrong rank or with a fixed dim wrong are refused
// naming the shape the model takes.
TEST(ServerWithoutBatchDim, RequestsChooseTheDynamicDimsInsideTheBuckets) {
  const std::string repository = WriteTestRepository("no_batch_dim_repository");
  const auto write_model = [&](const std::string& name, const onnx::ModelProto& model,
                               bool masked) {
    const std::filesystem::path dir = std::filesystem::path(repository) / name;
    std::filesystem::create_directories(dir / "1");
    std::ofstream(dir / "1" / "model.onnx", std::ios::binary) << model.SerializeAsString();
    std::ofstream(dir / "config.pbtxt") << absl::StrCat(
        "name: \"", name, "\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 0\n",
        "input [{ name: \"x\" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] }",
        masked ? ", { name: \"mask\" data_type: TYPE_INT64 dims: [ -1, -1 ] }" : "", "]\n",
        "output [{ name: \"y\" data_type: TYPE_FP32 dims: [ -1, -1, 16 ] }]\n");
  };
  write_model("masked", MakeMaskedSequenceModel(), true);
  write_model("softmax", MakeSequenceSoftmaxModel(), false);

  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  // The request [n, length, 16] (and its mask, every position real), and
  // the reference: the model bound at exactly that shape.
  const auto infer = [&](const std::string& model, int64_t n, int64_t length, uint64_t seed) {
    std::unique_ptr<HostExecutor> reference = Reference(repository, model, n, {length});
    std::vector<HostTensor> inputs = RandomInputs(reference->graph(), seed);
    if (inputs.size() > 1) {
      std::fill_n(inputs[1].data<int64_t>(), inputs[1].num_elements(), int64_t{1});
    }
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status =
        stub->ModelInfer(&context, RawRequest(model, reference->graph(), inputs), &response);
    const bool right = MatchesReference(status, response, *reference, inputs);
    if (status.ok()) {
      EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(n, length, 16))
          << model << " at [" << n << "," << length << ",16]";
    }
    return std::make_pair(status, right);
  };

  // Three shapes, each padded into its own bucket ([16,16], [32,32], [64,64]).
  const inference::ModelStatistics before = FetchStatistics(*stub, "masked");
  for (const auto& [n, length] :
       std::vector<std::pair<int64_t, int64_t>>{{2, 5}, {3, 20}, {40, 1}}) {
    const auto [status, right] = infer("masked", n, length, 2100 + n);
    EXPECT_TRUE(right) << "[" << n << "," << length << ",16]: " << status.error_message();
  }
  const inference::ModelStatistics after = FetchStatistics(*stub, "masked");
  EXPECT_EQ(after.inference_count() - before.inference_count(), 3);
  EXPECT_EQ(after.execution_count() - before.execution_count(), 3u);

  // Past the largest bucket: refused, naming the dim and the range.
  const auto [too_long, unused] = infer("masked", 1, 513, 2200);
  EXPECT_EQ(too_long.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(too_long.error_message(),
              HasSubstr("has 513 in dim 1 (the model's dim 'sequence'); the model takes 1 to 512"));

  // The softmax sees its padding: a bucket's extents only.
  const auto [exact, right] = infer("softmax", 32, 32, 2300);
  EXPECT_TRUE(right) << exact.error_message();
  const auto [padded, wrong] = infer("softmax", 2, 5, 2301);
  EXPECT_EQ(padded.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(padded.error_message(),
              HasSubstr("takes its dims [batch,sequence] at exactly the extents of its buckets"));

  // Bad shapes: the wrong rank, then a fixed dim wrong.
  std::unique_ptr<HostExecutor> reference = Reference(repository, "softmax", 16, {16});
  const auto refused = [&](const std::vector<int64_t>& shape) {
    inference::ModelInferRequest request =
        RawRequest("softmax", reference->graph(), RandomInputs(reference->graph(), 2400));
    request.mutable_inputs(0)->clear_shape();
    int64_t elements = 1;
    for (int64_t dim : shape) {
      request.mutable_inputs(0)->add_shape(dim);
      elements *= dim;
    }
    request.mutable_raw_input_contents(0)->resize(static_cast<size_t>(elements) * sizeof(float));
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    return stub->ModelInfer(&context, request, &response);
  };
  const grpc::Status rank = refused({16, 256});
  EXPECT_EQ(rank.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(rank.error_message(),
              HasSubstr("unexpected shape for input 'x' for model 'softmax'. Expected "
                        "[-1,-1,16], got [16,256] (the model does not batch)"));
  const grpc::Status fixed = refused({16, 16, 8});
  EXPECT_EQ(fixed.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(fixed.error_message(),
              HasSubstr("unexpected shape for input 'x' for model 'softmax'. Expected "
                        "[16,16,16], got [16,16,8] (the model does not batch)"));

  // Clients see every dynamic dim as -1, with no batch dim in front.
  const inference::ModelMetadataResponse metadata = FetchMetadata(*stub, "masked");
  ASSERT_EQ(metadata.inputs_size(), 2);
  ASSERT_EQ(metadata.outputs_size(), 1);
  EXPECT_THAT(metadata.inputs(0).shape(), ::testing::ElementsAre(-1, -1, 16));
  EXPECT_THAT(metadata.inputs(1).shape(), ::testing::ElementsAre(-1, -1));
  EXPECT_THAT(metadata.outputs(0).shape(), ::testing::ElementsAre(-1, -1, 16));
}

// What Triton's classification extension answers for one row of `values`:
// the top `k` by value, ties lower index first, "<value>:<index>[:<label>]"
// with std::to_string's value (Note [Classification]), computed here from
// the values the server returned unclassified.
std::vector<std::string> ExpectedClasses(const float* values, size_t count, size_t k,
                                         const std::vector<std::string>& labels) {
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [values](size_t a, size_t b) { return values[a] > values[b]; });
  std::vector<std::string> classes;
  for (size_t rank = 0; rank < std::min(k, count); ++rank) {
    const size_t index = order[rank];
    std::string text = absl::StrCat(std::to_string(values[index]), ":", index);
    if (index < labels.size() && !labels[index].empty()) absl::StrAppend(&text, ":", labels[index]);
    classes.push_back(std::move(text));
  }
  return classes;
}

// The strings of a BYTES tensor's serialization (4-byte little-endian lengths).
std::vector<std::string> BytesElements(const std::string& bytes) {
  std::vector<std::string> elements;
  for (size_t at = 0; at + 4 <= bytes.size();) {
    uint32_t length = 0;
    std::memcpy(&length, bytes.data() + at, 4);
    elements.push_back(bytes.substr(at + 4, length));
    at += 4 + length;
  }
  return elements;
}

// Triton's classification extension (issue 27 part 5) on a softmax model of
// sequence x 16 classes a row, over gRPC and HTTP (JSON and binary): each
// row's top k of the values the same request returns unclassified, labelled
// from label_filename (40 labels, one line empty: the rest go without), for a
// batching model (sequence 4: 64 classes) and one with max_batch_size 0
// (sequence 1, which such a model is bound at: 16); k past the classes gives
// them all.
TEST(ServerWithClassification, TopClassesOfTheUnclassifiedOutputOverGrpcAndHttp) {
  constexpr int kLabels = 40;      // fewer than the classes: the rest unlabelled
  constexpr int kEmptyLabel = 3;   // an empty line labels nothing
  const std::string repository = WriteTestRepository("classification_repository");
  std::vector<std::string> labels;
  for (int i = 0; i < kLabels; ++i) labels.push_back(i == kEmptyLabel ? "" : absl::StrCat("class ", i));
  const auto write_model = [&](const std::string& name, bool batching, int64_t sequence) {
    const std::filesystem::path dir = std::filesystem::path(repository) / name;
    std::filesystem::create_directories(dir / "1");
    std::ofstream(dir / "1" / "model.onnx", std::ios::binary)
        << MakeSequenceSoftmaxModel().SerializeAsString();
    std::ofstream label_file(dir / "labels.txt");
    for (const std::string& label : labels) label_file << label << "\n";
    const std::string dims = absl::StrCat(batching ? "" : "1, ", sequence, ", 16");
    std::ofstream(dir / "config.pbtxt") << absl::StrCat(
        "name: \"", name, "\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: ",
        batching ? 8 : 0, "\ninput [{ name: \"x\" data_type: TYPE_FP32 dims: [ ", dims, " ] }]\n",
        "output [{ name: \"y\" data_type: TYPE_FP32 dims: [ ", dims,
        " ] label_filename: \"labels.txt\" }]\n", batching ? "capture { batch_sizes: [ 1, 4, 8 ] }\n" : "");
  };
  write_model("classifier", /*batching=*/true, /*sequence=*/4);
  write_model("classifier_one", /*batching=*/false, /*sequence=*/1);
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));

  struct Case {
    std::string model;
    int64_t rows;
    int64_t k;
  };
  for (const Case& c : {Case{"classifier", 1, 5}, Case{"classifier", 3, 1},
                        Case{"classifier", 8, 3}, Case{"classifier", 2, 100},
                        Case{"classifier_one", 1, 4}, Case{"classifier_one", 1, 20}}) {
    const bool batching = c.model == "classifier";
    const int64_t sequence = batching ? 4 : 1;
    const size_t classes_per_row = static_cast<size_t>(sequence) * 16;
    SCOPED_TRACE(absl::StrCat(c.model, ", ", c.rows, " rows, k ", c.k));
    std::unique_ptr<HostExecutor> reference = Reference(repository, c.model, c.rows, {sequence});
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1900 + c.rows);
    inference::ModelInferRequest request = RawRequest(c.model, reference->graph(), inputs);
    request.add_outputs()->set_name("y");
    inference::ModelInferResponse values;
    {
      grpc::ClientContext context;
      const grpc::Status status = stub->ModelInfer(&context, request, &values);
      ASSERT_TRUE(MatchesReference(status, values, *reference, inputs)) << status.error_message();
    }
    const auto* y = reinterpret_cast<const float*>(values.raw_output_contents(0).data());
    std::vector<std::string> want;
    for (int64_t row = 0; row < c.rows; ++row) {
      for (std::string& text :
           ExpectedClasses(y + row * classes_per_row, classes_per_row, c.k, labels)) {
        want.push_back(std::move(text));
      }
    }
    const int64_t n = std::min<int64_t>(c.k, static_cast<int64_t>(classes_per_row));
    const std::vector<int64_t> want_shape =
        batching ? std::vector<int64_t>{c.rows, n} : std::vector<int64_t>{n};

    // gRPC: a BYTES tensor in raw_output_contents.
    (*request.mutable_outputs(0)->mutable_parameters())["classification"].set_int64_param(c.k);
    inference::ModelInferResponse classified;
    grpc::ClientContext context;
    const grpc::Status status = stub->ModelInfer(&context, request, &classified);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(classified.outputs_size(), 1);
    EXPECT_EQ(classified.outputs(0).datatype(), "BYTES");
    EXPECT_EQ(std::vector<int64_t>(classified.outputs(0).shape().begin(),
                                   classified.outputs(0).shape().end()),
              want_shape);
    EXPECT_EQ(BytesElements(classified.raw_output_contents(0)), want);

    // HTTP: strings in JSON, the same serialization as binary data.
    const HostTensor& x = inputs[0];
    std::vector<int64_t> x_shape = x.dims();
    nlohmann::json body = {
        {"inputs",
         {{{"name", "x"},
           {"datatype", "FP32"},
           {"shape", x_shape},
           {"data", std::vector<float>(x.data<float>(), x.data<float>() + x.num_elements())}}}},
        {"outputs", {{{"name", "y"}, {"parameters", {{"classification", c.k}}}}}}};
    const std::string path = absl::StrCat("/v2/models/", c.model, "/infer");
    HttpReply reply = HttpExchange(server->http_port(), "POST", path, body.dump());
    ASSERT_EQ(reply.code, 200) << reply.body;
    const nlohmann::json answer = nlohmann::json::parse(reply.body);
    EXPECT_EQ(answer["outputs"][0]["datatype"], "BYTES");
    EXPECT_EQ(answer["outputs"][0]["shape"], nlohmann::json(want_shape));
    EXPECT_EQ(answer["outputs"][0]["data"].get<std::vector<std::string>>(), want);

    body["outputs"][0]["parameters"]["binary_data"] = true;
    reply = HttpExchange(server->http_port(), "POST", path, body.dump());
    ASSERT_EQ(reply.code, 200) << reply.body;
    const std::string serialized = classified.raw_output_contents(0);
    ASSERT_GE(reply.body.size(), serialized.size());
    EXPECT_EQ(reply.body.substr(reply.body.size() - serialized.size()), serialized);
  }

  // ServerMetadata names the extension, as Triton's does.
  grpc::ClientContext context;
  inference::ServerMetadataResponse metadata;
  ASSERT_TRUE(stub->ServerMetadata(&context, {}, &metadata).ok());
  EXPECT_THAT(metadata.extensions(), ::testing::Contains("classification"));
}

// Triton matches config.pbtxt's inputs to the model's by name (issue 27 part
// 5): dlrm_dense's two inputs declared in the other order serve the same
// answers.
TEST(ServerWithTritonConfig, InputsInAnotherOrderAreMatchedByName) {
  const std::string repository = WriteTestRepository("input_order_repository");
  inference::ModelConfig config = ReadConfig(repository, "dlrm_dense");
  ASSERT_EQ(config.input_size(), 2);
  config.mutable_input()->SwapElements(0, 1);
  WriteConfig(repository, "dlrm_dense", config);

  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(TestServerOptions(repository), log);
  ASSERT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  auto stub = inference::GRPCInferenceService::NewStub(Connect((*server)->port()));
  for (int64_t rows : {1, 5}) {
    std::unique_ptr<HostExecutor> reference = Reference(repository, "dlrm_dense", rows);
    const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 1300 + rows);
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const grpc::Status status = stub->ModelInfer(
        &context, RawRequest("dlrm_dense", reference->graph(), inputs), &response);
    EXPECT_TRUE(MatchesReference(status, response, *reference, inputs))
        << rows << " rows: " << status.error_message();
  }
}

// Note [Inputs with defaults] in runtime/ir.h: a batching model whose input
// `bias` has a default, declared `optional: true` as Triton's
// qa/L0_initializer_as_input declares it. Clients send it or leave it out
// at once, their rows merge into shared executions (one stream, a queue
// delay), and each answer is the host executor's on that request alone:
// with the bias sent, or with the model file's default.
TEST(ServerWithOptionalInput, RequestsWithAndWithoutItMergeAndGetTheirOwnAnswers) {
  const std::string repository = TempDir("optional_input_repository");
  std::filesystem::remove_all(repository);
  const std::filesystem::path dir = std::filesystem::path(repository) / "biased";
  std::filesystem::create_directories(dir / "1");
  std::ofstream(dir / "1" / "model.onnx", std::ios::binary)
      << MakeInputWithDefaultModel().SerializeAsString();
  std::ofstream(dir / "config.pbtxt") << R"pb(
    platform: "onnxruntime_onnx"
    max_batch_size: 8
    input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] }
    input { name: "bias" data_type: TYPE_FP32 dims: [ 16 ] optional: true }
    output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }
    dynamic_batching { max_queue_delay_microseconds: 20000 }
    capture { streams: 1 batch_sizes: [ 1, 8 ] }
  )pb";
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto channel = Connect(server->port());
  auto stub = inference::GRPCInferenceService::NewStub(channel);

  // The references: the model with `bias` an input, and with it folded
  // (the file read as no config declares it).
  ModelPassOptions declaring;
  declaring.declared_inputs = {"x", "bias"};
  constexpr int kClients = 8;  // half send the bias
  constexpr int kRequestsEach = 3;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = inference::GRPCInferenceService::NewStub(channel);
      const bool sends_bias = c % 2 == 0;
      for (int i = 0; i < kRequestsEach; ++i) {
        const int64_t rows = 1 + (c + i) % 3;
        std::unique_ptr<HostExecutor> reference =
            Reference(repository, "biased", rows, {}, sends_bias ? declaring : ModelPassOptions{});
        const std::vector<HostTensor> inputs =
            RandomInputs(reference->graph(), 3100 + static_cast<uint64_t>(c * 10 + i));
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const grpc::Status status = client->ModelInfer(
            &context, RawRequest("biased", reference->graph(), inputs), &response);
        if (!MatchesReference(status, response, *reference, inputs)) {
          ++wrong;
          ADD_FAILURE() << "client " << c << " request " << i << ": " << status.error_message();
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  const inference::ModelStatistics statistics = FetchStatistics(*stub, "biased");
  EXPECT_EQ(statistics.inference_stats().success().count(),
            static_cast<uint64_t>(kClients * kRequestsEach));
  EXPECT_LT(statistics.execution_count(), statistics.inference_stats().success().count());

  // Clients see it as an input, and the config as written.
  const inference::ModelMetadataResponse metadata = FetchMetadata(*stub, "biased");
  ASSERT_EQ(metadata.inputs_size(), 2);
  EXPECT_EQ(metadata.inputs(1).name(), "bias");
  EXPECT_THAT(metadata.inputs(1).shape(), ::testing::ElementsAre(-1, 16));
  const inference::ModelConfig config = FetchConfig(*stub, "biased");
  ASSERT_EQ(config.input_size(), 2);
  EXPECT_TRUE(config.input(1).optional());
}

// --reuse-grpc-port and --reuse-http-port on both servers: the second one
// serves on the first one's ports, as Triton allows.
TEST(ServerListen, ReusePortFlagsLetTwoServersShareThePorts) {
  const std::string repository = WriteTestRepository("reuse_repository");
  InferenceServerOptions options = TestServerOptions(repository);
  options.reuse_grpc_port = true;
  options.reuse_http_port = true;
  options.allow_metrics = false;  // the metrics port is never shared
  std::unique_ptr<InferenceServer> first = StartServer(options);
  ASSERT_NE(first, nullptr);
  options.grpc_port = first->port();
  options.http_port = first->http_port();
  std::unique_ptr<InferenceServer> second = StartServer(options);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->port(), first->port());
  EXPECT_EQ(second->http_port(), first->http_port());
  auto stub = inference::GRPCInferenceService::NewStub(Connect(first->port()));
  ExpectServesRows(*stub, repository, "mlp", {2});
}

// A --host that is not an address of this machine is refused with the
// address and the reason; the failed start leaves nothing behind to crash in
// teardown.
TEST(ServerListen, AForeignHostIsRefused) {
  InferenceServerOptions options = TestServerOptions(WriteTestRepository("host_repository"));
  options.host = "192.0.2.1";  // TEST-NET-1 (RFC 5737): no machine's own address
  options.grpc_port = 8001;
  std::ostringstream log;
  const absl::StatusOr<std::unique_ptr<InferenceServer>> server =
      InferenceServer::Start(options, log);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().message(),
            "cannot listen on 192.0.2.1:8001: --host 192.0.2.1 is not an address of this machine");
}

// Shutdown with requests in flight: every request the server accepted is
// answered correctly; later ones get UNAVAILABLE; none is lost or cancelled.
void ExpectDrainsRequestsInFlight(int grpc_threads_per_queue) {
  const std::string repository = WriteTestRepository("drain_repository");
  InferenceServerOptions options = TestServerOptions(repository);
  options.grpc_threads_per_queue = grpc_threads_per_queue;
  std::unique_ptr<InferenceServer> server = StartServer(options);
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));

  constexpr int kRequests = 48;  // enough to keep both streams busy past Shutdown
  constexpr int64_t kRows = 256;
  std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", kRows);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 21);
  absl::StatusOr<std::vector<HostTensor>> want = reference->Run(inputs);
  ASSERT_TRUE(want.ok());
  const inference::ModelInferRequest request = RawRequest("mlp", reference->graph(), inputs);

  struct Call {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    grpc::Status status;
    std::atomic<bool> done{false};
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kRequests; ++i) {
    calls.push_back(std::make_unique<Call>());
    Call* call = calls.back().get();
    stub->async()->ModelInfer(&call->context, &request, &call->response,
                              [call](grpc::Status status) {
                                call->status = std::move(status);
                                call->done = true;
                              });
  }
  // Shut down once some requests are accepted and before all are answered.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (server->in_flight() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  const int64_t in_flight_at_shutdown = server->in_flight();
  EXPECT_GT(in_flight_at_shutdown, 0);
  const absl::Status shutdown = server->Shutdown();
  EXPECT_TRUE(shutdown.ok()) << shutdown;

  while (std::any_of(calls.begin(), calls.end(), [](const auto& c) { return !c->done; }) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  int answered = 0;
  for (const auto& call : calls) {
    ASSERT_TRUE(call->done);
    if (call->status.ok()) {
      ++answered;
      EXPECT_LE(RelativeError(OutputTensor(call->response, 0, (*want)[0]), (*want)[0]),
                kTolerance);
    } else {
      // Refused at the gate, or queued past the exit timeout: UNAVAILABLE,
      // never CANCELLED (the port stays open, refusing, until requests stop).
      EXPECT_EQ(call->status.error_code(), grpc::StatusCode::UNAVAILABLE)
          << call->status.error_message();
    }
  }
  EXPECT_GE(answered, in_flight_at_shutdown);
  // Nothing accepted is lost: every request the model finished reached its
  // client with a correct response.
  inference::ModelStatistics statistics;
  absl::StatusOr<std::shared_ptr<ServedModel>> mlp = server->registry().Find("mlp", "");
  ASSERT_TRUE(mlp.ok());
  (*mlp)->FillStatistics(&statistics);
  EXPECT_EQ(statistics.inference_stats().success().count(), static_cast<uint64_t>(answered));
  EXPECT_EQ(statistics.inference_stats().fail().count(), 0u);
}

TEST(ServerShutdown, DrainsRequestsInFlight) { ExpectDrainsRequestsInFlight(2); }

// With one thread per gRPC queue no request may run on its RPC thread
// (StreamPool::QueueOnly; stream_pool_test checks that scope): the drain
// must still answer every request. This checks the drain, not which thread
// ran the chunks.
TEST(ServerShutdown, DrainsRequestsInFlightWithOneThreadPerQueue) {
  ExpectDrainsRequestsInFlight(1);
}

// A stream left open through the shutdown is ended by the server with
// UNAVAILABLE once it owes nothing, not cancelled by the closing port; the
// request it had sent before was answered.
TEST(ServerShutdown, EndsOpenStreamsUnavailable) {
  const std::string repository = WriteTestRepository("stream_drain_repository");
  std::unique_ptr<InferenceServer> server = StartServer(TestServerOptions(repository));
  ASSERT_NE(server, nullptr);
  auto stub = inference::GRPCInferenceService::NewStub(Connect(server->port()));
  std::unique_ptr<HostExecutor> reference = Reference(repository, "mlp", 4);
  const std::vector<HostTensor> inputs = RandomInputs(reference->graph(), 31);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto stream = stub->ModelStreamInfer(&context);
  ASSERT_TRUE(stream->Write(RawRequest("mlp", reference->graph(), inputs)));
  inference::ModelStreamInferResponse answer;
  ASSERT_TRUE(stream->Read(&answer));
  EXPECT_EQ(answer.error_message(), "");
  EXPECT_TRUE(MatchesReference(grpc::Status::OK, answer.infer_response(), *reference, inputs));

  const absl::Status shutdown = server->Shutdown();
  EXPECT_TRUE(shutdown.ok()) << shutdown;
  EXPECT_FALSE(stream->Read(&answer));
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::UNAVAILABLE) << ended.error_message();
  EXPECT_THAT(ended.error_message(), HasSubstr("shutting down"));
}

}  // namespace
}  // namespace graphserve
