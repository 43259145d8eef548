// Data movement ops.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/data_movement_kernels.cc and
// runtime/cuda/data_movement_kernels.cc.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/data_movement_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

absl::Status BindConstant(BindContext& ctx) {
  const Attributes& attrs = ctx.attrs();
  if (attrs.size() != 1) {
    return ctx.Error("expected exactly one value attribute, got ", attrs.size());
  }
  const auto& [name, attr] = *attrs.begin();
  if (name == "value") {
    if (const HostTensor* tensor = std::get_if<HostTensor>(&attr)) {
      return ctx.DefineConstantOutput(*tensor);
    }
  } else if (name == "value_float") {
    if (const float* v = std::get_if<float>(&attr)) {
      HostTensor tensor(DType::kFloat32, {});
      *tensor.data<float>() = *v;
      return ctx.DefineConstantOutput(std::move(tensor));
    }
  } else if (name == "value_floats") {
    if (const auto* v = std::get_if<std::vector<float>>(&attr)) {
      HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(v->size())});
      std::copy(v->begin(), v->end(), tensor.data<float>());
      return ctx.DefineConstantOutput(std::move(tensor));
    }
  } else if (name == "value_int") {
    if (const int64_t* v = std::get_if<int64_t>(&attr)) {
      HostTensor tensor(DType::kInt64, {});
      *tensor.data<int64_t>() = *v;
      return ctx.DefineConstantOutput(std::move(tensor));
    }
  } else if (name == "value_ints") {
    if (const auto* v = std::get_if<std::vector<int64_t>>(&attr)) {
      HostTensor tensor(DType::kInt64, {static_cast<int64_t>(v->size())});
      std::copy(v->begin(), v->end(), tensor.data<int64_t>());
      return ctx.DefineConstantOutput(std::move(tensor));
    }
  } else {
    return absl::UnimplementedError(absl::StrCat("node '", ctx.name(), "' (Constant): attribute '",
                                                 name, "' is not supported"));
  }
  return ctx.Error("attribute '", name, "' has the wrong type");
}

absl::Status BindShape(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t start, ctx.IntAttrOr("start", 0));
  ASSIGN_OR_RETURN(int64_t end, ctx.IntAttrOr("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  const int64_t count = std::max<int64_t>(0, end - start);
  HostTensor tensor(DType::kInt64, {count});
  for (int64_t i = 0; i < count; ++i) tensor.data<int64_t>()[i] = dims[start + i];
  return ctx.DefineConstantOutput(std::move(tensor));
}

// Size: the element count, an int64 scalar known at bind time.
absl::Status BindSize(BindContext& ctx) {
  HostTensor tensor(DType::kInt64, {});
  *tensor.data<int64_t>() = NumElements(ctx.in_dims(0));
  return ctx.DefineConstantOutput(std::move(tensor));
}

absl::Status BindConcat(BindContext& ctx) {
  if (ctx.attrs().count("axis") == 0) return ctx.Error("attribute 'axis' is required");
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  Dims dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
    const Dims& other = ctx.in_dims(i);
    bool compatible = other.size() == dims.size();
    for (int64_t d = 0; compatible && d < rank; ++d) {
      compatible = d == axis || other[d] == dims[d];
    }
    if (!compatible) {
      return ctx.Error("input ", i, " dims ", DimsToString(other), " do not match input 0 dims ",
                       DimsToString(ctx.in_dims(0)), " outside axis ", axis);
    }
    dims[axis] += other[axis];
  }
  // One input (TorchScript's GPT-2 appends each layer's keys and values to
  // an empty cache so) is that input: no copy, and no break in the chain the
  // executors fuse.
  if (ctx.num_inputs() == 1) return ctx.ForwardInput(0);
  return ctx.EmitSimple(ctx.inputs(), {{"axis", axis}}, ctx.in_dtype(0), std::move(dims));
}

absl::Status BindTranspose(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> reversed;
  for (int64_t d = rank - 1; d >= 0; --d) reversed.push_back(d);
  absl::StatusOr<std::vector<int64_t>> perm = ctx.IntsAttrOr("perm", reversed);
  if (!perm.ok()) return perm.status();
  std::vector<int64_t> sorted = *perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> identity(rank);
  for (int64_t d = 0; d < rank; ++d) identity[d] = d;
  if (sorted != identity) {
    return ctx.Error("perm [", absl::StrJoin(*perm, ","), "] is not a permutation of the input's ",
                     rank, " dims");
  }
  Dims out;
  for (int64_t p : *perm) out.push_back(dims[p]);
  return ctx.EmitSimple({ctx.input(0)}, {{"perm", *std::move(perm)}}, ctx.in_dtype(0),
                        std::move(out));
}

absl::Status BindSlice(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_axes = false;
  bool has_steps = false;
  if (ctx.opset() < 10) {
    if (ctx.attrs().count("starts") == 0 || ctx.attrs().count("ends") == 0) {
      return ctx.Error("attributes 'starts' and 'ends' are required at opset ", ctx.opset());
    }
    absl::StatusOr<std::vector<int64_t>> s = ctx.IntsAttrOr("starts", {});
    absl::StatusOr<std::vector<int64_t>> e = ctx.IntsAttrOr("ends", {});
    absl::StatusOr<std::vector<int64_t>> a = ctx.IntsAttrOr("axes", {});
    for (const auto* r : {&s, &e, &a}) {
      if (!r->ok()) return r->status();
    }
    starts = *s;
    ends = *e;
    has_axes = ctx.attrs().count("axes") != 0;
    axes = *a;
  } else {
    ASSIGN_OR_RETURN(starts, ctx.ConstantInts(1));
    ASSIGN_OR_RETURN(ends, ctx.ConstantInts(2));
    if (ctx.num_inputs() > 3 && ctx.input(3) != kOmitted) {
      has_axes = true;
      ASSIGN_OR_RETURN(axes, ctx.ConstantInts(3));
    }
    if (ctx.num_inputs() > 4) {
      has_steps = true;
      ASSIGN_OR_RETURN(steps, ctx.ConstantInts(4));
    }
  }
  if (ends.size() != starts.size()) {
    return ctx.Error("starts has ", starts.size(), " values, ends has ", ends.size());
  }
  if (!has_axes) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return ctx.Error("starts, ends, axes and steps should have one length, got ", starts.size(),
                     ", ", ends.size(), ", ", axes.size(), ", ", steps.size());
  }
  std::vector<int64_t> canonical_starts(rank, 0);
  std::vector<int64_t> canonical_steps(rank, 1);
  Dims out = dims;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t axis, ctx.NormalizeAxis(axes[i], rank, "axis"));
    if (seen[axis]) return ctx.Error("axis ", axis, " is sliced twice");
    seen[axis] = true;
    const int64_t step = steps[i];
    if (step == 0) return ctx.Error("step for axis ", axis, " is 0");
    const int64_t dim = dims[axis];
    int64_t start = starts[i];
    int64_t end = ends[i];
    // ONNX Slice: negative positions count from the end, then clamp to
    // [0, dim] for positive steps and [0, dim-1] / [-1, dim-1] for negative.
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count = 0;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      const int64_t magnitude =
          step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -step;
      count = start > end ? (start - end - 1) / magnitude + 1 : 0;
    }
    // An empty slice reads nothing; keep its start a valid index anyway.
    if (count == 0) start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    canonical_starts[axis] = start;
    canonical_steps[axis] = step;
    out[axis] = count;
  }
  return ctx.EmitSimple(
      {ctx.input(0)},
      {{"starts", std::move(canonical_starts)}, {"steps", std::move(canonical_steps)}},
      ctx.in_dtype(0), std::move(out));
}

