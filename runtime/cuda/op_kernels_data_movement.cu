// Tile, Trilu, the scatters, OneHot and TopK. Tile, Trilu, OneHot and a
// scatter without reduction only move elements, so they run on unsigned
// integers of the element's size whatever its type; the scatters' reductions
// and TopK compute on the element type (Note [Datatype table]).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

// The value a kernel compares and computes with: the 16-bit floats as float
// (exactly), every other type as it is; common/half.h's Widen on the host.
template <typename T>
__device__ __forceinline__ auto Widen(T x) {
  if constexpr (kIsHalfType<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

template <typename T>
__device__ __forceinline__ bool IsNaN(T x) {
  if constexpr (std::is_floating_point_v<decltype(Widen(x))>) {
    return isnan(Widen(x));
  } else {
    return false;
  }
}

// ---------------------------------------------------------------- Tile, Trilu

template <typename T>
__global__ void __launch_bounds__(kMapThreads) TileKernel(TileParams p, const T* in, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < p.num_elements; i += step) {
    int64_t rest = i;
    int64_t offset = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t coordinate = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      offset += (coordinate % p.in_dims[d]) * p.in_strides[d];
    }
    out[i] = in[offset];
  }
}

template <typename T>
__global__ void __launch_bounds__(kMapThreads) TriluKernel(TriluParams p, const T* in, T* out) {
  const int64_t total = p.matrices * p.rows * p.cols;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t row_index = e / p.cols;
    const int64_t j = e - row_index * p.cols;
    const int64_t i = row_index % p.rows;
    const bool keep = p.upper ? j - i >= p.k : j - i <= p.k;
    out[e] = keep ? in[e] : T(0);
  }
}

// ---------------------------------------------------------------- OneHot

template <typename T>
__global__ void __launch_bounds__(kMapThreads)
    OneHotKernel(OneHotParams p, const int64_t* indices, const T* values, T* out) {
  const T off = values[0];
  const T on = values[1];
  const int64_t total = p.outer * p.depth * p.inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t rest = e / p.inner;
    const int64_t i = e - rest * p.inner;
    const int64_t o = rest / p.depth;
    const int64_t d = rest - o * p.depth;
    int64_t index = indices[o * p.inner + i];
    if (index < 0 && p.wrap_negative) index += p.depth;
    out[e] = index == d ? on : off;
  }
}

// ---------------------------------------------------------------- scatters

// One update combined with the element it lands on: the host kernels'
// Combine (runtime/host/data_movement_kernels.cc) step for step, so that the
// results are the same bits (the 16-bit floats round to nearest even on both
// sides; float and double add and multiply once, correctly rounded).
template <typename T>
__device__ __forceinline__ T Combine(ScatterReduction reduction, T current, T update) {
  const auto a = Widen(current);
  const auto b = Widen(update);
  using Wide = decltype(a);
  switch (reduction) {
    case ScatterReduction::kAdd:
    case ScatterReduction::kMul:
      if constexpr (std::is_floating_point_v<Wide>) {
        return static_cast<T>(reduction == ScatterReduction::kAdd ? a + b : a * b);
      } else {
        const uint64_t x = static_cast<uint64_t>(a);  // wraps, as on the host
        const uint64_t y = static_cast<uint64_t>(b);
        return static_cast<T>(reduction == ScatterReduction::kAdd ? x + y : x * y);
      }
    case ScatterReduction::kMax:
    case ScatterReduction::kMin:
      if (IsNaN(current)) return current;
      if (IsNaN(update)) return update;
      return (reduction == ScatterReduction::kMax ? b > a : b < a) ? update : current;
    case ScatterReduction::kNone:
      break;
  }
  return update;
}

// The offset of index tuple `tuple`, false when an index is out of range
// (Note [Scatter kernels]: its update is skipped).
__device__ __forceinline__ bool TupleOffset(const ScatterNDParams& p, const int64_t* tuple,
                                            int64_t& offset) {
  offset = 0;
  for (int j = 0; j < p.index_count; ++j) {
    int64_t index = tuple[j];
    if (index < 0) index += p.indexed_dims[j];
    if (index < 0 || index >= p.indexed_dims[j]) return false;
    offset += index * p.indexed_strides[j];
  }
  return true;
}

