// Runs ONNX's node tests through GraphServe's import, binding and an executor.
//
//   onnx_conformance [--executor=host|cuda] [--data DIR] [--filter SUBSTRING] [--verbose]
//
// Prints each failure with the worst element, then "K skipped" and, last,
// "N passed, M failed". Exits 1 when a test fails, 2 on bad usage.

#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_executor.h"
#include "runtime/host/host_executor.h"
#include "tests/node_test_runner.h"

namespace graphserve {
namespace {

constexpr char kUsage[] =
    "usage: onnx_conformance [--executor=host|cuda] [--data DIR] [--filter SUBSTRING] "
    "[--verbose]\n"
    "\n"
    "Runs ONNX's node tests (model.onnx + test_data_set_*/) through import,\n"
    "binding and the chosen executor, comparing outputs with ONNX's expected\n"
    "tensors (float: |got - expected| <= 1e-7 + 1e-3 * |expected|).\n"
    "\n"
    "  --executor=host|cuda  executor under test (default: host)\n"
    "  --data DIR            node test directory (default: "
    "/usr/share/libonnx-testdata/data/node)\n"
    "  --filter SUBSTRING    only tests whose name contains SUBSTRING\n"
    "  --verbose             a line per test and the skip reasons\n"
    "  --help                this message\n";

absl::StatusOr<std::unique_ptr<Executor>> MakeHostExecutor(BoundGraph graph) {
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(std::move(graph));
  if (!executor.ok()) return executor.status();
  return std::unique_ptr<Executor>(*std::move(executor));
}

// The CUDA path: default options (exact float32 GEMMs, fused epilogues) and
// private device resources per graph.
absl::StatusOr<std::unique_ptr<Executor>> MakeCudaExecutor(BoundGraph graph) {
  absl::StatusOr<std::unique_ptr<CudaExecutor>> executor =
      CudaExecutor::Create(std::move(graph), CudaExecutorOptions{});
  if (!executor.ok()) return executor.status();
  return std::unique_ptr<Executor>(*std::move(executor));
}

// Accepts "--name=value" and "--name value"; advances `i` past a separate value.
bool TakeValue(const std::string& name, int argc, char** argv, int* i, std::string* value) {
  const std::string arg = argv[*i];
  const std::string flag = "--" + name;
  if (arg.rfind(flag + "=", 0) == 0) {
    *value = arg.substr(flag.size() + 1);
    return true;
  }
  if (arg == flag && *i + 1 < argc) {
    *value = argv[++*i];
    return true;
  }
  return false;
}

int Main(int argc, char** argv) {
  ConformanceOptions options;
  std::string executor = "host";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--verbose") {
      options.verbose = true;
    } else if (!TakeValue("executor", argc, argv, &i, &executor) &&
               !TakeValue("data", argc, argv, &i, &options.data_dir) &&
               !TakeValue("filter", argc, argv, &i, &options.filter)) {
      std::fprintf(stderr, "onnx_conformance: unexpected argument '%s'\n\n%s", arg.c_str(),
                   kUsage);
      return 2;
    }
  }
  if (executor == "host") {
    options.make_executor = MakeHostExecutor;
  } else if (executor == "cuda") {
    options.make_executor = MakeCudaExecutor;
  } else {
    std::fprintf(stderr, "onnx_conformance: --executor must be host or cuda, not '%s'\n",
                 executor.c_str());
    return 2;
  }
  absl::StatusOr<ConformanceSummary> summary = RunConformance(options, std::cout);
  if (!summary.ok()) {
    std::fprintf(stderr, "onnx_conformance: %s\n", summary.status().ToString().c_str());
    return 2;
  }
  return summary->failed > 0 ? 1 : 0;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) { return graphserve::Main(argc, argv); }