// Split: one canonical Slice per output along `axis`. The sizes come from
// the 'split' attribute (before opset 13) or input 1 (from 13), else equal
// parts: as many as outputs, or num_outputs (opset 18), the last smaller
// when the axis does not divide.
absl::Status BindSplit(BindContext& ctx) {
  const Dims dims = ctx.in_dims(0);  // a copy: each Slice emitted adds values
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  const int64_t dim = dims[axis];
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13 && ctx.has_attr("split")) {
    ASSIGN_OR_RETURN(sizes, ctx.IntsAttrOr("split", {}));
  } else if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(sizes, ctx.ConstantInts(1));
  }
  const int64_t parts = static_cast<int64_t>(ctx.outputs().size());
  if (sizes.empty()) {
    ASSIGN_OR_RETURN(const int64_t num_outputs, ctx.IntAttrOr("num_outputs", parts));
    if (num_outputs < 1) return ctx.Error("num_outputs is ", num_outputs);
    // ONNX: ceil(dim / n) each, the last what is left.
    const int64_t each = (dim + num_outputs - 1) / num_outputs;
    for (int64_t i = 0, left = dim; i < num_outputs; ++i, left -= each) {
      sizes.push_back(std::clamp<int64_t>(left, 0, each));
    }
  }
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0) return ctx.Error("split [", absl::StrJoin(sizes, ","), "] has a negative size");
    total += size;
  }
  if (total != dim || static_cast<int64_t>(sizes.size()) < parts) {
    return ctx.Error("split [", absl::StrJoin(sizes, ","), "] does not cut axis ", axis,
                     " of length ", dim, " into ", parts, " outputs");
  }
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> starts(rank, 0);
    starts[axis] = std::min(start, std::max<int64_t>(dim - 1, 0));
    Dims out = dims;
    out[axis] = sizes[i];
    RETURN_IF_ERROR(ctx.EmitForOutput(i, "Slice", {ctx.input(0)},
                                      {{"starts", std::move(starts)},
                                       {"steps", std::vector<int64_t>(rank, 1)}},
                                      ctx.in_dtype(0), std::move(out)));
    start += sizes[i];
  }
  return absl::OkStatus();
}

// Range's start, limit and delta, input i's one element as T.
template <typename T>
T RangeScalar(const BindContext& ctx, size_t i) {
  return *ctx.in(i).constant->data<T>();
}

// An integer Range, exactly: its count and values in 128 bits, which hold
// any difference of two 64-bit values. Every value lies between start and
// limit, so it fits T.
template <typename T>
absl::StatusOr<HostTensor> IntegerRange(BindContext& ctx, DType dtype) {
  const T start = RangeScalar<T>(ctx, 0), limit = RangeScalar<T>(ctx, 1),
          delta = RangeScalar<T>(ctx, 2);
  if (delta == 0) return ctx.Error("delta is 0");
  const __int128 span = static_cast<__int128>(limit) - start;
  __int128 count = span / delta;
  if (span % delta != 0 && (span > 0) == (delta > 0)) ++count;  // ceil, not toward 0
  count = std::max<__int128>(count, 0);
  if (count > static_cast<__int128>(kMaxTensorBytes)) {
    return ctx.Error("range from ", start, " to ", limit, " by ", delta, " is too long");
  }
  ASSIGN_OR_RETURN(HostTensor tensor, ctx.NewConstant(dtype, {static_cast<int64_t>(count)}));
  T* data = tensor.data<T>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    data[i] = static_cast<T>(start + static_cast<__int128>(i) * delta);
  }
  return tensor;
}

// A float Range: start + i * delta in double, rounded through float for all
// but double itself (stash_type 1 computes the 16-bit floats in float).
template <typename T>
absl::StatusOr<HostTensor> FloatRange(BindContext& ctx, DType dtype) {
  const double start = Widen(RangeScalar<T>(ctx, 0)), limit = Widen(RangeScalar<T>(ctx, 1)),
               delta = Widen(RangeScalar<T>(ctx, 2));
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) {
    return ctx.Error("start ", start, ", limit ", limit, ", delta ", delta,
                     " do not make a finite range");
  }
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  // Checked before the conversion, which a count past int64 would make
  // undefined; the constant's bytes are bounded by NewConstant.
  if (count > static_cast<double>(kMaxTensorBytes)) {
    return ctx.Error("range of ", count, " elements is too long");
  }
  ASSIGN_OR_RETURN(HostTensor tensor, ctx.NewConstant(dtype, {static_cast<int64_t>(count)}));
  T* data = tensor.data<T>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    const double value = start + static_cast<double>(i) * delta;
    if constexpr (std::is_same_v<T, double>) {
      data[i] = value;
    } else {
      data[i] = static_cast<T>(static_cast<float>(value));
    }
  }
  return tensor;
}

