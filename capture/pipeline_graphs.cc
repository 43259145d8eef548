#include "capture/pipeline_graphs.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "capture/padding_rows.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

// Who writes a tensor: a step's output, or the pipeline's input (step -1).
struct Writer {
  int step = -1;
  size_t index = 0;  // the step's output, or the pipeline's input
};

// Holds mutexes, taken in address order (Note [Pipelines share slots]).
class LockedInOrder {
 public:
  explicit LockedInOrder(const std::vector<absl::Mutex*>& ordered) : held_(ordered) {
    for (absl::Mutex* mutex : held_) mutex->Lock();
  }
  LockedInOrder(const LockedInOrder&) = delete;
  LockedInOrder& operator=(const LockedInOrder&) = delete;
  ~LockedInOrder() {
    for (auto it = held_.rbegin(); it != held_.rend(); ++it) (*it)->Unlock();
  }

 private:
  const std::vector<absl::Mutex*>& held_;
};

// The device buffer of a set's input (output) `name` in its graph for
// (slot, key): where the graph reads (writes) it.
absl::StatusOr<void*> InputAddress(const GraphSet& set, int slot, const GraphKey& key,
                                   const std::string& name) {
  for (const InputMapping& mapping : set.graph_info(slot, key).transfers.inputs) {
    if (mapping.name == name) return mapping.device_dst;
  }
  return absl::InternalError(absl::StrCat("the graph has no mapped input '", name, "'"));
}

absl::StatusOr<const void*> OutputAddress(const GraphSet& set, int slot, const GraphKey& key,
                                          const std::string& name) {
  for (const OutputMapping& mapping : set.graph_info(slot, key).transfers.outputs) {
    if (mapping.name == name) return mapping.device_src;
  }
  return absl::InternalError(absl::StrCat("the graph has no mapped output '", name, "'"));
}

}  // namespace

struct PipelineGraphs::Slot {
  CudaStream stream;
  CudaEvent done;
  // Per step: recorded on the step's slot stream, for this stream to wait on.
  std::vector<CudaEvent> step_marks;
  // Per pipeline input and output: pinned staging for the largest batch.
  std::vector<PinnedHostBuffer> input_staging;
  std::vector<PinnedHostBuffer> output_staging;
  struct Batch {
    CudaGraphExec exec;
    // Per pipeline input: the device buffers of the step inputs it feeds.
    std::vector<std::vector<void*>> input_destinations;
    // Per pipeline output: the device buffer of the step output it is.
    std::vector<const void*> output_sources;
  };
  std::vector<Batch> batches;  // as batch_sizes_
  // Every step's enqueue mutex of this slot, in address order.
  std::vector<absl::Mutex*> step_mutexes;
};

