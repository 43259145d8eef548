// The attention family's CUDA kernels (runtime/ops/attention.cc):
// RotaryEmbedding. Attention binds into primitive ops, whose kernels the
// other families register. Device code: op_kernels_attention.cu.

#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/kernel_families.h"
#include "runtime/cuda/kernel_plan.h"
#include "runtime/cuda/op_kernels.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace {

using kernel_plan::CheckDType;
using kernel_plan::CheckElementCount;
using kernel_plan::CheckSameDType;
using kernel_plan::DeviceInputs;
using kernel_plan::DeviceOutputs;
using kernel_plan::GetNodeValues;
using kernel_plan::Invalid;
using kernel_plan::MakeParamsKernel;
using kernel_plan::NodeValues;
using op_kernels_internal::RotaryParams;

constexpr DTypeSet kRotaryDTypes = DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16});

cudaError_t EnqueueRotaryEmbedding(const RotaryParams& params, DeviceInputs inputs,
                                   DeviceOutputs outputs, cudaStream_t stream) {
  const auto* position_ids = inputs.size() > 3 ? static_cast<const int64_t*>(inputs[3]) : nullptr;
  return op_kernels_internal::LaunchRotaryEmbedding(params, inputs[0], inputs[1], inputs[2],
                                                    position_ids, outputs[0], stream);
}

// Note [Rotary embedding] in runtime/host/attention_kernels.h.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeRotaryEmbedding(
    const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 4, 1, 1));
  const BoundValue& x = *v.inputs[0];
  RETURN_IF_ERROR(CheckDType(node, x, kRotaryDTypes));
  for (const BoundValue* value : {v.inputs[1], v.inputs[2], v.outputs[0]}) {
    RETURN_IF_ERROR(CheckSameDType(node, x, *value));
  }
  RotaryParams params;
  params.dtype = x.dtype;
  params.batch = IntAttr(node.attributes, "batch");
  params.seq = IntAttr(node.attributes, "seq");
  params.heads = IntAttr(node.attributes, "heads");
  params.head_size = IntAttr(node.attributes, "head_size");
  params.rotary_dim = IntAttr(node.attributes, "rotary_dim");
  params.interleaved = IntAttr(node.attributes, "interleaved") != 0;
  params.heads_outer = IntAttr(node.attributes, "heads_outer") != 0;
  const int64_t half = params.rotary_dim / 2;
  if (params.batch < 0 || params.seq < 0 || params.heads < 0 || params.rotary_dim < 0 ||
      params.rotary_dim % 2 != 0 || params.rotary_dim > params.head_size) {
    return Invalid(node, absl::StrCat("batch ", params.batch, ", seq ", params.seq, ", heads ",
                                      params.heads, ", head_size ", params.head_size,
                                      ", rotary_dim ", params.rotary_dim,
                                      ": rotary_dim must be even and within the head"));
  }
  const int64_t count = params.batch * params.seq * params.heads * params.head_size;
  RETURN_IF_ERROR(CheckElementCount(node, x, count));
  RETURN_IF_ERROR(CheckElementCount(node, *v.outputs[0], count));
  const int64_t cache_elements = NumElements(v.inputs[1]->dims);
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[2], cache_elements));
  params.cache_rows = half > 0 ? cache_elements / half : 0;
  if (v.inputs.size() > 3) {
    RETURN_IF_ERROR(CheckDType(node, *v.inputs[3], DTypes({DType::kInt64})));
    RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[3], params.batch * params.seq));
  } else if (half > 0) {
    RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[1], params.batch * params.seq * half));
  }
  return MakeParamsKernel(node, params, EnqueueRotaryEmbedding, "LaunchRotaryEmbedding");
}

}  // namespace

void AddAttentionCudaKernels(CudaKernelDefs& defs) {
  defs.push_back({"RotaryEmbedding", kRotaryDTypes, MakeRotaryEmbedding});
}

}  // namespace graphserve
