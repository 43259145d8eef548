#include "server/graph_set_runner.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/logging.h"
#include "common/lost_cuda_context.h"
#include "common/nvtx.h"
#include "common/status.h"
#include "server/illegal_address_kernel.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// The chunk's one segment when it holds one request's rows, which then lie
// contiguous in the request's own memory, as the graph's rows (unpadded);
// nullptr for a merged or padded chunk. (Rows in device memory are never
// padded: a model with shape buckets reads CUDA shared memory through the
// host, ServedModel::Infer.)
const SegmentRows* SoleSegment(const ChunkJob& job) {
  return job.segments.size() == 1 && job.Unpadded(job.segments.front()) ? &job.segments.front()
                                                                        : nullptr;
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

// The same for output `o`: where the device writes its rows, or nullptr.
std::byte* DirectOutput(const ChunkJob& job, size_t o) {
  const SegmentRows* sole = SoleSegment(job);
  return sole != nullptr && InMask(sole->pinned_outputs | sole->device_outputs, o)
             ? sole->outputs[o]
             : nullptr;
}

// Pointers to a merged chunk's rows in device memory, and where those rows
// lie in the chunk (LaunchChunk::device_rows, whose spans point into
// `inputs` and `outputs`: filled once, never grown after).
struct MergedDeviceRows {
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  std::vector<DeviceRows> rows;
};

// Fills `merged` for a chunk of several segments some of which lie in device
// memory; leaves it empty otherwise (a sole segment goes direct).
void FindMergedDeviceRows(const ChunkJob& job, size_t num_inputs, size_t num_outputs,
                          MergedDeviceRows& merged) {
  if (job.segments.size() < 2) return;
  size_t on_device = 0;
  for (const SegmentRows& segment : job.segments) {
    if ((segment.device_inputs | segment.device_outputs) != 0) ++on_device;
  }
  if (on_device == 0) return;
  merged.inputs.reserve(on_device * num_inputs);
  merged.outputs.reserve(on_device * num_outputs);
  int64_t first_row = 0;
  for (const SegmentRows& segment : job.segments) {
    if ((segment.device_inputs | segment.device_outputs) != 0) {
      const size_t input = merged.inputs.size(), output = merged.outputs.size();
      for (size_t i = 0; i < num_inputs; ++i) {
        merged.inputs.push_back(InMask(segment.device_inputs, i) ? segment.inputs[i] : nullptr);
      }
      for (size_t o = 0; o < num_outputs; ++o) {
        merged.outputs.push_back(InMask(segment.device_outputs, o) ? segment.outputs[o]
                                                                   : nullptr);
      }
      merged.rows.push_back(
          {first_row, segment.rows,
           absl::Span<const void* const>(merged.inputs.data() + input, num_inputs),
           absl::Span<void* const>(merged.outputs.data() + output, num_outputs)});
    }
    first_row += segment.rows;
  }
}

}  // namespace

GraphSetRunner::GraphSetRunner(std::vector<std::shared_ptr<const GraphSet>> sets,
                               GraphSetRunnerOptions options)
    : sets_(std::move(sets)),
      device_memory_gpu_(SharedGpu(sets_)),
      mode_(options.mode),
      double_buffered_sizes_([&] {
        std::sort(options.double_buffered_sizes.begin(), options.double_buffered_sizes.end());
        return std::move(options.double_buffered_sizes);
      }()),
      fault_(options.fault),
      chunks_before_fault_(options.fault.after_chunks) {
  // Interleaved across GPUs (Note [Runner slots alternate GPUs]).
  int most_slots = 0;
  for (const std::shared_ptr<const GraphSet>& set : sets_) {
    most_slots = std::max(most_slots, set->num_slots());
  }
  for (int slot = 0; slot < most_slots; ++slot) {
    for (size_t s = 0; s < sets_.size(); ++s) {
      if (slot < sets_[s]->num_slots()) slots_.push_back({s, slot});
    }
  }
}

int GraphSetRunner::device(int slot) const { return sets_[slots_[slot].set]->device(); }

std::optional<int> GraphSetRunner::RunnerSlot(const GraphSet* set, int slot) const {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (sets_[slots_[i].set].get() == set && slots_[i].slot == slot) return static_cast<int>(i);
  }
  return std::nullopt;
}

int GraphSetRunner::num_slots() const { return static_cast<int>(slots_.size()); }

// Asked per request: decided once, here.
std::optional<int> GraphSetRunner::SharedGpu(
    const std::vector<std::shared_ptr<const GraphSet>>& sets) {
  for (const std::shared_ptr<const GraphSet>& set : sets) {
    if (set->device() != sets.front()->device()) return std::nullopt;
  }
  return sets.front()->device();
}

bool GraphSetRunner::StartsBehindRunning(int64_t batch_size) const {
  return std::binary_search(double_buffered_sizes_.begin(), double_buffered_sizes_.end(),
                            batch_size);
}

absl::Status GraphSetRunner::PrepareWorkerThread(int slot) {
  // Once per thread, not per launch: the launches' own device guard then
  // finds the device current (Note [Graphs own their device]).
  return sets_[slots_[slot].set]->MakeDeviceCurrentOnThisThread();
}

