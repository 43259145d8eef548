#include "capture/graph_set.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "capture/graph_post_processing.h"
#include "capture/padding_rows.h"
#include "capture/stream_capture.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_error.h"
#include "common/cuda_status.h"
#include "common/logging.h"
#include "common/nvtx.h"
#include "common/status.h"
#include "common/tensor.h"
#include "runtime/bind.h"
#include "runtime/executor.h"

namespace graphserve {

struct GraphSet::Graph {
  // The eager plan. It also owns what the captured kernels point at
  // (cuBLASLt descriptors, kernel parameters), so it lives as long as `exec`.
  std::unique_ptr<CudaExecutor> executor;
  // The post-processed graph `exec` was made from, kept for pipelines that
  // replay it as a child graph (capture/pipeline_graphs.h).
  CudaGraph graph;
  CudaGraphExec exec;
  CapturedGraphInfo info;
  // Per staging buffer, the host side of each of info.transfers' input and
  // output mappings, in their order: resolved once here, not per launch.
  std::array<std::vector<const void*>, kStagingBuffers> input_hosts;
  std::array<std::vector<void*>, kStagingBuffers> output_hosts;
  // The set's input (output) index of each input (output) mapping, for
  // LaunchChunk's per-input sources and per-output destinations.
  std::vector<size_t> input_of_mapping;
  std::vector<size_t> output_of_mapping;
  ProfilerRanges ranges;
};

struct GraphSet::Slot {
  CudaStream stream;
  // Held while a chunk is enqueued; Note [Pipelines share slots] in
  // capture/pipeline_graphs.h.
  mutable absl::Mutex enqueue_mu;
  // Per staging buffer: its last Launch's completion.
  std::array<CudaEvent, kStagingBuffers> done;
  std::shared_ptr<StreamArena> arena;
  // kStagingBuffers host sides per name; capture and the checks use side 0.
  std::shared_ptr<IoBuffers> io;
  std::shared_ptr<SlotLanes> lanes;  // side streams and events
  // Library handles, one per slot, shared by its N plans.
  std::shared_ptr<CublasLtHandle> cublas;
  std::shared_ptr<CudnnHandle> cudnn;
  std::vector<Graph> graphs;  // as keys_
  size_t graph_exec_bytes = 0;
};

namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string Label(int slot, const GraphKey& key) {
  return absl::StrCat("slot ", slot, ", batch ", GraphKeyString(key));
}

GraphSet::ProfilerRanges MakeProfilerRanges(const std::string& model, int slot,
                                            const GraphKey& key) {
  const std::string prefix = absl::StrCat(model, " b", GraphKeyString(key), " slot ", slot, " ");
  return {.stage = prefix + "stage",
          .h2d = prefix + "h2d",
          .launch = prefix + "launch",
          .d2h = prefix + "d2h",
          .complete = prefix + "complete"};
}

absl::Status ValidateOptions(const GraphSetOptions& options) {
  if (options.num_streams < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("need at least one stream, got ", options.num_streams));
  }
  if (options.graphs.empty()) {
    return absl::InvalidArgumentError("need at least one batch size to capture");
  }
  std::set<GraphKey> seen;
  for (const GraphKey& key : options.graphs) {
    if (key.batch_size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch size ", key.batch_size, " is not positive"));
    }
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch size ", GraphKeyString(key), " is listed twice"));
    }
  }
  if (CudaDeviceCount() <= options.executor.device) {
    return absl::FailedPreconditionError(absl::StrCat(
        "capture needs a CUDA GPU: device ", options.executor.device, " is not available (",
        CudaDeviceCount(), " found)"));
  }
  return absl::OkStatus();
}

// Every graph input and output must have the batch as its leading dim, so
// that a replay can move whole rows. A model without a batch dim (Note
// [Models without a batch dim] in runtime/ir.h) runs one row, its tensors
// whole, at batch 1: any dims.
absl::Status CheckBatchLeading(const Model& model, const BoundGraph& graph) {
  if (!model.batches) return absl::OkStatus();
  auto check = [&](ValueId id, const char* kind) -> absl::Status {
    const BoundValue& value = graph.value(id);
    if (value.dims.empty() || value.dims[0] != graph.batch_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          kind, " '", value.name, "' has dims ", DimsToString(value.dims), " at batch size ",
          graph.batch_size, "; GraphServe pads and splits requests along a leading batch "
          "dimension, so every input and output must have one"));
    }
    return absl::OkStatus();
  };
  for (ValueId id : graph.inputs) RETURN_IF_ERROR(check(id, "input"));
  for (ValueId id : graph.outputs) RETURN_IF_ERROR(check(id, "output"));
  return absl::OkStatus();
}

size_t BytesPerRow(const BoundGraph& graph, ValueId id) {
  return graph.value(id).bytes() / static_cast<size_t>(graph.batch_size);
}

// The host buffers a capture may copy from and to: the slot's staging.
TransferRegistry RegistryFor(const BoundGraph& graph, const IoBuffers& io) {
  TransferRegistry registry;
  registry.batch_size = graph.batch_size;
  for (ValueId id : graph.inputs) {
    const std::string& name = graph.value(id).name;
    registry.input_staging.push_back({name, io.host(name), io.bytes(name)});
  }
  for (ValueId id : graph.outputs) {
    const std::string& name = graph.value(id).name;
    registry.output_staging.push_back({name, io.host(name), io.bytes(name)});
  }
  return registry;
}