template <typename T>
__global__ void __launch_bounds__(kMapThreads)
    ScatterNDReplaceKernel(ScatterNDParams p, const int64_t* indices, const T* updates, T* out) {
  const int64_t total = p.tuples * p.slice;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t t = e / p.slice;
    int64_t offset;
    if (TupleOffset(p, indices + t * p.index_count, offset)) {
      out[offset + (e - t * p.slice)] = updates[e];
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kMapThreads)
    ScatterNDReduceKernel(ScatterNDParams p, const int64_t* indices, const T* updates, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t w = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < p.slice;
       w += step) {
    for (int64_t t = 0; t < p.tuples; ++t) {
      int64_t offset;
      if (!TupleOffset(p, indices + t * p.index_count, offset)) continue;
      T& target = out[offset + w];
      target = Combine(p.reduction, target, updates[t * p.slice + w]);
    }
  }
}

// The data offset of update i's coordinates with the axis coordinate 0.
__device__ __forceinline__ int64_t LineOffset(const ScatterElementsParams& p, int64_t i) {
  int64_t offset = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t coordinate = i % p.dims[d];
    i /= p.dims[d];
    if (d != p.axis) offset += coordinate * p.data_strides[d];
  }
  return offset;
}

template <typename T>
__global__ void __launch_bounds__(kMapThreads) ScatterElementsReplaceKernel(
    ScatterElementsParams p, const int64_t* indices, const T* updates, T* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < p.num_updates; i += step) {
    int64_t index = indices[i];
    if (index < 0) index += p.axis_dim;
    if (index < 0 || index >= p.axis_dim) continue;
    out[LineOffset(p, i) + index * p.data_strides[p.axis]] = updates[i];
  }
}

// One thread per line along the axis (the updates viewed as [outer,
// axis_len, inner]), its updates in order.
template <typename T>
__global__ void __launch_bounds__(kMapThreads) ScatterElementsReduceKernel(
    ScatterElementsParams p, const int64_t* indices, const T* updates, T* out) {
  const int64_t axis_len = p.dims[p.axis];
  int64_t inner = 1;
  for (int d = p.axis + 1; d < p.rank; ++d) inner *= p.dims[d];
  const int64_t lines = p.num_updates / axis_len;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t line = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; line < lines;
       line += step) {
    const int64_t outer = line / inner;
    const int64_t first = outer * axis_len * inner + (line - outer * inner);
    const int64_t base = LineOffset(p, first);
    for (int64_t a = 0; a < axis_len; ++a) {
      const int64_t u = first + a * inner;
      int64_t index = indices[u];
      if (index < 0) index += p.axis_dim;
      if (index < 0 || index >= p.axis_dim) continue;
      T& target = out[base + index * p.data_strides[p.axis]];
      target = Combine(p.reduction, target, updates[u]);
    }
  }
}

// The copy every scatter starts with (Note [Scatter kernels]).
cudaError_t CopyData(const void* data, void* output, int64_t bytes, cudaStream_t stream) {
  if (bytes <= 0 || data == output) return cudaSuccess;
  return cudaMemcpyAsync(output, data, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                         stream);
}

// fn(T{}) with the type a scatter runs on: unsigned bits of the element's
// size without a reduction, the element's device type with one (never bool:
// binding refuses arithmetic on it).
template <typename Fn>
cudaError_t VisitScatterType(DType dtype, ScatterReduction reduction, Fn&& fn) {
  if (reduction == ScatterReduction::kNone) return VisitElementBits(dtype, fn);
  return VisitDeviceType(dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, bool>) {
      return cudaErrorInvalidValue;
    } else {
      return fn(T{});
    }
  });
}

// ---------------------------------------------------------------- TopK

constexpr int kTopKSortThreads = 1024;
constexpr int kTopKSelectThreads = 512;  // a power of two: the reduction halves it
constexpr int64_t kMaxLineBlocks = 65535;

// Note [TopK order]: whether (a at index ia) comes before (b at ib).
template <typename T>
__device__ __forceinline__ bool ComesFirst(T a, int64_t ia, T b, int64_t ib, bool largest) {
  const bool a_nan = IsNaN(a);
  const bool b_nan = IsNaN(b);
  if (a_nan || b_nan) {
    if (a_nan != b_nan) return largest ? a_nan : b_nan;
    return ia < ib;
  }
  const auto x = Widen(a);
  const auto y = Widen(b);
  if (x != y) return largest ? x > y : x < y;
  return ia < ib;
}

