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

// What the fusion pass gave a GEMM step beyond its node (FusedStep's kGemm
// fields).
struct GemmStepFusion {
  // A column bias taken from a following Add (null: none). A Gemm's own C of
  // beta 1 that is a column bias goes into the epilogue too (PyTorch's Linear).
  const BoundValue* bias = nullptr;
  // Multiplies alpha: the scale constants the pass took.
  float scale = 1.0f;
  // B, a 2-D constant, is read from the weight store's transposed copy (Note
  // [K-major weights] in runtime/fusion.h).
  bool weight_transposed = false;
  // A MatMul reads A / B stored with its last two dims swapped (Note
  // [Transposed GEMM operands] in runtime/fusion.h).
  bool trans_a = false;
  bool trans_b = false;
  // A rank-3 MatMul operand (A, B) or result (D) is stored with its first
  // two dims swapped (Note [Batch-swapped GEMM operands] in
  // runtime/fusion.h).
  bool swapped_a = false;
  bool swapped_b = false;
  bool swapped_d = false;
};

// Enqueue's inputs: A, B (unless the step reads a transposed weight of its
// own), and C when GemmReadsC (runtime/fusion.h); outputs: D.
class GemmKernel final : public CudaOpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<GemmKernel>> Create(const CudaKernelContext& context,
                                                            const GemmStepFusion& fusion = {});

  absl::Status Autotune(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                        cudaStream_t stream) override;
  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override;

  // Implementation details follow.
  GemmKernel(std::string label, std::string choice_key, std::unique_ptr<CublasLtGemm> gemm,
             const void* weight, std::unique_ptr<CudaOpKernel> broadcast_c,
             std::vector<std::array<int64_t, 3>> batch_offsets,
             std::shared_ptr<StepWorkspace> workspace,
             std::shared_ptr<AlgorithmChoices> algorithm_choices);

 private:
  // B and C among Enqueue's inputs, which hold B unless weight_ is set.
  [[nodiscard]] const char* B(absl::Span<const void* const> inputs) const;
  [[nodiscard]] const void* C(absl::Span<const void* const> inputs) const;

  std::string label_;
  std::string choice_key_;
  std::unique_ptr<CublasLtGemm> gemm_;  // null for an empty output
  const void* weight_;                  // B's transposed device copy, or null
  std::unique_ptr<CudaOpKernel> broadcast_c_;
  // Batches that broadcast in no single stride: (A, B, D) byte offsets of
  // each, one cuBLASLt call each. Empty for strided batching.
  std::vector<std::array<int64_t, 3>> batch_offsets_;
  std::shared_ptr<StepWorkspace> workspace_;
  std::shared_ptr<AlgorithmChoices> algorithm_choices_;  // may be null
};

}  // namespace graphserve
