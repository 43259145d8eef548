#include "server/graph_set_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
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

// Whether the device copies input `i` straight from the request's memory
// (Note [Pinned shared memory] in server/shared_memory.h).
const std::byte* DirectInput(const ChunkJob& job, size_t i) {
  const SegmentRows* sole = SoleSegment(job);
  return sole != nullptr && IsPinned(sole->pinned_inputs, i) ? sole->inputs[i] : nullptr;
}

// The same for output `o`: where the device writes its rows, or nullptr.
std::byte* DirectOutput(const ChunkJob& job, size_t o) {
  const SegmentRows* sole = SoleSegment(job);
  return sole != nullptr && IsPinned(sole->pinned_outputs, o) ? sole->outputs[o] : nullptr;
}

}  // namespace

GraphSetRunner::GraphSetRunner(std::vector<Placement> placements, LaunchMode mode,
                               std::vector<int64_t> double_buffered_sizes)
    : placements_(std::move(placements)),
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
  GatherInputRows(
      job, set.num_inputs(),
      [&](size_t i) {
        return DirectInput(job, i) != nullptr ? nullptr : set.input_staging(own_slot, i, staging);
      },
      [&](size_t i) { return set.input_bytes_per_row(i); });
  LaunchChunk chunk{own_slot, job.batch_size, job.rows, mode_, staging};
  // Only a request with pinned tensors pays for the pointer vectors.
  std::vector<const void*> sources;
  std::vector<void*> destinations;
  if (const SegmentRows* sole = SoleSegment(job);
      sole != nullptr && (sole->pinned_inputs | sole->pinned_outputs) != 0) {
    for (size_t i = 0; i < set.num_inputs(); ++i) sources.push_back(DirectInput(job, i));
    for (size_t o = 0; o < set.num_outputs(); ++o) destinations.push_back(DirectOutput(job, o));
    chunk.input_sources = sources;
    chunk.output_destinations = destinations;
  }
  if (absl::Status launched = set.Launch(chunk); !launched.ok()) {
    // Copies enqueued before the failure may still read or write the
    // request's own memory, which its answer lets the client reuse and the
    // server unmap: they end before the error does (ChunkRunner::Start).
    if (!sources.empty()) cudaStreamSynchronize(set.stream(own_slot));
    return launched;
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
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set.done_event(own_slot, staging)));
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  ScatterOutputRows(
      job, set.num_outputs(),
      [&](size_t o) {
        return DirectOutput(job, o) != nullptr
                   ? nullptr
                   : static_cast<const std::byte*>(set.output_rows(own_slot, o, staging));
      },
      [&](size_t o) { return set.output_bytes_per_row(o); });
  timing->output_ns = NanosSince(start);
  return absl::OkStatus();
}

std::string GraphSetRunner::description() const {
  std::vector<int> devices;
  for (const Placement& placement : placements_) devices.push_back(placement.device);
  return absl::StrCat(mode_ == LaunchMode::kGraph ? "CUDA graphs" : "eager (graphs off)",
                      devices.size() == 1 ? ", GPU " : ", GPUs ", absl::StrJoin(devices, ","));
}

}  // namespace graphserve
