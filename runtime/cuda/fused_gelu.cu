#include "runtime/cuda/fused_gelu.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"

namespace graphserve {
namespace {

constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover anything beyond this many blocks (132 SMs on the
// H200, so this is many waves already).
constexpr int64_t kMaxBlocks = int64_t{1} << 16;
// Bytes a thread loads and stores at once on the vector path.
constexpr int kVectorBytes = 16;

// In float whatever T; for float32 the casts are no-ops.
template <typename T>
__device__ __forceinline__ T ErfGelu(T x) {
  const float v = static_cast<float>(x);
  return static_cast<T>(0.5f * v * (1.0f + erff(v * 0.70710678f)));
}

// kVectorBytes of T, loaded and stored as one 16-byte access.
template <typename T>
struct alignas(kVectorBytes) Vector {
  static constexpr int kCount = kVectorBytes / sizeof(T);
  T v[kCount];
};

// One thread per Vector (kVector) or per element, grid-stride. With kVector
// the count % Vector<T>::kCount trailing elements go to the first threads of
// the grid, one each (at most 7: the grid has at least 256 threads). No
// __restrict__: x == y (in place) is allowed, and each element is read and
// written by the same thread.
template <typename T, bool kVector>
__global__ void ErfGeluKernel(const T* x, T* y, int64_t count) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if constexpr (kVector) {
    constexpr int kCount = Vector<T>::kCount;
    const int64_t vectors = count / kCount;
    const auto* xv = reinterpret_cast<const Vector<T>*>(x);
    auto* yv = reinterpret_cast<Vector<T>*>(y);
    for (int64_t i = first; i < vectors; i += stride) {
      Vector<T> v = xv[i];
#pragma unroll
      for (int k = 0; k < kCount; ++k) v.v[k] = ErfGelu(v.v[k]);
      yv[i] = v;
    }
    const int64_t tail = vectors * kCount + first;
    if (tail < count) y[tail] = ErfGelu(x[tail]);  // fewer than kCount: no loop needed
  } else {
    for (int64_t i = first; i < count; i += stride) y[i] = ErfGelu(x[i]);
  }
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kVectorBytes == 0; }

template <typename T>
cudaError_t Launch(const T* x, T* y, int64_t count, cudaStream_t stream) {
  const bool vector = Aligned(x) && Aligned(y);
  // Work items: one per Vector (at least one, so the tail has a thread when
  // count < Vector<T>::kCount) or one per element.
  const int64_t items = vector ? std::max<int64_t>(count / Vector<T>::kCount, 1) : count;
  const int64_t blocks =
      std::min<int64_t>((items + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  const dim3 grid(static_cast<unsigned int>(blocks));
  if (vector) {
    ErfGeluKernel<T, true><<<grid, kThreadsPerBlock, 0, stream>>>(x, y, count);
  } else {
    ErfGeluKernel<T, false><<<grid, kThreadsPerBlock, 0, stream>>>(x, y, count);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchErfGelu(DType dtype, const void* x, void* y, int64_t count,
                          cudaStream_t stream) {
  using op_kernels_internal::ComputeType;
  using op_kernels_internal::kIsFloatType;
  if (count < 0) return cudaErrorInvalidValue;
  return op_kernels_internal::VisitDeviceType(dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    // The types that compute in float (float64 would lose its precision).
    if constexpr (kIsFloatType<T> && std::is_same_v<ComputeType<T>, float>) {
      if (count == 0) return cudaSuccess;
      return Launch(static_cast<const T*>(x), static_cast<T*>(y), count, stream);
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace graphserve