// A line of up to kTopKSortLimit elements, padded to `sort_size` (a power
// of two), bitonic-sorted in shared memory by ComesFirst; slots at or past
// axis_dim are padding, after every element.
template <typename T>
__global__ void __launch_bounds__(kTopKSortThreads)
    TopKSortKernel(TopKParams p, int sort_size, const T* in, T* values, int64_t* indices) {
  __shared__ T keys[kTopKSortLimit];
  __shared__ int32_t slots[kTopKSortLimit];
  const int64_t n = p.axis_dim;
  auto before = [&](int s, int t) {
    if (slots[s] >= n || slots[t] >= n) return slots[s] < slots[t];
    return ComesFirst(keys[s], slots[s], keys[t], slots[t], p.largest);
  };
  for (int64_t line = blockIdx.x; line < p.outer * p.inner; line += gridDim.x) {
    const int64_t o = line / p.inner;
    const int64_t i = line - o * p.inner;
    const T* x = in + o * n * p.inner + i;
    for (int s = threadIdx.x; s < sort_size; s += blockDim.x) {
      slots[s] = s;
      keys[s] = x[(s < n ? s : 0) * p.inner];
    }
    __syncthreads();
    for (int size = 2; size <= sort_size; size <<= 1) {
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        for (int s = threadIdx.x; s < sort_size; s += blockDim.x) {
          const int partner = s ^ stride;
          if (partner <= s) continue;
          const bool ascending = (s & size) == 0;
          if (before(s, partner) != ascending) {
            const T key = keys[s];
            keys[s] = keys[partner];
            keys[partner] = key;
            const int32_t slot = slots[s];
            slots[s] = slots[partner];
            slots[partner] = slot;
          }
        }
        __syncthreads();
      }
    }
    for (int64_t j = threadIdx.x; j < p.k; j += blockDim.x) {
      const int64_t to = (o * p.k + j) * p.inner + i;
      values[to] = keys[j];
      if (indices != nullptr) indices[to] = slots[j];
    }
    __syncthreads();  // the next line reuses keys and slots
  }
}

// A longer line: pass j finds, by a block reduction, the first element in
// ComesFirst's order after pass j - 1's pick. k passes over the line, so
// this suits the small k of sampling over a vocabulary.
template <typename T>
__global__ void __launch_bounds__(kTopKSelectThreads)
    TopKSelectKernel(TopKParams p, const T* in, T* values, int64_t* indices) {
  __shared__ T best_keys[kTopKSelectThreads];
  __shared__ int64_t best_slots[kTopKSelectThreads];  // -1: no candidate
  const int64_t n = p.axis_dim;
  const int tid = threadIdx.x;
  for (int64_t line = blockIdx.x; line < p.outer * p.inner; line += gridDim.x) {
    const int64_t o = line / p.inner;
    const int64_t i = line - o * p.inner;
    const T* x = in + o * n * p.inner + i;
    T picked = x[0];
    int64_t picked_slot = -1;  // none yet
    for (int64_t j = 0; j < p.k; ++j) {
      T key = x[0];
      int64_t slot = -1;
      for (int64_t s = tid; s < n; s += blockDim.x) {
        const T v = x[s * p.inner];
        if (picked_slot >= 0 && !ComesFirst(picked, picked_slot, v, s, p.largest)) continue;
        if (slot < 0 || ComesFirst(v, s, key, slot, p.largest)) {
          key = v;
          slot = s;
        }
      }
      best_keys[tid] = key;
      best_slots[tid] = slot;
      __syncthreads();
      for (int half = blockDim.x / 2; half > 0; half >>= 1) {
        if (tid < half) {
          const int64_t other = best_slots[tid + half];
          if (other >= 0 && (best_slots[tid] < 0 || ComesFirst(best_keys[tid + half], other,
                                                               best_keys[tid], best_slots[tid],
                                                               p.largest))) {
            best_keys[tid] = best_keys[tid + half];
            best_slots[tid] = other;
          }
        }
        __syncthreads();
      }
      picked = best_keys[0];
      picked_slot = best_slots[0];
      if (tid == 0) {
        const int64_t to = (o * p.k + j) * p.inner + i;
        values[to] = picked;
        if (indices != nullptr) indices[to] = picked_slot;
      }
      __syncthreads();  // every thread has read the pick before the next pass
    }
  }
}

}  // namespace

cudaError_t LaunchTile(const TileParams& p, const void* input, void* output,
                       cudaStream_t stream) {
  if (p.num_elements <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    using T = decltype(bits);
    TileKernel<T><<<MapBlocks(p.num_elements), kMapThreads, 0, stream>>>(
        p, static_cast<const T*>(input), static_cast<T*>(output));
    return cudaGetLastError();
  });
}

