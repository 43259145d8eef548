#pragma once
// Runs ONNX's node tests (the onnx/backend/test/data/node directories that
// Debian ships in libonnx-testdata) through import, binding and an executor,
// and compares the outputs with ONNX's expected tensors.
//
// Each test is a directory with model.onnx and test_data_set_N/ holding
// input_K.pb and output_K.pb (serialized TensorProtos, positional). A test is
// skipped when GraphServe does not support it (import says Unimplemented, or
// a data set tensor is of another element type); it passes when every data
// set matches within ONNX's tolerances.

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/executor.h"

namespace graphserve {

// Where Debian's libonnx-testdata puts the node tests.
inline constexpr char kOnnxNodeTestDir[] = "/usr/share/libonnx-testdata/data/node";

struct NodeTestTolerance {
  // ONNX's backend test defaults (onnx/backend/test/runner): an element of
  // float output matches when |got - expected| <= atol + rtol * |expected|.
  double rtol = 1e-3;
  double atol = 1e-7;
};

struct NodeTestResult {
  enum class Outcome { kPassed, kFailed, kSkipped };
  std::string name;  // the test directory's name, e.g. "test_add_bcast"
  // The test model's default-domain opset; 0 when its import failed.
  int64_t opset = 0;
  Outcome outcome = Outcome::kFailed;
  // kFailed: one line per failing data set (stage, dims or the worst element).
  // kSkipped: the reason. kPassed: empty.
  std::vector<std::string> messages;
};

// Empty when `got` matches `expected`: same dtype and dims, float elements
// within `tolerance` (NaN matches NaN, an infinity only itself), int64 and
// bool elements equal. Otherwise what differs: the dims, or the number of
// differing elements and the worst one (index, got, expected).
std::string CompareTensors(const HostTensor& got, const HostTensor& expected,
                           const NodeTestTolerance& tolerance = {});

// The test directories under `data_dir` (those holding model.onnx), sorted,
// whose name contains `filter` (all when empty). NotFound when `data_dir` is
// not a readable directory.
absl::StatusOr<std::vector<std::string>> ListNodeTests(const std::string& data_dir,
                                                       const std::string& filter = "");

// Runs one test directory. Never fails as a call: every problem is the test's
// outcome.
NodeTestResult RunNodeTest(const std::string& test_dir, const ExecutorFactory& make_executor,
                           const NodeTestTolerance& tolerance = {});

struct ConformanceOptions {
  // Directory of node test directories.
  std::string data_dir = kOnnxNodeTestDir;
  // Only tests whose directory name contains this; empty: all.
  std::string filter;
  // Print a line per test (passes and skips too), not only failures.
  bool verbose = false;
  // The executor under test; required.
  ExecutorFactory make_executor;
  NodeTestTolerance tolerance;
};

struct ConformanceSummary {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  std::vector<std::string> failed_tests;
  // Skip reason (its first line) -> number of tests.
  std::map<std::string, int> skip_reasons;
  // Default-domain opset of the test model -> tests passed at it.
  std::map<int64_t, int> passed_by_opset;
};

// Runs every selected test, printing each failure (and, if verbose, every
// result) to `log`, then the passes by opset, "K skipped" and, last,
// "N passed, M failed".
absl::StatusOr<ConformanceSummary> RunConformance(const ConformanceOptions& options,
                                                  std::ostream& log);

}  // namespace graphserve
