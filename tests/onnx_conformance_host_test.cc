// ONNX's node tests on the host executor, one gtest case per test directory,
// so that the CI test command covers conformance and names what fails.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runtime/host/host_executor.h"
#include "tests/node_test_runner.h"

namespace graphserve {
namespace {

absl::StatusOr<std::unique_ptr<Executor>> MakeHostExecutor(BoundGraph graph) {
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(std::move(graph));
  if (!executor.ok()) return executor.status();
  return std::unique_ptr<Executor>(*std::move(executor));
}

std::vector<std::string> NodeTests() {
  absl::StatusOr<std::vector<std::string>> tests = ListNodeTests(kOnnxNodeTestDir);
  return tests.ok() ? *tests : std::vector<std::string>{};
}

class OnnxNodeTest : public testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesOnnxOutputs) {
  NodeTestResult result = RunNodeTest(GetParam(), MakeHostExecutor);
  if (result.outcome == NodeTestResult::Outcome::kSkipped) {
    GTEST_SKIP() << result.messages.front();
  }
  EXPECT_TRUE(result.outcome == NodeTestResult::Outcome::kPassed)
      << absl::StrJoin(result.messages, "\n");
}

INSTANTIATE_TEST_SUITE_P(Host, OnnxNodeTest, testing::ValuesIn(NodeTests()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).filename().string();
                         });
// Without libonnx-testdata there is nothing to run; NodeTestsPresent says so.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

TEST(OnnxNodeTestData, NodeTestsPresent) {
  if (NodeTests().empty()) {
    GTEST_SKIP() << kOnnxNodeTestDir << " has no node tests: install libonnx-testdata";
  }
  SUCCEED();
}

}  // namespace
}  // namespace graphserve
