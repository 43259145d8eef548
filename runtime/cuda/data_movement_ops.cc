// The data movement family's CUDA kernels (runtime/ops/data_movement.cc):
// Expand, Transpose, Slice and Concat, the gathers and scatters, Tile,
// Trilu, OneHot, TopK, Resize and GridSample. Device code:
// op_kernels_layout.cu, op_kernels_unary.cu (the strided copy),
// op_kernels_data_movement.cu, op_kernels_resize.cu, op_kernels_grid_sample.cu.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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
#include "runtime/cuda/op_kernels.h"
#include "runtime/cuda/op_kernels_launch.h"
#include "runtime/data_movement_params.h"

namespace graphserve {
namespace {

using kernel_plan::BroadcastStrides;
using kernel_plan::CheckDType;
using kernel_plan::CheckSameDType;
using kernel_plan::ContiguousStrides;
using kernel_plan::DeviceInputs;
using kernel_plan::DeviceOutputs;
using kernel_plan::GetNodeValues;
using kernel_plan::Invalid;
using kernel_plan::MakeParamsKernel;
using kernel_plan::NodeKernel;
using kernel_plan::NodeValues;
using kernel_plan::Product;
using kernel_plan::StridedCopyParams;
using kernel_plan::UnaryKernel;
using op_kernels_internal::ConcatLaunch;
using op_kernels_internal::GatherElementsParams;
using op_kernels_internal::GatherNDParams;
using op_kernels_internal::GatherParams;
using op_kernels_internal::GridSampleParams;
using op_kernels_internal::kMaxConcatInputsPerLaunch;
using op_kernels_internal::OneHotParams;
using op_kernels_internal::ResizeParams;
using op_kernels_internal::ScatterElementsParams;
using op_kernels_internal::ScatterNDParams;
using op_kernels_internal::StridedLayout;
using op_kernels_internal::TiledTransposeParams;
using op_kernels_internal::TileParams;
using op_kernels_internal::TopKParams;
using op_kernels_internal::TriluParams;
using op_kernels_internal::UnaryParams;

cudaError_t EnqueueTiledTranspose(const TiledTransposeParams& params, DeviceInputs inputs,
                                  DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchTiledTranspose(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueGather(const GatherParams& params, DeviceInputs inputs,
                          DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGather(params, inputs[0],
                                           static_cast<const int64_t*>(inputs[1]), outputs[0],
                                           stream);
}

cudaError_t EnqueueGatherElements(const GatherElementsParams& params, DeviceInputs inputs,
                                  DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGatherElements(
      params, inputs[0], static_cast<const int64_t*>(inputs[1]), outputs[0], stream);
}

cudaError_t EnqueueGatherND(const GatherNDParams& params, DeviceInputs inputs,
                            DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGatherND(params, inputs[0],
                                             static_cast<const int64_t*>(inputs[1]), outputs[0],
                                             stream);
}

class ConcatKernel final : public NodeKernel {
 public:
  // launches[j] copies inputs first_input[j] .. first_input[j] + count - 1.
  ConcatKernel(const BoundNode& node, std::vector<ConcatLaunch> launches,
               std::vector<size_t> first_input)
      : NodeKernel(node), launches_(std::move(launches)), first_input_(std::move(first_input)) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    for (size_t j = 0; j < launches_.size(); ++j) {
      ConcatLaunch launch = launches_[j];
      for (int k = 0; k < launch.count; ++k) launch.inputs[k] = inputs[first_input_[j] + k];
      RETURN_IF_ERROR(LaunchStatus(op_kernels_internal::LaunchConcat(launch, outputs[0], stream),
                                   "LaunchConcat"));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<ConcatLaunch> launches_;
  std::vector<size_t> first_input_;
};

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeExpand(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, BroadcastStrides(node, in, out.dims));
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  return std::make_unique<UnaryKernel>(node, params, 0);
}

// A transpose with fewer rows or columns than this after merging dims moves
// through the strided map, not shared-memory tiles (MakeTranspose).
constexpr int64_t kMinTiledTransposeSide = 8;

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeTranspose(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const std::vector<int64_t>& perm = IntsAttr(node.attributes, "perm");
  const size_t rank = in.dims.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank && out.dims.size() == rank;
  for (size_t d = 0; valid && d < perm.size(); ++d) {
    valid = perm[d] >= 0 && static_cast<size_t>(perm[d]) < rank && !seen[perm[d]] &&
            out.dims[d] == in.dims[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("perm [", absl::StrJoin(perm, ","), "] does not map ",
                                      DimsToString(in.dims), " to ", DimsToString(out.dims)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  std::vector<int64_t> strides(rank);
  for (size_t d = 0; d < rank; ++d) strides[d] = in_strides[perm[d]];
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  // After merging, a swap of the two innermost dims is output [batch, rows,
  // cols] read with strides [rows * cols, 1, rows]: the strided map would
  // read with stride `rows`, so tile through shared memory instead. Unless
  // one side is thin: a 32 x 32 tile of 4 columns leaves 7 of 8 threads
  // idle (CaiT's talking heads move its 4 heads innermost and back, 96
  // transposes of 27 us at batch 8, a quarter of its kernel time on the
  // H200), while the strided map still reads whole sectors, `rows` apart.
  const StridedLayout& l = params.layout;
  const int r = l.rank;
  if (r == 2 || r == 3) {
    TiledTransposeParams tiled;
    tiled.elem_size = static_cast<int32_t>(DTypeSize(in.dtype));
    tiled.batch = r == 3 ? l.dims[0] : 1;
    tiled.rows = l.dims[r - 2];
    tiled.cols = l.dims[r - 1];
    const bool swaps_inner = l.strides[0][r - 2] == 1 && l.strides[0][r - 1] == tiled.rows &&
                             (r == 2 || l.strides[0][0] == tiled.rows * tiled.cols);
    const bool thin = std::min(tiled.rows, tiled.cols) < kMinTiledTransposeSide;
    if (swaps_inner && !thin && op_kernels_internal::TiledTransposeFits(tiled)) {
      return MakeParamsKernel(node, tiled, EnqueueTiledTranspose,
                              "LaunchTiledTranspose");
    }
  }
  return std::make_unique<UnaryKernel>(node, params, 0);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeSlice(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const std::vector<int64_t>& starts = IntsAttr(node.attributes, "starts");
  const std::vector<int64_t>& steps = IntsAttr(node.attributes, "steps");
  const size_t rank = in.dims.size();
  if (starts.size() != rank || steps.size() != rank || out.dims.size() != rank) {
    return Invalid(node, absl::StrCat("starts [", absl::StrJoin(starts, ","), "] and steps [",
                                      absl::StrJoin(steps, ","), "] must give one entry per dim of ",
                                      DimsToString(in.dims), " and ", DimsToString(out.dims)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  const bool empty = NumElements(out.dims) == 0;
  for (size_t d = 0; d < rank; ++d) {
    // Every element read must lie inside the input: the first and the last
    // index along each dim.
    const int64_t last = starts[d] + (out.dims[d] - 1) * steps[d];
    if (!empty && (steps[d] == 0 || starts[d] < 0 || starts[d] >= in.dims[d] || last < 0 ||
                   last >= in.dims[d])) {
      return Invalid(node, absl::StrCat("dim ", d, ": start ", starts[d], ", step ", steps[d],
                                        " and count ", out.dims[d], " leave the input dim ",
                                        in.dims[d]));
    }
    strides[d] = in_strides[d] * steps[d];
    base += starts[d] * in_strides[d];
  }
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  const int64_t base_bytes = empty ? 0 : base * static_cast<int64_t>(DTypeSize(in.dtype));
  return std::make_unique<UnaryKernel>(node, params, base_bytes);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeConcat(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, SIZE_MAX, 1, 1));
  const BoundValue& out = *v.outputs[0];
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = out.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside rank ", rank));
  }
  int64_t axis_total = 0;
  for (const BoundValue* in : v.inputs) {
    RETURN_IF_ERROR(CheckSameDType(node, *in, out));
    bool matches = in->dims.size() == rank;
    for (size_t d = 0; matches && d < rank; ++d) {
      matches = static_cast<int64_t>(d) == axis || in->dims[d] == out.dims[d];
    }
    if (!matches) {
      return Invalid(node, absl::StrCat("input '", in->name, "' ", DimsToString(in->dims),
                                        " does not fit output ", DimsToString(out.dims),
                                        " along axis ", axis));
    }
    axis_total += in->dims[axis];
  }
  if (axis_total != out.dims[axis]) {
    return Invalid(node, absl::StrCat("inputs add up to ", axis_total, " along axis ", axis,
                                      ", the output has ", out.dims[axis]));
  }
  const int64_t outer = Product(out.dims, 0, axis);
  const int64_t inner = Product(out.dims, axis + 1, rank);
  std::vector<ConcatLaunch> launches;
  std::vector<size_t> first_input;
  int64_t col = 0;
  for (size_t first = 0; first < v.inputs.size(); first += kMaxConcatInputsPerLaunch) {
    ConcatLaunch launch;
    launch.elem_size = static_cast<int32_t>(DTypeSize(out.dtype));
    launch.count = static_cast<int32_t>(
        std::min<size_t>(kMaxConcatInputsPerLaunch, v.inputs.size() - first));
    launch.outer = outer;
    launch.out_row = out.dims[axis] * inner;
    launch.col_begin = col;
    launch.col_start[0] = 0;
    for (int k = 0; k < launch.count; ++k) {
      launch.in_row[k] = v.inputs[first + k]->dims[axis] * inner;
      launch.col_start[k + 1] = launch.col_start[k] + launch.in_row[k];
    }
    launch.width = launch.col_start[launch.count];
    col += launch.width;
    if (launch.width == 0) continue;  // only empty inputs: nothing to copy
    launches.push_back(launch);
    first_input.push_back(first);
  }
  return std::make_unique<ConcatKernel>(node, std::move(launches), std::move(first_input));
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGather(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = data.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside data rank ", rank));
  }
  GatherParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.outer = Product(data.dims, 0, axis);
  params.axis_dim = data.dims[axis];
  params.num_indices = NumElements(indices.dims);
  params.inner = Product(data.dims, axis + 1, rank);
  Dims expected(data.dims.begin(), data.dims.begin() + axis);
  expected.insert(expected.end(), indices.dims.begin(), indices.dims.end());
  expected.insert(expected.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (expected != out.dims) {
    return Invalid(node, absl::StrCat("output ", DimsToString(out.dims), " should be ",
                                      DimsToString(expected)));
  }
  return MakeParamsKernel(node, params, EnqueueGather, "LaunchGather");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGatherElements(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = data.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank || indices.dims.size() != rank ||
      out.dims != indices.dims) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), ", output ",
                                      DimsToString(out.dims), " and axis ", axis, " disagree"));
  }
  GatherElementsParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.rank = static_cast<int32_t>(rank);
  params.axis = static_cast<int32_t>(axis);
  params.num_elements = NumElements(out.dims);
  params.axis_dim = data.dims[axis];
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  for (size_t d = 0; d < rank; ++d) {
    params.dims[d] = out.dims[d];
    params.data_strides[d] = strides[d];
  }
  return MakeParamsKernel(node, params, EnqueueGatherElements, "LaunchGatherElements");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGatherND(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t batch_dims, GetIntAttr(node.attributes, "batch_dims", 0));
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  const int64_t index_rank = static_cast<int64_t>(indices.dims.size());
  const int64_t count = index_rank == 0 ? 0 : indices.dims.back();
  if (index_rank < 1 || batch_dims < 0 || batch_dims >= index_rank || count < 1 ||
      batch_dims + count > rank) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), " and batch_dims ", batch_dims,
                                      " disagree"));
  }
  GatherNDParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.index_count = static_cast<int32_t>(count);
  params.batch = Product(data.dims, 0, batch_dims);
  params.tuples = Product(indices.dims, batch_dims, index_rank - 1);
  params.slice = Product(data.dims, batch_dims + count, rank);
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  params.data_batch_stride = Product(data.dims, batch_dims, rank);
  for (int64_t j = 0; j < count; ++j) {
    params.indexed_dims[j] = data.dims[batch_dims + j];
    params.indexed_strides[j] = strides[batch_dims + j];
  }
  if (NumElements(out.dims) != params.batch * params.tuples * params.slice) {
    return Invalid(node, absl::StrCat("output ", DimsToString(out.dims), " does not match"));
  }
  return MakeParamsKernel(node, params, EnqueueGatherND, "LaunchGatherND");
}

cudaError_t EnqueueTile(const TileParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                        cudaStream_t stream) {
  return op_kernels_internal::LaunchTile(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueTrilu(const TriluParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                         cudaStream_t stream) {
  return op_kernels_internal::LaunchTrilu(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueScatterND(const ScatterNDParams& params, DeviceInputs inputs,
                             DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchScatterND(
      params, inputs[0], static_cast<const int64_t*>(inputs[1]), inputs[2], outputs[0], stream);
}

cudaError_t EnqueueScatterElements(const ScatterElementsParams& params, DeviceInputs inputs,
                                   DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchScatterElements(
      params, inputs[0], static_cast<const int64_t*>(inputs[1]), inputs[2], outputs[0], stream);
}

cudaError_t EnqueueOneHot(const OneHotParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                          cudaStream_t stream) {
  return op_kernels_internal::LaunchOneHot(params, static_cast<const int64_t*>(inputs[0]),
                                           inputs[1], outputs[0], stream);
}

cudaError_t EnqueueTopK(const TopKParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                        cudaStream_t stream) {
  int64_t* indices = outputs.size() > 1 ? static_cast<int64_t*>(outputs[1]) : nullptr;
  return op_kernels_internal::LaunchTopK(params, inputs[0], outputs[0], indices, stream);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeTile(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  bool valid = in.dims.size() == out.dims.size();
  for (size_t d = 0; valid && d < in.dims.size(); ++d) {
    valid = in.dims[d] == 0 ? out.dims[d] == 0 : out.dims[d] % in.dims[d] == 0;
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("output ", DimsToString(out.dims),
                                      " does not repeat input ", DimsToString(in.dims)));
  }
  // A dim that is not repeated merges into its outer neighbour: output
  // coordinate c * n + c' of the pair, modulo the merged input dim m * n,
  // is (c mod m) * n + c', what the two dims read apart.
  Dims in_dims;
  Dims out_dims;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (!in_dims.empty() && out.dims[d] == in.dims[d]) {
      in_dims.back() *= in.dims[d];
      out_dims.back() *= in.dims[d];
    } else {
      in_dims.push_back(in.dims[d]);
      out_dims.push_back(out.dims[d]);
    }
  }
  TileParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(in.dtype));
  params.rank = static_cast<int32_t>(in_dims.size());
  params.num_elements = NumElements(out.dims);
  const std::vector<int64_t> strides = ContiguousStrides(in_dims);
  for (size_t d = 0; d < in_dims.size(); ++d) {
    params.in_dims[d] = in_dims[d];
    params.out_dims[d] = out_dims[d];
    params.in_strides[d] = strides[d];
  }
  return MakeParamsKernel(node, params, EnqueueTile, "LaunchTile");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeTrilu(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const size_t rank = in.dims.size();
  if (rank < 2 || out.dims != in.dims) {
    return Invalid(node, absl::StrCat("input ", DimsToString(in.dims), " and output ",
                                      DimsToString(out.dims), " should be one shape of rank >= 2"));
  }
  TriluParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(in.dtype));
  params.upper = IntAttr(node.attributes, "upper") != 0;
  params.k = IntAttr(node.attributes, "k");
  params.matrices = Product(in.dims, 0, rank - 2);
  params.rows = in.dims[rank - 2];
  params.cols = in.dims[rank - 1];
  if (params.k < -params.rows || params.k > params.cols) {
    return Invalid(node, absl::StrCat("k ", params.k, " is outside [", -params.rows, ", ",
                                      params.cols, "], where binding clamps it"));
  }
  return MakeParamsKernel(node, params, EnqueueTrilu, "LaunchTrilu");
}

// The canonical 'reduction' of a scatter on `dtype` data.
absl::StatusOr<ScatterReduction> ReductionOf(const BoundNode& node, DType dtype) {
  const int64_t value = IntAttr(node.attributes, "reduction");
  if (value < 0 || value >= kScatterReductionCount) {
    return Invalid(node, absl::StrCat("reduction ", value, " is not a ScatterReduction"));
  }
  const auto reduction = static_cast<ScatterReduction>(value);
  if (reduction != ScatterReduction::kNone && dtype == DType::kBool) {
    return Invalid(node, absl::StrCat("reduction '", kScatterReductionNames[value],
                                      "' on bool data"));
  }
  return reduction;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeScatterND(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 3, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& updates = *v.inputs[2];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckSameDType(node, data, updates));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionOf(node, data.dtype));
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  const int64_t count = indices.dims.empty() ? 0 : indices.dims.back();
  bool valid = count >= 1 && count <= rank && out.dims == data.dims;
  if (valid) {
    Dims expected(indices.dims.begin(), indices.dims.end() - 1);
    expected.insert(expected.end(), data.dims.begin() + count, data.dims.end());
    valid = updates.dims == expected;
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), ", updates ",
                                      DimsToString(updates.dims), " and output ",
                                      DimsToString(out.dims), " disagree"));
  }
  ScatterNDParams params;
  params.dtype = data.dtype;
  params.reduction = reduction;
  params.index_count = static_cast<int32_t>(count);
  params.data_elements = NumElements(data.dims);
  params.tuples = NumElements(indices.dims) / count;
  params.slice = Product(data.dims, count, rank);
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  for (int64_t j = 0; j < count; ++j) {
    params.indexed_dims[j] = data.dims[j];
    params.indexed_strides[j] = strides[j];
  }
  return MakeParamsKernel(node, params, EnqueueScatterND, "LaunchScatterND");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeScatterElements(
    const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 3, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& updates = *v.inputs[2];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckSameDType(node, data, updates));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionOf(node, data.dtype));
  const int64_t axis = IntAttr(node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  bool valid = axis >= 0 && axis < rank && indices.dims.size() == data.dims.size() &&
               updates.dims == indices.dims && out.dims == data.dims;
  for (int64_t d = 0; valid && d < rank; ++d) {
    valid = d == axis || indices.dims[d] <= data.dims[d];
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), ", updates ",
                                      DimsToString(updates.dims), ", output ",
                                      DimsToString(out.dims), " and axis ", axis, " disagree"));
  }
  ScatterElementsParams params;
  params.dtype = data.dtype;
  params.reduction = reduction;
  params.rank = static_cast<int32_t>(rank);
  params.axis = static_cast<int32_t>(axis);
  params.data_elements = NumElements(data.dims);
  params.num_updates = NumElements(indices.dims);
  params.axis_dim = data.dims[axis];
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  for (int64_t d = 0; d < rank; ++d) {
    params.dims[d] = indices.dims[d];
    params.data_strides[d] = strides[d];
  }
  return MakeParamsKernel(node, params, EnqueueScatterElements, "LaunchScatterElements");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeOneHot(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& indices = *v.inputs[0];
  const BoundValue& values = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  RETURN_IF_ERROR(CheckSameDType(node, values, out));
  const int64_t axis = IntAttr(node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(out.dims.size());
  Dims expected = out.dims;
  if (axis >= 0 && axis < rank) expected.erase(expected.begin() + axis);
  if (NumElements(values.dims) != 2 || axis < 0 || axis >= rank || expected != indices.dims) {
    return Invalid(node, absl::StrCat("indices ", DimsToString(indices.dims), ", values ",
                                      DimsToString(values.dims), ", output ",
                                      DimsToString(out.dims), " and axis ", axis, " disagree"));
  }
  OneHotParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(out.dtype));
  params.wrap_negative = IntAttr(node.attributes, "wrap_negative") != 0;
  params.outer = Product(out.dims, 0, axis);
  params.depth = out.dims[axis];
  params.inner = Product(out.dims, axis + 1, rank);
  return MakeParamsKernel(node, params, EnqueueOneHot, "LaunchOneHot");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeTopK(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 2));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& values = *v.outputs[0];
  const BoundValue* indices = v.outputs.size() > 1 ? v.outputs[1] : nullptr;
  RETURN_IF_ERROR(CheckSameDType(node, in, values));
  if (indices != nullptr) RETURN_IF_ERROR(CheckDType(node, *indices, DTypes({DType::kInt64})));
  const int64_t axis = IntAttr(node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(in.dims.size());
  bool valid = axis >= 0 && axis < rank && values.dims.size() == in.dims.size() &&
               (indices == nullptr || indices->dims == values.dims);
  for (int64_t d = 0; valid && d < rank; ++d) {
    valid = d == axis ? values.dims[d] <= in.dims[d] : values.dims[d] == in.dims[d];
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("input ", DimsToString(in.dims), ", outputs ",
                                      DimsToString(values.dims), " and axis ", axis,
                                      " disagree"));
  }
  TopKParams params;
  params.dtype = in.dtype;
  params.largest = IntAttr(node.attributes, "largest") != 0;
  params.outer = Product(in.dims, 0, axis);
  params.axis_dim = in.dims[axis];
  params.inner = Product(in.dims, axis + 1, rank);
  params.k = values.dims[axis];
  return MakeParamsKernel(node, params, EnqueueTopK, "LaunchTopK");
}

