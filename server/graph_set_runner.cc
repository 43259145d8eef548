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

// How `segment`'s rows of input `i` reach the graph (Note [Pitched row
// copies] in capture/graph_set.h): from the request's pinned or device memory
// by the device, or through staging, padded by the device where its pitched
// copy can (the row a leading block of the bucket's, the pad one repeated
// byte), by the host otherwise.
RowRoute InputRoute(const ChunkJob& job, const RowView& segment, size_t i) {
  const bool reached = segment.inputs[i].reached_by_device();
  if (job.Unpadded(segment)) return reached ? RowRoute::kDirect : RowRoute::kStaged;
  const TensorRow& bucket = job.shape->inputs[i];
  if (!LeadingBlock(segment.shape->inputs[i], bucket) ||
      !RepeatedByte(job.shape->input_pad[i], bucket.element_bytes).has_value()) {
    return RowRoute::kStaged;
  }
  return reached ? RowRoute::kDirect : RowRoute::kPacked;
}

// The same for output `o`'s rows, sliced by the device where they are a
// leading block of the bucket's.
RowRoute OutputRoute(const ChunkJob& job, const RowView& segment, size_t o) {
  const OutputRows& output = segment.outputs[o];
  if (output.data == nullptr) return RowRoute::kStaged;  // nothing to copy
  const bool reached = output.reached_by_device();
  if (job.Unpadded(segment)) return reached ? RowRoute::kDirect : RowRoute::kStaged;
  if (!LeadingBlock(segment.shape->outputs[o], job.shape->outputs[o])) return RowRoute::kStaged;
  return reached ? RowRoute::kDirect : RowRoute::kPacked;
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

// Fills `direct` with the job's rows the device copies (kDirect: from and to
// the request; kPacked: from and to their place in staging buffer
// `staging`); leaves it empty when the host copies every row. A row in
// device memory that the device cannot place is an internal error: the
// request should have been read through the host (ServedModel::Infer).
absl::Status FindDirectRows(const GraphSet& set, int slot, int staging, const ChunkJob& job,
                            DirectChunkRows& direct) {
  const size_t num_inputs = set.num_inputs(), num_outputs = set.num_outputs();
  // The common chunk, every row through staging at the bucket's extents,
  // allocates nothing here. (Rows in device memory go on, for the error.)
  const auto all_staged = [&](const RowView& segment) {
    for (size_t i = 0; i < num_inputs; ++i) {
      if (segment.inputs[i].memory == RowMemory::kDevice ||
          InputRoute(job, segment, i) != RowRoute::kStaged) {
        return false;
      }
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      if (segment.outputs[o].memory == RowMemory::kDevice ||
          OutputRoute(job, segment, o) != RowRoute::kStaged) {
        return false;
      }
    }
    return true;
  };
  if (std::all_of(job.segments.begin(), job.segments.end(), all_staged)) {
    return absl::OkStatus();
  }
  // Room for every segment's tensors, those taken back included: the spans
  // point into these vectors, which must never reallocate.
  direct.inputs.reserve(job.segments.size() * num_inputs);
  direct.outputs.reserve(job.segments.size() * num_outputs);
  bool padded = false;
  int64_t first_row = 0;
  for (const RowView& segment : job.segments) {
    const size_t input = direct.inputs.size(), output = direct.outputs.size();
    bool any = false;
    for (size_t i = 0; i < num_inputs; ++i) {
      const RowRoute route = InputRoute(job, segment, i);
      InputRows& rows = direct.inputs.emplace_back();
      if (route == RowRoute::kDirect) {
        rows = segment.inputs[i];
      } else if (route == RowRoute::kPacked) {
        rows = {set.input_staging(slot, i, staging) +
                    static_cast<size_t>(first_row) * job.shape->inputs[i].bytes,
                segment.inputs[i].pitch, RowMemory::kPinned};
      } else if (segment.inputs[i].memory == RowMemory::kDevice) {
        return absl::InternalError("input rows in device memory that the device cannot pad");
      }
      any = any || route != RowRoute::kStaged;
    }
    for (size_t o = 0; o < num_outputs; ++o) {
      const RowRoute route = OutputRoute(job, segment, o);
      OutputRows& rows = direct.outputs.emplace_back();
      if (route == RowRoute::kDirect) {
        rows = segment.outputs[o];
      } else if (route == RowRoute::kPacked) {
        rows = {set.output_rows(slot, o, staging) +
                    static_cast<size_t>(first_row) * job.shape->outputs[o].bytes,
                segment.outputs[o].pitch, RowMemory::kPinned};
      } else if (segment.outputs[o].data != nullptr &&
                 segment.outputs[o].memory == RowMemory::kDevice) {
        return absl::InternalError("output rows in device memory that the device cannot slice");
      }
      any = any || route != RowRoute::kStaged;
    }
    if (any) {
      direct.rows.push_back({first_row, segment.rows,
                             absl::MakeConstSpan(direct.inputs.data() + input, num_inputs),
                             absl::MakeConstSpan(direct.outputs.data() + output, num_outputs)});
      padded = padded || !job.Unpadded(segment);
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
  if (absl::Status found = FindDirectRows(set, own_slot, staging, job, direct); !found.ok()) {
    return ChunkFailed(slot, job, found);
  }
  {
    const NvtxRange range(set.profiler_ranges(own_slot, job.key).stage);
    GatherInputRows(
        job, set.num_inputs(), [&](size_t i) { return set.input_staging(own_slot, i, staging); },
        [&](size_t s, size_t i) { return InputRoute(job, job.segments[s], i); });
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
      job, set.num_outputs(), [&](size_t o) { return set.output_rows(own_slot, o, staging); },
      [&](size_t s, size_t o) { return OutputRoute(job, job.segments[s], o); });
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