// The mappings must cover the model's interface exactly: each input copied
// once from the start of its staging, each output copied once to the start
// of its staging, whole rows of the bound dims. Anything else would make a
// replay ignore an input or return a stale output.
absl::Status CheckMappingsCoverInterface(const BoundGraph& graph, const IoBuffers& io,
                                         const TransferPlan& plan) {
  for (ValueId id : graph.inputs) {
    const std::string& name = graph.value(id).name;
    int found = 0;
    for (const InputMapping& mapping : plan.inputs) {
      if (mapping.name != name) continue;
      ++found;
      if (mapping.host_src != io.host(name) || mapping.bytes_per_row != BytesPerRow(graph, id)) {
        return absl::InternalError(absl::StrCat(
            "the captured copy of input '", name, "' moves ", mapping.bytes_per_row,
            " bytes per row from staging offset ",
            static_cast<const char*>(mapping.host_src) - static_cast<const char*>(io.host(name)),
            "; expected ", BytesPerRow(graph, id), " bytes per row from offset 0"));
      }
    }
    if (found != 1) {
      return absl::InternalError(absl::StrCat("input '", name, "' is copied to the device ",
                                              found, " times in the captured run; expected once"));
    }
  }
  for (ValueId id : graph.outputs) {
    const std::string& name = graph.value(id).name;
    int found = 0;
    for (const OutputMapping& mapping : plan.outputs) {
      if (mapping.name != name) continue;
      ++found;
      if (mapping.host_dst != io.host(name) || mapping.bytes_per_row != BytesPerRow(graph, id)) {
        return absl::InternalError(absl::StrCat(
            "the captured copy of output '", name, "' does not write whole rows of ",
            BytesPerRow(graph, id), " bytes from the start of its staging"));
      }
    }
    if (found != 1) {
      return absl::InternalError(absl::StrCat("output '", name, "' is copied to the host ",
                                              found, " times in the captured run; expected once"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> FreeDeviceBytes() {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

std::vector<const void*> RawPointers(const std::vector<HostTensor>& tensors) {
  std::vector<const void*> pointers;
  for (const HostTensor& tensor : tensors) pointers.push_back(tensor.raw());
  return pointers;
}

// Outputs of a finished launch of `rows` rows, as tensors of those rows.
std::vector<HostTensor> CollectOutputs(const GraphSet& set, const BoundGraph& graph, int slot,
                                       int64_t rows) {
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.outputs[i]);
    Dims dims = value.dims;
    // All rows: the whole tensor, whatever its dims (a model without a batch
    // dim has any, Note [Models without a batch dim]).
    if (rows != graph.batch_size) dims[0] = rows;
    HostTensor& out = outputs.emplace_back(value.dtype, dims);
    std::memcpy(out.raw(), set.output_rows(slot, i), out.bytes());
  }
  return outputs;
}

// Whether `data` holds `tensor`'s bytes.
bool SameBytes(const void* data, const HostTensor& tensor) {
  return std::memcmp(data, tensor.raw(), tensor.bytes()) == 0;
}

bool SameBytes(const HostTensor& a, const HostTensor& b) {
  return a.bytes() == b.bytes() && SameBytes(a.raw(), b);
}

// float32 outputs by relative error, others exactly; returns the largest
// relative error.
absl::StatusOr<double> CompareOutputs(const std::vector<HostTensor>& got,
                                      const std::vector<HostTensor>& want,
                                      const BoundGraph& graph, double tolerance,
                                      const std::string& what) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string& name = graph.value(graph.outputs[i]).name;
    // Bit-identical is the usual answer (the same kernels on the same
    // input): a memcmp, where the norms took 1 s of BERT-base's load. NaNs
    // that match agree here; the independent reference refuses a model
    // that answers NaN on the check's input.
    if (SameBytes(got[i], want[i])) continue;
    if (got[i].dtype() == DType::kFloat32) {
      const double error = RelativeError(got[i], want[i]);
      worst = std::max(worst, error);
      if (!(error <= tolerance)) {
        return absl::InternalError(absl::StrCat(what, ": output '", name,
                                                "' has relative error ", error, " (tolerance ",
                                                tolerance, ")"));
      }
    } else {
      return absl::InternalError(absl::StrCat(what, ": output '", name, "' differs"));
    }
  }
  return worst;
}

bool SameBytes(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameBytes(a[i], b[i])) return false;
  }
  return true;
}

// What slot 0's check of a key leaves for the checks after it: the check's
// random input and the full-batch replay's outputs on it.
struct CheckedRun {
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
};

// Note [An independent reference]: slot 0's replay of `key`, `run`, against
// `reference` on the same input. Float outputs (of any float type) by
// relative error; the others exactly when `exact_outputs`, else not at all.
// Returns the largest relative error.
absl::StatusOr<double> CheckAgainstReference(const GraphKey& key, const BoundGraph& graph,
                                             const CheckedRun& run,
                                             const GraphSetOptions& options) {
  const std::vector<HostTensor>& replay = run.outputs;
  absl::StatusOr<std::vector<HostTensor>> want = options.reference(key, run.inputs);
  if (!want.ok()) return AnnotateStatus(want.status(), "the independent reference");
  if (want->size() != replay.size()) {
    return absl::InternalError(absl::StrCat("the independent reference has ", want->size(),
                                            " outputs, the graph ", replay.size()));
  }
  double worst = 0;
  for (size_t i = 0; i < replay.size(); ++i) {
    const std::string& name = graph.value(graph.outputs[i]).name;
    if (IsFloatingDType(replay[i].dtype())) {
      const double error = RelativeError(replay[i], (*want)[i]);
      worst = std::max(worst, error);
      if (!(error <= options.reference_tolerance)) {
        return absl::InternalError(absl::StrCat(
            "replay against the independent reference (Note [An independent reference]): "
            "output '", name, "' has relative error ", error, " (tolerance ",
            options.reference_tolerance, ")"));
      }
    } else if (options.reference_compares_exact_outputs && !SameBytes(replay[i], (*want)[i])) {
      return absl::InternalError(absl::StrCat(
          "replay against the independent reference: output '", name, "' differs"));
    }
  }
  return worst;
}

// Note [The reference beside the captures]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A key's independent reference plans, runs and drops a plain plan of its
// own; it needs only slot 0's checked run of the key. So it runs on a thread
// of its own while this thread captures and checks the keys after it: at
// small keys the reference is host work (binding, planning), at large ones a
// long GPU run, and the captures are host work between short GPU runs, so
// the two overlap. The reference's binding, planning and freeing may
// synchronise the device, which would invalidate a capture in progress, so
// they wait for captures to end and hold new ones off; only its GPU run
// overlaps them (Note [Captures and device-wide synchronisation] in
// common/capture_exclusion.h). One reference runs at a time (the runner is
// not meant for concurrent calls), and a key's reference starts only after
// the one before it has ended. BERT-base at 4 streams spent 1.3 s of a
// 10.5 s load waiting on references; beside the captures it loads in
// 8.4-9.6 s (H200). Nothing timed runs meanwhile: GEMM algorithms are timed
// when the plans are made, before the first capture.
class ReferenceChecks {
 public:
  ReferenceChecks(const GraphSetOptions& options, int device)
      : options_(options), device_(device) {}
  ~ReferenceChecks() {
    if (pending_) pending_->thread.join();
  }
  ReferenceChecks(const ReferenceChecks&) = delete;
  ReferenceChecks& operator=(const ReferenceChecks&) = delete;

