#include "server/graph_set_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// The chunk's one segment when it holds one request's rows, which then lie
// contiguous in the request's own memory; nullptr for a merged chunk.
const SegmentRows* SoleSegment(const ChunkJob& job) {
  return job.segments.size() == 1 ? &job.segments.front() : nullptr;
}

// Where the device copies input `i` from straight, the request's own pinned
// or device memory, or nullptr when the rows go through staging (Notes
// [Pinned shared memory] and [CUDA shared memory] in server/shared_memory.h).
const std::byte* DirectInput(const ChunkJob& job, size_t i) {
  const SegmentRows* sole = SoleSegment(job);
  return sole != nullptr && InMask(sole->pinned_inputs | sole->device_inputs, i)
             ? sole->inputs[i]
             : nullptr;
}

// Copies each segment's rows of input `i` into `staging`, one after the
// other: host memory by the CPU now, device memory (a merged chunk's CUDA
// region rows) by the slot's stream, ahead of the staging's copy to the
// device on the same stream. Returns whether any copy went on the stream.
absl::StatusOr<bool> GatherInput(const ChunkJob& job, size_t i, size_t row_bytes,
                                 std::byte* staging, cudaStream_t stream) {
  bool on_stream = false;
  for (const SegmentRows& segment : job.segments) {
    const size_t bytes = row_bytes * static_cast<size_t>(segment.rows);
    if (InMask(segment.device_inputs, i)) {
      if (const cudaError_t error =
              cudaMemcpyAsync(staging, segment.inputs[i], bytes, cudaMemcpyDeviceToHost, stream);
          error != cudaSuccess) {
        return absl::InternalError(absl::StrCat("copying ", bytes, " bytes of input ", i,
                                                " from CUDA shared memory into staging failed: ",
                                                cudaGetErrorString(error)));
      }
      on_stream = true;
    } else {
      std::memcpy(staging, segment.inputs[i], bytes);
    }
    staging += bytes;
  }
  return on_stream;
}

// The same for output `o`: where the device writes its rows, or nullptr.
std::byte* DirectOutput(const ChunkJob& job, size_t o) {
  const SegmentRows* sole = SoleSegment(job);
  return sole != nullptr && InMask(sole->pinned_outputs | sole->device_outputs, o)
             ? sole->outputs[o]
             : nullptr;
}

// Copies output `o`'s rows from `staging` (the chunk's, row after row) to
// each segment that asked for it: host memory by the CPU now, device memory
// (a merged chunk's CUDA region rows) by the calling thread's per-thread
// stream, not the slot's, behind which the slot's next chunk may already be
// queued. Returns whether any copy went on that stream; the caller waits for
// it before answering, since the answer lets the client read the region.
absl::StatusOr<bool> ScatterOutput(const ChunkJob& job, size_t o, size_t row_bytes,
                                   const std::byte* staging) {
  bool on_stream = false;
  for (const SegmentRows& segment : job.segments) {
    const size_t bytes = row_bytes * static_cast<size_t>(segment.rows);
    if (segment.outputs[o] != nullptr && InMask(segment.device_outputs, o)) {
      if (const cudaError_t error = cudaMemcpyAsync(segment.outputs[o], staging, bytes,
                                                    cudaMemcpyHostToDevice, cudaStreamPerThread);
          error != cudaSuccess) {
        return absl::InternalError(absl::StrCat("copying ", bytes, " bytes of output ", o,
                                                " from staging into CUDA shared memory failed: ",
                                                cudaGetErrorString(error)));
      }
      on_stream = true;
    } else if (segment.outputs[o] != nullptr) {
      std::memcpy(segment.outputs[o], staging, bytes);
    }
    staging += bytes;
  }
  return on_stream;
}

}  // namespace

GraphSetRunner::GraphSetRunner(std::vector<Placement> placements, LaunchMode mode,
                               std::vector<int64_t> double_buffered_sizes)
    : placements_(std::move(placements)),
      device_memory_gpu_(SharedGpu(placements_)),
      mode_(mode),
      double_buffered_sizes_([&] {
        std::sort(double_buffered_sizes.begin(), double_buffered_sizes.end());
        return std::move(double_buffered_sizes);
      }()) {
  for (size_t p = 0; p < placements_.size(); ++p) {
    for (int slot = 0; slot < placements_[p].set->num_slots(); ++slot) {
      slots_.push_back({p, slot});
    }
  }
}

int GraphSetRunner::num_slots() const { return static_cast<int>(slots_.size()); }

// Asked per request: decided once, here.
std::optional<int> GraphSetRunner::SharedGpu(const std::vector<Placement>& placements) {
  for (const Placement& placement : placements) {
    if (placement.device != placements.front().device) return std::nullopt;
  }
  return placements.front().device;
}

