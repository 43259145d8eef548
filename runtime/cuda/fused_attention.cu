#include "runtime/cuda/fused_attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math_constants.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "runtime/cuda/dtype_dispatch.cu.h"

namespace graphserve {
namespace {

using op_kernels_internal::VisitDeviceType;

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kThreads = 128;
constexpr int kQueryRows = 16;                         // a block's query rows
constexpr int kKeyTile = 32;                           // keys per tile
constexpr int kRowThreads = kThreads / kQueryRows;     // 8 threads share a row
constexpr int kKeysPerThread = kKeyTile / kRowThreads;  // 4 scores a thread

// Max and sum over the kRowThreads consecutive lanes holding one row.
__device__ __forceinline__ float RowMax(float v) {
#pragma unroll
  for (int offset = kRowThreads / 2; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

__device__ __forceinline__ float RowSum(float v) {
#pragma unroll
  for (int offset = kRowThreads / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(kFullMask, v, offset);
  }
  return v;
}

__device__ __forceinline__ bool RowAny(bool v) {
  const unsigned lanes = __ballot_sync(kFullMask, v);
  const int group = (threadIdx.x % kWarpSize) / kRowThreads * kRowThreads;
  return ((lanes >> group) & ((1u << kRowThreads) - 1)) != 0;
}

// Shared-memory row pitch of a [rows][dim] tile read down a column by
// neighbouring rows: odd, so those rows fall in different banks.
__host__ __device__ __forceinline__ int Pitch(int64_t dim) { return static_cast<int>(dim | 1); }

__host__ __device__ __forceinline__ size_t SharedBytes(int64_t head_dim, int64_t value_dim) {
  return sizeof(float) *
         static_cast<size_t>(kQueryRows * Pitch(head_dim) + kKeyTile * Pitch(head_dim) +
                             kKeyTile * value_dim + kQueryRows * Pitch(kKeyTile));
}

// A block takes kQueryRows query rows of one (batch, head) and walks the
// keys in tiles of kKeyTile held in shared memory. The 8 threads of a row
// each score 4 keys of the tile (keys g, g + 8, ...) and accumulate
// kDims of its output dims (g * kDims ..), so each thread carries a few
// independent chains of FMAs and a row's max and sum are three shuffles.
// The softmax is online (a running max m and sum l, the accumulator
// rescaled when m grows), so scores never leave the block.
// T is q's, k's and v's type; S the mask's and the output's (T, or float
// for float_scores).
template <typename T, typename S, int kDims>
__global__ void __launch_bounds__(kThreads)
    FusedAttentionKernel(FusedAttentionParams p, const T* q, const T* k, const T* v,
                         const S* mask, S* out) {
  extern __shared__ float shared[];
  const int d = static_cast<int>(p.head_dim);
  const int dv = static_cast<int>(p.value_dim);
  const int d_pitch = Pitch(d);
  float* q_tile = shared;                              // [kQueryRows][d_pitch]
  float* k_tile = q_tile + kQueryRows * d_pitch;       // [kKeyTile][d_pitch]
  float* v_tile = k_tile + kKeyTile * d_pitch;         // [kKeyTile][dv]
  float* p_tile = v_tile + kKeyTile * dv;              // [kQueryRows][Pitch(kKeyTile)]
  const int p_pitch = Pitch(kKeyTile);
  const int64_t row_blocks = (p.query_rows + kQueryRows - 1) / kQueryRows;
  const int64_t bh = blockIdx.x / row_blocks;
  const int64_t b = bh / p.heads;
  const int64_t h = bh % p.heads;
  const int64_t first_row = (blockIdx.x % row_blocks) * kQueryRows;
  const int warp = threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  const int r = threadIdx.x / kRowThreads;  // the thread's query row in the block
  const int g = threadIdx.x % kRowThreads;  // its place among the row's threads
  const int64_t row = first_row + r;
  const bool row_in_range = row < p.query_rows;

  const T* q_bh = q + b * p.q.batch + h * p.q.head;
  const T* k_bh = k + b * p.k.batch + h * p.k.head;
  const T* v_bh = v + b * p.v.batch + h * p.v.head;
  const S* mask_row =
      mask == nullptr ? nullptr : mask + b * p.mask.batch + h * p.mask.head + row * p.mask.row;
  // Tiles are loaded warp by warp, a lane a column, without dividing.
  constexpr int kWarps = kThreads / kWarpSize;
  for (int rr = warp; rr < kQueryRows; rr += kWarps) {
    const int64_t at = first_row + rr;
    for (int c = lane; c < d; c += kWarpSize) {
      q_tile[rr * d_pitch + c] =
          at < p.query_rows ? static_cast<float>(q_bh[at * p.q.row + c * p.q.col]) : 0.0f;
    }
  }
  float m = -CUDART_INF_F;  // the row's running max, l its sum of weights
  float l = 0.0f;
  bool nan_row = false;
  float acc[kDims];
#pragma unroll
  for (int j = 0; j < kDims; ++j) acc[j] = 0.0f;
  // k^T exports read keys contiguously: a lane a key then.
  const bool keys_contiguous = p.k.row == 1;
  for (int64_t first_key = 0; first_key < p.key_rows; first_key += kKeyTile) {
    __syncthreads();  // the last tile is read (and the queries written)
    if (keys_contiguous) {
      const int64_t key = first_key + lane;
      for (int c = warp; c < d; c += kWarps) {
        k_tile[lane * d_pitch + c] =
            key < p.key_rows ? static_cast<float>(k_bh[key + c * p.k.col]) : 0.0f;
      }
    } else {
      for (int j = warp; j < kKeyTile; j += kWarps) {
        const int64_t key = first_key + j;
        for (int c = lane; c < d; c += kWarpSize) {
          k_tile[j * d_pitch + c] =
              key < p.key_rows ? static_cast<float>(k_bh[key * p.k.row + c * p.k.col]) : 0.0f;
        }
      }
    }
    for (int j = warp; j < kKeyTile; j += kWarps) {
      const int64_t key = first_key + j;
      for (int c = lane; c < dv; c += kWarpSize) {
        v_tile[j * dv + c] =
            key < p.key_rows ? static_cast<float>(v_bh[key * p.v.row + c * p.v.col]) : 0.0f;
      }
    }
    __syncthreads();
    // Scores of keys g, g + 8, g + 16, g + 24 of the tile.
    float s[kKeysPerThread] = {};
    const float* q_row = q_tile + r * d_pitch;
#pragma unroll 4
    for (int c = 0; c < d; ++c) {
      const float qc = q_row[c];
#pragma unroll
      for (int i = 0; i < kKeysPerThread; ++i) {
        s[i] = fmaf(qc, k_tile[(g + i * kRowThreads) * d_pitch + c], s[i]);
      }
    }
    float tile_max = -CUDART_INF_F;
    bool tile_nan = false;
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      const int64_t key = first_key + g + i * kRowThreads;
      s[i] *= p.scale;
      if (key >= p.key_rows) {
        s[i] = -CUDART_INF_F;
      } else if (mask_row != nullptr && row_in_range) {
        s[i] += static_cast<float>(mask_row[key * p.mask.col]);
      }
      tile_nan |= isnan(s[i]);
      if (!isnan(s[i])) tile_max = fmaxf(tile_max, s[i]);
    }
    nan_row |= RowAny(tile_nan);
    const float new_max = fmaxf(m, RowMax(tile_max));
    // All -inf so far: nothing to accumulate. A max of +inf makes the
    // softmax row NaN (inf - inf). Both are uniform over the row's threads.
    const bool skip = new_max == -CUDART_INF_F || new_max == CUDART_INF_F;
    nan_row |= new_max == CUDART_INF_F;
    const float correction = skip ? 1.0f : expf(m - new_max);  // 0 while m is -inf
    float weight_sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kKeysPerThread; ++i) {
      const float w = skip || isnan(s[i]) ? 0.0f : expf(s[i] - new_max);
      p_tile[r * p_pitch + g + i * kRowThreads] = w;
      weight_sum += w;
    }
    // Every lane of the warp shuffles, whichever rows skip.
    const float row_weight = RowSum(weight_sum);
    if (!skip) {
      l = l * correction + row_weight;
      m = new_max;
    }
    __syncwarp();  // a row's weights are written and read by its own 8 threads
    if (!skip) {
#pragma unroll
      for (int j = 0; j < kDims; ++j) acc[j] *= correction;
      const float* p_row = p_tile + r * p_pitch;
      const int first_dim = g * kDims;
#pragma unroll 4
      for (int key = 0; key < kKeyTile; ++key) {
        const float w = p_row[key];
        const float* v_row = v_tile + key * dv + first_dim;
#pragma unroll
        for (int j = 0; j < kDims; ++j) {
          if (first_dim + j < dv) acc[j] = fmaf(w, v_row[j], acc[j]);
        }
      }
    }
    __syncwarp();
  }
  if (!row_in_range) return;
  // Every key -inf: the softmax's -inf - -inf is NaN.
  const bool nan_out = nan_row || m == -CUDART_INF_F;
  const float guarded = p.nan_to_zero ? 0.0f : CUDART_NAN_F;
  S* out_row = out + b * p.out.batch + h * p.out.head + row * p.out.row;
#pragma unroll
  for (int j = 0; j < kDims; ++j) {
    const int c = g * kDims + j;
    if (c < dv) out_row[c * p.out.col] = static_cast<S>(nan_out ? guarded : acc[j] / l);
  }
}

// A warp per row: rows whose statistic is not finite get `fill`; the others
// are copied from `staged` (T, packed) when there is one, else left alone.
template <typename T, typename S>
__global__ void AttentionRowFillKernel(FusedAttentionParams p, const float* row_stats,
                                       const T* staged, S* out, float fill) {
  const int64_t rows = p.batch * p.heads * p.query_rows;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.y;
  for (int64_t row = blockIdx.x * blockDim.y + threadIdx.y; row < rows; row += stride) {
    const bool finite = isfinite(row_stats[row]);
    if (finite && staged == nullptr) continue;
    const int64_t i = row % p.query_rows;
    const int64_t h = row / p.query_rows % p.heads;
    const int64_t b = row / (p.query_rows * p.heads);
    S* out_row = out + b * p.out.batch + h * p.out.head + i * p.out.row;
    for (int64_t c = threadIdx.x; c < p.value_dim; c += blockDim.x) {
      out_row[c * p.out.col] = static_cast<S>(
          finite ? static_cast<float>(staged[row * p.value_dim + c]) : fill);
    }
  }
}

// fn(T{}, S{}) for the params' operand and score types (FusedAttentionKernel),
// or cudaErrorInvalidValue for types outside the three floats or a
// float_scores attention of float32.
template <typename Fn>
cudaError_t VisitAttentionTypes(const FusedAttentionParams& p, Fn&& fn) {
  return VisitDeviceType(p.dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    if constexpr (op_kernels_internal::kIsHalfType<T>) {
      return p.float_scores ? fn(T{}, float{}) : fn(T{}, T{});
    } else if constexpr (std::is_same_v<T, float>) {
      return p.float_scores ? cudaErrorInvalidValue : fn(T{}, T{});
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

}  // namespace

cudaError_t LaunchAttentionRowFill(const FusedAttentionParams& p, const float* row_stats,
                                   const void* staged, void* out, cudaStream_t stream) {
  constexpr int kRowsPerBlock = 8;
  const int64_t rows = p.batch * p.heads * p.query_rows;
  if (rows == 0) return cudaSuccess;
  const int64_t blocks = std::min<int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 1024);
  const float fill = p.nan_to_zero ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  return VisitAttentionTypes(p, [&](auto t, auto s) -> cudaError_t {
    using T = decltype(t);
    using S = decltype(s);
    AttentionRowFillKernel<T, S>
        <<<static_cast<unsigned>(blocks), dim3(kWarpSize, kRowsPerBlock), 0, stream>>>(
            p, row_stats, static_cast<const T*>(staged), static_cast<S*>(out), fill);
    return cudaGetLastError();
  });
}

cudaError_t LaunchFusedAttention(const FusedAttentionParams& p, const void* q, const void* k,
                                 const void* v, const void* mask, void* out, cudaStream_t stream) {
  if (p.batch < 0 || p.heads < 0 || p.query_rows < 0 || p.key_rows < 0 || p.head_dim < 1 ||
      p.value_dim < 1 || p.head_dim > kFusedAttentionMaxHeadDim ||
      p.value_dim > kFusedAttentionMaxHeadDim) {
    return cudaErrorInvalidValue;
  }
  const int64_t row_blocks = (p.query_rows + kQueryRows - 1) / kQueryRows;
  const int64_t blocks = p.batch * p.heads * row_blocks;
  if (blocks == 0) return cudaSuccess;
  if (p.key_rows == 0) return cudaErrorInvalidValue;  // softmax over nothing
  if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
  return VisitAttentionTypes(p, [&](auto t, auto s) -> cudaError_t {
    using T = decltype(t);
    using S = decltype(s);
    const auto launch = [&](auto kernel) {
      kernel<<<static_cast<unsigned>(blocks), kThreads, SharedBytes(p.head_dim, p.value_dim),
               stream>>>(p, static_cast<const T*>(q), static_cast<const T*>(k),
                         static_cast<const T*>(v), static_cast<const S*>(mask),
                         static_cast<S*>(out));
      return cudaGetLastError();
    };
    return p.value_dim <= 8 * kRowThreads ? launch(FusedAttentionKernel<T, S, 8>)
                                          : launch(FusedAttentionKernel<T, S, 16>);
  });
}

}  // namespace graphserve
