// Row-wise normalisations and reductions: Softmax, LogSoftmax, Hardmax,
// LayerNormalization, InstanceNormalization and GroupNormalization, the
// Reduce* ops, ArgMax and ArgMin, CumSum.
//
// Rows up to kMaxWarpRowCols elements are handled by one warp each, the row
// held in registers (kPerLane elements per lane, lane + 32 * k for coalesced
// loads) so each element is read from memory once. Longer rows take a block
// each and stream through memory per pass. Reductions use warp shuffles, then
// shared memory across warps.

#include <cuda_runtime.h>
#include <math_constants.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
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
// Reduction rows longer than this use a block per row.
constexpr int64_t kMaxWarpReduceCols = 4096;
constexpr int kStridedThreads = 256;
constexpr int64_t kMaxStridedBlocks = 8192;
// Below this many (outer, inner) columns, one thread per column leaves most
// of the GPU idle, and a strided softmax spreads each column over a block's
// threads instead (Note [Softmax along a strided axis]).
constexpr int64_t kMinThreadPerColumn = 32768;
constexpr int kStridedTileThreads = 256;
constexpr int64_t kMaxGridY = 65535;

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

// Softmax and LogSoftmax of one element from its shifted value t = x - max
// and the row's sum of exp(t): exp(t) / sum, or t - log(sum) (ONNX's
// reference formula, so NaN and Inf come out as there).
__device__ __forceinline__ float SoftmaxOutput(float shifted, float sum, bool log) {
  return log ? shifted - logf(sum) : expf(shifted) / sum;
}

// A row's view of its scores (Note [Masked softmax]): x, plus the mask's
// elements when there is one, the sum rounded to T as the Add's output was.
template <typename T>
struct MaskedRow {
  const T* x;
  const T* mask = nullptr;  // the row's first mask element, or null
  int64_t col_stride = 0;

  __device__ __forceinline__ float operator()(int64_t c) const {
    if (mask == nullptr) return static_cast<float>(x[c]);
    return static_cast<float>(
        static_cast<T>(static_cast<float>(x[c]) + static_cast<float>(mask[c * col_stride])));
  }
};

// The mask offset of `row` (SoftmaxMask), in Index arithmetic.
template <typename Index>
__device__ __forceinline__ int64_t MaskOffset(const SoftmaxMask& layout, Index row) {
  Index offset = 0;
  for (int d = layout.rank - 1; d >= 0; --d) {
    const Index dim = static_cast<Index>(layout.dims[d]);
    const Index quotient = row / dim;
    offset += (row - quotient * dim) * static_cast<Index>(layout.strides[d]);
    row = quotient;
  }
  return static_cast<int64_t>(offset);
}

template <typename T>
__device__ __forceinline__ MaskedRow<T> RowOf(const T* in, const T* mask, const SoftmaxMask& layout,
                                              int64_t row, int64_t cols) {
  MaskedRow<T> view{in + row * cols};
  if (mask == nullptr) return view;
  view.mask = mask + (layout.index32 ? MaskOffset(layout, static_cast<uint32_t>(row))
                                     : MaskOffset(layout, static_cast<uint64_t>(row)));
  view.col_stride = layout.col_stride;
  return view;
}

// The output of one element, NaN made 0 under the exporter's guard.
__device__ __forceinline__ float GuardedOutput(float y, bool nan_to_zero) {
  return nan_to_zero && isnan(y) ? 0.0f : y;
}

// The kernels read elements of T (float32 or a 16-bit float) and compute in
// float; the output is rounded once to T. `mask` may be null.
template <typename T, int kPerLane>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    SoftmaxWarpRowsKernel(const T* in, const T* mask, T* out, int64_t rows, int cols,
                          SoftmaxMask layout, bool log, bool nan_to_zero) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const MaskedRow<T> x = RowOf(in, mask, layout, row, cols);
  T* y = out + row * cols;
  float v[kPerLane];
  float max_value = -INFINITY;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    v[k] = c < cols ? x(c) : -INFINITY;
    max_value = fmaxf(max_value, v[k]);
  }
  max_value = WarpMax(max_value);
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    v[k] -= max_value;
    if (c < cols) sum += expf(v[k]);
  }
  sum = WarpSum(sum);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + k * kWarpSize;
    if (c < cols) {
      y[c] = static_cast<T>(GuardedOutput(SoftmaxOutput(v[k], sum, log), nan_to_zero));
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowBlockThreads)
    SoftmaxBlockRowsKernel(const T* in, const T* mask, T* out, int64_t cols, SoftmaxMask layout,
                           bool log, bool nan_to_zero) {
  __shared__ float scratch[kRowBlockThreads / kWarpSize];
  const int64_t row = blockIdx.x;
  const MaskedRow<T> at = RowOf(in, mask, layout, row, cols);
  T* y = out + row * cols;
  float max_value = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) max_value = fmaxf(max_value, at(c));
  max_value = BlockMax(max_value, scratch);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(at(c) - max_value);
  sum = BlockSum(sum, scratch);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    y[c] = static_cast<T>(GuardedOutput(SoftmaxOutput(at(c) - max_value, sum, log), nan_to_zero));
  }
}

template <typename T>
__global__ void __launch_bounds__(kStridedThreads)
    SoftmaxStridedKernel(const T* in, T* out, int64_t outer, int64_t axis_size, int64_t inner,
                         bool log) {
  const int64_t total = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t o = t / inner;
    const int64_t base = o * axis_size * inner + (t - o * inner);
    const auto at = [&](int64_t a) { return static_cast<float>(in[base + a * inner]); };
    float max_value = -INFINITY;
    for (int64_t a = 0; a < axis_size; ++a) max_value = fmaxf(max_value, at(a));
    float sum = 0.0f;
    for (int64_t a = 0; a < axis_size; ++a) sum += expf(at(a) - max_value);
    for (int64_t a = 0; a < axis_size; ++a) {
      out[base + a * inner] = static_cast<T>(SoftmaxOutput(at(a) - max_value, sum, log));
    }
  }
}