absl::StatusOr<std::unique_ptr<PipelineGraphs>> PipelineGraphs::Create(PipelineOptions options) {
  if (options.steps.empty() || options.outputs.empty() || options.batch_sizes.empty() ||
      options.num_slots < 1) {
    return absl::InvalidArgumentError(
        "a pipeline needs steps, outputs, batch sizes and at least one slot");
  }
  auto pipeline = std::unique_ptr<PipelineGraphs>(new PipelineGraphs());
  pipeline->device_ = options.steps.front().set->device();
  std::sort(options.batch_sizes.begin(), options.batch_sizes.end());

  // Who writes each tensor, checked in step order.
  std::map<std::string, Writer> writers;
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    writers[options.inputs[i].name] = {-1, i};
  }
  std::set<const GraphSet*> sets;
  for (size_t k = 0; k < options.steps.size(); ++k) {
    const PipelineStep& step = options.steps[k];
    const GraphSet& set = *step.set;
    if (set.device() != pipeline->device_) {
      return absl::InvalidArgumentError(absl::StrCat("step ", k, " is on GPU ", set.device(),
                                                     ", step 0 on GPU ", pipeline->device_));
    }
    if (!sets.insert(&set).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("step ", k, " runs a graph set an earlier step runs; its graphs share "
                       "one arena, so a pipeline takes each set once"));
    }
    if (set.num_slots() < options.num_slots) {
      return absl::InvalidArgumentError(absl::StrCat(
          "step ", k, " has ", set.num_slots(), " slots; the pipeline wants ", options.num_slots));
    }
    if (step.inputs.size() != set.num_inputs() || step.outputs.size() != set.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "step ", k, " names ", step.inputs.size(), " inputs and ", step.outputs.size(),
          " outputs; its model has ", set.num_inputs(), " and ", set.num_outputs()));
    }
    for (int64_t batch : options.batch_sizes) {
      if (!std::binary_search(set.keys().begin(), set.keys().end(), GraphKey{batch, {}})) {
        return absl::InvalidArgumentError(
            absl::StrCat("step ", k, " has no graph of batch size ", batch));
      }
    }
    for (const std::string& name : step.inputs) {
      if (!writers.contains(name)) {
        return absl::InvalidArgumentError(
            absl::StrCat("step ", k, " reads '", name, "' before any step writes it"));
      }
    }
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      if (step.outputs[o].empty()) continue;
      if (!writers.emplace(step.outputs[o], Writer{static_cast<int>(k), o}).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", step.outputs[o], "' is written twice (step ", k, ")"));
      }
    }
  }
  for (const PipelineTensor& output : options.outputs) {
    const auto it = writers.find(output.name);
    if (it == writers.end() || it->second.step < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("pipeline output '", output.name, "' is written by no step"));
    }
  }
  // Rows must agree in size between each writer and its readers.
  auto writer_row = [&](const Writer& writer, const GraphKey& key) {
    return writer.step < 0
               ? options.inputs[writer.index].bytes_per_row
               : options.steps[writer.step].set->output_bytes_per_row(writer.index, key);
  };
  for (int64_t batch : options.batch_sizes) {
    const GraphKey key{batch, {}};
    for (size_t k = 0; k < options.steps.size(); ++k) {
      const PipelineStep& step = options.steps[k];
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const size_t want = step.set->input_bytes_per_row(i, key);
        const size_t got = writer_row(writers.at(step.inputs[i]), key);
        if (want != got) {
          return absl::InvalidArgumentError(absl::StrCat(
              "step ", k, " reads rows of ", want, " bytes from '", step.inputs[i],
              "', whose rows have ", got, " (batch ", batch, ")"));
        }
      }
    }
    for (const PipelineTensor& output : options.outputs) {
      const size_t got = writer_row(writers.at(output.name), key);
      if (got != output.bytes_per_row) {
        return absl::InvalidArgumentError(absl::StrCat("pipeline output '", output.name,
                                                       "' has rows of ", output.bytes_per_row,
                                                       " bytes; its step writes ", got));
      }
    }
  }

  const CudaDeviceGuard on_device(pipeline->device_);
  RETURN_IF_ERROR(on_device.status());
  const auto largest = static_cast<size_t>(options.batch_sizes.back());
  for (int s = 0; s < options.num_slots; ++s) {
    auto slot = std::make_unique<Slot>();
    ASSIGN_OR_RETURN(slot->stream, CudaStream::Create());
    ASSIGN_OR_RETURN(slot->done, options.sleeping_wait ? CudaEvent::CreateForSleepingWait()
                                                       : CudaEvent::Create());
    for (size_t k = 0; k < options.steps.size(); ++k) {
      ASSIGN_OR_RETURN(CudaEvent mark, CudaEvent::Create());
      slot->step_marks.push_back(std::move(mark));
      slot->step_mutexes.push_back(&options.steps[k].set->enqueue_mutex(s));
    }
    std::sort(slot->step_mutexes.begin(), slot->step_mutexes.end());
    for (const PipelineTensor& input : options.inputs) {
      ASSIGN_OR_RETURN(PinnedHostBuffer staging, PinnedHostBuffer::Allocate(
                                                     largest * input.bytes_per_row));
      slot->input_staging.push_back(std::move(staging));
    }
    for (const PipelineTensor& output : options.outputs) {
      ASSIGN_OR_RETURN(PinnedHostBuffer staging, PinnedHostBuffer::Allocate(
                                                     largest * output.bytes_per_row));
      slot->output_staging.push_back(std::move(staging));
    }
    for (int64_t batch : options.batch_sizes) {
      const GraphKey key{batch, {}};
      Slot::Batch& built = slot->batches.emplace_back();
      built.input_destinations.resize(options.inputs.size());
      cudaGraph_t raw_parent = nullptr;
      CUDA_RETURN_IF_ERROR(cudaGraphCreate(&raw_parent, 0));
      const CudaGraph parent(raw_parent);
      std::vector<cudaGraphNode_t> children(options.steps.size());
      size_t nodes = 0;
      for (size_t k = 0; k < options.steps.size(); ++k) {
        const GraphSet& set = *options.steps[k].set;
        std::vector<cudaGraphNode_t> ready;  // the copies this step waits for
        for (size_t i = 0; i < set.num_inputs(); ++i) {
          ASSIGN_OR_RETURN(void* destination, InputAddress(set, s, key, set.input_name(i)));
          const Writer& writer = writers.at(options.steps[k].inputs[i]);
          if (writer.step < 0) {
            built.input_destinations[writer.index].push_back(destination);
            continue;
          }
          const GraphSet& from = *options.steps[writer.step].set;
          ASSIGN_OR_RETURN(const void* source,
                           OutputAddress(from, s, key, from.output_name(writer.index)));
          cudaGraphNode_t copy = nullptr;
          CUDA_RETURN_IF_ERROR(cudaGraphAddMemcpyNode1D(
              &copy, parent.get(), &children[writer.step], 1, destination, source,
              static_cast<size_t>(batch) * set.input_bytes_per_row(i, key),
              cudaMemcpyDeviceToDevice));
          ready.push_back(copy);
          ++nodes;
        }
        CUDA_RETURN_IF_ERROR(cudaGraphAddChildGraphNode(&children[k], parent.get(), ready.data(),
                                                        ready.size(), set.graph(s, key)));
        ++nodes;
      }
      for (const PipelineTensor& output : options.outputs) {
        const Writer& writer = writers.at(output.name);
        const GraphSet& from = *options.steps[writer.step].set;
        ASSIGN_OR_RETURN(const void* source,
                         OutputAddress(from, s, key, from.output_name(writer.index)));
        built.output_sources.push_back(source);
      }
      cudaGraphExec_t exec = nullptr;
      CUDA_RETURN_IF_ERROR(cudaGraphInstantiate(&exec, parent.get(), 0));
      built.exec = CudaGraphExec(exec);
      CUDA_RETURN_IF_ERROR(cudaGraphUpload(exec, slot->stream.get()));
      pipeline->parent_nodes_ = nodes;
    }
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(slot->stream.get()));
    pipeline->slots_.push_back(std::move(slot));
  }
  pipeline->steps_ = std::move(options.steps);
  pipeline->inputs_ = std::move(options.inputs);
  pipeline->outputs_ = std::move(options.outputs);
  pipeline->batch_sizes_ = std::move(options.batch_sizes);
  return pipeline;
}

