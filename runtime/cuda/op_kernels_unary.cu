// One-input elementwise ops (the float math, activations, Sign, the tests),
// Cast, and the strided copy behind Expand, Transpose and Slice (Note
// [Strided layouts]).

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

struct CopyFn {
  template <typename T>
  __device__ T operator()(T x) const { return x; }
};

// One element of Cast, as the host reference's CastElement
// (runtime/host/elementwise_kernels.cc): to bool is x != 0; float to integer
// truncates toward zero, NaN gives 0 and out-of-range values saturate; integer
// to integer wraps; to a 16-bit float rounds to nearest even. The 16-bit
// floats are read through float, which holds each of their values exactly.
template <typename To, typename From>
__device__ __forceinline__ To CastElement(From x) {
  if constexpr (kIsHalfType<From>) {
    return CastElement<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != static_cast<From>(0);
  } else if constexpr (kIsHalfType<To>) {
    return To(static_cast<float>(x));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    const From low = static_cast<From>(std::numeric_limits<To>::min());
    const From high = static_cast<From>(std::numeric_limits<To>::max());
    if (isnan(x)) return To{0};
    if (x <= low) return std::numeric_limits<To>::min();
    if (x >= high) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

template <typename To>
struct CastFn {
  template <typename From>
  __device__ To operator()(From x) const {
    return CastElement<To>(x);
  }
};

// The float math, written once over the compute type C (float, or double
// for float64; the 16-bit floats run in float through InComputeType) with
// CUDA's overloads of the math functions, which are the f-suffixed ones for
// float: float32 computes exactly what it did when these were float-only.
struct SqrtFn {
  template <typename C>
  __device__ C operator()(C x) const { return sqrt(x); }
};
struct ExpFn {
  template <typename C>
  __device__ C operator()(C x) const { return exp(x); }
};
struct LogFn {
  template <typename C>
  __device__ C operator()(C x) const { return log(x); }
};
struct TanhFn {
  template <typename C>
  __device__ C operator()(C x) const { return tanh(x); }
};
struct ErfFn {
  template <typename C>
  __device__ C operator()(C x) const { return erf(x); }
};
// Never overflows exp: for x < 0 it uses e^x / (1 + e^x).
struct SigmoidFn {
  template <typename C>
  __device__ C operator()(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + exp(-x));
    const C e = exp(x);
    return e / (C(1) + e);
  }
};
struct AbsFn {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return fabs(x);
    } else {
      return x < 0 ? -x : x;
    }
  }
};
struct NegFn {
  template <typename T>
  __device__ T operator()(T x) const { return -x; }
};
// NaN passes through both, as numpy's maximum(x, 0) (ONNX's reference).
struct ReluFn {
  template <typename T>
  __device__ T operator()(T x) const { return x < static_cast<T>(0) ? static_cast<T>(0) : x; }
};
struct LeakyReluFn {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
};

struct ReciprocalFn {
  template <typename C>
  __device__ C operator()(C x) const { return C(1) / x; }
};
// 0.5 x (1 + erf(x / sqrt(2))) written as 0.5 x erfc(-x / sqrt(2)), the
// same value without 1 + erf cancelling for negative x: float keeps the
// GELU of x = -6 (-6e-9, a bfloat16 value) where 1 + erf(x) rounds to 0.
// The constant is a double literal rounded to C.
struct GeluFn {
  template <typename C>
  __device__ C operator()(C x) const { return C(0.5) * x * erfc(-x * C(0.7071067811865476)); }
};
// 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), written as
// x / (1 + e^(-2u)) for the same reason (1 + tanh(u) = 2 / (1 + e^(-2u))).
struct GeluTanhFn {
  template <typename C>
  __device__ C operator()(C x) const {
    const C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
    return x / (C(1) + exp(C(-2) * inner));
  }
};
struct NotFn {
  __device__ bool operator()(bool x) const { return !x; }
};
// Floats of every width, read through float or double.
struct IsNaNFn {
  template <typename T>
  __device__ bool operator()(T x) const {
    return isnan(static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(x));
  }
};
struct IsInfFn {
  bool negative;
  bool positive;
  template <typename T>
  __device__ bool operator()(T x) const {
    const auto v = static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(x);
    return isinf(v) && (v > 0 ? positive : negative);
  }
};

