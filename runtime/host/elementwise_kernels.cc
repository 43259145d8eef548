#include "runtime/host/elementwise_kernels.h"

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
// Elementwise ops
// ---------------------------------------------------------------------------

// Wrapping integer arithmetic: ONNX leaves overflow unspecified, and signed
// overflow must not be undefined behaviour in the oracle.
template <typename T>
T WrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
T WrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
T WrapMul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}

// Truncating division; the caller has ruled out b == 0.
template <typename T>
T TruncDiv(T a, T b) {
  if (b == -1) return WrapSub<T>(0, a);  // MIN / -1 overflows
  return a / b;
}

// C's remainder, with the sign of the dividend; the caller has ruled out
// b == 0.
template <typename T>
T TruncMod(T a, T b) {
  if (b == -1) return 0;  // MIN % -1 overflows
  return a % b;
}

// Python's %, with the sign of the divisor; the caller has ruled out b == 0.
template <typename T>
T FloorMod(T a, T b) {
  const T r = TruncMod(a, b);
  // r and b differ in sign here, so r + b cannot overflow.
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

// a^b, exact for b >= 0; for b < 0 the truncation of the real result.
template <typename T>
T IntPow(T base, T exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent % 2 == 0) ? 1 : -1;
    return 0;
  }
  T result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = WrapMul(result, base);
    base = WrapMul(base, base);
    exponent >>= 1;
  }
  return result;
}

// Mod with fmod=0 on floats, as opset 28 defines it: a - floor(a / b) * b,
// the sign of b; a zero result is a zero of b's sign; an infinite b leaves a
// finite a of its sign and gives b otherwise; NaN from fmod stays NaN.
template <typename T>
T FloatFloorMod(T a, T b) {
  const T r = std::fmod(a, b);
  if (r == T{0}) return std::copysign(T{0}, b);
  return (r < T{0}) != (b < T{0}) ? r + b : r;
}

// kFmod and kMod are ONNX Mod with fmod=1 and fmod=0 (Note [Canonical bound
// nodes]).
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFmod, kMod, kPow, kMax, kMin };

// Floats in their own type (float32 in float, as the GPU computes it; the
// 16-bit floats come here as float, see WidenedBinary), integers wrapping.
template <typename T>
T ApplyBinary(BinaryOp op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case BinaryOp::kAdd:
        return a + b;
      case BinaryOp::kSub:
        return a - b;
      case BinaryOp::kMul:
        return a * b;
      case BinaryOp::kDiv:
        return a / b;
      case BinaryOp::kFmod:
        return std::fmod(a, b);
      case BinaryOp::kMod:
        return FloatFloorMod(a, b);
      case BinaryOp::kPow:
        return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
      case BinaryOp::kMax:
        return PropagatingMax(a, b);
      case BinaryOp::kMin:
        return PropagatingMin(a, b);
    }
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return WrapAdd(a, b);
      case BinaryOp::kSub:
        return WrapSub(a, b);
      case BinaryOp::kMul:
        return WrapMul(a, b);
      case BinaryOp::kDiv:
        return TruncDiv(a, b);
      case BinaryOp::kFmod:
        return TruncMod(a, b);
      case BinaryOp::kMod:
        return FloorMod(a, b);
      case BinaryOp::kPow:
        return IntPow(a, b);
      case BinaryOp::kMax:
        return PropagatingMax(a, b);
      case BinaryOp::kMin:
        return PropagatingMin(a, b);
    }
  }
  return T{};
}

// ApplyBinary on any element type: a 16-bit float computed in float and
// rounded once, as the GPU's kernels do.
template <typename T>
T WidenedBinary(BinaryOp op, T a, T b) {
  if constexpr (kIsHost16BitFloat<T>) {
    return Narrow<T>(ApplyBinary<float>(op, Widen(a), Widen(b)));
  } else {
    return ApplyBinary<T>(op, a, b);
  }
}

