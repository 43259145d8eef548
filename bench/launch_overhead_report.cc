#include "bench/launch_overhead_report.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_text.h"

namespace graphserve {

const char kLaunchOverheadHostTimeMeaning[] =
    "std::chrono::steady_clock wall time the host spends issuing one iteration, from before "
    "the first launch call to after the last launch or event record call returns";
const char kLaunchOverheadDeviceTimeMeaning[] =
    "cudaEventElapsedTime between events recorded on the first stream before and after one "
    "iteration; every iteration is synchronised before the next, so none overlap";

namespace {

std::string TableNumber(double value) {
  if (!std::isfinite(value)) return "n/a";
  return absl::StrFormat("%.2f", value);
}

// 13000 -> "13.0".
std::string CudaVersion(int version) {
  return absl::StrCat(version / 1000, ".", version % 1000 / 10);
}

std::string JsonTiming(const LaunchTiming& timing) {
  return absl::StrCat("{\"host_us\": ", JsonNumber(timing.host_us),
                      ", \"device_us\": ", JsonNumber(timing.device_us), "}");
}

}  // namespace

double StreamOverGraphRatio(double stream, double graph) {
  if (!std::isfinite(stream) || !std::isfinite(graph) || graph <= 0) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return stream / graph;
}

std::string FormatLaunchOverheadTable(const LaunchOverheadReport& report) {
  std::string out = absl::StrFormat(
      "Launch overhead on %s (CUDA runtime %s, driver %s): %d empty kernels (<<<1,1>>>) per "
      "iteration, medians over %d timed iterations after %d warm-up iterations per row.\n\n",
      report.device_name, CudaVersion(report.cuda_runtime_version),
      CudaVersion(report.cuda_driver_version), report.kernels_per_iteration, report.iters,
      report.warmup);
  absl::StrAppend(&out, "- host us: ", kLaunchOverheadHostTimeMeaning, ".\n");
  absl::StrAppend(&out, "- device us: ", kLaunchOverheadDeviceTimeMeaning, ".\n");
  absl::StrAppend(&out,
                  "- stream: kernels launched one by one, events for fork and join; graph: the "
                  "same sequence captured once (cudaStreamCaptureModeThreadLocal), instantiated, "
                  "uploaded, then one cudaGraphLaunch per iteration.\n");
  for (const TopologyTiming& t : report.topologies) {
    absl::StrAppend(&out, "- ", t.topology, ": ", t.description, ".\n");
  }
  absl::StrAppend(
      &out, "- CUDA_DEVICE_MAX_CONNECTIONS: ",
      report.device_max_connections.empty() ? "unset (default 8)" : report.device_max_connections,
      ".\n\n");

  absl::StrAppend(&out,
                  "| topology | method | host us | device us | host ratio stream/graph | "
                  "device ratio stream/graph |\n",
                  "|---|---|---:|---:|---:|---:|\n");
  for (const TopologyTiming& t : report.topologies) {
    absl::StrAppend(&out, "| ", t.topology, " | stream | ", TableNumber(t.stream.host_us), " | ",
                    TableNumber(t.stream.device_us), " |  |  |\n");
    absl::StrAppend(&out, "| ", t.topology, " | graph | ", TableNumber(t.graph.host_us), " | ",
                    TableNumber(t.graph.device_us), " | ",
                    TableNumber(StreamOverGraphRatio(t.stream.host_us, t.graph.host_us)), " | ",
                    TableNumber(StreamOverGraphRatio(t.stream.device_us, t.graph.device_us)),
                    " |\n");
  }
  return out;
}

std::string LaunchOverheadReportToJson(const LaunchOverheadReport& report) {
  std::string out = absl::StrCat(
      "{\n  \"benchmark\": \"launch_overhead\",\n  \"device\": ", JsonString(report.device_name),
      ",\n  \"cuda_runtime_version\": ", report.cuda_runtime_version,
      ",\n  \"cuda_driver_version\": ", report.cuda_driver_version,
      ",\n  \"cuda_device_max_connections\": ",
      report.device_max_connections.empty() ? "null" : JsonString(report.device_max_connections),
      ",\n  \"kernels_per_iteration\": ", report.kernels_per_iteration,
      ",\n  \"warmup\": ", report.warmup, ",\n  \"iters\": ", report.iters,
      ",\n  \"host_time\": ", JsonString(kLaunchOverheadHostTimeMeaning),
      ",\n  \"device_time\": ", JsonString(kLaunchOverheadDeviceTimeMeaning),
      ",\n  \"topologies\": [");
  for (size_t i = 0; i < report.topologies.size(); ++i) {
    const TopologyTiming& t = report.topologies[i];
    absl::StrAppend(&out, i == 0 ? "\n" : ",\n", "    {\"topology\": ", JsonString(t.topology),
                    ", \"description\": ", JsonString(t.description), ", \"streams\": ", t.streams,
                    ",\n     \"stream\": ", JsonTiming(t.stream),
                    ", \"graph\": ", JsonTiming(t.graph),
                    ",\n     \"host_ratio_stream_over_graph\": ",
                    JsonNumber(StreamOverGraphRatio(t.stream.host_us, t.graph.host_us)),
                    ", \"device_ratio_stream_over_graph\": ",
                    JsonNumber(StreamOverGraphRatio(t.stream.device_us, t.graph.device_us)), "}");
  }
  absl::StrAppend(&out, report.topologies.empty() ? "]\n}\n" : "\n  ]\n}\n");
  return out;
}

}  // namespace graphserve
