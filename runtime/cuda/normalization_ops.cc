// The normalization family's CUDA kernels (runtime/ops/normalization.cc):
// Softmax, LogSoftmax, Hardmax, LayerNormalization, RMSNormalization,
// InstanceNormalization, GroupNormalization, the Reduce* ops, ArgMax and
// ArgMin, CumSum. Device code: op_kernels_reduce.cu.

#include "runtime/cuda/op_kernels.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/kernel_families.h"
#include "runtime/cuda/kernel_plan.h"
#include "runtime/cuda/op_kernels_launch.h"
#include "runtime/cuda/step_workspace.h"

namespace graphserve {
namespace {

using kernel_plan::CheckDType;
using kernel_plan::CheckElementCount;
using kernel_plan::CheckSameDType;
using kernel_plan::ContiguousStrides;
using kernel_plan::DeviceInputs;
using kernel_plan::DeviceOutputs;
using kernel_plan::GetNodeValues;
using kernel_plan::Invalid;
using kernel_plan::MakeParamsKernel;
using kernel_plan::MergeDims;
using kernel_plan::NodeKernel;
using kernel_plan::NodeValues;
using kernel_plan::Product;
using kernel_plan::StridedDims;
using op_kernels_internal::ArgReduceParams;
using op_kernels_internal::CumSumParams;
using op_kernels_internal::GroupNormParams;
using op_kernels_internal::HardmaxParams;
using op_kernels_internal::LayerNormParams;
using op_kernels_internal::ReduceOp;
using op_kernels_internal::ReduceParams;
using op_kernels_internal::SoftmaxMask;
using op_kernels_internal::SoftmaxParams;

// The element types of the row kernels (Softmax, LayerNormalization):
// float32 and the 16-bit floats, computed in float.
constexpr DTypeSet kRowKernelDTypes = DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16});

