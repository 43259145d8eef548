#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/cuda_kernel_registry.h"
#include "runtime/cuda/fused_gelu.h"
#include "runtime/cuda/gemm_kernel.h"
#include "runtime/cuda/nn_ops.h"
#include "runtime/cuda/op_kernels.h"
#include "runtime/fusion.h"
#include "runtime/nn_node_params.h"
#include "tensor_holder/memory_planner.h"

namespace graphserve {

namespace {

// Where a value's bytes live during a run.
enum class StorageKind {
  kNone,      // never materialised (fused into a GEMM epilogue)
  kConstant,  // the weight store
  kInput,     // the slot's device input buffer for this graph input
  kOutput,    // the slot's device output buffer for this graph output
  kArena,     // the slot's activation arena, at a planned offset
};

struct ValueStorage {
  StorageKind kind = StorageKind::kNone;
  const void* constant = nullptr;  // kConstant
  std::string io_name;             // kInput, kOutput
  size_t offset = 0;               // kArena
};

double MillisecondsBetween(std::chrono::steady_clock::time_point start,
                           std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

std::string NodeLabel(const BoundNode& node) {
  return absl::StrCat("op '", node.name, "' (", node.op_type, ")");
}

}  // namespace

// One step of the run: a kernel (ours, or a library call with its epilogue)
// over the device addresses of its input and output values.
struct ExecutionStep {
  std::string label;
  std::unique_ptr<CudaOpKernel> kernel;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // Device addresses of inputs/outputs, refreshed at every Enqueue.
  mutable std::vector<const void*> input_addresses;
  mutable std::vector<void*> output_addresses;
};

struct CudaExecutor::Plan {
  BoundGraph graph;
  CudaExecutorOptions options;
  ExecutionResources resources;
  std::optional<CudaStream> run_stream;  // for the synchronous Run()
  std::mutex run_mutex;                  // Run() stages through shared buffers

  std::vector<ValueId> alias_root;    // per value: the value owning its bytes
  std::vector<ValueStorage> storage;  // per value (roots only)
  std::vector<ExecutionStep> steps;
  MemoryPlan memory;
  int fused_epilogues = 0;
  int fused_gelus = 0;
  int conv_steps = 0;
  int fused_into_convs = 0;
  CudaExecutor::PlanTimes times;
  mutable std::vector<void*> addresses;  // per value, refreshed at every Enqueue

  ValueId Root(ValueId id) const { return alias_root[id]; }
};

namespace {

// The erf GELU as one launch; replaces a chain matched by MatchErfGelu.
class ErfGeluKernel final : public CudaOpKernel {
 public:
  ErfGeluKernel(std::string label, int64_t count) : label_(std::move(label)), count_(count) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    const cudaError_t error = LaunchErfGelu(static_cast<const float*>(inputs[0]),
                                            static_cast<float*>(outputs[0]), count_, stream);
    return CudaErrorToStatus(
        error, absl::StrCat("LaunchErfGelu for ", label_, " (", count_, " elements)"));
  }

 private:
  std::string label_;
  int64_t count_;
};

class PlanBuilder {
 public:
  explicit PlanBuilder(CudaExecutor::Plan& plan) : plan_(plan), graph_(plan.graph) {}

  // One kernel per step of the fusion pass (runtime/fusion.h).
  absl::Status Build() {
    const auto start = std::chrono::steady_clock::now();
    FusionPlan fusion = PlanFusion(graph_, {.fuse = plan_.options.fuse_epilogues});
    plan_.alias_root = std::move(fusion.alias_root);
    plan_.fused_epilogues = fusion.gemm_bias_epilogues;
    plan_.fused_gelus = fusion.erf_gelus;
    plan_.conv_steps = fusion.conv_steps;
    plan_.fused_into_convs = fusion.fused_into_convs;
    for (FusedStep& fused : fusion.steps) {
      const BoundNode& anchor = graph_.nodes[fused.anchor];
      absl::StatusOr<std::unique_ptr<CudaOpKernel>> kernel = MakeKernel(fused);
      if (!kernel.ok()) {
        return AnnotateStatus(kernel.status(),
                              absl::StrCat(NodeLabel(anchor), ", batch ", graph_.batch_size));
      }
      ExecutionStep step;
      step.label = StepLabel(fused);
      step.kernel = *std::move(kernel);
      step.inputs = std::move(fused.inputs);
      step.outputs = std::move(fused.outputs);
      plan_.steps.push_back(std::move(step));
    }
    const auto kernels_done = std::chrono::steady_clock::now();
    plan_.times.kernels_ms = MillisecondsBetween(start, kernels_done);
    RETURN_IF_ERROR(AssignStorage());
    RETURN_IF_ERROR(PlanArena());
    plan_.times.memory_ms = MillisecondsBetween(kernels_done, std::chrono::steady_clock::now());
    return absl::OkStatus();
  }

