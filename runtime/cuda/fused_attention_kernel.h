#pragma once
// The CUDA executor's kernel for a kAttention step (Note [Fused attention]
// in runtime/fusion.h): the step's values' dims turned into the strided
// views runtime/cuda/fused_attention.h computes on.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/fusion.h"

namespace graphserve {

// Enqueue's inputs: the step's q, k^T, v and [mask]; outputs: its output.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeFusedAttentionKernel(const BoundGraph& graph,
                                                                       const FusedStep& step,
                                                                       std::string label);

}  // namespace graphserve
