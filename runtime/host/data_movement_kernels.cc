#include "runtime/host/data_movement_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {

namespace {

// ---------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------

// Product of dims[begin, end).
int64_t DimsProduct(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t d = begin; d < end; ++d) product *= dims[d];
  return product;
}

// Identity, Reshape, Flatten, Squeeze, Unsqueeze: the same bytes, new dims.
absl::Status RunReinterpret(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  RETURN_IF_ERROR(RequireSameElementCount(args, args.in(0), args.out(0)));
  if (args.in(0).bytes() > 0) {
    std::memcpy(args.out(0).raw(), args.in(0).raw(), args.in(0).bytes());
  }
  return absl::OkStatus();
}

absl::Status RunConcat(const HostKernelArgs& args) {
  HostTensor& out = args.out(0);
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(out.dims().size());
  if (axis < 0 || axis >= rank) {
    return args.Invalid("axis ", axis, " out of range for output ", DimsToString(out.dims()));
  }
  int64_t axis_total = 0;
  for (const HostTensor* in : args.inputs) {
    RETURN_IF_ERROR(RequireSameDType(args, *in, out));
    bool matches = static_cast<int64_t>(in->dims().size()) == rank;
    for (int64_t d = 0; matches && d < rank; ++d) {
      matches = d == axis || in->dims()[d] == out.dims()[d];
    }
    if (!matches) {
      return args.Invalid("input ", DimsToString(in->dims()), " does not fit output ",
                          DimsToString(out.dims()), " on axis ", axis);
    }
    axis_total += in->dims()[axis];
  }
  if (axis_total != out.dims()[axis]) {
    return args.Invalid("inputs sum to ", axis_total, " on axis ", axis, ", output has ",
                        out.dims()[axis]);
  }
  // Each input contributes one contiguous block of bytes per outer index.
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out.dims()[d];
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* in : args.inputs) {
      const size_t block = in->bytes() / static_cast<size_t>(outer);
      if (block == 0) continue;
      std::memcpy(dst, static_cast<const std::byte*>(in->raw()) + o * block, block);
      dst += block;
    }
  }
  return absl::OkStatus();
}

absl::Status RunTranspose(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  const std::vector<int64_t>& perm = IntsAttr(args.node.attributes, "perm");
  const size_t rank = in.dims().size();
  bool valid = perm.size() == rank && out.dims().size() == rank;
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; valid && d < rank; ++d) {
    valid = perm[d] >= 0 && perm[d] < static_cast<int64_t>(rank) && !seen[perm[d]] &&
            out.dims()[d] == in.dims()[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  if (!valid) {
    return args.Invalid("perm [", absl::StrJoin(perm, ","), "] does not map input ",
                        DimsToString(in.dims()), " to output ", DimsToString(out.dims()));
  }
  // Output dim d walks input dim perm[d].
  const std::vector<int64_t> in_strides = DenseStrides(in.dims());
  StridedView view;
  for (size_t d = 0; d < rank; ++d) view.strides.push_back(in_strides[perm[d]]);
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunSlice(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  const std::vector<int64_t>& starts = IntsAttr(args.node.attributes, "starts");
  const std::vector<int64_t>& steps = IntsAttr(args.node.attributes, "steps");
  const size_t rank = in.dims().size();
  if (starts.size() != rank || steps.size() != rank || out.dims().size() != rank) {
    return args.Invalid("starts and steps should have one entry per dim of input ",
                        DimsToString(in.dims()));
  }
  // Output index i reads input index starts + i * steps in every dim; check
  // that the first and last index of each non-empty dim are in range.
  const std::vector<int64_t> in_strides = DenseStrides(in.dims());
  StridedView view;
  for (size_t d = 0; d < rank; ++d) {
    if (out.dims()[d] > 0) {
      const int64_t last = starts[d] + (out.dims()[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= in.dims()[d] || last < 0 || last >= in.dims()[d]) {
        return args.Invalid("dim ", d, ": start ", starts[d], " step ", steps[d], " count ",
                            out.dims()[d], " leaves input ", DimsToString(in.dims()));
      }
      view.base += starts[d] * in_strides[d];
    }
    view.strides.push_back(in_strides[d] * steps[d]);
  }
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunExpand(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  RETURN_IF_ERROR(RequireBroadcast(args, in, out.dims()));
  const StridedView view{0, BroadcastStrides(in.dims(), out.dims())};
  return VisitAny(args, in.dtype(), [&](auto tag) {
    GatherStrided<decltype(tag)>(in, view, out);
    return absl::OkStatus();
  });
}

absl::Status RunGather(const HostKernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  if (axis < 0 || axis >= static_cast<int64_t>(data.dims().size())) {
    return args.Invalid("axis ", axis, " out of range for data ", DimsToString(data.dims()));
  }
  // data viewed as [outer, axis_dim, inner]; output as [outer, indices, inner].
  const int64_t axis_dim = data.dims()[axis];
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.dims()[d];
  const int64_t inner = axis_dim == 0 ? 0 : data.num_elements() / outer / axis_dim;
  const int64_t index_count = indices.num_elements();
  if (outer * index_count * inner != out.num_elements()) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not match data ",
                        DimsToString(data.dims()), " gathered by indices ",
                        DimsToString(indices.dims()));
  }
  const int64_t* index_data = indices.data<int64_t>();
  std::vector<int64_t> resolved(index_count);
  for (int64_t j = 0; j < index_count; ++j) {
    const int64_t index = index_data[j];
    resolved[j] = index < 0 ? index + axis_dim : index;
    if (resolved[j] < 0 || resolved[j] >= axis_dim) {
      return args.Invalid("index ", index, " out of range for axis ", axis, " of size ", axis_dim);
    }
  }
  const size_t block = static_cast<size_t>(inner) * DTypeSize(data.dtype());
  if (block == 0) return absl::OkStatus();
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < index_count; ++j) {
      std::memcpy(dst, src + (o * axis_dim + resolved[j]) * block, block);
      dst += block;
    }
  }
  return absl::OkStatus();
}

