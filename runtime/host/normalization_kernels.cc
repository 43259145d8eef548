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

// Softmax's canonical view of its input, [outer, axis_size, inner] (binding's
// attributes), checked against the input's element count.
struct AxisLines {
  int64_t outer;
  int64_t axis_size;
  int64_t inner;
};

absl::StatusOr<AxisLines> ReadAxisLines(const HostKernelArgs& args) {
  const AxisLines lines{IntAttr(args.node.attributes, "outer"),
                        IntAttr(args.node.attributes, "axis_size"),
                        IntAttr(args.node.attributes, "inner")};
  if (lines.outer * lines.axis_size * lines.inner != args.in(0).num_elements()) {
    return args.Invalid("outer=", lines.outer, " axis_size=", lines.axis_size,
                        " inner=", lines.inner, " do not cover input ",
                        DimsToString(args.in(0).dims()));
  }
  return lines;
}

// Softmax, or LogSoftmax with `log`: over the axis of [outer, axis_size,
// inner], as ONNX's reference computes it: t = x - max, then exp(t) / sum or
// t - log(sum), where sum = sum(exp(t)). Subtracting the max keeps exp() in
// range for large inputs; a NaN, or a +Inf (t = Inf - Inf), makes its line NaN,
// as in numpy.
absl::Status RunSoftmax(const HostKernelArgs& args, bool log) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  ASSIGN_OR_RETURN(const AxisLines lines, ReadAxisLines(args));
  // Plain copies: lambdas may not capture structured bindings before C++20.
  const int64_t outer = lines.outer, axis_size = lines.axis_size, inner = lines.inner;
  return VisitFloatTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = args.in(0).data<T>();
    T* y = args.out(0).data<T>();
    std::vector<double> shifted(axis_size);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * axis_size * inner + in;
        double max_value = -std::numeric_limits<double>::infinity();
        for (int64_t a = 0; a < axis_size; ++a) {
          max_value = std::max(max_value, static_cast<double>(Widen(x[base + a * inner])));
        }
        double sum = 0.0;
        for (int64_t a = 0; a < axis_size; ++a) {
          shifted[a] = static_cast<double>(Widen(x[base + a * inner])) - max_value;
          sum += std::exp(shifted[a]);
        }
        const double log_sum = std::log(sum);
        for (int64_t a = 0; a < axis_size; ++a) {
          y[base + a * inner] =
              Narrow<T>(log ? shifted[a] - log_sum : std::exp(shifted[a]) / sum);
        }
      }
    }
    return absl::OkStatus();
  });
}

// X, Scale, B and Y of one float type T; Mean and InvStdDev (the stash
// type, which binding holds to float32) computed in double. Without
// `subtract_mean` the row's mean is taken as 0, so InvStdDev is the inverse
// root mean square: RMSNormalization (Note [RMS normalization]).
absl::Status RunRowNormalization(const HostKernelArgs& args, bool subtract_mean) {
  const HostTensor& x = args.in(0);
  const HostTensor& scale = args.in(1);
  const HostTensor* bias = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  const int64_t outer = IntAttr(args.node.attributes, "outer");
  const int64_t inner = IntAttr(args.node.attributes, "inner");
  ASSIGN_OR_RETURN(const double epsilon, OptionalFloatAttr(args, "epsilon", 1e-5f));
  for (const HostTensor* t : {&scale, bias, static_cast<const HostTensor*>(&args.out(0))}) {
    if (t != nullptr) RETURN_IF_ERROR(RequireSameDType(args, x, *t));
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
  return VisitFloatTypes(args, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x_data = x.data<T>();
    const T* scale_data = scale.data<T>();
    const T* bias_data = bias != nullptr ? bias->data<T>() : nullptr;
    T* y = args.out(0).data<T>();
    const auto at = [](const T* data, int64_t i) { return static_cast<double>(Widen(data[i])); };
    for (int64_t row = 0; row < outer; ++row) {
      const T* x_row = x_data + row * inner;
      double sum = 0.0;
      if (subtract_mean) {
        for (int64_t i = 0; i < inner; ++i) sum += at(x_row, i);
      }
      const double mean = sum / static_cast<double>(inner);
      double squares = 0.0;
      for (int64_t i = 0; i < inner; ++i) {
        const double centred = at(x_row, i) - mean;
        squares += centred * centred;
      }
      const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(inner) + epsilon);
      for (int64_t i = 0; i < inner; ++i) {
        double value = (at(x_row, i) - mean) * inv_std * at(scale_data, i);
        if (bias_data != nullptr) value += at(bias_data, i);
        y[row * inner + i] = Narrow<T>(value);
      }
      if (mean_out != nullptr) mean_out[row] = static_cast<float>(mean);
      if (inv_std_out != nullptr) inv_std_out[row] = static_cast<float>(inv_std);
    }
    return absl::OkStatus();
  });
}

