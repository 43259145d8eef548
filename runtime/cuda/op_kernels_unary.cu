// One-input elementwise ops, Cast, and the strided copy behind Expand,
// Transpose and Slice (Note [Strided layouts]).

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

struct CopyFn {
  template <typename T>
  __device__ T operator()(T x) const { return x; }
};

// float -> int64 truncates toward zero; anything -> bool is x != 0.
template <typename To>
struct CastFn {
  template <typename From>
  __device__ To operator()(From x) const {
    if constexpr (std::is_same_v<To, bool>) {
      return x != static_cast<From>(0);
    } else {
      return static_cast<To>(x);
    }
  }
};

struct SqrtFn {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
struct ExpFn {
  __device__ float operator()(float x) const { return expf(x); }
};
struct LogFn {
  __device__ float operator()(float x) const { return logf(x); }
};
struct TanhFn {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct ErfFn {
  __device__ float operator()(float x) const { return erff(x); }
};
// Never overflows exp: for x < 0 it uses e^x / (1 + e^x).
struct SigmoidFn {
  __device__ float operator()(float x) const {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
  }
};
struct AbsFn {
  __device__ float operator()(float x) const { return fabsf(x); }
  __device__ int64_t operator()(int64_t x) const { return x < 0 ? -x : x; }
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
  __device__ float operator()(float x) const { return x < 0.0f ? alpha * x : x; }
};

template <typename T>
const T* In(const void* ptr) {
  return static_cast<const T*>(ptr);
}
template <typename T>
T* Out(void* ptr) {
  return static_cast<T*>(ptr);
}

template <typename From>
cudaError_t LaunchCastFrom(const UnaryParams& p, const From* in, void* out, cudaStream_t stream) {
  switch (p.output_type) {
    case ElemType::kFloat32:
      return LaunchMapped(p.layout, CastFn<float>{}, Out<float>(out), stream, in);
    case ElemType::kInt64:
      return LaunchMapped(p.layout, CastFn<int64_t>{}, Out<int64_t>(out), stream, in);
    case ElemType::kBool:
      return LaunchMapped(p.layout, CastFn<bool>{}, Out<bool>(out), stream, in);
  }
  return cudaErrorInvalidValue;
}

template <typename F>
cudaError_t LaunchFloatOnly(const UnaryParams& p, F f, const void* in, void* out,
                            cudaStream_t stream) {
  if (p.input_type != ElemType::kFloat32) return cudaErrorInvalidValue;
  return LaunchMapped(p.layout, f, Out<float>(out), stream, In<float>(in));
}

template <typename F>
cudaError_t LaunchFloatOrInt64(const UnaryParams& p, F f, const void* in, void* out,
                               cudaStream_t stream) {
  switch (p.input_type) {
    case ElemType::kFloat32:
      return LaunchMapped(p.layout, f, Out<float>(out), stream, In<float>(in));
    case ElemType::kInt64:
      return LaunchMapped(p.layout, f, Out<int64_t>(out), stream, In<int64_t>(in));
    case ElemType::kBool:
      break;
  }
  return cudaErrorInvalidValue;
}

// Data movement depends only on the element size.
cudaError_t LaunchCopy(const UnaryParams& p, const void* in, void* out, cudaStream_t stream) {
  switch (p.input_type) {
    case ElemType::kFloat32:
      return LaunchMapped(p.layout, CopyFn{}, Out<uint32_t>(out), stream, In<uint32_t>(in));
    case ElemType::kInt64:
      return LaunchMapped(p.layout, CopyFn{}, Out<uint64_t>(out), stream, In<uint64_t>(in));
    case ElemType::kBool:
      return LaunchMapped(p.layout, CopyFn{}, Out<uint8_t>(out), stream, In<uint8_t>(in));
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t LaunchUnary(const UnaryParams& p, const void* input, void* output,
                        cudaStream_t stream) {
  switch (p.op) {
    case UnaryOp::kCopy:
      return LaunchCopy(p, input, output, stream);
    case UnaryOp::kCast:
      if (p.input_type == p.output_type) return LaunchCopy(p, input, output, stream);
      switch (p.input_type) {
        case ElemType::kFloat32:
          return LaunchCastFrom(p, In<float>(input), output, stream);
        case ElemType::kInt64:
          return LaunchCastFrom(p, In<int64_t>(input), output, stream);
        case ElemType::kBool:
          return LaunchCastFrom(p, In<bool>(input), output, stream);
      }
      return cudaErrorInvalidValue;
    case UnaryOp::kSqrt:
      return LaunchFloatOnly(p, SqrtFn{}, input, output, stream);
    case UnaryOp::kExp:
      return LaunchFloatOnly(p, ExpFn{}, input, output, stream);
    case UnaryOp::kLog:
      return LaunchFloatOnly(p, LogFn{}, input, output, stream);
    case UnaryOp::kTanh:
      return LaunchFloatOnly(p, TanhFn{}, input, output, stream);
    case UnaryOp::kErf:
      return LaunchFloatOnly(p, ErfFn{}, input, output, stream);
    case UnaryOp::kSigmoid:
      return LaunchFloatOnly(p, SigmoidFn{}, input, output, stream);
    case UnaryOp::kLeakyRelu:
      return LaunchFloatOnly(p, LeakyReluFn{p.alpha}, input, output, stream);
    case UnaryOp::kAbs:
      return LaunchFloatOrInt64(p, AbsFn{}, input, output, stream);
    case UnaryOp::kNeg:
      return LaunchFloatOrInt64(p, NegFn{}, input, output, stream);
    case UnaryOp::kRelu:
      return LaunchFloatOrInt64(p, ReluFn{}, input, output, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace op_kernels_internal
}  // namespace graphserve