  // Finishes the reference started before, then starts `key`'s against
  // `run` on a thread of its own; its result goes to `info`, and `label`
  // names the check in its error.
  absl::Status Start(const GraphKey& key, const BoundGraph& graph,
                     std::shared_ptr<const CheckedRun> run, CapturedGraphInfo* info,
                     std::string label) {
    RETURN_IF_ERROR(Finish());
    pending_ = std::make_unique<Pending>();
    pending_->info = info;
    pending_->label = std::move(label);
    Pending& pending = *pending_;
    pending.thread = std::thread([this, &pending, key, &graph, run = std::move(run)] {
      const Clock::time_point start = Clock::now();
      const CudaDeviceGuard on_device(device_);
      pending.error = on_device.status().ok()
                          ? CheckAgainstReference(key, graph, *run, options_)
                          : absl::StatusOr<double>(on_device.status());
      pending.ms = MillisecondsSince(start);
    });
    return absl::OkStatus();
  }

  // Waits for the reference started last, if any, and writes its result.
  absl::Status Finish() {
    if (!pending_) return absl::OkStatus();
    pending_->thread.join();
    const std::unique_ptr<Pending> done = std::move(pending_);
    if (!done->error.ok()) return AnnotateStatus(done->error.status(), done->label);
    done->info->reference_rel_err = *done->error;
    done->info->reference_ms = done->ms;
    return absl::OkStatus();
  }

 private:
  struct Pending {
    std::thread thread;
    CapturedGraphInfo* info = nullptr;
    std::string label;
    absl::StatusOr<double> error = 0.0;  // written by `thread`, read after its join
    double ms = 0;
  };
  const GraphSetOptions& options_;
  const int device_;
  std::unique_ptr<Pending> pending_;
};

// Note [Checking a captured graph]
// A graph is accepted only after:
//  1. replay == eager: the same fresh random input through the eager plan
//     and through the replay (device outputs and host staging poisoned with
//     NaN first, so an output the replay forgets to write fails), compared by
//     relative error;
//  2. padding independence: the replay of 1 again, its last B - b rows (b =
//     B / 2) replaced by NaN and huge values; the first b rows' outputs must
//     be bit-identical to 1's. A model that mixes rows (a reduction over the
//     batch) fails here, because padding could never be served correctly for
//     it. The eager run of 1 is the capture's warm-up run, fed the check's
//     input: a forward pass less per key.
// A later slot's graph runs slot 0's plan (the same kernels, algorithms and
// schedule) at its own addresses, so what 1 and 2 prove of the plan holds for
// it too; what is its own, its capture and its copies' mappings, is checked by
// CheckLikeFirstSlot: its replay must agree with slot 0's on the same input,
// with its outputs poisoned first. One replay instead of four runs: BERT-base's
// checks at 4 slots took 7 of a 41 s load. Slot 0's input and outputs come
// from its own check (CheckedRun), which the independent reference also
// reads, so graphs are captured key by key, every slot of a key before the
// next key, and only one key's outputs are kept at a time.
absl::StatusOr<CheckedRun> CheckGraph(const GraphSet& set, int slot, const GraphKey& key,
                                      const BoundGraph& graph, const TransferPlan& transfers,
                                      std::vector<HostTensor> inputs,
                                      const std::vector<HostTensor>& eager, double tolerance,
                                      double* rel_err) {
  const int64_t batch = graph.batch_size;
  cudaStream_t stream = set.stream(slot);
  auto wait = [&]() {
    return CudaErrorToStatus(cudaEventSynchronize(set.done_event(slot)), "cudaEventSynchronize");
  };

  // 1. Replay against eager (the warm-up run before capture, on the same
  // input), outputs poisoned first.
  CheckedRun run;
  run.inputs = std::move(inputs);
  const std::vector<const void*> input_pointers = RawPointers(run.inputs);
  for (const OutputMapping& mapping : transfers.outputs) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(const_cast<void*>(mapping.device_src), 0xFF,
                                         mapping.bytes, stream));  // all-ones: NaN as float32
    std::memset(mapping.host_dst, 0xFF, mapping.bytes);
  }
  RETURN_IF_ERROR(set.Launch({slot, key, batch, LaunchMode::kGraph}, input_pointers));
  RETURN_IF_ERROR(wait());
  run.outputs = CollectOutputs(set, graph, slot, batch);
  ASSIGN_OR_RETURN(*rel_err,
                   CompareOutputs(run.outputs, eager, graph, tolerance, "replay against the eager run"));
  if (batch == 1) return run;

  // 2. Padding independence: the first half of the rows as in 1, the rest
  // garbage instead of real rows.
  const int64_t rows = batch / 2;
  for (const InputMapping& mapping : transfers.inputs) {
    const size_t offset = static_cast<size_t>(rows) * mapping.bytes_per_row;
    std::vector<unsigned char> garbage(mapping.bytes - offset);
    for (size_t i = 0; i < garbage.size(); ++i) {
      garbage[i] = (i / 4) % 2 == 0 ? 0xFF : 0x7E;  // float32 NaN, then about 8e37
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(mapping.device_dst) + offset,
                                         garbage.data(), garbage.size(), cudaMemcpyHostToDevice,
                                         stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));  // `garbage` is pageable and local
  }
  // The replay alone, without Launch's copies and fill, which would
  // overwrite the garbage; the real rows are still on the device from 1.
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(set.graph_exec(slot, key), stream));
  for (const OutputMapping& mapping : transfers.outputs) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(mapping.host_dst, mapping.device_src,
                                         static_cast<size_t>(rows) * mapping.bytes_per_row,
                                         cudaMemcpyDeviceToHost, stream));
  }
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  std::vector<HostTensor> real_rows;
  for (const HostTensor& output : run.outputs) {
    Dims dims = output.dims();
    dims[0] = rows;
    HostTensor& out = real_rows.emplace_back(output.dtype(), dims);
    std::memcpy(out.raw(), output.raw(), out.bytes());
  }
  if (!SameBytes(CollectOutputs(set, graph, slot, rows), real_rows)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the outputs of ", rows, " real rows changed when only the padding rows of batch ",
        batch, " changed: the model mixes rows of the batch, so requests cannot be padded"));
  }
  return run;
}