// Note [Softmax along a strided axis]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A softmax whose axis is not the innermost has outer x inner columns, each
// axis_size elements `inner` apart. With many columns (a segmentation
// model's classes at every pixel) one thread per column fills the GPU and
// reads coalesced across neighbouring columns: SoftmaxStridedKernel. With
// few, it does not: CoaT's factorised attention takes the softmax of its
// keys over 3136 tokens in 8 heads of 8 channels, 64 columns at batch 1, and
// 64 threads walking 3136 elements three times took 300 us a launch, 61% of
// the model's kernel time (H200). SoftmaxStridedTileKernel gives a block to
// each (outer index, tile of up to 32 neighbouring columns): the tile's
// columns side by side for coalesced reads, the block's other threads along
// the axis, each column's max and then sum reduced in shared memory. The
// same max-then-sum arithmetic as the row kernels, so NaN and Inf come out
// as there.
template <typename T>
__global__ void __launch_bounds__(kStridedTileThreads)
    SoftmaxStridedTileKernel(const T* in, T* out, int64_t axis_size, int64_t inner,
                             int tile_width, bool log) {
  __shared__ float scratch[kStridedTileThreads];
  const int w = static_cast<int>(threadIdx.x) % tile_width;
  const int h = static_cast<int>(threadIdx.x) / tile_width;
  const int lanes = kStridedTileThreads / tile_width;  // threads along the axis
  const int64_t column = static_cast<int64_t>(blockIdx.y) * tile_width + w;
  const bool live = column < inner;
  const int64_t base = static_cast<int64_t>(blockIdx.x) * axis_size * inner + column;
  const auto at = [&](int64_t a) { return static_cast<float>(in[base + a * inner]); };
  // Each column's value of `op` over its lanes' partials, in every thread.
  const auto reduce = [&](float partial, auto op) {
    scratch[threadIdx.x] = partial;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {
      if (h < half) {
        scratch[threadIdx.x] = op(scratch[threadIdx.x], scratch[threadIdx.x + half * tile_width]);
      }
      __syncthreads();
    }
    const float column_value = scratch[w];
    __syncthreads();  // before the next reduction writes
    return column_value;
  };
  float max_value = -INFINITY;
  if (live) {
    for (int64_t a = h; a < axis_size; a += lanes) max_value = fmaxf(max_value, at(a));
  }
  max_value = reduce(max_value, [](float x, float y) { return fmaxf(x, y); });
  float sum = 0.0f;
  if (live) {
    for (int64_t a = h; a < axis_size; a += lanes) sum += expf(at(a) - max_value);
  }
  sum = reduce(sum, [](float x, float y) { return x + y; });
  if (!live) return;
  for (int64_t a = h; a < axis_size; a += lanes) {
    out[base + a * inner] = static_cast<T>(SoftmaxOutput(at(a) - max_value, sum, log));
  }
}

// The tile width for `inner` columns: the power of two that holds them, at
// most a warp.
int StridedTileWidth(int64_t inner) {
  int width = 1;
  while (width < kWarpSize && width < inner) width *= 2;
  return width;
}

template <typename T>
cudaError_t LaunchSoftmaxOf(const SoftmaxParams& p, const T* input, const T* mask, T* output,
                            cudaStream_t stream) {
  if (p.inner != 1) {
    if (mask != nullptr || p.nan_to_zero) return cudaErrorInvalidValue;  // rows only
    // Note [Softmax along a strided axis].
    const int width = StridedTileWidth(p.inner);
    const int64_t tiles = (p.inner + width - 1) / width;
    if (p.outer * p.inner < kMinThreadPerColumn && tiles <= kMaxGridY) {
      const dim3 grid(static_cast<unsigned>(p.outer), static_cast<unsigned>(tiles));
      SoftmaxStridedTileKernel<T><<<grid, kStridedTileThreads, 0, stream>>>(
          input, output, p.axis_size, p.inner, width, p.log);
      return cudaGetLastError();
    }
    SoftmaxStridedKernel<T><<<StridedBlocks(p.outer * p.inner), kStridedThreads, 0, stream>>>(
        input, output, p.outer, p.axis_size, p.inner, p.log);
    return cudaGetLastError();
  }
  const int64_t rows = p.outer;
  if (p.axis_size > kMaxWarpRowCols) {
    if (rows > INT32_MAX) return cudaErrorInvalidConfiguration;
    SoftmaxBlockRowsKernel<T><<<static_cast<unsigned>(rows), kRowBlockThreads, 0, stream>>>(
        input, mask, output, p.axis_size, p.mask, p.log, p.nan_to_zero);
    return cudaGetLastError();
  }
  const unsigned blocks = WarpRowBlocks(rows);
  if (blocks == 0) return cudaErrorInvalidConfiguration;
  const int cols = static_cast<int>(p.axis_size);
  WithPerLaneBucket(cols, [&](auto per_lane) {
    SoftmaxWarpRowsKernel<T, decltype(per_lane)::value>
        <<<blocks, kRowWarps * kWarpSize, 0, stream>>>(input, mask, output, rows, cols, p.mask,
                                                       p.log, p.nan_to_zero);
  });
  return cudaGetLastError();
}

// ------------------------------------------------------ GroupNormalization

// Note [Group normalization on many blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A (batch, group) row can be long and rows few: PoolFormer's GroupNorm of
// one group normalises 64 x 56 x 56 = 200,704 values as one row at batch 1.
// One block per row left all but one SM idle, and 24 such norms took 6.3 of
// poolformer_s12's 8.1 ms of kernel time on the H200 (ncu), 2.9x PyTorch's
// whole graph. So each row is split into chunks of about
// kGroupNormChunkElements, one block each, over three launches: the chunks'
// sums; the chunks' squared distances from the mean; the normalisation. A
// block adds the row's partials itself, in chunk order, so every block of a
// row, and every run, gets the same mean and variance bit for bit: no
// atomics, the replay deterministic as padding independence needs. The
// statistics stay float64 over two passes, as the host reference keeps them
// (Note [Group normalization] in runtime/host/normalization_kernels.h).

constexpr int kGroupNormThreads = 256;
constexpr int64_t kGroupNormChunkElements = 8192;

struct GroupNormChunking {
  int64_t rows = 0;
  int64_t row_size = 0;
  int64_t chunks = 1;     // per row
  int64_t chunk_size = 0;  // elements; the last chunk may be shorter
};

