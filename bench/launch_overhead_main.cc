// launch_overhead: times 32 empty kernels in three topologies, launched kernel
// by kernel on streams and as one captured CUDA graph, on the host and on the
// device; prints a markdown table. See bench/launch_overhead_benchmark.h.
//
// Exit status: 0 on success, 1 for a bad flag or a failure, 2 when there is
// no CUDA device (or no driver) to run on.

#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "bench/launch_overhead_benchmark.h"
#include "bench/launch_overhead_report.h"

namespace {

constexpr int kExitFailure = 1;
constexpr int kExitNoDevice = 2;

int Fail(const absl::Status& status) {
  std::cerr << "launch_overhead: " << status << "\n";
  return kExitFailure;
}

}  // namespace

int main(int argc, char** argv) {
  graphserve::LaunchOverheadOptions options;
  int64_t device = options.device;
  int64_t fork_join_streams = options.fork_join_streams;
  std::string json_path;
  graphserve::CommandLine command_line(
      "launch_overhead [--iters N] [--warmup N] [--fork-join-streams N] [--device N] "
      "[--json FILE]");
  command_line.AddInt("iters", &options.iters,
                      "Timed iterations per (topology, method); medians are reported.");
  command_line.AddInt("warmup", &options.warmup,
                      "Untimed iterations before each (topology, method) timing loop.");
  command_line.AddInt("fork-join-streams", &fork_join_streams,
                      "Side streams fork_join spreads its 30 parallel kernels over, "
                      "round-robin (1 to 30).");
  command_line.AddInt("device", &device, "CUDA device ordinal.");
  command_line.AddString("json", &json_path, "Also write the results to this JSON file.");

  if (absl::Status status = command_line.Parse(argc, argv); !status.ok()) return Fail(status);
  if (command_line.help_requested()) {
    std::cout << command_line.Help();
    return 0;
  }
  // Range checks of the rest are RunLaunchOverheadBenchmark's; these two only
  // have to survive the narrowing to int.
  if (device < 0 || device > 1024) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--device ", device, " is out of range")));
  }
  if (fork_join_streams < 1 || fork_join_streams > 1024) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--fork-join-streams ", fork_join_streams, " is outside [1, 30]")));
  }
  options.device = static_cast<int>(device);
  options.fork_join_streams = static_cast<int>(fork_join_streams);

  const absl::StatusOr<int> devices = graphserve::CountCudaDevices();
  if (!devices.ok() || *devices == 0) {
    std::cerr << "launch_overhead: no CUDA device to run on ("
              << (devices.ok() ? "cudaGetDeviceCount found 0 devices"
                               : std::string(devices.status().message()))
              << "); this benchmark needs a GPU.\n";
    return kExitNoDevice;
  }

  const absl::StatusOr<graphserve::LaunchOverheadReport> report =
      graphserve::RunLaunchOverheadBenchmark(options);
  if (!report.ok()) return Fail(report.status());
  std::cout << graphserve::FormatLaunchOverheadTable(*report) << std::flush;

  if (!json_path.empty()) {
    std::ofstream json(json_path, std::ios::trunc);
    json << graphserve::LaunchOverheadReportToJson(*report);
    json.close();
    if (!json) return Fail(absl::InternalError(absl::StrCat("cannot write ", json_path)));
  }
  return 0;
}
