// `graphserve-capture select --from-metrics ... --reload ...` against a real
// server (InferenceServer, the object the binary runs) in this process, on
// the host executor: requests of known sizes fill the live histogram, the
// command chooses sizes from the server's /metrics and reloads the model with
// them through model control, and the server then serves the new sizes with
// the host executor's answers.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "capture_cli/capture_command.h"
#include "capture_cli/live_metrics.h"
#include "client/inference_client.h"
#include "common/tensor.h"
#include "examples/demo_repository.h"
#include "examples/example_models.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/executor.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "server/inference_server.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// What the demo repository captures before the reload, and its largest
// request (so that every request below stays whole).
const std::vector<int64_t> kInitialSizes = {1, 4, 16, 64};
constexpr int64_t kMaxBatch = 256;
// Float32 on the host executor, split or padded, against the whole batch.
constexpr double kTolerance = 1e-5;

struct CommandResult {
  int code = -1;
  std::string out;
  std::string err;
};

CommandResult RunCapture(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CommandResult result;
  result.code = RunCaptureCommand(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::string WriteRepository(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::string dir = (std::filesystem::path(root != nullptr ? root : "/tmp") / name).string();
  std::filesystem::remove_all(dir);
  DemoRepositoryOptions options;
  options.batch_sizes = kInitialSizes;
  options.max_batch_size = kMaxBatch;
  options.num_streams = 2;
  const absl::Status written = WriteDemoRepository(dir, options);
  EXPECT_TRUE(written.ok()) << written;
  return dir;
}

std::unique_ptr<InferenceServer> StartServer(const std::string& repository,
                                             ModelControlMode control) {
  InferenceServerOptions options;
  options.model_repositories = {repository};
  options.host = "127.0.0.1";
  options.grpc_port = 0;
  options.http_port = 0;
  options.metrics_port = 0;
  options.models.executor = ExecutorKind::kHost;
  options.models.cost_iters = 5;
  options.model_control = control;
  options.load_models = {"*"};
  options.exit_on_error = false;
  std::ostringstream log;
  absl::StatusOr<std::unique_ptr<InferenceServer>> server = InferenceServer::Start(options, log);
  EXPECT_TRUE(server.ok()) << server.status() << "\n" << log.str();
  return server.ok() ? *std::move(server) : nullptr;
}

class SelectFromMetrics : public ::testing::Test {
 protected:
  // `dynamic_batching`: mlp's config gets one, whose free slots wait up to
  // 300 ms for more rows.
  void Start(ModelControlMode control, bool dynamic_batching = false) {
    repository_ = WriteRepository(absl::StrCat("select_from_metrics_", static_cast<int>(control),
                                               dynamic_batching ? "_batching" : ""));
    if (dynamic_batching) {
      std::ofstream(std::filesystem::path(repository_) / "mlp" / "config.pbtxt", std::ios::app)
          << "dynamic_batching { max_queue_delay_microseconds: 300000 }\n";
    }
    server_ = StartServer(repository_, control);
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        InferenceClient::Create({.address = absl::StrCat("127.0.0.1:", server_->port())});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::string MetricsUrl() const {
    return absl::StrCat("http://127.0.0.1:", server_->metrics_port(), "/metrics");
  }
  std::string GrpcAddress() const { return absl::StrCat("127.0.0.1:", server_->port()); }

  // One request of `rows` rows of mlp, checked against the host executor run
  // on the whole batch.
  void ExpectServes(int64_t rows, uint64_t seed) {
    absl::StatusOr<Model> model =
        ImportOnnxFile((std::filesystem::path(repository_) / "mlp" / "1" / "model.onnx").string());
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<BoundGraph> graph = BindModel(*model, {.batch_size = rows});
    ASSERT_TRUE(graph.ok()) << graph.status();
    absl::StatusOr<std::unique_ptr<HostExecutor>> reference =
        HostExecutor::Create(*std::move(graph));
    ASSERT_TRUE(reference.ok()) << reference.status();
    const BoundGraph& bound = (*reference)->graph();
    const std::vector<HostTensor> inputs = RandomInputs(bound, seed);
    absl::StatusOr<std::vector<HostTensor>> want = (*reference)->Run(inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(inputs.size(), 1u);  // mlp: x [batch, 512] float32
    ASSERT_EQ(want->size(), 1u);

    InferRequest request{.model_name = "mlp"};
    request.inputs.push_back(
        {bound.value(bound.inputs[0]).name, "FP32", inputs[0].dims(),
         std::string(static_cast<const char*>(inputs[0].raw()), inputs[0].bytes())});
    absl::StatusOr<InferResult> result = client_->Infer(request);
    ASSERT_TRUE(result.ok()) << rows << " rows: " << result.status();
    ASSERT_EQ(result->outputs().size(), 1u);
    absl::StatusOr<absl::Span<const float>> values = result->outputs()[0].AsFloat32();
    ASSERT_TRUE(values.ok()) << values.status();
    HostTensor got((*want)[0].dtype(), (*want)[0].dims());
    ASSERT_EQ(values->size() * sizeof(float), got.bytes()) << rows << " rows";
    std::memcpy(got.raw(), values->data(), got.bytes());
    EXPECT_LE(RelativeError(got, (*want)[0]), kTolerance) << rows << " rows";
  }

  std::string repository_;
  std::unique_ptr<InferenceServer> server_;
  std::unique_ptr<InferenceClient> client_;
};

TEST_F(SelectFromMetrics, ChoosesFromLiveTrafficAndReloadsWithTheChosenSizes) {
  Start(ModelControlMode::kExplicit);
  // The live histogram: 1 row x6, 3 x4, 7 x2, 20 x1 (13 requests).
  uint64_t seed = 1;
  for (const auto& [rows, count] :
       std::vector<std::pair<int64_t, int>>{{1, 6}, {3, 4}, {7, 2}, {20, 1}}) {
    for (int i = 0; i < count; ++i) ExpectServes(rows, seed++);
  }

  const CommandResult r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                      "--num-sizes", "3", "--reload", GrpcAddress(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Top 20; by hand the best two below it are {3, 7}: 1 pads 2 (x6) -> 12 / 13.
  // Served now {1, 4, 16, 64}: 3 pads 1 (x4), 7 pads 9 (x2), 20 pads 44 -> 66 / 13.
  // Ladder {8, 16, 32}: 7 x6 + 5 x4 + 1 x2 + 12 -> 76 / 13.
  EXPECT_THAT(r.out, HasSubstr("{\"sizes\":[3,7,20],\"expected_padded_rows\":0.9230769231,"
                               "\"pow2_sizes\":[8,16,32],\"pow2_expected_padded_rows\":5.846153846,"
                               "\"model\":\"mlp\",\"version\":\"1\",\"requests\":13,"
                               "\"approximated_requests\":0,\"rows_from\":\"requests\","
                               "\"current_sizes\":[1,4,16,64],"
                               "\"current_expected_padded_rows\":5.076923077,"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\"reload\":{\"address\":\"", GrpcAddress(),
                                            "\",\"reloaded\":true,\"previous_sizes\":[1,4,16,64],"
                                            "\"load_seconds\":")))
      << r.out;

  // The server now serves the new sizes: its config says so, without the old
  // sizes' costs; requests padded to them (5 -> 7) and split over them
  // (45 = 2 x 20 + 5 -> 7) get the right answers.
  absl::StatusOr<inference::ModelConfigResponse> config = client_->ModelConfig("mlp");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->config().capture().batch_sizes(), ElementsAre(3, 7, 20));
  EXPECT_THAT(config->config().max_batch_size(), kMaxBatch);
  ExpectServes(5, 100);
  ExpectServes(45, 101);

  // The reloaded version counts afresh; /metrics names its captured sizes.
  const CommandResult again =
      RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp", "--num-sizes", "2"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("(2 requests, 2 distinct sizes, largest 45)")) << again.out;
  EXPECT_THAT(again.out, HasSubstr("current sizes: 3, 7, 20\n")) << again.out;
}

// Note [Demand rows]: under dynamic batching --plan-rows chunk-demand plans
// from what chunks could merge, not from each request's rows. Eight requests
// of one row sent at once wait together in the queue (the slot waits 300 ms
// for a fuller batch): sizes planned from the requests are {1}, from the
// chunks' demand they reach the rows merged.
TEST_F(SelectFromMetrics, PlanRowsChunkDemandPlansFromWhatChunksCouldMerge) {
  Start(ModelControlMode::kExplicit, /*dynamic_batching=*/true);
  std::vector<std::thread> clients;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    clients.emplace_back([this, seed] { ExpectServes(1, seed); });
  }
  for (std::thread& client : clients) client.join();
  const CommandResult requests = RunCapture(
      {"select", "--from-metrics", MetricsUrl(), "--model", "mlp", "--num-sizes", "2", "--json"});
  ASSERT_EQ(requests.code, 0) << requests.err;
  EXPECT_THAT(requests.out, HasSubstr("{\"sizes\":[1],")) << requests.out;
  EXPECT_THAT(requests.out, HasSubstr("\"rows_from\":\"requests\"")) << requests.out;
  const CommandResult r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                      "--num-sizes", "2", "--plan-rows", "chunk-demand", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"rows_from\":\"chunk_demand\"")) << r.out;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("\"sizes\":[1],"))) << r.out;
  const CommandResult text = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                         "--num-sizes", "2", "--plan-rows", "chunk-demand"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("chunks under dynamic batching")) << text.out;
  EXPECT_THAT(text.out, HasSubstr("graphserve_chunk_demand_rows")) << text.out;
}

