#include "runtime/host/normalization_kernels.h"

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
#include "runtime/host/kernel_args.h"

namespace graphserve {

namespace {

// ---------------------------------------------------------------------------
// Normalisations and reductions
// ---------------------------------------------------------------------------

absl::Status RunSoftmax(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  RETURN_IF_ERROR(RequireDType(args, args.in(0), DType::kFloat32, "input"));
  const int64_t outer = IntAttr(args.node.attributes, "outer");
  const int64_t axis_size = IntAttr(args.node.attributes, "axis_size");
  const int64_t inner = IntAttr(args.node.attributes, "inner");
  if (outer * axis_size * inner != args.in(0).num_elements()) {
    return args.Invalid("outer=", outer, " axis_size=", axis_size, " inner=", inner,
                        " do not cover input ", DimsToString(args.in(0).dims()));
  }
  const float* x = args.in(0).data<float>();
  float* y = args.out(0).data<float>();
  std::vector<double> exps(axis_size);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const int64_t base = o * axis_size * inner + in;
      // Subtracting the max keeps exp() in range for large inputs.
      double max_value = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < axis_size; ++a) {
        max_value = std::max(max_value, static_cast<double>(x[base + a * inner]));
      }
      double sum = 0.0;
      for (int64_t a = 0; a < axis_size; ++a) {
        exps[a] = std::exp(static_cast<double>(x[base + a * inner]) - max_value);
        sum += exps[a];
      }
      for (int64_t a = 0; a < axis_size; ++a) {
        y[base + a * inner] = static_cast<float>(exps[a] / sum);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RunLayerNormalization(const HostKernelArgs& args) {
  const HostTensor& x = args.in(0);
  const HostTensor& scale = args.in(1);
  const HostTensor* bias = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  const int64_t outer = IntAttr(args.node.attributes, "outer");
  const int64_t inner = IntAttr(args.node.attributes, "inner");
  ASSIGN_OR_RETURN(const double epsilon, OptionalFloatAttr(args, "epsilon", 1e-5f));
  for (const HostTensor* t : {&x, &scale, bias, static_cast<const HostTensor*>(&args.out(0))}) {
    if (t != nullptr) RETURN_IF_ERROR(RequireDType(args, *t, DType::kFloat32, "operand"));
  }
  RETURN_IF_ERROR(RequireSameElementCount(args, x, args.out(0)));
  if (outer * inner != x.num_elements()) {
    return args.Invalid("outer=", outer, " inner=", inner, " do not cover input ",
                        DimsToString(x.dims()));
  }
  for (const HostTensor* t : {&scale, bias}) {
    if (t != nullptr && t->num_elements() != inner) {
      return args.Invalid("Scale and B should hold inner=", inner, " elements, got ",
                          DimsToString(t->dims()));
    }
  }
  // Mean and InvStdDev (outputs 1 and 2) are optional; a null slot is unused.
  float* mean_out = nullptr;
  float* inv_std_out = nullptr;
  for (size_t slot : {size_t{1}, size_t{2}}) {
    if (!args.has_output(slot)) continue;
    RETURN_IF_ERROR(RequireDType(args, args.out(slot), DType::kFloat32, "statistics output"));
    if (args.out(slot).num_elements() != outer) {
      return args.Invalid("statistics output ", DimsToString(args.out(slot).dims()),
                          " should hold outer=", outer, " elements");
    }
    (slot == 1 ? mean_out : inv_std_out) = args.out(slot).data<float>();
  }

  const float* x_data = x.data<float>();
  const float* scale_data = scale.data<float>();
  const float* bias_data = bias != nullptr ? bias->data<float>() : nullptr;
  float* y = args.out(0).data<float>();
  for (int64_t row = 0; row < outer; ++row) {
    const float* x_row = x_data + row * inner;
    double sum = 0.0;
    for (int64_t i = 0; i < inner; ++i) sum += x_row[i];
    const double mean = sum / static_cast<double>(inner);
    double squares = 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      const double centred = x_row[i] - mean;
      squares += centred * centred;
    }
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
    for (int64_t i = 0; i < inner; ++i) {
      double value = (x_row[i] - mean) * inv_std * scale_data[i];
      if (bias_data != nullptr) value += bias_data[i];
      y[row * inner + i] = static_cast<float>(value);
    }
    if (mean_out != nullptr) mean_out[row] = static_cast<float>(mean);
    if (inv_std_out != nullptr) inv_std_out[row] = static_cast<float>(inv_std);
  }
  return absl::OkStatus();
}

absl::Status RunReduceMean(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameDType(args, in, out));
  RETURN_IF_ERROR(RequireDType(args, in, DType::kFloat32, "input"));
  // The output with reduced dims kept as 1 broadcasts to the input: walking
  // the input, each element accumulates into the output element it reduces to.
  Dims kept = in.dims();
  for (int64_t axis : IntsAttr(args.node.attributes, "axes")) {
    if (axis < 0 || axis >= static_cast<int64_t>(kept.size())) {
      return args.Invalid("axis ", axis, " out of range for input ", DimsToString(in.dims()));
    }
    kept[axis] = 1;
  }
  if (NumElements(kept) != out.num_elements()) {
    return args.Invalid("output ", DimsToString(out.dims()), " does not match reducing ",
                        DimsToString(in.dims()));
  }
  std::vector<double> sums(out.num_elements(), 0.0);
  const float* src = in.data<float>();
  StridedWalker<1> walker(in.dims(), {StridedView{0, BroadcastStrides(kept, in.dims())}});
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i, walker.Next()) {
    sums[walker.offset(0)] += src[i];
  }
  // An empty reduction divides 0 by 0: NaN, as numpy's mean.
  const double count =
      out.num_elements() == 0 ? 1.0 : static_cast<double>(in.num_elements()) / out.num_elements();
  float* dst = out.data<float>();
  for (size_t i = 0; i < sums.size(); ++i) dst[i] = static_cast<float>(sums[i] / count);
  return absl::OkStatus();
}

