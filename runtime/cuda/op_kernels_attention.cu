// RotaryEmbedding (Note [Rotary embedding] in runtime/host/attention_kernels.h).
// Attention itself runs as the primitive ops it binds into (Note [Attention
// lowering] in runtime/ops/attention.cc).

#include <cuda_runtime.h>
#include <math_constants.h>

#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

constexpr int kRotaryThreads = 256;
constexpr int64_t kMaxRotaryBlocks = 8192;

// Element i of Y, laid out as X: [batch, heads, seq, head_size] when
// heads_outer, [batch, seq, heads, head_size] otherwise. A rotated element
// reads its pair (x1, x2) and writes its own half of the rotation.
template <typename T>
__global__ void __launch_bounds__(kRotaryThreads)
    RotaryEmbeddingKernel(RotaryParams p, const T* x, const T* cos_cache, const T* sin_cache,
                          const int64_t* position_ids, T* y) {
  const int64_t total = p.batch * p.seq * p.heads * p.head_size;
  const int64_t half = p.rotary_dim / 2;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t d = i % p.head_size;
    if (d >= p.rotary_dim) {
      y[i] = x[i];
      continue;
    }
    const int64_t vector = i / p.head_size;  // (b, h, s) or (b, s, h)
    int64_t b, s;
    if (p.heads_outer) {
      s = vector % p.seq;
      b = vector / p.seq / p.heads;
    } else {
      s = (vector / p.heads) % p.seq;
      b = vector / p.heads / p.seq;
    }
    const bool second = p.interleaved ? (d % 2 == 1) : d >= half;
    const int64_t pair = p.interleaved ? d / 2 : (second ? d - half : d);
    const int64_t first_at = p.interleaved ? 2 * pair : pair;
    const int64_t second_at = p.interleaved ? 2 * pair + 1 : pair + half;
    int64_t row = b * p.seq + s;
    if (position_ids != nullptr) {
      row = position_ids[row];
      if (row < 0) row += p.cache_rows;
    }
    if (row < 0 || row >= p.cache_rows) {  // an id the host refuses
      y[i] = static_cast<T>(CUDART_NAN_F);
      continue;
    }
    const int64_t base = vector * p.head_size;
    const float c = static_cast<float>(cos_cache[row * half + pair]);
    const float sn = static_cast<float>(sin_cache[row * half + pair]);
    const float x1 = static_cast<float>(x[base + first_at]);
    const float x2 = static_cast<float>(x[base + second_at]);
    y[i] = static_cast<T>(second ? sn * x1 + c * x2 : c * x1 - sn * x2);
  }
}

}  // namespace

cudaError_t LaunchRotaryEmbedding(const RotaryParams& p, const void* x, const void* cos_cache,
                                  const void* sin_cache, const int64_t* position_ids, void* y,
                                  cudaStream_t stream) {
  const int64_t total = p.batch * p.seq * p.heads * p.head_size;
  if (total <= 0) return cudaSuccess;
  if (p.rotary_dim % 2 != 0 || p.rotary_dim > p.head_size) return cudaErrorInvalidValue;
  const int64_t wanted = (total + kRotaryThreads - 1) / kRotaryThreads;
  const unsigned blocks =
      static_cast<unsigned>(wanted < kMaxRotaryBlocks ? wanted : kMaxRotaryBlocks);
  return VisitDeviceType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, float> || kIsHalfType<T>) {
      RotaryEmbeddingKernel<T><<<blocks, kRotaryThreads, 0, stream>>>(
          p, static_cast<const T*>(x), static_cast<const T*>(cos_cache),
          static_cast<const T*>(sin_cache), position_ids, static_cast<T*>(y));
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
