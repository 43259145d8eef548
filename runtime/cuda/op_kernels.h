#pragma once
// GraphServe's own CUDA kernels of the elementwise, data movement and
// normalization families (runtime/cuda/<family>_ops.cc; the device code is
// in op_kernels_*.cu). The executor finds them through the registry
// (runtime/cuda/cuda_kernel_registry.h); this header is for kernels that
// build one as part of their own work.

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/fusion.h"

namespace graphserve {

// An Expand of `node`'s input to its output (dims and dtype from the graph):
// GemmKernel broadcasts a Gemm's C into D with it before accumulating.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeExpandKernel(const BoundGraph& graph,
                                                               const BoundNode& node);

// A residual Add and the LayerNormalization (or RMSNormalization)
// `layer_norm` of its sum as one kernel (StepKind::kAddLayerNorm, runtime/fusion.h). Enqueue's inputs: the
// Add's two inputs, then the LayerNorm's scale and [bias]; outputs: the
// LayerNorm's output, then the sum when `write_sum`.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeAddLayerNormKernel(const BoundGraph& graph,
                                                                     const BoundNode& layer_norm,
                                                                     bool write_sum);

// A kMaskedSoftmax step (Note [Masked softmax] in op_kernels_launch.h).
// Enqueue's inputs: the scores and [mask]; outputs: the probabilities.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeMaskedSoftmaxKernel(const BoundGraph& graph,
                                                                      const FusedStep& step);

}  // namespace graphserve