cudaError_t LaunchTrilu(const TriluParams& p, const void* input, void* output,
                        cudaStream_t stream) {
  const int64_t total = p.matrices * p.rows * p.cols;
  if (total <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    using T = decltype(bits);
    TriluKernel<T><<<MapBlocks(total), kMapThreads, 0, stream>>>(
        p, static_cast<const T*>(input), static_cast<T*>(output));
    return cudaGetLastError();
  });
}

cudaError_t LaunchOneHot(const OneHotParams& p, const int64_t* indices, const void* values,
                         void* output, cudaStream_t stream) {
  const int64_t total = p.outer * p.depth * p.inner;
  if (total <= 0) return cudaSuccess;
  return VisitBitsOfSize(p.elem_size, [&](auto bits) {
    using T = decltype(bits);
    OneHotKernel<T><<<MapBlocks(total), kMapThreads, 0, stream>>>(
        p, indices, static_cast<const T*>(values), static_cast<T*>(output));
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterND(const ScatterNDParams& p, const void* data, const int64_t* indices,
                            const void* updates, void* output, cudaStream_t stream) {
  if (cudaError_t error = CopyData(data, output, p.data_elements * static_cast<int64_t>(DTypeSize(p.dtype)), stream);
      error != cudaSuccess) {
    return error;
  }
  if (p.tuples <= 0 || p.slice <= 0) return cudaSuccess;
  return VisitScatterType(p.dtype, p.reduction, [&](auto type) {
    using T = decltype(type);
    const T* src = static_cast<const T*>(updates);
    T* dst = static_cast<T*>(output);
    if (p.reduction == ScatterReduction::kNone) {
      ScatterNDReplaceKernel<T>
          <<<MapBlocks(p.tuples * p.slice), kMapThreads, 0, stream>>>(p, indices, src, dst);
    } else {
      ScatterNDReduceKernel<T><<<MapBlocks(p.slice), kMapThreads, 0, stream>>>(p, indices, src,
                                                                               dst);
    }
    return cudaGetLastError();
  });
}

cudaError_t LaunchScatterElements(const ScatterElementsParams& p, const void* data,
                                  const int64_t* indices, const void* updates, void* output,
                                  cudaStream_t stream) {
  if (cudaError_t error = CopyData(data, output, p.data_elements * static_cast<int64_t>(DTypeSize(p.dtype)), stream);
      error != cudaSuccess) {
    return error;
  }
  if (p.num_updates <= 0) return cudaSuccess;
  return VisitScatterType(p.dtype, p.reduction, [&](auto type) {
    using T = decltype(type);
    const T* src = static_cast<const T*>(updates);
    T* dst = static_cast<T*>(output);
    if (p.reduction == ScatterReduction::kNone) {
      ScatterElementsReplaceKernel<T>
          <<<MapBlocks(p.num_updates), kMapThreads, 0, stream>>>(p, indices, src, dst);
    } else {
      const int64_t lines = p.num_updates / p.dims[p.axis];
      ScatterElementsReduceKernel<T>
          <<<MapBlocks(lines), kMapThreads, 0, stream>>>(p, indices, src, dst);
    }
    return cudaGetLastError();
  });
}

cudaError_t LaunchTopK(const TopKParams& p, const void* input, void* values, int64_t* indices,
                       cudaStream_t stream) {
  const int64_t lines = p.outer * p.inner;
  if (lines <= 0 || p.k <= 0) return cudaSuccess;
  if (p.k > p.axis_dim) return cudaErrorInvalidValue;
  const unsigned blocks = static_cast<unsigned>(std::min(lines, kMaxLineBlocks));
  return VisitDeviceType(p.dtype, [&](auto tag) -> cudaError_t {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, bool>) {
      return cudaErrorInvalidValue;  // TopK takes numbers
    } else {
      const T* x = static_cast<const T*>(input);
      T* out = static_cast<T*>(values);
      if (p.axis_dim <= kTopKSortLimit) {
        int sort_size = 1;
        while (sort_size < p.axis_dim) sort_size <<= 1;
        TopKSortKernel<T><<<blocks, kTopKSortThreads, 0, stream>>>(p, sort_size, x, out, indices);
      } else {
        TopKSelectKernel<T><<<blocks, kTopKSelectThreads, 0, stream>>>(p, x, out, indices);
      }
      return cudaGetLastError();
    }
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
