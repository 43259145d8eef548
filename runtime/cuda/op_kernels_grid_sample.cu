// GridSample: each output element samples its image at the point the grid
// holds, with the coordinate rules of Note [GridSample coordinates]
// (runtime/ops/grid_sample.cc), one thread per sample point and group of
// channels.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/op_kernels_elementwise.cu.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace op_kernels_internal {
namespace {

template <typename C, typename G>
__device__ C ToCompute(G value) {
  if constexpr (kIsHalfType<G>) {
    return static_cast<C>(static_cast<float>(value));
  } else {
    return static_cast<C>(value);
  }
}

// One spatial dim: its length and valid coordinate range (the Note's step 1).
template <typename C>
struct Dim {
  int64_t length;
  C lo;
  C hi;
};

template <typename C>
__device__ C Reflect(C x, const Dim<C>& dim) {
  const C range = dim.hi - dim.lo;
  if (!(range > 0)) return dim.lo;
  if (x >= dim.lo && x <= dim.hi) return x;
  const bool below = x < dim.lo;
  const C beyond = below ? dim.lo - x : x - dim.hi;
  const C flips = floor(beyond / range);
  const C rest = beyond - flips * range;
  const bool even = fmod(flips, C(2)) == C(0);
  if (below) return even ? dim.lo + rest : dim.hi - rest;
  return even ? dim.hi - rest : dim.lo + rest;
}

// Steps 1 to 3, and the rule for coordinates that are not finite.
template <typename C>
__device__ C SourceCoordinate(C g, const Dim<C>& dim, const GridSampleParams& p) {
  const C d = static_cast<C>(dim.length);
  C x = p.align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
  if (p.interpolation == GridInterpolation::kNearest) x = rint(x);  // half to even
  if (x < dim.lo || x > dim.hi) {
    if (p.padding == GridPadding::kBorder) x = fmin(fmax(x, C(0)), d - 1);
    if (p.padding == GridPadding::kReflection) x = Reflect(x, dim);
  }
  if (!isfinite(x) || fabs(x) > C(1 << 30)) x = C(-100);
  return x;
}

// Step 5: the element a tap at `index` reads, or -1 for a zero.
template <typename C>
__device__ int64_t TapIndex(int64_t index, const Dim<C>& dim, GridPadding padding) {
  if (index >= 0 && index < dim.length) return index;
  if (padding == GridPadding::kZeros) return -1;
  if (padding == GridPadding::kReflection) {
    index = static_cast<int64_t>(Reflect(static_cast<C>(index), dim));
  }
  return index < 0 ? 0 : (index >= dim.length ? dim.length - 1 : index);
}

// Keys' cubic convolution weight at distance s, a = -0.75.
template <typename C>
__device__ C CubicWeight(C s) {
  const C a = C(-0.75);
  s = fabs(s);
  if (s <= 1) return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2) return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return C(0);
}

// Step 4 along one dim: up to four taps.
template <typename C>
struct Taps {
  int count;
  int64_t index[4];
  C weight[4];
};

template <typename C>
__device__ Taps<C> TapsAt(C x, const Dim<C>& dim, const GridSampleParams& p) {
  Taps<C> taps;
  const C first = floor(x);
  const C t = x - first;
  const int64_t base = static_cast<int64_t>(first);
  if (p.interpolation == GridInterpolation::kNearest) {
    taps.count = 1;
    taps.index[0] = TapIndex(static_cast<int64_t>(x), dim, p.padding);
    taps.weight[0] = C(1);
  } else if (p.interpolation == GridInterpolation::kLinear) {
    taps.count = 2;
    taps.index[0] = TapIndex(base, dim, p.padding);
    taps.index[1] = TapIndex(base + 1, dim, p.padding);
    taps.weight[0] = 1 - t;
    taps.weight[1] = t;
  } else {
    taps.count = 4;
    for (int k = 0; k < 4; ++k) {
      taps.index[k] = TapIndex(base + k - 1, dim, p.padding);
      taps.weight[k] = CubicWeight(t - static_cast<C>(k - 1));
    }
  }
  return taps;
}