// Note [Checking a captured graph], for slot > 0: its replay on slot 0's
// checked input against slot 0's outputs, `first`.
absl::Status CheckLikeFirstSlot(const GraphSet& set, int slot, const GraphKey& key,
                                const BoundGraph& graph, const TransferPlan& transfers,
                                const CheckedRun& first, double tolerance, double* rel_err) {
  for (const OutputMapping& mapping : transfers.outputs) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(const_cast<void*>(mapping.device_src), 0xFF,
                                         mapping.bytes, set.stream(slot)));
    std::memset(mapping.host_dst, 0xFF, mapping.bytes);
  }
  RETURN_IF_ERROR(
      set.Launch({slot, key, graph.batch_size, LaunchMode::kGraph}, RawPointers(first.inputs)));
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set.done_event(slot)));
  // Bit-identical, as usual (the same kernels on the same input): compared
  // where the replay left them, without copying them out of staging.
  bool identical = true;
  for (size_t i = 0; i < first.outputs.size() && identical; ++i) {
    identical = SameBytes(set.output_rows(slot, i), first.outputs[i]);
  }
  if (identical) {
    *rel_err = 0;
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(*rel_err, CompareOutputs(CollectOutputs(set, graph, slot, graph.batch_size),
                                            first.outputs, graph, tolerance,
                                            "replay against slot 0's replay"));
  return absl::OkStatus();
}

// Where a mapping's tensor `name` is among the set's inputs or outputs.
absl::StatusOr<size_t> IndexOf(const std::vector<std::string>& names, const std::string& name) {
  const auto found = std::find(names.begin(), names.end(), name);
  if (found == names.end()) {
    return absl::InternalError(
        absl::StrCat("a mapped copy names '", name, "', which is no tensor of the interface"));
  }
  return static_cast<size_t>(found - names.begin());
}

}  // namespace

// What slot 0's capture of a key leaves for the key's check (Note [Checking
// a captured graph]): the check's random input and the capture's warm-up run
// on it, the check's eager run. Empty for later slots and without checks.
struct GraphSet::EagerRun {
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
};

absl::StatusOr<std::vector<BoundGraph>> GraphSet::BindKeys(const Model& model,
                                                         const GraphSetOptions& options) {
  // Bind once per key; slots share the bound graphs (constants by pointer),
  // and so may other sets and schedule candidates (Note [Binding once per
  // key] in runtime/bind.h).
  std::shared_ptr<BoundGraphs> bound_graphs = options.bound_graphs;
  if (!bound_graphs) bound_graphs = std::make_shared<BoundGraphs>(model);
  if (&bound_graphs->model() != &model) {
    return absl::InvalidArgumentError("the set's bound graphs bind another model");
  }
  std::vector<BoundGraph> bound;
  for (const GraphKey& key : keys_) {
    absl::StatusOr<BoundGraph> graph = bound_graphs->At(key);
    if (!graph.ok()) {
      return AnnotateStatus(graph.status(), absl::StrCat("binding for batch ", GraphKeyString(key)));
    }
    RETURN_IF_ERROR(CheckBatchLeading(model, *graph));
    std::vector<size_t>& input_rows = input_bytes_per_row_.emplace_back();
    std::vector<size_t>& output_rows = output_bytes_per_row_.emplace_back();
    std::vector<Dims>& output_dims = output_dims_.emplace_back();
    for (ValueId id : graph->inputs) input_rows.push_back(BytesPerRow(*graph, id));
    for (ValueId id : graph->outputs) {
      output_rows.push_back(BytesPerRow(*graph, id));
      output_dims.push_back(graph->value(id).dims);
    }
    bound.push_back(*std::move(graph));
  }
  for (ValueId id : bound.front().inputs) input_names_.push_back(bound.front().value(id).name);
  for (ValueId id : bound.front().outputs) {
    output_names_.push_back(bound.front().value(id).name);
  }
  return bound;
}

absl::StatusOr<std::unique_ptr<GraphSet::Slot>> GraphSet::PlanSlot(
    const Model& model, const GraphSetOptions& options, int m,
    const std::vector<BoundGraph>& bound,
    const std::shared_ptr<AlgorithmChoices>& algorithm_choices) const {
  auto slot = std::make_unique<Slot>();
  ASSIGN_OR_RETURN(slot->stream, CudaStream::Create());
  for (CudaEvent& done : slot->done) {
    ASSIGN_OR_RETURN(done, CudaEvent::Create());
  }
  ASSIGN_OR_RETURN(slot->arena, StreamArena::Create(options.executor.device));
  ASSIGN_OR_RETURN(slot->io, IoBuffers::Create(options.executor.device, kStagingBuffers));
  ASSIGN_OR_RETURN(slot->lanes, SlotLanes::Create(options.executor.device));
  ASSIGN_OR_RETURN(CublasLtHandle cublas, CublasLtHandle::Create());
  slot->cublas = std::make_shared<CublasLtHandle>(std::move(cublas));
  ASSIGN_OR_RETURN(CudnnHandle cudnn, CudnnHandle::Create());
  slot->cudnn = std::make_shared<CudnnHandle>(std::move(cudnn));
  slot->graphs.resize(bound.size());
  // Plan every key before capturing any: planning reserves the shared
  // arena and I/O buffers, and nothing may move once a graph holds their
  // addresses.
  for (int n = static_cast<int>(bound.size()) - 1; n >= 0; --n) {
    const ExecutionResources resources{weights_,     slot->arena, slot->io,         slot->lanes,
                                       slot->cublas, slot->cudnn, algorithm_choices};
    CudaExecutorOptions executor_options = options.executor;
    const GraphKey& key = keys_[n];
    if (const auto it = options.schedules.find(key); it != options.schedules.end()) {
      executor_options.schedule = it->second;
    }
    absl::StatusOr<std::unique_ptr<CudaExecutor>> executor =
        CudaExecutor::Create(bound[n], executor_options, resources);
    if (!executor.ok()) {
      return AnnotateStatus(executor.status(), absl::StrCat("planning ", Label(m, key)));
    }
    Graph& graph = slot->graphs[n];
    graph.executor = *std::move(executor);
    graph.info.key = key;
    graph.ranges = MakeProfilerRanges(model.name, m, key);
    const CudaExecutor::PlanTimes& times = graph.executor->plan_times();
    graph.info.plan_kernels_ms = times.kernels_ms;
    graph.info.plan_memory_ms = times.memory_ms;
    graph.info.plan_autotune_ms = times.autotune_ms;
    const Schedule& schedule = graph.executor->schedule();
    graph.info.lanes = schedule.lanes;
    graph.info.events = graph.executor->events_per_run();
    graph.info.max_width = schedule.max_width;
    graph.info.critical_path = schedule.critical_path;
  }
  return slot;
}

