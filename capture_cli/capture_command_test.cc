#include "capture_cli/capture_command.h"

#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_handles.h"
#include "examples/example_models.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result RunCapture(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  Result result;
  result.code = RunCaptureCommand(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

class CaptureCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(::testing::TempDir(), "/capture_command_test_history.txt");
    std::ofstream file(path_);
    // 1 x90, 2 x5, 8 x5 (see ChooseBatchSizesTest.ChoosesByHand), plus 20 x2.
    file << "# test history\n1,90\n2,5\n8\n8,4\n\n20,2\n";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
};

TEST_F(CaptureCommandTest, SelectPrintsJson) {
  const Result r = RunCapture({"select", "--history", path_, "--num-sizes", "2", "--max-batch-size=8",
                        "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // X = 8: 20 = 2 x 8 + 4. {1, 8}: 2 pads 6 (x5), remainder 4 pads 4 (x2) -> 38 / 102.
  // Ladder {4, 8}: 1 pads 3 (x90), 2 pads 2 (x5), remainder 4 none -> 280 / 102.
  EXPECT_EQ(r.out,
            "{\"sizes\":[1,8],\"expected_padded_rows\":0.3725490196,"
            "\"pow2_sizes\":[4,8],\"pow2_expected_padded_rows\":2.745098039}\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(CaptureCommandTest, SelectPrintsText) {
  const Result r = RunCapture({"select", "--history=" + path_, "--num-sizes=3"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "chosen sizes: 1, 8, 20")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "power-of-two ladder: 8, 16, 32")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "102 requests")) << r.out;
}

// `select --max-graphs`: sizes and buckets from a (rows, length) history.
class SelectGridTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(::testing::TempDir(), "/capture_command_test_shapes.txt");
    std::ofstream file(path_);
    // Short requests come in batches, long ones alone.
    file << "# rows x length\n4x16,30\n2x16,10\n1x100,5\n1x512\n";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  std::string path_;
};

