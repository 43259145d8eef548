// The host kernel of the canonical Resize node (Note [Resize sampling
// tables] in runtime/ops/resize.cc): weighted gathers through the tables
// binding computed, in double.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/status.h"
#include "runtime/host/data_movement_kernels.h"
#include "runtime/host/kernel_args.h"

namespace graphserve {
namespace {

// Where each resized dim's entries start in the tables, checked against the
// tables' length and the input dims.
absl::StatusOr<std::vector<int64_t>> TableOffsets(const HostKernelArgs& args,
                                                  const std::vector<int64_t>& axes,
                                                  const std::vector<int64_t>& taps) {
  const Dims& in = args.in(0).dims();
  const Dims& out = args.out(0).dims();
  const HostTensor& indices = args.in(1);
  std::vector<int64_t> offsets;
  int64_t total = 0;
  if (taps.size() != axes.size()) {
    return args.Invalid(taps.size(), " tap counts for ", axes.size(), " axes");
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k];
    if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || in.size() != out.size() ||
        taps[k] < 1) {
      return args.Invalid("axis ", axis, " with ", taps[k], " taps does not resize ",
                          DimsToString(in));
    }
    offsets.push_back(total);
    const int64_t entries = out[axis] * taps[k];
    for (int64_t i = total; i < total + entries && i < indices.num_elements(); ++i) {
      const int64_t index = indices.data<int64_t>()[i];
      if (index < -1 || index >= in[axis]) {
        return args.Invalid("table index ", index, " is outside dim ", axis, " of ",
                            DimsToString(in));
      }
    }
    total += entries;
  }
  if (indices.num_elements() != total || args.in(2).num_elements() != total) {
    return args.Invalid("tables of ", indices.num_elements(), " and ", args.in(2).num_elements(),
                        " entries, expected ", total);
  }
  return offsets;
}

}  // namespace

absl::Status HostResize(const HostKernelArgs& args) {
  const HostTensor& x = args.in(0);
  HostTensor& y = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, x, y));
  RETURN_IF_ERROR(RequireDType(args, args.in(1), DType::kInt64, "indices"));
  RETURN_IF_ERROR(RequireDType(args, args.in(2), DType::kFloat32, "weights"));
  absl::StatusOr<std::vector<int64_t>> axes = GetIntsAttr(args.node.attributes, "axes", {});
  absl::StatusOr<std::vector<int64_t>> taps = GetIntsAttr(args.node.attributes, "taps", {});
  if (!axes.ok()) return args.Invalid(axes.status().message());
  if (!taps.ok()) return args.Invalid(taps.status().message());
  ASSIGN_OR_RETURN(const float extrapolation, OptionalFloatAttr(args, "extrapolation_value", 0));
  ASSIGN_OR_RETURN(const std::vector<int64_t> offsets, TableOffsets(args, *axes, *taps));
  const Dims& in_dims = x.dims();
  const Dims& out_dims = y.dims();
  const std::vector<int64_t> in_strides = DenseStrides(in_dims);
  const int64_t* table_index = args.in(1).data<int64_t>();
  const float* table_weight = args.in(2).data<float>();
  // Each output element sums the products of one entry per resized dim.
  int64_t combinations = 1;
  for (int64_t count : *taps) combinations *= count;
  std::vector<bool> resized(in_dims.size(), false);
  for (int64_t axis : *axes) resized[axis] = true;
  return VisitFloatTypes(args, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    std::vector<int64_t> coordinate(out_dims.size(), 0);
    for (int64_t e = 0, n = y.num_elements(); e < n; ++e) {
      int64_t rest = e;
      for (int64_t d = static_cast<int64_t>(out_dims.size()) - 1; d >= 0; --d) {
        coordinate[d] = rest % out_dims[d];
        rest /= out_dims[d];
      }
      int64_t base = 0;  // the offset of the dims that are not resized
      for (size_t d = 0; d < in_dims.size(); ++d) {
        if (!resized[d]) base += coordinate[d] * in_strides[d];
      }
      double sum = 0;
      bool outside = false;
      for (int64_t c = 0; c < combinations && !outside; ++c) {
        int64_t choice = c;
        int64_t offset = base;
        double weight = 1;
        for (size_t k = 0; k < axes->size(); ++k) {
          const int64_t axis = (*axes)[k];
          const int64_t entry = offsets[k] + coordinate[axis] * (*taps)[k] + choice % (*taps)[k];
          choice /= (*taps)[k];
          outside = outside || table_index[entry] < 0;
          offset += table_index[entry] * in_strides[axis];
          weight *= table_weight[entry];
        }
        if (!outside) sum += weight * static_cast<double>(Widen(src[offset]));
      }
      dst[e] = Narrow<T>(outside ? static_cast<double>(extrapolation) : sum);
    }
    return absl::OkStatus();
  });
}

}  // namespace graphserve
