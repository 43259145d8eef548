#pragma once
// The CUDA executor's kernel for a kAttention step (Note [Fused attention]
// in runtime/fusion.h): the step's values seen as the strided views (Note
// [Attention views]) that cuDNN's engines (float16 and bfloat16, Note [cuDNN
// attention] in runtime/cuda/cudnn_attention.h) or our own fused kernel
// (runtime/cuda/fused_attention.h: float32, and what cuDNN cannot run)
// compute on.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cuda/cuda_kernel_context.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/fusion.h"

namespace graphserve {

// Enqueue's inputs: the step's q, k^T, v and [mask]; outputs: its output.
// `context` gives the graph, the cuDNN handle, the step's workspace and the
// shared plans (its node is the step's anchor).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeAttentionKernel(const CudaKernelContext& context,
                                                                  const FusedStep& step,
                                                                  std::string label);

}  // namespace graphserve