cudaError_t EnqueueSoftmax(const SoftmaxParams& params, DeviceInputs inputs,
                           DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchSoftmax(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueReduce(const ReduceParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                          cudaStream_t stream) {
  return op_kernels_internal::LaunchReduce(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueArgReduce(const ArgReduceParams& params, DeviceInputs inputs,
                             DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchArgReduce(params, inputs[0], static_cast<int64_t*>(outputs[0]),
                                              stream);
}

cudaError_t EnqueueCumSum(const CumSumParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                          cudaStream_t stream) {
  return op_kernels_internal::LaunchCumSum(params, inputs[0], outputs[0], stream);
}

class LayerNormKernel final : public NodeKernel {
 public:
  // `has_mean` / `has_inv_std_dev`: whether output 1 / 2 is used.
  LayerNormKernel(const BoundNode& node, const LayerNormParams& params, bool has_mean,
                  bool has_inv_std_dev)
      : NodeKernel(node),
        params_(params),
        has_bias_(node.inputs.size() == 3),
        has_mean_(has_mean),
        has_inv_std_dev_(has_inv_std_dev) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    const void* bias = has_bias_ ? inputs[2] : nullptr;
    float* mean = has_mean_ ? static_cast<float*>(outputs[1]) : nullptr;
    float* inv_std_dev = has_inv_std_dev_ ? static_cast<float*>(outputs[2]) : nullptr;
    return LaunchStatus(op_kernels_internal::LaunchLayerNorm(params_, inputs[0], inputs[1], bias,
                                                             outputs[0], mean, inv_std_dev,
                                                             stream),
                        "LaunchLayerNorm");
  }

 private:
  LayerNormParams params_;
  bool has_bias_;
  bool has_mean_;
  bool has_inv_std_dev_;
};

// Softmax's and LogSoftmax's parameters, checked against the node's values,
// for the plain and the masked kernels.
absl::StatusOr<SoftmaxParams> ReadSoftmaxParams(const BoundGraph& graph, const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  SoftmaxParams params;
  params.dtype = in.dtype;
  params.outer = IntAttr(node.attributes, "outer");
  params.axis_size = IntAttr(node.attributes, "axis_size");
  params.inner = IntAttr(node.attributes, "inner");
  params.log = node.op_type == "LogSoftmax";
  if (params.outer < 0 || params.axis_size < 0 || params.inner < 0) {
    return Invalid(node, "outer, axis_size and inner must be non-negative");
  }
  const int64_t count = params.outer * params.axis_size * params.inner;
  RETURN_IF_ERROR(CheckElementCount(node, in, count));
  RETURN_IF_ERROR(CheckElementCount(node, out, count));
  return params;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeSoftmax(const CudaKernelContext& context) {
  ASSIGN_OR_RETURN(const SoftmaxParams params, ReadSoftmaxParams(context.graph, context.node));
  return MakeParamsKernel(context.node, params, EnqueueSoftmax, "LaunchSoftmax");
}

// Note [Masked softmax]: how a mask of `mask` dims, broadcast (right-aligned)
// to the scores' `dims`, is read from each row.
SoftmaxMask MaskLayoutOver(const Dims& mask, const Dims& dims) {
  SoftmaxMask layout;
  layout.rank = static_cast<int>(dims.size()) - 1;
  const int offset = static_cast<int>(dims.size() - mask.size());
  int64_t stride = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    const int64_t extent = d >= offset ? mask[d - offset] : 1;
    const int64_t step = extent == 1 ? 0 : stride;
    if (d == layout.rank) {
      layout.col_stride = step;
    } else {
      layout.dims[d] = dims[d];
      layout.strides[d] = step;
    }
    stride *= extent;
  }
  const int64_t rows = NumElements(dims) / dims.back();
  layout.index32 = rows <= UINT32_MAX && stride <= UINT32_MAX;  // stride: the mask's elements
  return layout;
}

class MaskedSoftmaxKernel final : public NodeKernel {
 public:
  MaskedSoftmaxKernel(const BoundNode& softmax, const SoftmaxParams& params, bool has_mask)
      : NodeKernel(softmax), params_(params), has_mask_(has_mask) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    if (inputs.size() != (has_mask_ ? 2u : 1u) || outputs.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat("masked softmax: Enqueue got ",
                                                     inputs.size(), " inputs and ",
                                                     outputs.size(), " outputs"));
    }
    return LaunchStatus(op_kernels_internal::LaunchSoftmax(params_, inputs[0], outputs[0], stream,
                                                           has_mask_ ? inputs[1] : nullptr),
                        "LaunchSoftmax");
  }

 private:
  SoftmaxParams params_;
  bool has_mask_;
};

cudaError_t EnqueueHardmax(const HardmaxParams& params, DeviceInputs inputs,
                           DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchHardmax(params, inputs[0], outputs[0], stream);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeHardmax(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  HardmaxParams params;
  params.dtype = in.dtype;
  params.outer = IntAttr(node.attributes, "outer");
  params.axis_size = IntAttr(node.attributes, "axis_size");
  params.inner = IntAttr(node.attributes, "inner");
  if (params.outer < 0 || params.axis_size < 0 || params.inner < 0) {
    return Invalid(node, "outer, axis_size and inner must be non-negative");
  }
  const int64_t count = params.outer * params.axis_size * params.inner;
  RETURN_IF_ERROR(CheckElementCount(node, in, count));
  RETURN_IF_ERROR(CheckElementCount(node, out, count));
  return MakeParamsKernel(node, params, EnqueueHardmax, "LaunchHardmax");
}

// a + b, then the LayerNormalization of the sum, in one launch (the
// executor's kAddLayerNorm step). Enqueue's inputs: a, b, scale, [bias];
// outputs: y, and the sum when its other readers need it.
class AddLayerNormKernel final : public NodeKernel {
 public:
  AddLayerNormKernel(const BoundNode& layer_norm, const LayerNormParams& params, bool has_bias,
                     bool writes_sum)
      : NodeKernel(layer_norm), params_(params), has_bias_(has_bias), writes_sum_(writes_sum) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    if (inputs.size() != (has_bias_ ? 4u : 3u) || outputs.size() != (writes_sum_ ? 2u : 1u)) {
      return absl::InvalidArgumentError(absl::StrCat("fused Add and LayerNorm: Enqueue got ",
                                                     inputs.size(), " inputs and ",
                                                     outputs.size(), " outputs"));
    }
    return LaunchStatus(op_kernels_internal::LaunchAddLayerNorm(
                            params_, inputs[0], inputs[1], inputs[2],
                            has_bias_ ? inputs[3] : nullptr, outputs[0],
                            writes_sum_ ? outputs[1] : nullptr, stream),
                        "LaunchAddLayerNorm");
  }

 private:
  LayerNormParams params_;
  bool has_bias_;
  bool writes_sum_;
};

// LayerNormalization's and RMSNormalization's parameters (Note [RMS
// normalization] in runtime/host/normalization_kernels.h), for the plain
// and the fused residual kernels.
absl::StatusOr<LayerNormParams> ReadLayerNormParams(const BoundGraph& graph,
                                                    const BoundNode& node) {
  LayerNormParams params;
  params.dtype = graph.value(node.inputs[0]).dtype;
  params.rows = IntAttr(node.attributes, "outer");
  params.cols = IntAttr(node.attributes, "inner");
  ASSIGN_OR_RETURN(params.epsilon, GetFloatAttr(node.attributes, "epsilon", 1e-5f));
  params.subtract_mean = node.op_type != "RMSNormalization";
  if (params.rows < 0 || params.cols < 0) {
    return Invalid(node, "outer and inner must be non-negative");
  }
  return params;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeLayerNorm(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 3, 1, 3));
  ASSIGN_OR_RETURN(const LayerNormParams params, ReadLayerNormParams(context.graph, node));
  RETURN_IF_ERROR(CheckDType(node, *v.inputs[0], kRowKernelDTypes));
  for (const BoundValue* value : v.inputs) RETURN_IF_ERROR(CheckSameDType(node, *v.inputs[0], *value));
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[0], params.rows * params.cols));
  for (size_t i = 1; i < v.inputs.size(); ++i) {
    RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[i], params.cols));
  }
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    if (v.outputs[i] == nullptr) continue;
    RETURN_IF_ERROR(i == 0 ? CheckSameDType(node, *v.inputs[0], *v.outputs[0])
                           : CheckDType(node, *v.outputs[i], DTypes({DType::kFloat32})));
    RETURN_IF_ERROR(
        CheckElementCount(node, *v.outputs[i], i == 0 ? params.rows * params.cols : params.rows));
  }
  const bool has_mean = v.outputs.size() > 1 && v.outputs[1] != nullptr;
  const bool has_inv_std_dev = v.outputs.size() > 2 && v.outputs[2] != nullptr;
  return std::make_unique<LayerNormKernel>(node, params, has_mean, has_inv_std_dev);
}

