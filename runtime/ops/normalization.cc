// Softmax, LayerNormalization, ReduceMean.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/normalization_kernels.cc and
// runtime/cuda/normalization_kernels.cc.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/normalization_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

absl::Status BindSoftmax(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kFloat32}));
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool flattens = ctx.opset() < 13;  // opset < 13: softmax over dims[axis:]
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", flattens ? 1 : -1));
  if (rank == 0) return ctx.Error("input should have rank >= 1, got a scalar");
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = Product(dims, 0, a);
  const int64_t axis_size = flattens ? Product(dims, a, dims.size()) : dims[a];
  const int64_t inner = flattens ? 1 : Product(dims, a + 1, dims.size());
  return ctx.EmitSimple({ctx.input(0)},
                        {{"outer", outer}, {"axis_size", axis_size}, {"inner", inner}},
                        DType::kFloat32, dims);
}

absl::Status BindLayerNorm(BindContext& ctx) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    RETURN_IF_ERROR(ctx.CheckDType(i, {DType::kFloat32}));
  }
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", -1));
  ASSIGN_OR_RETURN(float epsilon, ctx.FloatAttrOr("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = Product(dims, 0, a);
  const int64_t inner = Product(dims, a, dims.size());
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (NumElements(ctx.in_dims(i)) != inner) {
      return ctx.Error(i == 1 ? "Scale " : "B ", DimsToString(ctx.in_dims(i)), " should hold ",
                       inner, " elements (X ", DimsToString(dims), " normalised from axis ", axis,
                       ")");
    }
  }
  Dims stat_dims = dims;
  std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
  return ctx.EmitModelNode(
      ctx.op(), ctx.inputs(), {{"outer", outer}, {"inner", inner}, {"epsilon", epsilon}},
      {OutputSpec{"", DType::kFloat32, dims}, OutputSpec{"", DType::kFloat32, stat_dims},
       OutputSpec{"", DType::kFloat32, stat_dims}});
}

absl::Status BindReduceMean(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kFloat32}));
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t keepdims, ctx.IntAttrOr("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t noop_with_empty_axes, ctx.IntAttrOr("noop_with_empty_axes", 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, ctx.AxesOperand(18));
  std::vector<int64_t> axes;
  if (given && !given->empty()) {
    ASSIGN_OR_RETURN(axes, ctx.NormalizeAxes(*std::move(given), rank));
  } else if (noop_with_empty_axes != 0) {
    return ctx.EmitModelNode("Identity", {ctx.input(0)}, {},
                             {OutputSpec{"", DType::kFloat32, dims}});
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  Dims out;
  for (int64_t d = 0; d < rank; ++d) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
    if (!reduced) {
      out.push_back(dims[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  if (axes.empty()) {
    // A scalar input: nothing to reduce, the mean is the value itself.
    return ctx.EmitModelNode("Identity", {ctx.input(0)}, {},
                             {OutputSpec{"", DType::kFloat32, dims}});
  }
  return ctx.EmitSimple({ctx.input(0)},
                        {{"axes", std::move(axes)}, {"keepdims", int64_t{keepdims != 0}}},
                        DType::kFloat32, std::move(out));
}

// CumSum: the axis known at plan time (input 1), canonical as an attribute.
absl::Status BindCumSum(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64}));
  ASSIGN_OR_RETURN(std::vector<int64_t> axis_values, ctx.ConstantInts(1));
  if (axis_values.size() != 1) return ctx.Error("axis should hold one value");
  const int64_t rank = static_cast<int64_t>(ctx.in_dims(0).size());
  ASSIGN_OR_RETURN(const int64_t axis, ctx.NormalizeAxis(axis_values[0], rank, "axis"));
  ASSIGN_OR_RETURN(const int64_t exclusive, ctx.IntAttrOr("exclusive", 0));
  ASSIGN_OR_RETURN(const int64_t reverse, ctx.IntAttrOr("reverse", 0));
  return ctx.EmitSimple({ctx.input(0)},
                        {{"axis", axis}, {"exclusive", exclusive}, {"reverse", reverse}},
                        ctx.in_dtype(0), ctx.in_dims(0));
}

}  // namespace

void AddNormalizationOps(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{.name = "Softmax",
                      .family = "normalization",
                      .attributes = {"axis"},
                      .bind = BindSoftmax,
                      .host = HostSoftmax,
                      .summary = "both opset < 13 and >= 13 axis semantics"});
  ops.push_back(OpDef{.name = "LayerNormalization",
                      .family = "normalization",
                      .since_opset = 17,
                      .attributes = {"axis", "epsilon", "stash_type"},
                      .arity = {{1, {2, 3}}},
                      .bind = BindLayerNorm,
                      .host = HostLayerNormalization,
                      .kernel_inputs = {2, 3},
                      .kernel_max_outputs = 3,
                      .summary = "Mean and InvStdDev outputs"});
  ops.push_back(OpDef{.name = "ReduceMean",
                      .family = "normalization",
                      .attributes = {"axes", "keepdims", "noop_with_empty_axes"},
                      .arity = {{1, {1, 1}}, {18, {1, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindReduceMean,
                      .host = HostReduceMean,
                      .summary = "axes known at plan time"});
  ops.back().input_names = {"data", "axes"};
  ops.push_back(OpDef{.name = "CumSum",
                      .family = "normalization",
                      .since_opset = 11,
                      .attributes = {"exclusive", "reverse"},
                      .arity = {{1, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindCumSum,
                      .host = HostCumSum,
                      .summary = "float32, float64, int32, int64; axis known at plan time"});
  ops.back().input_names = {"x", "axis"};
}

}  // namespace graphserve