// Note [Group normalization] in normalization_kernels.h.
absl::Status RunGroupNormalization(const HostKernelArgs& args) {
  if (args.inputs.size() != 3) return args.Invalid("expected X, scale and B");
  const HostTensor& x = args.in(0);
  const HostTensor& scale = args.in(1);
  const HostTensor& bias = args.in(2);
  for (const HostTensor* t : {&x, &scale, &bias, static_cast<const HostTensor*>(&args.out(0))}) {
    RETURN_IF_ERROR(RequireDType(args, *t, DType::kFloat32, "operand"));
  }
  RETURN_IF_ERROR(RequireSameElementCount(args, x, args.out(0)));
  const int64_t batch = IntAttr(args.node.attributes, "batch");
  const int64_t channels = IntAttr(args.node.attributes, "channels");
  const int64_t groups = IntAttr(args.node.attributes, "groups");
  const int64_t spatial = IntAttr(args.node.attributes, "spatial");
  const bool per_group = IntAttr(args.node.attributes, "affine_per_group") != 0;
  ASSIGN_OR_RETURN(const double epsilon, OptionalFloatAttr(args, "epsilon", 1e-5f));
  if (groups <= 0 || channels % groups != 0) {
    return args.Invalid("groups=", groups, " should divide channels=", channels);
  }
  if (batch * channels * spatial != x.num_elements()) {
    return args.Invalid("batch=", batch, " channels=", channels, " spatial=", spatial,
                        " do not cover input ", DimsToString(x.dims()));
  }
  const int64_t affine = per_group ? groups : channels;
  if (scale.num_elements() != affine || bias.num_elements() != affine) {
    return args.Invalid("scale and B should hold ", affine, " elements, got ",
                        DimsToString(scale.dims()), " and ", DimsToString(bias.dims()));
  }
  const int64_t channels_per_group = channels / groups;
  const int64_t row_size = channels_per_group * spatial;
  const float* x_data = x.data<float>();
  const float* scale_data = scale.data<float>();
  const float* bias_data = bias.data<float>();
  float* y = args.out(0).data<float>();
  for (int64_t row = 0; row < batch * groups; ++row) {
    const int64_t group = row % groups;
    const float* x_row = x_data + row * row_size;
    double sum = 0.0;
    for (int64_t i = 0; i < row_size; ++i) sum += x_row[i];
    const double mean = sum / static_cast<double>(row_size);
    double squares = 0.0;
    for (int64_t i = 0; i < row_size; ++i) {
      const double centred = x_row[i] - mean;
      squares += centred * centred;
    }
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(row_size) + epsilon);
    for (int64_t i = 0; i < row_size; ++i) {
      const int64_t k = per_group ? group : group * channels_per_group + i / spatial;
      y[row * row_size + i] =
          static_cast<float>((x_row[i] - mean) * inv_std * scale_data[k] + bias_data[k]);
    }
  }
  return absl::OkStatus();
}

enum class ReduceOp {
  kSum,
  kMean,
  kProd,
  kMax,
  kMin,
  kL1,
  kL2,
  kSumSquare,
  kLogSum,
  kLogSumExp,
};

// The Reduce* ops (Note [Reductions] in normalization_kernels.h). Each
// input element is visited once, in row-major order, with the output element
// it reduces to: the output with reduced dims kept as 1 broadcasts to the
// input, so the walker's offset is that element's index.
class Reduction {
 public:
  // Checks the node's canonical axes against its input and output.
  static absl::StatusOr<Reduction> Create(const HostKernelArgs& args) {
    const HostTensor& in = args.in(0);
    const HostTensor& out = args.out(0);
    RETURN_IF_ERROR(RequireSameDType(args, in, out));
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
    const int64_t count = out.num_elements() == 0 ? 0 : in.num_elements() / out.num_elements();
    return Reduction(in.dims(), BroadcastStrides(kept, in.dims()), count);
  }