// --plan-rows chunk-demand of a model without dynamic batching: no demand
// to plan from, said so.
TEST_F(SelectFromMetrics, PlanRowsChunkDemandNeedsDynamicBatching) {
  Start(ModelControlMode::kExplicit);
  ExpectServes(2, 1);
  const CommandResult r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                      "--num-sizes", "2", "--plan-rows", "chunk-demand"});
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("no graphserve_chunk_demand_rows samples")) << r.err;
  EXPECT_THAT(r.err, HasSubstr("does not batch dynamically")) << r.err;
}

TEST_F(SelectFromMetrics, TextOutputSaysWhatWasReloadedAndHowLongItTook) {
  Start(ModelControlMode::kExplicit);
  ExpectServes(2, 1);
  ExpectServes(2, 2);
  ExpectServes(9, 3);
  const CommandResult r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                      "--num-sizes", "4", "--reload", GrpcAddress()});
  ASSERT_EQ(r.code, 0) << r.err;
  // Two needed sizes, at most four wanted: exactly those, no padding.
  EXPECT_THAT(r.out, HasSubstr("chosen sizes: 2, 9\n  expected padded rows per request: 0\n"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("reloaded 'mlp' at ", GrpcAddress(),
                                            " with capture sizes 2, 9 (were 1, 4, 16, 64): the "
                                            "load took ")))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr("config.pbtxt is unchanged")) << r.out;
}