// Range: start, limit and delta known at plan time (scalars of one type),
// so the output is a constant: ceil((limit - start) / delta) elements.
absl::Status BindRange(BindContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.is_constant(ctx.input(i)) || ctx.in(i).constant->num_elements() != 1) {
      return ctx.Unsupported("input ", i, " must be a scalar known at plan time");
    }
    RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  }
  const DType dtype = ctx.in_dtype(0);
  // stash_type (opset 27): 1, the default, computes the 16-bit floats'
  // range in float, as this rule does (in double, rounded through float);
  // 0 would accumulate in the 16-bit type itself.
  ASSIGN_OR_RETURN(const int64_t stash_type, ctx.IntAttrOr("stash_type", 1));
  if (stash_type != 1 && (dtype == DType::kFloat16 || dtype == DType::kBFloat16)) {
    return ctx.Unsupported("stash_type ", stash_type, " (accumulating in ", DTypeName(dtype),
                           ") is not implemented; 1 (float) is");
  }
  ASSIGN_OR_RETURN(HostTensor tensor,
                   VisitDType(dtype, [&](auto tag) -> absl::StatusOr<HostTensor> {
                     using T = typename decltype(tag)::Host;
                     if constexpr (std::is_same_v<T, bool>) {
                       return ctx.Error("bool is not a Range type");
                     } else if constexpr (std::is_integral_v<T>) {
                       return IntegerRange<T>(ctx, dtype);
                     } else {
                       return FloatRange<T>(ctx, dtype);
                     }
                   }));
  return ctx.DefineConstantOutput(std::move(tensor));
}

// ConstantOfShape: the shape known at plan time, so the output is a constant
// filled with the 'value' attribute's one element (float32 0 without it).
absl::Status BindConstantOfShape(BindContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstantInts(0));
  for (int64_t dim : shape) {
    if (dim < 0) return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has a negative dim");
  }
  HostTensor value(DType::kFloat32, {1});
  if (auto it = ctx.attrs().find("value"); it != ctx.attrs().end()) {
    const HostTensor* given = std::get_if<HostTensor>(&it->second);
    if (given == nullptr || given->num_elements() != 1) {
      return ctx.Error("attribute 'value' should be a tensor of one element");
    }
    value = *given;
  }
  ASSIGN_OR_RETURN(HostTensor tensor,
                   ctx.NewConstant(value.dtype(), Dims(shape.begin(), shape.end())));
  const size_t size = DTypeSize(value.dtype());
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    std::memcpy(static_cast<std::byte*>(tensor.raw()) + i * size, value.raw(), size);
  }
  return ctx.DefineConstantOutput(std::move(tensor));
}

absl::Status BindExpand(BindContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.ConstantInts(1));
  for (int64_t s : shape) {
    if (s < 0) return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has a negative dim");
  }
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.in_dims(0), shape));
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(dims));
}

absl::Status BindGather(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(1, {DType::kInt64}));
  const Dims& data = ctx.in_dims(0);
  const Dims& indices = ctx.in_dims(1);
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0) return ctx.Error("data should have rank >= 1, got a scalar");
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  const BoundValue& index_value = ctx.in(1);
  if (index_value.is_constant()) {
    const int64_t* idx = index_value.constant->data<int64_t>();
    for (int64_t i = 0; i < index_value.constant->num_elements(); ++i) {
      if (idx[i] < -data[axis] || idx[i] >= data[axis]) {
        return ctx.Error("index ", idx[i], " is out of range for axis ", axis, " of dims ",
                         DimsToString(data));
      }
    }
  }
  Dims out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, {{"axis", axis}}, ctx.in_dtype(0),
                        std::move(out));
}

// GatherElements: indices of the data's rank (int64, or int32 cast to it),
// the output of the indices' dims. Constant indices are checked here.
absl::Status BindGatherElements(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(1, {DType::kInt64, DType::kInt32}));
  const Dims data = ctx.in_dims(0);
  const Dims indices = ctx.in_dims(1);
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0 || indices.size() != data.size()) {
    return ctx.Error("data ", DimsToString(data), " and indices ", DimsToString(indices),
                     " should have one rank, at least 1");
  }
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices[d] > data[d]) {
      return ctx.Error("indices ", DimsToString(indices), " exceed data ", DimsToString(data),
                       " in dim ", d);
    }
  }
  ValueId index_id = ctx.input(1);
  if (ctx.in_dtype(1) == DType::kInt32) {
    ASSIGN_OR_RETURN(index_id, ctx.EmitHelper("indices_int64", "Cast", {index_id},
                                              {{"to", static_cast<int64_t>(DType::kInt64)}},
                                              DType::kInt64, indices));
  }
  if (ctx.is_constant(index_id)) {
    const HostTensor& constant = *ctx.value(index_id).constant;
    for (int64_t i = 0; i < constant.num_elements(); ++i) {
      const int64_t index = constant.data<int64_t>()[i];
      if (index < -data[axis] || index >= data[axis]) {
        return ctx.Error("index ", index, " is out of range for axis ", axis, " of dims ",
                         DimsToString(data));
      }
    }
  }
  return ctx.EmitSimple({ctx.input(0), index_id}, {{"axis", axis}}, ctx.in_dtype(0), indices);
}

// GatherND: int64 indices whose last dim indexes data dims after batch_dims;
// the output is indices.shape[:-1] + data.shape[batch_dims + k:].
absl::Status BindGatherND(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(1, {DType::kInt64}));
  const Dims data = ctx.in_dims(0);
  const Dims indices = ctx.in_dims(1);
  ASSIGN_OR_RETURN(const int64_t b, ctx.IntAttrOr("batch_dims", 0));
  const int64_t rank = static_cast<int64_t>(data.size());
  const int64_t index_rank = static_cast<int64_t>(indices.size());
  const int64_t count = index_rank == 0 ? 0 : indices.back();
  if (index_rank < 1 || b < 0 || b >= index_rank || b >= rank || count < 1 ||
      b + count > rank) {
    return ctx.Error("data ", DimsToString(data), ", indices ", DimsToString(indices),
                     " and batch_dims ", b, " do not make a GatherND");
  }
  for (int64_t d = 0; d < b; ++d) {
    if (data[d] != indices[d]) {
      return ctx.Error("batch dim ", d, " differs: data ", DimsToString(data), ", indices ",
                       DimsToString(indices));
    }
  }
  Dims out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + count, data.end());
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, {{"batch_dims", b}}, ctx.in_dtype(0),
                        std::move(out));
}