// out[i] = fn(a[...], b[...]) with both operands broadcast to out's dims.
template <typename In, typename Out, typename Fn>
void BroadcastBinary(const HostTensor& a, const HostTensor& b, HostTensor& out, Fn fn) {
  const In* a_data = a.data<In>();
  const In* b_data = b.data<In>();
  Out* out_data = out.data<Out>();
  StridedWalker<2> walker(out.dims(), {StridedView{0, BroadcastStrides(a.dims(), out.dims())},
                                       StridedView{0, BroadcastStrides(b.dims(), out.dims())}});
  for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
    out_data[i] = fn(a_data[walker.offset(0)], b_data[walker.offset(1)]);
  }
}

absl::Status CheckBinaryOperands(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.in(1)));
  RETURN_IF_ERROR(RequireBroadcast(args, args.in(0), args.out(0).dims()));
  return RequireBroadcast(args, args.in(1), args.out(0).dims());
}

absl::Status RunBinaryArithmetic(const HostKernelArgs& args, BinaryOp op) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  return VisitSignedTypes(args, args.in(0).dtype(), [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      // Every divisor element reaches some output element unless the output
      // is empty, so checking up front is exact.
      const bool divides = op == BinaryOp::kDiv || op == BinaryOp::kFmod || op == BinaryOp::kMod;
      if (divides && args.out(0).num_elements() > 0) {
        const T* divisor = args.in(1).data<T>();
        for (int64_t i = 0, n = args.in(1).num_elements(); i < n; ++i) {
          if (divisor[i] == 0) {
            return args.Invalid(op == BinaryOp::kDiv ? "integer division by zero"
                                                     : "integer modulo by zero");
          }
        }
      }
    }
    BroadcastBinary<T, T>(args.in(0), args.in(1), args.out(0),
                          [op](T a, T b) { return WidenedBinary<T>(op, a, b); });
    return absl::OkStatus();
  });
}

absl::Status RunMod(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const int64_t fmod, OptionalIntAttr(args, "fmod", 0));
  if (fmod != 0 && fmod != 1) return args.Invalid("attribute fmod should be 0 or 1, got ", fmod);
  return RunBinaryArithmetic(args, fmod == 1 ? BinaryOp::kFmod : BinaryOp::kMod);
}

// Equal over every dtype, the ordered comparisons over every dtype but bool
// (binding refuses it): a NaN compares false, as in IEEE and numpy.
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual };

absl::Status RunCompare(const HostKernelArgs& args, CompareOp op) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireDType(args, args.out(0), DType::kBool, "output"));
  if (op != CompareOp::kEqual && args.in(0).dtype() == DType::kBool) {
    return UnsupportedDType(args, DType::kBool);
  }
  return VisitAny(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    BroadcastBinary<T, bool>(args.in(0), args.in(1), args.out(0), [op](T a, T b) {
      const auto x = Widen(a);
      const auto y = Widen(b);
      switch (op) {
        case CompareOp::kEqual:
          return x == y;
        case CompareOp::kLess:
          return x < y;
        case CompareOp::kGreater:
          return x > y;
        case CompareOp::kLessOrEqual:
          return x <= y;
        case CompareOp::kGreaterOrEqual:
          return x >= y;
      }
      return false;
    });
    return absl::OkStatus();
  });
}

// And, Or, Xor on bool tensors.
enum class LogicalOp { kAnd, kOr, kXor };

absl::Status RunLogical(const HostKernelArgs& args, LogicalOp op) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireDType(args, args.in(0), DType::kBool, "input"));
  RETURN_IF_ERROR(RequireDType(args, args.out(0), DType::kBool, "output"));
  BroadcastBinary<bool, bool>(args.in(0), args.in(1), args.out(0), [op](bool a, bool b) {
    switch (op) {
      case LogicalOp::kAnd:
        return a && b;
      case LogicalOp::kOr:
        return a || b;
      case LogicalOp::kXor:
        return a != b;
    }
    return false;
  });
  return absl::OkStatus();
}