  // Elements reduced into each output element (0 for an empty reduction).
  [[nodiscard]] int64_t count() const { return count_; }

  // acc[output element] = fold(acc[output element], x) for every input
  // element x.
  template <typename T, typename Acc, typename FoldFn>
  void Fold(const HostTensor& in, std::vector<Acc>& acc, FoldFn fold) const {
    const T* src = in.data<T>();
    StridedWalker<1> walker(dims_, {StridedView{0, strides_}});
    for (int64_t i = 0, n = in.num_elements(); i < n; ++i, walker.Next()) {
      Acc& slot = acc[walker.offset(0)];
      slot = fold(slot, src[i]);
    }
  }

  // The same, fold(acc, x, output element) for a fold that reads per-output
  // values of an earlier pass.
  template <typename T, typename Acc, typename FoldFn>
  void FoldIndexed(const HostTensor& in, std::vector<Acc>& acc, FoldFn fold) const {
    const T* src = in.data<T>();
    StridedWalker<1> walker(dims_, {StridedView{0, strides_}});
    for (int64_t i = 0, n = in.num_elements(); i < n; ++i, walker.Next()) {
      Acc& slot = acc[walker.offset(0)];
      slot = fold(slot, src[i], walker.offset(0));
    }
  }

 private:
  Reduction(Dims dims, std::vector<int64_t> strides, int64_t count)
      : dims_(std::move(dims)), strides_(std::move(strides)), count_(count) {}

  Dims dims_;
  std::vector<int64_t> strides_;
  int64_t count_;
};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The float types, accumulated in double; NaN propagates through every
// reduction.
template <typename T>
std::vector<double> ReduceFloat(const HostTensor& in, const Reduction& r, ReduceOp op,
                                int64_t num_outputs) {
  auto fold = [&](double init, auto step) {
    std::vector<double> acc(num_outputs, init);
    r.Fold<T>(in, acc, [&step](double a, T x) { return step(a, static_cast<double>(Widen(x))); });
    return acc;
  };
  const auto add = [](double a, double x) { return a + x; };
  const auto add_square = [](double a, double x) { return a + x * x; };
  const auto max = [](double a, double x) { return PropagatingMax(a, x); };
  auto finish = [](std::vector<double> values, double (*fn)(double)) {
    for (double& v : values) v = fn(v);
    return values;
  };
  switch (op) {
    case ReduceOp::kSum:
      return fold(0.0, add);
    case ReduceOp::kMean: {
      // An empty reduction divides 0 by 0: NaN, as numpy's mean.
      std::vector<double> sums = fold(0.0, add);
      for (double& v : sums) v /= static_cast<double>(r.count());
      return sums;
    }
    case ReduceOp::kProd:
      return fold(1.0, [](double a, double x) { return a * x; });
    case ReduceOp::kMax:
      return fold(-kInfinity, max);
    case ReduceOp::kMin:
      return fold(kInfinity, [](double a, double x) { return PropagatingMin(a, x); });
    case ReduceOp::kL1:
      return fold(0.0, [](double a, double x) { return a + std::fabs(x); });
    case ReduceOp::kL2:
      return finish(fold(0.0, add_square), [](double v) { return std::sqrt(v); });
    case ReduceOp::kSumSquare:
      return fold(0.0, add_square);
    case ReduceOp::kLogSum:
      return finish(fold(0.0, add), [](double v) { return std::log(v); });
    case ReduceOp::kLogSumExp: {
      // The peak, then the sum of e^(x - peak), at most the element count. A
      // NaN or infinite peak is the result: NaN, +Inf, or -Inf when no
      // element is above -Inf (an empty reduction too: the log of 0).
      const std::vector<double> peak = fold(-kInfinity, max);
      std::vector<double> sums(num_outputs, 0.0);
      r.FoldIndexed<T>(in, sums, [&peak](double a, T x, int64_t o) {
        return std::isfinite(peak[o]) ? a + std::exp(static_cast<double>(Widen(x)) - peak[o]) : a;
      });
      for (int64_t o = 0; o < num_outputs; ++o) {
        sums[o] = std::isfinite(peak[o]) ? peak[o] + std::log(sums[o]) : peak[o];
      }
      return sums;
    }
  }
  return {};
}

