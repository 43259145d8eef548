#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <array>
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
  mutable std::vector<void*> addresses;  // per value, refreshed at every Enqueue

  ValueId Root(ValueId id) const { return alias_root[id]; }
};

namespace {

// Nodes that read each value.
std::vector<std::vector<int>> ConsumersOf(const BoundGraph& graph) {
  std::vector<std::vector<int>> consumers(graph.values.size());
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (ValueId input : graph.nodes[i].inputs) consumers[input].push_back(i);
  }
  return consumers;
}

bool IsGraphOutput(const BoundGraph& graph, ValueId id) {
  for (ValueId output : graph.outputs) {
    if (output == id) return true;
  }
  return false;
}

// The single consumer of `value` when it has exactly one and is not a graph
// output (so the value need not be materialised if the consumer is fused).
std::optional<int> SoleConsumer(const BoundGraph& graph,
                                const std::vector<std::vector<int>>& consumers, ValueId value) {
  if (consumers[value].size() != 1 || IsGraphOutput(graph, value)) return std::nullopt;
  return consumers[value][0];
}

// A float32 constant holding one element equal to `target` within 1e-6
// relative. Its dims are checked by the caller through the result's dims.
bool IsScalarConstant(const BoundValue& value, float target) {
  if (!value.is_constant() || value.dtype != DType::kFloat32 ||
      value.constant->num_elements() != 1) {
    return false;
  }
  const float v = value.constant->data<float>()[0];
  return std::fabs(v - target) <= 1e-6f * std::fabs(target);
}

