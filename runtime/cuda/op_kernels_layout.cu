// Data movement that is not a strided map: Concat, Gather and the tiled
// Transpose. Both depend
// only on the element size, so they run on unsigned integers of 1, 4 or 8
// bytes whatever the element type.

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

unsigned Blocks(int64_t work_items) {
  const int64_t blocks = (work_items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Threads walk the launch's output columns in order, so stores coalesce;
// each finds its input by a short scan of the column boundaries.
template <typename T>
__global__ void __launch_bounds__(kThreads) ConcatKernel(ConcatLaunch launch, T* out) {
  const int64_t total = launch.outer * launch.width;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t o = i / launch.width;
    const int64_t c = i - o * launch.width;
    int k = 0;
    // Terminates: c < width == col_start[count]. Empty inputs are skipped
    // because their start equals the next one's.
    while (c >= launch.col_start[k + 1]) ++k;
    const T* in = static_cast<const T*>(launch.inputs[k]);
    out[o * launch.out_row + launch.col_begin + c] =
        in[o * launch.in_row[k] + (c - launch.col_start[k])];
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    GatherKernel(GatherParams p, const T* data, const int64_t* indices, T* out) {
  const int64_t total = p.outer * p.num_indices * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t rest = i / p.inner;
    const int64_t inner_index = i - rest * p.inner;
    const int64_t o = rest / p.num_indices;
    const int64_t j = rest - o * p.num_indices;
    int64_t index = indices[j];
    if (index < 0) index += p.axis_dim;
    out[i] = index >= 0 && index < p.axis_dim
                 ? data[(o * p.axis_dim + index) * p.inner + inner_index]
                 : T(0);
  }
}

template <typename T>
__global__ void GatherElementsKernel(GatherElementsParams p, const T* data, const int64_t* indices,
                                     T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < p.num_elements; i += step) {
    int64_t index = indices[i];
    if (index < 0) index += p.axis_dim;
    if (index < 0 || index >= p.axis_dim) {
      out[i] = T(0);
      continue;
    }
    int64_t offset = 0;
    int64_t rest = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % p.dims[d];
      rest /= p.dims[d];
      offset += (d == p.axis ? index : coordinate) * p.data_strides[d];
    }
    out[i] = data[offset];
  }
}

template <typename T>
__global__ void GatherNDKernel(GatherNDParams p, const T* data, const int64_t* indices, T* out) {
  const int64_t total = p.batch * p.tuples * p.slice;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t tuple = e / p.slice;  // batch * tuples + t
    const int64_t within = e - tuple * p.slice;
    const int64_t b = tuple / p.tuples;
    int64_t offset = b * p.data_batch_stride;
    bool inside = true;
    for (int j = 0; j < p.index_count; ++j) {
      int64_t index = indices[tuple * p.index_count + j];
      if (index < 0) index += p.indexed_dims[j];
      inside = inside && index >= 0 && index < p.indexed_dims[j];
      offset += index * p.indexed_strides[j];
    }
    out[e] = inside ? data[offset + within] : T(0);
  }
}

constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column; each moves kTile / kTileRows
constexpr int64_t kMaxGridYZ = 65535;

// Block (x, y, z) moves the kTile x kTile tile of rows [x * kTile, +kTile)
// and cols [y * kTile, +kTile) of batch z: reads along the input's rows
// (the output's rows are the input's innermost dim), writes along the
// output's cols. The extra column keeps the transposed reads of the tile off
// a single shared-memory bank.
template <typename T>
__global__ void __launch_bounds__(kTile* kTileRows)
    TiledTransposeKernel(const T* in, T* out, int64_t rows, int64_t cols) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t batch_offset = static_cast<int64_t>(blockIdx.z) * rows * cols;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int64_t col = col0 + j;
    const int64_t row = row0 + threadIdx.x;
    // Input [cols, rows]: element (col, row).
    if (col < cols && row < rows) tile[j][threadIdx.x] = in[batch_offset + col * rows + row];
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const int64_t row = row0 + j;
    const int64_t col = col0 + threadIdx.x;
    // Output [rows, cols]: element (row, col) = input (col, row) = tile[x][j].
    if (row < rows && col < cols) out[batch_offset + row * cols + col] = tile[threadIdx.x][j];
  }
}