// Its launches take the step's workspace for the rows' partial sums (Note
// [Group normalization on many blocks] in op_kernels_reduce.cu).
class GroupNormKernel final : public NodeKernel {
 public:
  GroupNormKernel(const BoundNode& node, const GroupNormParams& params,
                  std::shared_ptr<StepWorkspace> workspace)
      : NodeKernel(node), params_(params), workspace_(std::move(workspace)) {
    if (workspace_ != nullptr) {
      workspace_->Require(op_kernels_internal::GroupNormWorkspaceBytes(params_));
    }
  }

  absl::Status Enqueue(DeviceInputs inputs, DeviceOutputs outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    const auto in = [&](size_t i) { return static_cast<const float*>(inputs[i]); };
    return LaunchStatus(
        op_kernels_internal::LaunchGroupNorm(params_, in(0), in(1), in(2),
                                             static_cast<float*>(outputs[0]),
                                             Partials(), stream),
        "LaunchGroupNorm");
  }

 private:
  // Null without a placed workspace: the launch then refuses to run.
  [[nodiscard]] double* Partials() const {
    return workspace_ == nullptr ? nullptr : static_cast<double*>(workspace_->get());
  }

  GroupNormParams params_;
  std::shared_ptr<StepWorkspace> workspace_;
};

// InstanceNormalization and GroupNormalization (Note [Group normalization] in
// runtime/host/normalization_kernels.h).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGroupNorm(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 3, 1, 1));
  GroupNormParams params;
  params.batch = IntAttr(node.attributes, "batch");
  params.channels = IntAttr(node.attributes, "channels");
  params.groups = IntAttr(node.attributes, "groups");
  params.spatial = IntAttr(node.attributes, "spatial");
  params.affine_per_group = IntAttr(node.attributes, "affine_per_group") != 0;
  ASSIGN_OR_RETURN(params.epsilon, GetFloatAttr(node.attributes, "epsilon", 1e-5f));
  if (params.batch < 0 || params.channels < 0 || params.spatial < 0 || params.groups <= 0 ||
      params.channels % params.groups != 0) {
    return Invalid(node, absl::StrCat("batch ", params.batch, ", channels ", params.channels,
                                      ", groups ", params.groups, ", spatial ", params.spatial,
                                      ": groups must divide channels, none negative"));
  }
  for (const BoundValue* value : {v.inputs[0], v.inputs[1], v.inputs[2], v.outputs[0]}) {
    RETURN_IF_ERROR(CheckDType(node, *value, DTypes({DType::kFloat32})));
  }
  const int64_t count = params.batch * params.channels * params.spatial;
  const int64_t affine = params.affine_per_group ? params.groups : params.channels;
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[0], count));
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[1], affine));
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[2], affine));
  RETURN_IF_ERROR(CheckElementCount(node, *v.outputs[0], count));
  return std::make_unique<GroupNormKernel>(node, params, context.workspace);
}