TEST_F(SelectFromMetrics, ErrorsNameWhatIsMissing) {
  Start(ModelControlMode::kExplicit);
  CommandResult r = RunCapture(
      {"select", "--from-metrics", MetricsUrl(), "--model", "resnet", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("model 'resnet' is not in the metrics; the models there: "
                               "'dlrm_dense' (version 1), 'mlp' (version 1)"));
  // No request has reached dlrm_dense.
  r = RunCapture(
      {"select", "--from-metrics", MetricsUrl(), "--model", "dlrm_dense", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("model 'dlrm_dense' version 1 has answered no requests"));
  r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp", "--model-version",
                  "7", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("model 'mlp' has no version '7' in the metrics; its versions: 1"));
  // The HTTP port is not the metrics port.
  r = RunCapture({"select", "--from-metrics",
                  absl::StrCat("http://127.0.0.1:", server_->http_port(), "/metrics"), "--model",
                  "mlp", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot read http://127.0.0.1:"));
}

TEST_F(SelectFromMetrics, ReloadWithoutExplicitModelControlPassesTheServersMessageOn) {
  Start(ModelControlMode::kNone);
  ExpectServes(3, 1);
  const CommandResult r = RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "mlp",
                                      "--num-sizes", "2", "--reload", GrpcAddress()});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("reload: FAILED_PRECONDITION: RepositoryModelLoad of "
                                            "'mlp' at ",
                                            GrpcAddress(), " failed: ")));
  EXPECT_THAT(r.err, HasSubstr("--model-control-mode=explicit"));
  // The model still serves its old sizes.
  absl::StatusOr<inference::ModelConfigResponse> config = client_->ModelConfig("mlp");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->config().capture().batch_sizes(), ElementsAre(1, 4, 16, 64));
}

