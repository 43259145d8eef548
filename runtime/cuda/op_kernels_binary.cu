// Two- and three-input elementwise ops with multidirectional broadcasting
// (Note [Strided layouts]): Add Sub Mul Div Mod Pow Max Min, the comparisons
// (Equal Less Greater LessOrEqual GreaterOrEqual), And Or Xor, PRelu, Where.

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

struct AddFn {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a + b; }
};
struct SubFn {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a - b; }
};
struct MulFn {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a * b; }
};
// int64 division truncates toward zero, as C++'s does.
struct DivFn {
  template <typename T>
  __device__ T operator()(T a, T b) const { return a / b; }
};
// Mod with fmod=1: the sign of the dividend. fmod is exact; an integer
// divisor of 0 gives 0 rather than a trap or an undefined result.
struct FmodFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return fmod(a, b);
    } else {
      // b == -1 also gives 0, for every a: MIN % -1 would overflow.
      return b == 0 || b == -1 ? T(0) : a % b;
    }
  }
};
// Mod with fmod=0: the sign of the divisor, as Python's %. An integer
// divisor of 0 gives 0, as for FmodFn; floats as opset 28 defines them (the
// host's FloatFloorMod: a zero result takes b's sign, NaN stays NaN).
struct ModFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    const T r = FmodFn{}(a, b);
    if constexpr (std::is_floating_point_v<T>) {
      if (r == T(0)) return copysign(T(0), b);
      return (r < T(0)) != (b < T(0)) ? r + b : r;
    } else {
      // r and b differ in sign here, so r + b cannot overflow.
      return r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
  }
};
struct PowFn {
  // Floats: pow. Integers: the exact power; a negative exponent gives the
  // truncated reciprocal (0 unless |a| == 1).
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      return pow(a, b);
    } else {
      if (b < 0) {
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? -1 : 1;
        return 0;
      }
      // Unsigned arithmetic wraps on overflow instead of being undefined.
      using U = std::make_unsigned_t<T>;
      U result = 1;
      U base = static_cast<U>(a);
      for (U e = static_cast<U>(b); e != 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    }
  }
};
// Max and Min propagate NaN, as numpy's maximum/minimum (ONNX's reference).
struct MaxFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (isnan(a) || isnan(b)) return static_cast<T>(CUDART_NAN);
    }
    return a < b ? b : a;
  }
};
struct MinFn {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (isnan(a) || isnan(b)) return static_cast<T>(CUDART_NAN);
    }
    return b < a ? b : a;
  }
};
// Comparisons as IEEE orders floats (NaN compares false), __half and
// __nv_bfloat16 through their own operators.
template <BinaryOp kOp>
struct CompareFn {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    if constexpr (kOp == BinaryOp::kEqual) return a == b;
    if constexpr (kOp == BinaryOp::kLess) return a < b;
    if constexpr (kOp == BinaryOp::kGreater) return a > b;
    if constexpr (kOp == BinaryOp::kLessOrEqual) return a <= b;
    if constexpr (kOp == BinaryOp::kGreaterOrEqual) return a >= b;
    return false;
  }
};
template <BinaryOp kOp>
struct LogicalFn {
  __device__ bool operator()(bool a, bool b) const {
    if constexpr (kOp == BinaryOp::kAnd) return a && b;
    if constexpr (kOp == BinaryOp::kOr) return a || b;
    return a != b;  // kXor
  }
};
// x for x > 0, else slope * x (NaN passes); the 16-bit floats through
// float, where the product of two of them is exact; integers wrap.
struct PReluFn {
  template <typename T>
  __device__ T operator()(T x, T slope) const {
    if constexpr (kIsHalfType<T>) {
      const float v = static_cast<float>(x);
      return v > 0.0f ? x : static_cast<T>(v * static_cast<float>(slope));
    } else if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return x > 0 ? x : static_cast<T>(static_cast<U>(x) * static_cast<U>(slope));
    } else {
      return x > T(0) ? x : x * slope;
    }
  }
};
struct WhereFn {
  template <typename T>
  __device__ T operator()(bool cond, T x, T y) const { return cond ? x : y; }
};

template <typename T, typename F>
cudaError_t LaunchTyped(const BinaryParams& p, F f, const void* a, const void* b, void* out,
                        cudaStream_t stream) {
  return LaunchMapped(p.layout, f, static_cast<T*>(out), stream, static_cast<const T*>(a),
                      static_cast<const T*>(b));
}