// CumSum over [outer, axis_dim, inner] lines, summing in the element type
// (as the CUDA kernel does; integers wrap).
absl::Status RunCumSum(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(in.dims().size());
  if (axis < 0 || axis >= rank) return args.Invalid("axis ", axis, " outside rank ", rank);
  ASSIGN_OR_RETURN(const int64_t exclusive, OptionalIntAttr(args, "exclusive", 0));
  ASSIGN_OR_RETURN(const int64_t reverse, OptionalIntAttr(args, "reverse", 0));
  const int64_t axis_dim = in.dims()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.dims()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in.dims()[d];
  auto run = [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < inner; ++c) {
        T sum = zero;
        for (int64_t k = 0; k < axis_dim; ++k) {
          const int64_t j = reverse != 0 ? axis_dim - 1 - k : k;
          const int64_t at = (o * axis_dim + j) * inner + c;
          const T x = src[at];
          if (exclusive != 0) dst[at] = sum;
          if constexpr (std::is_integral_v<T>) {
            sum = static_cast<T>(static_cast<std::make_unsigned_t<T>>(sum) +
                                 static_cast<std::make_unsigned_t<T>>(x));
          } else {
            sum += x;
          }
          if (exclusive == 0) dst[at] = sum;
        }
      }
    }
    return absl::OkStatus();
  };
  switch (in.dtype()) {
    case DType::kFloat32:
      return run(float{0});
    case DType::kFloat64:
      return run(double{0});
    case DType::kInt32:
      return run(int32_t{0});
    case DType::kInt64:
      return run(int64_t{0});
    default:
      return UnsupportedDType(args, in.dtype());
  }
}

}  // namespace

absl::Status HostSoftmax(const HostKernelArgs& args) { return RunSoftmax(args); }
absl::Status HostLayerNormalization(const HostKernelArgs& args) {
  return RunLayerNormalization(args);
}
absl::Status HostReduceMean(const HostKernelArgs& args) { return RunReduceMean(args); }

absl::Status HostCumSum(const HostKernelArgs& args) { return RunCumSum(args); }

}  // namespace graphserve