absl::StatusOr<GraphSet::EagerRun> GraphSet::Capture(const Model& model,
                                                     const GraphSetOptions& options, int m,
                                                     size_t n, const BoundGraph& bound) {
  Slot& s = *slots_[m];
  Graph& graph = s.graphs[n];
  const std::string label = Label(m, graph.info.key);
  const Clock::time_point capture_start = Clock::now();
  const CudaExecutor& executor = *graph.executor;
  // Slot 0's check input goes through the capture's warm-up run, which
  // is the check's eager run; later slots' plans, and every slot of a
  // set whose work already ran, capture without one.
  const bool eager_check = options.check_replays && m == 0;
  EagerRun run;
  if (eager_check) {
    run.inputs = RandomInputs(bound, options.seed + static_cast<uint64_t>(n));
    for (size_t i = 0; i < run.inputs.size(); ++i) {
      std::memcpy(input_staging(0, i, 0), run.inputs[i].raw(), run.inputs[i].bytes());
    }
  }
  const WarmUp warm_up = eager_check || (m == 0 && !options.warmed_up)
                             ? WarmUp::kFirst
                             : WarmUp::kIfCaptureFails;
  const NvtxRange capture_range(
      absl::StrCat(model.name, " b", GraphKeyString(graph.info.key), " slot ", m, " capture"));
  ASSIGN_OR_RETURN(
      CudaGraph captured,
      CaptureWorkload(
          s.stream.get(), label,
          [&](cudaStream_t stream) { return executor.Enqueue(stream); }, warm_up));
  if (eager_check) run.outputs = CollectOutputs(*this, bound, 0, bound.batch_size);
  absl::StatusOr<TransferPlan> transfers =
      PostProcessMemcpyNodes(captured.get(), RegistryFor(bound, *s.io));
  if (!transfers.ok()) return AnnotateStatus(transfers.status(), label);
  RETURN_IF_ERROR(
      AnnotateStatus(CheckMappingsCoverInterface(bound, *s.io, *transfers), label));
  graph.info.transfers = *std::move(transfers);
  for (const InputMapping& mapping : graph.info.transfers.inputs) {
    ASSIGN_OR_RETURN(const size_t input, IndexOf(input_names_, mapping.name));
    graph.input_of_mapping.push_back(input);
  }
  for (const OutputMapping& mapping : graph.info.transfers.outputs) {
    ASSIGN_OR_RETURN(const size_t output, IndexOf(output_names_, mapping.name));
    graph.output_of_mapping.push_back(output);
  }
  for (int staging = 0; staging < kStagingBuffers; ++staging) {
    for (const InputMapping& mapping : graph.info.transfers.inputs) {
      graph.input_hosts[staging].push_back(s.io->host(mapping.name, staging));
    }
    for (const OutputMapping& mapping : graph.info.transfers.outputs) {
      graph.output_hosts[staging].push_back(s.io->host(mapping.name, staging));
    }
  }
  ASSIGN_OR_RETURN(graph.info.nodes, GraphNodeCount(captured.get()));

  ASSIGN_OR_RETURN(const size_t free_before, FreeDeviceBytes());
  cudaGraphExec_t exec = nullptr;
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaGraphInstantiate(&exec, captured.get(), 0), "cudaGraphInstantiate"),
      label));
  graph.exec = CudaGraphExec(exec);
  graph.graph = std::move(captured);
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaGraphUpload(exec, s.stream.get()), "cudaGraphUpload"), label));
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaStreamSynchronize(s.stream.get()), "cudaStreamSynchronize"),
      label));
  ASSIGN_OR_RETURN(const size_t free_after, FreeDeviceBytes());
  if (free_before > free_after) s.graph_exec_bytes += free_before - free_after;
  graph.info.capture_ms = MillisecondsSince(capture_start);
  return run;
}

