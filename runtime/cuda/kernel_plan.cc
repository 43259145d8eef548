#include "runtime/cuda/kernel_plan.h"

#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"

namespace graphserve::kernel_plan {

using op_kernels_internal::kMaxRank;
using op_kernels_internal::StridedLayout;
using op_kernels_internal::UnaryOp;
using op_kernels_internal::UnaryParams;

std::string NodeContext(const BoundNode& node) {
  return absl::StrCat("op '", node.name, "' (", node.op_type, ")");
}

namespace {

absl::Status NodeError(absl::StatusCode code, const BoundNode& node, absl::string_view message) {
  return absl::Status(code, absl::StrCat(NodeContext(node), ": ", message));
}

}  // namespace

absl::Status Invalid(const BoundNode& node, absl::string_view message) {
  return NodeError(absl::StatusCode::kInvalidArgument, node, message);
}

absl::Status Unsupported(const BoundNode& node, absl::string_view message) {
  return NodeError(absl::StatusCode::kUnimplemented, node, message);
}

std::vector<int64_t> ContiguousStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * dims[d - 1];
  return strides;
}

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t d = begin; d < end; ++d) product *= dims[d];
  return product;
}

absl::StatusOr<NodeValues> GetNodeValues(const BoundGraph& graph, const BoundNode& node,
                                         size_t min_inputs, size_t max_inputs,
                                         size_t min_outputs, size_t max_outputs) {
  if (node.inputs.size() < min_inputs || node.inputs.size() > max_inputs) {
    return Invalid(node, absl::StrCat("expected ", min_inputs, "..", max_inputs,
                                      " inputs, got ", node.inputs.size()));
  }
  if (node.outputs.size() < min_outputs || node.outputs.size() > max_outputs) {
    return Invalid(node, absl::StrCat("expected ", min_outputs, "..", max_outputs,
                                      " outputs, got ", node.outputs.size()));
  }
  NodeValues values;
  auto check = [&](ValueId id, bool optional) -> absl::StatusOr<const BoundValue*> {
    if (id < 0 && optional) return nullptr;
    if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) {
      return Invalid(node, absl::StrCat("value id ", id, " out of range"));
    }
    const BoundValue& value = graph.value(id);
    if (value.dims.size() > static_cast<size_t>(kMaxRank)) {
      return Unsupported(node, absl::StrCat("value '", value.name, "' has rank ",
                                            value.dims.size(), "; the kernels index at most ",
                                            kMaxRank, " dims"));
    }
    for (int64_t dim : value.dims) {
      if (dim < 0) {
        return Invalid(node, absl::StrCat("value '", value.name, "' has dims ",
                                          DimsToString(value.dims), "; bound dims are concrete"));
      }
    }
    return &value;
  };
  for (ValueId id : node.inputs) {
    ASSIGN_OR_RETURN(const BoundValue* value, check(id, /*optional=*/false));
    values.inputs.push_back(value);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ASSIGN_OR_RETURN(const BoundValue* value, check(node.outputs[i], /*optional=*/i > 0));
    values.outputs.push_back(value);
  }
  return values;
}

absl::Status CheckDType(const BoundNode& node, const BoundValue& value, DTypeSet allowed) {
  if (Contains(allowed, value.dtype)) return absl::OkStatus();
  return Unsupported(node, absl::StrCat("no kernel for dtype ", DTypeName(value.dtype),
                                        " of value '", value.name, "'"));
}

absl::Status CheckSameDType(const BoundNode& node, const BoundValue& a, const BoundValue& b) {
  if (a.dtype == b.dtype) return absl::OkStatus();
  return Invalid(node, absl::StrCat("values '", a.name, "' (", DTypeName(a.dtype), ") and '",
                                    b.name, "' (", DTypeName(b.dtype),
                                    ") must share a dtype"));
}

absl::Status CheckElementCount(const BoundNode& node, const BoundValue& value, int64_t expected) {
  if (NumElements(value.dims) == expected) return absl::OkStatus();
  return Invalid(node, absl::StrCat("value '", value.name, "' has dims ",
                                    DimsToString(value.dims), ", expected ", expected,
                                    " elements"));
}

