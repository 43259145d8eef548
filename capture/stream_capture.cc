#include "capture/stream_capture.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/capture_exclusion.h"
#include "common/cuda_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {

namespace {

bool IsDefaultStream(cudaStream_t stream) {
  return stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
}

absl::Status CaptureError(const std::string& label, const absl::Status& status) {
  return AnnotateStatus(status, absl::StrCat("capture of ", label));
}

}  // namespace

absl::StatusOr<StreamCapture> StreamCapture::Begin(cudaStream_t stream, std::string label) {
  if (IsDefaultStream(stream)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "capture of ", label, ": refusing to capture on a default stream; create a "
        "non-blocking stream (CudaStream::Create) and capture on it"));
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (absl::Status query =
          CudaErrorToStatus(cudaStreamIsCapturing(stream, &status), "cudaStreamIsCapturing");
      !query.ok()) {
    return CaptureError(label, query);
  }
  if (status != cudaStreamCaptureStatusNone) {
    return absl::FailedPreconditionError(absl::StrCat(
        "capture of ", label, ": the stream is already capturing; end that capture first"));
  }
  int device = 0;
  if (absl::Status query = CudaErrorToStatus(cudaGetDevice(&device), "cudaGetDevice");
      !query.ok()) {
    return CaptureError(label, query);
  }
  // See Note [Captures and device-wide synchronisation].
  CaptureLock lock(device, CaptureLock::kCapture);
  if (absl::Status begin = CudaErrorToStatus(
          cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture");
      !begin.ok()) {
    return CaptureError(label, begin);
  }
  return StreamCapture(stream, std::move(label), std::move(lock));
}

absl::StatusOr<CudaGraph> StreamCapture::End(cudaStream_t stream) {
  if (stream_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("capture of ", label_, ": End() called twice"));
  }
  if (stream != stream_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "capture of ", label_, ": ending on a different stream than it began on; end the "
        "capture on the stream passed to Begin() after joining any forked streams into it"));
  }
  cudaGraph_t raw_graph = nullptr;
  const cudaError_t error = cudaStreamEndCapture(stream_, &raw_graph);
  stream_ = nullptr;
  lock_.Release();
  CudaGraph graph(raw_graph);
  if (error != cudaSuccess) {
    cudaGetLastError();  // the capture failed; leave no error behind for the next call
    return CaptureError(label_, CudaErrorToStatus(error, "cudaStreamEndCapture"));
  }
  ASSIGN_OR_RETURN(const size_t nodes, GraphNodeCount(graph.get()));
  if (nodes == 0) {
    spdlog::warn("capture of {}: the captured graph is empty; did the workload enqueue its "
                 "work on the capturing stream?",
                 label_);
  }
  return graph;
}

StreamCapture::StreamCapture(StreamCapture&& other) noexcept
    : stream_(std::exchange(other.stream_, nullptr)),
      label_(std::move(other.label_)),
      lock_(std::move(other.lock_)) {}

StreamCapture::~StreamCapture() {
  if (stream_ == nullptr) return;
  cudaGraph_t discarded = nullptr;
  if (cudaStreamEndCapture(stream_, &discarded) == cudaSuccess && discarded != nullptr) {
    cudaGraphDestroy(discarded);
  }
  cudaGetLastError();  // an invalidated capture leaves an error; clear it
}

namespace {

absl::StatusOr<CudaGraph> CaptureOnce(cudaStream_t stream, const std::string& label,
                                      const Workload& workload) {
  ASSIGN_OR_RETURN(StreamCapture capture, StreamCapture::Begin(stream, label));
  if (absl::Status run = workload(stream); !run.ok()) {
    // The destructor ends and discards the capture and clears the error.
    return CaptureError(label, run);
  }
  return capture.End(stream);
}

}  // namespace

absl::StatusOr<CudaGraph> CaptureWorkload(cudaStream_t stream, const std::string& label,
                                          const Workload& workload, WarmUp warm_up) {
  if (warm_up == WarmUp::kIfCaptureFails) {
    absl::StatusOr<CudaGraph> graph = CaptureOnce(stream, label, workload);
    if (graph.ok()) return graph;
    spdlog::debug("capture of {} without a warm-up run failed ({}); warming up", label,
                  std::string(graph.status().message()));
  }
  if (absl::Status warmup = workload(stream); !warmup.ok()) {
    return AnnotateStatus(warmup, absl::StrCat("warm-up run before capture of ", label));
  }
  if (absl::Status sync =
          CudaErrorToStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      !sync.ok()) {
    return AnnotateStatus(sync, absl::StrCat("warm-up run before capture of ", label));
  }
  return CaptureOnce(stream, label, workload);
}

absl::StatusOr<size_t> GraphNodeCount(cudaGraph_t graph) {
  size_t count = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nullptr, &count));
  return count;
}

}  // namespace graphserve
