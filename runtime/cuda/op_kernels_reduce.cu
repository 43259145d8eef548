// Row-wise normalisations and reductions: Softmax, LayerNormalization,
// ReduceMean.
//
// Rows up to kMaxWarpRowCols elements are handled by one warp each, the row
// held in registers (kPerLane elements per lane, lane + 32 * k for coalesced
// loads) so each element is read from memory once. Longer rows take a block
// each and stream through memory per pass. Reductions use warp shuffles, then
// shared memory across warps.

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;
// Warps (rows) per block of the warp-per-row kernels: small blocks spread a
// few rows over many SMs, which is what small batches need.
constexpr int kRowWarps = 4;
constexpr int kMaxWarpRowCols = 32 * kWarpSize;
constexpr int kRowBlockThreads = 512;
// ReduceMean rows longer than this use a block per row.
constexpr int64_t kMaxWarpReduceCols = 4096;
constexpr int kStridedThreads = 256;
constexpr int64_t kMaxStridedBlocks = 8192;

template <typename T>
__device__ __forceinline__ T WarpSum(T v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    v += __shfl_xor_sync(kFullMask, v, offset);
  }
  return v;
}

__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    v = fmaxf(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

// Every thread of the block gets the result. `scratch` holds one value per
// warp; it is free for reuse when this returns.
template <typename T>
__device__ __forceinline__ T BlockSum(T v, T* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = WarpSum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  v = lane < warps ? scratch[lane] : T(0);
  v = WarpSum(v);
  __syncthreads();
  return v;
}

__device__ __forceinline__ float BlockMax(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  v = WarpMax(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / kWarpSize;
  v = lane < warps ? scratch[lane] : -INFINITY;
  v = WarpMax(v);
  __syncthreads();
  return v;
}

// One thread a line of [outer, axis_dim, inner]: lines are independent and
// short in the exports that use CumSum (position ids over a sequence).
template <typename T>
__global__ void CumSumKernel(CumSumParams p, const T* in, T* out) {
  const int64_t lines = p.outer * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += step) {
    const int64_t o = line / p.inner;
    const int64_t base = o * p.axis_dim * p.inner + (line - o * p.inner);
    T sum = T(0);
    for (int64_t k = 0; k < p.axis_dim; ++k) {
      const int64_t j = p.reverse ? p.axis_dim - 1 - k : k;
      const int64_t at = base + j * p.inner;
      const T x = in[at];
      if (p.exclusive) {
        out[at] = sum;
        sum += x;
      } else {
        sum += x;
        out[at] = sum;
      }
    }
  }
}

unsigned StridedBlocks(int64_t work_items) {
  const int64_t blocks = (work_items + kStridedThreads - 1) / kStridedThreads;
  return static_cast<unsigned>(blocks < kMaxStridedBlocks ? blocks : kMaxStridedBlocks);
}

// Blocks for one warp per row; 0 when the grid would be too large.
unsigned WarpRowBlocks(int64_t rows) {
  const int64_t blocks = (rows + kRowWarps - 1) / kRowWarps;
  return blocks > INT32_MAX ? 0u : static_cast<unsigned>(blocks);
}

// The smallest kPerLane bucket (a power of two) that holds `cols`.
int PerLaneBucket(int64_t cols) {
  int per_lane = 1;
  while (per_lane * kWarpSize < cols) per_lane *= 2;
  return per_lane;
}

// Calls launch(std::integral_constant<int, kPerLane>{}) with the
// PerLaneBucket of `cols`, which is at most kMaxWarpRowCols.
template <typename Launch>
void WithPerLaneBucket(int64_t cols, Launch&& launch) {
  switch (PerLaneBucket(cols)) {
    case 1:
      return launch(std::integral_constant<int, 1>{});
    case 2:
      return launch(std::integral_constant<int, 2>{});
    case 4:
      return launch(std::integral_constant<int, 4>{});
    case 8:
      return launch(std::integral_constant<int, 8>{});
    case 16:
      return launch(std::integral_constant<int, 16>{});
    default:
      return launch(std::integral_constant<int, 32>{});
  }
}

// ---------------------------------------------------------------- Softmax

template <int kPerLane>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    SoftmaxWarpRowsKernel(const float* in, float* out, int64_t rows, int cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const float* x = in + row * cols;
  float* y = out + row * cols;
  float v[kPerLane];
  float max_value = -INFINITY;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    v[k] = c < cols ? x[c] : -INFINITY;
    max_value = fmaxf(max_value, v[k]);
  }
  max_value = WarpMax(max_value);
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    v[k] = c < cols ? expf(v[k] - max_value) : 0.0f;
    sum += v[k];
  }
  const float inv_sum = 1.0f / WarpSum(sum);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    if (c < cols) y[c] = v[k] * inv_sum;
  }
}

