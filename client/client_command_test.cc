#include "client/client_command.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cuda_shared_memory.h"
#include "client/fake_inference_server.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result RunClient(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  Result result;
  result.code = RunClientCommand(args, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// FNV-1a 64 written out from its definition (offset basis 14695981039346656037,
// prime 1099511628211), to check the checksum the client prints.
uint64_t ReferenceFnv1a(const std::string& bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (const unsigned char byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  return hash;
}

TEST(ClientCommandUsageTest, HelpAndUsageErrors) {
  Result r = RunClient({});
  EXPECT_EQ(r.code, kClientExitUsage);
  EXPECT_TRUE(absl::StrContains(r.err, "usage: graphserve-client")) << r.err;

  r = RunClient({"--help"});
  EXPECT_EQ(r.code, kClientExitOk);
  EXPECT_EQ(r.out, ClientUsage());

  for (const std::string command :
       {"health", "live", "ready", "metadata", "config", "stats", "infer", "perf"}) {
    r = RunClient({command, "--help"});
    EXPECT_EQ(r.code, kClientExitOk) << command << ": " << r.err;
    EXPECT_TRUE(absl::StartsWith(r.out, "usage: graphserve-client " + command)) << r.out;
    EXPECT_TRUE(absl::StrContains(r.out, "--url")) << command;
  }

  r = RunClient({"bogus"});
  EXPECT_EQ(r.code, kClientExitUsage);
  EXPECT_EQ(r.err, "graphserve-client: unknown command 'bogus' (see --help)\n");
}

TEST(ClientCommandUsageTest, FlagErrorsAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bogus", "x", "live"}, "unknown flag --bogus"},
      {{"live", "--bogus"}, "live: unknown flag --bogus"},
      {{"infer"}, "infer: --model is required"},
      {{"infer", "--model", "m", "--batch-size", "0"}, "--batch-size must be at least 1"},
      {{"infer", "--model", "m", "--batch-size", "two"}, "--batch-size wants an integer"},
      {{"infer", "--model", "m", "--input", "x.bin"}, "--input wants NAME=FILE, got 'x.bin'"},
      {{"infer", "--model", "m", "--input"}, "--input needs a value"},
      {{"infer", "--model", "m", "--shape", "ids"}, "--shape wants NAME:D1,D2,..."},
      {{"infer", "--model", "m", "--shape", "ids:20,x"}, "got 'ids:20,x'"},
      {{"perf", "--model", "m", "--shape", ":20"}, "perf: --shape wants NAME:D1,D2,..."},
      {{"config"}, "config: --model is required"},
      {{"stats", "--model-version", "1"}, "--model-version needs --model"},
      {{"perf", "--model", "m", "--concurrency", "1", "--request-rate", "5"},
       "give --concurrency or --request-rate, not both"},
      {{"perf", "--model", "m", "--concurrency", "0,2"}, "below the minimum 1"},
      {{"perf", "--model", "m", "--request-rate", "-3"}, "not a positive number"},
      {{"perf", "--model", "m", "--request-distribution", "bursty"}, "constant or poisson"},
      {{"perf", "--model", "m", "--warmup-secs", "soon"}, "--warmup-secs wants seconds"},
      {{"perf", "--model", "m", "--windows", "0"}, "must be at least 1"},
      {{"--timeout-ms", "-5", "live"}, "--timeout-ms must not be negative"},
      {{"infer", "--model", "m", "--shared-memory", "posix"},
       "infer: --shared-memory is none, system or cuda, got 'posix'"},
      {{"perf", "--model", "m", "--shared-memory", "CUDA"},
       "perf: --shared-memory is none, system or cuda, got 'CUDA'"},
      {{"infer", "--model", "m", "--shared-memory", "system", "--output-shared-memory-size", "0"},
       "--output-shared-memory-size must be at least 1 byte, got 0"},
      {{"perf", "--model", "m", "--output-shared-memory-size", "lots"},
       "--output-shared-memory-size wants an integer"},
      {{"perf", "--model", "m", "--shared-memory", "cuda", "--cuda-device", "-1"},
       "--cuda-device must be a device number >= 0, got -1"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = RunClient(args);
    EXPECT_EQ(r.code, kClientExitUsage) << args[0] << " " << message << ": " << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, message)) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST(ClientCommandUsageTest, UnreachableServerFails) {
  // Port 1 (tcpmux) has no listener on a test machine.
  const Result r = RunClient({"--url", "127.0.0.1:1", "--timeout-ms", "5000", "live"});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StartsWith(r.err, "graphserve-client: live: UNAVAILABLE: ")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "is a server listening at 127.0.0.1:1?")) << r.err;
}

class ClientCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(const FakeInferenceServerOptions& options) {
    server_.reset();
    absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server =
        FakeInferenceServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // Runs `args` against the fake server, --url first.
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--url", server_->address()});
    return RunClient(args);
  }

  std::string TempPath(const std::string& name) const {
    return absl::StrCat(::testing::TempDir(), "/client_command_test_", name);
  }

  std::unique_ptr<FakeInferenceServer> server_;
};

TEST_F(ClientCommandTest, LiveAndReady) {
  Result r = Run({"live"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_EQ(r.out, "live\n");
  r = Run({"ready"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_EQ(r.out, "ready\n");
  r = Run({"ready", "--model", "double"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  r = Run({"ready", "--model", "triple"});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_EQ(r.out, "not ready\n");
  // Global flags also work after the command.
  r = RunClient({"live", "--url=" + server_->address()});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
}

TEST_F(ClientCommandTest, HealthIsGrpcHealthV1) {
  Result r = Run({"health"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
  r = Run({"health", "--service", "no.such.Service"});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StrContains(r.err, "NOT_FOUND")) << r.err;
}

TEST_F(ClientCommandTest, MetadataConfigAndStats) {
  Result r = Run({"metadata"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_EQ(r.out,
            "name: fake-inference-server\nversion: 0.1\n"
            "extensions: model_configuration, statistics, system_shared_memory\n");

  r = Run({"metadata", "--model", "count_true"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_EQ(r.out,
            "model: count_true\nversions: 1\nplatform: graphserve_fake\ninputs:\n"
            "  flags BOOL [-1,3]\n  offset INT64 [-1,1]\noutputs:\n  count INT64 [-1,1]\n");

  r = Run({"config", "--model", "double"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "max_batch_size: 8")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "data_type: TYPE_FP32")) << r.out;

  ASSERT_EQ(Run({"infer", "--model", "double", "--batch-size", "3"}).code, kClientExitOk);
  r = Run({"stats", "--model", "double"});
  EXPECT_EQ(r.code, kClientExitOk) << r.err;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.out;
  const std::vector<std::string> cells = absl::StrSplit(lines[1], ' ', absl::SkipEmpty());
  ASSERT_GE(cells.size(), 6u);
  EXPECT_EQ(cells[0], "double");
  EXPECT_EQ(cells[2], "3");  // inferences: one request of 3 rows
  EXPECT_EQ(cells[3], "1");  // executions
}

TEST_F(ClientCommandTest, UnknownModelKeepsTheServersError) {
  for (const std::string command : {"metadata", "config", "infer", "perf"}) {
    const Result r = Run({command, "--model", "triple"});
    EXPECT_EQ(r.code, kClientExitFailure) << command;
    EXPECT_EQ(r.err, absl::StrCat("graphserve-client: ", command,
                                  ": NOT_FOUND: unknown model 'triple'\n"));
  }
}

TEST_F(ClientCommandTest, InferFromFilesPrintsAndWritesOutputs) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};  // 2 rows of 4
  const std::string x_path = TempPath("x.bin");
  WriteFile(x_path, Bytes(x));
  const std::string dir = TempPath("outputs");
  const Result r = Run({"infer", "--model", "double", "--batch-size", "2", "--input", "x=" + x_path,
                        "--output-dir", dir});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  const std::string y = Bytes(std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16});
  EXPECT_EQ(r.out, absl::StrCat("model double version 1, batch 2\n"
                                "output y FP32 [2,4] 32 bytes, fnv1a64 ",
                                absl::StrFormat("%016x", ReferenceFnv1a(y)),
                                "\n  first 8 of 8: 2 4 6 8 10 12 14 16\n"
                                "wrote ",
                                dir, "/y.bin\n"));
  EXPECT_EQ(ReadFile(dir + "/y.bin"), y);
  std::remove(x_path.c_str());
}

TEST_F(ClientCommandTest, InferBoolAndInt64InputsFromFiles) {
  const std::string flags_path = TempPath("flags.bin");
  const std::string offset_path = TempPath("offset.bin");
  WriteFile(flags_path, std::string("\1\1\1\0\1\0", 6));  // rows: 3 true, 1 true
  WriteFile(offset_path, Bytes(std::vector<int64_t>{100, -1}));
  const Result r = Run({"infer", "--model", "count_true", "--batch-size=2",
                        "--input=flags=" + flags_path, "--input", "offset=" + offset_path});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "output count INT64 [2,1] 16 bytes")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "first 2 of 2: 103 0\n")) << r.out;
}

TEST_F(ClientCommandTest, InferRejectsFilesOfTheWrongSize) {
  const std::string x_path = TempPath("short.bin");
  WriteFile(x_path, std::string(12, '\0'));
  Result r = Run({"infer", "--model", "double", "--input", "x=" + x_path});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StrContains(r.err, "input x: FP32 [1,4] needs 16 bytes, got 12")) << r.err;
  r = Run({"infer", "--model", "double", "--input", "x=" + TempPath("missing.bin")});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StrContains(r.err, "cannot open")) << r.err;
  r = Run({"infer", "--model", "double", "--input", "z=" + x_path});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StrContains(r.err, "no input 'z' (inputs: x)")) << r.err;
  std::remove(x_path.c_str());
}

TEST_F(ClientCommandTest, InferWithRandomInputsIsSeeded) {
  const Result a = Run({"infer", "--model", "double", "--seed", "3"});
  const Result b = Run({"infer", "--model", "double", "--seed", "3"});
  const Result c = Run({"infer", "--model", "double", "--seed", "4"});
  ASSERT_EQ(a.code, kClientExitOk) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST_F(ClientCommandTest, PerfPrintsTableAndWritesCsv) {
  const std::string csv = TempPath("perf.csv");
  const Result r = Run({"perf", "--model", "double", "--batch-size", "2", "--concurrency", "1,2",
                        "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs",
                        "0.05", "--csv", csv});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 1, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 2, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "concurrency      infer/s")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "wrote " + csv)) << r.out;
  const std::vector<std::string> lines = absl::StrSplit(ReadFile(csv), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(lines[0], "Concurrency,Inferences/Second,Client Send,"));
  EXPECT_TRUE(absl::EndsWith(lines[0],
                             ",Floor p50 latency,Floor p99 latency,Full-chunk replay,"
                             "Served overhead"));
  EXPECT_TRUE(absl::StartsWith(lines[1], "1,"));
  EXPECT_TRUE(absl::StartsWith(lines[2], "2,"));
  // The floor beside the served numbers; the fake server's config measures
  // no costs, so the overhead is left out, saying why.
  EXPECT_TRUE(absl::StrContains(r.out, ", floor p50 ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "floor p50  floor p99")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "full-chunk replay of batch 2: unknown")) << r.out;
  std::remove(csv.c_str());
}

TEST_F(ClientCommandTest, PerfReportsTheServedOverheadFromTheCapturedCost) {
  FakeInferenceServerOptions options;
  options.capture.add_batch_sizes(2);
  inference::CaptureCost* cost = options.capture.add_cost();
  cost->set_batch_size(2);
  cost->set_graph_us(12.5);
  StartServer(options);
  const Result r =
      Run({"perf", "--model", "double", "--batch-size", "2", "--concurrency", "2",
           "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs", "0.05"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, ", served overhead ")) << r.out;
  EXPECT_TRUE(absl::StrContains(
      r.out,
      "full-chunk replay of batch 2: 12.5 us, the model's measured graph replay of batch 2\n"))
      << r.out;
  const Result none =
      Run({"perf", "--model", "double", "--concurrency", "1", "--floor-windows", "0",
           "--measurement-interval-ms", "100", "--windows", "1", "--warmup-secs", "0"});
  ASSERT_EQ(none.code, kClientExitOk) << none.err;
  EXPECT_FALSE(absl::StrContains(none.out, "floor")) << none.out;
}

TEST_F(ClientCommandTest, PerfRequestRate) {
  const std::string csv = TempPath("rate.csv");
  const std::string timeline = TempPath("rate_timeline.csv");
  const Result r = Run({"perf", "--model", "double", "--request-rate", "100",
                        "--request-distribution", "poisson", "--measurement-interval-ms", "150",
                        "--windows", "1", "--warmup-secs", "0", "--csv", csv, "--timeline",
                        timeline});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "Request Rate: 100, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StartsWith(ReadFile(csv), "Request Rate,Inferences/Second,"));
  EXPECT_TRUE(absl::StrContains(r.out, "wrote " + timeline)) << r.out;
  // A header, then a row per measured request: about 15 at 100/s for 150 ms.
  const std::vector<std::string> rows =
      absl::StrSplit(ReadFile(timeline), '\n', absl::SkipEmpty());
  ASSERT_GE(rows.size(), 2u);
  EXPECT_EQ(rows[0], "Request Rate,Sent us,Latency us,OK");
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_TRUE(absl::StartsWith(rows[i], "100,")) << rows[i];
    EXPECT_TRUE(absl::EndsWith(rows[i], ",1")) << rows[i];
  }
  std::remove(csv.c_str());
  std::remove(timeline.c_str());
}