cudaError_t EnqueueResize(const ResizeParams& params, DeviceInputs inputs,
                          DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchResize(params, inputs[0],
                                           static_cast<const int64_t*>(inputs[1]),
                                           static_cast<const float*>(inputs[2]), outputs[0],
                                           stream);
}

// Resize: the tables are constants, so every index they hold is checked
// against the input here, once, rather than trusted on the device.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeResize(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 3, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& weights = *v.inputs[2];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  RETURN_IF_ERROR(CheckDType(node, weights, DTypes({DType::kFloat32})));
  const std::vector<int64_t>& axes = IntsAttr(node.attributes, "axes");
  const std::vector<int64_t>& taps = IntsAttr(node.attributes, "taps");
  const size_t rank = in.dims.size();
  if (!indices.is_constant() || !weights.is_constant() || out.dims.size() != rank ||
      rank > static_cast<size_t>(op_kernels_internal::kMaxRank) || axes.size() != taps.size()) {
    return Invalid(node, absl::StrCat("input ", DimsToString(in.dims), ", output ",
                                      DimsToString(out.dims), ", ", axes.size(), " axes and ",
                                      taps.size(), " tap counts do not make a Resize with "
                                      "constant tables"));
  }
  ResizeParams params;
  params.dtype = in.dtype;
  params.rank = static_cast<int32_t>(rank);
  params.resized = static_cast<int32_t>(axes.size());
  params.num_elements = NumElements(out.dims);
  params.extrapolation_value = FloatAttr(node.attributes, "extrapolation_value");
  const std::vector<int64_t> strides = ContiguousStrides(in.dims);
  for (size_t d = 0; d < rank; ++d) {
    params.out_dims[d] = out.dims[d];
    params.in_strides[d] = strides[d];
  }
  const int64_t* table = indices.constant->data<int64_t>();
  int64_t entries = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k];
    if (axis < 0 || static_cast<size_t>(axis) >= rank || taps[k] < 1) {
      return Invalid(node, absl::StrCat("axis ", axis, " with ", taps[k], " taps"));
    }
    params.axis[k] = static_cast<int32_t>(axis);
    params.taps[k] = taps[k];
    params.table_offset[k] = entries;
    params.combinations *= taps[k];
    const int64_t end = entries + out.dims[axis] * taps[k];
    for (int64_t e = entries; e < end && e < indices.constant->num_elements(); ++e) {
      if (table[e] < -1 || table[e] >= in.dims[axis]) {
        return Invalid(node, absl::StrCat("table index ", table[e], " is outside dim ", axis,
                                          " of ", DimsToString(in.dims)));
      }
    }
    entries = end;
  }
  if (NumElements(indices.dims) != entries || NumElements(weights.dims) != entries) {
    return Invalid(node, absl::StrCat("tables of ", NumElements(indices.dims), " and ",
                                      NumElements(weights.dims), " entries, expected ", entries));
  }
  return MakeParamsKernel(node, params, EnqueueResize, "LaunchResize");
}

