#pragma once
// The datatype table's device columns (Note [Datatype table] in
// common/dtype_table.h) for the kernels: DeviceType<DType::kFloat16> is
// __half, and VisitDeviceType calls a function with the device type of a
// runtime DType, so a kernel written over T is instantiated per row instead
// of per hand-written case. Included by .cu files only (nvcc).

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "common/dtype_table.h"

namespace graphserve {
namespace op_kernels_internal {

template <DType dtype>
struct DeviceTypeOf;
#define GRAPHSERVE_DTYPE_DEVICE_TYPE(e, onnx, onnx_name, kserve, config, size, host, device, ...) \
  template <>                                                                                     \
  struct DeviceTypeOf<DType::e> {                                                                 \
    using type = device;                                                                          \
  };                                                                                              \
  static_assert(sizeof(device) == size, "DeviceType of " #e " has the row's size");
GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_DEVICE_TYPE)
#undef GRAPHSERVE_DTYPE_DEVICE_TYPE

template <DType dtype>
using DeviceType = typename DeviceTypeOf<dtype>::type;

// What VisitDeviceType passes: the row and its device type.
template <DType kDType>
struct DeviceTag {
  static constexpr DType value = kDType;
  using Type = DeviceType<kDType>;
};

// fn(DeviceTag<dtype>{}), or cudaErrorInvalidValue for a value outside the
// table. fn returns cudaError_t.
template <typename Fn>
cudaError_t VisitDeviceType(DType dtype, Fn&& fn) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_DEVICE_VISIT(e, ...) \
  case DType::e:                              \
    return fn(DeviceTag<DType::e>{});
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_DEVICE_VISIT)
#undef GRAPHSERVE_DTYPE_DEVICE_VISIT
  }
  return cudaErrorInvalidValue;
}

template <typename T>
inline constexpr bool kIsHalfType = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <typename T>
inline constexpr bool kIsFloatType = std::is_floating_point_v<T> || kIsHalfType<T>;

// The type a float element computes in: float for the 16-bit floats and
// float32, double for float64 (fp32 accumulation, as cuBLAS and cuDNN do).
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Runs a compute-type functor on elements of a float type T: each operand
// widened to ComputeType<T>, the result rounded once back to T.
template <typename F>
struct InComputeType {
  F f;
  template <typename T, typename... Rest>
  __device__ T operator()(T x, Rest... rest) const {
    using C = ComputeType<T>;
    return static_cast<T>(f(static_cast<C>(x), static_cast<C>(rest)...));
  }
};

// fn(Bits{}) with the unsigned integer of `bytes` bytes (1, 2, 4 or 8), or
// cudaErrorInvalidValue: data movement depends on the element size alone.
template <typename Fn>
cudaError_t VisitBitsOfSize(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

// The same for a `dtype` element.
template <typename Fn>
cudaError_t VisitElementBits(DType dtype, Fn&& fn) {
  return VisitBitsOfSize(DTypeSize(dtype), std::forward<Fn>(fn));
}

}  // namespace op_kernels_internal
}  // namespace graphserve