TEST_F(ClientCommandTest, PerfStreamingSendsOverAStreamPerSlot) {
  const std::string csv = TempPath("streaming.csv");
  const Result r = Run({"perf", "--model", "double", "--batch-size", "2", "--concurrency", "1,2",
                        "--streaming", "--measurement-interval-ms", "150", "--windows", "1",
                        "--warmup-secs", "0.05", "--csv", csv});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out,
                                "requests over ModelStreamInfer streams, one request at a time "
                                "on each; the floor over unary calls\n"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 1, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 2, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "floor p50  floor p99")) << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "requests failed")) << r.out;
  EXPECT_EQ(server_->stream_calls(), 1 + 2);  // one per slot of each level
  EXPECT_GT(server_->live_calls(), 0);        // the floor
  // The CSV's columns are the same as without streams.
  const std::vector<std::string> lines = absl::StrSplit(ReadFile(csv), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(absl::StartsWith(lines[0], "Concurrency,Inferences/Second,Client Send,"));
  EXPECT_TRUE(absl::EndsWith(lines[0], ",Served overhead"));
  std::remove(csv.c_str());

  const Result help = RunClient({"perf", "--help"});
  EXPECT_TRUE(absl::StrContains(help.out, "--streaming sends the requests over ModelStreamInfer"))
      << help.out;
}