absl::Status GraphSetRunner::InjectFault(int slot) {
  if (fault_.kind == InjectedCudaFault::Kind::kNone || slot != fault_.slot) {
    return absl::OkStatus();
  }
  if (chunks_before_fault_.fetch_sub(1, std::memory_order_relaxed) != 0) return absl::OkStatus();
  spdlog::warn("injecting a test CUDA fault into runner slot {} (Note [Injected CUDA faults])",
               slot);
  if (fault_.kind == InjectedCudaFault::Kind::kFailedLaunch) return InjectedLaunchFailure();
  const GraphSet& set = *sets_[slots_[slot].set];
  const CudaDeviceGuard on_device(set.device());
  RETURN_IF_ERROR(on_device.status());
  CUDA_RETURN_IF_ERROR(EnqueueIllegalAddressWrite(set.stream(slots_[slot].slot)));
  return absl::OkStatus();
}

absl::Status GraphSetRunner::ChunkFailed(int slot, const ChunkJob& job,
                                         const absl::Status& status) const {
  const GraphSet& set = *sets_[slots_[slot].set];
  const std::string where = absl::StrCat("GPU ", set.device(), ", runner slot ", slot,
                                         ", batch ", GraphKeyString(job.key));
  const cudaError_t sticky = set.StickyError(slots_[slot].slot);
  if (sticky == cudaSuccess) {
    // The context is intact: only this chunk's requests fail.
    return absl::Status(status.code(), absl::StrCat(where, ": ", status.message()));
  }
  const absl::Status lost = absl::InternalError(absl::StrCat(
      where, ": the GPU's CUDA context is lost (", cudaGetErrorName(sticky), ": ",
      cudaGetErrorString(sticky), "); the server stops serving and exits to be restarted: ",
      status.message()));
  ReportLostCudaContext(set.device(), lost);
  return lost;
}

absl::Status GraphSetRunner::Start(int slot, int staging, const ChunkJob& job,
                                   ChunkTiming* timing) {
  const GraphSet& set = *sets_[slots_[slot].set];
  const int own_slot = slots_[slot].slot;
  const Clock::time_point start = Clock::now();
  // Whether copies on the stream read or write the requests' own memory:
  // then they end before an error is answered (ChunkRunner::Start), since
  // the answer lets the client reuse that memory and the server unmap it.
  bool touches_requests = false;
  {
    const NvtxRange range(set.profiler_ranges(own_slot, job.key).stage);
    GatherInputRows(
        job, set.num_inputs(),
        [&](size_t i) {
          return DirectInput(job, i) != nullptr ? nullptr
                                                : set.input_staging(own_slot, i, staging);
        });
  }
  LaunchChunk chunk{own_slot, job.key, job.rows, mode_, staging};
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
  MergedDeviceRows merged;
  FindMergedDeviceRows(job, set.num_inputs(), set.num_outputs(), merged);
  if (!merged.rows.empty()) {
    chunk.device_rows = merged.rows;
    touches_requests = true;
  }
  absl::Status status = InjectFault(slot);
  if (status.ok()) status = set.Launch(chunk);
  if (!status.ok()) {
    if (touches_requests) set.SynchronizeSlot(own_slot).IgnoreError();
    // Leave no error of a failed copy behind for the thread's next chunk
    // (the padding fill reads cudaGetLastError).
    cudaGetLastError();
    return ChunkFailed(slot, job, status);
  }
  timing->input_ns = NanosSince(start);
  return absl::OkStatus();
}

absl::Status GraphSetRunner::Finish(int slot, int staging, const ChunkJob& job,
                                    ChunkTiming* timing) {
  const GraphSet& set = *sets_[slots_[slot].set];
  const int own_slot = slots_[slot].slot;
  const NvtxRange range(set.profiler_ranges(own_slot, job.key).complete);
  // Blocks the thread that holds the slot, never another request's.
  Clock::time_point start = Clock::now();
  if (const absl::Status waited = set.WaitForChunk(own_slot, staging); !waited.ok()) {
    cudaGetLastError();  // as Start: nothing left for the thread's next chunk
    return ChunkFailed(slot, job, waited);
  }
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  ScatterOutputRows(
      job, set.num_outputs(),
      [&](size_t o) {
        return DirectOutput(job, o) != nullptr  // the device wrote it in place
                   ? nullptr
                   : static_cast<const std::byte*>(set.output_rows(own_slot, o, staging));
      });
  timing->output_ns = NanosSince(start);
  return absl::OkStatus();
}

std::string GraphSetRunner::description() const {
  std::vector<int> devices;
  for (const std::shared_ptr<const GraphSet>& set : sets_) devices.push_back(set->device());
  return absl::StrCat(mode_ == LaunchMode::kGraph ? "CUDA graphs" : "eager (graphs off)",
                      devices.size() == 1 ? ", GPU " : ", GPUs ", absl::StrJoin(devices, ","));
}

}  // namespace graphserve
