#pragma once
// The CUDA executor: one BoundGraph planned for one device, enqueued on any
// stream as a capturable sequence of cuBLASLt calls and our own kernels.
//
// Everything that allocates or creates library state happens in Create():
// weights are found in (or uploaded to) the shared WeightStore, activation
// offsets are planned into the stream's arena, cuBLASLt descriptors, algorithm
// choices and workspaces are made. Enqueue() then only launches work.

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cuda_handles.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/executor.h"
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
  // Time cuBLASLt's proposed algorithms for each GEMM, and cuDNN's for each
  // convolution, at plan time and keep the fastest (CudaOpKernel::Autotune).
  // Plans then differ in rounding only between runs whose timings differ.
  bool autotune_gemms = true;
};

// Device memory a plan runs in. Shared by the N plans (batch sizes) of one
// stream slot; the executor reserves what it needs in each at Create().
struct ExecutionResources {
  std::shared_ptr<WeightStore> weights;  // shared by every plan on the device
  std::shared_ptr<StreamArena> arena;    // activations of one stream slot
  std::shared_ptr<IoBuffers> io;         // device I/O + pinned staging of one slot
  // cuBLASLt and cuDNN workspace of one stream slot: its plans run one at a
  // time, so one workspace serves them all. Sized to the largest need: 32 MiB
  // when the model has a GEMM (cuBLASLt's recommendation on Hopper), else the
  // largest chosen convolution algorithm's; nothing for a model with neither.
  std::shared_ptr<StreamArena> gemm_workspace;
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

  // The capturable API. Host staging of input i / output i (pinned; the bound
  // dims' bytes are valid). Fill inputs, Enqueue, wait, read outputs.
  [[nodiscard]] void* input_staging(size_t i) const;
  [[nodiscard]] const void* output_staging(size_t i) const;

  // Copies staged inputs to the device, runs the model, copies outputs back
  // into staging: all asynchronously on `stream`, with no allocation and no
  // synchronisation, so the whole sequence can be captured. One thread at a
  // time: an executor belongs to one stream slot, whose staging and arena a
  // concurrent run would overwrite anyway.
  absl::Status Enqueue(cudaStream_t stream) const;
  // The model run alone, on inputs already on the device.
  absl::Status EnqueueCompute(cudaStream_t stream) const;

  [[nodiscard]] const BoundGraph& graph() const;
  // Activation bytes this plan needs, and the lower bound (peak live bytes).
  [[nodiscard]] size_t arena_bytes() const;
  [[nodiscard]] size_t arena_lower_bound_bytes() const;
  // Number of GEMM steps whose bias/activation went into a cuBLASLt epilogue.
  [[nodiscard]] int fused_epilogues() const;
  // Number of erf GELU chains (five nodes each) run as one fused kernel.
  [[nodiscard]] int fused_gelus() const;
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

  ~CudaExecutor() override;

  // Implementation details follow.
  struct Plan;

 private:
  explicit CudaExecutor(std::unique_ptr<Plan> plan);
  std::unique_ptr<Plan> plan_;
};

}  // namespace graphserve
