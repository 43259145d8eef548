#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/cuda_kernel_registry.h"
#include "runtime/cuda/fused_attention_kernel.h"
#include "runtime/cuda/fused_gelu.h"
#include "runtime/cuda/gemm_kernel.h"
#include "runtime/cuda/nn_ops.h"
#include "runtime/cuda/op_kernels.h"
#include "runtime/cuda/pointwise_kernel.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/cuda/step_workspace.h"
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
// over the device addresses of its input and output values, on one lane.
struct ExecutionStep {
  std::string label;
  std::unique_ptr<CudaOpKernel> kernel;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  int lane = 0;
  // Events (SlotLanes indices) to wait on before the kernel: recorded after
  // this step's last predecessor on each other lane.
  std::vector<int> wait_events;
  // The event recorded after the kernel when a step on another lane waits
  // for this one; -1 when none does.
  int record_event = -1;
  // The kernel's library workspace, a buffer of the arena (Note [Step
  // workspaces]).
  std::shared_ptr<StepWorkspace> workspace;
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
  std::vector<size_t> alias_offset;   // per value: where in its root's they start
  std::vector<ValueStorage> storage;  // per value (roots only)
  std::vector<ExecutionStep> steps;   // issue order (the schedule's)
  Schedule schedule;
  // Events of one run: the fork (side lanes wait for the input copies), and
  // per side lane k the join event its last step records (index k - 1 is
  // lane k's).
  int fork_event = -1;
  std::vector<int> join_events;
  int events_per_run = 0;
  MemoryPlan memory;
  size_t single_lane_arena_bytes = 0;
  size_t workspace_bytes = 0;  // the largest step workspace, inside the arena
  int fused_epilogues = 0;
  int fused_gelus = 0;
  int pointwise_regions = 0;
  int add_layer_norms = 0;
  int fused_attentions = 0;
  int masked_softmaxes = 0;
  int gemm_transposes = 0;
  int transposed_weights = 0;
  int conv_steps = 0;
  int fused_into_convs = 0;
  int channels_last_values = 0;
  int contiguous_views = 0;
  CudaExecutor::PlanTimes times;
  mutable std::vector<void*> addresses;  // per value, refreshed at every Enqueue

  ValueId Root(ValueId id) const { return alias_root[id]; }
};

namespace {

// The erf GELU as one launch; replaces a chain matched by MatchErfGelu.
class ErfGeluKernel final : public CudaOpKernel {
 public:
  ErfGeluKernel(std::string label, DType dtype, int64_t count)
      : label_(std::move(label)), dtype_(dtype), count_(count) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    const cudaError_t error = LaunchErfGelu(dtype_, inputs[0], outputs[0], count_, stream);
    return CudaErrorToStatus(error, absl::StrCat("LaunchErfGelu for ", label_, " (", count_, " ",
                                                 DTypeName(dtype_), " elements)"));
  }

 private:
  std::string label_;
  DType dtype_;
  int64_t count_;
};

class PlanBuilder {
 public:
  explicit PlanBuilder(CudaExecutor::Plan& plan) : plan_(plan), graph_(plan.graph) {}

