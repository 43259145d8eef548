#pragma once
// Gemm and MatMul as one CUDA kernel on cuBLASLt: the node's geometry
// (transposes, numpy batch broadcasting of MatMul), a column bias in the
// epilogue, and for a Gemm whose C is not a plain bias, a broadcast of C into
// the output that the GEMM then accumulates into with beta.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_kernel_context.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/cuda_op_kernel.h"

namespace graphserve {

// Enqueue's inputs: A, B, and C when GemmReadsC (runtime/fusion.h); outputs: D.
class GemmKernel final : public CudaOpKernel {
 public:
  // `fused_bias` (may be null): a column bias the executor took from a
  // following Add. A Gemm's own C of beta 1 that is a column bias goes into
  // the epilogue too (PyTorch's Linear). `scale` multiplies alpha (the
  // scale constants the fusion pass took, FusedStep::gemm_scale).
  static absl::StatusOr<std::unique_ptr<GemmKernel>> Create(const CudaKernelContext& context,
                                                            const BoundValue* fused_bias,
                                                            float scale = 1.0f);

  absl::Status Autotune(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                        cudaStream_t stream) override;
  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override;

  // Implementation details follow.
  GemmKernel(std::string label, std::string choice_key, std::unique_ptr<CublasLtGemm> gemm,
             std::unique_ptr<CudaOpKernel> broadcast_c,
             std::vector<std::array<int64_t, 3>> batch_offsets,
             std::shared_ptr<StepWorkspace> workspace,
             std::shared_ptr<AlgorithmChoices> algorithm_choices);

 private:
  std::string label_;
  std::string choice_key_;
  std::unique_ptr<CublasLtGemm> gemm_;  // null for an empty output
  std::unique_ptr<CudaOpKernel> broadcast_c_;
  // Batches that broadcast in no single stride: (A, B, D) byte offsets of
  // each, one cuBLASLt call each. Empty for strided batching.
  std::vector<std::array<int64_t, 3>> batch_offsets_;
  std::shared_ptr<StepWorkspace> workspace_;
  std::shared_ptr<AlgorithmChoices> algorithm_choices_;  // may be null
};

}  // namespace graphserve