// The element count of `dims`, or an error when it overflows int64 (a Tile
// or OneHot whose plan-time operands ask for more than any memory holds).
absl::Status CheckCountable(const BindContext& ctx, const Dims& dims) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      return ctx.Error("output dims ", DimsToString(dims), " hold more than 2^63 elements");
    }
  }
  return absl::OkStatus();
}

// Tile: the repeats known at plan time; the canonical node keeps the input
// only, and its output dims are the input's times the repeats.
absl::Status BindTile(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  ASSIGN_OR_RETURN(const std::vector<int64_t> repeats, ctx.ConstantInts(1));
  if (repeats.size() != dims.size()) {
    return ctx.Error("repeats [", absl::StrJoin(repeats, ","), "] should have one entry per dim of ",
                     DimsToString(dims));
  }
  Dims out(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (repeats[d] < 0 || __builtin_mul_overflow(dims[d], repeats[d], &out[d])) {
      return ctx.Error("repeats [", absl::StrJoin(repeats, ","), "] has a negative or huge entry");
    }
  }
  RETURN_IF_ERROR(CheckCountable(ctx, out));
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(out));
}

// Trilu: the diagonal offset k known at plan time (0 when omitted),
// canonical as an attribute clamped to [-rows, cols], beyond which nothing
// changes: every element kept or every one zeroed.
absl::Status BindTrilu(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const size_t rank = dims.size();
  if (rank < 2) return ctx.Error("input should have rank >= 2, got ", DimsToString(dims));
  ASSIGN_OR_RETURN(const int64_t upper, ctx.IntAttrOr("upper", 1));
  int64_t k = 0;
  if (ctx.has_input(1)) {
    ASSIGN_OR_RETURN(const std::vector<int64_t> given, ctx.ConstantInts(1));
    if (given.size() != 1) {
      return ctx.Error("k should hold one value, got [", absl::StrJoin(given, ","), "]");
    }
    k = given[0];
  }
  k = std::clamp<int64_t>(k, -dims[rank - 2], dims[rank - 1]);
  return ctx.EmitSimple({ctx.input(0)}, {{"upper", int64_t{upper != 0}}, {"k", k}},
                        ctx.in_dtype(0), dims);
}

// The 'reduction' attribute of ScatterND and ScatterElements: none, add and
// mul from opset 16, max and min from 18; arithmetic on bool is refused.
absl::StatusOr<ScatterReduction> ReductionAttr(const BindContext& ctx) {
  ASSIGN_OR_RETURN(const std::string name, ctx.StringAttrOr("reduction", "none"));
  for (int64_t i = 0; i < kScatterReductionCount; ++i) {
    if (name != kScatterReductionNames[i]) continue;
    const auto reduction = static_cast<ScatterReduction>(i);
    if (reduction == ScatterReduction::kNone) return reduction;
    const bool extremum = reduction == ScatterReduction::kMax || reduction == ScatterReduction::kMin;
    const int64_t since = extremum ? 18 : 16;
    if (ctx.opset() < since) {
      return ctx.Error("reduction '", name, "' needs opset ", since, ", the model imports ",
                       ctx.opset());
    }
    if (ctx.in_dtype(0) == DType::kBool) {
      return ctx.Unsupported("reduction '", name, "' on bool data");
    }
    return reduction;
  }
  return ctx.Error("reduction '", name, "' is not one of none, add, mul, max, min");
}

// int64 indices: int32 ones are cast (one Cast node) so that kernels read
// one index type.
absl::StatusOr<ValueId> Int64Indices(BindContext& ctx, size_t input) {
  if (ctx.in_dtype(input) == DType::kInt64) return ctx.input(input);
  return ctx.EmitHelper("indices_int64", "Cast", {ctx.input(input)},
                        {{"to", static_cast<int64_t>(DType::kInt64)}}, DType::kInt64,
                        ctx.in_dims(input));
}

// ScatterND: int64 index tuples of length k = indices.shape[-1] address
// slices data.shape[k:] that updates (indices.shape[:-1] + data.shape[k:])
// replace or reduce into. Constant indices are checked here.
absl::Status BindScatterND(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(1, {DType::kInt64}));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 2));
  const Dims& data = ctx.in_dims(0);
  const Dims& indices = ctx.in_dims(1);
  const Dims& updates = ctx.in_dims(2);
  const int64_t rank = static_cast<int64_t>(data.size());
  const int64_t count = indices.empty() ? 0 : indices.back();
  if (count < 1 || count > rank) {
    return ctx.Error("indices ", DimsToString(indices), " should end in a tuple length in [1, ",
                     rank, "] for data ", DimsToString(data));
  }
  Dims expected(indices.begin(), indices.end() - 1);
  expected.insert(expected.end(), data.begin() + count, data.end());
  if (updates != expected) {
    return ctx.Error("updates ", DimsToString(updates), " should be ", DimsToString(expected),
                     " for data ", DimsToString(data), " and indices ", DimsToString(indices));
  }
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionAttr(ctx));
  if (ctx.is_constant(ctx.input(1))) {
    const HostTensor& constant = *ctx.in(1).constant;
    for (int64_t i = 0; i < constant.num_elements(); ++i) {
      const int64_t index = constant.data<int64_t>()[i];
      const int64_t dim = data[i % count];
      if (index < -dim || index >= dim) {
        return ctx.Error("index ", index, " is out of range for dim ", i % count, " of data ",
                         DimsToString(data));
      }
    }
  }
  return ctx.EmitSimple(ctx.inputs(), {{"reduction", static_cast<int64_t>(reduction)}},
                        ctx.in_dtype(0), data);
}