cudaError_t EnqueueGridSample(const GridSampleParams& params, DeviceInputs inputs,
                              DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGridSample(params, inputs[0], inputs[1], outputs[0], stream);
}

// GridSample (Note [GridSample coordinates] in runtime/ops/grid_sample.cc).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGridSample(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& x = *v.inputs[0];
  const BoundValue& grid = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, x, out));
  RETURN_IF_ERROR(CheckDType(node, grid, kFloatDTypes));
  const std::optional<Dims> expected = GridSampleOutputDims(x.dims, grid.dims);
  if (!expected || out.dims != *expected) {
    return Invalid(
        node, absl::StrCat("X ", DimsToString(x.dims), ", grid ", DimsToString(grid.dims),
                           " and output ", DimsToString(out.dims), " do not make a GridSample"));
  }
  const int64_t spatial = static_cast<int64_t>(x.dims.size()) - 2;
  const int64_t interpolation = IntAttr(node.attributes, "interpolation");
  const int64_t padding = IntAttr(node.attributes, "padding");
  if (interpolation < 0 || interpolation > 2 || padding < 0 || padding > 2) {
    return Invalid(node, absl::StrCat("interpolation ", interpolation, " and padding ", padding,
                                      " should each be 0, 1 or 2"));
  }
  GridSampleParams params;
  params.dtype = x.dtype;
  params.grid_dtype = grid.dtype;
  params.interpolation = static_cast<GridInterpolation>(interpolation);
  params.padding = static_cast<GridPadding>(padding);
  params.align_corners = IntAttr(node.attributes, "align_corners") != 0;
  params.spatial = static_cast<int32_t>(spatial);
  params.batch = x.dims[0];
  params.channels = x.dims[1];
  params.points = Product(grid.dims, 1, grid.dims.size() - 1);
  for (int64_t s = 0; s < spatial; ++s) params.in_dims[s] = x.dims[2 + s];
  return MakeParamsKernel(node, params, EnqueueGridSample, "LaunchGridSample");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeExpandKernel(const BoundGraph& graph,
                                                               const BoundNode& node) {
  return MakeExpand(CudaKernelContext{graph, node});
}