// int32 and int64: Max and Min in the type; sums and products wrap as the
// element type does (accumulated in uint64 as on the GPU, which agrees modulo
// 2^32 and 2^64). Mean, L2, LogSum and LogSumExp are for floats only (binding
// refuses integers).
template <typename T>
absl::Status ReduceInteger(const HostKernelArgs& args, const Reduction& r, ReduceOp op) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  const int64_t n = out.num_elements();
  T* dst = out.data<T>();
  if (op == ReduceOp::kMax || op == ReduceOp::kMin) {
    std::vector<T> acc(n, op == ReduceOp::kMax ? std::numeric_limits<T>::lowest()
                                               : std::numeric_limits<T>::max());
    r.Fold<T>(in, acc,
              [op](T a, T x) { return op == ReduceOp::kMax ? std::max(a, x) : std::min(a, x); });
    std::copy(acc.begin(), acc.end(), dst);
    return absl::OkStatus();
  }
  using U = uint64_t;
  std::vector<U> acc(n, op == ReduceOp::kProd ? U{1} : U{0});
  switch (op) {
    case ReduceOp::kSum:
      r.Fold<T>(in, acc, [](U a, T x) { return a + static_cast<U>(x); });
      break;
    case ReduceOp::kProd:
      r.Fold<T>(in, acc, [](U a, T x) { return a * static_cast<U>(x); });
      break;
    case ReduceOp::kL1:
      r.Fold<T>(in, acc, [](U a, T x) {
        return a + (x < 0 ? U{0} - static_cast<U>(x) : static_cast<U>(x));
      });
      break;
    case ReduceOp::kSumSquare:
      r.Fold<T>(in, acc, [](U a, T x) { return a + static_cast<U>(x) * static_cast<U>(x); });
      break;
    default:
      return UnsupportedDType(args, in.dtype());
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(acc[i]);
  return absl::OkStatus();
}

absl::Status RunReduce(const HostKernelArgs& args, ReduceOp op) {
  ASSIGN_OR_RETURN(const Reduction r, Reduction::Create(args));
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  return VisitSignedTypes(args, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return ReduceInteger<T>(args, r, op);
    } else {
      const std::vector<double> result = ReduceFloat<T>(in, r, op, out.num_elements());
      T* dst = out.data<T>();
      for (size_t i = 0; i < result.size(); ++i) dst[i] = Narrow<T>(result[i]);
      return absl::OkStatus();
    }
  });
}

// How x ranks against b for ArgMax (is_max) or ArgMin: 1 when x wins, 0 on a
// tie, -1 when b wins. A NaN wins over every number and ties with a NaN,
// for both: numpy's argmax and argmin (ONNX's reference) return the first NaN.
template <typename V>
int ArgRank(V x, V b, bool is_max) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(x) || std::isnan(b)) return int{std::isnan(x)} - int{std::isnan(b)};
  }
  if (x == b) return 0;
  return (is_max ? x > b : x < b) ? 1 : -1;
}

// ArgMax or ArgMin along the middle dim of [outer, axis_dim, inner]: the
// first winner, or the last with select_last_index (ONNX's reference flips
// the axis for it, so the last NaN wins then).
template <typename T>
void ArgReduce(const HostKernelArgs& args, bool is_max, bool last, int64_t outer,
               int64_t axis_dim, int64_t inner) {
  const T* src = args.in(0).data<T>();
  int64_t* dst = args.out(0).data<int64_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < inner; ++c) {
      const T* line = src + o * axis_dim * inner + c;
      int64_t best = 0;
      for (int64_t k = 1; k < axis_dim; ++k) {
        const int rank = ArgRank(Widen(line[k * inner]), Widen(line[best * inner]), is_max);
        if (rank > 0 || (last && rank == 0)) best = k;
      }
      dst[o * inner + c] = best;
    }
  }
}

