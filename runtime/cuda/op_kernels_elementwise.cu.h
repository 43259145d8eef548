#pragma once
// Device side of Note [Strided layouts]: kernels that map a functor over
// inputs into a dense output, and LaunchMapped, which picks the kernel a
// layout needs. Included by the elementwise .cu files only (nvcc).

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {

inline constexpr int kMapThreads = 256;
// Beyond this many blocks the kernels stride over the grid: about eight
// waves of a 132-SM H200 at full occupancy, so large tensors still keep every
// SM busy while each thread amortises its index set-up.
inline constexpr int64_t kMaxMapBlocks = 8192;

inline unsigned MapBlocks(int64_t work_items) {
  const int64_t blocks = (work_items + kMapThreads - 1) / kMapThreads;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, kMaxMapBlocks)));
}

// kVec elements moved as one aligned load or store.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <int kVec, typename Out, typename F, typename... In>
__device__ __forceinline__ Pack<Out, kVec> MapPack(const F& f, const Pack<In, kVec>&... x) {
  Pack<Out, kVec> y;
#pragma unroll
  for (int k = 0; k < kVec; ++k) y.v[k] = static_cast<Out>(f(x.v[k]...));
  return y;
}

// Every input reads element i. Packs of kVec elements first, then the tail
// (fewer than kVec elements) one by one.
template <int kVec, typename Out, typename F, typename... In>
__global__ void __launch_bounds__(kMapThreads)
    ContiguousMapKernel(int64_t n, F f, Out* out, const In*... in) {
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t packs = n / kVec;
  for (int64_t p = start; p < packs; p += step) {
    reinterpret_cast<Pack<Out, kVec>*>(out)[p] =
        MapPack<kVec, Out>(f, reinterpret_cast<const Pack<In, kVec>*>(in)[p]...);
  }
  for (int64_t i = packs * kVec + start; i < n; i += step) {
    out[i] = static_cast<Out>(f(in[i]...));
  }
}

// Offsets of output element i in each of kInputs inputs. kRank > 0 fixes the
// rank at compile time (fully unrolled, no loop over unused dims); 0 reads it
// from the layout. The innermost dim is peeled first; dim 0 takes the
// remaining quotient, so a rank-1 layout costs no division at all.
template <int kRank, int kInputs, typename Index>
__device__ __forceinline__ void StridedOffsets(const StridedLayout& layout, Index i,
                                               int64_t (&offsets)[kInputs]) {
  constexpr int kLimit = kRank > 0 ? kRank : kMaxRank;
#pragma unroll
  for (int k = 0; k < kInputs; ++k) offsets[k] = 0;
#pragma unroll
  for (int d = kLimit - 1; d >= 1; --d) {
    if (kRank == 0 && d >= layout.rank) continue;
    const Index dim = static_cast<Index>(layout.dims[d]);
    const Index quotient = i / dim;
    const Index index = i - quotient * dim;
#pragma unroll
    for (int k = 0; k < kInputs; ++k) {
      offsets[k] += static_cast<int64_t>(index) * layout.strides[k][d];
    }
    i = quotient;
  }
#pragma unroll
  for (int k = 0; k < kInputs; ++k) {
    offsets[k] += static_cast<int64_t>(i) * layout.strides[k][0];
  }
}

template <typename F, size_t... Is, typename... In>
__device__ __forceinline__ auto ApplyAtOffsets(const F& f, const int64_t* offsets,
                                               std::index_sequence<Is...>, const In*... in) {
  return f(in[offsets[Is]]...);
}

template <int kRank, typename Index, typename Out, typename F, typename... In>
__global__ void __launch_bounds__(kMapThreads)
    StridedMapKernel(StridedLayout layout, F f, Out* out, const In*... in) {
  const Index n = static_cast<Index>(layout.num_elements);
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t offsets[sizeof...(In)];
    StridedOffsets<kRank>(layout, i, offsets);
    out[i] = static_cast<Out>(
        ApplyAtOffsets(f, offsets, std::index_sequence_for<In...>{}, in...));
  }
}

template <typename T>
inline bool IsAligned(const T* ptr, size_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

template <typename Out, typename... In>
inline constexpr int kMapVec = static_cast<int>(16 / std::max({sizeof(Out), sizeof(In)...}));

// out[i] = f(in_0[i], ...) for i < n: vectorised where every pointer is
// aligned to a pack.
template <typename Out, typename F, typename... In>
cudaError_t LaunchContiguousMapped(int64_t n, F f, Out* out, cudaStream_t stream,
                                   const In*... in) {
  if (n <= 0) return cudaSuccess;
  constexpr int kVec = kMapVec<Out, In...>;
  const bool aligned =
      IsAligned(out, sizeof(Out) * kVec) && (IsAligned(in, sizeof(In) * kVec) && ...);
  if (aligned && n >= kVec) {
    ContiguousMapKernel<kVec><<<MapBlocks(n / kVec), kMapThreads, 0, stream>>>(n, f, out, in...);
  } else {
    ContiguousMapKernel<1><<<MapBlocks(n), kMapThreads, 0, stream>>>(n, f, out, in...);
  }
  return cudaGetLastError();
}

// Launches f over the layout: out[i] = f(in_0[offset_0(i)], ...).
template <typename Out, typename F, typename... In>
cudaError_t LaunchMapped(const StridedLayout& layout, F f, Out* out, cudaStream_t stream,
                         const In*... in) {
  const int64_t n = layout.num_elements;
  if (n <= 0) return cudaSuccess;
  if (layout.contiguous) return LaunchContiguousMapped(n, f, out, stream, in...);
  const unsigned blocks = MapBlocks(n);
  if (!layout.index32) {
    StridedMapKernel<0, uint64_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
    return cudaGetLastError();
  }
  switch (layout.rank) {
    case 1:
      StridedMapKernel<1, uint32_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
      break;
    case 2:
      StridedMapKernel<2, uint32_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
      break;
    case 3:
      StridedMapKernel<3, uint32_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
      break;
    case 4:
      StridedMapKernel<4, uint32_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
      break;
    default:
      StridedMapKernel<0, uint32_t><<<blocks, kMapThreads, 0, stream>>>(layout, f, out, in...);
      break;
  }
  return cudaGetLastError();
}

}  // namespace op_kernels_internal
}  // namespace graphserve