__global__ void __launch_bounds__(kRowBlockThreads)
    SoftmaxBlockRowsKernel(const float* in, float* out, int64_t cols) {
  __shared__ float scratch[kRowBlockThreads / kWarpSize];
  const float* x = in + static_cast<int64_t>(blockIdx.x) * cols;
  float* y = out + static_cast<int64_t>(blockIdx.x) * cols;
  float max_value = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) max_value = fmaxf(max_value, x[c]);
  max_value = BlockMax(max_value, scratch);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(x[c] - max_value);
  const float inv_sum = 1.0f / BlockSum(sum, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    y[c] = expf(x[c] - max_value) * inv_sum;
  }
}

// Softmax over a non-innermost axis: one thread per (outer, inner) pair;
// neighbouring threads read neighbouring elements at every step.
__global__ void __launch_bounds__(kStridedThreads)
    SoftmaxStridedKernel(const float* in, float* out, int64_t outer, int64_t axis_size,
                         int64_t inner) {
  const int64_t total = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t o = t / inner;
    const int64_t base = o * axis_size * inner + (t - o * inner);
    float max_value = -INFINITY;
    for (int64_t a = 0; a < axis_size; ++a) max_value = fmaxf(max_value, in[base + a * inner]);
    float sum = 0.0f;
    for (int64_t a = 0; a < axis_size; ++a) sum += expf(in[base + a * inner] - max_value);
    const float inv_sum = 1.0f / sum;
    for (int64_t a = 0; a < axis_size; ++a) {
      out[base + a * inner] = expf(in[base + a * inner] - max_value) * inv_sum;
    }
  }
}

template <int kPerLane>
void LaunchSoftmaxWarpRows(const float* in, float* out, int64_t rows, int cols,
                           cudaStream_t stream, unsigned blocks) {
  SoftmaxWarpRowsKernel<kPerLane>
      <<<blocks, kRowWarps * kWarpSize, 0, stream>>>(in, out, rows, cols);
}

// ------------------------------------------------------ LayerNormalization

// Two passes over the row held in registers: the mean, then the variance of
// the deviations (no cancellation from E[x^2] - E[x]^2).
template <int kPerLane>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    LayerNormWarpRowsKernel(const float* x, const float* scale, const float* bias, float* y,
                            float* mean_out, float* inv_std_dev_out, int64_t rows, int cols,
                            float epsilon) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float v[kPerLane];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    v[k] = c < cols ? xr[c] : 0.0f;
    sum += v[k];
  }
  const float mean = WarpSum(sum) / static_cast<float>(cols);
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    const float deviation = c < cols ? v[k] - mean : 0.0f;
    squares += deviation * deviation;
  }
  const float variance = WarpSum(squares) / static_cast<float>(cols);
  const float inv_std_dev = 1.0f / sqrtf(variance + epsilon);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    if (c < cols) {
      const float normalized = (v[k] - mean) * inv_std_dev * scale[c];
      yr[c] = bias != nullptr ? normalized + bias[c] : normalized;
    }
  }
  if (lane == 0) {
    if (mean_out != nullptr) mean_out[row] = mean;
    if (inv_std_dev_out != nullptr) inv_std_dev_out[row] = inv_std_dev;
  }
}