// ScatterElements: updates of the indices' dims (int64, or int32 cast to
// it); update i lands at its own coordinates with coordinate `axis` replaced
// by its index. Constant indices are checked here.
absl::Status BindScatterElements(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(1, {DType::kInt64, DType::kInt32}));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 2));
  const Dims data = ctx.in_dims(0);  // copies: the Cast emitted below adds values
  const Dims indices = ctx.in_dims(1);
  const int64_t rank = static_cast<int64_t>(data.size());
  if (rank == 0 || indices.size() != data.size() || ctx.in_dims(2) != indices) {
    return ctx.Error("data ", DimsToString(data), ", indices ", DimsToString(indices),
                     " and updates ", DimsToString(ctx.in_dims(2)),
                     " should have one rank, at least 1, and updates the indices' dims");
  }
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 0));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  for (int64_t d = 0; d < rank; ++d) {
    if (d != axis && indices[d] > data[d]) {
      return ctx.Error("indices ", DimsToString(indices), " exceed data ", DimsToString(data),
                       " in dim ", d);
    }
  }
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionAttr(ctx));
  const DType dtype = ctx.in_dtype(0);
  const ValueId data_id = ctx.input(0);
  const ValueId updates_id = ctx.input(2);
  ASSIGN_OR_RETURN(const ValueId index_id, Int64Indices(ctx, 1));
  if (ctx.is_constant(index_id)) {
    const HostTensor& constant = *ctx.value(index_id).constant;
    for (int64_t i = 0; i < constant.num_elements(); ++i) {
      const int64_t index = constant.data<int64_t>()[i];
      if (index < -data[axis] || index >= data[axis]) {
        return ctx.Error("index ", index, " is out of range for axis ", axis, " of data ",
                         DimsToString(data));
      }
    }
  }
  return ctx.EmitSimple({data_id, index_id, updates_id},
                        {{"axis", axis}, {"reduction", static_cast<int64_t>(reduction)}}, dtype,
                        data);
}

// DepthToSpace and SpaceToDepth move whole blocks: each is a Transpose of a
// 6-D view of its input (ONNX defines them so), bound as Reshape ->
// Transpose -> Reshape. The Reshapes are aliases on the GPU, so the op costs
// one Transpose kernel, and no kernel of its own is needed on either side.
absl::Status EmitBlockTranspose(BindContext& ctx, Dims view, std::vector<int64_t> perm,
                                Dims out) {
  const DType dtype = ctx.in_dtype(0);
  Dims moved_dims;
  for (int64_t p : perm) moved_dims.push_back(view[p]);
  ASSIGN_OR_RETURN(const ValueId blocks,
                   ctx.EmitHelper("blocks", "Reshape", {ctx.input(0)}, {}, dtype, view));
  ASSIGN_OR_RETURN(const ValueId moved,
                   ctx.EmitHelper("moved", "Transpose", {blocks}, {{"perm", std::move(perm)}},
                                  dtype, std::move(moved_dims)));
  return ctx.EmitModelNode("Reshape", {moved}, {}, {OutputSpec{"", dtype, std::move(out)}});
}

// The required 'blocksize' of DepthToSpace and SpaceToDepth, at least 1.
absl::StatusOr<int64_t> BlockSize(const BindContext& ctx) {
  if (!ctx.has_attr("blocksize")) return ctx.Error("attribute 'blocksize' is required");
  ASSIGN_OR_RETURN(const int64_t blocksize, ctx.IntAttrOr("blocksize", 1));
  if (blocksize < 1) return ctx.Error("blocksize ", blocksize, " should be at least 1");
  return blocksize;
}

absl::Status BindDepthToSpace(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  if (dims.size() != 4) return ctx.Error("input should be [N, C, H, W], got ", DimsToString(dims));
  ASSIGN_OR_RETURN(const int64_t b, BlockSize(ctx));
  if (ctx.opset() < 11 && ctx.has_attr("mode")) {
    return ctx.Error("attribute 'mode' needs opset 11, the model imports ", ctx.opset());
  }
  ASSIGN_OR_RETURN(const std::string mode, ctx.StringAttrOr("mode", "DCR"));
  const int64_t n = dims[0], c = dims[1], h = dims[2], w = dims[3];
  int64_t block = 0;  // b * b
  if (__builtin_mul_overflow(b, b, &block) || c % block != 0) {
    return ctx.Error("channels ", c, " are not a multiple of blocksize ", b, " squared");
  }
  const int64_t depth = c / block;
  Dims out = {n, depth, h * b, w * b};
  // Output [n, depth, h, b, w, b] reads channel (b1 * b + b2) * depth + c'
  // (DCR: depth, then column, then row within the block) or
  // (c' * b + b1) * b + b2 (CRD: row, column, then depth).
  if (mode == "DCR") {
    return EmitBlockTranspose(ctx, {n, b, b, depth, h, w}, {0, 3, 4, 1, 5, 2}, std::move(out));
  }
  if (mode == "CRD") {
    return EmitBlockTranspose(ctx, {n, depth, b, b, h, w}, {0, 1, 4, 2, 5, 3}, std::move(out));
  }
  return ctx.Error("mode '", mode, "' is neither DCR nor CRD");
}

absl::Status BindSpaceToDepth(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  if (dims.size() != 4) return ctx.Error("input should be [N, C, H, W], got ", DimsToString(dims));
  ASSIGN_OR_RETURN(const int64_t b, BlockSize(ctx));
  if (ctx.opset() < 28 && ctx.has_attr("mode")) {
    return ctx.Error("attribute 'mode' needs opset 28, the model imports ", ctx.opset());
  }
  ASSIGN_OR_RETURN(const std::string mode, ctx.StringAttrOr("mode", "DCR"));
  const int64_t n = dims[0], c = dims[1], h = dims[2], w = dims[3];
  if (h % b != 0 || w % b != 0) {
    return ctx.Error("height ", h, " and width ", w, " are not multiples of blocksize ", b);
  }
  const Dims view = {n, c, h / b, b, w / b, b};
  const Dims out = {n, c * b * b, h / b, w / b};
  // The inverse of DepthToSpace in the same mode: channel (b1 * b + b2) * c
  // + c' (DCR) or (c' * b + b1) * b + b2 (CRD, opset 28).
  if (mode == "DCR") return EmitBlockTranspose(ctx, view, {0, 3, 5, 1, 2, 4}, out);
  if (mode == "CRD") return EmitBlockTranspose(ctx, view, {0, 1, 3, 5, 2, 4}, out);
  return ctx.Error("mode '", mode, "' is neither DCR nor CRD");
}

