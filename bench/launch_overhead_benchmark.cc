#include "bench/launch_overhead_benchmark.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "bench/launch_overhead.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {
namespace {

// Note [Launch overhead timing]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every iteration, of either method, runs the same loop body on the first
// stream, `main`:
//
//   cudaEventRecord(start, main)
//   t0 = steady_clock::now()
//   issue: the launches, event records and waits (stream), or one
//          cudaGraphLaunch (graph)
//   t1 = steady_clock::now()
//   cudaEventRecord(end, main); cudaEventSynchronize(end)
//
// host us = t1 - t0, what the CPU pays to issue one iteration: the cost a
// graph removes. device us = cudaEventElapsedTime(start, end): from the GPU
// reaching `start` to its finishing the last kernel. With the stream method
// the GPU waits for the host between launches, so the issue gaps are in it
// too, which is the point of the comparison. Every side stream joins back to
// `main` before `end` is recorded, so `end` follows all 32 kernels.
//
// Synchronising after every iteration keeps iterations from overlapping: a
// queue of pending work would hide the launch cost from the device time. The
// price is that each iteration starts from an idle GPU, for both methods
// alike. The timing events themselves are outside the host window. Each
// CUDA call in the window checks its result (a compare and a branch) the same
// way for both methods.

constexpr int kKernelsPerIteration = 32;
// two_branches: the kernels split evenly over two streams.
constexpr int kKernelsPerBranch = kKernelsPerIteration / 2;
// fork_join: every kernel but the forking and the joining one.
constexpr int kParallelKernels = kKernelsPerIteration - 2;

enum class Topology { kStraightLine, kTwoBranches, kForkJoin };

struct TopologySpec {
  Topology topology = Topology::kStraightLine;
  std::string name;
  std::string description;
  // Streams besides `main`, taken from the front of LaunchStreams::side.
  int side_streams = 0;
  // Kernels without a predecessor in the captured graph: two_branches starts
  // both branches at once, the others start with one kernel.
  size_t root_nodes = 1;
};

// The streams and events every topology issues on, created once. `main`
// begins and ends each iteration; side stream i waits on `fork` and records
// join[i], which `main` then waits on.
struct LaunchStreams {
  CudaStream main;
  std::vector<CudaStream> side;
  CudaEvent fork;
  std::vector<CudaEvent> join;  // one per side stream
  CudaEvent start;              // timing events, recorded on `main`
  CudaEvent end;
};

absl::StatusOr<LaunchStreams> CreateLaunchStreams(int side_streams) {
  ASSIGN_OR_RETURN(CudaStream main_stream, CudaStream::Create());
  ASSIGN_OR_RETURN(CudaEvent fork, CudaEvent::Create());
  ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create(/*timing=*/true));
  ASSIGN_OR_RETURN(CudaEvent end, CudaEvent::Create(/*timing=*/true));
  LaunchStreams streams{.main = std::move(main_stream),
                        .side = {},
                        .fork = std::move(fork),
                        .join = {},
                        .start = std::move(start),
                        .end = std::move(end)};
  for (int i = 0; i < side_streams; ++i) {
    ASSIGN_OR_RETURN(CudaStream side, CudaStream::Create());
    ASSIGN_OR_RETURN(CudaEvent join, CudaEvent::Create());
    streams.side.push_back(std::move(side));
    streams.join.push_back(std::move(join));
  }
  return streams;
}

// Makes the first `count` side streams wait for what `main` has issued so far.
absl::Status Fork(const LaunchStreams& streams, int count) {
  CUDA_RETURN_IF_ERROR(cudaEventRecord(streams.fork.get(), streams.main.get()));
  for (int i = 0; i < count; ++i) {
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams.side[i].get(), streams.fork.get(), 0));
  }
  return absl::OkStatus();
}

// Makes `main` wait for what the first `count` side streams have issued.
absl::Status Join(const LaunchStreams& streams, int count) {
  for (int i = 0; i < count; ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(streams.join[i].get(), streams.side[i].get()));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(streams.main.get(), streams.join[i].get(), 0));
  }
  return absl::OkStatus();
}

// One iteration of `spec`, kernel by kernel: what the "stream" method times
// and what the "graph" method captures.
absl::Status IssueTopology(const TopologySpec& spec, const LaunchStreams& streams) {
  const cudaStream_t main_stream = streams.main.get();
  switch (spec.topology) {
    case Topology::kStraightLine:
      for (int i = 0; i < kKernelsPerIteration; ++i) {
        CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(main_stream));
      }
      return absl::OkStatus();
    case Topology::kTwoBranches: {
      RETURN_IF_ERROR(Fork(streams, 1));
      const cudaStream_t branch = streams.side[0].get();
      // Alternately, so that the second branch does not wait for the host to
      // issue all of the first.
      for (int i = 0; i < kKernelsPerBranch; ++i) {
        CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(main_stream));
        CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(branch));
      }
      return Join(streams, 1);
    }
    case Topology::kForkJoin:
      CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(main_stream));
      RETURN_IF_ERROR(Fork(streams, spec.side_streams));
      for (int i = 0; i < kParallelKernels; ++i) {
        CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(streams.side[i % spec.side_streams].get()));
      }
      RETURN_IF_ERROR(Join(streams, spec.side_streams));
      CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(main_stream));
      return absl::OkStatus();
  }
  return absl::InternalError("unknown topology");
}