__host__ __device__ inline GroupNormChunking ChunkingOf(const GroupNormParams& p) {
  GroupNormChunking c;
  c.rows = p.batch * p.groups;
  c.row_size = p.channels / p.groups * p.spatial;
  c.chunks = c.row_size <= kGroupNormChunkElements
                 ? 1
                 : (c.row_size + kGroupNormChunkElements - 1) / kGroupNormChunkElements;
  c.chunk_size = (c.row_size + c.chunks - 1) / c.chunks;
  return c;
}

// The range of its row this block takes.
struct GroupNormBlock {
  int64_t row;
  int64_t chunk;
  int64_t begin;
  int64_t end;
};

__device__ __forceinline__ GroupNormBlock BlockOf(const GroupNormChunking& c) {
  GroupNormBlock b;
  b.row = static_cast<int64_t>(blockIdx.x) / c.chunks;
  b.chunk = static_cast<int64_t>(blockIdx.x) % c.chunks;
  b.begin = b.chunk * c.chunk_size;
  b.end = b.begin + c.chunk_size < c.row_size ? b.begin + c.chunk_size : c.row_size;
  return b;
}

// The row's partials added in chunk order, over the row's size.
__device__ __forceinline__ double RowAverage(const double* partials, const GroupNormChunking& c,
                                             int64_t row) {
  double total = 0.0;
  for (int64_t k = 0; k < c.chunks; ++k) total += partials[row * c.chunks + k];
  return total / static_cast<double>(c.row_size);
}

// partials[0 .. rows * chunks): each chunk's sum.
__global__ void __launch_bounds__(kGroupNormThreads)
    GroupNormSumsKernel(GroupNormChunking c, const float* x, double* partials) {
  __shared__ double scratch[kGroupNormThreads / kWarpSize];
  const GroupNormBlock b = BlockOf(c);
  const float* x_row = x + b.row * c.row_size;
  double sum = 0.0;
  for (int64_t i = b.begin + threadIdx.x; i < b.end; i += blockDim.x) sum += x_row[i];
  sum = BlockSum(sum, scratch);
  if (threadIdx.x == 0) partials[b.row * c.chunks + b.chunk] = sum;
}

// squares[0 .. rows * chunks): each chunk's sum of squared distances from
// its row's mean.
__global__ void __launch_bounds__(kGroupNormThreads)
    GroupNormSquaresKernel(GroupNormChunking c, const float* x, const double* sums,
                           double* squares) {
  __shared__ double scratch[kGroupNormThreads / kWarpSize];
  const GroupNormBlock b = BlockOf(c);
  const double mean = RowAverage(sums, c, b.row);
  const float* x_row = x + b.row * c.row_size;
  double total = 0.0;
  for (int64_t i = b.begin + threadIdx.x; i < b.end; i += blockDim.x) {
    const double centred = x_row[i] - mean;
    total += centred * centred;
  }
  total = BlockSum(total, scratch);
  if (threadIdx.x == 0) squares[b.row * c.chunks + b.chunk] = total;
}

__global__ void __launch_bounds__(kGroupNormThreads)
    GroupNormApplyKernel(GroupNormParams p, GroupNormChunking c, const float* x,
                         const float* scale, const float* bias, const double* sums,
                         const double* squares, float* y) {
  const GroupNormBlock b = BlockOf(c);
  const double mean = RowAverage(sums, c, b.row);
  const double variance = RowAverage(squares, c, b.row);
  const double inv_std = 1.0 / sqrt(variance + static_cast<double>(p.epsilon));
  const int64_t channels_per_group = p.channels / p.groups;
  const int64_t group = b.row % p.groups;
  const float* x_row = x + b.row * c.row_size;
  float* y_row = y + b.row * c.row_size;
  for (int64_t i = b.begin + threadIdx.x; i < b.end; i += blockDim.x) {
    const int64_t k = p.affine_per_group ? group : group * channels_per_group + i / p.spatial;
    y_row[i] = static_cast<float>((x_row[i] - mean) * inv_std * scale[k] + bias[k]);
  }
}

// ------------------------------------------------------ LayerNormalization

// Note [Row chunks]
// A lane of the warp-per-row kernel reads its row in chunks of kVec
// contiguous elements, 16 bytes where the row allows it (its length a
// multiple of kVec and every buffer 16-byte aligned), one vector load each:
// a row of 768 float16 is 3 loads a lane instead of 24, which is what a
// warp alone on its scheduler (a few rows over many SMs) needs to keep
// memory busy. Chunk j of a row is lane j % 32's, so a warp's loads stay
// contiguous.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) RowChunk {
  T e[kVec];
};

template <typename T, int kVec>
__device__ __forceinline__ RowChunk<T, kVec> LoadChunk(const T* at) {
  return *reinterpret_cast<const RowChunk<T, kVec>*>(at);
}

template <typename T, int kVec>
__device__ __forceinline__ void StoreChunk(T* at, const RowChunk<T, kVec>& chunk) {
  *reinterpret_cast<RowChunk<T, kVec>*>(at) = chunk;
}

// The row element LayerNorm reads, in float: x, or x + residual (the fused
// residual Add, rounded to T as the Add kernel rounds it), also written to
// `sum` when asked. T is float32 or a 16-bit float; the statistics are float.
template <typename T>
struct LayerNormInput {
  const T* x;
  const T* residual;  // null: no fused Add
  T* sum;             // null: the sum has no other reader

  __device__ __forceinline__ float At(int64_t i) const {
    return residual == nullptr ? static_cast<float>(x[i]) : Sum(x[i], residual[i]);
  }

  // Elements i .. i + kVec - 1 (i a multiple of kVec; Note [Row chunks]).
  template <int kVec>
  __device__ __forceinline__ void ChunkAt(int64_t i, float (&v)[kVec]) const {
    const RowChunk<T, kVec> xs = LoadChunk<T, kVec>(x + i);
    if (residual == nullptr) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[e] = static_cast<float>(xs.e[e]);
      return;
    }
    const RowChunk<T, kVec> rs = LoadChunk<T, kVec>(residual + i);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = Sum(xs.e[e], rs.e[e]);
  }

  // x + residual rounded to T, as the Add kernel rounds it.
  static __device__ __forceinline__ float Sum(T a, T b) {
    const float exact = __fadd_rn(static_cast<float>(a), static_cast<float>(b));
    return static_cast<float>(static_cast<T>(exact));
  }
};