// `select --from-metrics --max-graphs --reload` on a model with a sequence
// length: the masked sequence model (x [batch, sequence, 16], mask [batch,
// sequence]; padding is exact) served at sizes 1, 4, 8 x buckets 8, 32.
class SelectGridFromMetrics : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* root = std::getenv("TEST_TMPDIR");
    repository_ =
        (std::filesystem::path(root != nullptr ? root : "/tmp") / "select_grid").string();
    std::filesystem::remove_all(repository_);
    const std::filesystem::path dir = std::filesystem::path(repository_) / "masked";
    std::filesystem::create_directories(dir / "1");
    std::ofstream(dir / "1" / "model.onnx", std::ios::binary)
        << MakeMaskedSequenceModel().SerializeAsString();
    std::ofstream(dir / "config.pbtxt")
        << "name: \"masked\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 8\n"
           "input [{ name: \"x\" data_type: TYPE_FP32 dims: [ -1, 16 ] },"
           " { name: \"mask\" data_type: TYPE_INT64 dims: [ -1 ] }]\n"
           "output [{ name: \"y\" data_type: TYPE_FP32 dims: [ -1, 16 ] }]\n"
           "capture { batch_sizes: [ 1, 4, 8 ] shape_dims: \"sequence\" "
           "buckets { extents: 8 } buckets { extents: 32 } }\n";
    server_ = StartServer(repository_, ModelControlMode::kExplicit);
    ASSERT_NE(server_, nullptr);
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        InferenceClient::Create({.address = absl::StrCat("127.0.0.1:", server_->port())});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  // One request of `rows` rows of `length` positions, every one real,
  // checked against the host executor bound at exactly that shape.
  void ExpectServes(int64_t rows, int64_t length, uint64_t seed) {
    absl::StatusOr<Model> model = ImportOnnxFile(
        (std::filesystem::path(repository_) / "masked" / "1" / "model.onnx").string());
    ASSERT_TRUE(model.ok()) << model.status();
    absl::StatusOr<BindOptions> options = BindOptionsAt(*model, GraphKey{rows, {length}});
    ASSERT_TRUE(options.ok()) << options.status();
    absl::StatusOr<BoundGraph> graph = BindModel(*model, *options);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::unique_ptr<HostExecutor> reference = *HostExecutor::Create(*std::move(graph));
    const BoundGraph& bound = reference->graph();
    std::vector<HostTensor> inputs = RandomInputs(bound, seed);
    ASSERT_EQ(inputs.size(), 2u);
    std::fill_n(inputs[1].data<int64_t>(), inputs[1].num_elements(), int64_t{1});
    const std::vector<HostTensor> want = *reference->Run(inputs);

    InferRequest request{.model_name = "masked"};
    for (size_t i = 0; i < inputs.size(); ++i) {
      request.inputs.push_back(
          {bound.value(bound.inputs[i]).name, i == 0 ? "FP32" : "INT64", inputs[i].dims(),
           std::string(static_cast<const char*>(inputs[i].raw()), inputs[i].bytes())});
    }
    absl::StatusOr<InferResult> result = client_->Infer(request);
    ASSERT_TRUE(result.ok()) << rows << "x" << length << ": " << result.status();
    absl::StatusOr<absl::Span<const float>> values = result->outputs()[0].AsFloat32();
    ASSERT_TRUE(values.ok()) << values.status();
    HostTensor got(want[0].dtype(), want[0].dims());
    ASSERT_EQ(values->size() * sizeof(float), got.bytes()) << rows << "x" << length;
    std::memcpy(got.raw(), values->data(), got.bytes());
    EXPECT_LE(RelativeError(got, want[0]), kTolerance) << rows << "x" << length;
  }

  std::string MetricsUrl() const {
    return absl::StrCat("http://127.0.0.1:", server_->metrics_port(), "/metrics");
  }
  std::string GrpcAddress() const { return absl::StrCat("127.0.0.1:", server_->port()); }

  std::string repository_;
  std::unique_ptr<InferenceServer> server_;
  std::unique_ptr<InferenceClient> client_;
};