// The one value of constant input `input`, of any numeric type, as an
// integer: OneHot's depth, which ONNX casts to int64 (truncating) when it is
// a float.
absl::StatusOr<int64_t> ConstantCount(const BindContext& ctx, size_t input) {
  const BoundValue& v = ctx.in(input);
  if (!v.is_constant() || v.constant->num_elements() != 1 || v.dtype == DType::kBool) {
    return ctx.Error("input ", input, " '", v.name,
                     "' should be one number known at plan time, got ", DTypeName(v.dtype), " ",
                     DimsToString(v.dims));
  }
  const double value = VisitDType(v.dtype, [&](auto tag) {
    return static_cast<double>(Widen(*v.constant->data<typename decltype(tag)::Host>()));
  });
  constexpr double kLimit = 9.2e18;  // below 2^63: the truncation stays in int64
  if (!(std::fabs(value) < kLimit)) return ctx.Error("input ", input, " is ", value);
  return static_cast<int64_t>(value);
}

// OneHot: depth known at plan time; indices of any numeric type, cast to
// int64 (truncating, as ONNX says) when they are not; the output of the
// values' type with depth inserted at `axis`. Indices outside [-depth,
// depth) (opset 11; [0, depth) before, as OneHot-9 says) give a row of off
// values. ONNX Runtime departs from the spec on both points (measured with
// onnxruntime 1.31: it wraps negative indices at opset 9 too, and compares
// float indices uncast, so -2.5 matches nothing where the spec's cast makes
// it -2); GraphServe follows the spec.
absl::Status BindOneHot(BindContext& ctx) {
  if (ctx.in_dtype(0) == DType::kBool) return ctx.Error("indices should be numbers, got bool");
  ASSIGN_OR_RETURN(const int64_t depth, ConstantCount(ctx, 1));
  if (depth < 0) return ctx.Error("depth ", depth, " is negative");
  if (NumElements(ctx.in_dims(2)) != 2) {
    return ctx.Error("values should hold [off, on], got dims ", DimsToString(ctx.in_dims(2)));
  }
  const Dims indices = ctx.in_dims(0);
  const int64_t out_rank = static_cast<int64_t>(indices.size()) + 1;
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", -1));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, out_rank, "axis"));
  Dims out = indices;
  out.insert(out.begin() + axis, depth);
  RETURN_IF_ERROR(CheckCountable(ctx, out));
  const DType dtype = ctx.in_dtype(2);
  const ValueId values_id = ctx.input(2);
  ASSIGN_OR_RETURN(const ValueId index_id, Int64Indices(ctx, 0));
  return ctx.EmitSimple({index_id, values_id},
                        {{"axis", axis}, {"wrap_negative", int64_t{ctx.opset() >= 11}}}, dtype,
                        std::move(out));
}

// TopK: k known at plan time (an attribute before opset 10, input 1 from
// it), canonical as the output dims; outputs the values and their int64
// indices. The output is always sorted: 'sorted' = 0 leaves the order
// undefined, which sorted order satisfies.
absl::Status BindTopK(BindContext& ctx) {
  if (ctx.in_dtype(0) == DType::kBool) return ctx.Error("input should be numbers, got bool");
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (rank == 0) return ctx.Error("input should have rank >= 1, got a scalar");
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", -1));
  ASSIGN_OR_RETURN(axis, ctx.NormalizeAxis(axis, rank, "axis"));
  int64_t k = 0;
  if (ctx.opset() < 10) {
    if (!ctx.has_attr("k")) return ctx.Error("attribute 'k' is required at opset ", ctx.opset());
    ASSIGN_OR_RETURN(k, ctx.IntAttrOr("k", 0));
  } else {
    if (ctx.has_attr("k")) return ctx.Error("attribute 'k' is input 1 from opset 10");
    ASSIGN_OR_RETURN(const std::vector<int64_t> given, ctx.ConstantInts(1));
    if (given.size() != 1) {
      return ctx.Error("K should hold one value, got [", absl::StrJoin(given, ","), "]");
    }
    k = given[0];
  }
  if (ctx.opset() < 11 && (ctx.has_attr("largest") || ctx.has_attr("sorted"))) {
    return ctx.Error("attributes 'largest' and 'sorted' need opset 11, the model imports ",
                     ctx.opset());
  }
  ASSIGN_OR_RETURN(const int64_t largest, ctx.IntAttrOr("largest", 1));
  if (k < 0 || k > dims[axis]) {
    return ctx.Error("k ", k, " is outside [0, ", dims[axis], "] for axis ", axis, " of ",
                     DimsToString(dims));
  }
  Dims out = dims;
  out[axis] = k;
  return ctx.EmitModelNode(ctx.op(), {ctx.input(0)},
                           {{"axis", axis}, {"largest", int64_t{largest != 0}}},
                           {OutputSpec{"", ctx.in_dtype(0), out},
                            OutputSpec{"", DType::kInt64, out}});
}

absl::Status BindReshape(BindContext& ctx) {
  const Dims& in = ctx.in_dims(0);
  std::vector<int64_t> shape;
  if (ctx.opset() < 5) {
    absl::StatusOr<std::vector<int64_t>> attr = ctx.IntsAttrOr("shape", {});
    if (!attr.ok()) return attr.status();
    shape = *std::move(attr);
  } else {
    ASSIGN_OR_RETURN(shape, ctx.ConstantInts(1));
  }
  ASSIGN_OR_RETURN(int64_t allowzero, ctx.IntAttrOr("allowzero", 0));
  Dims out(shape.size());
  int64_t inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t s = shape[i];
    if (s == 0 && allowzero == 0) {
      if (i >= in.size()) {
        return ctx.Error("shape [", absl::StrJoin(shape, ","), "] copies dim ", i,
                         " of the input, which has only ", in.size(), " dims ", DimsToString(in));
      }
      out[i] = in[i];
    } else if (s == -1) {
      if (inferred >= 0) {
        return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has more than one -1");
      }
      inferred = static_cast<int64_t>(i);
      continue;
    } else if (s < -1) {
      return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has invalid dim ", s);
    } else {
      out[i] = s;
    }
    // A shape from a model file may claim more elements than int64 counts
    // (found by fuzz/onnx_model_fuzz: the product overflowed).
    if (out[i] != 0 && known > std::numeric_limits<int64_t>::max() / out[i]) {
      return ctx.Error("shape [", absl::StrJoin(shape, ","),
                       "] has more elements than an int64 counts");
    }
    known *= out[i];
  }
  const int64_t total = NumElements(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      return ctx.Error("cannot infer the -1 in shape [", absl::StrJoin(shape, ","),
                       "] for input dims ", DimsToString(in), " (", total, " elements)");
    }
    out[inferred] = total / known;
  }
  if (NumElements(out) != total) {
    return ctx.Error("shape [", absl::StrJoin(shape, ","), "] gives dims ", DimsToString(out),
                     " with ", NumElements(out), " elements, the input dims ", DimsToString(in),
                     " have ", total);
  }
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(out));
}