 private:
  std::string StepLabel(const FusedStep& step) const {
    if (step.kind != StepKind::kErfGelu) return NodeLabel(graph_.nodes[step.anchor]);
    return absl::StrCat("fused erf GELU of '", graph_.value(step.inputs[0]).name, "' (ops '",
                        graph_.nodes[step.nodes.front()].name, "' .. '",
                        graph_.nodes[step.nodes.back()].name, "')");
  }

  // The context a kernel factory sees for `node` (Note [Op registry]).
  CudaKernelContext KernelContext(const BoundNode& node) const {
    return CudaKernelContext{graph_,
                             node,
                             plan_.resources.cublas->get(),
                             plan_.resources.cudnn->get(),
                             plan_.resources.weights.get(),
                             plan_.resources.gemm_workspace,
                             plan_.options.allow_tf32,
                             plan_.resources.algorithm_choices};
  }

  absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeKernel(const FusedStep& step) const {
    const BoundNode& node = graph_.nodes[step.anchor];
    switch (step.kind) {
      case StepKind::kErfGelu:
        return std::make_unique<ErfGeluKernel>(StepLabel(step),
                                               NumElements(graph_.value(step.inputs[0]).dims));
      case StepKind::kGemm:
        return GemmKernel::Create(KernelContext(node),
                                  step.gemm_bias >= 0 ? &graph_.value(step.gemm_bias) : nullptr);
      case StepKind::kConv: {
        ConvFusion fusion;
        fusion.has_bias = node.inputs.size() > 2;
        fusion.has_residual = step.conv_residual;
        fusion.activation = step.conv_activation;
        return ConvKernel::Create(KernelContext(node), fusion);
      }
      case StepKind::kKernel:
        break;
    }
    const CudaKernelFactory factory = FindCudaKernelFactory(node.op_type);
    if (factory == nullptr) return absl::UnimplementedError("no CUDA kernel for this op");
    return factory(KernelContext(node));
  }

  absl::Status AssignStorage() {
    std::vector<ValueStorage>& storage = plan_.storage;
    storage.resize(graph_.values.size());
    // Upload only the constants the run reads: binding keeps shape operands
    // and the like as constant values, but no step touches them.
    std::vector<ValueId> read;
    for (const ExecutionStep& step : plan_.steps) {
      read.insert(read.end(), step.inputs.begin(), step.inputs.end());
    }
    read.insert(read.end(), graph_.outputs.begin(), graph_.outputs.end());
    for (ValueId id : read) {
      const BoundValue& value = graph_.value(plan_.Root(id));
      if (value.is_constant() && storage[plan_.Root(id)].kind == StorageKind::kNone) {
        storage[plan_.Root(id)].kind = StorageKind::kConstant;
        ASSIGN_OR_RETURN(storage[plan_.Root(id)].constant,
                         plan_.resources.weights->GetOrUpload(value.constant));
      }
    }
    for (ValueId input : graph_.inputs) {
      storage[input] = {StorageKind::kInput, nullptr, graph_.value(input).name, 0};
      RETURN_IF_ERROR(
          plan_.resources.io->Reserve(graph_.value(input).name, graph_.value(input).bytes()));
    }
    for (const ExecutionStep& step : plan_.steps) {
      for (ValueId output : step.outputs) storage[output].kind = StorageKind::kArena;
    }
    // A graph output computed by a step is written straight into its device
    // output buffer, so it needs no arena space and no lifetime to the end.
    for (ValueId output : graph_.outputs) {
      const std::string& name = graph_.value(output).name;
      RETURN_IF_ERROR(plan_.resources.io->Reserve(name, graph_.value(output).bytes()));
      ValueStorage& root = storage[plan_.Root(output)];
      if (root.kind == StorageKind::kArena) root = {StorageKind::kOutput, nullptr, name, 0};
    }
    return absl::OkStatus();
  }