absl::Status RunNot(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  RETURN_IF_ERROR(RequireDType(args, args.in(0), DType::kBool, "input"));
  const bool* in = args.in(0).data<bool>();
  bool* out = args.out(0).data<bool>();
  for (int64_t i = 0, n = args.in(0).num_elements(); i < n; ++i) out[i] = !in[i];
  return absl::OkStatus();
}

// IsNaN, and IsInf with its detect_negative / detect_positive attributes
// (both 1 by default), on the four float types; the output is bool.
absl::Status RunFloatClass(const HostKernelArgs& args, bool is_nan) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameElementCount(args, in, out));
  RETURN_IF_ERROR(RequireDType(args, out, DType::kBool, "output"));
  if (!IsFloatingDType(in.dtype())) return UnsupportedDType(args, in.dtype());
  ASSIGN_OR_RETURN(const int64_t negative, OptionalIntAttr(args, "detect_negative", 1));
  ASSIGN_OR_RETURN(const int64_t positive, OptionalIntAttr(args, "detect_positive", 1));
  return VisitAny(args, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || kIsHost16BitFloat<T>) {
      const T* src = in.data<T>();
      bool* dst = out.data<bool>();
      for (int64_t i = 0, n = in.num_elements(); i < n; ++i) {
        const double x = static_cast<double>(Widen(src[i]));
        dst[i] = is_nan ? std::isnan(x)
                        : std::isinf(x) && ((x > 0 && positive != 0) || (x < 0 && negative != 0));
      }
    }
    return absl::OkStatus();
  });
}

absl::Status RunWhere(const HostKernelArgs& args) {
  const HostTensor& cond = args.in(0);
  const HostTensor& x = args.in(1);
  const HostTensor& y = args.in(2);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireDType(args, cond, DType::kBool, "condition"));
  RETURN_IF_ERROR(RequireSameDType(args, x, y));
  RETURN_IF_ERROR(RequireSameDType(args, x, out));
  for (const HostTensor* operand : {&cond, &x, &y}) {
    RETURN_IF_ERROR(RequireBroadcast(args, *operand, out.dims()));
  }
  return VisitAny(args, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c = cond.data<bool>();
    const T* x_data = x.data<T>();
    const T* y_data = y.data<T>();
    T* out_data = out.data<T>();
    StridedWalker<3> walker(out.dims(), {StridedView{0, BroadcastStrides(cond.dims(), out.dims())},
                                         StridedView{0, BroadcastStrides(x.dims(), out.dims())},
                                         StridedView{0, BroadcastStrides(y.dims(), out.dims())}});
    for (int64_t i = 0, n = out.num_elements(); i < n; ++i, walker.Next()) {
      out_data[i] = c[walker.offset(0)] ? x_data[walker.offset(1)] : y_data[walker.offset(2)];
    }
    return absl::OkStatus();
  });
}

// out[i] = fn(in[i]) over same-shaped tensors.
template <typename T, typename Fn>
void MapElements(const HostTensor& in, HostTensor& out, Fn fn) {
  const T* src = in.data<T>();
  T* dst = out.data<T>();
  for (int64_t i = 0, n = in.num_elements(); i < n; ++i) dst[i] = fn(src[i]);
}

// Float math on the four float types: computed in double and rounded once to
// the element type (the 16-bit floats through float, as the GPU computes them
// in float).
template <typename Fn>
absl::Status RunFloatMath(const HostKernelArgs& args, Fn fn) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return VisitFloatTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    MapElements<T>(args.in(0), args.out(0),
                   [&fn](T x) { return Narrow<T>(fn(static_cast<double>(Widen(x)))); });
    return absl::OkStatus();
  });
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double Sqrt(double x) { return std::sqrt(x); }
double Exp(double x) { return std::exp(x); }
double Log(double x) { return std::log(x); }
double Tanh(double x) { return std::tanh(x); }
double Erf(double x) { return std::erf(x); }
double Reciprocal(double x) { return 1.0 / x; }
// As the CUDA kernels write them, through erfc and exp: 1 + erf(z) and
// 1 + tanh(u) cancel for negative arguments even in double (at x = -10,
// erf rounds to -1 while the GELU, -7.6e-23, is a bfloat16 value).
// The argument as the kernels round it, times 1/sqrt(2): erfc's tail
// multiplies an argument's rounding by 2z^2 (1e-13 at z = 22).
double Gelu(double x) { return 0.5 * x * std::erfc(-x * 0.7071067811865476); }
double GeluTanh(double x) {
  const double inner = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return x / (1.0 + std::exp(-2.0 * inner));
}