absl::Status BindFlatten(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntAttrOr("axis", 1));
  if (axis < -rank || axis > rank) {
    return ctx.Error("axis ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ",
                     rank, "])");
  }
  if (axis < 0) axis += rank;
  const size_t a = static_cast<size_t>(axis);
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0),
                        {Product(dims, 0, a), Product(dims, a, dims.size())});
}

absl::Status BindSqueeze(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  const int64_t rank = static_cast<int64_t>(dims.size());
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, ctx.AxesOperand(13));
  std::vector<int64_t> axes;
  if (given && !given->empty()) {
    ASSIGN_OR_RETURN(axes, ctx.NormalizeAxes(*std::move(given), rank));
    for (int64_t axis : axes) {
      if (dims[axis] != 1) {
        return ctx.Error("cannot squeeze axis ", axis, " of dims ", DimsToString(dims),
                         ": its size is ", dims[axis], ", expected 1");
      }
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (dims[d] == 1) axes.push_back(d);
    }
  }
  Dims out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(dims[d]);
  }
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(out));
}

absl::Status BindUnsqueeze(BindContext& ctx) {
  const Dims& dims = ctx.in_dims(0);
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, ctx.AxesOperand(13));
  if (!given || given->empty()) return ctx.Error("axes are required and must be non-empty");
  const int64_t out_rank = static_cast<int64_t>(dims.size() + given->size());
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.NormalizeAxes(*std::move(given), out_rank));
  Dims out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::binary_search(axes.begin(), axes.end(), d)) {
      out.push_back(1);
    } else {
      out.push_back(dims[next++]);
    }
  }
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), std::move(out));
}

// Identity is its input, with no node (BindContext::ForwardInput) unless
// it makes a graph output. Folded, an Identity of a constant copied it:
// TorchScript's ALBERT reads its shared weights through an Identity in every
// layer, and its xxlarge default (0.8 GB of weights) folded 4.6 GB of copies,
// past binding's folding bound (Note [Folding bound] in runtime/bind.cc).
absl::Status BindIdentity(BindContext& ctx) { return ctx.ForwardInput(0); }

}  // namespace