// out[i] = data at i's coordinates with coordinate `axis` replaced by
// indices[i] (negative counts from the end).
absl::Status RunGatherElements(const HostKernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(data.dims().size());
  if (axis < 0 || axis >= rank || static_cast<int64_t>(indices.dims().size()) != rank ||
      out.dims() != indices.dims()) {
    return args.Invalid("data ", DimsToString(data.dims()), ", indices ",
                        DimsToString(indices.dims()), ", output ", DimsToString(out.dims()),
                        " and axis ", axis, " disagree");
  }
  const std::vector<int64_t> data_strides = DenseStrides(data.dims());
  std::vector<int64_t> walk_strides = data_strides;
  walk_strides[axis] = 0;  // the axis coordinate comes from the index
  const int64_t axis_dim = data.dims()[axis];
  const int64_t* index_data = indices.data<int64_t>();
  const size_t size = DTypeSize(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  StridedWalker<1> walker(out.dims(), {StridedView{0, walk_strides}});
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
    int64_t index = index_data[i];
    if (index < 0) index += axis_dim;
    if (index < 0 || index >= axis_dim) {
      return args.Invalid("index ", index_data[i], " out of range for axis ", axis, " of size ",
                          axis_dim);
    }
    std::memcpy(dst + i * size, src + (walker.offset(0) + index * data_strides[axis]) * size,
                size);
  }
  return absl::OkStatus();
}

// GatherND with batch_dims b: output [batch, tuples, slice], each tuple's
// indices picking a slice of its batch's data (negative indices count from
// the end).
absl::Status RunGatherND(const HostKernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  const int64_t b = IntAttr(args.node.attributes, "batch_dims");
  const Dims& dims = data.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t index_rank = static_cast<int64_t>(indices.dims().size());
  const int64_t count = index_rank == 0 ? 0 : indices.dims().back();
  if (index_rank < 1 || b < 0 || b >= index_rank || count < 1 || b + count > rank) {
    return args.Invalid("data ", DimsToString(dims), ", indices ", DimsToString(indices.dims()),
                        " and batch_dims ", b, " disagree");
  }
  auto product = [](const Dims& d, int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t i = from; i < to; ++i) p *= d[i];
    return p;
  };
  const int64_t batch = product(dims, 0, b);
  const int64_t tuples = product(indices.dims(), b, index_rank - 1);
  const int64_t slice = product(dims, b + count, rank);
  const int64_t batch_stride = product(dims, b, rank);
  if (out.num_elements() != batch * tuples * slice) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not match");
  }
  const std::vector<int64_t> strides = DenseStrides(dims);
  const size_t size = DTypeSize(data.dtype());
  const auto* src = static_cast<const std::byte*>(data.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  const int64_t* index_data = indices.data<int64_t>();
  for (int64_t tuple = 0; tuple < batch * tuples; ++tuple) {
    int64_t offset = (tuple / tuples) * batch_stride;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t dim = dims[b + j];
      int64_t index = index_data[tuple * count + j];
      if (index < 0) index += dim;
      if (index < 0 || index >= dim) {
        return args.Invalid("index ", index_data[tuple * count + j], " out of range for dim ",
                            b + j, " of size ", dim);
      }
      offset += index * strides[b + j];
    }
    std::memcpy(dst + tuple * slice * size, src + offset * size, slice * size);
  }
  return absl::OkStatus();
}

