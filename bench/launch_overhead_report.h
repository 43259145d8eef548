#pragma once
// The results of the launch-overhead benchmark (bench/launch_overhead_main.cc)
// and their two forms: a markdown table for people and JSON for scripts. Pure
// host code, so that it is tested without a GPU. What the numbers mean is
// Note [Launch overhead timing] in bench/launch_overhead_benchmark.cc.

#include <cstdint>
#include <string>
#include <vector>

#include "common/statistics.h"

namespace graphserve {

// Medians over the timed iterations, in microseconds.
struct LaunchTiming {
  double host_us = 0;    // wall-clock time the host spends issuing one iteration
  double device_us = 0;  // CUDA event time from before to after one iteration
};

// One topology of 32 empty kernels, launched both ways.
struct TopologyTiming {
  std::string topology;     // "straight_line", "two_branches" or "fork_join"
  std::string description;  // how the kernels are spread over the streams
  int streams = 1;          // streams the "stream" method issues on, the first included
  LaunchTiming stream;      // kernel by kernel on streams, events for fork and join
  LaunchTiming graph;       // one cudaGraphLaunch of the same sequence, captured once
};

struct LaunchOverheadReport {
  std::string device_name;       // cudaDeviceProp::name
  int cuda_runtime_version = 0;  // cudaRuntimeGetVersion: 1000 * major + 10 * minor
  int cuda_driver_version = 0;   // cudaDriverGetVersion, same encoding
  // CUDA_DEVICE_MAX_CONNECTIONS as the process saw it, "" when unset: the
  // number of hardware queues that the streams of the "stream" method share.
  std::string device_max_connections;
  int kernels_per_iteration = 32;
  int64_t warmup = 0;  // untimed iterations before each timing loop
  int64_t iters = 0;   // timed iterations behind each median
  std::vector<TopologyTiming> topologies;
};

// What "host us" and "device us" measure, as printed in the table's header
// and stored in the JSON.
extern const char kLaunchOverheadHostTimeMeaning[];
extern const char kLaunchOverheadDeviceTimeMeaning[];

// stream / graph; NaN when either is not finite or `graph` is not positive.
double StreamOverGraphRatio(double stream, double graph);

// A header (device, versions, iteration counts, what is timed, one line per
// topology) and a markdown table with one row per (topology, method); the
// ratios stand in the graph row. NaN prints as "n/a". Ends with a newline.
std::string FormatLaunchOverheadTable(const LaunchOverheadReport& report);

// One JSON object: the header fields, then "topologies", an array of
// {"topology", "description", "streams", "stream": {"host_us", "device_us"},
// "graph": {...}, "host_ratio_stream_over_graph", "device_ratio_stream_over_graph"}.
// Microseconds and ratios with three decimals; NaN is null. Ends with a newline.
std::string LaunchOverheadReportToJson(const LaunchOverheadReport& report);

}  // namespace graphserve
