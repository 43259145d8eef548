#pragma once
// The CUDA executor: one BoundGraph planned for one device, enqueued on any
// stream as a capturable sequence of library calls (cuBLASLt, cuDNN) and our
// own kernels, spread over the lanes of a schedule (runtime/schedule.h).
//
// Create() runs the three passes in order: fusion (runtime/fusion.h) turns
// nodes into steps; the scheduler puts each step on a lane; planning makes
// each step's kernel (with its lane's workspace) and places every activation
// in the slot's arena over the schedule's happens-before order. Everything
// that allocates or creates library state happens there: weights are found
// in (or uploaded to) the shared WeightStore, descriptors, algorithm choices,
// side streams, events and workspaces are made. Enqueue() then only launches
// work and records and waits on events, so it can be captured.

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cuda_handles.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/slot_lanes.h"
#include "runtime/executor.h"
#include "runtime/fusion.h"
#include "runtime/schedule.h"
#include "tensor_holder/io_buffers.h"
#include "tensor_holder/stream_arena.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

struct CudaExecutorOptions {
  // CUDA device ordinal.
  int device = 0;
  // Allow TF32 tensor-core math in GEMMs and convolutions: faster, relative
  // error near 3e-4.
  // Off by default: exact float32.
  bool allow_tf32 = false;
  // Fuse a bias Add into the Gemm/MatMul's cuBLASLt epilogue; a residual Add
  // and the activation after a Conv into its epilogue kernel; and elementwise
  // chains into one kernel: today the exact (erf) GELU that PyTorch exports
  // as Div/Erf/Add/Mul/Mul (see fused_gelu.h).
  bool fuse_epilogues = true;
  // Which attention chains run as one kernel (FusionOptions::fuse_attention):
  // by default the 16-bit ones, on cuDNN's engines, and float32 ones over
  // few keys, on our own kernel.
  FuseAttention fuse_attention = FuseAttention::kHalfAndShort;
  // 16-bit convolutions hand each other their outputs channels last (Note
  // [Channels-last convolutions] in runtime/fusion.h).
  bool channels_last_convs = true;
  // Depthwise convolutions on our own kernel, their epilogue fused, where it
  // runs them (Note [Depthwise convolutions] in runtime/cuda/nn_kernels.cu);
  // false: on cuDNN, as every other convolution.
  bool own_depthwise_convs = true;
  // Time cuBLASLt's proposed algorithms for each GEMM, and cuDNN's for each
  // convolution, at plan time and keep the fastest (CudaOpKernel::Autotune).
  // Plans then differ in rounding only between runs whose timings differ.
  bool autotune_gemms = true;
  // How steps spread over the slot's lanes (streams). Single (default): one
  // lane, the fusion plan's order.
  ScheduleOptions schedule;
};

// The fusion pass's options for plans of these executor options.
FusionOptions FusionOptionsOf(const CudaExecutorOptions& options);

// Device memory a plan runs in. Shared by the N plans (batch sizes) of one
// stream slot; the executor reserves what it needs in each at Create().
struct ExecutionResources {
  std::shared_ptr<WeightStore> weights;  // shared by every plan on the device
  std::shared_ptr<StreamArena> arena;    // activations of one stream slot
  std::shared_ptr<IoBuffers> io;         // device I/O + pinned staging of one slot
  // The slot's lanes: side streams, events, and one cuBLASLt/cuDNN workspace
  // per lane. The slot's plans run one at a time, so one set serves them
  // all. Each workspace is sized to the largest need of the steps on its
  // lane: 32 MiB with a GEMM (cuBLASLt's recommendation on Hopper), else the
  // largest chosen convolution algorithm's; nothing for neither.
  std::shared_ptr<SlotLanes> lanes;
  // The slot's library handles, shared by its N plans (not one per plan).
  std::shared_ptr<CublasLtHandle> cublas;
  std::shared_ptr<CudnnHandle> cudnn;
  // Algorithm choices shared by the plans of every slot (null: each plan
  // times its own): one model's M plans of a size time each GEMM and
  // convolution once.
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
};

class CudaExecutor : public Executor {
 public:
  // Null members of `resources` are created privately for this executor.
  static absl::StatusOr<std::unique_ptr<CudaExecutor>> Create(BoundGraph graph,
                                                              const CudaExecutorOptions& options,
                                                              ExecutionResources resources = {});