// Tile: output element c reads the input at c mod the input's dims. An
// odometer over the output keeps the input offset, wrapping each input
// coordinate as the output coordinate passes a whole copy of its dim.
absl::Status RunTile(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  const Dims& in_dims = in.dims();
  const Dims& out_dims = out.dims();
  bool valid = in_dims.size() == out_dims.size();
  for (size_t d = 0; valid && d < in_dims.size(); ++d) {
    valid = in_dims[d] == 0 ? out_dims[d] == 0 : out_dims[d] % in_dims[d] == 0;
  }
  if (!valid) {
    return args.Invalid("output ", DimsToString(out_dims), " does not repeat input ",
                        DimsToString(in_dims));
  }
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  const std::vector<int64_t> strides = DenseStrides(in_dims);
  const size_t size = DTypeSize(in.dtype());
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  std::vector<int64_t> out_index(rank, 0);
  std::vector<int64_t> in_index(rank, 0);
  int64_t offset = 0;
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i) {
    std::memcpy(dst + i * size, src + offset * size, size);
    for (int64_t d = rank - 1; d >= 0; --d) {
      ++out_index[d];
      ++in_index[d];
      offset += strides[d];
      if (in_index[d] == in_dims[d]) {
        in_index[d] = 0;
        offset -= strides[d] * in_dims[d];
      }
      if (out_index[d] < out_dims[d]) break;
      out_index[d] = 0;  // a multiple of in_dims[d]: in_index[d] wrapped to 0 with it
    }
  }
  return absl::OkStatus();
}

