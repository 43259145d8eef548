#include "runtime/cuda/fused_attention_kernel.h"

#include <array>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "runtime/cuda/fused_attention.h"

namespace graphserve {
namespace {

// The strides of a contiguous tensor of `dims` (rank <= 4) seen as
// [batch, heads, rows, cols], its dims right-aligned to those four: 0 along
// a dim it lacks or holds once, so it broadcasts there.
AttentionStrides ViewStrides(const Dims& dims) {
  int64_t strides[4] = {0, 0, 0, 0};
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    const size_t slot = 4 - dims.size() + i;
    strides[slot] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  return {strides[0], strides[1], strides[2], strides[3]};
}

// The dims right-aligned to four, 1 where absent.
std::array<int64_t, 4> ViewDims(const Dims& dims) {
  std::array<int64_t, 4> view = {1, 1, 1, 1};
  for (size_t i = 0; i < dims.size(); ++i) view[4 - dims.size() + i] = dims[i];
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

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeFusedAttentionKernel(const BoundGraph& graph,
                                                                       const FusedStep& step,
                                                                       std::string label) {
  const size_t operands = step.attention.has_mask ? 4 : 3;
  if (step.kind != StepKind::kAttention || step.inputs.size() != operands ||
      step.outputs.size() != 1) {
    return absl::InternalError(absl::StrCat(label, ": not an attention step"));
  }
  const BoundValue& q = graph.value(step.inputs[0]);
  const BoundValue& k_transposed = graph.value(step.inputs[1]);
  const BoundValue& v = graph.value(step.inputs[2]);
  const BoundValue& out = graph.value(step.outputs[0]);
  const std::array<int64_t, 4> q_dims = ViewDims(q.dims);
  FusedAttentionParams params;
  params.dtype = q.dtype;
  params.batch = q_dims[0];
  params.heads = q_dims[1];
  params.query_rows = q_dims[2];
  params.head_dim = q_dims[3];
  params.key_rows = k_transposed.dims.back();
  params.value_dim = v.dims.back();
  params.scale = step.attention.scale;
  params.nan_to_zero = step.attention.nan_to_zero;
  params.q = ViewStrides(q.dims);
  // k^T [.., D, Sk] read as k [.., Sk, D]: its last two strides swap.
  params.k = ViewStrides(k_transposed.dims);
  std::swap(params.k.row, params.k.col);
  params.v = ViewStrides(v.dims);
  if (step.attention.has_mask) params.mask = ViewStrides(graph.value(step.inputs[3]).dims);
  params.out = ViewStrides(out.dims);
  // A dim of one query row or one key broadcasts in ViewStrides, which is
  // right: its only index is 0.
  return std::make_unique<FusedAttentionKernel>(std::move(label), params);
}

}  // namespace graphserve