absl::StatusOr<std::unique_ptr<GraphSet>> GraphSet::Create(const Model& model,
                                                          const GraphSetOptions& options) {
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(ValidateOptions(options));
  CudaDeviceGuard device_guard(options.executor.device);
  RETURN_IF_ERROR(device_guard.status());

  auto set = std::unique_ptr<GraphSet>(new GraphSet());
  set->device_ = options.executor.device;
  set->keys_ = options.graphs;
  std::sort(set->keys_.begin(), set->keys_.end());
  set->shape_dims_ = ShapeDimNames(model);
  ASSIGN_OR_RETURN(const std::vector<BoundGraph> bound, set->BindKeys(model, options));
  if (options.weights) {
    if (options.weights->device() != options.executor.device) {
      return absl::InvalidArgumentError(
          absl::StrCat("the weight store is on GPU ", options.weights->device(),
                       ", the set on GPU ", options.executor.device));
    }
    set->weights_ = options.weights;
  } else {
    ASSIGN_OR_RETURN(set->weights_, WeightStore::Create(options.executor.device));
  }
  // Slot 0's plans time each GEMM and convolution; the others replay.
  const std::shared_ptr<AlgorithmChoices> algorithm_choices =
      options.algorithm_choices ? options.algorithm_choices : std::make_shared<AlgorithmChoices>();
  for (int m = 0; m < options.num_streams; ++m) {
    ASSIGN_OR_RETURN(std::unique_ptr<Slot> slot,
                     set->PlanSlot(model, options, m, bound, algorithm_choices));
    set->slots_.push_back(std::move(slot));
  }

  // Key by key, every slot of a key before the next (Note [Checking a
  // captured graph]: later slots check against slot 0's run of the key).
  const int total = options.num_streams * static_cast<int>(bound.size());
  int done = 0;
  ReferenceChecks references(options, options.executor.device);
  for (int n = static_cast<int>(bound.size()) - 1; n >= 0; --n) {
    std::shared_ptr<const CheckedRun> first;
    for (int m = 0; m < options.num_streams; ++m) {
      Graph& graph = set->slots_[m]->graphs[n];
      ASSIGN_OR_RETURN(EagerRun eager, set->Capture(model, options, m, n, bound[n]));
      if (options.check_replays) {
        const Clock::time_point check_start = Clock::now();
        const std::string check_label = absl::StrCat("check of ", Label(m, graph.info.key));
        if (m == 0) {
          absl::StatusOr<CheckedRun> run =
              CheckGraph(*set, m, graph.info.key, bound[n], graph.info.transfers,
                         std::move(eager.inputs), eager.outputs, options.tolerance,
                         &graph.info.check_rel_err);
          if (!run.ok()) return AnnotateStatus(run.status(), check_label);
          first = std::make_shared<const CheckedRun>(*std::move(run));
        } else {
          RETURN_IF_ERROR(AnnotateStatus(
              CheckLikeFirstSlot(*set, m, graph.info.key, bound[n], graph.info.transfers, *first,
                                 options.tolerance, &graph.info.check_rel_err),
              check_label));
        }
        graph.info.check_ms = MillisecondsSince(check_start);
        if (m == 0 && options.reference) {
          // See Note [The reference beside the captures].
          RETURN_IF_ERROR(
              references.Start(graph.info.key, bound[n], first, &graph.info, check_label));
        }
      }
      ++done;
      if (options.on_progress) {
        options.on_progress(
            {m, graph.info.key, done, total, graph.info.capture_ms, graph.info.check_ms});
      }
    }
  }
  RETURN_IF_ERROR(references.Finish());
  set->total_setup_ms_ = MillisecondsSince(start);
  return set;
}

size_t GraphSet::KeyIndex(const GraphKey& key) const {
  const auto it = std::lower_bound(keys_.begin(), keys_.end(), key);
  return it != keys_.end() && *it == key ? static_cast<size_t>(it - keys_.begin()) : keys_.size();
}

const GraphSet::Graph& GraphSet::FindGraph(int slot, const GraphKey& key) const {
  return slots_[slot]->graphs[KeyIndex(key)];
}