// The node producing each value; -1 for inputs and constants.
std::vector<int> ProducersOf(const BoundGraph& graph) {
  std::vector<int> producers(graph.values.size(), -1);
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (ValueId output : graph.nodes[i].outputs) producers[output] = i;
  }
  return producers;
}

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

  absl::Status Build() {
    consumers_ = ConsumersOf(graph_);
    plan_.alias_root.resize(graph_.values.size());
    for (size_t i = 0; i < graph_.values.size(); ++i) plan_.alias_root[i] = static_cast<ValueId>(i);
    absorbed_.assign(graph_.nodes.size(), false);
    // Elementwise chains first: a chain's nodes need not be contiguous in the
    // node order (PyTorch may emit the 0.5 Mul before the Div), so all are
    // found before any node becomes a step. Each match's step takes the place
    // of its last node.
    std::vector<std::optional<ErfGeluMatch>> gelu_at(graph_.nodes.size());
    if (plan_.options.fuse_epilogues) {
      producers_ = ProducersOf(graph_);
      for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
        if (absorbed_[i]) continue;
        if (std::optional<ErfGeluMatch> match = MatchErfGelu(i)) {
          for (int n : match->nodes) absorbed_[n] = true;
          absorbed_[match->nodes.back()] = false;  // becomes the fused step
          gelu_at[match->nodes.back()] = std::move(match);
        }
      }
    }
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (absorbed_[i]) continue;
      const BoundNode& node = graph_.nodes[i];
      absl::Status status;
      if (gelu_at[i]) {
        AddErfGeluStep(*gelu_at[i]);
      } else if (IsAliasOp(node.op_type)) {
        plan_.alias_root[node.outputs[0]] = plan_.Root(node.inputs[0]);
      } else if (node.op_type == "Gemm" || node.op_type == "MatMul") {
        status = AddGemmStep(i);
      } else if (node.op_type == "Conv") {
        status = AddConvStep(i);
      } else {
        status = AddKernelStep(node);
      }
      if (!status.ok()) {
        return AnnotateStatus(status, absl::StrCat(NodeLabel(node), ", batch ", graph_.batch_size));
      }
    }
    RETURN_IF_ERROR(AssignStorage());
    return PlanArena();
  }

 private:
  // The exact GELU chain PyTorch exports for nn.GELU (approximate='none'):
  //   d = Div(x, sqrt(2)) | Mul(x, 1/sqrt(2));  e = Erf(d);  a = Add(e, 1)
  //   then  y = Mul(Mul(x, a), 0.5)  or  y = Mul(Mul(x, 0.5), a)
  // with Add and Mul operands in either order. Every intermediate has one
  // reader and is no graph output, every value is float32 with x's dims (x is
  // not broadcast), and both x operands are the same value.
  struct ErfGeluMatch {
    ValueId x = -1;
    ValueId y = -1;
    std::vector<int> nodes;  // node order ascending; the last one writes y
  };

  // One float32 output with x's dims.
  bool IsLikeX(const BoundNode& node, const BoundValue& x) const {
    if (node.outputs.size() != 1) return false;
    const BoundValue& out = graph_.value(node.outputs[0]);
    return out.dtype == DType::kFloat32 && out.dims == x.dims;
  }

  // For a two-input node: the input other than `known` when the other one is
  // `known` (either order); nullopt otherwise.
  static std::optional<ValueId> OtherInput(const BoundNode& node, ValueId known) {
    if (node.inputs.size() != 2) return std::nullopt;
    if (node.inputs[0] == known) return node.inputs[1];
    if (node.inputs[1] == known) return node.inputs[0];
    return std::nullopt;
  }

  // The sole reader of node's output when it is of type `op_type` and not yet
  // absorbed.
  std::optional<int> NextNode(const BoundNode& node, const char* op_type) const {
    std::optional<int> next = SoleConsumer(graph_, consumers_, node.outputs[0]);
    if (!next || absorbed_[*next] || graph_.nodes[*next].op_type != op_type) return std::nullopt;
    return next;
  }

  // Starts at the Div (or Mul by 1/sqrt(2)) at `node_index`.
  std::optional<ErfGeluMatch> MatchErfGelu(int node_index) const {
    constexpr float kSqrt2 = 1.41421356f;
    constexpr float kInvSqrt2 = 0.70710678f;
    const BoundNode& scale = graph_.nodes[node_index];
    if (scale.inputs.size() != 2 || scale.outputs.size() != 1) return std::nullopt;
    ValueId x = -1;
    if (scale.op_type == "Div") {
      if (!IsScalarConstant(graph_.value(scale.inputs[1]), kSqrt2)) return std::nullopt;
      x = scale.inputs[0];
    } else if (scale.op_type == "Mul") {
      if (IsScalarConstant(graph_.value(scale.inputs[1]), kInvSqrt2)) {
        x = scale.inputs[0];
      } else if (IsScalarConstant(graph_.value(scale.inputs[0]), kInvSqrt2)) {
        x = scale.inputs[1];
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    const BoundValue& xv = graph_.value(x);
    if (xv.is_constant() || xv.dtype != DType::kFloat32 || !IsLikeX(scale, xv)) {
      return std::nullopt;
    }
    ErfGeluMatch match;
    match.x = x;
    match.nodes.push_back(node_index);

    const std::optional<int> erf = NextNode(scale, "Erf");
    if (!erf || graph_.nodes[*erf].inputs.size() != 1 || !IsLikeX(graph_.nodes[*erf], xv)) {
      return std::nullopt;
    }
    match.nodes.push_back(*erf);
    const BoundNode& erf_node = graph_.nodes[*erf];

    const std::optional<int> add = NextNode(erf_node, "Add");
    if (!add || !IsLikeX(graph_.nodes[*add], xv)) return std::nullopt;
    const BoundNode& add_node = graph_.nodes[*add];
    const std::optional<ValueId> one = OtherInput(add_node, erf_node.outputs[0]);
    if (!one || !IsScalarConstant(graph_.value(*one), 1.0f)) return std::nullopt;
    match.nodes.push_back(*add);

    // a = 1 + erf(...) times x, times 0.5, in either grouping.
    const std::optional<int> mul = NextNode(add_node, "Mul");
    if (!mul || !IsLikeX(graph_.nodes[*mul], xv)) return std::nullopt;
    const BoundNode& mul_node = graph_.nodes[*mul];
    const std::optional<ValueId> other = OtherInput(mul_node, add_node.outputs[0]);
    if (!other) return std::nullopt;
    if (*other == x) {
      // m = x * a, then y = m * 0.5.
      match.nodes.push_back(*mul);
      const std::optional<int> half = NextNode(mul_node, "Mul");
      if (!half || !IsLikeX(graph_.nodes[*half], xv)) return std::nullopt;
      const std::optional<ValueId> c = OtherInput(graph_.nodes[*half], mul_node.outputs[0]);
      if (!c || !IsScalarConstant(graph_.value(*c), 0.5f)) return std::nullopt;
      match.nodes.push_back(*half);
    } else {
      // h = x * 0.5 (read by this Mul only), then y = h * a.
      const int half = producers_[*other];
      if (half < 0 || absorbed_[half] || graph_.nodes[half].op_type != "Mul" ||
          SoleConsumer(graph_, consumers_, *other) != std::optional<int>(*mul) ||
          !IsLikeX(graph_.nodes[half], xv)) {
        return std::nullopt;
      }
      const std::optional<ValueId> c = OtherInput(graph_.nodes[half], x);
      if (!c || !IsScalarConstant(graph_.value(*c), 0.5f)) return std::nullopt;
      match.nodes.push_back(half);
      match.nodes.push_back(*mul);
    }
    std::sort(match.nodes.begin(), match.nodes.end());
    match.y = graph_.nodes[match.nodes.back()].outputs[0];
    return match;
  }

  void AddErfGeluStep(const ErfGeluMatch& match) {
    ExecutionStep step;
    step.label = absl::StrCat("fused erf GELU of '", graph_.value(match.x).name, "' (ops '",
                              graph_.nodes[match.nodes.front()].name, "' .. '",
                              graph_.nodes[match.nodes.back()].name, "')");
    step.kernel =
        std::make_unique<ErfGeluKernel>(step.label, NumElements(graph_.value(match.x).dims));
    step.inputs = {match.x};
    step.outputs = {match.y};
    plan_.steps.push_back(std::move(step));
    ++plan_.fused_gelus;
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

  absl::Status AddKernelStep(const BoundNode& node) {
    const CudaKernelFactory factory = FindCudaKernelFactory(node.op_type);
    if (factory == nullptr) return absl::UnimplementedError("no CUDA kernel for this op");
    ExecutionStep step;
    step.label = NodeLabel(node);
    ASSIGN_OR_RETURN(step.kernel, factory(KernelContext(node)));
    step.inputs = node.inputs;
    step.outputs = node.outputs;
    plan_.steps.push_back(std::move(step));
    return absl::OkStatus();
  }

  // The activation a node applies, for a Conv epilogue; kNone if it is none
  // the epilogue can take.
  static ActivationParams EpilogueActivation(const BoundNode& node) {
    const ActivationParams activation = ActivationOf(node);
    return activation.kind == Activation::kHardSigmoid ? ActivationParams{} : activation;
  }

  // x * Sigmoid(x) as PyTorch exports SiLU: `value` read by exactly one
  // Sigmoid and one Mul, which multiplies it by that Sigmoid's output (read
  // by nothing else). Returns the Mul, after absorbing the Sigmoid.
  std::optional<int> MatchSilu(ValueId value) {
    if (consumers_[value].size() != 2 || IsGraphOutput(graph_, value)) return std::nullopt;
    int sigmoid = consumers_[value][0];
    int mul = consumers_[value][1];
    if (graph_.nodes[sigmoid].op_type != "Sigmoid") std::swap(sigmoid, mul);
    if (graph_.nodes[sigmoid].op_type != "Sigmoid" || graph_.nodes[mul].op_type != "Mul" ||
        absorbed_[sigmoid] || absorbed_[mul]) {
      return std::nullopt;
    }
    const ValueId s = graph_.nodes[sigmoid].outputs[0];
    if (SoleConsumer(graph_, consumers_, s) != std::optional<int>(mul) ||
        OtherInput(graph_.nodes[mul], value) != std::optional<ValueId>(s) ||
        graph_.value(graph_.nodes[mul].outputs[0]).dims != graph_.value(value).dims) {
      return std::nullopt;
    }
    absorbed_[sigmoid] = true;
    return mul;
  }

  // Conv on cuDNN, absorbing into one epilogue launch a following residual
  // Add (of a same-dims value) and then an activation (Relu, Clip, Sigmoid,
  // SiLU, HardSwish), when nothing else reads the intermediate results. The
  // epilogue propagates NaN as the unfused ops do.
  absl::Status AddConvStep(int node_index) {
    const BoundNode& node = graph_.nodes[node_index];
    ExecutionStep step;
    step.label = NodeLabel(node);
    step.inputs = node.inputs;
    ConvFusion fusion;
    fusion.has_bias = node.inputs.size() > 2;
    ValueId output = node.outputs[0];
    if (plan_.options.fuse_epilogues) {
      if (std::optional<int> add = SoleConsumer(graph_, consumers_, output);
          add && !absorbed_[*add] && graph_.nodes[*add].op_type == "Add") {
        const BoundNode& add_node = graph_.nodes[*add];
        const std::optional<ValueId> other = OtherInput(add_node, output);
        if (other && *other != output && graph_.value(*other).dtype == DType::kFloat32 &&
            graph_.value(*other).dims == graph_.value(output).dims &&
            graph_.value(add_node.outputs[0]).dims == graph_.value(output).dims) {
          fusion.has_residual = true;
          step.inputs.push_back(*other);
          absorbed_[*add] = true;
          output = add_node.outputs[0];
          ++plan_.fused_into_convs;
        }
      }
      if (std::optional<int> mul = MatchSilu(output)) {
        fusion.activation.kind = Activation::kSilu;
        absorbed_[*mul] = true;
        output = graph_.nodes[*mul].outputs[0];
        plan_.fused_into_convs += 2;
      } else if (std::optional<int> next = SoleConsumer(graph_, consumers_, output);
                 next && !absorbed_[*next]) {
        const ActivationParams activation = EpilogueActivation(graph_.nodes[*next]);
        if (activation.kind != Activation::kNone &&
            graph_.value(graph_.nodes[*next].outputs[0]).dims == graph_.value(output).dims) {
          fusion.activation = activation;
          absorbed_[*next] = true;
          output = graph_.nodes[*next].outputs[0];
          ++plan_.fused_into_convs;
        }
      }
    }
    ASSIGN_OR_RETURN(step.kernel, ConvKernel::Create(KernelContext(node), fusion));
    step.outputs = {output};
    plan_.steps.push_back(std::move(step));
    ++plan_.conv_steps;
    return absl::OkStatus();
  }

  // Gemm / MatMul, absorbing a following bias Add into the epilogue when
  // nothing else reads the intermediate result. Relu stays a kernel of its
  // own, which propagates NaN as ONNX and PyTorch do: cuBLASLt does not
  // promise that of its RELU epilogues, and with them a NaN input row of
  // dlrm_dense came out as numbers (issue 9). PyTorch's Linear + ReLU is two
  // launches as well.
  absl::Status AddGemmStep(int node_index) {
    const BoundNode& node = graph_.nodes[node_index];
    const BoundValue* fused_bias = nullptr;
    ValueId output = node.outputs[0];
    if (plan_.options.fuse_epilogues && !GemmKernel::UsesC(node)) {
      if (std::optional<int> add = SoleConsumer(graph_, consumers_, output);
          add && graph_.nodes[*add].op_type == "Add") {
        const BoundNode& add_node = graph_.nodes[*add];
        const ValueId other =
            add_node.inputs[0] == output ? add_node.inputs[1] : add_node.inputs[0];
        if (IsColumnBias(graph_.value(other), GemmKernel::Columns(graph_, node)) &&
            graph_.value(add_node.outputs[0]).dims == graph_.value(output).dims) {
          fused_bias = &graph_.value(other);
          absorbed_[*add] = true;
          output = add_node.outputs[0];
        }
      }
    }
    ExecutionStep step;
    step.label = NodeLabel(node);
    ASSIGN_OR_RETURN(std::unique_ptr<GemmKernel> gemm,
                     GemmKernel::Create(KernelContext(node), fused_bias));
    if (gemm->has_bias_epilogue()) ++plan_.fused_epilogues;
    step.inputs = {node.inputs[0], node.inputs[1]};
    if (gemm->reads_c()) step.inputs.push_back(node.inputs[2]);
    step.kernel = std::move(gemm);
    step.outputs = {output};
    plan_.steps.push_back(std::move(step));
    return absl::OkStatus();
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
  std::vector<std::vector<int>> consumers_;
  std::vector<int> producers_;  // filled only when fusing
  std::vector<bool> absorbed_;
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
  if (options.autotune_gemms) RETURN_IF_ERROR(AutotuneKernels(*plan));
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