  // Offsets for every arena value over the step order (one stream, so the
  // schedule is the linear chain).
  absl::Status PlanArena() {
    std::vector<int> buffer_of(graph_.values.size(), -1);
    MemoryPlanInput input;
    input.num_steps = static_cast<int>(plan_.steps.size());
    input.step_predecessors = LinearSchedule(input.num_steps);
    for (int s = 0; s < input.num_steps; ++s) {
      for (ValueId output : plan_.steps[s].outputs) {
        if (plan_.storage[output].kind != StorageKind::kArena) continue;
        buffer_of[output] = static_cast<int>(input.buffers.size());
        input.buffers.push_back({graph_.value(output).bytes(), s, {}});
      }
    }
    for (int s = 0; s < input.num_steps; ++s) {
      for (ValueId in : plan_.steps[s].inputs) {
        const int buffer = buffer_of[plan_.Root(in)];
        if (buffer >= 0) input.buffers[buffer].reader_steps.push_back(s);
      }
    }
    ASSIGN_OR_RETURN(plan_.memory, PlanMemory(input));
    for (size_t i = 0; i < graph_.values.size(); ++i) {
      if (buffer_of[i] >= 0) plan_.storage[i].offset = plan_.memory.offsets[buffer_of[i]];
    }
    return plan_.resources.arena->Reserve(plan_.memory.arena_bytes);
  }

  CudaExecutor::Plan& plan_;
  const BoundGraph& graph_;
};

}  // namespace

CudaExecutor::CudaExecutor(std::unique_ptr<Plan> plan) : plan_(std::move(plan)) {}
CudaExecutor::~CudaExecutor() = default;

namespace {
absl::Status AutotuneKernels(CudaExecutor::Plan& plan);  // defined with the run code below
}  // namespace

absl::StatusOr<std::unique_ptr<CudaExecutor>> CudaExecutor::Create(
    BoundGraph graph, const CudaExecutorOptions& options, ExecutionResources resources) {
  if (CudaDeviceCount() <= options.device) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA device ", options.device, " is not available (", CudaDeviceCount(),
                     " devices found); use the host executor on machines without a GPU"));
  }
  CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  auto plan = std::make_unique<Plan>();
  plan->graph = std::move(graph);
  plan->options = options;
  if (!resources.weights) {
    ASSIGN_OR_RETURN(resources.weights, WeightStore::Create(options.device));
  }
  if (!resources.arena) {
    ASSIGN_OR_RETURN(resources.arena, StreamArena::Create(options.device));
  }
  if (!resources.io) {
    ASSIGN_OR_RETURN(resources.io, IoBuffers::Create(options.device));
  }
  if (!resources.gemm_workspace) {
    ASSIGN_OR_RETURN(resources.gemm_workspace, StreamArena::Create(options.device));
  }
  if (!resources.cublas) {
    ASSIGN_OR_RETURN(CublasLtHandle cublas, CublasLtHandle::Create());
    resources.cublas = std::make_shared<CublasLtHandle>(std::move(cublas));
  }
  if (!resources.cudnn) {
    ASSIGN_OR_RETURN(CudnnHandle cudnn, CudnnHandle::Create());
    resources.cudnn = std::make_shared<CudnnHandle>(std::move(cudnn));
  }
  plan->resources = std::move(resources);
  ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  plan->run_stream.emplace(std::move(stream));
  RETURN_IF_ERROR(PlanBuilder(*plan).Build());
  plan->addresses.resize(plan->graph.values.size());
  for (ExecutionStep& step : plan->steps) {
    step.input_addresses.resize(step.inputs.size());
    step.output_addresses.resize(step.outputs.size());
  }
  if (options.autotune_gemms) {
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(AutotuneKernels(*plan));
    plan->times.autotune_ms = MillisecondsBetween(start, std::chrono::steady_clock::now());
  }
  return std::unique_ptr<CudaExecutor>(new CudaExecutor(std::move(plan)));
}

void* CudaExecutor::input_staging(size_t i) const {
  return plan_->resources.io->host(plan_->graph.value(plan_->graph.inputs[i]).name);
}

const void* CudaExecutor::output_staging(size_t i) const {
  return plan_->resources.io->host(plan_->graph.value(plan_->graph.outputs[i]).name);
}