  // The fusion pass (runtime/fusion.h), the schedule over its steps, one
  // kernel per step, in issue order, with its own workspace, and the arena.
  absl::Status Build() {
    const auto start = std::chrono::steady_clock::now();
    FusionPlan fusion = PlanFusion(graph_, FusionOptionsOf(plan_.options));
    plan_.schedule = MakeSchedule(graph_, fusion, plan_.options.schedule);
    RETURN_IF_ERROR(AssignEvents());
    plan_.alias_root = std::move(fusion.alias_root);
    plan_.alias_offset = std::move(fusion.alias_offset);
    plan_.contiguous_views = fusion.contiguous_views;
    plan_.fused_epilogues = fusion.gemm_bias_epilogues;
    plan_.fused_gelus = fusion.erf_gelus;
    plan_.pointwise_regions = fusion.pointwise_regions;
    plan_.add_layer_norms = fusion.add_layer_norms;
    plan_.fused_attentions = fusion.attentions;
    plan_.masked_softmaxes = fusion.masked_softmaxes;
    plan_.gemm_transposes = fusion.gemm_transposes;
    plan_.transposed_weights = fusion.transposed_weights;
    plan_.conv_steps = fusion.conv_steps;
    plan_.fused_into_convs = fusion.fused_into_convs;
    plan_.channels_last_values = fusion.channels_last_values;
    for (size_t i = 0; i < plan_.schedule.steps.size(); ++i) {
      FusedStep& fused = fusion.steps[plan_.schedule.steps[i].step];
      ExecutionStep& step = plan_.steps[i];
      step.workspace = std::make_shared<StepWorkspace>();
      absl::StatusOr<std::unique_ptr<CudaOpKernel>> kernel = MakeKernel(fused, step.workspace);
      if (!kernel.ok()) {
        return AnnotateStatus(kernel.status(), absl::StrCat(NodeLabel(graph_.nodes[fused.anchor]),
                                                            ", batch ", graph_.batch_size));
      }
      step.label = StepLabel(fused);
      step.kernel = *std::move(kernel);
      step.inputs = std::move(fused.inputs);
      step.outputs = std::move(fused.outputs);
    }
    const auto kernels_done = std::chrono::steady_clock::now();
    plan_.times.kernels_ms = MillisecondsBetween(start, kernels_done);
    RETURN_IF_ERROR(AssignStorage());
    // Autotuning times the candidates in scratch memory of its own and then
    // changes what the workspaces need: planning them now would size the
    // arena, which never shrinks, for algorithms that are not chosen.
    RETURN_IF_ERROR(PlanArena({.with_workspaces = !plan_.options.autotune_gemms}));
    plan_.times.memory_ms = MillisecondsBetween(kernels_done, std::chrono::steady_clock::now());
    return absl::OkStatus();
  }

 private:
  // Lanes and events of the schedule, reserved in the slot's SlotLanes: the
  // fork, one join per side lane, and one event per step that a step on
  // another lane waits for. plan_.steps gets one entry per scheduled step.
  absl::Status AssignEvents() {
    const Schedule& schedule = plan_.schedule;
    plan_.steps.resize(schedule.steps.size());
    int events = 0;
    if (schedule.lanes > 1) {
      plan_.fork_event = events++;
      for (int lane = 1; lane < schedule.lanes; ++lane) plan_.join_events.push_back(events++);
    }
    for (size_t i = 0; i < schedule.steps.size(); ++i) {
      plan_.steps[i].lane = schedule.steps[i].lane;
      for (int waited : schedule.steps[i].after) {
        int& record = plan_.steps[waited].record_event;
        if (record < 0) record = events++;
        plan_.steps[i].wait_events.push_back(record);
      }
    }
    plan_.events_per_run = events;
    return plan_.resources.lanes->Reserve(schedule.lanes, events);
  }

  std::string StepLabel(const FusedStep& step) const {
    const char* what = step.kind == StepKind::kErfGelu        ? "fused erf GELU"
                       : step.kind == StepKind::kPointwise    ? "pointwise region"
                       : step.kind == StepKind::kAddLayerNorm ? "residual Add and LayerNorm"
                       : step.kind == StepKind::kAttention    ? "fused attention"
                       : step.kind == StepKind::kMaskedSoftmax ? "masked softmax"
                                                               : nullptr;
    if (what == nullptr) return NodeLabel(graph_.nodes[step.anchor]);
    return absl::StrCat(what, " of '", graph_.value(step.inputs[0]).name, "' (",
                        step.nodes.size(), " ops '", graph_.nodes[step.nodes.front()].name,
                        "' .. '", graph_.nodes[step.nodes.back()].name, "')");
  }