// Scale, bias and output of T; the statistics' outputs (float) may be null.
template <typename T>
struct LayerNormOutput {
  const T* scale;
  const T* bias;  // null: no B input
  T* y;
  float* mean;
  float* inv_std_dev;

  __device__ __forceinline__ void Write(int64_t base, int64_t c, float normalized_value) const {
    const float scaled = normalized_value * static_cast<float>(scale[c]);
    y[base + c] = static_cast<T>(bias != nullptr ? scaled + static_cast<float>(bias[c]) : scaled);
  }
};

// Two passes over the row held in registers: the mean, then the variance of
// the deviations (no cancellation from E[x^2] - E[x]^2). Without
// `subtract_mean` the mean is 0 and the variance the mean square
// (RMSNormalization). A lane holds kChunks chunks of kVec elements (Note
// [Row chunks]); `cols` is a multiple of kVec.
template <typename T, int kChunks, int kVec>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    LayerNormWarpRowsKernel(LayerNormInput<T> in, LayerNormOutput<T> out, int64_t rows, int cols,
                            float epsilon, bool subtract_mean) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const int64_t base = row * cols;
  const auto column = [lane](int k) { return (lane + k * kWarpSize) * kVec; };
  // Every load of a pass comes before its stores: a store between two loads
  // may alias them (the sum may share x's buffer, y scale's, as far as the
  // compiler knows), so it would wait out each load's latency in turn.
  // Each element is read and written by the same lane, so reading first is
  // right in place too.
  float v[kChunks][kVec];
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    if (column(k) < cols) {
      in.ChunkAt(base + column(k), v[k]);
    } else {
#pragma unroll
      for (int e = 0; e < kVec; ++e) v[k][e] = 0.0f;
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    if (in.sum != nullptr && column(k) < cols) {
      RowChunk<T, kVec> chunk;
#pragma unroll
      for (int e = 0; e < kVec; ++e) chunk.e[e] = static_cast<T>(v[k][e]);
      StoreChunk(in.sum + base + column(k), chunk);
    }
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum += v[k][e];
  }
  const float mean = subtract_mean ? WarpSum(sum) / static_cast<float>(cols) : 0.0f;
  float squares = 0.0f;
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float deviation = column(k) < cols ? v[k][e] - mean : 0.0f;
      squares += deviation * deviation;
    }
  }
  const float variance = WarpSum(squares) / static_cast<float>(cols);
  const float inv_std_dev = 1.0f / sqrtf(variance + epsilon);
  RowChunk<T, kVec> y[kChunks];
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    if (column(k) >= cols) continue;
    const RowChunk<T, kVec> scale = LoadChunk<T, kVec>(out.scale + column(k));
    RowChunk<T, kVec> bias{};
    if (out.bias != nullptr) bias = LoadChunk<T, kVec>(out.bias + column(k));
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float scaled = (v[k][e] - mean) * inv_std_dev * static_cast<float>(scale.e[e]);
      y[k].e[e] = static_cast<T>(out.bias != nullptr ? scaled + static_cast<float>(bias.e[e])
                                                     : scaled);
    }
  }
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    if (column(k) < cols) StoreChunk(out.y + base + column(k), y[k]);
  }
  if (lane == 0) {
    if (out.mean != nullptr) out.mean[row] = mean;
    if (out.inv_std_dev != nullptr) out.inv_std_dev[row] = inv_std_dev;
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowBlockThreads)
    LayerNormBlockRowsKernel(LayerNormInput<T> in, LayerNormOutput<T> out, int64_t cols,
                             float epsilon, bool subtract_mean) {
  __shared__ float scratch[kRowBlockThreads / kWarpSize];
  const int64_t row = blockIdx.x;
  const int64_t base = row * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = in.At(base + c);
    if (in.sum != nullptr) in.sum[base + c] = static_cast<T>(v);
    sum += v;
  }
  // Later passes read the sum back where it was written (by this thread): the
  // output may share a's or b's buffer.
  const auto value = [&](int64_t i) {
    return in.sum != nullptr ? static_cast<float>(in.sum[i]) : in.At(i);
  };
  // subtract_mean is uniform over the block, so every thread skips the
  // block-wide sum together.
  const float mean = subtract_mean ? BlockSum(sum, scratch) / static_cast<float>(cols) : 0.0f;
  float squares = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float deviation = value(base + c) - mean;
    squares += deviation * deviation;
  }
  const float variance = BlockSum(squares, scratch) / static_cast<float>(cols);
  const float inv_std_dev = 1.0f / sqrtf(variance + epsilon);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out.Write(base, c, (value(base + c) - mean) * inv_std_dev);
  }
  if (threadIdx.x == 0) {
    if (out.mean != nullptr) out.mean[row] = mean;
    if (out.inv_std_dev != nullptr) out.inv_std_dev[row] = inv_std_dev;
  }
}

