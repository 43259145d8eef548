// Softmax, LogSoftmax, Hardmax, LayerNormalization, RMSNormalization,
// InstanceNormalization, GroupNormalization, the Reduce* ops, ArgMax and ArgMin, CumSum.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/normalization_kernels.cc and
// runtime/cuda/normalization_ops.cc.

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

const std::vector<DType> kFloatTypes = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                        DType::kFloat64};

// Softmax, LogSoftmax and Hardmax: canonical attrs outer, axis_size, inner;
// the output has the input's dtype and dims.
absl::Status EmitOverAxis(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool flattens = ctx.opset() < 13;  // opset < 13: over dims[axis:]
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", flattens ? 1 : -1));
  if (rank == 0) return ctx.Error("input should have rank >= 1, got a scalar");
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = Product(dims, 0, a);
  const int64_t axis_size = flattens ? Product(dims, a, dims.size()) : dims[a];
  const int64_t inner = flattens ? 1 : Product(dims, a + 1, dims.size());
  return ctx.EmitSimple({ctx.input(0)},
                        {{"outer", outer}, {"axis_size", axis_size}, {"inner", inner}},
                        ctx.in_dtype(0), dims);
}

// Softmax and LogSoftmax.
absl::Status BindSoftmax(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  return EmitOverAxis(ctx);
}

absl::Status BindHardmax(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  return EmitOverAxis(ctx);
}

// X, Scale and B of one float type; Mean and InvStdDev in the stash type,
// float32 (stash_type 1, ONNX's default and what exporters write).
absl::Status BindLayerNorm(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  ASSIGN_OR_RETURN(const int64_t stash_type, ctx.IntAttrOr("stash_type", 1));
  if (stash_type != 1) {
    return ctx.Error("stash_type ", stash_type,
                     " is not supported: Mean and InvStdDev are computed in float32 (1)");
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
      {OutputSpec{"", ctx.in_dtype(0), dims}, OutputSpec{"", DType::kFloat32, stat_dims},
       OutputSpec{"", DType::kFloat32, stat_dims}});
}

// RMSNormalization (Note [RMS normalization] in
// runtime/host/normalization_kernels.h): LayerNormalization's canonical form
// without B. Scale broadcasts to X (unidirectionally); binding hands the
// kernels `inner` elements of X's dtype, so a Scale that broadcasts within
// X[axis:] is expanded and one of another float type cast.
absl::Status BindRmsNorm(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  RETURN_IF_ERROR(ctx.CheckDType(1, kFloatTypes));
  ASSIGN_OR_RETURN(const int64_t stash_type, ctx.IntAttrOr("stash_type", 1));
  if (stash_type != 1) {
    return ctx.Unsupported("stash_type ", stash_type,
                           ": the statistics are computed in float32 (1) only");
  }
  const DType dtype = ctx.in_dtype(0);
  const Dims dims = ctx.in_dims(0);
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", -1));
  ASSIGN_OR_RETURN(const float epsilon, ctx.FloatAttrOr("epsilon", 1e-5f));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, static_cast<int64_t>(dims.size()), "axis"));
  const Dims normalized(dims.begin() + axis, dims.end());
  const int64_t inner = NumElements(normalized);
  // Scale's dims before X[axis:] must be 1: one scale per row is not a
  // LayerNormalization row and no exporter writes it.
  Dims scale_dims = ctx.in_dims(1);
  while (scale_dims.size() > normalized.size() && scale_dims.front() == 1) {
    scale_dims.erase(scale_dims.begin());
  }
  if (BroadcastPair(scale_dims, normalized) != normalized) {
    return ctx.Unsupported("Scale ", DimsToString(ctx.in_dims(1)),
                           " should broadcast to the normalised dims ", DimsToString(normalized),
                           " (X ", DimsToString(dims), ", axis ", axis, ")");
  }
  ValueId scale = ctx.input(1);
  if (ctx.in_dtype(1) != dtype) {
    ASSIGN_OR_RETURN(scale, ctx.EmitHelper("cast_scale", "Cast", {scale},
                                           {{"to", static_cast<int64_t>(dtype)}}, dtype,
                                           ctx.in_dims(1)));
  }
  if (NumElements(scale_dims) != inner) {
    if (scale_dims != ctx.in_dims(1)) {
      ASSIGN_OR_RETURN(scale, ctx.EmitHelper("scale_view", "Reshape", {scale}, {}, dtype,
                                             scale_dims));
    }
    ASSIGN_OR_RETURN(scale,
                     ctx.EmitHelper("expand_scale", "Expand", {scale}, {}, dtype, normalized));
  }
  return ctx.EmitSimple({ctx.input(0), scale},
                        {{"outer", Product(dims, 0, static_cast<size_t>(axis))},
                         {"inner", inner},
                         {"epsilon", epsilon}},
                        dtype, dims);
}

