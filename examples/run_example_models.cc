// Runs GraphServe's runtime on the example models (mlp, dlrm_dense): prints a
// few outputs and the median latency per batch size, on the GPU when there is
// one (checked against the host reference executor), else on the host.
//
//   bazel run -c opt //examples:run_example_models -- [--device auto|cuda|cpu]
//       [--batch-sizes 1,16,256] [--iters 50]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cuda_handles.h"
#include "common/logging.h"
#include "common/status.h"
#include "examples/example_models.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/executor.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "common/tensor.h"

namespace graphserve {
namespace {

constexpr char kUsage[] = R"(Usage: run_example_models [options]

Runs the example models (mlp, dlrm_dense) through GraphServe's runtime and
prints outputs and median latencies per batch size.

Options:
  --device auto|cuda|cpu   executor: the CUDA one when a GPU is present (auto),
                           or forced (default: auto)
  --batch-sizes LIST       comma-separated batch sizes (default: 1,16,256)
  --iters N                timed runs per batch size (default: 50)
  --help                   this text
)";

struct Flags {
  std::string device = "auto";
  std::vector<int64_t> batch_sizes = {1, 16, 256};
  int iters = 50;
};

absl::StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(arg + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--device") {
      ASSIGN_OR_RETURN(flags.device, value());
      if (flags.device != "auto" && flags.device != "cuda" && flags.device != "cpu") {
        return absl::InvalidArgumentError("--device must be auto, cuda or cpu");
      }
    } else if (arg == "--batch-sizes") {
      ASSIGN_OR_RETURN(std::string list, value());
      flags.batch_sizes.clear();
      for (absl::string_view part : absl::StrSplit(list, ',')) {
        int64_t size = 0;
        if (!absl::SimpleAtoi(part, &size) || size < 1) {
          return absl::InvalidArgumentError("--batch-sizes: '" + std::string(part) +
                                            "' is not a positive integer");
        }
        flags.batch_sizes.push_back(size);
      }
    } else if (arg == "--iters") {
      ASSIGN_OR_RETURN(std::string text, value());
      if (!absl::SimpleAtoi(text, &flags.iters) || flags.iters < 1) {
        return absl::InvalidArgumentError("--iters must be a positive integer");
      }
    } else {
      return absl::InvalidArgumentError("unknown flag " + arg + " (see --help)");
    }
  }
  return flags;
}

// Median wall time of `iters` synchronous runs, in microseconds.
absl::StatusOr<double> MedianRunMicros(Executor& executor, const std::vector<HostTensor>& inputs,
                                       int iters) {
  std::vector<double> micros;
  for (int i = 0; i < iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(executor.Run(inputs).status());
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(micros.begin(), micros.begin() + micros.size() / 2, micros.end());
  return micros[micros.size() / 2];
}

absl::Status RunModel(const std::string& name, const onnx::ModelProto& proto, const Flags& flags,
                      bool use_cuda) {
  ASSIGN_OR_RETURN(Model model, ImportOnnxBytes(proto.SerializeAsString(), name));
  std::printf("\n%s  (inputs:", name.c_str());
  for (const ValueInfo& input : model.inputs) {
    std::printf(" %s%s", input.name.c_str(), DimsToString(input.dims).c_str());
  }
  std::printf(", -1 = batch)\n");
  std::printf("%8s  %12s  %14s  %s\n", "batch", "median us", "rel err vs host", "first outputs");
  std::shared_ptr<WeightStore> weights;
  if (use_cuda) {
    ASSIGN_OR_RETURN(weights, WeightStore::Create(0));
  }
  for (int64_t batch : flags.batch_sizes) {
    BindOptions bind_options;
    bind_options.batch_size = batch;
    ASSIGN_OR_RETURN(BoundGraph graph, BindModel(model, bind_options));
    const std::vector<HostTensor> inputs = RandomInputs(graph, static_cast<uint64_t>(batch));
    ASSIGN_OR_RETURN(std::unique_ptr<HostExecutor> host, HostExecutor::Create(graph));
    std::unique_ptr<Executor> executor;
    if (use_cuda) {
      ExecutionResources resources;
      resources.weights = weights;
      ASSIGN_OR_RETURN(executor, CudaExecutor::Create(graph, CudaExecutorOptions{}, resources));
    }
    Executor& timed = use_cuda ? *executor : static_cast<Executor&>(*host);
    ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, timed.Run(inputs));
    std::string error = "-";
    if (use_cuda) {
      ASSIGN_OR_RETURN(std::vector<HostTensor> reference, host->Run(inputs));
      char text[32];
      std::snprintf(text, sizeof(text), "%.2e", RelativeError(outputs[0], reference[0]));
      error = text;
    }
    // The host executor is a plain-loop oracle: time it less at large batches.
    const int iters = use_cuda ? flags.iters : std::max(1, flags.iters / static_cast<int>(batch));
    ASSIGN_OR_RETURN(double micros, MedianRunMicros(timed, inputs, iters));
    std::string first;
    const HostTensor& out = outputs[0];
    for (int64_t i = 0; i < std::min<int64_t>(out.num_elements(), 4); ++i) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.6f ", out.data<float>()[i]);
      first += text;
    }
    std::printf("%8lld  %12.1f  %14s  %s\n", static_cast<long long>(batch), micros, error.c_str(),
                first.c_str());
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  InitLogging(/*verbose=*/false);
  absl::StatusOr<Flags> flags = ParseFlags(argc, argv);
  if (!flags.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  const bool has_gpu = CudaDeviceCount() > 0;
  if (flags->device == "cuda" && !has_gpu) {
    std::fprintf(stderr, "error: --device cuda, but no CUDA device is visible\n");
    return 1;
  }
  const bool use_cuda = flags->device == "cuda" || (flags->device == "auto" && has_gpu);
  if (use_cuda) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("executor: CUDA on %s (latency = stage inputs, copy, run, copy back, sync)\n",
                prop.name);
  } else {
    std::printf("executor: HOST REFERENCE (no GPU%s): plain loops, for correctness, not speed\n",
                has_gpu ? " requested" : " found");
  }
  const std::pair<const char*, onnx::ModelProto> models[] = {
      {"mlp", MakeMlpModel()},
      {"dlrm_dense", MakeDlrmDenseModel()},
  };
  for (const auto& [name, proto] : models) {
    const absl::Status status = RunModel(name, proto, *flags, use_cuda);
    if (!status.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", name, std::string(status.message()).c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) { return graphserve::Main(argc, argv); }