TEST_F(ClientCommandTest, PerfStreamingAtARequestRate) {
  const Result r = Run({"perf", "--model", "double", "--request-rate", "400", "--streaming",
                        "--measurement-interval-ms", "300", "--windows", "1", "--warmup-secs",
                        "0.05", "--floor-windows", "0"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "Request Rate: 400, throughput: ")) << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "requests failed")) << r.out;
  // As many streams as requests were in flight at once: at least one, far
  // fewer than the requests sent.
  EXPECT_GT(server_->stream_calls(), 0);
  EXPECT_LT(server_->stream_calls(), 100);
}

TEST_F(ClientCommandTest, PerfStreamingThroughSystemSharedMemory) {
  const Result r = Run({"perf", "--model", "double", "--concurrency", "3", "--streaming",
                        "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs",
                        "0.05", "--shared-memory", "system"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 3, throughput: ")) << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "requests failed")) << r.out;
  EXPECT_EQ(server_->stream_calls(), 3);
  EXPECT_EQ(server_->registered_regions(), 0);  // unregistered at the end
}

// --header reaches every call as gRPC metadata, its name in lower case:
// the shared-memory calls, ModelInfer, the streams of perf --streaming
// (the shared-memory owner's use, Note [Shared memory owners]). A header
// without a colon is a usage error.
TEST_F(ClientCommandTest, HeadersGoWithEveryCall) {
  const std::string owner = "graphserve-shared-memory-owner";
  Result r = Run({"--header", "GraphServe-Shared-Memory-Owner: s3cret", "infer", "--model",
                  "double", "--shared-memory", "system"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  // The region registered, the request, the region unregistered.
  EXPECT_EQ(server_->calls_with_metadata(owner, "s3cret"), 3);
  EXPECT_EQ(server_->calls_with_metadata(owner, "GraphServe-Shared-Memory-Owner: s3cret"), 0);
  const int64_t before = server_->calls_with_metadata("tenant", "a");
  r = Run({"perf", "--model", "double", "--concurrency", "2", "--streaming",
           "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs", "0.05",
           "--header", "tenant:a", "--header", "key:b"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_GE(server_->calls_with_metadata("tenant", "a") - before, 2);  // the two streams
  EXPECT_GE(server_->calls_with_metadata("key", "b"), 2);
  // What gRPC would abort on is a usage error instead.
  for (const std::string bad : {"no-colon", "has space:v", "grpc-timeout:1", ":v", "k:tab\there"}) {
    r = Run({"--header", bad, "live"});
    EXPECT_EQ(r.code, kClientExitUsage) << bad;
    EXPECT_TRUE(absl::StrContains(r.err, "--header wants NAME:VALUE")) << r.err;
  }
}

TEST_F(ClientCommandTest, InferThroughSystemSharedMemoryPrintsTheSame) {
  const std::vector<float> x = {1, 2, 3, 4, -5, 6.5f, 7, 8};  // 2 rows of 4
  const std::string x_path = TempPath("shm_x.bin");
  WriteFile(x_path, Bytes(x));
  const std::vector<std::string> args = {"infer", "--model", "double", "--batch-size", "2",
                                         "--input", "x=" + x_path};
  const Result in_messages = Run(args);
  ASSERT_EQ(in_messages.code, kClientExitOk) << in_messages.err;
  std::vector<std::string> shared = args;
  shared.insert(shared.end(), {"--shared-memory", "system"});
  const Result in_region = Run(shared);
  ASSERT_EQ(in_region.code, kClientExitOk) << in_region.err;
  EXPECT_EQ(in_region.out, in_messages.out);
  EXPECT_TRUE(absl::StrContains(in_region.out, "first 8 of 8: 2 4 6 8 -10 13 14 16\n"))
      << in_region.out;

  // The bytes written out are the region's too.
  const std::string dir = TempPath("shm_outputs");
  shared.insert(shared.end(), {"--output-dir", dir});
  ASSERT_EQ(Run(shared).code, kClientExitOk);
  EXPECT_EQ(ReadFile(dir + "/y.bin"), Bytes(std::vector<float>{2, 4, 6, 8, -10, 13, 14, 16}));
  EXPECT_EQ(server_->registered_regions(), 0);  // unregistered at the end
  std::remove(x_path.c_str());
}

TEST_F(ClientCommandTest, InferTwoInputsFromSystemSharedMemory) {
  const std::string flags_path = TempPath("shm_flags.bin");
  const std::string offset_path = TempPath("shm_offset.bin");
  WriteFile(flags_path, std::string("\1\1\1\0\1\0", 6));  // rows: 3 true, 1 true
  WriteFile(offset_path, Bytes(std::vector<int64_t>{100, -1}));
  const Result r = Run({"infer", "--model", "count_true", "--batch-size=2",
                        "--input=flags=" + flags_path, "--input", "offset=" + offset_path,
                        "--shared-memory", "system"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "output count INT64 [2,1] 16 bytes")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "first 2 of 2: 103 0\n")) << r.out;
}

TEST_F(ClientCommandTest, PerfThroughSystemSharedMemory) {
  const Result r = Run({"perf", "--model", "double", "--batch-size", "2", "--concurrency", "1,3",
                        "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs",
                        "0.05", "--shared-memory", "system"});
  ASSERT_EQ(r.code, kClientExitOk) << r.err;
  // Inputs x [2,4] at 0, outputs y [2,4] at the next 256-byte boundary.
  EXPECT_TRUE(absl::StrContains(
      r.out, "inputs and outputs in system shared memory: one 288-byte region per request in "
             "flight\n"))
      << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "Concurrency: 3, throughput: ")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "concurrency      infer/s")) << r.out;  // same columns
  EXPECT_FALSE(absl::StrContains(r.out, "requests failed")) << r.out;
  EXPECT_EQ(server_->registered_regions(), 0);

  const Result rate = Run({"perf", "--model", "double", "--request-rate", "200",
                           "--measurement-interval-ms", "150", "--windows", "1", "--warmup-secs",
                           "0", "--shared-memory", "system"});
  ASSERT_EQ(rate.code, kClientExitOk) << rate.err;
  EXPECT_TRUE(absl::StrContains(rate.out, "Request Rate: 200, throughput: ")) << rate.out;
  EXPECT_EQ(server_->registered_regions(), 0);
}

TEST_F(ClientCommandTest, SharedMemoryRefusesAnOutputLargerThanItsSize) {
  const Result r = Run({"perf", "--model", "double", "--batch-size", "2", "--shared-memory",
                        "system", "--output-shared-memory-size", "16"});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_EQ(r.err,
            "graphserve-client: perf: INVALID_ARGUMENT: output y (FP32 [2,4]) needs 32 bytes of "
            "shared memory but --output-shared-memory-size is 16; pass "
            "--output-shared-memory-size 32 or more\n");
  EXPECT_EQ(server_->registered_regions(), 0);
  EXPECT_EQ(server_->infer_calls(), 0);
}

TEST_F(ClientCommandTest, CudaSharedMemoryWithoutAGpuSaysSo) {
  for (const std::string command : {"infer", "perf"}) {
    const Result r = Run({command, "--model", "double", "--shared-memory", "cuda"});
    EXPECT_EQ(r.code, kClientExitFailure) << command;
    if (CheckCudaDevice(0).ok()) {
      // The fake serves system shared memory only (CUDA: UNIMPLEMENTED).
      EXPECT_TRUE(absl::StrContains(r.err, "UNIMPLEMENTED")) << r.err;
    } else {
      EXPECT_TRUE(absl::StartsWith(
          r.err, absl::StrCat("graphserve-client: ", command,
                              ": FAILED_PRECONDITION: no CUDA device: --shared-memory cuda "
                              "needs a GPU on the client's machine (")))
          << r.err;
    }
  }
  EXPECT_EQ(server_->registered_regions(), 0);
}

TEST_F(ClientCommandTest, PerfWithFailedRequestsExitsOne) {
  StartServer({.fail_every_nth_infer = 3});
  const Result r = Run({"perf", "--model", "double", "--measurement-interval-ms", "100",
                        "--windows", "1", "--warmup-secs", "0"});
  EXPECT_EQ(r.code, kClientExitFailure);
  EXPECT_TRUE(absl::StrContains(r.err, "measured requests failed")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "requests failed; first: INTERNAL: injected failure"))
      << r.out;
}

}  // namespace
}  // namespace graphserve