// The float math of the newer unary ops, written once over the compute type
// C (float, or double for float64) through CUDA's overloads of the math
// functions; the formulas are the host reference's
// (runtime/host/elementwise_kernels.cc), NaN and the infinities included.
struct FloorFn {
  template <typename C>
  __device__ C operator()(C x) const { return floor(x); }
};
struct CeilFn {
  template <typename C>
  __device__ C operator()(C x) const { return ceil(x); }
};
// rint rounds halves to even in the default rounding mode, as numpy's round.
struct RoundFn {
  template <typename C>
  __device__ C operator()(C x) const { return rint(x); }
};
struct SinFn {
  template <typename C>
  __device__ C operator()(C x) const { return sin(x); }
};
struct CosFn {
  template <typename C>
  __device__ C operator()(C x) const { return cos(x); }
};
// log(1 + e^x) without overflowing e^x.
struct SoftplusFn {
  template <typename C>
  __device__ C operator()(C x) const {
    return x > C(0) ? x + log1p(exp(-x)) : log1p(exp(x));
  }
};
// As written: +-Inf gives NaN.
struct SoftsignFn {
  template <typename C>
  __device__ C operator()(C x) const { return x / (C(1) + fabs(x)); }
};
struct MishFn {
  template <typename C>
  __device__ C operator()(C x) const { return x * tanh(SoftplusFn{}(x)); }
};
struct EluFn {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const { return x < C(0) ? C(alpha) * expm1(x) : x; }
};
struct SeluFn {
  float alpha;
  float gamma;
  template <typename C>
  __device__ C operator()(C x) const {
    return x > C(0) ? C(gamma) * x : C(gamma) * C(alpha) * expm1(x);
  }
};
// max(0, x) + min(0, alpha (e^(x/alpha) - 1)), one term or the other.
// A negative alpha makes x / alpha positive: past 80, alpha * e^z is taken
// as one exp so that e^z alone cannot overflow float where the product fits
// (alpha -0.5, x -44.5: e^89 overflows, -0.5 e^89 does not); the -alpha
// term is below e^-80 of the result there.
struct CeluFn {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const {
    if (x > C(0)) return x;
    const C z = x / C(alpha);
    if (z > C(80)) return copysign(exp(z + log(fabs(C(alpha)))), C(alpha));
    return C(alpha) * expm1(z);
  }
};
// NaN is not above alpha: 0.
struct ThresholdedReluFn {
  float alpha;
  template <typename C>
  __device__ C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};
// -1, 0 or 1 in any signed type; NaN stays NaN, -0 gives +0.
struct SignFn {
  template <typename T>
  __device__ T operator()(T x) const {
    if (x > T(0)) return T(1);
    if (x < T(0)) return T(-1);
    return x == T(0) ? T(0) : x;
  }
};

template <typename T>
const T* In(const void* ptr) {
  return static_cast<const T*>(ptr);
}
template <typename T>
T* Out(void* ptr) {
  return static_cast<T*>(ptr);
}

// Every pair of table rows. Cast's layout is contiguous (MakeCast), so only
// the contiguous kernels are instantiated: 13 x 13 pairs of them.
cudaError_t LaunchCast(const UnaryParams& p, const void* in, void* out, cudaStream_t stream) {
  if (!p.layout.contiguous) return cudaErrorInvalidValue;
  return VisitDeviceType(p.input_type, [&](auto from_tag) {
    using From = typename decltype(from_tag)::Type;
    return VisitDeviceType(p.output_type, [&](auto to_tag) {
      using To = typename decltype(to_tag)::Type;
      return LaunchContiguousMapped(p.layout.num_elements, CastFn<To>{}, Out<To>(out), stream,
                                    In<From>(in));
    });
  });
}