// LayerNorm of `in` (x, or a fused residual sum): the warp-per-row kernel
// while a row fits its registers, a block per row beyond.
template <typename T>
cudaError_t LaunchLayerNormOf(const LayerNormParams& p, LayerNormInput<T> in,
                              LayerNormOutput<T> out, cudaStream_t stream) {
  if (p.rows <= 0 || p.cols <= 0) return cudaSuccess;
  if (p.cols > kMaxWarpRowCols) {
    if (p.rows > INT32_MAX) return cudaErrorInvalidConfiguration;
    LayerNormBlockRowsKernel<T><<<static_cast<unsigned>(p.rows), kRowBlockThreads, 0, stream>>>(
        in, out, p.cols, p.epsilon, p.subtract_mean);
    return cudaGetLastError();
  }
  const unsigned blocks = WarpRowBlocks(p.rows);
  if (blocks == 0) return cudaErrorInvalidConfiguration;
  const auto launch = [&](auto vec) {
    constexpr int kVec = decltype(vec)::value;
    WithPerLaneBucket((p.cols + kVec - 1) / kVec, [&](auto per_lane) {
      constexpr int kChunks = decltype(per_lane)::value;
      // kChunks * kVec <= 32 holds for every bucket a row of at most
      // kMaxWarpRowCols takes; the others are never launched.
      if constexpr (kChunks * kVec <= 32) {
        LayerNormWarpRowsKernel<T, kChunks, kVec>
            <<<blocks, kRowWarps * kWarpSize, 0, stream>>>(in, out, p.rows,
                                                           static_cast<int>(p.cols), p.epsilon,
                                                           p.subtract_mean);
      }
    });
  };
  constexpr int kVec = 16 / sizeof(T);
  const auto aligned = [](const void* at) { return reinterpret_cast<uintptr_t>(at) % 16 == 0; };
  if (p.cols % kVec == 0 && aligned(in.x) && aligned(in.residual) && aligned(in.sum) &&
      aligned(out.scale) && aligned(out.bias) && aligned(out.y)) {
    launch(std::integral_constant<int, kVec>{});
  } else {
    launch(std::integral_constant<int, 1>{});
  }
  return cudaGetLastError();
}

// fn(T{}) for the element types the row kernels take: float32 and the two
// 16-bit floats.
template <typename Fn>
cudaError_t VisitRowKernelType(DType dtype, Fn&& fn) {
  return VisitDeviceType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, float> || kIsHalfType<T>) {
      return fn(T{});
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

// ------------------------------------------------------------ Reductions
// Note [Reductions] in runtime/host/normalization_kernels.h. A reducer is
// Init, Add (an element), Merge (two partial results, for the warp and
// block trees) and Finish; the kernels below are written once over it.

// A float element as double (the 16-bit floats through float, exactly).
template <typename T>
__device__ __forceinline__ double AsDouble(T x) {
  if constexpr (kIsHalfType<T>) {
    return static_cast<double>(static_cast<float>(x));
  } else {
    return static_cast<double>(x);
  }
}

// A double result as T, the 16-bit floats rounded through float as the host
// reference's Narrow does.
template <typename T>
__device__ __forceinline__ T FromDouble(double v) {
  if constexpr (kIsHalfType<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

__device__ __forceinline__ double PropagatingMax(double a, double b) {
  return isnan(a) || isnan(b) ? CUDART_NAN : (a < b ? b : a);
}
__device__ __forceinline__ double PropagatingMin(double a, double b) {
  return isnan(a) || isnan(b) ? CUDART_NAN : (b < a ? b : a);
}

// log(sum e^x) as a peak and the sum of e^(x - peak) over the elements above
// -Inf, merged online. A NaN or infinite peak is the result.
struct LogSumExpAcc {
  double peak;
  double sum;
};

__device__ __forceinline__ LogSumExpAcc MergeLogSumExp(LogSumExpAcc a, LogSumExpAcc b) {
  if (isnan(a.peak) || isnan(b.peak)) return {CUDART_NAN, 0.0};
  if (a.peak == -CUDART_INF) return b;
  if (b.peak == -CUDART_INF) return a;
  if (a.peak == CUDART_INF || b.peak == CUDART_INF) return {CUDART_INF, 0.0};
  const double peak = a.peak < b.peak ? b.peak : a.peak;
  return {peak, a.sum * exp(a.peak - peak) + b.sum * exp(b.peak - peak)};
}

// The float types, accumulated in double.
template <ReduceOp kOp, typename T>
struct FloatReducer {
  using Acc = std::conditional_t<kOp == ReduceOp::kLogSumExp, LogSumExpAcc, double>;

  __device__ static Acc Init() {
    if constexpr (kOp == ReduceOp::kLogSumExp) {
      return {-CUDART_INF, 0.0};
    } else if constexpr (kOp == ReduceOp::kProd) {
      return 1.0;
    } else if constexpr (kOp == ReduceOp::kMax) {
      return -CUDART_INF;
    } else if constexpr (kOp == ReduceOp::kMin) {
      return CUDART_INF;
    } else {
      return 0.0;
    }
  }

  __device__ static Acc Add(Acc a, T element) {
    const double x = AsDouble(element);
    if constexpr (kOp == ReduceOp::kLogSumExp) {
      return MergeLogSumExp(a, {x, 1.0});
    } else if constexpr (kOp == ReduceOp::kL1) {
      return a + fabs(x);
    } else if constexpr (kOp == ReduceOp::kL2 || kOp == ReduceOp::kSumSquare) {
      return a + x * x;
    } else {
      return Merge(a, x);
    }
  }

  __device__ static Acc Merge(Acc a, Acc b) {
    if constexpr (kOp == ReduceOp::kLogSumExp) {
      return MergeLogSumExp(a, b);
    } else if constexpr (kOp == ReduceOp::kProd) {
      return a * b;
    } else if constexpr (kOp == ReduceOp::kMax) {
      return PropagatingMax(a, b);
    } else if constexpr (kOp == ReduceOp::kMin) {
      return PropagatingMin(a, b);
    } else {
      return a + b;
    }
  }

  __device__ static T Finish(Acc a, int64_t count) {
    if constexpr (kOp == ReduceOp::kLogSumExp) {
      return FromDouble<T>(isfinite(a.peak) ? a.peak + log(a.sum) : a.peak);
    } else if constexpr (kOp == ReduceOp::kMean) {
      return FromDouble<T>(a / static_cast<double>(count));  // 0 / 0 is NaN
    } else if constexpr (kOp == ReduceOp::kL2) {
      return FromDouble<T>(sqrt(a));
    } else if constexpr (kOp == ReduceOp::kLogSum) {
      return FromDouble<T>(log(a));
    } else {
      return FromDouble<T>(a);
    }
  }
};

// int32 and int64: Max and Min in int64, the others in uint64, whose
// wrapping agrees with the element type's modulo 2^32 and 2^64.
template <ReduceOp kOp, typename T>
struct IntegerReducer {
  static constexpr bool kOrders = kOp == ReduceOp::kMax || kOp == ReduceOp::kMin;
  using Acc = std::conditional_t<kOrders, int64_t, uint64_t>;

  __device__ static Acc Init() {
    if constexpr (kOp == ReduceOp::kMax) {
      return std::numeric_limits<T>::lowest();
    } else if constexpr (kOp == ReduceOp::kMin) {
      return std::numeric_limits<T>::max();
    } else if constexpr (kOp == ReduceOp::kProd) {
      return 1;
    } else {
      return 0;
    }
  }

  __device__ static Acc Add(Acc a, T element) {
    if constexpr (kOrders) {
      return Merge(a, static_cast<int64_t>(element));
    } else {
      const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(element));
      if constexpr (kOp == ReduceOp::kL1) {
        return a + (element < 0 ? uint64_t{0} - x : x);
      } else if constexpr (kOp == ReduceOp::kSumSquare) {
        return a + x * x;
      } else {
        return Merge(a, x);
      }
    }
  }

  __device__ static Acc Merge(Acc a, Acc b) {
    if constexpr (kOp == ReduceOp::kMax) {
      return a < b ? b : a;
    } else if constexpr (kOp == ReduceOp::kMin) {
      return b < a ? b : a;
    } else if constexpr (kOp == ReduceOp::kProd) {
      return a * b;
    } else {
      return a + b;
    }
  }

  __device__ static T Finish(Acc a, int64_t) { return static_cast<T>(a); }
};

template <ReduceOp kOp, typename T>
using Reducer = std::conditional_t<std::is_integral_v<T>, IntegerReducer<kOp, T>,
                                   FloatReducer<kOp, T>>;

// The reductions integers take (binding refuses the others).
constexpr bool TakesIntegers(ReduceOp op) {
  return op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kMax ||
         op == ReduceOp::kMin || op == ReduceOp::kL1 || op == ReduceOp::kSumSquare;
}

template <typename Acc>
__device__ __forceinline__ Acc ShuffleXor(Acc v, int offset) {
  return __shfl_xor_sync(kFullMask, v, offset);
}
template <>
__device__ __forceinline__ LogSumExpAcc ShuffleXor(LogSumExpAcc v, int offset) {
  return {__shfl_xor_sync(kFullMask, v.peak, offset), __shfl_xor_sync(kFullMask, v.sum, offset)};
}

// Every lane of the warp gets the merge of all lanes' values.
template <typename R, typename Acc>
__device__ __forceinline__ Acc WarpMerge(Acc v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    v = R::Merge(v, ShuffleXor(v, offset));
  }
  return v;
}

template <typename T, typename R>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    ReduceWarpRowsKernel(const T* in, T* out, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= rows) return;  // the whole warp leaves together
  const int lane = threadIdx.x % kWarpSize;
  const T* x = in + row * cols;
  typename R::Acc acc = R::Init();
  for (int64_t c = lane; c < cols; c += kWarpSize) acc = R::Add(acc, x[c]);
  acc = WarpMerge<R>(acc);
  if (lane == 0) out[row] = R::Finish(acc, cols);
}