// The Reduce* ops (Note [Reductions] in runtime/host/normalization_kernels.h)
// and the dtypes their kernels take.
struct ReduceOpInfo {
  const char* op_type;
  ReduceOp op;
  DTypeSet dtypes;
};

constexpr DTypeSet kFloatsAndIntegers = kFloatDTypes | DTypes({DType::kInt64, DType::kInt32});

constexpr ReduceOpInfo kReduceOps[] = {
    {"ReduceSum", ReduceOp::kSum, kFloatsAndIntegers},
    {"ReduceMean", ReduceOp::kMean, kFloatDTypes},
    {"ReduceProd", ReduceOp::kProd, kFloatsAndIntegers},
    {"ReduceMax", ReduceOp::kMax, kFloatsAndIntegers},
    {"ReduceMin", ReduceOp::kMin, kFloatsAndIntegers},
    {"ReduceL1", ReduceOp::kL1, kFloatsAndIntegers},
    {"ReduceL2", ReduceOp::kL2, kFloatDTypes},
    {"ReduceSumSquare", ReduceOp::kSumSquare, kFloatsAndIntegers},
    {"ReduceLogSum", ReduceOp::kLogSum, kFloatDTypes},
    {"ReduceLogSumExp", ReduceOp::kLogSumExp, kFloatDTypes},
};

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeReduce(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ReduceParams params;
  for (const ReduceOpInfo& info : kReduceOps) {
    if (node.op_type == info.op_type) params.op = info.op;
  }
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  params.dtype = in.dtype;
  // Empty axes reduce nothing: each output element is its one input element
  // put through the reduction.
  const std::vector<int64_t>& axes = IntsAttr(node.attributes, "axes");
  const size_t rank = in.dims.size();
  std::vector<bool> reduced(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || static_cast<size_t>(axes[i]) >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      return Invalid(node, absl::StrCat("axes [", absl::StrJoin(axes, ","),
                                        "] must be sorted, distinct and within rank ", rank));
    }
    reduced[axes[i]] = true;
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  Dims kept_dims;
  Dims reduced_dims;
  std::vector<int64_t> kept_strides;
  std::vector<int64_t> reduced_strides;
  for (size_t d = 0; d < rank; ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(in.dims[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(in_strides[d]);
  }
  params.num_outputs = NumElements(kept_dims);
  params.reduce_count = NumElements(reduced_dims);
  RETURN_IF_ERROR(CheckElementCount(node, out, params.num_outputs));
  const StridedDims kept = MergeDims(kept_dims, {kept_strides});
  const StridedDims reduced_merged = MergeDims(reduced_dims, {reduced_strides});
  params.kept_rank = static_cast<int32_t>(kept.dims.size());
  for (size_t d = 0; d < kept.dims.size(); ++d) {
    params.kept_dims[d] = kept.dims[d];
    // MergeDims gives a lone size-1 dim stride 1; it is only ever indexed at 0.
    params.kept_strides[d] = kept.strides[0][d];
  }
  params.reduced_rank = static_cast<int32_t>(reduced_merged.dims.size());
  for (size_t d = 0; d < reduced_merged.dims.size(); ++d) {
    params.reduced_dims[d] = reduced_merged.dims[d];
    params.reduced_strides[d] = reduced_merged.strides[0][d];
  }
  // Row-major [num_outputs, reduce_count]: the reduced elements of output t
  // are the reduce_count elements starting at t * reduce_count.
  params.rows_contiguous =
      params.reduced_rank == 1 && params.reduced_strides[0] == 1 &&
      (params.num_outputs == 1 ||
       (params.kept_rank == 1 && params.kept_strides[0] == params.reduce_count));
  return MakeParamsKernel(node, params, EnqueueReduce, "LaunchReduce");
}

// ArgMax and ArgMin: the input viewed as [outer, axis_dim, inner].
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeArgReduce(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, out, DTypes({DType::kInt64})));
  const int64_t axis = IntAttr(node.attributes, "axis");
  const size_t rank = in.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside rank ", rank));
  }
  ASSIGN_OR_RETURN(const int64_t select_last, GetIntAttr(node.attributes, "select_last_index", 0));
  ArgReduceParams params;
  params.dtype = in.dtype;
  params.is_max = node.op_type == "ArgMax";
  params.select_last = select_last != 0;
  params.outer = Product(in.dims, 0, axis);
  params.axis_dim = in.dims[axis];
  params.inner = Product(in.dims, axis + 1, rank);
  RETURN_IF_ERROR(CheckElementCount(node, out, params.outer * params.inner));
  if (params.axis_dim == 0 && params.outer * params.inner > 0) {
    return Invalid(node, "the axis is empty: no index to return");
  }
  return MakeParamsKernel(node, params, EnqueueArgReduce, "LaunchArgReduce");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCumSum(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  RETURN_IF_ERROR(CheckElementCount(node, out, NumElements(in.dims)));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  ASSIGN_OR_RETURN(const int64_t exclusive, GetIntAttr(node.attributes, "exclusive", 0));
  ASSIGN_OR_RETURN(const int64_t reverse, GetIntAttr(node.attributes, "reverse", 0));
  const size_t rank = in.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside rank ", rank));
  }
  CumSumParams params;
  params.dtype = in.dtype;
  params.outer = Product(in.dims, 0, axis);
  params.axis_dim = in.dims[axis];
  params.inner = Product(in.dims, axis + 1, rank);
  params.exclusive = exclusive != 0;
  params.reverse = reverse != 0;
  return MakeParamsKernel(node, params, EnqueueCumSum, "LaunchCumSum");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeAddLayerNormKernel(const BoundGraph& graph,
                                                                     const BoundNode& layer_norm,
                                                                     bool write_sum) {
  // The plain kernel's checks of the node (dtypes, counts, attributes).
  RETURN_IF_ERROR(MakeLayerNorm(CudaKernelContext{graph, layer_norm}).status());
  ASSIGN_OR_RETURN(const LayerNormParams params, ReadLayerNormParams(graph, layer_norm));
  return std::make_unique<AddLayerNormKernel>(layer_norm, params, layer_norm.inputs.size() == 3,
                                              write_sum);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeMaskedSoftmaxKernel(const BoundGraph& graph,
                                                                      const FusedStep& step) {
  static_assert(kMaxMaskedSoftmaxRank == op_kernels_internal::kMaxSoftmaxMaskDims + 1);
  const BoundNode& softmax = graph.nodes[step.anchor];
  ASSIGN_OR_RETURN(SoftmaxParams params, ReadSoftmaxParams(graph, softmax));
  const Dims& dims = graph.value(step.inputs[0]).dims;
  if (params.inner != 1 || dims.size() < 2 || dims.size() > kMaxMaskedSoftmaxRank) {
    return Invalid(softmax, "a masked softmax is over the last axis of 2 to 5 dims");
  }
  if (step.softmax_has_mask) params.mask = MaskLayoutOver(graph.value(step.inputs[1]).dims, dims);
  params.nan_to_zero = step.softmax_nan_to_zero;
  return std::make_unique<MaskedSoftmaxKernel>(softmax, params, step.softmax_has_mask);
}

void AddNormalizationCudaKernels(CudaKernelDefs& defs) {
  const DTypeSet float32 = DTypes({DType::kFloat32});
  defs.push_back({"CumSum", DTypes({DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}),
                  MakeCumSum});
  defs.push_back({"LayerNormalization", kRowKernelDTypes, MakeLayerNorm});
  // Note [RMS normalization] in runtime/host/normalization_kernels.h.
  defs.push_back({"RMSNormalization", kRowKernelDTypes, MakeLayerNorm});
  defs.push_back({"InstanceNormalization", float32, MakeGroupNorm});
  defs.push_back({"GroupNormalization", float32, MakeGroupNorm});
  for (const ReduceOpInfo& info : kReduceOps) {
    defs.push_back({info.op_type, info.dtypes, MakeReduce});
  }
  for (const char* op : {"ArgMax", "ArgMin"}) {
    defs.push_back({op, kFloatsAndIntegers, MakeArgReduce});
  }
  defs.push_back({"Softmax", kRowKernelDTypes, MakeSoftmax});
  defs.push_back({"LogSoftmax", kRowKernelDTypes, MakeSoftmax});
  defs.push_back({"Hardmax", kFloatDTypes, MakeHardmax});
}

}  // namespace graphserve