// Trilu over the two innermost dims [rows, cols] of each matrix: element
// (i, j) is kept where j - i >= k (upper) or j - i <= k (lower), else zero.
// Every row keeps one contiguous run of columns; zero is all-zero bytes in
// every type of the datatype table.
absl::Status RunTrilu(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  const Dims& dims = in.dims();
  const size_t rank = dims.size();
  if (rank < 2 || out.dims() != dims) {
    return args.Invalid("input ", DimsToString(dims), " and output ", DimsToString(out.dims()),
                        " should be one shape of rank >= 2");
  }
  const int64_t rows = dims[rank - 2];
  const int64_t cols = dims[rank - 1];
  const bool upper = IntAttr(args.node.attributes, "upper") != 0;
  const int64_t k = IntAttr(args.node.attributes, "k");
  if (k < -rows || k > cols) {
    return args.Invalid("k ", k, " is outside [", -rows, ", ", cols, "], where binding clamps it");
  }
  const size_t size = DTypeSize(in.dtype());
  const size_t row_bytes = static_cast<size_t>(cols) * size;
  const int64_t matrix_rows = cols == 0 ? 0 : in.num_elements() / cols;  // of every matrix
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t r = 0; r < matrix_rows; ++r) {
    const int64_t i = r % rows;
    // Kept columns [begin, end): upper j >= i + k, lower j <= i + k.
    const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
    const int64_t end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
    std::byte* row = dst + r * row_bytes;
    std::memset(row, 0, row_bytes);
    if (end > begin) {
      std::memcpy(row + begin * size, src + r * row_bytes + begin * size, (end - begin) * size);
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Scatters
// ---------------------------------------------------------------------------

template <typename T>
bool IsNaNValue(T x) {
  if constexpr (std::is_floating_point_v<decltype(Widen(x))>) {
    return std::isnan(Widen(x));
  } else {
    return false;
  }
}

// One update combined with the element it lands on (ScatterReduction's
// comment says how). The CUDA kernels' Combine computes the same.
template <typename T>
T Combine(ScatterReduction reduction, T current, T update) {
  using Wide = decltype(Widen(current));
  const Wide a = Widen(current);
  const Wide b = Widen(update);
  switch (reduction) {
    case ScatterReduction::kNone:
      return update;
    case ScatterReduction::kAdd:
    case ScatterReduction::kMul:
      if constexpr (std::is_floating_point_v<Wide>) {
        return static_cast<T>(reduction == ScatterReduction::kAdd ? a + b : a * b);
      } else {
        // In uint64, where overflow wraps, then truncated to T's width.
        const uint64_t x = static_cast<uint64_t>(a);
        const uint64_t y = static_cast<uint64_t>(b);
        return static_cast<T>(reduction == ScatterReduction::kAdd ? x + y : x * y);
      }
    case ScatterReduction::kMax:
    case ScatterReduction::kMin:
      if (IsNaNValue(current)) return current;
      if (IsNaNValue(update)) return update;
      return (reduction == ScatterReduction::kMax ? b > a : b < a) ? update : current;
  }
  return update;
}

absl::StatusOr<ScatterReduction> ReductionOf(const HostKernelArgs& args, DType dtype) {
  const int64_t value = IntAttr(args.node.attributes, "reduction");
  if (value < 0 || value >= kScatterReductionCount) {
    return args.Invalid("reduction ", value, " is not a ScatterReduction");
  }
  const auto reduction = static_cast<ScatterReduction>(value);
  if (reduction != ScatterReduction::kNone && dtype == DType::kBool) {
    return args.Invalid("reduction '", kScatterReductionNames[value], "' on bool data");
  }
  return reduction;
}

// ScatterND: the output is the data with each index tuple's slice replaced
// by (or reduced with) its slice of the updates, tuples in order.
absl::Status RunScatterND(const HostKernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  const HostTensor& updates = args.in(2);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireSameDType(args, data, updates));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionOf(args, data.dtype()));
  const Dims& dims = data.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t count = indices.dims().empty() ? 0 : indices.dims().back();
  bool valid = count >= 1 && count <= rank && out.dims() == dims;
  if (valid) {  // updates: indices.shape[:-1] + data.shape[count:]
    Dims expected(indices.dims().begin(), indices.dims().end() - 1);
    expected.insert(expected.end(), dims.begin() + count, dims.end());
    valid = updates.dims() == expected;
  }
  if (!valid) {
    return args.Invalid("data ", DimsToString(dims), ", indices ", DimsToString(indices.dims()),
                        ", updates ", DimsToString(updates.dims()), " and output ",
                        DimsToString(out.dims()), " disagree");
  }
  if (data.bytes() > 0) std::memcpy(out.raw(), data.raw(), data.bytes());
  const std::vector<int64_t> strides = DenseStrides(dims);
  const int64_t tuples = NumElements(indices.dims()) / count;
  const int64_t slice = count == rank ? 1 : strides[count - 1];
  const int64_t* index_data = indices.data<int64_t>();
  return VisitAny(args, data.dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* src = updates.data<T>();
    T* dst = out.data<T>();
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t offset = 0;
      for (int64_t j = 0; j < count; ++j) {
        int64_t index = index_data[t * count + j];
        if (index < 0) index += dims[j];
        if (index < 0 || index >= dims[j]) {
          return args.Invalid("index ", index_data[t * count + j], " out of range for dim ", j,
                              " of size ", dims[j]);
        }
        offset += index * strides[j];
      }
      for (int64_t e = 0; e < slice; ++e) {
        dst[offset + e] = Combine(reduction, dst[offset + e], src[t * slice + e]);
      }
    }
    return absl::OkStatus();
  });
}

