#pragma once
// The launch-overhead benchmark of the "CUDA Graph in TensorFlow" design
// (Alibaba), on one GPU: 32 empty kernels per iteration in three topologies,
//   straight_line  32 kernels one after another on one stream;
//   two_branches   a fork onto two streams, 16 kernels on each, a join;
//   fork_join      one kernel, 30 in parallel, one joining kernel;
// each launched two ways: kernel by kernel on streams with events for the
// fork and join ("stream"), and as one CUDA graph captured once from that same
// sequence ("graph"). Timing: Note [Launch overhead timing] in the .cc file.

#include <cstdint>

#include "absl/status/statusor.h"
#include "bench/launch_overhead_report.h"

namespace graphserve {

struct LaunchOverheadOptions {
  // CUDA device ordinal.
  int device = 0;
  // Untimed iterations before each (topology, method) timing loop.
  int64_t warmup = 100;
  // Timed iterations per (topology, method); the medians are reported. At least 1.
  int64_t iters = 2000;
  // Side streams that fork_join spreads its 30 parallel kernels over,
  // round-robin; 1 to 30. 30 puts each on its own stream, so the captured
  // graph has 30 independent branches.
  int fork_join_streams = 30;
};

// The number of CUDA devices, or cudaGetDeviceCount's error (no driver, no
// device) as a Status naming the call. May be 0.
absl::StatusOr<int> CountCudaDevices();

// Runs every topology with both methods on options.device, which it makes
// current. InvalidArgument for options out of range; a CUDA failure is a
// Status naming the call, the topology and the method. Captures one graph per
// topology and checks its shape (32 kernel nodes, the expected roots) before
// timing it.
absl::StatusOr<LaunchOverheadReport> RunLaunchOverheadBenchmark(
    const LaunchOverheadOptions& options);

}  // namespace graphserve