// Channels one thread samples at its point: the taps are computed once for
// them all, and a point's threads still spread over the channels when there
// are few points (a decoder's 300 queries).
constexpr int64_t kChannelsPerThread = 8;

template <typename T, typename G>
__global__ void __launch_bounds__(kMapThreads)
    GridSampleKernel(GridSampleParams p, const T* x, const G* grid, T* out) {
  using C = ComputeType<T>;
  const int64_t chunks = (p.channels + kChannelsPerThread - 1) / kChannelsPerThread;
  const int64_t total = p.batch * chunks * p.points;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    // Neighbouring threads take neighbouring points: the grid reads and the
    // output writes of each channel coalesce.
    const int64_t point = i % p.points;
    const int64_t rest = i / p.points;
    const int64_t chunk = rest % chunks;
    const int64_t n = rest / chunks;
    const G* coordinates = grid + (n * p.points + point) * p.spatial;
    Taps<C> taps[kMaxGridSpatialDims];
    int64_t strides[kMaxGridSpatialDims];
    int64_t image_size = 1;
    int combinations = 1;
    for (int s = p.spatial - 1; s >= 0; --s) {
      const Dim<C> dim = p.align_corners
                             ? Dim<C>{p.in_dims[s], C(0), static_cast<C>(p.in_dims[s] - 1)}
                             : Dim<C>{p.in_dims[s], C(-0.5), static_cast<C>(p.in_dims[s]) - C(0.5)};
      // The grid's values run innermost dim first.
      const C g = ToCompute<C>(coordinates[p.spatial - 1 - s]);
      taps[s] = TapsAt(SourceCoordinate(g, dim, p), dim, p);
      strides[s] = image_size;
      image_size *= p.in_dims[s];
      combinations *= taps[s].count;
    }
    const int64_t first = chunk * kChannelsPerThread;
    const int64_t last =
        first + kChannelsPerThread < p.channels ? first + kChannelsPerThread : p.channels;
    for (int64_t c = first; c < last; ++c) {
      const int64_t image = n * p.channels + c;
      const T* pixels = x + image * image_size;
      C sum = 0;
      for (int k = 0; k < combinations; ++k) {
        int choice = k;
        int64_t offset = 0;
        C weight = 1;
        bool zero = false;
        for (int s = p.spatial - 1; s >= 0; --s) {
          const int tap = choice % taps[s].count;
          choice /= taps[s].count;
          zero = zero || taps[s].index[tap] < 0;
          offset += taps[s].index[tap] * strides[s];
          weight *= taps[s].weight[tap];
        }
        if (!zero) sum += weight * ToCompute<C>(pixels[offset]);
      }
      out[image * p.points + point] = static_cast<T>(sum);
    }
  }
}

}  // namespace

cudaError_t LaunchGridSample(const GridSampleParams& p, const void* x, const void* grid,
                             void* output, cudaStream_t stream) {
  const int64_t chunks = (p.channels + kChannelsPerThread - 1) / kChannelsPerThread;
  const int64_t total = p.batch * chunks * p.points;
  if (total <= 0) return cudaSuccess;
  return VisitDeviceType(p.dtype, [&](auto x_tag) -> cudaError_t {
    using T = typename decltype(x_tag)::Type;
    return VisitDeviceType(p.grid_dtype, [&](auto grid_tag) -> cudaError_t {
      using G = typename decltype(grid_tag)::Type;
      if constexpr (!kIsFloatType<T> || !kIsFloatType<G>) {
        return cudaErrorInvalidValue;  // binding samples float types only
      } else {
        GridSampleKernel<T, G><<<MapBlocks(total), kMapThreads, 0, stream>>>(
            p, static_cast<const T*>(x), static_cast<const G*>(grid), static_cast<T*>(output));
        return cudaGetLastError();
      }
    });
  });
}

}  // namespace op_kernels_internal
}  // namespace graphserve