  // The context a kernel factory sees for `node` (Note [Op registry]).
  CudaKernelContext KernelContext(const BoundNode& node,
                                  std::shared_ptr<StepWorkspace> workspace) const {
    return CudaKernelContext{graph_,
                             node,
                             plan_.resources.cublas->get(),
                             plan_.resources.cudnn->get(),
                             plan_.resources.weights.get(),
                             std::move(workspace),
                             plan_.options.allow_tf32,
                             plan_.resources.algorithm_choices,
                             plan_.options.autotune_gemms,
                             plan_.options.own_depthwise_convs};
  }

  absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeKernel(
      const FusedStep& step, const std::shared_ptr<StepWorkspace>& workspace) const {
    const BoundNode& node = graph_.nodes[step.anchor];
    switch (step.kind) {
      case StepKind::kErfGelu: {
        const BoundValue& x = graph_.value(step.inputs[0]);
        return std::make_unique<ErfGeluKernel>(StepLabel(step), x.dtype, NumElements(x.dims));
      }
      case StepKind::kGemm:
        return GemmKernel::Create(
            KernelContext(node, workspace),
            {.bias = step.gemm_bias >= 0 ? &graph_.value(step.gemm_bias) : nullptr,
             .scale = step.gemm_scale,
             .weight_transposed = step.gemm_weight_transposed,
             .trans_a = step.gemm_trans_a,
             .trans_b = step.gemm_trans_b,
             .swapped_a = step.gemm_swapped_a,
             .swapped_b = step.gemm_swapped_b,
             .swapped_d = step.gemm_swapped_d});
      case StepKind::kConv: {
        ConvFusion fusion;
        fusion.has_bias = node.inputs.size() > 2;
        fusion.has_residual = step.conv_residual;
        fusion.activation = step.conv_activation;
        fusion.x_layout = step.conv_x_layout;
        fusion.y_layout = step.conv_y_layout;
        fusion.residual_layout = step.conv_residual_layout;
        return ConvKernel::Create(KernelContext(node, workspace), fusion);
      }
      case StepKind::kPointwise:
        return MakePointwiseKernel(StepLabel(step), graph_, step.nodes, step.inputs,
                                   step.outputs[0]);
      case StepKind::kAddLayerNorm:
        return MakeAddLayerNormKernel(graph_, node, /*write_sum=*/step.outputs.size() > 1);
      case StepKind::kAttention:
        return MakeAttentionKernel(KernelContext(node, workspace), step, StepLabel(step));
      case StepKind::kMaskedSoftmax:
        return MakeMaskedSoftmaxKernel(graph_, step);
      case StepKind::kKernel:
        if (step.pool_layout != ConvLayout::kNCHW) {
          return MakePoolKernel(KernelContext(node, workspace), step.pool_layout);
        }
        break;
    }
    return MakeCudaKernel(KernelContext(node, workspace));
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

  // What happens before each step in a run: the steps it reads from, and the
  // step before it on its lane. Every cross-lane wait is on a data
  // predecessor, so this is exactly the order the GPU keeps, and the memory
  // planner may reuse bytes across lanes only where it holds.
  std::vector<std::vector<int>> HappensBefore() const {
    const int n = static_cast<int>(plan_.steps.size());
    std::vector<int> writer(graph_.values.size(), -1);
    std::vector<int> last_on_lane(std::max(1, plan_.schedule.lanes), -1);
    std::vector<std::vector<int>> before(n);
    for (int s = 0; s < n; ++s) {
      const ExecutionStep& step = plan_.steps[s];
      for (ValueId in : step.inputs) {
        const int w = writer[plan_.Root(in)];
        if (w >= 0) before[s].push_back(w);
      }
      if (last_on_lane[step.lane] >= 0) before[s].push_back(last_on_lane[step.lane]);
      last_on_lane[step.lane] = s;
      for (ValueId out : step.outputs) writer[plan_.Root(out)] = s;
    }
    for (std::vector<int>& steps : before) {
      std::sort(steps.begin(), steps.end());
      steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    }
    return before;
  }

 public:
  // Offsets for every arena value and every step's workspace (Note [Step
  // workspaces]) over the schedule's happens-before order (Note [Reuse across
  // streams]); on one lane that is the linear chain. The single-lane size is
  // kept to report what concurrency costs. Again after autotuning, which may
  // change what the workspaces need.
  struct ArenaOptions {
    bool with_workspaces = true;  // false: the activations alone
  };
  absl::Status PlanArena(ArenaOptions options) {
    std::vector<int> buffer_of(graph_.values.size(), -1);
    MemoryPlanInput input;
    input.num_steps = static_cast<int>(plan_.steps.size());
    input.step_predecessors = HappensBefore();
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
    // Each workspace lives only while its step runs: no readers.
    std::vector<int> workspace_buffer(plan_.steps.size(), -1);
    for (int s = 0; s < input.num_steps && options.with_workspaces; ++s) {
      const size_t bytes = plan_.steps[s].workspace->bytes();
      if (bytes == 0) continue;
      workspace_buffer[s] = static_cast<int>(input.buffers.size());
      input.buffers.push_back({bytes, s, {}});
    }
    ASSIGN_OR_RETURN(plan_.memory, PlanMemory(input));
    plan_.single_lane_arena_bytes = plan_.memory.arena_bytes;
    if (plan_.schedule.lanes > 1) {
      input.step_predecessors = LinearSchedule(input.num_steps);
      ASSIGN_OR_RETURN(const MemoryPlan single, PlanMemory(input));
      plan_.single_lane_arena_bytes = single.arena_bytes;
    }
    for (size_t i = 0; i < graph_.values.size(); ++i) {
      if (buffer_of[i] >= 0) plan_.storage[i].offset = plan_.memory.offsets[buffer_of[i]];
    }
    plan_.workspace_bytes = 0;
    for (size_t s = 0; s < plan_.steps.size(); ++s) {
      if (workspace_buffer[s] < 0) continue;
      plan_.steps[s].workspace->Place(plan_.resources.arena,
                                      plan_.memory.offsets[workspace_buffer[s]]);
      plan_.workspace_bytes = std::max(plan_.workspace_bytes, plan_.steps[s].workspace->bytes());
    }
    return plan_.resources.arena->Reserve(plan_.memory.arena_bytes);
  }

 private:
  CudaExecutor::Plan& plan_;
  const BoundGraph& graph_;
};

}  // namespace