TEST_F(SelectGridTest, PrintsJson) {
  const Result r = RunCapture({"select", "--history", path_, "--max-graphs", "4", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Sizes {1, 4} x buckets {16, 512}: 2x16 runs as 4x16 (32 padded positions,
  // x10), 1x100 as 1x512 (412, x5), the rest exact: 2380 / 46. ({4} x {16,
  // 100, 512} pads 3 rows of each long request: 3356 / 46.) The power-of-two
  // grid's best within 4 graphs: {4} x {64, 128, 256, 512}, 11596 / 46.
  EXPECT_EQ(r.out,
            "{\"sizes\":[1,4],\"buckets\":[16,512],\"expected_padded_positions\":51.73913043,"
            "\"pow2_sizes\":[4],\"pow2_buckets\":[64,128,256,512],"
            "\"pow2_expected_padded_positions\":252.0869565}\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(SelectGridTest, PrintsText) {
  const Result r = RunCapture({"select", "--history=" + path_, "--max-graphs=6"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "46 requests, 3 distinct row counts, 4 distinct shapes, "
                                       "longest 512"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "chosen grid: sizes ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "power-of-two grid: sizes ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "expected padded positions per request: ")) << r.out;
}

TEST_F(SelectGridTest, ErrorsNameTheFlagOrTheLine) {
  Result r = RunCapture({"select", "--history", path_, "--num-sizes", "2", "--max-graphs", "4"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "exactly one of --num-sizes and --max-graphs")) << r.err;
  r = RunCapture({"select", "--history", path_, "--max-graphs", "0x"});
  EXPECT_EQ(r.code, 2) << r.err;
  r = RunCapture({"select", "--history", path_, "--max-graphs", "5000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--max-graphs must be in [1, 4096]")) << r.err;
  r = RunCapture({"select", "--history", path_, "--max-graphs", "4", "--plan-rows", "chunks"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--plan-rows is requests or chunk-demand, got 'chunks'"))
      << r.err;
  r = RunCapture(
      {"select", "--history", path_, "--max-graphs", "4", "--plan-rows", "chunk-demand"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--plan-rows chunk-demand goes with --from-metrics"))
      << r.err;
  // A batch-size history has no lengths.
  const std::string sizes_only = absl::StrCat(::testing::TempDir(), "/sizes_only.txt");
  std::ofstream(sizes_only) << "1,90\n8\n";
  r = RunCapture({"select", "--history", sizes_only, "--max-graphs", "4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "sizes_only.txt:1: expected `ROWSxLENGTH`")) << r.err;
  std::remove(sizes_only.c_str());
}

TEST_F(CaptureCommandTest, HelpListsSelectAndPrepare) {
  for (const char* flag : {"--help", "-h"}) {
    const Result r = RunCapture({flag});
    EXPECT_EQ(r.code, 0);
    EXPECT_TRUE(absl::StrContains(r.out, "select")) << r.out;
    EXPECT_TRUE(absl::StrContains(r.out, "prepare  Capture")) << r.out;
  }
  const Result prepare_help = RunCapture({"prepare", "--help"});
  EXPECT_EQ(prepare_help.code, 0);
  EXPECT_TRUE(absl::StrContains(prepare_help.out, "--streams")) << prepare_help.out;
  EXPECT_TRUE(absl::StrContains(prepare_help.out, "config.pbtxt")) << prepare_help.out;
  const Result select_help = RunCapture({"select", "--help"});
  EXPECT_EQ(select_help.code, 0);
  EXPECT_TRUE(absl::StrContains(select_help.out, "--max-batch-size")) << select_help.out;
  for (const char* said : {"--from-metrics URL", "--reload GRPC_ADDRESS",
                           "--model-control-mode=explicit", "upper bound", "config.pbtxt"}) {
    EXPECT_TRUE(absl::StrContains(select_help.out, said)) << said << "\n" << select_help.out;
  }
}

TEST_F(CaptureCommandTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"prepare", "--model", "m.onnx"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "1,8", "--history",
       path_},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "1,0"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--streams", "0"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "1,8",
       "--max-batch-size", "0"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--buckets",
       "64,12x"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--buckets", "0"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--pad",
       "input_ids"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--shape-padding",
       "loose"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--max-graphs",
       "16"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_, "--max-graphs", "0x"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_, "--max-graphs",
       "5000"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_, "--max-graphs", "8",
       "--num-sizes", "2"},
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_, "--max-graphs", "8",
       "--buckets", "64"},
      {"frobnicate"},
      {"select", "--num-sizes", "2"},
      {"select", "--history", path_},
      {"select", "--history", path_, "--num-sizes", "-1"},
      {"select", "--history", path_, "--num-sizes", "two"},
      {"select", "--history", path_, "--num-sizes", "2", "--max-batch-size", "-4"},
      {"select", "--history", path_, "--num-sizes", "2", "--bogus"},
      {"select", "--history", path_, "--num-sizes", "2", "extra"},
      {"select", "--history", path_, "--from-metrics", "http://h:8002/metrics", "--model", "m",
       "--num-sizes", "2"},
      {"select", "--from-metrics", "http://h:8002/metrics", "--num-sizes", "2"},
      {"select", "--history", path_, "--model", "m", "--num-sizes", "2"},
      {"select", "--history", path_, "--reload", "localhost:8001", "--num-sizes", "2"},
      {"select", "--from-metrics", "http://h:8002/metrics", "--model", "m", "--num-sizes", "2",
       "--reload", "localhost:8001", "--reload-timeout-secs", "0"},
      {"schedule"},
      {"schedule", "--model", "m.onnx", "--policy", "fastest"},
      {"schedule", "--model", "m.onnx", "--batch-size", "0"},
      {"schedule", "--model", "m.onnx", "--max-lanes", "0"},
      {"schedule", "--model", "m.onnx", "--precision", "fp8"},
      {"schedule", "--model", "m.onnx", "--precision", "auto"},
  };
  for (const std::vector<std::string>& args : cases) {
    const Result r = RunCapture(args);
    EXPECT_EQ(r.code, 2) << absl::StrJoin(args, " ");
    EXPECT_FALSE(r.err.empty()) << absl::StrJoin(args, " ");
    EXPECT_EQ(r.out, "") << absl::StrJoin(args, " ");
  }
  EXPECT_TRUE(absl::StrContains(RunCapture({"prepare"}).err, "--model is required"));
  EXPECT_TRUE(absl::StrContains(
      RunCapture({"prepare", "--model", "m.onnx", "--out", "repo/m", "--buckets", "64,12x",
                  "--batch-sizes", "8"})
          .err,
      "prepare: --buckets: '12x' is not a bucket: give extents of 1 or more joined by x"));
  EXPECT_TRUE(absl::StrContains(
      RunCapture({"prepare", "--model", "m.onnx", "--out", "repo/m", "--history", path_,
                  "--max-graphs", "8", "--buckets", "64"})
          .err,
      "prepare: --max-graphs chooses buckets from a --history, instead of --num-sizes and "
      "--buckets"));
}

// The rows histogram and launches of one model version as server/metrics.cc
// writes them, for max_batch_size 256: a bucket per row up to 64, then 128,
// 256, +Inf.
std::string MetricsFamilies(const std::string& model, const std::vector<int64_t>& requests,
                            const std::vector<int64_t>& captured) {
  std::vector<std::string> bounds;
  for (int rows = 1; rows <= 64; ++rows) bounds.push_back(absl::StrCat(rows));
  bounds.insert(bounds.end(), {"128", "256", "+Inf"});
  std::string text;
  for (const std::string& le : bounds) {
    int count = 0;
    for (int64_t rows : requests) count += le == "+Inf" || rows <= std::stoi(le) ? 1 : 0;
    absl::StrAppend(&text, "graphserve_request_rows_bucket{model=\"", model,
                    "\",version=\"1\",le=\"", le, "\"} ", count, "\n");
  }
  for (int64_t size : captured) {
    absl::StrAppend(&text, "graphserve_graph_launches_total{model=\"", model,
                    "\",version=\"1\",batch_size=\"", size, "\"} 0\n");
  }
  return text;
}

// A canned /metrics page on a free loopback port.
class SelectFromMetricsPage : public ::testing::Test {
 protected:
  void SetUp() override {
    // mlp: 1 x6, 3 x4, 7 x2, 20 x1 and one request of 100 rows, which the
    // histogram knows only as 65..128; it serves 1, 4, 16, 64. `exact`
    // serves the sizes its requests need. `idle` has answered nothing.
    const std::string text = absl::StrCat(
        "# TYPE graphserve_request_rows histogram\n",
        MetricsFamilies("mlp", {1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 7, 7, 20, 100}, {1, 4, 16, 64}),
        MetricsFamilies("exact", {2, 2, 2, 5}, {2, 5}), MetricsFamilies("idle", {}, {1, 8}));
    server_.Get("/metrics", [text](const httplib::Request&, httplib::Response& response) {
      response.set_content(text, "text/plain; version=0.0.4");
    });
    const int port = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    url_ = absl::StrCat("http://127.0.0.1:", port, "/metrics");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }

  httplib::Server server_;
  std::thread thread_;
  std::string url_;
};

TEST_F(SelectFromMetricsPage, PrintsJson) {
  const Result r = RunCapture(
      {"select", "--from-metrics", url_, "--model", "mlp", "--num-sizes", "3", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  // Needed sizes 1 (x6), 3 (x4), 7 (x2), 20, 128; the top is 128. By hand,
  // the best two below it are {3, 20}: 1 pads 2 (x6), 7 pads 13 (x2) -> 38 / 14.
  // Served now {1, 4, 16, 64}: 3 pads 1 (x4), 7 pads 9 (x2), 20 pads 44, 128 is
  // two chunks of 64 -> 66 / 14. Ladder {32, 64, 128}: 31 x6 + 29 x4 + 25 x2 +
  // 12 -> 364 / 14.
  EXPECT_EQ(r.out,
            "{\"sizes\":[3,20,128],\"expected_padded_rows\":2.714285714,"
            "\"pow2_sizes\":[32,64,128],\"pow2_expected_padded_rows\":26,"
            "\"model\":\"mlp\",\"version\":\"1\",\"requests\":14,\"approximated_requests\":1,"
            "\"rows_from\":\"requests\",\"current_sizes\":[1,4,16,64],\"current_expected_padded_"
            "rows\":4.714285714}\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(SelectFromMetricsPage, PrintsTextWithTheApproximatedRequests) {
  const Result r = RunCapture({"select", "--from-metrics", url_, "--model", "mlp",
                               "--model-version", "1", "--num-sizes", "3"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& said : {
           absl::StrCat("metrics: ", url_,
                        ", model 'mlp' version 1 (14 requests, 5 distinct "
                        "sizes, largest 128)\n"),
           std::string("note: 1 request lies in histogram buckets wider than one row (65-128 "
                       "rows: 1); each is counted at its bucket's upper bound"),
           std::string("current sizes: 1, 4, 16, 64\n  expected padded rows per request: "
                       "4.714285714\n"),
           std::string("chosen sizes: 3, 20, 128\n"),
           std::string("power-of-two ladder: 32, 64, 128\n"),
       }) {
    EXPECT_TRUE(absl::StrContains(r.out, said)) << said << "\n" << r.out;
  }
}

TEST_F(SelectFromMetricsPage, NothingToReloadWhenTheChosenSizesAreServed) {
  // Nothing listens on port 1: reaching for it would fail.
  const Result r = RunCapture({"select", "--from-metrics", url_, "--model", "exact", "--num-sizes",
                               "2", "--reload", "127.0.0.1:1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "not reloaded: the chosen sizes are the sizes served now"))
      << r.out;
}

TEST_F(SelectFromMetricsPage, AFailedReloadExitsOneNamingTheAddress) {
  const Result r = RunCapture({"select", "--from-metrics", url_, "--model", "mlp", "--num-sizes",
                               "3", "--reload", "127.0.0.1:1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.out, "chosen sizes: 3, 20, 128")) << r.out;  // shown first
  EXPECT_TRUE(
      absl::StrContains(r.err,
                        "graphserve-capture: select: reload: UNAVAILABLE: ModelConfig of 'mlp' at "
                        "127.0.0.1:1 failed"))
      << r.err;
}

TEST_F(SelectFromMetricsPage, ClearErrorsExitOne) {
  Result r =
      RunCapture({"select", "--from-metrics", url_, "--model", "resnet", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err,
                                "model 'resnet' is not in the metrics; the models there: "
                                "'exact' (version 1), 'idle' (version 1), 'mlp' "
                                "(version 1)"))
      << r.err;
  r = RunCapture({"select", "--from-metrics", url_, "--model", "idle", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "model 'idle' version 1 has answered no requests")) << r.err;
  r = RunCapture({"select", "--from-metrics", url_, "--model", "mlp", "--model-version", "2",
                  "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "has no version '2'")) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(SelectFromMetrics, AnUnreachableUrlIsNamedWithTheReason) {
  // Port 1 on loopback: nothing listens there.
  const Result r = RunCapture({"select", "--from-metrics", "http://127.0.0.1:1/metrics", "--model",
                               "mlp", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(
      absl::StrContains(r.err, "select: cannot read http://127.0.0.1:1/metrics: cannot connect"))
      << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CaptureCommandTest, PrepareWithoutAGpuExitsOneSayingSo) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible; the GPU check covers prepare";
  const Result r = RunCapture(
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "1,8"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "needs a CUDA GPU")) << r.err;
}

TEST_F(CaptureCommandTest, PrepareTakesAPrecisionAndRefusesUnknownOnes) {
  const std::vector<std::string> args = {"prepare", "--model", "m.onnx", "--out", "repo/m",
                                         "--batch-sizes", "1,8", "--precision"};
  auto with = [&args](const std::string& precision) {
    std::vector<std::string> full = args;
    full.push_back(precision);
    return full;
  };
  Result r = RunCapture(with("fp8"));
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(
      r.err, "prepare: --precision: 'fp8' is not a precision; choose fp32 (the default), tf32, "
             "fp16, bf16 or auto"))
      << r.err;
  EXPECT_TRUE(absl::StrContains(RunCapture({"prepare", "--help"}).out, "--precision"));
  if (CudaDeviceCount() > 0) return;  // the GPU check covers a real prepare
  // Accepted: what stops them here is the missing GPU.
  for (const char* precision : {"bf16", "auto"}) {
    r = RunCapture(with(precision));
    EXPECT_EQ(r.code, 1) << precision;
    EXPECT_TRUE(absl::StrContains(r.err, "needs a CUDA GPU")) << r.err;
  }
}

TEST_F(CaptureCommandTest, BadHistoryExitsOneNamingFileAndLine) {
  {
    std::ofstream file(path_);
    file << "4\n0\n";
  }
  Result r = RunCapture({"select", "--history", path_, "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, absl::StrCat(path_, ":2: batch size 0 is not positive")))
      << r.err;
  r = RunCapture({"select", "--history", path_ + ".missing", "--num-sizes", "2"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "cannot open")) << r.err;
}

// A schedule printed without a GPU, naming the ONNX nodes of each step. The
// example DLRM is one chain (its embeddings are inputs, the interaction reads
// the bottom MLP), so every policy gives one lane; runtime/schedule_test
// covers branching graphs.
TEST_F(CaptureCommandTest, ScheduleNeedsNoGpu) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/schedule_models");
  std::vector<std::string> written;
  ASSERT_TRUE(WriteExampleModels(dir, &written).ok());
  const std::string dlrm = absl::StrCat(dir, "/dlrm_dense.onnx");
  const Result json =
      RunCapture({"schedule", "--model", dlrm, "--batch-size", "8", "--policy", "asap", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_TRUE(absl::StartsWith(json.out, "{\"policy\": \"asap\", \"lanes\": ")) << json.out;
  EXPECT_TRUE(absl::StrContains(json.out, "\"steps\": [{\"nodes\": [\"")) << json.out;
  EXPECT_TRUE(absl::StrContains(json.out, "{\"nodes\": [\"bottom_mlp.fc0\"], \"lane\": 0"))
      << json.out;

  const Result text = RunCapture({"schedule", "--model", dlrm, "--policy", "single"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(absl::StrContains(text.out, "policy single: 1 lane(s)")) << text.out;

  // In float16: the precision pass's Casts of the float32 input and output
  // are steps of their own.
  const Result half = RunCapture({"schedule", "--model", dlrm, "--precision", "fp16"});
  ASSERT_EQ(half.code, 0) << half.err;
  EXPECT_TRUE(absl::StrContains(half.out, "/cast")) << half.out;

  const Result missing = RunCapture({"schedule", "--model", absl::StrCat(dir, "/none.onnx")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(absl::StrContains(missing.err, "none.onnx")) << missing.err;
}

}  // namespace
}  // namespace graphserve