  // Synchronous convenience (Executor): stages `inputs`, enqueues a run on a
  // private stream, waits, and returns the outputs.
  absl::StatusOr<std::vector<HostTensor>> Run(absl::Span<const HostTensor> inputs) override;
  // The same, waiting for the run through `wait` (given the private stream)
  // instead of a stream synchronisation: the load-time reference releases
  // its device's capture lock while it waits (capture/reference_plans.cc).
  using RunWait = std::function<absl::Status(cudaStream_t stream)>;
  absl::StatusOr<std::vector<HostTensor>> Run(absl::Span<const HostTensor> inputs,
                                              const RunWait& wait);

  // The capturable API. Host staging of input i / output i (pinned; the bound
  // dims' bytes are valid). Fill inputs, Enqueue, wait, read outputs.
  [[nodiscard]] void* input_staging(size_t i) const;
  [[nodiscard]] const void* output_staging(size_t i) const;

  // Copies staged inputs to the device, runs the model, copies outputs back
  // into staging: all asynchronously on `stream`, with no allocation and no
  // synchronisation, so the whole sequence can be captured. With several
  // lanes, the slot's side streams fork from `stream` after the input copies
  // and join it before the output copies. One thread at a time: an executor
  // belongs to one stream slot, whose staging, arena and lanes a concurrent
  // run would overwrite anyway.
  absl::Status Enqueue(cudaStream_t stream) const;
  // The model run alone, on inputs already on the device.
  absl::Status EnqueueCompute(cudaStream_t stream) const;

  // The schedule the steps run in: lanes, graph width, critical path.
  [[nodiscard]] const Schedule& schedule() const;
  // Events one run records: the fork, the joins and the cross-lane waits.
  [[nodiscard]] int events_per_run() const;
  // The arena this plan would need on one lane: arena_bytes() minus this is
  // what running branches concurrently costs in memory.
  [[nodiscard]] size_t single_lane_arena_bytes() const;
  // The largest library workspace of one step (cuBLASLt's, cuDNN's): planned
  // inside the arena (Note [Step workspaces]), not beside it.
  [[nodiscard]] size_t workspace_bytes() const;

  [[nodiscard]] const BoundGraph& graph() const;
  // Activation bytes this plan needs, and the lower bound (peak live bytes).
  [[nodiscard]] size_t arena_bytes() const;
  [[nodiscard]] size_t arena_lower_bound_bytes() const;
  // Number of GEMM steps whose bias/activation went into a cuBLASLt epilogue.
  [[nodiscard]] int fused_epilogues() const;
  // Number of erf GELU chains (five nodes each) run as one fused kernel.
  [[nodiscard]] int fused_gelus() const;
  // Pointwise regions run as one kernel each (Note [Pointwise regions]).
  [[nodiscard]] int pointwise_regions() const;
  // Residual Adds run with the LayerNorm of their sum.
  [[nodiscard]] int add_layer_norms() const;
  // Attention chains run as one kernel (Note [Fused attention]).
  [[nodiscard]] int fused_attentions() const;
  // Softmaxes run with their mask Add and NaN guard (Note [Masked softmax]).
  [[nodiscard]] int masked_softmaxes() const;
  // Transposes read by GEMMs as op(T) (Note [Transposed GEMM operands]).
  [[nodiscard]] int gemm_transposes() const;
  // GEMM steps reading a transposed weight (Note [K-major weights]).
  [[nodiscard]] int transposed_weights() const;
  // Number of Conv steps, and of nodes (residual Add, activation) fused into
  // their epilogues.
  [[nodiscard]] int conv_steps() const;
  // Where Create's time went, milliseconds: building the kernels (fusion,
  // library descriptors and heuristics), planning storage and the arena, and
  // timing algorithms (or replaying another slot's choices).
  struct PlanTimes {
    double kernels_ms = 0;
    double memory_ms = 0;
    double autotune_ms = 0;
  };
  [[nodiscard]] const PlanTimes& plan_times() const;
  [[nodiscard]] int fused_into_convs() const;
  // Conv outputs stored NHWC (Note [Channels-last convolutions] in
  // runtime/fusion.h).
  [[nodiscard]] int channels_last_values() const;
  // Gathers read in place (Note [Contiguous views] in runtime/fusion.h).
  [[nodiscard]] int contiguous_views() const;

  ~CudaExecutor() override;

  // Implementation details follow.
  struct Plan;

 private:
  explicit CudaExecutor(std::unique_ptr<Plan> plan);
  std::unique_ptr<Plan> plan_;
};

}  // namespace graphserve