__global__ void __launch_bounds__(kRowBlockThreads)
    LayerNormBlockRowsKernel(const float* x, const float* scale, const float* bias, float* y,
                             float* mean_out, float* inv_std_dev_out, int64_t cols,
                             float epsilon) {
  __shared__ float scratch[kRowBlockThreads / kWarpSize];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += xr[c];
  const float mean = BlockSum(sum, scratch) / static_cast<float>(cols);
  float squares = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float deviation = xr[c] - mean;
    squares += deviation * deviation;
  }
  const float variance = BlockSum(squares, scratch) / static_cast<float>(cols);
  const float inv_std_dev = 1.0f / sqrtf(variance + epsilon);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float normalized = (xr[c] - mean) * inv_std_dev * scale[c];
    yr[c] = bias != nullptr ? normalized + bias[c] : normalized;
  }
  if (threadIdx.x == 0) {
    if (mean_out != nullptr) mean_out[row] = mean;
    if (inv_std_dev_out != nullptr) inv_std_dev_out[row] = inv_std_dev;
  }
}

template <int kPerLane>
void LaunchLayerNormWarpRows(const LayerNormParams& p, const float* x, const float* scale,
                             const float* bias, float* y, float* mean, float* inv_std_dev,
                             cudaStream_t stream, unsigned blocks) {
  LayerNormWarpRowsKernel<kPerLane><<<blocks, kRowWarps * kWarpSize, 0, stream>>>(
      x, scale, bias, y, mean, inv_std_dev, p.rows, static_cast<int>(p.cols), p.epsilon);
}

// -------------------------------------------------------------- ReduceMean
// Sums accumulate in double: a mean over many elements then stays within
// float rounding of the exact value, at no cost that a memory-bound
// reduction notices.

__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    ReduceMeanWarpRowsKernel(const float* in, float* out, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const float* x = in + row * cols;
  double sum = 0.0;
  for (int64_t c = lane; c < cols; c += kWarpSize) sum += x[c];
  sum = WarpSum(sum);
  if (lane == 0) out[row] = static_cast<float>(sum / static_cast<double>(cols));
}

__global__ void __launch_bounds__(kRowBlockThreads)
    ReduceMeanBlockRowsKernel(const float* in, float* out, int64_t cols) {
  __shared__ double scratch[kRowBlockThreads / kWarpSize];
  const float* x = in + static_cast<int64_t>(blockIdx.x) * cols;
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += x[c];
  sum = BlockSum(sum, scratch);
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<float>(sum / static_cast<double>(cols));
}

// One thread per output. The innermost reduced dim is walked directly; only
// the outer reduced dims need index decomposition.
__global__ void __launch_bounds__(kStridedThreads)
    ReduceMeanStridedKernel(ReduceMeanParams p, const float* in, float* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int last = p.reduced_rank - 1;
  const int64_t inner_count = p.reduced_dims[last];
  const int64_t inner_stride = p.reduced_strides[last];
  const int64_t outer_count = p.reduce_count / inner_count;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       t < p.num_outputs; t += step) {
    int64_t base = 0;
    int64_t q = t;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 1; --d) {
      if (d >= p.kept_rank) continue;
      const int64_t next = q / p.kept_dims[d];
      base += (q - next * p.kept_dims[d]) * p.kept_strides[d];
      q = next;
    }
    base += q * p.kept_strides[0];
    double sum = 0.0;
    for (int64_t r = 0; r < outer_count; ++r) {
      int64_t offset = base;
      if (last > 0) {
        int64_t rq = r;
#pragma unroll
        for (int d = kMaxRank - 2; d >= 1; --d) {
          if (d >= last) continue;
          const int64_t next = rq / p.reduced_dims[d];
          offset += (rq - next * p.reduced_dims[d]) * p.reduced_strides[d];
          rq = next;
        }
        offset += rq * p.reduced_strides[0];
      }
      for (int64_t j = 0; j < inner_count; ++j) sum += in[offset + j * inner_stride];
    }
    out[t] = static_cast<float>(sum / static_cast<double>(p.reduce_count));
  }
}

}  // namespace

