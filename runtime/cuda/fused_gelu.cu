#include "runtime/cuda/fused_gelu.h"

#include <algorithm>
#include <cstdint>

namespace graphserve {
namespace {

constexpr int kThreadsPerBlock = 256;
// Grid-stride loops cover anything beyond this many blocks (132 SMs on the
// H200, so this is many waves already).
constexpr int64_t kMaxBlocks = int64_t{1} << 16;

__device__ __forceinline__ float ErfGelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678f));
}

// One thread per float4 (kVector) or per float, grid-stride. With kVector the
// count % 4 trailing floats, at [count - count % 4, count), go to the first
// count % 4 threads of the grid. No __restrict__: x == y (in place) is allowed,
// and each element is read and written by the same thread.
template <bool kVector>
__global__ void ErfGeluKernel(const float* x, float* y, int64_t count) {
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if constexpr (kVector) {
    const int64_t vectors = count / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int64_t i = first; i < vectors; i += stride) {
      float4 v = x4[i];
      v.x = ErfGelu(v.x);
      v.y = ErfGelu(v.y);
      v.z = ErfGelu(v.z);
      v.w = ErfGelu(v.w);
      y4[i] = v;
    }
    const int64_t tail = vectors * 4 + first;
    if (tail < count) y[tail] = ErfGelu(x[tail]);  // fewer than 4: no loop needed
  } else {
    for (int64_t i = first; i < count; i += stride) y[i] = ErfGelu(x[i]);
  }
}

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t LaunchErfGelu(const float* x, float* y, int64_t count, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  if (count == 0) return cudaSuccess;
  const bool vector = Aligned16(x) && Aligned16(y);
  // Work items: one per float4 (at least one, so the tail has a thread when
  // count < 4) or one per float.
  const int64_t items = vector ? std::max<int64_t>(count / 4, 1) : count;
  const int64_t blocks =
      std::min<int64_t>((items + kThreadsPerBlock - 1) / kThreadsPerBlock, kMaxBlocks);
  const dim3 grid(static_cast<unsigned int>(blocks));
  if (vector) {
    ErfGeluKernel<true><<<grid, kThreadsPerBlock, 0, stream>>>(x, y, count);
  } else {
    ErfGeluKernel<false><<<grid, kThreadsPerBlock, 0, stream>>>(x, y, count);
  }
  return cudaGetLastError();
}

}  // namespace graphserve