template <typename T, typename R>
__global__ void __launch_bounds__(kRowBlockThreads)
    ReduceBlockRowsKernel(const T* in, T* out, int64_t cols) {
  __shared__ typename R::Acc scratch[kRowBlockThreads / kWarpSize];
  const T* x = in + static_cast<int64_t>(blockIdx.x) * cols;
  typename R::Acc acc = R::Init();
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc = R::Add(acc, x[c]);
  acc = WarpMerge<R>(acc);
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  if (lane == 0) scratch[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    acc = lane < static_cast<int>(blockDim.x / kWarpSize) ? scratch[lane] : R::Init();
    acc = WarpMerge<R>(acc);
    if (lane == 0) out[blockIdx.x] = R::Finish(acc, cols);
  }
}

// One thread per output. The innermost reduced dim is walked directly; only
// the outer reduced dims need index decomposition.
template <typename T, typename R>
__global__ void __launch_bounds__(kStridedThreads)
    ReduceStridedKernel(ReduceParams p, const T* in, T* out) {
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
    typename R::Acc acc = R::Init();
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
      for (int64_t j = 0; j < inner_count; ++j) acc = R::Add(acc, in[offset + j * inner_stride]);
    }
    out[t] = R::Finish(acc, p.reduce_count);
  }
}

// An empty reduction: every output is the reducer's value of nothing.
template <typename T, typename R>
__global__ void __launch_bounds__(kStridedThreads) ReduceNothingKernel(int64_t n, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n;
       t += step) {
    out[t] = R::Finish(R::Init(), 0);
  }
}

template <typename T, typename R>
cudaError_t LaunchReduceTyped(const ReduceParams& p, const T* in, T* out, cudaStream_t stream) {
  if (p.reduce_count == 0) {
    ReduceNothingKernel<T, R>
        <<<StridedBlocks(p.num_outputs), kStridedThreads, 0, stream>>>(p.num_outputs, out);
    return cudaGetLastError();
  }
  if (!p.rows_contiguous) {
    ReduceStridedKernel<T, R>
        <<<StridedBlocks(p.num_outputs), kStridedThreads, 0, stream>>>(p, in, out);
    return cudaGetLastError();
  }
  if (p.reduce_count > kMaxWarpReduceCols) {
    if (p.num_outputs > INT32_MAX) return cudaErrorInvalidConfiguration;
    ReduceBlockRowsKernel<T, R>
        <<<static_cast<unsigned>(p.num_outputs), kRowBlockThreads, 0, stream>>>(
            in, out, p.reduce_count);
    return cudaGetLastError();
  }
  const unsigned blocks = WarpRowBlocks(p.num_outputs);
  if (blocks == 0) return cudaErrorInvalidConfiguration;
  ReduceWarpRowsKernel<T, R>
      <<<blocks, kRowWarps * kWarpSize, 0, stream>>>(in, out, p.num_outputs, p.reduce_count);
  return cudaGetLastError();
}