// InstanceNormalization and GroupNormalization (Note [Group normalization]
// in runtime/host/normalization_kernels.h): X [N, C, spatial...], scale and
// B of `affine` elements each.
absl::Status EmitGroupNorm(BindContext& ctx, int64_t groups, bool affine_per_group) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    RETURN_IF_ERROR(ctx.CheckDType(i, {DType::kFloat32}));
  }
  const Dims& dims = ctx.in_dims(0);
  if (dims.size() < 2) {
    return ctx.Error("X should have rank >= 2 (N, C, spatial...), got ", DimsToString(dims));
  }
  const int64_t channels = dims[1];
  if (groups <= 0 || channels % groups != 0) {
    return ctx.Error("num_groups ", groups, " should be positive and divide the ", channels,
                     " channels");
  }
  const int64_t affine = affine_per_group ? groups : channels;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    if (NumElements(ctx.in_dims(i)) != affine) {
      return ctx.Error(i == 1 ? "scale " : "B ", DimsToString(ctx.in_dims(i)), " should hold ",
                       affine, " elements, one per ", affine_per_group ? "group" : "channel",
                       " (X ", DimsToString(dims), ")");
    }
  }
  ASSIGN_OR_RETURN(const float epsilon, ctx.FloatAttrOr("epsilon", 1e-5f));
  return ctx.EmitSimple(ctx.inputs(),
                        {{"batch", dims[0]},
                         {"channels", channels},
                         {"groups", groups},
                         {"spatial", Product(dims, 2, dims.size())},
                         {"epsilon", epsilon},
                         {"affine_per_group", int64_t{affine_per_group}}},
                        DType::kFloat32, dims);
}

// InstanceNormalization: a group per channel.
absl::Status BindInstanceNorm(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  return EmitGroupNorm(ctx, dims.size() < 2 ? 1 : dims[1], /*affine_per_group=*/false);
}

// GroupNormalization: scale and bias per group at opset 18, per channel from
// 21. stash_type (21) names the precision of the statistics; both executors
// keep them in float64 (Note [Group normalization]), which meets float32 (1)
// and float64 (11); a narrower one would round differently, so it is refused.
absl::Status BindGroupNorm(BindContext& ctx) {
  if (!ctx.has_attr("num_groups")) return ctx.Error("attribute num_groups is required");
  ASSIGN_OR_RETURN(const int64_t groups, ctx.IntAttrOr("num_groups", 0));
  ASSIGN_OR_RETURN(const int64_t stash_type, ctx.IntAttrOr("stash_type", 1));
  if (stash_type != 1 && stash_type != 11) {
    return ctx.Unsupported("stash_type ", stash_type,
                           ": statistics are kept in float64, which meets 1 (float32) and 11 "
                           "(float64) only");
  }
  return EmitGroupNorm(ctx, groups, /*affine_per_group=*/ctx.opset() < 21);
}

// What binding knows of each Reduce* op (Note [Reductions] in
// runtime/host/normalization_kernels.h).
struct ReduceOpInfo {
  const char* name;
  HostKernel host;
  // ReduceSum's axes became an input at opset 13, the others' at 18.
  int64_t axes_input_since;
  // The op takes int32 and int64 besides the float types.
  bool integers;
  // Reducing one element gives the element itself, so an empty reduction
  // binds as Identity.
  bool one_element_is_itself;
};

