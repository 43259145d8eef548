#include "runtime/host/data_movement_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {

namespace {

// ---------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------

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

}  // namespace

absl::Status HostReinterpret(const HostKernelArgs& args) { return RunReinterpret(args); }
absl::Status HostConcat(const HostKernelArgs& args) { return RunConcat(args); }
absl::Status HostTranspose(const HostKernelArgs& args) { return RunTranspose(args); }
absl::Status HostSlice(const HostKernelArgs& args) { return RunSlice(args); }
absl::Status HostExpand(const HostKernelArgs& args) { return RunExpand(args); }
absl::Status HostGather(const HostKernelArgs& args) { return RunGather(args); }
absl::Status HostGatherElements(const HostKernelArgs& args) { return RunGatherElements(args); }
absl::Status HostGatherND(const HostKernelArgs& args) { return RunGatherND(args); }

}  // namespace graphserve
