#include "capture/capture_command.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "examples/example_models.h"
#include "absl/strings/str_join.h"
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
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "8", "--streams",
       "0"},
      {"frobnicate"},
      {"select", "--num-sizes", "2"},
      {"select", "--history", path_},
      {"select", "--history", path_, "--num-sizes", "-1"},
      {"select", "--history", path_, "--num-sizes", "two"},
      {"select", "--history", path_, "--num-sizes", "2", "--max-batch-size", "-4"},
      {"select", "--history", path_, "--num-sizes", "2", "--bogus"},
      {"select", "--history", path_, "--num-sizes", "2", "extra"},
      {"schedule"},
      {"schedule", "--model", "m.onnx", "--policy", "fastest"},
      {"schedule", "--model", "m.onnx", "--batch-size", "0"},
      {"schedule", "--model", "m.onnx", "--max-lanes", "0"},
  };
  for (const std::vector<std::string>& args : cases) {
    const Result r = RunCapture(args);
    EXPECT_EQ(r.code, 2) << absl::StrJoin(args, " ");
    EXPECT_FALSE(r.err.empty()) << absl::StrJoin(args, " ");
    EXPECT_EQ(r.out, "") << absl::StrJoin(args, " ");
  }
  EXPECT_TRUE(absl::StrContains(RunCapture({"prepare"}).err, "--model is required"));
}

TEST_F(CaptureCommandTest, PrepareWithoutAGpuExitsOneSayingSo) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is visible; the GPU check covers prepare";
  const Result r = RunCapture(
      {"prepare", "--model", "m.onnx", "--out", "repo/m", "--batch-sizes", "1,8"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "needs a CUDA GPU")) << r.err;
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

  const Result missing = RunCapture({"schedule", "--model", absl::StrCat(dir, "/none.onnx")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(absl::StrContains(missing.err, "none.onnx")) << missing.err;
}

}  // namespace
}  // namespace graphserve