double Floor(double x) { return std::floor(x); }
double Ceil(double x) { return std::ceil(x); }
// Halves to even, as numpy's round (ONNX's reference): nearbyint in the
// default rounding mode.
double Round(double x) { return std::nearbyint(x); }
double Sin(double x) { return std::sin(x); }
double Cos(double x) { return std::cos(x); }
// log(1 + e^x) without overflowing e^x: ONNX Runtime's and PyTorch's value
// where ONNX's float32 reference overflows to Inf (x > 88).
double Softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
// x / (1 + |x|) as ONNX writes it: +-Inf gives NaN, as in ONNX's reference,
// ONNX Runtime and PyTorch.
double Softsign(double x) { return x / (1.0 + std::fabs(x)); }
// x tanh(softplus(x)); -Inf gives NaN (-Inf * 0), as the formula does.
double Mish(double x) { return x * std::tanh(Softplus(x)); }

// ONNX's Sign (numpy's): -1, 0 or 1; NaN stays NaN, -0 gives +0.
template <typename T>
T Sign(T x) {
  if (x > T{0}) return T{1};
  if (x < T{0}) return T{-1};
  return x == T{0} ? T{0} : x;
}

template <typename T>
T Relu(T x) {
  return x < T{0} ? T{0} : x;  // NaN passes through, as numpy's maximum(x, 0)
}
template <typename T>
T Abs(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fabs(x);
  } else {
    return x < 0 ? WrapSub<T>(0, x) : x;
  }
}
template <typename T>
T Neg(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return -x;
  } else {
    return WrapSub<T>(0, x);
  }
}

enum class SignOp { kRelu, kAbs, kNeg };

absl::Status RunSignOp(const HostKernelArgs& args, SignOp op) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return VisitSignedTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    MapElements<T>(args.in(0), args.out(0), [op](T x) {
      const auto wide = Widen(x);  // the 16-bit floats as float; exact here
      switch (op) {
        case SignOp::kRelu:
          return Narrow<T>(Relu(wide));
        case SignOp::kAbs:
          return Narrow<T>(Abs(wide));
        case SignOp::kNeg:
          return Narrow<T>(Neg(wide));
      }
      return x;
    });
    return absl::OkStatus();
  });
}

// The activations with float attributes (ONNX's defaults where a node built
// by hand lacks them). Negative inputs go through expm1, exact near 0.
absl::Status RunLeakyRelu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", 0.01f));
  return RunFloatMath(args, [alpha](double x) { return x < 0 ? alpha * x : x; });
}

absl::Status RunElu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", 1.0f));
  return RunFloatMath(args, [alpha](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
}

absl::Status RunSelu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", kSeluAlpha));
  ASSIGN_OR_RETURN(const double gamma, OptionalFloatAttr(args, "gamma", kSeluGamma));
  return RunFloatMath(
      args, [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); });
}

// max(0, x) + min(0, alpha (e^(x/alpha) - 1)): for x > 0 the second term is
// 0, otherwise the first, whatever alpha's sign (binding refuses alpha 0).
absl::Status RunCelu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", 1.0f));
  return RunFloatMath(args,
                      [alpha](double x) { return x > 0 ? x : alpha * std::expm1(x / alpha); });
}

// NaN is not above alpha: 0, as ONNX's reference.
absl::Status RunThresholdedRelu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const double alpha, OptionalFloatAttr(args, "alpha", 1.0f));
  return RunFloatMath(args, [alpha](double x) { return x > alpha ? x : 0.0; });
}