template <typename T>
cudaError_t LaunchConcatTyped(const ConcatLaunch& launch, void* output, cudaStream_t stream) {
  ConcatKernel<T><<<Blocks(launch.outer * launch.width), kThreads, 0, stream>>>(
      launch, static_cast<T*>(output));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGatherTyped(const GatherParams& p, const void* data, const int64_t* indices,
                              void* output, cudaStream_t stream) {
  GatherKernel<T><<<Blocks(p.outer * p.num_indices * p.inner), kThreads, 0, stream>>>(
      p, static_cast<const T*>(data), indices, static_cast<T*>(output));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGatherElementsTyped(const GatherElementsParams& p, const void* data,
                                      const int64_t* indices, void* output, cudaStream_t stream) {
  GatherElementsKernel<T><<<Blocks(p.num_elements), kThreads, 0, stream>>>(
      p, static_cast<const T*>(data), indices, static_cast<T*>(output));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchGatherNDTyped(const GatherNDParams& p, const void* data, const int64_t* indices,
                                void* output, cudaStream_t stream) {
  GatherNDKernel<T><<<Blocks(p.batch * p.tuples * p.slice), kThreads, 0, stream>>>(
      p, static_cast<const T*>(data), indices, static_cast<T*>(output));
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTiledTransposeTyped(const TiledTransposeParams& p, const void* input,
                                      void* output, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.rows + kTile - 1) / kTile),
                  static_cast<unsigned>((p.cols + kTile - 1) / kTile),
                  static_cast<unsigned>(p.batch));
  TiledTransposeKernel<T><<<grid, dim3(kTile, kTileRows), 0, stream>>>(
      static_cast<const T*>(input), static_cast<T*>(output), p.rows, p.cols);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchConcat(const ConcatLaunch& launch, void* output, cudaStream_t stream) {
  if (launch.outer <= 0 || launch.width <= 0) return cudaSuccess;
  return VisitBitsOfSize(launch.elem_size, [&](auto bits) {
    return LaunchConcatTyped<decltype(bits)>(launch, output, stream);
  });
}

cudaError_t LaunchGather(const GatherParams& p, const void* data, const int64_t* indices,
                         void* output, cudaStream_t stream) {
  if (p.outer <= 0 || p.num_indices <= 0 || p.inner <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    return LaunchGatherTyped<decltype(bits)>(p, data, indices, output, stream);
  });
}

cudaError_t LaunchGatherElements(const GatherElementsParams& p, const void* data,
                                 const int64_t* indices, void* output, cudaStream_t stream) {
  if (p.num_elements <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    return LaunchGatherElementsTyped<decltype(bits)>(p, data, indices, output, stream);
  });
}

cudaError_t LaunchGatherND(const GatherNDParams& p, const void* data, const int64_t* indices,
                           void* output, cudaStream_t stream) {
  if (p.batch * p.tuples * p.slice <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    return LaunchGatherNDTyped<decltype(bits)>(p, data, indices, output, stream);
  });
}

bool TiledTransposeFits(const TiledTransposeParams& p) {
  return p.batch >= 1 && p.batch <= kMaxGridYZ && p.rows >= 1 && p.cols >= 1 &&
         (p.rows + kTile - 1) / kTile <= INT32_MAX && (p.cols + kTile - 1) / kTile <= kMaxGridYZ;
}

cudaError_t LaunchTiledTranspose(const TiledTransposeParams& p, const void* input, void* output,
                                 cudaStream_t stream) {
  if (!TiledTransposeFits(p)) return cudaErrorInvalidConfiguration;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    return LaunchTiledTransposeTyped<decltype(bits)>(p, input, output, stream);
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