// Event records and waits between streams under capture become edges, not
// nodes; a graph of any other shape was not captured from IssueTopology.
absl::Status CheckCapturedGraph(const TopologySpec& spec, cudaGraph_t graph) {
  size_t num_nodes = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nullptr, &num_nodes));
  if (num_nodes != kKernelsPerIteration) {
    return absl::InternalError(absl::StrCat("the captured graph has ", num_nodes,
                                            " nodes, expected ", kKernelsPerIteration,
                                            " kernel nodes"));
  }
  std::vector<cudaGraphNode_t> nodes(num_nodes);
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nodes.data(), &num_nodes));
  for (size_t i = 0; i < nodes.size(); ++i) {
    cudaGraphNodeType type = cudaGraphNodeTypeKernel;
    CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(nodes[i], &type));
    if (type != cudaGraphNodeTypeKernel) {
      return absl::InternalError(absl::StrCat("node ", i, " of the captured graph has type ",
                                              static_cast<int>(type),
                                              ", expected only kernel nodes"));
    }
  }
  size_t num_roots = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetRootNodes(graph, nullptr, &num_roots));
  if (num_roots != spec.root_nodes) {
    return absl::InternalError(absl::StrCat("the captured graph has ", num_roots,
                                            " root nodes, expected ", spec.root_nodes));
  }
  return absl::OkStatus();
}

// Captures IssueTopology(spec) once on `main` (never the default stream:
// CudaStream::Create makes non-blocking streams), checks the graph's shape,
// instantiates it and uploads it, so that no timed launch pays for either.
absl::StatusOr<CudaGraphExec> CaptureTopology(const TopologySpec& spec,
                                              const LaunchStreams& streams) {
  const cudaStream_t main_stream = streams.main.get();
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(main_stream, cudaStreamCaptureModeThreadLocal));
  const absl::Status issued = IssueTopology(spec, streams);
  // End the capture on the stream it began on even when issuing failed, so
  // that `main` leaves capture mode; the issuing error is the one reported.
  cudaGraph_t raw_graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(main_stream, &raw_graph);
  const CudaGraph graph(raw_graph);
  RETURN_IF_ERROR(issued);
  CUDA_RETURN_IF_ERROR(ended);
  if (graph.get() == nullptr) {
    return absl::InternalError("cudaStreamEndCapture succeeded but returned no graph");
  }
  RETURN_IF_ERROR(CheckCapturedGraph(spec, graph.get()));
  cudaGraphExec_t raw_exec = nullptr;
  CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&raw_exec, graph.get(), 0));
  CudaGraphExec exec(raw_exec);
  CUDA_RETURN_IF_ERROR(cudaGraphUpload(exec.get(), main_stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(main_stream));
  return exec;
}

// `warmup` untimed, then `iters` timed iterations of `issue`, as Note
// [Launch overhead timing] describes; the medians.
template <typename Issue>
absl::StatusOr<LaunchTiming> TimeIterations(const LaunchStreams& streams, int64_t warmup,
                                            int64_t iters, const Issue& issue) {
  const cudaStream_t main_stream = streams.main.get();
  std::vector<double> host_us;
  std::vector<double> device_us;
  host_us.reserve(iters);
  device_us.reserve(iters);
  for (int64_t i = 0; i < warmup + iters; ++i) {
    CUDA_RETURN_IF_ERROR(cudaEventRecord(streams.start.get(), main_stream));
    const auto issue_begin = std::chrono::steady_clock::now();
    const absl::Status issued = issue();
    const auto issue_end = std::chrono::steady_clock::now();
    if (!issued.ok()) {
      return AnnotateStatus(issued, absl::StrCat(i < warmup ? "warm-up " : "timed ", "iteration ",
                                                 i < warmup ? i : i - warmup));
    }
    CUDA_RETURN_IF_ERROR(cudaEventRecord(streams.end.get(), main_stream));
    // Also where an error of the kernels themselves would surface.
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(streams.end.get()));
    float elapsed_ms = 0;
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&elapsed_ms, streams.start.get(), streams.end.get()));
    if (i < warmup) continue;
    host_us.push_back(std::chrono::duration<double, std::micro>(issue_end - issue_begin).count());
    device_us.push_back(static_cast<double>(elapsed_ms) * 1000.0);
  }
  return LaunchTiming{.host_us = Median(std::move(host_us)),
                      .device_us = Median(std::move(device_us))};
}

