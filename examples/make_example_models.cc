// Writes GraphServe's example models (examples/example_models.h) as ONNX files.
//
//   make_example_models [--out DIR]
//
// DIR defaults to the current directory (the one `bazel run` was started in,
// not the runfiles tree) and is created if missing.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/example_models.h"

namespace {

constexpr char kUsage[] =
    "usage: make_example_models [--out DIR]\n"
    "\n"
    "Writes mlp.onnx and dlrm_dense.onnx (deterministic weights, batch dim\n"
    "symbolic) into DIR.\n"
    "\n"
    "  --out DIR   output directory, created if missing (default: .)\n"
    "  --help      this message\n";

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = ".";
  if (const char* invocation_dir = std::getenv("BUILD_WORKING_DIRECTORY")) {
    out_dir = invocation_dir;  // under `bazel run`, the cwd is the runfiles tree
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--out" && i + 1 < argc) {
      out_dir = argv[++i];
    } else if (arg.rfind("--out=", 0) == 0) {
      out_dir = arg.substr(std::strlen("--out="));
    } else {
      std::fprintf(stderr, "make_example_models: unexpected argument '%s'\n\n%s", arg.c_str(),
                   kUsage);
      return 2;
    }
  }
  std::vector<std::string> written;
  absl::Status status = graphserve::WriteExampleModels(out_dir, &written);
  if (!status.ok()) {
    std::fprintf(stderr, "make_example_models: %s\n", status.ToString().c_str());
    return 1;
  }
  for (const std::string& path : written) std::printf("wrote %s\n", path.c_str());
  return 0;
}
