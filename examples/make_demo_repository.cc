// Writes the demo model repository (examples/demo_repository.h) that the
// README's main command serves:
//
//   bazel run //examples:make_demo_repository -- --out DIR
//
// A relative DIR is taken from the directory `bazel run` was started in.

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/command_line.h"
#include "examples/demo_repository.h"

int main(int argc, char** argv) {
  std::string out_dir;
  graphserve::DemoRepositoryOptions options;
  std::string sizes = "1,4,16,64,256";
  int64_t streams = options.num_streams;
  graphserve::CommandLine flags(
      "make_demo_repository --out DIR\n"
      "\n"
      "Writes a model repository holding the example models mlp and dlrm_dense\n"
      "(DIR/<model>/config.pbtxt and DIR/<model>/1/model.onnx); by default\n"
      "max_batch_size 256, captured batch sizes 1, 4, 16, 64, 256, two streams.\n"
      "Serve it with\n"
      "  bazel run -c opt //server:graphserve -- --model-repository DIR");
  flags.AddString("out", &out_dir, "The repository directory, created if missing (required).");
  flags.AddString("batch-sizes", &sizes, "Captured batch sizes of every model.");
  flags.AddInt("streams", &streams, "Stream slots per model, >= 1.");
  flags.AddInt("max-batch-size", &options.max_batch_size,
               "The largest request; above the largest captured size requests split.");
  if (absl::Status status = flags.Parse(argc, argv); !status.ok()) {
    std::cerr << "make_demo_repository: " << status.message() << "\n\n" << flags.Help();
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (out_dir.empty()) {
    std::cerr << "make_demo_repository: --out DIR is required\n\n" << flags.Help();
    return 2;
  }
  absl::StatusOr<std::vector<int64_t>> parsed_sizes = graphserve::ParseIntList(sizes, 1);
  if (!parsed_sizes.ok() || streams < 1) {
    std::cerr << "make_demo_repository: "
              << (parsed_sizes.ok() ? "--streams must be at least 1"
                                    : std::string(parsed_sizes.status().message()))
              << "\n";
    return 2;
  }
  options.batch_sizes = *parsed_sizes;
  options.num_streams = static_cast<int>(streams);
  std::filesystem::path out(out_dir);
  if (const char* invocation_dir = std::getenv("BUILD_WORKING_DIRECTORY");
      invocation_dir != nullptr && out.is_relative()) {
    out = std::filesystem::path(invocation_dir) / out;  // under `bazel run`, cwd is the runfiles
  }
  std::vector<std::string> written;
  if (absl::Status status =
          graphserve::WriteDemoRepository(out.string(), options, &written);
      !status.ok()) {
    std::cerr << "make_demo_repository: " << status.message() << "\n";
    return 1;
  }
  for (const std::string& dir : written) std::cout << "wrote " << dir << "\n";
  std::cout << "serve it with: bazel run -c opt //server:graphserve -- --model-repository "
            << out.string() << "\n";
  return 0;
}