absl::Status RunArgReduce(const HostKernelArgs& args, bool is_max) {
  const HostTensor& in = args.in(0);
  RETURN_IF_ERROR(RequireDType(args, args.out(0), DType::kInt64, "output"));
  const int64_t axis = IntAttr(args.node.attributes, "axis");
  const int64_t rank = static_cast<int64_t>(in.dims().size());
  if (axis < 0 || axis >= rank) return args.Invalid("axis ", axis, " outside rank ", rank);
  ASSIGN_OR_RETURN(const int64_t last, OptionalIntAttr(args, "select_last_index", 0));
  const int64_t axis_dim = in.dims()[axis];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= in.dims()[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= in.dims()[d];
  if (args.out(0).num_elements() != outer * inner) {
    return args.Invalid("output ", DimsToString(args.out(0).dims()), " should hold ",
                        outer * inner, " elements");
  }
  if (axis_dim == 0 && outer * inner > 0) return args.Invalid("the axis is empty");
  return VisitSignedTypes(args, in.dtype(), [&](auto tag) {
    ArgReduce<decltype(tag)>(args, is_max, last != 0, outer, axis_dim, inner);
    return absl::OkStatus();
  });
}

// Hardmax over the axis of [outer, axis_size, inner] (Softmax's canonical
// form): 1 at ArgMax's first winner of each line, so the first NaN wins as in
// ONNX's reference (numpy's argmax), 0 elsewhere.
absl::Status RunHardmax(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  ASSIGN_OR_RETURN(const AxisLines lines, ReadAxisLines(args));
  // Plain copies: lambdas may not capture structured bindings before C++20.
  const int64_t outer = lines.outer, axis_size = lines.axis_size, inner = lines.inner;
  return VisitFloatTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* src = args.in(0).data<T>();
    T* dst = args.out(0).data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t c = 0; c < inner; ++c) {
        const int64_t base = o * axis_size * inner + c;
        int64_t best = 0;
        for (int64_t k = 1; k < axis_size; ++k) {
          if (ArgRank(Widen(src[base + k * inner]), Widen(src[base + best * inner]), true) > 0) {
            best = k;
          }
        }
        for (int64_t k = 0; k < axis_size; ++k) {
          dst[base + k * inner] = static_cast<T>(k == best ? 1.0f : 0.0f);
        }
      }
    }
    return absl::OkStatus();
  });
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

absl::Status HostSoftmax(const HostKernelArgs& args) { return RunSoftmax(args, false); }
absl::Status HostLogSoftmax(const HostKernelArgs& args) { return RunSoftmax(args, true); }
absl::Status HostLayerNormalization(const HostKernelArgs& args) {
  return RunRowNormalization(args, /*subtract_mean=*/true);
}
absl::Status HostRMSNormalization(const HostKernelArgs& args) {
  return RunRowNormalization(args, /*subtract_mean=*/false);
}
absl::Status HostGroupNormalization(const HostKernelArgs& args) {
  return RunGroupNormalization(args);
}
absl::Status HostReduceSum(const HostKernelArgs& args) { return RunReduce(args, ReduceOp::kSum); }
absl::Status HostReduceMean(const HostKernelArgs& args) {
  return RunReduce(args, ReduceOp::kMean);
}
absl::Status HostReduceProd(const HostKernelArgs& args) {
  return RunReduce(args, ReduceOp::kProd);
}
absl::Status HostReduceMax(const HostKernelArgs& args) { return RunReduce(args, ReduceOp::kMax); }
absl::Status HostReduceMin(const HostKernelArgs& args) { return RunReduce(args, ReduceOp::kMin); }
absl::Status HostReduceL1(const HostKernelArgs& args) { return RunReduce(args, ReduceOp::kL1); }
absl::Status HostReduceL2(const HostKernelArgs& args) { return RunReduce(args, ReduceOp::kL2); }
absl::Status HostReduceSumSquare(const HostKernelArgs& args) {
  return RunReduce(args, ReduceOp::kSumSquare);
}
absl::Status HostReduceLogSum(const HostKernelArgs& args) {
  return RunReduce(args, ReduceOp::kLogSum);
}
absl::Status HostReduceLogSumExp(const HostKernelArgs& args) {
  return RunReduce(args, ReduceOp::kLogSumExp);
}
absl::Status HostArgMax(const HostKernelArgs& args) { return RunArgReduce(args, true); }
absl::Status HostArgMin(const HostKernelArgs& args) { return RunArgReduce(args, false); }

absl::Status HostHardmax(const HostKernelArgs& args) { return RunHardmax(args); }
absl::Status HostCumSum(const HostKernelArgs& args) { return RunCumSum(args); }

}  // namespace graphserve