// Arithmetic ops: the four float types in their compute type, int64 and
// int32 in their own.
template <typename F>
cudaError_t LaunchArithmetic(const BinaryParams& p, F f, const void* a, const void* b, void* out,
                             cudaStream_t stream) {
  return VisitDeviceType(p.input_type, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (kIsFloatType<T>) {
      return LaunchTyped<T>(p, InComputeType<F>{f}, a, b, out, stream);
    } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
      return LaunchTyped<T>(p, f, a, b, out, stream);
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

// Every row of the datatype table (bool only for Equal: binding refuses
// ordering it).
template <BinaryOp kOp>
cudaError_t LaunchCompare(const BinaryParams& p, const void* a, const void* b, void* out,
                          cudaStream_t stream) {
  return VisitDeviceType(p.input_type, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, bool> && kOp != BinaryOp::kEqual) {
      return cudaErrorInvalidValue;
    } else {
      return LaunchMapped(p.layout, CompareFn<kOp>{}, static_cast<bool*>(out), stream,
                          static_cast<const T*>(a), static_cast<const T*>(b));
    }
  });
}

// The float types, int32 and int64.
template <typename F>
cudaError_t LaunchSignedTypes(const BinaryParams& p, F f, const void* a, const void* b,
                              void* out, cudaStream_t stream) {
  return VisitDeviceType(p.input_type, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_floating_point_v<T> || kIsHalfType<T> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      return LaunchTyped<T>(p, f, a, b, out, stream);
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

template <BinaryOp kOp>
cudaError_t LaunchLogical(const BinaryParams& p, const void* a, const void* b, void* out,
                          cudaStream_t stream) {
  if (p.input_type != DType::kBool) return cudaErrorInvalidValue;
  return LaunchMapped(p.layout, LogicalFn<kOp>{}, static_cast<bool*>(out), stream,
                      static_cast<const bool*>(a), static_cast<const bool*>(b));
}

template <typename T>
cudaError_t LaunchWhereTyped(const WhereParams& p, const void* cond, const void* x,
                             const void* y, void* out, cudaStream_t stream) {
  return LaunchMapped(p.layout, WhereFn{}, static_cast<T*>(out), stream,
                      static_cast<const bool*>(cond), static_cast<const T*>(x),
                      static_cast<const T*>(y));
}

}  // namespace

cudaError_t LaunchBinary(const BinaryParams& p, const void* a, const void* b, void* output,
                         cudaStream_t stream) {
  switch (p.op) {
    case BinaryOp::kAdd:
      return LaunchArithmetic(p, AddFn{}, a, b, output, stream);
    case BinaryOp::kSub:
      return LaunchArithmetic(p, SubFn{}, a, b, output, stream);
    case BinaryOp::kMul:
      return LaunchArithmetic(p, MulFn{}, a, b, output, stream);
    case BinaryOp::kDiv:
      return LaunchArithmetic(p, DivFn{}, a, b, output, stream);
    case BinaryOp::kFmod:
      return LaunchArithmetic(p, FmodFn{}, a, b, output, stream);
    case BinaryOp::kMod:
      return LaunchArithmetic(p, ModFn{}, a, b, output, stream);
    case BinaryOp::kPow:
      return LaunchArithmetic(p, PowFn{}, a, b, output, stream);
    case BinaryOp::kMax:
      return LaunchArithmetic(p, MaxFn{}, a, b, output, stream);
    case BinaryOp::kMin:
      return LaunchArithmetic(p, MinFn{}, a, b, output, stream);
    case BinaryOp::kEqual:
      return LaunchCompare<BinaryOp::kEqual>(p, a, b, output, stream);
    case BinaryOp::kLess:
      return LaunchCompare<BinaryOp::kLess>(p, a, b, output, stream);
    case BinaryOp::kGreater:
      return LaunchCompare<BinaryOp::kGreater>(p, a, b, output, stream);
    case BinaryOp::kLessOrEqual:
      return LaunchCompare<BinaryOp::kLessOrEqual>(p, a, b, output, stream);
    case BinaryOp::kGreaterOrEqual:
      return LaunchCompare<BinaryOp::kGreaterOrEqual>(p, a, b, output, stream);
    case BinaryOp::kAnd:
      return LaunchLogical<BinaryOp::kAnd>(p, a, b, output, stream);
    case BinaryOp::kOr:
      return LaunchLogical<BinaryOp::kOr>(p, a, b, output, stream);
    case BinaryOp::kXor:
      return LaunchLogical<BinaryOp::kXor>(p, a, b, output, stream);
    case BinaryOp::kPRelu:
      return LaunchSignedTypes(p, PReluFn{}, a, b, output, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchWhere(const WhereParams& p, const void* cond, const void* x, const void* y,
                        void* output, cudaStream_t stream) {
  // Where only selects: the element size is all that matters.
  return VisitElementBits(p.value_type, [&](auto bits) {
    return LaunchWhereTyped<decltype(bits)>(p, cond, x, y, output, stream);
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