// `f` over the four float types, in their compute type; with
// kSignedIntegers, int32 and int64 too, in their own type.
template <bool kSignedIntegers = false, typename F>
cudaError_t LaunchFloatTypes(const UnaryParams& p, F f, const void* in, void* out,
                             cudaStream_t stream) {
  return VisitDeviceType(p.input_type, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (kIsFloatType<T>) {
      return LaunchMapped(p.layout, InComputeType<F>{f}, Out<T>(out), stream, In<T>(in));
    } else if constexpr (kSignedIntegers &&
                         (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>)) {
      return LaunchMapped(p.layout, f, Out<T>(out), stream, In<T>(in));
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

// Note [Vector copies]
// ~~~~~~~~~~~~~~~~~~~~
// A strided copy whose innermost dim is read contiguously (the heads' split
// and merge Transposes of attention, [B, S, H, d] <-> [B, H, S, d]; Slices
// of whole rows) moves 16-byte units when that dim's bytes, every other
// stride's bytes and both pointers allow it: a quarter of the float32
// elements to index, one 16-byte load and store each. BERT-base's q, k and v
// Transposes at batch 8 of 128 tokens took 6.8 us each element by element
// (H200, ncu), three times what their bytes need.
using Vec16 = uint4;

// `layout` (of `element_bytes` elements, output dense) over 16-byte units,
// or nullopt where a unit would straddle a stride.
std::optional<StridedLayout> Vec16Layout(const StridedLayout& layout, size_t element_bytes,
                                         const void* in, void* out) {
  const int64_t units = static_cast<int64_t>(sizeof(Vec16) / element_bytes);
  const int last = layout.rank - 1;
  if (units <= 1 || layout.contiguous || layout.strides[0][last] != 1 ||
      layout.dims[last] % units != 0 || reinterpret_cast<uintptr_t>(in) % sizeof(Vec16) != 0 ||
      reinterpret_cast<uintptr_t>(out) % sizeof(Vec16) != 0) {
    return std::nullopt;
  }
  StridedLayout wide = layout;
  for (int d = 0; d < last; ++d) {
    if (layout.strides[0][d] % units != 0) return std::nullopt;
    wide.strides[0][d] = layout.strides[0][d] / units;
  }
  wide.dims[last] = layout.dims[last] / units;
  wide.num_elements = layout.num_elements / units;
  wide.index32 = wide.num_elements <= INT32_MAX;
  return wide;
}

// Data movement depends only on the element size.
cudaError_t LaunchCopy(const UnaryParams& p, const void* in, void* out, cudaStream_t stream) {
  if (const std::optional<StridedLayout> wide =
          Vec16Layout(p.layout, DTypeSize(p.input_type), in, out)) {
    return LaunchMapped(*wide, CopyFn{}, Out<Vec16>(out), stream, In<Vec16>(in));
  }
  return VisitElementBits(p.input_type, [&](auto bits) {
    using Bits = decltype(bits);
    return LaunchMapped(p.layout, CopyFn{}, Out<Bits>(out), stream, In<Bits>(in));
  });
}

// The float types of the table into a bool output.
template <typename F>
cudaError_t LaunchFloatTest(const UnaryParams& p, F f, const void* in, void* out,
                            cudaStream_t stream) {
  if (!IsFloatingDType(p.input_type) || p.output_type != DType::kBool) {
    return cudaErrorInvalidValue;
  }
  return VisitDeviceType(p.input_type, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_floating_point_v<T> || kIsHalfType<T>) {
      return LaunchMapped(p.layout, f, Out<bool>(out), stream, In<T>(in));
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace

cudaError_t LaunchUnary(const UnaryParams& p, const void* input, void* output,
                        cudaStream_t stream) {
  switch (p.op) {
    case UnaryOp::kCopy:
      return LaunchCopy(p, input, output, stream);
    case UnaryOp::kCast:
      if (p.input_type == p.output_type) return LaunchCopy(p, input, output, stream);
      return LaunchCast(p, input, output, stream);
    case UnaryOp::kSqrt:
      return LaunchFloatTypes(p, SqrtFn{}, input, output, stream);
    case UnaryOp::kExp:
      return LaunchFloatTypes(p, ExpFn{}, input, output, stream);
    case UnaryOp::kLog:
      return LaunchFloatTypes(p, LogFn{}, input, output, stream);
    case UnaryOp::kTanh:
      return LaunchFloatTypes(p, TanhFn{}, input, output, stream);
    case UnaryOp::kErf:
      return LaunchFloatTypes(p, ErfFn{}, input, output, stream);
    case UnaryOp::kSigmoid:
      return LaunchFloatTypes(p, SigmoidFn{}, input, output, stream);
    case UnaryOp::kLeakyRelu:
      return LaunchFloatTypes(p, LeakyReluFn{p.alpha}, input, output, stream);
    case UnaryOp::kAbs:
      return LaunchFloatTypes</*kSignedIntegers=*/true>(p, AbsFn{}, input, output, stream);
    case UnaryOp::kNeg:
      return LaunchFloatTypes</*kSignedIntegers=*/true>(p, NegFn{}, input, output, stream);
    case UnaryOp::kRelu:
      return LaunchFloatTypes</*kSignedIntegers=*/true>(p, ReluFn{}, input, output, stream);
    case UnaryOp::kReciprocal:
      return LaunchFloatTypes(p, ReciprocalFn{}, input, output, stream);
    case UnaryOp::kGelu:
      return LaunchFloatTypes(p, GeluFn{}, input, output, stream);
    case UnaryOp::kGeluTanh:
      return LaunchFloatTypes(p, GeluTanhFn{}, input, output, stream);
    case UnaryOp::kNot:
      if (p.input_type != DType::kBool) return cudaErrorInvalidValue;
      return LaunchMapped(p.layout, NotFn{}, Out<bool>(output), stream, In<bool>(input));
    case UnaryOp::kIsNaN:
      return LaunchFloatTest(p, IsNaNFn{}, input, output, stream);
    case UnaryOp::kIsInf:
      return LaunchFloatTest(p, IsInfFn{p.detect_negative, p.detect_positive}, input, output,
                             stream);
    case UnaryOp::kFloor:
      return LaunchFloatTypes(p, FloorFn{}, input, output, stream);
    case UnaryOp::kCeil:
      return LaunchFloatTypes(p, CeilFn{}, input, output, stream);
    case UnaryOp::kRound:
      return LaunchFloatTypes(p, RoundFn{}, input, output, stream);
    case UnaryOp::kSin:
      return LaunchFloatTypes(p, SinFn{}, input, output, stream);
    case UnaryOp::kCos:
      return LaunchFloatTypes(p, CosFn{}, input, output, stream);
    case UnaryOp::kSoftplus:
      return LaunchFloatTypes(p, SoftplusFn{}, input, output, stream);
    case UnaryOp::kSoftsign:
      return LaunchFloatTypes(p, SoftsignFn{}, input, output, stream);
    case UnaryOp::kMish:
      return LaunchFloatTypes(p, MishFn{}, input, output, stream);
    case UnaryOp::kElu:
      return LaunchFloatTypes(p, EluFn{p.alpha}, input, output, stream);
    case UnaryOp::kSelu:
      return LaunchFloatTypes(p, SeluFn{p.alpha, p.gamma}, input, output, stream);
    case UnaryOp::kCelu:
      return LaunchFloatTypes(p, CeluFn{p.alpha}, input, output, stream);
    case UnaryOp::kThresholdedRelu:
      return LaunchFloatTypes(p, ThresholdedReluFn{p.alpha}, input, output, stream);
    case UnaryOp::kSign:
      return LaunchFloatTypes</*kSignedIntegers=*/true>(p, SignFn{}, input, output, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace op_kernels_internal
}  // namespace graphserve
