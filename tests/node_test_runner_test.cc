#include "tests/node_test_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx/onnx_pb.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A node test with one float output of dims [3,4,5].
constexpr char kAddTest[] = "/usr/share/libonnx-testdata/data/node/test_add";

HostTensor Floats(Dims dims, std::vector<float> values) {
  HostTensor tensor(DType::kFloat32, std::move(dims));
  std::copy(values.begin(), values.end(), tensor.data<float>());
  return tensor;
}

absl::StatusOr<std::unique_ptr<Executor>> MakeHostExecutor(BoundGraph graph) {
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(std::move(graph));
  if (!executor.ok()) return executor.status();
  return std::unique_ptr<Executor>(*std::move(executor));
}

TEST(CompareTensorsTest, FloatToleranceIsOnnxs) {
  const float kNan = std::numeric_limits<float>::quiet_NaN();
  const float kInf = std::numeric_limits<float>::infinity();
  HostTensor expected = Floats({2, 3}, {1000, 0, kNan, kInf, -1, 2});
  // 1000 + 1.0 is within 1e-7 + 1e-3 * 1000; 0 + 5e-8 within atol.
  EXPECT_EQ(CompareTensors(Floats({2, 3}, {1001, 5e-8f, kNan, kInf, -1, 2}), expected), "");
  // 1000 + 1.1 is not.
  std::string message = CompareTensors(Floats({2, 3}, {1001.1f, 0, kNan, kInf, -1, 2}), expected);
  EXPECT_THAT(message, HasSubstr("1 of 6 elements differ; worst at [0,0]: got 1001.09998"));
  // A NaN where a number is expected is the worst miss.
  message = CompareTensors(Floats({2, 3}, {1001.1f, 0, kNan, kInf, kNan, 2}), expected);
  EXPECT_THAT(message, HasSubstr("2 of 6 elements differ; worst at [1,1]: got nan"));
  EXPECT_THAT(CompareTensors(Floats({2, 3}, {1000, 0, 1, kInf, -1, 2}), expected),
              HasSubstr("worst at [0,2]"));
  EXPECT_THAT(CompareTensors(Floats({2, 3}, {1000, 0, kNan, -kInf, -1, 2}), expected),
              HasSubstr("worst at [1,0]"));
}

TEST(CompareTensorsTest, DimsAndTypesAndIntegers) {
  EXPECT_THAT(CompareTensors(Floats({3, 2}, std::vector<float>(6)),
                             Floats({2, 3}, std::vector<float>(6))),
              HasSubstr("dims [3,2], expected [2,3]"));
  HostTensor ints(DType::kInt64, {3});
  EXPECT_THAT(CompareTensors(ints, Floats({3}, {0, 0, 0})), HasSubstr("dtype int64"));
  HostTensor other = ints;
  other.data<int64_t>()[1] = 7;
  other.data<int64_t>()[2] = 1;
  EXPECT_THAT(CompareTensors(other, ints), HasSubstr("2 of 3 elements differ; worst at [1]: got 7"));
  HostTensor bools(DType::kBool, {2});
  HostTensor flipped = bools;
  flipped.data<bool>()[1] = true;
  EXPECT_THAT(CompareTensors(flipped, bools), HasSubstr("worst at [1]: got true, expected false"));
}

// test_add with one expected element changed: the runner must fail it and
// point at that element; the untouched test passes.
TEST(RunNodeTestTest, FindsAWrongElementInOnnxData) {
  if (!fs::exists(kAddTest)) GTEST_SKIP() << kAddTest << " missing: install libonnx-testdata";
  EXPECT_EQ(RunNodeTest(kAddTest, MakeHostExecutor).outcome, NodeTestResult::Outcome::kPassed);

  const fs::path copy = fs::path(testing::TempDir()) / "test_add_tampered";
  fs::remove_all(copy);
  fs::copy(kAddTest, copy, fs::copy_options::recursive);
  const fs::path output = copy / "test_data_set_0" / "output_0.pb";
  onnx::TensorProto proto;
  {
    std::ifstream in(output, std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  ASSERT_TRUE(proto.has_raw_data());
  std::string raw = proto.raw_data();
  const int64_t flat = (1 * 4 + 2) * 5 + 3;  // [1,2,3] of [3,4,5]
  float value;
  std::memcpy(&value, raw.data() + flat * sizeof(float), sizeof(float));
  value += 1.0f;
  std::memcpy(raw.data() + flat * sizeof(float), &value, sizeof(float));
  proto.set_raw_data(raw);
  {
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }

  NodeTestResult result = RunNodeTest(copy.string(), MakeHostExecutor);
  EXPECT_TRUE(result.outcome == NodeTestResult::Outcome::kFailed);
  ASSERT_EQ(result.messages.size(), 1u);
  EXPECT_THAT(result.messages[0], HasSubstr("test_data_set_0: output 0 'sum': 1 of 60 elements "
                                            "differ; worst at [1,2,3]"));
  fs::remove_all(copy);
}

TEST(RunNodeTestTest, UnsupportedOpIsSkipped) {
  const std::string maxunpool =
      "/usr/share/libonnx-testdata/data/node/test_maxunpool_export_without_output_shape";
  if (!fs::exists(maxunpool)) GTEST_SKIP() << maxunpool << " missing: install libonnx-testdata";
  NodeTestResult result = RunNodeTest(maxunpool, MakeHostExecutor);
  EXPECT_TRUE(result.outcome == NodeTestResult::Outcome::kSkipped);
  ASSERT_EQ(result.messages.size(), 1u);
  EXPECT_EQ(result.messages[0], "op MaxUnpool is not supported");
}

// An executor with no kernel for a bound node's dtype refuses at load, as
// binding refuses what it does not implement: a skip. Its other errors fail.
TEST(RunNodeTestTest, ExecutorRefusalIsSkippedOtherErrorsFail) {
  if (!fs::exists(kAddTest)) GTEST_SKIP() << kAddTest << " missing: install libonnx-testdata";
  const auto refusing = [](absl::Status status) {
    return [status](BoundGraph) -> absl::StatusOr<std::unique_ptr<Executor>> { return status; };
  };
  NodeTestResult result =
      RunNodeTest(kAddTest, refusing(absl::UnimplementedError("no CUDA kernel for float64")));
  EXPECT_TRUE(result.outcome == NodeTestResult::Outcome::kSkipped);
  ASSERT_FALSE(result.messages.empty());
  EXPECT_THAT(result.messages[0], HasSubstr("no CUDA kernel for float64"));
  result = RunNodeTest(kAddTest, refusing(absl::InternalError("out of memory")));
  EXPECT_TRUE(result.outcome == NodeTestResult::Outcome::kFailed);
}

TEST(RunConformanceTest, SummaryLines) {
  if (!fs::exists(kAddTest)) GTEST_SKIP() << kAddTest << " missing: install libonnx-testdata";
  ConformanceOptions options;
  options.filter = "test_add";  // test_add, test_add_bcast, test_add_uint8 (skipped)
  options.make_executor = MakeHostExecutor;
  std::ostringstream log;
  absl::StatusOr<ConformanceSummary> summary = RunConformance(options, log);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->passed, 2);
  EXPECT_EQ(summary->skipped, 1);
  EXPECT_EQ(summary->passed_by_opset, (std::map<int64_t, int>{{14, 2}}));
  EXPECT_EQ(log.str(), "passed by opset: 14:2\n1 skipped\n2 passed, 0 failed\n");
}

}  // namespace
}  // namespace graphserve
