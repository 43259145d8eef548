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

// Whether the device copies `segment`'s rows of input `i` itself, from the
// request's pinned or device memory, padding them if they are shorter than
// the job's (Note [Pitched row copies] in capture/graph_set.h); otherwise
// the host gathers them into staging.
bool DeviceCopiesInput(const ChunkJob& job, const RowView& segment, size_t i) {
  if (!segment.inputs[i].reached_by_device()) return false;
  if (job.Unpadded(segment)) return true;
  const TensorRow& bucket = job.shape->inputs[i];
  return LeadingBlock(segment.shape->inputs[i], bucket) &&
         RepeatedByte(job.shape->input_pad[i], bucket.element_bytes).has_value();
}

// The same for output `o`: whether the device writes the segment's rows.
bool DeviceCopiesOutput(const ChunkJob& job, const RowView& segment, size_t o) {
  const OutputRows& output = segment.outputs[o];
  return output.data != nullptr && output.reached_by_device() &&
         (job.Unpadded(segment) || LeadingBlock(segment.shape->outputs[o], job.shape->outputs[o]));
}

// The rows of a chunk the device copies itself (LaunchChunk::direct, whose
// spans point into `inputs` and `outputs`: filled once, never grown after),
// and the pad bytes of its shorter rows.
struct DirectChunkRows {
  std::vector<InputRows> inputs;
  std::vector<OutputRows> outputs;
  std::vector<DirectRows> rows;
  std::vector<uint8_t> pad_bytes;
};

// Fills `direct` with the job's segments some of whose rows the device
// copies; leaves it empty when the host copies every row. A row in device
// memory that the device cannot place is an internal error: the request
// should have been read through the host (ServedModel::Infer).
absl::Status FindDirectRows(const ChunkJob& job, size_t num_inputs, size_t num_outputs,
                            DirectChunkRows& direct) {
  size_t segments = 0;
  bool padded = false;
  for (const RowView& segment : job.segments) {
    bool any = false;
    for (size_t i = 0; i < num_inputs; ++i) {
      if (DeviceCopiesInput(job, segment, i)) {
        any = true;
      } else if (segment.inputs[i].memory == RowMemory::kDevice) {
        return absl::InternalError("input rows in device memory that the device cannot pad");
      }
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      if (DeviceCopiesOutput(job, segment, o)) {
        any = true;
      } else if (segment.outputs[o].data != nullptr &&
                 segment.outputs[o].memory == RowMemory::kDevice) {
        return absl::InternalError("output rows in device memory that the device cannot slice");
      }
    }
    if (any) ++segments;
    padded = padded || (any && !job.Unpadded(segment));
  }
  if (segments == 0) return absl::OkStatus();
  // Room for every segment's tensors, those taken back included: the spans
  // point into these vectors, which must never reallocate.
  direct.inputs.reserve(job.segments.size() * num_inputs);
  direct.outputs.reserve(job.segments.size() * num_outputs);
  int64_t first_row = 0;
  for (const RowView& segment : job.segments) {
    const size_t input = direct.inputs.size(), output = direct.outputs.size();
    bool any = false;
    for (size_t i = 0; i < num_inputs; ++i) {
      const bool device = DeviceCopiesInput(job, segment, i);
      direct.inputs.push_back(device ? segment.inputs[i] : InputRows{});
      any = any || device;
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      const bool device = DeviceCopiesOutput(job, segment, o);
      direct.outputs.push_back(device ? segment.outputs[o] : OutputRows{});
      any = any || device;
    }
    if (any) {
      direct.rows.push_back({first_row, segment.rows,
                             absl::MakeConstSpan(direct.inputs.data() + input, num_inputs),
                             absl::MakeConstSpan(direct.outputs.data() + output, num_outputs)});
    } else {
      direct.inputs.resize(input);
      direct.outputs.resize(output);
    }
    first_row += segment.rows;
  }
  if (padded) {
    for (size_t i = 0; i < num_inputs; ++i) {
      direct.pad_bytes.push_back(
          RepeatedByte(job.shape->input_pad[i], job.shape->inputs[i].element_bytes).value_or(0));
    }
  }
  return absl::OkStatus();
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
  DirectChunkRows direct;
  if (absl::Status found = FindDirectRows(job, set.num_inputs(), set.num_outputs(), direct);
      !found.ok()) {
    return ChunkFailed(slot, job, found);
  }
  {
    const NvtxRange range(set.profiler_ranges(own_slot, job.key).stage);
    GatherInputRows(
        job, set.num_inputs(), [&](size_t i) { return set.input_staging(own_slot, i, staging); },
        [&](size_t s, size_t i) { return DeviceCopiesInput(job, job.segments[s], i); });
  }
  LaunchChunk chunk{own_slot, job.key, job.rows, mode_, staging};
  chunk.direct = direct.rows;
  chunk.pad_bytes = direct.pad_bytes;
  const bool touches_requests = !direct.rows.empty();
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
        return static_cast<const std::byte*>(set.output_rows(own_slot, o, staging));
      },
      [&](size_t s, size_t o) { return DeviceCopiesOutput(job, job.segments[s], o); });
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