absl::StatusOr<std::vector<int64_t>> BroadcastStrides(const BoundNode& node,
                                                      const BoundValue& input, const Dims& out) {
  const Dims& in = input.dims;
  if (in.size() > out.size()) {
    return Invalid(node, absl::StrCat("input '", input.name, "' ", DimsToString(in),
                                      " has more dims than the output ", DimsToString(out)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in);
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i]) {
      strides[lead + i] = in_strides[i];
    } else if (in[i] != 1) {
      return Invalid(node, absl::StrCat("input '", input.name, "' ", DimsToString(in),
                                        " does not broadcast to ", DimsToString(out)));
    }
  }
  return strides;
}

StridedDims MergeDims(const std::vector<int64_t>& dims,
                      const std::vector<std::vector<int64_t>>& strides) {
  StridedDims merged;
  merged.strides.resize(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool mergeable = !merged.dims.empty();
    for (size_t k = 0; k < strides.size() && mergeable; ++k) {
      mergeable = merged.strides[k].back() == strides[k][d] * dims[d];
    }
    if (mergeable) {
      merged.dims.back() *= dims[d];
      for (size_t k = 0; k < strides.size(); ++k) merged.strides[k].back() = strides[k][d];
    } else {
      merged.dims.push_back(dims[d]);
      for (size_t k = 0; k < strides.size(); ++k) merged.strides[k].push_back(strides[k][d]);
    }
  }
  if (merged.dims.empty()) {
    merged.dims.push_back(1);
    for (auto& s : merged.strides) s.push_back(1);
  }
  return merged;
}

StridedLayout MakeLayout(const Dims& out_dims,
                         const std::vector<std::vector<int64_t>>& input_strides) {
  StridedLayout layout;
  layout.num_elements = NumElements(out_dims);
  layout.index32 = layout.num_elements <= INT32_MAX;
  const StridedDims merged = MergeDims(out_dims, input_strides);
  // Merging never increases the rank, which the caller has bounded.
  layout.rank = static_cast<int32_t>(merged.dims.size());
  layout.contiguous = merged.dims.size() == 1;
  for (size_t d = 0; d < merged.dims.size(); ++d) layout.dims[d] = merged.dims[d];
  for (size_t k = 0; k < input_strides.size(); ++k) {
    for (size_t d = 0; d < merged.dims.size(); ++d) {
      layout.strides[k][d] = merged.strides[k][d];
    }
    layout.contiguous = layout.contiguous && merged.strides[k][0] == 1;
  }
  return layout;
}

UnaryParams StridedCopyParams(DType dtype, const Dims& out_dims, std::vector<int64_t> in_strides) {
  UnaryParams params;
  params.op = UnaryOp::kCopy;
  params.input_type = params.output_type = dtype;
  params.layout = MakeLayout(out_dims, {std::move(in_strides)});
  return params;
}

NodeKernel::NodeKernel(const BoundNode& node)
    : context_(NodeContext(node)),
      num_inputs_(node.inputs.size()),
      num_outputs_(node.outputs.size()) {}

absl::Status NodeKernel::CheckArity(absl::Span<const void* const> inputs,
                                    absl::Span<void* const> outputs) const {
  if (inputs.size() == num_inputs_ && outputs.size() == num_outputs_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(context_, ": Enqueue got ", inputs.size(), " inputs and ", outputs.size(),
                   " outputs, the node has ", num_inputs_, " and ", num_outputs_));
}

absl::Status NodeKernel::LaunchStatus(cudaError_t error, absl::string_view call) const {
  return AnnotateStatus(CudaErrorToStatus(error, call), context_);
}

absl::Status UnaryKernel::Enqueue(absl::Span<const void* const> inputs,
                                  absl::Span<void* const> outputs, cudaStream_t stream) const {
  RETURN_IF_ERROR(CheckArity(inputs, outputs));
  const void* input = static_cast<const std::byte*>(inputs[0]) + input_offset_bytes_;
  return LaunchStatus(op_kernels_internal::LaunchUnary(params_, input, outputs[0], stream),
                      "LaunchUnary");
}

}  // namespace graphserve::kernel_plan
