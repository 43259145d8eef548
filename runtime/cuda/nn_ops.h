#pragma once
// CUDA kernels of the nn op family (runtime/ops/nn.cc; their factories are
// registered by AddNnCudaKernels, runtime/cuda/kernel_families.h): the cuDNN convolution
// with its fused epilogue, pooling, global pooling, unfolded BatchNorm, Pad
// and the standalone activations. Every Enqueue only launches: no
// allocation, no synchronisation, so the run can be captured.

#include <cudnn.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_kernel_context.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/nn_params.h"
#include "tensor_holder/stream_arena.h"

namespace graphserve {

// What the executor's plan fused into a convolution's epilogue:
//   y = act(conv(x, w) + bias + residual)
struct ConvFusion {
  bool has_bias = false;        // the Conv's B input (BatchNorm folded in at import)
  bool has_residual = false;    // a following Add of a same-dims value
  ActivationParams activation;  // a following Relu, Clip, Sigmoid, SiLU or HardSwish
  // How x, y and the residual lie (Note [Channels-last convolutions] in
  // runtime/fusion.h).
  ConvLayout x_layout = ConvLayout::kNCHW;
  ConvLayout y_layout = ConvLayout::kNCHW;
  ConvLayout residual_layout = ConvLayout::kNCHW;
};

// A MaxPool or AveragePool node with x and y in `layout`, or a
// GlobalAveragePool or GlobalMaxPool with x in it (its [N, C, 1, 1] output
// is the same bytes either way): kNHWC between channels-last convolutions
// (Note [Channels-last convolutions] in runtime/fusion.h). The op
// registry's factory of these ops is this at kNCHW.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePoolKernel(const CudaKernelContext& context,
                                                             ConvLayout layout);

// A Conv node on cuDNN, then (when anything is fused) one epilogue launch
// over its output in place; or a depthwise Conv on our own kernel, its
// epilogue fused (context.own_depthwise_convs, DepthwiseConvRuns). Enqueue's
// inputs: x, w, [bias], [residual]; outputs: y. When x or y is NHWC the
// kernel reads its own channels-last copy of the constant w from the weight
// store, and w is not among the inputs: x, [bias], [residual].
class ConvKernel final : public CudaOpKernel {
 public:
  // Runs on the context's cuDNN handle (the stream slot's; one thread at a
  // time); its step workspace is what the current plan needs (here and in
  // Autotune). When the context says Autotune runs, no plan is built here
  // (unless another kernel of these sizes shared one): Autotune chooses it.
  static absl::StatusOr<std::unique_ptr<ConvKernel>> Create(const CudaKernelContext& context,
                                                            const ConvFusion& fusion);

  // Times cuDNN's algorithms on these buffers and keeps the fastest (plan
  // time only; synchronises), or takes the plan another slot's kernel of
  // these sizes chose; then requires the workspace that plan needs. The
  // timings of the convolution's other batch sizes, kept in the
  // AlgorithmChoices, prune the candidates (Note [Convolution tuning budget]
  // in runtime/cuda/cudnn_conv.h).
  absl::Status Autotune(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                        cudaStream_t stream) override;

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override;

  // Implementation details follow.
  // w, and the index of the first input after it.
  [[nodiscard]] std::pair<const void*, size_t> Weight(absl::Span<const void* const> inputs) const;
  ConvKernel(std::string label, std::string choice_key, ConvParams params,
             std::unique_ptr<class CudnnConv> conv, ConvFusion fusion,
             ChannelEpilogueParams epilogue, const void* channels_last_w,
             std::shared_ptr<StepWorkspace> workspace,
             std::shared_ptr<AlgorithmChoices> algorithm_choices);
  ~ConvKernel() override;

 private:
  std::string label_;
  std::string choice_key_;
  ConvParams params_;
  std::unique_ptr<CudnnConv> conv_;  // null: our own depthwise kernel
  ConvFusion fusion_;
  ChannelEpilogueParams epilogue_;
  // The weight store's channels-last copy of w; null: w is the second input.
  const void* channels_last_w_;
  std::shared_ptr<StepWorkspace> workspace_;
  std::shared_ptr<AlgorithmChoices> algorithm_choices_;  // may be null
};

}  // namespace graphserve