absl::Status PipelineGraphs::Run(int slot_index, int64_t batch_size, int64_t rows,
                                 absl::Span<const void* const> inputs,
                                 absl::Span<void* const> outputs, PipelineTiming* timing) const {
  const auto batch =
      std::lower_bound(batch_sizes_.begin(), batch_sizes_.end(), batch_size);
  if (slot_index < 0 || slot_index >= num_slots() || batch == batch_sizes_.end() ||
      *batch != batch_size || rows < 1 || rows > batch_size || inputs.size() != inputs_.size() ||
      outputs.size() != outputs_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pipeline run of ", rows, " rows at batch size ", batch_size, " on slot ", slot_index,
        " with ", inputs.size(), " inputs and ", outputs.size(), " outputs does not fit it"));
  }
  const CudaDeviceGuard on_device(device_);
  RETURN_IF_ERROR(on_device.status());
  const Slot& slot = *slots_[slot_index];
  const Slot::Batch& graphs = slot.batches[static_cast<size_t>(batch - batch_sizes_.begin())];
  cudaStream_t stream = slot.stream.get();
  const auto count = static_cast<size_t>(rows);

  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::memcpy(slot.input_staging[i].get(), inputs[i], count * inputs_[i].bytes_per_row);
  }
  {
    // Note [Pipelines share slots].
    const LockedInOrder locked(slot.step_mutexes);
    for (size_t k = 0; k < steps_.size(); ++k) {
      cudaEvent_t mark = slot.step_marks[k].get();
      CUDA_RETURN_IF_ERROR(cudaEventRecord(mark, steps_[k].set->stream(slot_index)));
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, mark, 0));
    }
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const size_t row_bytes = inputs_[i].bytes_per_row;
      for (void* destination : graphs.input_destinations[i]) {
        CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(destination, slot.input_staging[i].get(),
                                             count * row_bytes, cudaMemcpyHostToDevice, stream));
        CUDA_RETURN_IF_ERROR(
            FillPaddingRows(destination, row_bytes, rows, batch_size, stream));
      }
    }
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graphs.exec.get(), stream));
    for (size_t o = 0; o < outputs_.size(); ++o) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(slot.output_staging[o].get(), graphs.output_sources[o],
                                           count * outputs_[o].bytes_per_row,
                                           cudaMemcpyDeviceToHost, stream));
    }
    CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.done.get(), stream));
    for (const PipelineStep& step : steps_) {
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(step.set->stream(slot_index), slot.done.get(), 0));
    }
  }
  const Clock::time_point enqueued = Clock::now();
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slot.done.get()));
  const Clock::time_point finished = Clock::now();
  for (size_t o = 0; o < outputs_.size(); ++o) {
    std::memcpy(outputs[o], slot.output_staging[o].get(), count * outputs_[o].bytes_per_row);
  }
  if (timing != nullptr) {
    timing->input_ns = Nanos(enqueued - start);
    timing->infer_ns = Nanos(finished - enqueued);
    timing->output_ns = Nanos(Clock::now() - finished);
  }
  return absl::OkStatus();
}

PipelineGraphs::~PipelineGraphs() {
  // The parent graphs' replays may still run (a failed Run returns early).
  const CudaDeviceGuard on_device(device_);
  for (const std::unique_ptr<Slot>& slot : slots_) cudaStreamSynchronize(slot->stream.get());
}

}  // namespace graphserve