template <ReduceOp kOp>
cudaError_t LaunchReduceOp(const ReduceParams& p, const void* in, void* out,
                           cudaStream_t stream) {
  return VisitDeviceType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    constexpr bool kFloat = std::is_floating_point_v<T> || kIsHalfType<T>;
    constexpr bool kInteger = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
    if constexpr (kFloat || (kInteger && TakesIntegers(kOp))) {
      return LaunchReduceTyped<T, Reducer<kOp, T>>(p, static_cast<const T*>(in),
                                                    static_cast<T*>(out), stream);
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

// ------------------------------------------------------- ArgMax and ArgMin

// A candidate of ArgMax/ArgMin: an element's value (the 16-bit floats as
// float) and its index along the axis.
template <typename V>
struct ArgCandidate {
  V value;
  int64_t index;
};

template <typename T>
using ArgValue = std::conditional_t<kIsHalfType<T>, float, T>;

template <typename V>
__device__ __forceinline__ bool IsNaNValue(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return isnan(v);
  } else {
    return false;
  }
}

// 1 when x wins over b, 0 on a tie, -1 when b wins; a NaN wins over every
// number and ties with a NaN (numpy's argmax and argmin).
template <typename V>
__device__ __forceinline__ int ArgRank(V x, V b, bool is_max) {
  const bool x_nan = IsNaNValue(x);
  const bool b_nan = IsNaNValue(b);
  if (x_nan || b_nan) return int{x_nan} - int{b_nan};
  if (x == b) return 0;
  return (is_max ? x > b : x < b) ? 1 : -1;
}

// The better of two candidates; on a tie, the lower index, or the higher
// with select_last.
template <typename V>
__device__ __forceinline__ ArgCandidate<V> Better(ArgCandidate<V> a, ArgCandidate<V> b,
                                                  bool is_max, bool select_last) {
  const int rank = ArgRank(b.value, a.value, is_max);
  if (rank != 0) return rank > 0 ? b : a;
  return (b.index > a.index) == select_last ? b : a;
}

// The winner of a row of `cols` (inner == 1), in every lane of the warp:
// each lane keeps the best of its columns, then the warp merges.
template <typename T>
__device__ __forceinline__ ArgCandidate<ArgValue<T>> WarpRowBest(const T* x, int64_t cols,
                                                                 bool is_max, bool select_last) {
  using V = ArgValue<T>;
  const int lane = threadIdx.x % kWarpSize;
  // Lanes beyond the row's end hold column 0 (a tie at the lowest index
  // changes no result).
  ArgCandidate<V> best{static_cast<V>(x[0]), 0};
  for (int64_t c = lane; c < cols; c += kWarpSize) {
    best = Better(best, ArgCandidate<V>{static_cast<V>(x[c]), c}, is_max, select_last);
  }
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    const ArgCandidate<V> other{__shfl_xor_sync(kFullMask, best.value, offset),
                                __shfl_xor_sync(kFullMask, best.index, offset)};
    best = Better(best, other, is_max, select_last);
  }
  return best;
}

// The winner of a line of `axis_dim` elements `inner` apart, in one thread.
template <typename T>
__device__ __forceinline__ ArgCandidate<ArgValue<T>> LineBest(const T* line, int64_t axis_dim,
                                                              int64_t inner, bool is_max,
                                                              bool select_last) {
  using V = ArgValue<T>;
  ArgCandidate<V> best{static_cast<V>(line[0]), 0};
  for (int64_t k = 1; k < axis_dim; ++k) {
    best = Better(best, ArgCandidate<V>{static_cast<V>(line[k * inner]), k}, is_max, select_last);
  }
  return best;
}

// One warp per row of [rows, cols] (inner == 1).
template <typename T>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    ArgReduceWarpRowsKernel(ArgReduceParams p, const T* in, int64_t* out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= p.outer) return;  // the whole warp leaves together
  const int64_t index =
      WarpRowBest(in + row * p.axis_dim, p.axis_dim, p.is_max, p.select_last).index;
  if (threadIdx.x % kWarpSize == 0) out[row] = index;
}

// One thread per (outer, inner) line: neighbouring threads read neighbouring
// elements at every step along the axis.
template <typename T>
__global__ void __launch_bounds__(kStridedThreads)
    ArgReduceStridedKernel(ArgReduceParams p, const T* in, int64_t* out) {
  const int64_t lines = p.outer * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < lines;
       t += step) {
    const int64_t o = t / p.inner;
    const T* line = in + o * p.axis_dim * p.inner + (t - o * p.inner);
    out[t] = LineBest(line, p.axis_dim, p.inner, p.is_max, p.select_last).index;
  }
}

// ---------------------------------------------------------------- Hardmax
// 1 at ArgMax's first winner of each line (the first NaN wins), 0 elsewhere;
// the same two shapes of kernel as ArgMax.

template <typename T>
__global__ void __launch_bounds__(kRowWarps* kWarpSize)
    HardmaxWarpRowsKernel(HardmaxParams p, const T* in, T* out) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowWarps + threadIdx.x / kWarpSize;
  if (row >= p.outer) return;  // the whole warp leaves together
  const int64_t cols = p.axis_size;
  const int64_t best = WarpRowBest(in + row * cols, cols, true, false).index;
  for (int64_t c = threadIdx.x % kWarpSize; c < cols; c += kWarpSize) {
    out[row * cols + c] = static_cast<T>(c == best ? 1.0f : 0.0f);
  }
}

template <typename T>
__global__ void __launch_bounds__(kStridedThreads)
    HardmaxStridedKernel(HardmaxParams p, const T* in, T* out) {
  const int64_t lines = p.outer * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < lines;
       t += step) {
    const int64_t o = t / p.inner;
    const int64_t base = o * p.axis_size * p.inner + (t - o * p.inner);
    const int64_t best = LineBest(in + base, p.axis_size, p.inner, true, false).index;
    for (int64_t k = 0; k < p.axis_size; ++k) {
      out[base + k * p.inner] = static_cast<T>(k == best ? 1.0f : 0.0f);
    }
  }
}

}  // namespace

cudaError_t LaunchSoftmax(const SoftmaxParams& p, const void* input, void* output,
                          cudaStream_t stream, const void* mask) {
  if (p.outer <= 0 || p.axis_size <= 0 || p.inner <= 0) return cudaSuccess;
  return VisitRowKernelType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return LaunchSoftmaxOf<T>(p, static_cast<const T*>(input), static_cast<const T*>(mask),
                              static_cast<T*>(output), stream);
  });
}