// ScatterElements: update i (walking the indices' dims in order) lands on
// the output at its own coordinates with coordinate `axis` replaced by
// indices[i].
absl::Status RunScatterElements(const HostKernelArgs& args) {
  const HostTensor& data = args.in(0);
  const HostTensor& indices = args.in(1);
  const HostTensor& updates = args.in(2);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, data, out));
  RETURN_IF_ERROR(RequireSameDType(args, data, updates));
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  ASSIGN_OR_RETURN(const ScatterReduction reduction, ReductionOf(args, data.dtype()));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const Dims& dims = data.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  bool valid = axis >= 0 && axis < rank && indices.dims().size() == dims.size() &&
               updates.dims() == indices.dims() && out.dims() == dims;
  for (int64_t d = 0; valid && d < rank; ++d) valid = d == axis || indices.dims()[d] <= dims[d];
  if (!valid) {
    return args.Invalid("data ", DimsToString(dims), ", indices ", DimsToString(indices.dims()),
                        ", updates ", DimsToString(updates.dims()), ", output ",
                        DimsToString(out.dims()), " and axis ", axis, " disagree");
  }
  if (data.bytes() > 0) std::memcpy(out.raw(), data.raw(), data.bytes());
  const std::vector<int64_t> strides = DenseStrides(dims);
  std::vector<int64_t> walk_strides = strides;
  walk_strides[axis] = 0;  // the axis coordinate comes from the index
  const int64_t axis_dim = dims[axis];
  const int64_t* index_data = indices.data<int64_t>();
  return VisitAny(args, data.dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* src = updates.data<T>();
    T* dst = out.data<T>();
    StridedWalker<1> walker(indices.dims(), {StridedView{0, walk_strides}});
    for (int64_t i = 0, n = indices.num_elements(); i < n; ++i, walker.Next()) {
      int64_t index = index_data[i];
      if (index < 0) index += axis_dim;
      if (index < 0 || index >= axis_dim) {
        return args.Invalid("index ", index_data[i], " out of range for axis ", axis,
                            " of size ", axis_dim);
      }
      T& target = dst[walker.offset(0) + index * strides[axis]];
      target = Combine(reduction, target, src[i]);
    }
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------------------
// OneHot and TopK
// ---------------------------------------------------------------------------

// OneHot: the output viewed as [outer, depth, inner] (depth at `axis`),
// indices as [outer, inner]; out[o, d, i] is values[1] (on) where index
// (o, i) is d, values[0] (off) elsewhere. A negative index counts from the
// end when wrap_negative is set (opset 11); an index outside the range
// gives a row of off values, as ONNX says.
absl::Status RunOneHot(const HostKernelArgs& args) {
  const HostTensor& indices = args.in(0);
  const HostTensor& values = args.in(1);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireDType(args, indices, DType::kInt64, "indices"));
  RETURN_IF_ERROR(RequireSameDType(args, values, out));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const bool wrap_negative = IntAttr(args.node.attributes, "wrap_negative") != 0;
  const Dims& index_dims = indices.dims();
  const Dims& dims = out.dims();
  bool valid = values.num_elements() == 2 && dims.size() == index_dims.size() + 1 && axis >= 0 &&
               axis < static_cast<int64_t>(dims.size());
  for (size_t d = 0; valid && d < index_dims.size(); ++d) {
    valid = index_dims[d] == dims[d < static_cast<size_t>(axis) ? d : d + 1];
  }
  if (!valid) {
    return args.Invalid("indices ", DimsToString(index_dims), ", values ",
                        DimsToString(values.dims()), ", output ", DimsToString(dims), " and axis ",
                        axis, " disagree");
  }
  const int64_t depth = dims[axis];
  const int64_t inner = DimsProduct(index_dims, axis, index_dims.size());
  const size_t size = DTypeSize(values.dtype());
  const auto* off = static_cast<const std::byte*>(values.raw());
  const std::byte* on = off + size;
  const int64_t* index_data = indices.data<int64_t>();
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t e = 0, n = out.num_elements(); e < n; ++e) {
    const int64_t i = e % inner;
    const int64_t o = e / inner / depth;
    const int64_t d = e / inner % depth;
    int64_t index = index_data[o * inner + i];
    if (index < 0 && wrap_negative) index += depth;
    std::memcpy(dst + e * size, index == d ? on : off, size);
  }
  return absl::OkStatus();
}