constexpr ReduceOpInfo kReduceOps[] = {
    {"ReduceSum", HostReduceSum, 13, true, true},
    {"ReduceMean", HostReduceMean, 18, false, true},
    {"ReduceProd", HostReduceProd, 18, true, true},
    {"ReduceMax", HostReduceMax, 18, true, true},
    {"ReduceMin", HostReduceMin, 18, true, true},
    {"ReduceL1", HostReduceL1, 18, true, false},
    {"ReduceL2", HostReduceL2, 18, false, false},
    {"ReduceSumSquare", HostReduceSumSquare, 18, true, false},
    {"ReduceLogSum", HostReduceLogSum, 18, false, false},
    {"ReduceLogSumExp", HostReduceLogSumExp, 18, false, true},
};

const ReduceOpInfo& ReduceInfo(const std::string& op) {
  for (const ReduceOpInfo& info : kReduceOps) {
    if (op == info.name) return info;
  }
  return kReduceOps[0];  // unreachable: only the ops above bind with BindReduce
}

// The Reduce* ops: axes from the attribute or the input (by opset), sorted
// and non-negative; none given reduces every axis, or nothing with
// noop_with_empty_axes.
absl::Status BindReduce(BindContext& ctx) {
  const ReduceOpInfo& info = ReduceInfo(ctx.op());
  std::vector<DType> allowed = kFloatTypes;
  if (info.integers) allowed.insert(allowed.end(), {DType::kInt64, DType::kInt32});
  RETURN_IF_ERROR(ctx.CheckDType(0, std::move(allowed)));
  const DType dtype = ctx.in_dtype(0);
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t keepdims, ctx.IntAttrOr("keepdims", 1));
  ASSIGN_OR_RETURN(int64_t noop_with_empty_axes, ctx.IntAttrOr("noop_with_empty_axes", 0));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given,
                   ctx.AxesOperand(info.axes_input_since));
  std::vector<int64_t> axes;
  if (given && !given->empty()) {
    ASSIGN_OR_RETURN(axes, ctx.NormalizeAxes(*std::move(given), rank));
  } else if (noop_with_empty_axes == 0) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (axes.empty() && info.one_element_is_itself) {
    return ctx.EmitModelNode("Identity", {ctx.input(0)}, {}, {OutputSpec{"", dtype, dims}});
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
  return ctx.EmitSimple({ctx.input(0)},
                        {{"axes", std::move(axes)}, {"keepdims", int64_t{keepdims != 0}}}, dtype,
                        std::move(out));
}