size_t GroupNormWorkspaceBytes(const GroupNormParams& p) {
  if (p.groups <= 0 || p.channels % p.groups != 0) return 0;
  const GroupNormChunking c = ChunkingOf(p);
  return c.rows <= 0 ? 0 : 2 * static_cast<size_t>(c.rows * c.chunks) * sizeof(double);
}

cudaError_t LaunchGroupNorm(const GroupNormParams& p, const float* x, const float* scale,
                            const float* bias, float* y, double* partials, cudaStream_t stream) {
  if (p.groups <= 0 || p.channels % p.groups != 0) return cudaErrorInvalidValue;
  const GroupNormChunking c = ChunkingOf(p);
  if (c.rows <= 0 || c.row_size <= 0) return cudaSuccess;
  if (partials == nullptr) return cudaErrorInvalidValue;
  const int64_t blocks = c.rows * c.chunks;
  if (blocks > INT32_MAX) return cudaErrorInvalidConfiguration;
  double* sums = partials;
  double* squares = partials + blocks;
  const auto grid = static_cast<unsigned>(blocks);
  GroupNormSumsKernel<<<grid, kGroupNormThreads, 0, stream>>>(c, x, sums);
  GroupNormSquaresKernel<<<grid, kGroupNormThreads, 0, stream>>>(c, x, sums, squares);
  GroupNormApplyKernel<<<grid, kGroupNormThreads, 0, stream>>>(p, c, x, scale, bias, sums,
                                                               squares, y);
  return cudaGetLastError();
}

cudaError_t LaunchLayerNorm(const LayerNormParams& p, const void* x, const void* scale,
                            const void* bias, void* y, float* mean, float* inv_std_dev,
                            cudaStream_t stream) {
  return VisitRowKernelType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const LayerNormInput<T> in{static_cast<const T*>(x), nullptr, nullptr};
    const LayerNormOutput<T> out{static_cast<const T*>(scale), static_cast<const T*>(bias),
                                 static_cast<T*>(y), mean, inv_std_dev};
    return LaunchLayerNormOf<T>(p, in, out, stream);
  });
}

cudaError_t LaunchAddLayerNorm(const LayerNormParams& p, const void* a, const void* b,
                               const void* scale, const void* bias, void* y, void* sum,
                               cudaStream_t stream) {
  return VisitRowKernelType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    const LayerNormInput<T> in{static_cast<const T*>(a), static_cast<const T*>(b),
                               static_cast<T*>(sum)};
    const LayerNormOutput<T> out{static_cast<const T*>(scale), static_cast<const T*>(bias),
                                 static_cast<T*>(y), nullptr, nullptr};
    return LaunchLayerNormOf<T>(p, in, out, stream);
  });
}

cudaError_t LaunchReduce(const ReduceParams& p, const void* input, void* output,
                         cudaStream_t stream) {
  if (p.num_outputs <= 0) return cudaSuccess;
  switch (p.op) {
    case ReduceOp::kSum:
      return LaunchReduceOp<ReduceOp::kSum>(p, input, output, stream);
    case ReduceOp::kMean:
      return LaunchReduceOp<ReduceOp::kMean>(p, input, output, stream);
    case ReduceOp::kProd:
      return LaunchReduceOp<ReduceOp::kProd>(p, input, output, stream);
    case ReduceOp::kMax:
      return LaunchReduceOp<ReduceOp::kMax>(p, input, output, stream);
    case ReduceOp::kMin:
      return LaunchReduceOp<ReduceOp::kMin>(p, input, output, stream);
    case ReduceOp::kL1:
      return LaunchReduceOp<ReduceOp::kL1>(p, input, output, stream);
    case ReduceOp::kL2:
      return LaunchReduceOp<ReduceOp::kL2>(p, input, output, stream);
    case ReduceOp::kSumSquare:
      return LaunchReduceOp<ReduceOp::kSumSquare>(p, input, output, stream);
    case ReduceOp::kLogSum:
      return LaunchReduceOp<ReduceOp::kLogSum>(p, input, output, stream);
    case ReduceOp::kLogSumExp:
      return LaunchReduceOp<ReduceOp::kLogSumExp>(p, input, output, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchArgReduce(const ArgReduceParams& p, const void* input, int64_t* output,
                            cudaStream_t stream) {
  const int64_t lines = p.outer * p.inner;
  if (lines <= 0) return cudaSuccess;
  if (p.axis_dim <= 0) return cudaErrorInvalidValue;  // the factory refuses these
  return VisitDeviceType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_floating_point_v<T> || kIsHalfType<T> || std::is_same_v<T, int32_t> ||
                  std::is_same_v<T, int64_t>) {
      const T* in = static_cast<const T*>(input);
      if (p.inner == 1) {
        const unsigned blocks = WarpRowBlocks(p.outer);
        if (blocks == 0) return cudaErrorInvalidConfiguration;
        ArgReduceWarpRowsKernel<T><<<blocks, kRowWarps * kWarpSize, 0, stream>>>(p, in, output);
      } else {
        ArgReduceStridedKernel<T>
            <<<StridedBlocks(lines), kStridedThreads, 0, stream>>>(p, in, output);
      }
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

cudaError_t LaunchHardmax(const HardmaxParams& p, const void* input, void* output,
                          cudaStream_t stream) {
  const int64_t lines = p.outer * p.inner;
  if (lines <= 0 || p.axis_size <= 0) return cudaSuccess;
  return VisitDeviceType(p.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_floating_point_v<T> || kIsHalfType<T>) {
      const T* in = static_cast<const T*>(input);
      T* out = static_cast<T*>(output);
      if (p.inner == 1) {
        const unsigned blocks = WarpRowBlocks(p.outer);
        if (blocks == 0) return cudaErrorInvalidConfiguration;
        HardmaxWarpRowsKernel<T><<<blocks, kRowWarps * kWarpSize, 0, stream>>>(p, in, out);
      } else {
        HardmaxStridedKernel<T><<<StridedBlocks(lines), kStridedThreads, 0, stream>>>(p, in, out);
      }
      return cudaGetLastError();
    } else {
      return cudaErrorInvalidValue;
    }
  });
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