// Note [TopK order]
// ~~~~~~~~~~~~~~~~~
// TopK returns the first k elements of each line in one strict total order:
// by value (descending for largest, ascending otherwise), equal values by
// the lower index (ONNX's tie rule), -0 equal to +0, and NaN above every
// number, so NaNs come first in the largest and last in the smallest, among
// themselves by index. That is how numpy's sort and PyTorch's topk place
// NaN. ONNX Runtime has no consistent order for NaN (its CPU comparator is
// no strict weak order: measured with onnxruntime 1.31, [1, NaN, 3, NaN, 2]
// gives 3 as the largest but NaN first among the top 3), so it cannot be
// matched; a total order also makes the CUDA kernel's output identical to
// the host's. The output is always sorted; 'sorted' = 0 allows any order.

// Whether element (a, index ia) comes before (b, ib) in the Note's order.
template <typename T>
bool ComesFirst(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool a_nan = IsNaNValue(a);
  const bool b_nan = IsNaNValue(b);
  if (a_nan || b_nan) {
    if (a_nan != b_nan) return largest ? a_nan : b_nan;
    return ia < ib;
  }
  const auto x = Widen(a);
  const auto y = Widen(b);
  if (x != y) return largest ? x > y : x < y;
  return ia < ib;
}

absl::Status RunTopK(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& values = args.out(0);
  HostTensor* indices = args.has_output(1) ? &args.out(1) : nullptr;
  RETURN_IF_ERROR(RequireSameDType(args, in, values));
  if (indices != nullptr) RETURN_IF_ERROR(RequireDType(args, *indices, DType::kInt64, "indices"));
  if (in.dtype() == DType::kBool) return UnsupportedDType(args, in.dtype());
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const bool largest = IntAttr(args.node.attributes, "largest") != 0;
  const Dims& dims = in.dims();
  const int64_t rank = static_cast<int64_t>(dims.size());
  bool valid = axis >= 0 && axis < rank && values.dims().size() == dims.size() &&
               (indices == nullptr || indices->dims() == values.dims());
  for (int64_t d = 0; valid && d < rank; ++d) {
    valid = d == axis ? values.dims()[d] <= dims[d] : values.dims()[d] == dims[d];
  }
  if (!valid) {
    return args.Invalid("input ", DimsToString(dims), ", outputs ", DimsToString(values.dims()),
                        " and axis ", axis, " disagree");
  }
  const int64_t n = dims[axis];
  const int64_t k = values.dims()[axis];
  const int64_t outer = DimsProduct(dims, 0, axis);
  const int64_t inner = DimsProduct(dims, axis + 1, dims.size());
  return VisitAny(args, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.data<T>();
    T* dst = values.data<T>();
    std::vector<int64_t> order(n);
    for (int64_t line = 0; line < outer * inner; ++line) {
      const int64_t o = line / inner;
      const int64_t i = line % inner;
      const T* x = src + o * n * inner + i;  // element j at x[j * inner]
      for (int64_t j = 0; j < n; ++j) order[j] = j;
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t a, int64_t b) {
                          return ComesFirst(x[a * inner], a, x[b * inner], b, largest);
                        });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t to = (o * k + j) * inner + i;
        dst[to] = x[order[j] * inner];
        if (indices != nullptr) indices->data<int64_t>()[to] = order[j];
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status HostReinterpret(const HostKernelArgs& args) { return RunReinterpret(args); }
absl::Status HostConcat(const HostKernelArgs& args) { return RunConcat(args); }
absl::Status HostTranspose(const HostKernelArgs& args) { return RunTranspose(args); }
absl::Status HostSlice(const HostKernelArgs& args) { return RunSlice(args); }
absl::Status HostExpand(const HostKernelArgs& args) { return RunExpand(args); }
absl::Status HostGather(const HostKernelArgs& args) { return RunGather(args); }
absl::Status HostGatherElements(const HostKernelArgs& args) { return RunGatherElements(args); }
absl::Status HostGatherND(const HostKernelArgs& args) { return RunGatherND(args); }
absl::Status HostTile(const HostKernelArgs& args) { return RunTile(args); }
absl::Status HostTrilu(const HostKernelArgs& args) { return RunTrilu(args); }
absl::Status HostScatterND(const HostKernelArgs& args) { return RunScatterND(args); }
absl::Status HostScatterElements(const HostKernelArgs& args) { return RunScatterElements(args); }
absl::Status HostOneHot(const HostKernelArgs& args) { return RunOneHot(args); }
absl::Status HostTopK(const HostKernelArgs& args) { return RunTopK(args); }

}  // namespace graphserve