absl::Status RunSign(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return VisitSignedTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    MapElements<T>(args.in(0), args.out(0), [](T x) { return Narrow<T>(Sign(Widen(x))); });
    return absl::OkStatus();
  });
}

// x for x > 0, else slope * x (NaN passes, as ONNX's reference computes it),
// the slope broadcast to X; integers wrap.
template <typename T>
T PReluElement(T x, T slope) {
  if constexpr (std::is_integral_v<T>) {
    return x > 0 ? x : WrapMul(x, slope);
  } else {
    const auto wide = Widen(x);
    return wide > 0 ? x : Narrow<T>(wide * Widen(slope));
  }
}

absl::Status RunPRelu(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckBinaryOperands(args));
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  if (args.in(0).dims() != args.out(0).dims()) {
    return args.Invalid("X ", DimsToString(args.in(0).dims()), " and Y ",
                        DimsToString(args.out(0).dims()), " differ");
  }
  return VisitSignedTypes(args, args.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    BroadcastBinary<T, T>(args.in(0), args.in(1), args.out(0), PReluElement<T>);
    return absl::OkStatus();
  });
}

// One element of Cast, as ONNX (numpy's astype) defines it: to bool is
// x != 0 (NaN is non-zero: true); float to integer truncates toward zero,
// and NaN and out-of-range values, which ONNX leaves undefined, saturate
// (NaN gives 0) instead of being undefined behaviour; integer to integer
// wraps; to a 16-bit float rounds to nearest even. The 16-bit floats are read
// through float, which holds each of their values exactly.
template <typename To, typename From>
To CastElement(From x) {
  if constexpr (kIsHost16BitFloat<From>) {
    return CastElement<To>(Widen(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From{0};
  } else if constexpr (kIsHost16BitFloat<To>) {
    return To(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // The limits as From: 2^63 and 2^64 are exact in float and double, so
    // x < kHigh keeps every x whose truncation fits.
    const From low = static_cast<From>(std::numeric_limits<To>::min());
    const From high = static_cast<From>(std::numeric_limits<To>::max());
    if (std::isnan(x)) return To{0};
    if (x <= low) return std::numeric_limits<To>::min();
    if (x >= high) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

absl::Status RunCast(const HostKernelArgs& args) {
  const HostTensor& in = args.in(0);
  HostTensor& out = args.out(0);
  RETURN_IF_ERROR(RequireSameElementCount(args, in, out));
  const int64_t to = IntAttr(args.node.attributes, "to");
  if (to != static_cast<int64_t>(out.dtype())) {
    return args.Invalid("attribute to=", to, " does not match output dtype ",
                        DTypeString(out.dtype()));
  }
  return VisitAny(args, in.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    return VisitAny(args, out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* src = in.data<From>();
      To* dst = out.data<To>();
      for (int64_t i = 0, n = in.num_elements(); i < n; ++i) dst[i] = CastElement<To>(src[i]);
      return absl::OkStatus();
    });
  });
}

}  // namespace

absl::Status HostAdd(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kAdd);
}
absl::Status HostSub(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kSub);
}
absl::Status HostMul(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kMul);
}
absl::Status HostDiv(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kDiv);
}
absl::Status HostPow(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kPow);
}
absl::Status HostMax(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kMax);
}
absl::Status HostMin(const HostKernelArgs& args) {
  return RunBinaryArithmetic(args, BinaryOp::kMin);
}
absl::Status HostMod(const HostKernelArgs& args) { return RunMod(args); }
absl::Status HostEqual(const HostKernelArgs& args) { return RunCompare(args, CompareOp::kEqual); }
absl::Status HostLess(const HostKernelArgs& args) { return RunCompare(args, CompareOp::kLess); }
absl::Status HostGreater(const HostKernelArgs& args) {
  return RunCompare(args, CompareOp::kGreater);
}
absl::Status HostLessOrEqual(const HostKernelArgs& args) {
  return RunCompare(args, CompareOp::kLessOrEqual);
}
absl::Status HostGreaterOrEqual(const HostKernelArgs& args) {
  return RunCompare(args, CompareOp::kGreaterOrEqual);
}
absl::Status HostAnd(const HostKernelArgs& args) { return RunLogical(args, LogicalOp::kAnd); }
absl::Status HostOr(const HostKernelArgs& args) { return RunLogical(args, LogicalOp::kOr); }
absl::Status HostXor(const HostKernelArgs& args) { return RunLogical(args, LogicalOp::kXor); }
absl::Status HostNot(const HostKernelArgs& args) { return RunNot(args); }
absl::Status HostIsNaN(const HostKernelArgs& args) { return RunFloatClass(args, true); }
absl::Status HostIsInf(const HostKernelArgs& args) { return RunFloatClass(args, false); }
absl::Status HostWhere(const HostKernelArgs& args) { return RunWhere(args); }
absl::Status HostSqrt(const HostKernelArgs& args) { return RunFloatMath(args, Sqrt); }
absl::Status HostExp(const HostKernelArgs& args) { return RunFloatMath(args, Exp); }
absl::Status HostLog(const HostKernelArgs& args) { return RunFloatMath(args, Log); }
absl::Status HostSigmoid(const HostKernelArgs& args) { return RunFloatMath(args, Sigmoid); }
absl::Status HostTanh(const HostKernelArgs& args) { return RunFloatMath(args, Tanh); }
absl::Status HostErf(const HostKernelArgs& args) { return RunFloatMath(args, Erf); }
absl::Status HostReciprocal(const HostKernelArgs& args) { return RunFloatMath(args, Reciprocal); }
absl::Status HostGelu(const HostKernelArgs& args) {
  ASSIGN_OR_RETURN(const int64_t tanh_form, OptionalIntAttr(args, "approximate_tanh", 0));
  return RunFloatMath(args, tanh_form != 0 ? GeluTanh : Gelu);
}
absl::Status HostRelu(const HostKernelArgs& args) { return RunSignOp(args, SignOp::kRelu); }
absl::Status HostAbs(const HostKernelArgs& args) { return RunSignOp(args, SignOp::kAbs); }
absl::Status HostNeg(const HostKernelArgs& args) { return RunSignOp(args, SignOp::kNeg); }
absl::Status HostLeakyRelu(const HostKernelArgs& args) { return RunLeakyRelu(args); }
absl::Status HostFloor(const HostKernelArgs& args) { return RunFloatMath(args, Floor); }
absl::Status HostCeil(const HostKernelArgs& args) { return RunFloatMath(args, Ceil); }
absl::Status HostRound(const HostKernelArgs& args) { return RunFloatMath(args, Round); }
absl::Status HostSign(const HostKernelArgs& args) { return RunSign(args); }
absl::Status HostSin(const HostKernelArgs& args) { return RunFloatMath(args, Sin); }
absl::Status HostCos(const HostKernelArgs& args) { return RunFloatMath(args, Cos); }
absl::Status HostSoftplus(const HostKernelArgs& args) { return RunFloatMath(args, Softplus); }
absl::Status HostSoftsign(const HostKernelArgs& args) { return RunFloatMath(args, Softsign); }
absl::Status HostMish(const HostKernelArgs& args) { return RunFloatMath(args, Mish); }
absl::Status HostElu(const HostKernelArgs& args) { return RunElu(args); }
absl::Status HostSelu(const HostKernelArgs& args) { return RunSelu(args); }
absl::Status HostCelu(const HostKernelArgs& args) { return RunCelu(args); }
absl::Status HostThresholdedRelu(const HostKernelArgs& args) { return RunThresholdedRelu(args); }
absl::Status HostPRelu(const HostKernelArgs& args) { return RunPRelu(args); }
absl::Status HostCast(const HostKernelArgs& args) { return RunCast(args); }

}  // namespace graphserve