void AddDataMovementCudaKernels(CudaKernelDefs& defs) {
  defs.push_back({"Concat", kAnyDType, MakeConcat});
  defs.push_back({"Expand", kAnyDType, MakeExpand});
  defs.push_back({"Gather", kAnyDType, MakeGather});
  defs.push_back({"GatherElements", kAnyDType, MakeGatherElements});
  defs.push_back({"GatherND", kAnyDType, MakeGatherND});
  defs.push_back({"Slice", kAnyDType, MakeSlice});
  defs.push_back({"Transpose", kAnyDType, MakeTranspose});
  defs.push_back({"Tile", kAnyDType, MakeTile});
  defs.push_back({"Trilu", kAnyDType, MakeTrilu});
  // Arithmetic reductions on bool are refused by binding and the factory.
  defs.push_back({"ScatterND", kAnyDType, MakeScatterND});
  defs.push_back({"ScatterElements", kAnyDType, MakeScatterElements});
  // Selected by the values' type (the indices are int64).
  defs.push_back({"OneHot", kAnyDType, MakeOneHot, /*typed_input=*/1});
  defs.push_back({"TopK", kAnyDType & ~DTypes({DType::kBool}), MakeTopK});
  defs.push_back({"Resize", kFloatDTypes, MakeResize});
  defs.push_back({"GridSample", kFloatDTypes, MakeGridSample});
}

}  // namespace graphserve