absl::Status GraphSet::CheckChunk(const LaunchChunk& chunk) const {
  if (chunk.slot < 0 || chunk.slot >= num_slots()) {
    return absl::InvalidArgumentError(
        absl::StrCat("slot ", chunk.slot, " does not exist; the set has ", num_slots()));
  }
  if (KeyIndex(chunk.key) == keys_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", GraphKeyString(chunk.key), " was not captured"));
  }
  if (chunk.staging < 0 || chunk.staging >= kStagingBuffers) {
    return absl::InvalidArgumentError(absl::StrCat("staging buffer ", chunk.staging,
                                                   " does not exist; a slot has ",
                                                   kStagingBuffers));
  }
  if (chunk.rows < 1 || chunk.rows > chunk.key.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("a chunk of ", chunk.rows,
                                                   " rows does not fit batch size ",
                                                   GraphKeyString(chunk.key)));
  }
  for (const DirectRows& rows : chunk.direct) {
    if (rows.first_row < 0 || rows.rows < 1 || rows.first_row + rows.rows > chunk.rows ||
        rows.inputs.size() != num_inputs() || rows.outputs.size() != num_outputs()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "direct rows ", rows.first_row, "+", rows.rows, " (", rows.inputs.size(), " inputs, ",
          rows.outputs.size(), " outputs) do not fit a chunk of ", chunk.rows, " rows of a set of ",
          num_inputs(), " inputs and ", num_outputs(), " outputs"));
    }
    for (size_t i = 0; i < num_inputs(); ++i) {
      const InputRows& input = rows.inputs[i];
      if (input.data == nullptr) continue;
      const size_t bytes = input_bytes_per_row(i, chunk.key);
      if (input.pitch == 0 || input.pitch > bytes ||
          (input.pitch < bytes && chunk.pad_bytes.size() != num_inputs())) {
        return absl::InvalidArgumentError(
            absl::StrCat("direct rows of input '", input_names_[i], "' are ", input.pitch,
                         " bytes; its rows at ", GraphKeyString(chunk.key), " are ", bytes,
                         " (a shorter row needs the chunk's pad bytes, one per input)"));
      }
    }
    for (size_t o = 0; o < num_outputs(); ++o) {
      const OutputRows& output = rows.outputs[o];
      const size_t bytes = output_bytes_per_row(o, chunk.key);
      if (output.data != nullptr && (output.pitch == 0 || output.pitch > bytes)) {
        return absl::InvalidArgumentError(
            absl::StrCat("direct rows of output '", output_names_[o], "' are ", output.pitch,
                         " bytes; its rows at ", GraphKeyString(chunk.key), " are ", bytes));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status GraphSet::Launch(const LaunchChunk& chunk) const {
  RETURN_IF_ERROR(CheckChunk(chunk));
  return Enqueue(chunk);
}

namespace {

// The rows of `chunk` that `direct` copies for graph tensor `tensor`, of
// `chunk.rows`: those of staging are copied when some are not.
template <typename Tensors>
int64_t DirectRowCount(const LaunchChunk& chunk, Tensors tensors, size_t tensor) {
  int64_t rows = 0;
  for (const DirectRows& direct : chunk.direct) {
    if (tensors(direct)[tensor].data != nullptr) rows += direct.rows;
  }
  return rows;
}

// Places `rows` rows of `from` at `to`, each `bytes` long there, a shorter
// row padded with `pad` (Note [Pitched row copies]). `from` may be pinned
// host or device memory (unified addressing tells them apart).
cudaError_t PlaceRows(std::byte* to, size_t bytes, const InputRows& from, int64_t rows, uint8_t pad,
                      cudaStream_t stream) {
  const auto height = static_cast<size_t>(rows);
  if (from.pitch == bytes) {
    return cudaMemcpyAsync(to, from.data, height * bytes, cudaMemcpyDefault, stream);
  }
  if (const cudaError_t filled =
          cudaMemset2DAsync(to + from.pitch, bytes, pad, bytes - from.pitch, height, stream);
      filled != cudaSuccess) {
    return filled;
  }
  return cudaMemcpy2DAsync(to, bytes, from.data, from.pitch, from.pitch, height, cudaMemcpyDefault,
                           stream);
}

// The reverse: the leading `to.pitch` bytes of each of `rows` rows at
// `from`, `bytes` apart, into `to`.
cudaError_t TakeRows(const std::byte* from, size_t bytes, const OutputRows& to, int64_t rows,
                     cudaStream_t stream) {
  const auto height = static_cast<size_t>(rows);
  if (to.pitch == bytes) {
    return cudaMemcpyAsync(to.data, from, height * bytes, cudaMemcpyDefault, stream);
  }
  return cudaMemcpy2DAsync(to.data, to.pitch, from, bytes, to.pitch, height, cudaMemcpyDefault,
                           stream);
}

}  // namespace

absl::Status GraphSet::Enqueue(const LaunchChunk& chunk) const {
  const CudaDeviceGuard set_device(device_);  // Note [Graphs own their device]
  RETURN_IF_ERROR(set_device.status());
  const Slot& slot = *slots_[chunk.slot];
  const absl::MutexLock enqueueing(&slot.enqueue_mu);
  const Graph& graph = FindGraph(chunk.slot, chunk.key);
  cudaStream_t stream = slot.stream.get();
  const auto rows = static_cast<size_t>(chunk.rows);
  std::optional<NvtxRange> range(std::in_place, graph.ranges.h2d);
  // Both modes move the same bytes: the real rows in, padding filled on the
  // device (Note [Padding rows from a valid row]), the real rows out. Only
  // the launch between differs.
  const std::vector<InputMapping>& inputs = graph.info.transfers.inputs;
  const auto direct_inputs = [](const DirectRows& direct) { return direct.inputs; };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputMapping& mapping = inputs[i];
    const size_t input = graph.input_of_mapping[i];
    auto* const device_rows = static_cast<std::byte*>(mapping.device_dst);
    if (DirectRowCount(chunk, direct_inputs, input) < chunk.rows) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device_rows, graph.input_hosts[chunk.staging][i],
                                           rows * mapping.bytes_per_row, cudaMemcpyHostToDevice,
                                           stream));
    }
    for (const DirectRows& direct : chunk.direct) {
      const InputRows& from = direct.inputs[input];
      if (from.data == nullptr) continue;
      CUDA_RETURN_IF_ERROR(
          PlaceRows(device_rows + static_cast<size_t>(direct.first_row) * mapping.bytes_per_row,
                    mapping.bytes_per_row, from, direct.rows,
                    chunk.pad_bytes.empty() ? uint8_t{0} : chunk.pad_bytes[input], stream));
    }
    // After the direct rows: row 0 may be one of them.
    CUDA_RETURN_IF_ERROR(FillPaddingRows(mapping.device_dst, mapping.bytes_per_row, chunk.rows,
                                         chunk.key.batch_size, stream));
  }
  range.reset();
  range.emplace(graph.ranges.launch);
  if (chunk.mode == LaunchMode::kEager) {
    RETURN_IF_ERROR(graph.executor->EnqueueCompute(stream));
  } else {
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(graph.exec.get(), stream));
  }
  range.reset();
  range.emplace(graph.ranges.d2h);
  const std::vector<OutputMapping>& outputs = graph.info.transfers.outputs;
  const auto direct_outputs = [](const DirectRows& direct) { return direct.outputs; };
  for (size_t o = 0; o < outputs.size(); ++o) {
    const OutputMapping& mapping = outputs[o];
    const size_t output = graph.output_of_mapping[o];
    const auto* const device_rows = static_cast<const std::byte*>(mapping.device_src);
    if (DirectRowCount(chunk, direct_outputs, output) < chunk.rows) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(graph.output_hosts[chunk.staging][o], device_rows,
                                           rows * mapping.bytes_per_row, cudaMemcpyDeviceToHost,
                                           stream));
    }
    for (const DirectRows& direct : chunk.direct) {
      const OutputRows& to = direct.outputs[output];
      if (to.data == nullptr) continue;
      CUDA_RETURN_IF_ERROR(
          TakeRows(device_rows + static_cast<size_t>(direct.first_row) * mapping.bytes_per_row,
                   mapping.bytes_per_row, to, direct.rows, stream));
    }
  }
  CUDA_RETURN_IF_ERROR(cudaEventRecord(slot.done[chunk.staging].get(), stream));
  return absl::OkStatus();
}

absl::Status GraphSet::Launch(const LaunchChunk& chunk,
                              absl::Span<const void* const> inputs) const {
  if (inputs.size() != input_names_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("got ", inputs.size(), " inputs; the model has ",
                                                   input_names_.size()));
  }
  if (!chunk.direct.empty()) {
    return absl::InvalidArgumentError(
        "a chunk launched from inputs copied to staging names no "
        "direct rows");
  }
  RETURN_IF_ERROR(CheckChunk(chunk));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::memcpy(input_staging(chunk.slot, i, chunk.staging), inputs[i],
                static_cast<size_t>(chunk.rows) * input_bytes_per_row(i, chunk.key));
  }
  return Enqueue(chunk);
}

std::byte* GraphSet::input_staging(int slot, size_t input, int staging) const {
  return static_cast<std::byte*>(slots_[slot]->io->host(input_names_[input], staging));
}

absl::Status GraphSet::WaitForChunk(int slot, int staging) const {
  const CudaDeviceGuard on_device(device_);
  RETURN_IF_ERROR(on_device.status());
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(slots_[slot]->done[staging].get()));
  return absl::OkStatus();
}

absl::Status GraphSet::SynchronizeSlot(int slot) const {
  const CudaDeviceGuard on_device(device_);
  RETURN_IF_ERROR(on_device.status());
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(slots_[slot]->stream.get()));
  return absl::OkStatus();
}