TEST_F(SelectGridFromMetrics, ChoosesSizesAndBucketsFromLiveTrafficAndReloadsWithThem) {
  // 1 row of 5 positions x6, 2 rows of 24 x3, 1 row of 24 x1 (10 requests):
  // lengths 5 and 24 are counted at the length histogram's bounds 8 and 24.
  uint64_t seed = 1;
  for (const auto& [rows, length, count] :
       std::vector<std::tuple<int64_t, int64_t, int>>{{1, 5, 6}, {2, 24, 3}, {1, 24, 1}}) {
    for (int i = 0; i < count; ++i) ExpectServes(rows, length, seed++);
  }
  // The server's own re-capture signal prices the same grids select will:
  // read as independent, (1, 8) x4, (1, 24) x3, (2, 8) x2, (2, 24) x1; at
  // {1, 4, 8} x {8, 32}, 24 pads 8 positions a row and 2 rows run as 4:
  // (3 x 8 + 2 x 16 + 80) / 10.
  absl::StatusOr<std::string> metrics = FetchMetricsText(MetricsUrl());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("graphserve_expected_padded_positions{model=\"masked\","
                                  "version=\"1\",sizes=\"current\"} 13.6\n"));
  EXPECT_THAT(*metrics, HasSubstr("graphserve_expected_padded_positions{model=\"masked\","
                                  "version=\"1\",sizes=\"optimal\"} 0\n"));
  const CommandResult r =
      RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "masked", "--max-graphs",
                  "4", "--reload", GrpcAddress(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Rows {1: 7, 2: 3} and lengths {8: 6, 24: 4} as independent: 4 graphs
  // hold every shape, sizes {1, 2} x buckets {8, 24}, so nothing is padded
  // beyond the histogram's own rounding. Served now, {1, 4, 8} x {8, 32}:
  // 2 rows run as 4, and 24 positions as 32.
  EXPECT_THAT(r.out, HasSubstr("{\"sizes\":[1,2],\"buckets\":[8,24],"
                               "\"expected_padded_positions\":0,"))
      << r.out;
  EXPECT_THAT(
      r.out,
      HasSubstr("\"model\":\"masked\",\"version\":\"1\",\"requests\":10,"
                "\"rows_from\":\"requests\",\"current_sizes\":[1,4,8],\"current_buckets\":[8,32],"
                "\"current_expected_padded_positions\":13.6"))
      << r.out;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\"reload\":{\"address\":\"", GrpcAddress(),
                                            "\",\"reloaded\":true,\"previous_sizes\":[1,4,8],"
                                            "\"previous_buckets\":[8,32],\"load_seconds\":")))
      << r.out;

  // The server serves the new grid: its config says so, and requests inside
  // it (padded into bucket 24, or split over size 2) get the right answers;
  // one longer than the new largest bucket is refused.
  absl::StatusOr<inference::ModelConfigResponse> config = client_->ModelConfig("masked");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->config().capture().batch_sizes(), ElementsAre(1, 2));
  ASSERT_EQ(config->config().capture().buckets_size(), 2);
  EXPECT_THAT(config->config().capture().buckets(1).extents(), ElementsAre(24));
  ExpectServes(1, 20, 100);
  ExpectServes(5, 3, 101);
  InferRequest too_long{.model_name = "masked"};
  too_long.inputs.push_back({"x", "FP32", {1, 30, 16}, std::string(30 * 16 * 4, '\0')});
  too_long.inputs.push_back({"mask", "INT64", {1, 30}, std::string(30 * 8, '\1')});
  EXPECT_FALSE(client_->Infer(too_long).ok());

  // A model with no length histogram is named as such.
  const CommandResult text =
      RunCapture({"select", "--from-metrics", MetricsUrl(), "--model", "masked", "--max-graphs",
                  "4"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("current grid: sizes 1, 2 x buckets 8, 24 (4 graphs)"))
      << text.out;
  EXPECT_THAT(text.out, HasSubstr("planned as independent")) << text.out;
}

TEST_F(SelectFromMetrics, MaxGraphsNeedsALengthHistogram) {
  Start(ModelControlMode::kExplicit);
  ExpectServes(3, 1);
  const CommandResult r = RunCapture(
      {"select", "--from-metrics", MetricsUrl(), "--model", "mlp", "--max-graphs", "4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("model 'mlp' version 1 has no graphserve_request_length "
                               "histogram at "));
  EXPECT_THAT(r.err, HasSubstr("for others use --num-sizes"));
}

}  // namespace
}  // namespace graphserve