void AddDataMovementOps(std::vector<OpDef>& ops) {
  const std::vector<ArityChange> one = {{1, {1, 1}}};
  ops.push_back(OpDef{.name = "Constant",
                      .family = "data_movement",
                      .attributes = {"value", "value_float", "value_floats", "value_int",
                                     "value_ints", "sparse_value", "value_string", "value_strings"},
                      .arity = {{1, {0, 0}}},
                      .bind = BindConstant,
                      .host = nullptr,
                      .kernel_inputs = {0, 0},
                      .summary = "folded at bind time"});
  ops.push_back(OpDef{.name = "Shape",
                      .family = "data_movement",
                      .attributes = {"start", "end"},
                      .arity = one,
                      .bind = BindShape,
                      .host = nullptr,
                      .summary = "folded at bind time"});
  ops.push_back(OpDef{.name = "Size",
                      .family = "data_movement",
                      .arity = one,
                      .bind = BindSize,
                      .host = nullptr,
                      .summary = "folded at bind time"});
  ops.push_back(OpDef{.name = "Identity",
                      .family = "data_movement",
                      .arity = one,
                      .bind = BindIdentity,
                      .host = HostReinterpret,
                      .summary = "an alias of its input"});
  ops.push_back(OpDef{.name = "Reshape",
                      .family = "data_movement",
                      .attributes = {"allowzero"},
                      .arity = {{1, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindReshape,
                      .host = HostReinterpret,
                      .summary = "shape known at plan time; an alias of its input"});
  ops.back().input_names = {"data", "shape"};
  ops.push_back(OpDef{.name = "Flatten",
                      .family = "data_movement",
                      .attributes = {"axis"},
                      .arity = one,
                      .bind = BindFlatten,
                      .host = HostReinterpret,
                      .summary = "an alias of its input"});
  ops.push_back(OpDef{.name = "Squeeze",
                      .family = "data_movement",
                      .attributes = {"axes"},
                      .arity = {{1, {1, 1}}, {13, {1, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindSqueeze,
                      .host = HostReinterpret,
                      .summary = "an alias of its input"});
  ops.back().input_names = {"data", "axes"};
  ops.push_back(OpDef{.name = "Unsqueeze",
                      .family = "data_movement",
                      .attributes = {"axes"},
                      .arity = {{1, {1, 1}}, {13, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindUnsqueeze,
                      .host = HostReinterpret,
                      .summary = "an alias of its input"});
  ops.back().input_names = {"data", "axes"};
  ops.push_back(OpDef{.name = "Concat",
                      .family = "data_movement",
                      .attributes = {"axis"},
                      .arity = {{1, {1, kVariadicInputs}}},
                      .bind = BindConcat,
                      .host = HostConcat,
                      .kernel_inputs = {1, kVariadicInputs},
                      .summary = "any dtype"});
  ops.push_back(OpDef{.name = "Transpose",
                      .family = "data_movement",
                      .attributes = {"perm"},
                      .arity = one,
                      .bind = BindTranspose,
                      .host = HostTranspose,
                      .summary = "any dtype; moving only dims of extent 1 is an alias"});
  ops.push_back(OpDef{.name = "Slice",
                      .family = "data_movement",
                      .attributes = {"starts", "ends", "axes"},
                      .arity = {{1, {1, 1}}, {10, {3, 5}}},
                      .plan_time_operands = {1, 2, 3, 4},
                      .omissible_input = 3,
                      .bind = BindSlice,
                      .host = HostSlice,
                      .summary = "starts/ends/axes/steps known at plan time; negative steps"});
  ops.back().input_names = {"data", "starts", "ends", "axes", "steps"};
  ops.push_back(OpDef{.name = "Expand",
                      .family = "data_movement",
                      .since_opset = 8,
                      .arity = {{1, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindExpand,
                      .host = HostExpand,
                      .summary = "shape known at plan time"});
  ops.back().input_names = {"input", "shape"};
  ops.push_back(OpDef{.name = "Split",
                      .family = "data_movement",
                      .since_opset = 2,
                      .attributes = {"axis", "split", "num_outputs"},
                      .arity = {{1, {1, 1}}, {13, {1, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindSplit,
                      .summary = "sizes known at plan time; one Slice per output"});
  ops.back().input_names = {"input", "split"};
  ops.push_back(OpDef{.name = "Range",
                      .family = "data_movement",
                      .since_opset = 11,
                      .attributes = {"stash_type"},
                      .arity = {{1, {3, 3}}},
                      .plan_time_operands = {0, 1, 2},
                      .bind = BindRange,
                      .summary = "start, limit, delta known at plan time: a constant"});
  ops.back().input_names = {"start", "limit", "delta"};
  ops.push_back(OpDef{.name = "ConstantOfShape",
                      .family = "data_movement",
                      .since_opset = 9,
                      .attributes = {"value"},
                      .plan_time_operands = {0},
                      .bind = BindConstantOfShape,
                      .summary = "shape known at plan time: a constant"});
  ops.back().input_names = {"input"};
  ops.push_back(OpDef{.name = "Gather",
                      .family = "data_movement",
                      .attributes = {"axis"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindGather,
                      .host = HostGather,
                      .kernel_inputs = {2, 2},
                      .summary = "int64 indices, negative allowed; one index of a leading "
                                 "block is a view"});
  ops.push_back(OpDef{.name = "GatherElements",
                      .family = "data_movement",
                      .since_opset = 11,
                      .attributes = {"axis"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindGatherElements,
                      .host = HostGatherElements,
                      .kernel_inputs = {2, 2},
                      .summary = "any dtype; int64 or int32 indices, negative allowed"});
  ops.push_back(OpDef{.name = "GatherND",
                      .family = "data_movement",
                      .since_opset = 12,
                      .attributes = {"batch_dims"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindGatherND,
                      .host = HostGatherND,
                      .kernel_inputs = {2, 2},
                      .summary = "any dtype; batch_dims; negative indices allowed"});
  ops.push_back(OpDef{.name = "Tile",
                      .family = "data_movement",
                      .since_opset = 6,
                      .arity = {{1, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindTile,
                      .host = HostTile,
                      .summary = "any dtype; repeats known at plan time"});
  ops.back().input_names = {"input", "repeats"};
  ops.push_back(OpDef{.name = "Trilu",
                      .family = "data_movement",
                      .since_opset = 14,
                      .attributes = {"upper"},
                      .arity = {{1, {1, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindTrilu,
                      .host = HostTrilu,
                      .summary = "any dtype; k known at plan time"});
  ops.back().input_names = {"input", "k"};
  ops.push_back(OpDef{.name = "ScatterND",
                      .family = "data_movement",
                      .since_opset = 11,
                      .attributes = {"reduction"},
                      .arity = {{1, {3, 3}}},
                      .bind = BindScatterND,
                      .host = HostScatterND,
                      .kernel_inputs = {3, 3},
                      .summary = "any dtype; reduction none, add, mul, max, min (not on bool); "
                                 "negative indices allowed"});
  ops.back().input_names = {"data", "indices", "updates"};
  ops.push_back(OpDef{.name = "ScatterElements",
                      .family = "data_movement",
                      .since_opset = 11,
                      .attributes = {"axis", "reduction"},
                      .arity = {{1, {3, 3}}},
                      .bind = BindScatterElements,
                      .host = HostScatterElements,
                      .kernel_inputs = {3, 3},
                      .summary = "any dtype; int64 or int32 indices, negative allowed; reduction "
                                 "none, add, mul, max, min (not on bool)"});
  ops.back().input_names = {"data", "indices", "updates"};
  ops.push_back(OpDef{.name = "DepthToSpace",
                      .family = "data_movement",
                      .attributes = {"blocksize", "mode"},
                      .arity = one,
                      .bind = BindDepthToSpace,
                      .summary = "any dtype; DCR and CRD; a Transpose of a 6-D view"});
  ops.push_back(OpDef{.name = "SpaceToDepth",
                      .family = "data_movement",
                      .attributes = {"blocksize", "mode"},
                      .arity = one,
                      .bind = BindSpaceToDepth,
                      .summary = "any dtype; DCR and CRD (opset 28); a Transpose of a 6-D view"});
  ops.push_back(OpDef{.name = "OneHot",
                      .family = "data_movement",
                      .since_opset = 9,
                      .attributes = {"axis"},
                      .arity = {{1, {3, 3}}},
                      .plan_time_operands = {1},
                      .bind = BindOneHot,
                      .host = HostOneHot,
                      .kernel_inputs = {2, 2},
                      .summary = "values of any dtype; numeric indices (cast to int64); depth "
                                 "known at plan time"});
  ops.back().input_names = {"indices", "depth", "values"};
  ops.push_back(OpDef{.name = "TopK",
                      .family = "data_movement",
                      .attributes = {"axis", "k", "largest", "sorted"},
                      .arity = {{1, {1, 1}}, {10, {2, 2}}},
                      .plan_time_operands = {1},
                      .bind = BindTopK,
                      .host = HostTopK,
                      .kernel_max_outputs = 2,
                      .summary = "numeric dtypes; K known at plan time; always sorted, ties to "
                                 "the lower index, NaN above every number"});
  ops.back().input_names = {"X", "K"};
  AddResizeOps(ops);
  AddGridSampleOp(ops);
}

}  // namespace graphserve