cudaError_t LaunchSoftmax(const SoftmaxParams& p, const float* input, float* output,
                          cudaStream_t stream) {
  if (p.outer <= 0 || p.axis_size <= 0 || p.inner <= 0) return cudaSuccess;
  if (p.inner != 1) {
    SoftmaxStridedKernel<<<StridedBlocks(p.outer * p.inner), kStridedThreads, 0, stream>>>(
        input, output, p.outer, p.axis_size, p.inner);
    return cudaGetLastError();
  }
  const int64_t rows = p.outer;
  if (p.axis_size > kMaxWarpRowCols) {
    if (rows > INT32_MAX) return cudaErrorInvalidConfiguration;
    SoftmaxBlockRowsKernel<<<static_cast<unsigned>(rows), kRowBlockThreads, 0, stream>>>(
        input, output, p.axis_size);
    return cudaGetLastError();
  }
  const unsigned blocks = WarpRowBlocks(rows);
  if (blocks == 0) return cudaErrorInvalidConfiguration;
  const int cols = static_cast<int>(p.axis_size);
  WithPerLaneBucket(cols, [&](auto per_lane) {
    LaunchSoftmaxWarpRows<decltype(per_lane)::value>(input, output, rows, cols, stream, blocks);
  });
  return cudaGetLastError();
}

cudaError_t LaunchLayerNorm(const LayerNormParams& p, const float* x, const float* scale,
                            const float* bias, float* y, float* mean, float* inv_std_dev,
                            cudaStream_t stream) {
  if (p.rows <= 0 || p.cols <= 0) return cudaSuccess;
  if (p.cols > kMaxWarpRowCols) {
    if (p.rows > INT32_MAX) return cudaErrorInvalidConfiguration;
    LayerNormBlockRowsKernel<<<static_cast<unsigned>(p.rows), kRowBlockThreads, 0, stream>>>(
        x, scale, bias, y, mean, inv_std_dev, p.cols, p.epsilon);
    return cudaGetLastError();
  }
  const unsigned blocks = WarpRowBlocks(p.rows);
  if (blocks == 0) return cudaErrorInvalidConfiguration;
  WithPerLaneBucket(p.cols, [&](auto per_lane) {
    LaunchLayerNormWarpRows<decltype(per_lane)::value>(p, x, scale, bias, y, mean, inv_std_dev,
                                                       stream, blocks);
  });
  return cudaGetLastError();
}

cudaError_t LaunchReduceMean(const ReduceMeanParams& p, const float* input, float* output,
                             cudaStream_t stream) {
  if (p.num_outputs <= 0) return cudaSuccess;
  if (p.reduce_count <= 0) return cudaErrorInvalidValue;  // the factory refuses these
  if (p.rows_contiguous) {
    if (p.reduce_count > kMaxWarpReduceCols) {
      if (p.num_outputs > INT32_MAX) return cudaErrorInvalidConfiguration;
      ReduceMeanBlockRowsKernel<<<static_cast<unsigned>(p.num_outputs), kRowBlockThreads, 0,
                                  stream>>>(input, output, p.reduce_count);
    } else {
      const unsigned blocks = WarpRowBlocks(p.num_outputs);
      if (blocks == 0) return cudaErrorInvalidConfiguration;
      ReduceMeanWarpRowsKernel<<<blocks, kRowWarps * kWarpSize, 0, stream>>>(
          input, output, p.num_outputs, p.reduce_count);
    }
    return cudaGetLastError();
  }
  ReduceMeanStridedKernel<<<StridedBlocks(p.num_outputs), kStridedThreads, 0, stream>>>(
      p, input, output);
  return cudaGetLastError();
}

cudaError_t LaunchCumSum(const CumSumParams& p, const void* input, void* output,
                         cudaStream_t stream) {
  if (p.outer * p.inner * p.axis_dim <= 0) return cudaSuccess;
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    CumSumKernel<T><<<StridedBlocks(p.outer * p.inner), kStridedThreads, 0, stream>>>(
        p, static_cast<const T*>(input), static_cast<T*>(output));
    return cudaGetLastError();
  };
  switch (p.dtype) {
    case DType::kFloat32:
      return launch(float{});
    case DType::kFloat64:
      return launch(double{});
    case DType::kInt32:
      return launch(int32_t{});
    case DType::kInt64:
      return launch(int64_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace op_kernels_internal
}  // namespace graphserve