const BoundGraph& CudaExecutor::graph() const { return plan_->graph; }
size_t CudaExecutor::arena_bytes() const { return plan_->memory.arena_bytes; }
size_t CudaExecutor::arena_lower_bound_bytes() const { return plan_->memory.lower_bound_bytes; }
int CudaExecutor::fused_epilogues() const { return plan_->fused_epilogues; }
int CudaExecutor::fused_gelus() const { return plan_->fused_gelus; }
int CudaExecutor::conv_steps() const { return plan_->conv_steps; }
const CudaExecutor::PlanTimes& CudaExecutor::plan_times() const { return plan_->times; }
int CudaExecutor::fused_into_convs() const { return plan_->fused_into_convs; }

namespace {

// Resolves every value's device address for this run: the arena and I/O
// buffers may have grown (and moved) since the plan was made.
void ResolveAddresses(const CudaExecutor::Plan& plan) {
  char* arena = static_cast<char*>(plan.resources.arena->base());
  for (size_t i = 0; i < plan.storage.size(); ++i) {
    const ValueStorage& s = plan.storage[plan.alias_root[i]];
    void* address = nullptr;
    switch (s.kind) {
      case StorageKind::kNone:
        break;
      case StorageKind::kConstant:
        address = const_cast<void*>(s.constant);
        break;
      case StorageKind::kInput:
      case StorageKind::kOutput:
        address = plan.resources.io->device(s.io_name);
        break;
      case StorageKind::kArena:
        address = arena + s.offset;
        break;
    }
    plan.addresses[i] = address;
  }
}

// Each kernel's algorithm choice (GEMMs, convolutions), timed on the plan's
// own buffers: their contents are whatever the arena holds; only the time
// matters.
absl::Status AutotuneKernels(CudaExecutor::Plan& plan) {
  ResolveAddresses(plan);
  cudaStream_t stream = plan.run_stream->get();
  for (ExecutionStep& step : plan.steps) {
    std::vector<const void*> inputs;
    for (ValueId id : step.inputs) inputs.push_back(plan.addresses[id]);
    std::vector<void*> outputs;
    for (ValueId id : step.outputs) outputs.push_back(plan.addresses[id]);
    RETURN_IF_ERROR(AnnotateStatus(step.kernel->Autotune(inputs, outputs, stream), step.label));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CudaExecutor::EnqueueCompute(cudaStream_t stream) const {
  ResolveAddresses(*plan_);
  for (const ExecutionStep& step : plan_->steps) {
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      step.input_addresses[i] = plan_->addresses[step.inputs[i]];
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      step.output_addresses[i] = plan_->addresses[step.outputs[i]];
    }
    const absl::Status status =
        step.kernel->Enqueue(step.input_addresses, step.output_addresses, stream);
    if (!status.ok()) {
      return AnnotateStatus(status, absl::StrCat(step.label, ", batch ", plan_->graph.batch_size));
    }
  }
  return absl::OkStatus();
}

absl::Status CudaExecutor::Enqueue(cudaStream_t stream) const {
  const BoundGraph& graph = plan_->graph;
  IoBuffers& io = *plan_->resources.io;
  for (ValueId input : graph.inputs) {
    const BoundValue& value = graph.value(input);
    if (value.bytes() == 0) continue;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.device(value.name), io.host(value.name), value.bytes(),
                                         cudaMemcpyHostToDevice, stream));
  }
  RETURN_IF_ERROR(EnqueueCompute(stream));
  for (ValueId output : graph.outputs) {
    const BoundValue& value = graph.value(output);
    if (value.bytes() == 0) continue;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(io.host(value.name), plan_->addresses[output],
                                         value.bytes(), cudaMemcpyDeviceToHost, stream));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<HostTensor>> CudaExecutor::Run(absl::Span<const HostTensor> inputs) {
  const BoundGraph& graph = plan_->graph;
  RETURN_IF_ERROR(ValidateInputs(graph, inputs));
  std::lock_guard<std::mutex> lock(plan_->run_mutex);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].bytes() > 0) std::memcpy(input_staging(i), inputs[i].raw(), inputs[i].bytes());
  }
  cudaStream_t stream = plan_->run_stream->get();
  RETURN_IF_ERROR(Enqueue(stream));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  std::vector<HostTensor> outputs;
  outputs.reserve(graph.outputs.size());
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.outputs[i]);
    HostTensor& out = outputs.emplace_back(value.dtype, value.dims);
    if (out.bytes() > 0) std::memcpy(out.raw(), output_staging(i), out.bytes());
  }
  return outputs;
}

}  // namespace graphserve
