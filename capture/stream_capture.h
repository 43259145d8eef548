#pragma once
// Recording GPU work into a CUDA graph: capture as an explicit state machine
// (begin on a stream, end on the same stream), and CaptureWorkload, which
// wraps a warm-up run and the capture of one callable.

#include <cuda_runtime.h>

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/capture_exclusion.h"
#include "common/cuda_handles.h"

namespace graphserve {

// Enqueues one run of a model (or any GPU work) on `stream`, without
// allocating or synchronising, so that it can be captured.
using Workload = std::function<absl::Status(cudaStream_t stream)>;

// One capture in progress on one stream. Begin() starts it; End() must be
// called on the stream it began on and returns the graph. Capture uses the
// thread-local mode: CUDA calls from other threads (another slot being set
// up, a server thread) are not refused, while an unsafe call on this thread
// (cudaMalloc, a synchronisation) invalidates the capture and is reported.
// A capture holds its device's capture lock shared from Begin() to its end:
// another thread's device-wide synchronisation would invalidate it (Note
// [Captures and device-wide synchronisation] in common/capture_exclusion.h).
// Destroying a capture that was not ended ends and discards it, so an error
// path never leaves a stream capturing.
class StreamCapture {
 public:
  // `label` names the capture in errors ("stream 2, batch 64"). Refuses the
  // legacy and per-thread default streams (capture on them would serialise
  // with every other stream) and a stream that is already capturing.
  static absl::StatusOr<StreamCapture> Begin(cudaStream_t stream, std::string label);

  // Ends the capture. FailedPrecondition when `stream` is not the stream it
  // began on (the capture stays open and is discarded by the destructor);
  // Internal when CUDA invalidated the capture, with the reason. Warns on an
  // empty graph: a run that launched nothing is almost always a mistake.
  absl::StatusOr<CudaGraph> End(cudaStream_t stream);

  [[nodiscard]] bool capturing() const { return stream_ != nullptr; }

  StreamCapture(StreamCapture&& other) noexcept;
  StreamCapture& operator=(StreamCapture&& other) = delete;
  StreamCapture(const StreamCapture&) = delete;
  StreamCapture& operator=(const StreamCapture&) = delete;
  ~StreamCapture();

  // Implementation details follow.
 private:
  StreamCapture(cudaStream_t stream, std::string label, CaptureLock lock)
      : stream_(stream), label_(std::move(label)), lock_(std::move(lock)) {}

  cudaStream_t stream_ = nullptr;  // null once ended
  std::string label_;
  CaptureLock lock_;  // shared while capturing
};

// Whether CaptureWorkload runs the workload once before capturing it.
enum class WarmUp {
  // Always: lazily created state (cuBLASLt's kernels and heuristics, module
  // loading) must exist before capture, where creating it is not allowed.
  kFirst,
  // Only when a capture without one fails, then capture again: for work whose
  // kernels, algorithms and shapes already ran in this process (another
  // slot's plan of the same key, another schedule of it), where a warm-up
  // run is a whole forward pass spent for nothing. A capture that succeeds
  // but differs is the load-time checks' to find (Note [Checking a captured
  // graph] in capture/graph_set.cc).
  kIfCaptureFails,
};

// Captures `workload` on `stream`: with WarmUp::kFirst one eager run first
// followed by a stream synchronisation, then the captured run. On failure
// the capture is ended and discarded, CUDA's last error is cleared so the
// process stays usable, and the error names `label` and the failing call.
absl::StatusOr<CudaGraph> CaptureWorkload(cudaStream_t stream, const std::string& label,
                                          const Workload& workload,
                                          WarmUp warm_up = WarmUp::kFirst);

// Number of nodes in `graph` (top level).
absl::StatusOr<size_t> GraphNodeCount(cudaGraph_t graph);

}  // namespace graphserve