bool GraphSetRunner::StartsBehindRunning(int64_t batch_size) const {
  return std::binary_search(double_buffered_sizes_.begin(), double_buffered_sizes_.end(),
                            batch_size);
}

absl::Status GraphSetRunner::PrepareWorkerThread(int slot) {
  // Launch expects the set's device to be current; once per thread, not per
  // launch (see GraphSet::Launch).
  CUDA_RETURN_IF_ERROR(cudaSetDevice(placements_[slots_[slot].placement].device));
  return absl::OkStatus();
}

absl::Status GraphSetRunner::Start(int slot, int staging, const ChunkJob& job,
                                   ChunkTiming* timing) {
  const GraphSet& set = *placements_[slots_[slot].placement].set;
  const int own_slot = slots_[slot].slot;
  const Clock::time_point start = Clock::now();
  cudaStream_t stream = set.stream(own_slot);
  // Whether copies on the stream read or write the requests' own memory:
  // then they end before an error is answered (ChunkRunner::Start), since
  // the answer lets the client reuse that memory and the server unmap it.
  bool touches_requests = false;
  absl::Status status;
  for (size_t i = 0; i < set.num_inputs() && status.ok(); ++i) {
    if (DirectInput(job, i) != nullptr) continue;
    absl::StatusOr<bool> on_stream = GatherInput(job, i, set.input_bytes_per_row(i),
                                                 set.input_staging(own_slot, i, staging), stream);
    status = on_stream.status();
    touches_requests = touches_requests || on_stream.value_or(true);
  }
  LaunchChunk chunk{own_slot, job.batch_size, job.rows, mode_, staging};
  // Only a request with pinned or device tensors pays for the pointer vectors.
  std::vector<const void*> sources;
  std::vector<void*> destinations;
  if (const SegmentRows* sole = SoleSegment(job);
      sole != nullptr &&
      (sole->pinned_inputs | sole->pinned_outputs | sole->device_inputs | sole->device_outputs) !=
          0) {
    for (size_t i = 0; i < set.num_inputs(); ++i) sources.push_back(DirectInput(job, i));
    for (size_t o = 0; o < set.num_outputs(); ++o) destinations.push_back(DirectOutput(job, o));
    chunk.input_sources = sources;
    chunk.output_destinations = destinations;
    touches_requests = true;
  }
  if (status.ok()) status = set.Launch(chunk);
  if (!status.ok()) {
    if (touches_requests) cudaStreamSynchronize(stream);
    // Leave no error of a failed copy behind for the thread's next chunk
    // (the padding fill reads cudaGetLastError).
    cudaGetLastError();
    return status;
  }
  timing->input_ns = NanosSince(start);
  return absl::OkStatus();
}

absl::Status GraphSetRunner::Finish(int slot, int staging, const ChunkJob& job,
                                    ChunkTiming* timing) {
  const GraphSet& set = *placements_[slots_[slot].placement].set;
  const int own_slot = slots_[slot].slot;
  // Blocks the thread that holds the slot, never another request's.
  Clock::time_point start = Clock::now();
  if (const cudaError_t waited = cudaEventSynchronize(set.done_event(own_slot, staging));
      waited != cudaSuccess) {
    cudaGetLastError();  // as Start: nothing left for the thread's next chunk
    return CudaErrorToStatus(waited, "cudaEventSynchronize");
  }
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  absl::Status status;
  bool on_stream = false;
  for (size_t o = 0; o < set.num_outputs() && status.ok(); ++o) {
    if (DirectOutput(job, o) != nullptr) continue;  // the device wrote it in place
    absl::StatusOr<bool> copied =
        ScatterOutput(job, o, set.output_bytes_per_row(o),
                      static_cast<const std::byte*>(set.output_rows(own_slot, o, staging)));
    status = copied.status();
    on_stream = on_stream || copied.value_or(true);
  }
  if (on_stream) {
    // Even after a failure: no copy may still be reading staging or writing
    // a region once the request is answered.
    if (const cudaError_t synced = cudaStreamSynchronize(cudaStreamPerThread);
        synced != cudaSuccess && status.ok()) {
      status = CudaErrorToStatus(synced, "cudaStreamSynchronize after the output copies");
    }
  }
  if (!status.ok()) cudaGetLastError();  // leave nothing behind for the thread's next chunk
  timing->output_ns = NanosSince(start);
  return status;
}

std::string GraphSetRunner::description() const {
  std::vector<int> devices;
  for (const Placement& placement : placements_) devices.push_back(placement.device);
  return absl::StrCat(mode_ == LaunchMode::kGraph ? "CUDA graphs" : "eager (graphs off)",
                      devices.size() == 1 ? ", GPU " : ", GPUs ", absl::StrJoin(devices, ","));
}

}  // namespace graphserve