// ArgMax and ArgMin: one axis, to int64; canonical attrs axis (non-negative),
// keepdims, select_last_index.
absl::Status BindArgReduce(BindContext& ctx) {
  std::vector<DType> allowed = kFloatTypes;
  allowed.insert(allowed.end(), {DType::kInt64, DType::kInt32});
  RETURN_IF_ERROR(ctx.CheckDType(0, std::move(allowed)));
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return ctx.Error("input should have rank >= 1, got a scalar");
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  ASSIGN_OR_RETURN(const int64_t keepdims, ctx.IntAttrOr("keepdims", 1));
  ASSIGN_OR_RETURN(const int64_t select_last_index, ctx.IntAttrOr("select_last_index", 0));
  if (select_last_index != 0 && select_last_index != 1) {
    return ctx.Error("attribute select_last_index should be 0 or 1, got ", select_last_index);
  }
  Dims out = dims;
  if (keepdims != 0) {
    out[axis] = 1;
  } else {
    out.erase(out.begin() + axis);
  }
  if (dims[axis] == 0 && NumElements(out) > 0) {
    return ctx.Error("axis ", axis, " of ", DimsToString(dims), " is empty: no index to return");
  }
  return ctx.EmitSimple({ctx.input(0)},
                        {{"axis", axis},
                         {"keepdims", int64_t{keepdims != 0}},
                         {"select_last_index", select_last_index}},
                        DType::kInt64, std::move(out));
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
                      .summary = "float16, bfloat16, float32, float64 (in float32 or wider); "
                                 "both opset < 13 and >= 13 axis semantics"});
  ops.push_back(OpDef{.name = "LogSoftmax",
                      .family = "normalization",
                      .attributes = {"axis"},
                      .bind = BindSoftmax,
                      .host = HostLogSoftmax,
                      .summary = "float16, bfloat16, float32, float64; both opset < 13 and >= 13 "
                                 "axis semantics; x - max - log(sum(exp(x - max)))"});
  ops.push_back(OpDef{.name = "Hardmax",
                      .family = "normalization",
                      .attributes = {"axis"},
                      .bind = BindHardmax,
                      .host = HostHardmax,
                      .summary = "float16, bfloat16, float32, float64; both opset < 13 and >= 13 "
                                 "axis semantics; the first maximum (or NaN) wins"});
  ops.push_back(OpDef{.name = "LayerNormalization",
                      .family = "normalization",
                      .since_opset = 17,
                      .attributes = {"axis", "epsilon", "stash_type"},
                      .arity = {{1, {2, 3}}},
                      .bind = BindLayerNorm,
                      .host = HostLayerNormalization,
                      .kernel_inputs = {2, 3},
                      .kernel_max_outputs = 3,
                      .summary = "float16, bfloat16, float32, float64, statistics in float32; "
                                 "Mean and InvStdDev outputs"});
  ops.push_back(OpDef{.name = "RMSNormalization",
                      .family = "normalization",
                      .since_opset = 23,
                      .attributes = {"axis", "epsilon", "stash_type"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindRmsNorm,
                      .host = HostRMSNormalization,
                      .kernel_inputs = {2, 2},
                      .summary = "float16, bfloat16, float32, float64, statistics in float32; "
                                 "Scale broadcast within X[axis:]"});
  ops.back().input_names = {"X", "scale"};
  ops.push_back(OpDef{.name = "InstanceNormalization",
                      .family = "normalization",
                      .attributes = {"epsilon"},
                      .arity = {{1, {3, 3}}},
                      .bind = BindInstanceNorm,
                      .host = HostGroupNormalization,
                      .kernel_inputs = {3, 3},
                      .summary = "float32; statistics in float64"});
  ops.back().input_names = {"input", "scale", "B"};
  ops.push_back(OpDef{.name = "GroupNormalization",
                      .family = "normalization",
                      .since_opset = 18,
                      .attributes = {"epsilon", "num_groups", "stash_type"},
                      .arity = {{1, {3, 3}}},
                      .bind = BindGroupNorm,
                      .host = HostGroupNormalization,
                      .kernel_inputs = {3, 3},
                      .summary = "float32; scale and bias per group (18) or per channel (21); "
                                 "stash_type 1 or 11; statistics in float64"});
  ops.back().input_names = {"X", "scale", "bias"};
  for (const ReduceOpInfo& info : kReduceOps) {
    ops.push_back(OpDef{
        .name = info.name,
        .family = "normalization",
        .attributes = {"axes", "keepdims", "noop_with_empty_axes"},
        .arity = {{1, {1, 1}}, {info.axes_input_since, {1, 2}}},
        .plan_time_operands = {1},
        .bind = BindReduce,
        .host = info.host,
        .summary = absl::StrCat("float16, bfloat16, float32, float64",
                                info.integers ? ", int64, int32" : "",
                                "; axes known at plan time")});
    ops.back().input_names = {"data", "axes"};
  }
  for (auto [name, host] : {std::pair<const char*, HostKernel>{"ArgMax", HostArgMax},
                            {"ArgMin", HostArgMin}}) {
    ops.push_back(OpDef{.name = name,
                        .family = "normalization",
                        .attributes = {"axis", "keepdims", "select_last_index"},
                        .bind = BindArgReduce,
                        .host = host,
                        .summary = "float16, bfloat16, float32, float64, int64, int32; output "
                                   "int64; the first NaN wins"});
  }
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