absl::StatusOr<TopologyTiming> MeasureTopology(const TopologySpec& spec,
                                               const LaunchStreams& streams,
                                               const LaunchOverheadOptions& options) {
  TopologyTiming result{
      .topology = spec.name, .description = spec.description, .streams = 1 + spec.side_streams};

  absl::StatusOr<LaunchTiming> stream_timing = TimeIterations(
      streams, options.warmup, options.iters, [&] { return IssueTopology(spec, streams); });
  if (!stream_timing.ok()) {
    return AnnotateStatus(stream_timing.status(), absl::StrCat(spec.name, ", stream method"));
  }
  result.stream = *stream_timing;

  absl::StatusOr<CudaGraphExec> exec = CaptureTopology(spec, streams);
  if (!exec.ok()) {
    return AnnotateStatus(exec.status(), absl::StrCat(spec.name, ", capturing the graph"));
  }
  const cudaGraphExec_t raw_exec = exec->get();
  const cudaStream_t main_stream = streams.main.get();
  absl::StatusOr<LaunchTiming> graph_timing =
      TimeIterations(streams, options.warmup, options.iters, [&]() -> absl::Status {
        CUDA_RETURN_IF_ERROR(cudaGraphLaunch(raw_exec, main_stream));
        return absl::OkStatus();
      });
  if (!graph_timing.ok()) {
    return AnnotateStatus(graph_timing.status(), absl::StrCat(spec.name, ", graph method"));
  }
  result.graph = *graph_timing;
  return result;
}

std::string ForkJoinDescription(int side_streams) {
  const std::string spread =
      side_streams == kParallelKernels
          ? absl::StrCat("one on each of ", side_streams, " side streams")
          : absl::StrCat("round-robin over ", side_streams, " side streams, up to ",
                         (kParallelKernels + side_streams - 1) / side_streams,
                         " in sequence on each");
  return absl::StrCat("1 kernel, then ", kParallelKernels, " in parallel (", spread,
                      ", forked with an event), then 1 joining kernel after the join events; ",
                      1 + side_streams, " streams");
}

}  // namespace

absl::StatusOr<int> CountCudaDevices() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // Leave no error behind for later calls to report.
    return CudaErrorToStatus(error, "cudaGetDeviceCount");
  }
  return count;
}

absl::StatusOr<LaunchOverheadReport> RunLaunchOverheadBenchmark(
    const LaunchOverheadOptions& options) {
  if (options.device < 0) {
    return absl::InvalidArgumentError(absl::StrCat("device ", options.device, " is negative"));
  }
  if (options.warmup < 0) {
    return absl::InvalidArgumentError(absl::StrCat("warmup ", options.warmup, " is negative"));
  }
  if (options.iters < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("iters ", options.iters, " leaves nothing to take a median of"));
  }
  if (options.fork_join_streams < 1 || options.fork_join_streams > kParallelKernels) {
    return absl::InvalidArgumentError(absl::StrCat("fork_join_streams ", options.fork_join_streams,
                                                   " is outside [1, ", kParallelKernels, "]"));
  }

  CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  cudaDeviceProp properties{};
  CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&properties, options.device));
  LaunchOverheadReport report;
  report.device_name = properties.name;
  CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&report.cuda_runtime_version));
  CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&report.cuda_driver_version));
  if (const char* connections = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")) {
    report.device_max_connections = connections;
  }
  report.kernels_per_iteration = kKernelsPerIteration;
  report.warmup = options.warmup;
  report.iters = options.iters;

  const std::vector<TopologySpec> specs = {
      {.topology = Topology::kStraightLine,
       .name = "straight_line",
       .description = absl::StrCat(kKernelsPerIteration, " kernels one after another on 1 stream"),
       .side_streams = 0,
       .root_nodes = 1},
      {.topology = Topology::kTwoBranches,
       .name = "two_branches",
       .description = absl::StrCat("fork onto 2 streams with an event, ", kKernelsPerBranch,
                                   " kernels on each (issued alternately), join back with an "
                                   "event"),
       .side_streams = 1,
       .root_nodes = 2},
      {.topology = Topology::kForkJoin,
       .name = "fork_join",
       .description = ForkJoinDescription(options.fork_join_streams),
       .side_streams = options.fork_join_streams,
       .root_nodes = 1},
  };
  int side_streams = 0;
  for (const TopologySpec& spec : specs) side_streams = std::max(side_streams, spec.side_streams);
  ASSIGN_OR_RETURN(LaunchStreams streams, CreateLaunchStreams(side_streams));

  // Under lazy module loading (the default since CUDA 12.2) the first launch
  // of a kernel loads its module: do it here, not in a capture or a timed
  // iteration.
  CUDA_RETURN_IF_ERROR(LaunchEmptyKernel(streams.main.get()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(streams.main.get()));

  for (const TopologySpec& spec : specs) {
    ASSIGN_OR_RETURN(TopologyTiming timing, MeasureTopology(spec, streams, options));
    report.topologies.push_back(std::move(timing));
  }
  return report;
}

}  // namespace graphserve