cudaError_t GraphSet::StickyError(int slot) const {
  // A lost context fails every call on it with its sticky error, a query of
  // an idle or busy stream included; an intact one answers cudaSuccess or
  // cudaErrorNotReady. A stream belongs to its device's context, so the
  // query needs no device guard.
  const cudaError_t error = cudaStreamQuery(slots_[slot]->stream.get());
  if (IsStickyCudaError(error)) return error;
  if (error != cudaSuccess && error != cudaErrorNotReady) cudaGetLastError();  // not sticky
  return cudaSuccess;
}

absl::Status GraphSet::MakeDeviceCurrentOnThisThread() const {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

const GraphSet::ProfilerRanges& GraphSet::profiler_ranges(int slot, const GraphKey& key) const {
  // Asked before Launch checks the chunk: a slot or key the set lacks gets
  // generic names, and Launch's error.
  if (slot < 0 || slot >= num_slots() || KeyIndex(key) == keys_.size()) {
    static const ProfilerRanges* const unknown = new ProfilerRanges{
        "chunk stage", "chunk h2d", "chunk launch", "chunk d2h", "chunk complete"};
    return *unknown;
  }
  return FindGraph(slot, key).ranges;
}

absl::Status GraphSet::UseSleepingDoneEvents() {
  CudaDeviceGuard device_guard(device_);
  for (const std::unique_ptr<Slot>& slot : slots_) {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(slot->stream.get()));
    for (CudaEvent& done : slot->done) {
      ASSIGN_OR_RETURN(done, CudaEvent::CreateForSleepingWait());
    }
  }
  return absl::OkStatus();
}

cudaStream_t GraphSet::stream(int slot) const { return slots_[slot]->stream.get(); }
cudaEvent_t GraphSet::done_event(int slot, int staging) const {
  return slots_[slot]->done[staging].get();
}
std::byte* GraphSet::output_rows(int slot, size_t output, int staging) const {
  return static_cast<std::byte*>(slots_[slot]->io->host(output_names_[output], staging));
}

size_t GraphSet::num_inputs() const { return input_names_.size(); }
size_t GraphSet::num_outputs() const { return output_names_.size(); }
const std::string& GraphSet::input_name(size_t input) const { return input_names_[input]; }
const std::string& GraphSet::output_name(size_t output) const { return output_names_[output]; }
const std::vector<std::string>& GraphSet::shape_dims() const { return shape_dims_; }
size_t GraphSet::input_bytes_per_row(size_t input, const GraphKey& key) const {
  return input_bytes_per_row_[KeyIndex(key)][input];
}
size_t GraphSet::output_bytes_per_row(size_t output, const GraphKey& key) const {
  return output_bytes_per_row_[KeyIndex(key)][output];
}
const Dims& GraphSet::output_dims(size_t output, const GraphKey& key) const {
  return output_dims_[KeyIndex(key)][output];
}

int GraphSet::num_slots() const { return static_cast<int>(slots_.size()); }
const std::vector<GraphKey>& GraphSet::keys() const { return keys_; }

std::optional<GraphKey> GraphSet::SmallestKeyHolding(const GraphKey& shape) const {
  std::optional<GraphKey> best;
  int64_t best_elements = 0;
  for (const GraphKey& key : keys_) {  // ascending: a tie keeps the smaller batch
    if (!key.Holds(shape)) continue;
    int64_t elements = key.batch_size;
    for (int64_t extent : key.bucket) elements *= extent;
    if (!best || elements < best_elements) {
      best = key;
      best_elements = elements;
    }
  }
  return best;
}

const CapturedGraphInfo& GraphSet::graph_info(int slot, const GraphKey& key) const {
  return FindGraph(slot, key).info;
}

cudaGraphExec_t GraphSet::graph_exec(int slot, const GraphKey& key) const {
  return FindGraph(slot, key).exec.get();
}

cudaGraph_t GraphSet::graph(int slot, const GraphKey& key) const {
  return FindGraph(slot, key).graph.get();
}

absl::Mutex& GraphSet::enqueue_mutex(int slot) const { return slots_[slot]->enqueue_mu; }

SlotMemory GraphSet::slot_memory(int slot) const {
  const Slot& s = *slots_[slot];
  SlotMemory memory;
  memory.arena = s.arena->bytes();
  for (const Graph& graph : s.graphs) {
    memory.arena_unshared += graph.executor->arena_bytes();
    memory.arena_single_lane =
        std::max(memory.arena_single_lane, graph.executor->single_lane_arena_bytes());
  }
  memory.io_device = s.io->device_bytes();
  memory.staging_pinned = s.io->pinned_bytes();
  for (const Graph& graph : s.graphs) {
    memory.workspace = std::max(memory.workspace, graph.executor->workspace_bytes());
  }
  memory.lanes = s.lanes->lanes();
  memory.graph_execs = s.graph_exec_bytes;
  return memory;
}

size_t GraphSet::weight_bytes() const { return weights_->bytes(); }
SetupTimes GraphSet::setup_times() const {
  SetupTimes times;
  times.total_ms = total_setup_ms_;
  for (const std::unique_ptr<Slot>& slot : slots_) {
    for (const Graph& graph : slot->graphs) {
      times.plan_kernels_ms += graph.info.plan_kernels_ms;
      times.plan_memory_ms += graph.info.plan_memory_ms;
      times.plan_autotune_ms += graph.info.plan_autotune_ms;
      times.capture_ms += graph.info.capture_ms;
      times.check_ms += graph.info.check_ms;
    }
  }
  return times;
}

GraphSet::~GraphSet() {
  // Torn down on the set's own device (Note [Graphs own their device]),
  // whichever thread drops the last reference: the slots are freed here,
  // under the guard, not after the destructor's body.
  const CudaDeviceGuard on_device(device_);
  if (!on_device.status().ok()) {
    spdlog::warn("tearing down a graph set of GPU {}: {}", device_,
                 on_device.status().ToString());
  }
  // Graph execs and plans point into the slots' buffers: wait for any launch
  // still running before anything is freed. After a sticky error this
  // returns the error at once; the frees then fail and are logged.
  for (const auto& slot : slots_) cudaStreamSynchronize(slot->stream.get());
  slots_.clear();
  weights_.reset();
}

}  // namespace graphserve