FusionOptions FusionOptionsOf(const CudaExecutorOptions& options) {
  return {.fuse = options.fuse_epilogues,
          .fuse_attention = options.fuse_attention,
          .k_major_float32_weights = options.allow_tf32,
          .channels_last_convs = options.channels_last_convs};
}

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
  // The executor owns its device: planning and Run set it themselves and
  // leave the caller's current device as it was.
  const CudaDeviceGuard on_device(options.device);
  RETURN_IF_ERROR(on_device.status());
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
  if (!resources.lanes) {
    ASSIGN_OR_RETURN(resources.lanes, SlotLanes::Create(options.device));
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
    {
      // The GEMMs timed in one shared scratch (AlgorithmChoices); no plan
      // keeps it, a failed tuning included.
      absl::Cleanup release_scratch = [&plan] {
        if (plan->resources.algorithm_choices) {
          plan->resources.algorithm_choices->ReleaseTimingScratch();
        }
      };
      RETURN_IF_ERROR(AutotuneKernels(*plan));
    }
    // The chosen algorithms' workspaces, placed anew.
    RETURN_IF_ERROR(PlanBuilder(*plan).PlanArena({.with_workspaces = true}));
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
int CudaExecutor::pointwise_regions() const { return plan_->pointwise_regions; }
int CudaExecutor::add_layer_norms() const { return plan_->add_layer_norms; }
int CudaExecutor::fused_attentions() const { return plan_->fused_attentions; }
int CudaExecutor::masked_softmaxes() const { return plan_->masked_softmaxes; }
int CudaExecutor::gemm_transposes() const { return plan_->gemm_transposes; }
int CudaExecutor::transposed_weights() const { return plan_->transposed_weights; }
int CudaExecutor::conv_steps() const { return plan_->conv_steps; }
const CudaExecutor::PlanTimes& CudaExecutor::plan_times() const { return plan_->times; }
int CudaExecutor::fused_into_convs() const { return plan_->fused_into_convs; }

int CudaExecutor::channels_last_values() const { return plan_->channels_last_values; }
int CudaExecutor::contiguous_views() const { return plan_->contiguous_views; }
const Schedule& CudaExecutor::schedule() const { return plan_->schedule; }
int CudaExecutor::events_per_run() const { return plan_->events_per_run; }
size_t CudaExecutor::single_lane_arena_bytes() const { return plan_->single_lane_arena_bytes; }
size_t CudaExecutor::workspace_bytes() const { return plan_->workspace_bytes; }

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
    // A view's bytes start into its root's (Note [Contiguous views]).
    if (address != nullptr) address = static_cast<char*>(address) + plan.alias_offset[i];
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
  const SlotLanes& lanes = *plan_->resources.lanes;
  // Lane 0 is `stream` itself; the side lanes start after what `stream` has
  // enqueued so far (the input copies).
  auto lane_stream = [&](int lane) { return lane == 0 ? stream : lanes.side_stream(lane).get(); };
  if (plan_->schedule.lanes > 1) {
    const cudaEvent_t fork = lanes.event(plan_->fork_event).get();
    CUDA_RETURN_IF_ERROR(cudaEventRecord(fork, stream));
    for (int lane = 1; lane < plan_->schedule.lanes; ++lane) {
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(lane_stream(lane), fork, 0));
    }
  }
  for (const ExecutionStep& step : plan_->steps) {
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      step.input_addresses[i] = plan_->addresses[step.inputs[i]];
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      step.output_addresses[i] = plan_->addresses[step.outputs[i]];
    }
    const cudaStream_t on = lane_stream(step.lane);
    for (int event : step.wait_events) {
      CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(on, lanes.event(event).get(), 0));
    }
    const absl::Status status =
        step.kernel->Enqueue(step.input_addresses, step.output_addresses, on);
    if (!status.ok()) {
      return AnnotateStatus(status, absl::StrCat(step.label, ", batch ", plan_->graph.batch_size));
    }
    if (step.record_event >= 0) {
      CUDA_RETURN_IF_ERROR(cudaEventRecord(lanes.event(step.record_event).get(), on));
    }
  }
  // Join: `stream` continues (output copies) once every side lane is done.
  for (int lane = 1; lane < plan_->schedule.lanes; ++lane) {
    const cudaEvent_t join = lanes.event(plan_->join_events[lane - 1]).get();
    CUDA_RETURN_IF_ERROR(cudaEventRecord(join, lane_stream(lane)));
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, join, 0));
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
  return Run(inputs, [](cudaStream_t stream) {
    return CudaErrorToStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });
}

absl::StatusOr<std::vector<HostTensor>> CudaExecutor::Run(absl::Span<const HostTensor> inputs,
                                                          const RunWait& wait) {
  const BoundGraph& graph = plan_->graph;
  RETURN_IF_ERROR(ValidateInputs(graph, inputs));
  const CudaDeviceGuard on_device(plan_->options.device);
  RETURN_IF_ERROR(on_device.status());
  std::lock_guard<std::mutex> lock(plan_->run_mutex);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].bytes() > 0) std::memcpy(input_staging(i), inputs[i].raw(), inputs[i].bytes());
  }
  cudaStream_t stream = plan_->run_stream->get();
  RETURN_IF_ERROR(Enqueue(stream));
  RETURN_IF_ERROR(wait(stream));
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
