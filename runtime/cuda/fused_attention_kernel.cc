#include "runtime/cuda/fused_attention_kernel.h"

#include <array>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "runtime/cuda/cudnn_attention.h"
#include "runtime/cuda/fused_attention.h"

namespace graphserve {
namespace {

// The dims right-aligned to four, 1 where absent.
std::array<int64_t, 4> RightAligned(const Dims& dims) {
  std::array<int64_t, 4> aligned = {1, 1, 1, 1};
  for (size_t i = 0; i < dims.size(); ++i) aligned[4 - dims.size() + i] = dims[i];
  return aligned;
}

// A contiguous tensor of `dims` (rank <= 4, right-aligned to four) seen as
// [batch, heads, rows, cols] through `perm` (Note [Attention views]).
struct View {
  std::array<int64_t, 4> dims;
  AttentionStrides strides;  // 0 along a dim of one: it broadcasts there
};

View ViewOf(const Dims& dims, const AttentionPerm& perm) {
  const std::array<int64_t, 4> stored = RightAligned(dims);
  std::array<int64_t, 4> stored_strides;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    stored_strides[i] = stored[i] == 1 ? 0 : stride;
    stride *= stored[i];
  }
  View view;
  for (int i = 0; i < 4; ++i) view.dims[i] = stored[perm[i]];
  view.strides = {stored_strides[perm[0]], stored_strides[perm[1]], stored_strides[perm[2]],
                  stored_strides[perm[3]]};
  return view;
}

class FusedAttentionKernel final : public CudaOpKernel {
 public:
  FusedAttentionKernel(std::string label, const FusedAttentionParams& params)
      : label_(std::move(label)), params_(params) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    const void* mask = inputs.size() > 3 ? inputs[3] : nullptr;
    return CudaErrorToStatus(LaunchFusedAttention(params_, inputs[0], inputs[1], inputs[2], mask,
                                                  outputs[0], stream),
                             absl::StrCat("LaunchFusedAttention for ", label_));
  }

 private:
  std::string label_;
  FusedAttentionParams params_;
};

// Note [cuDNN attention]: the step on cuDNN's engines, in the step's
// workspace.
class CudnnAttentionKernel final : public CudaOpKernel {
 public:
  CudnnAttentionKernel(std::string label, std::unique_ptr<CudnnAttention> attention,
                       std::shared_ptr<StepWorkspace> workspace)
      : label_(std::move(label)),
        attention_(std::move(attention)),
        workspace_(std::move(workspace)) {
    workspace_->Require(attention_->workspace_bytes());
  }

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    const void* mask = inputs.size() > 3 ? inputs[3] : nullptr;
    absl::Status status = attention_->Enqueue(inputs[0], inputs[1], inputs[2], mask, outputs[0],
                                              workspace_->get(), stream);
    if (status.ok()) return status;
    return AnnotateStatus(status, label_);
  }

 private:
  std::string label_;
  std::unique_ptr<CudnnAttention> attention_;
  std::shared_ptr<StepWorkspace> workspace_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeAttentionKernel(const CudaKernelContext& context,
                                                                  const FusedStep& step,
                                                                  std::string label) {
  const BoundGraph& graph = context.graph;
  const size_t operands = step.attention.has_mask ? 4 : 3;
  if (step.kind != StepKind::kAttention || step.inputs.size() != operands ||
      step.outputs.size() != 1) {
    return absl::InternalError(absl::StrCat(label, ": not an attention step"));
  }
  const AttentionFusion& fusion = step.attention;
  const View q = ViewOf(graph.value(step.inputs[0]).dims, fusion.q_perm);
  const View k_transposed = ViewOf(graph.value(step.inputs[1]).dims, fusion.k_perm);
  const View v = ViewOf(graph.value(step.inputs[2]).dims, fusion.v_perm);
  FusedAttentionParams params;
  params.dtype = graph.value(step.inputs[0]).dtype;
  params.batch = q.dims[0];
  params.heads = q.dims[1];
  params.query_rows = q.dims[2];
  params.head_dim = q.dims[3];
  params.key_rows = k_transposed.dims[3];
  params.value_dim = v.dims[3];
  params.scale = fusion.scale;
  params.nan_to_zero = fusion.nan_to_zero;
  params.float_scores = fusion.float_scores;
  params.q = q.strides;
  // k^T [.., D, Sk] read as k [.., Sk, D]: its last two strides swap.
  params.k = k_transposed.strides;
  std::swap(params.k.row, params.k.col);
  params.v = v.strides;
  if (fusion.has_mask) params.mask = ViewOf(graph.value(step.inputs[3]).dims, kIdentityPerm).strides;
  params.out = ViewOf(graph.value(step.outputs[0]).dims, fusion.out_perm).strides;
  // A dim of one query row or one key broadcasts in ViewOf, which is right:
  // its only index is 0.
  if (params.dtype == DType::kFloat16 || params.dtype == DType::kBFloat16) {
    absl::StatusOr<std::unique_ptr<CudnnAttention>> attention = CudnnAttention::Create(
        context.cudnn, params, fusion.has_mask, context.algorithm_choices.get());
    if (attention.ok()) {
      return std::make_unique<CudnnAttentionKernel>(std::move(label), *std::move(attention),
                                                    context.workspace);
    }
    if (!absl::IsUnimplemented(attention.status())) return attention.status();
    spdlog::debug("{}: our own fused kernel, not cuDNN's: {}", label,
                  std::string(attention.status().message()));
  }
  return std::make_unique<FusedAttentionKernel>(std::move(label), params);
}

}  // namespace graphserve
