// Pooling, the per-channel convolution epilogue, Pad and activations: the
// kernels behind runtime/cuda/nn_kernels.h.
//
// Note [Index width]
// ~~~~~~~~~~~~~~~~~~
// Every kernel maps one thread to one output element (or one 4-float pack, or
// one row) and recovers the element's coordinates by dividing its flat index
// by the output's dims. When the flat index fits 31 bits (every realistic
// tensor) the divisions are FastDivider's multiply-high and shift, computed
// once on the host; otherwise the kernel strides over a grid of 64-bit
// indices and divides in 64 bits. The 64-bit variants exist so that no size is
// refused, not for speed.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/cuda/dtype_dispatch.cu.h"
#include "runtime/cuda/nn_kernels.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kWarpsPerBlock = kThreads / kWarpSize;
constexpr unsigned kFullMask = 0xffffffffu;
// Flat indices below this use 32-bit arithmetic (Note [Index width]).
constexpr int64_t kIndex32Limit = std::numeric_limits<int32_t>::max();
// The grid of the 64-bit grid-stride kernels: enough blocks to fill any
// current GPU many times over.
constexpr int64_t kMaxStridedBlocks = 65536;
// Global-pool rows at least this long take a block each; shorter ones a warp.
constexpr int64_t kBlockRowSpatial = 4096;

unsigned BlocksFor(int64_t work_items) {
  return static_cast<unsigned>((work_items + kThreads - 1) / kThreads);
}

unsigned StridedBlocks(int64_t work_items) {
  return static_cast<unsigned>(std::clamp<int64_t>(BlocksFor(work_items), 1, kMaxStridedBlocks));
}

bool IsAligned(const void* ptr, uintptr_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

// Division of dividends below 2^31 by a fixed divisor >= 1 as a multiply-high,
// an add and a shift (Granlund and Montgomery, as PyTorch's IntDivider):
// the magic number is computed once on the host.
struct FastDivider {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  FastDivider() = default;
  explicit FastDivider(uint32_t d) : divisor(d) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    // < 2^32 because 2^(shift-1) < d <= 2^shift.
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  // n < 2^31, so that __umulhi(n, magic) + n (at most 2n) does not wrap.
  __device__ __forceinline__ uint32_t Div(uint32_t n) const {
    return (__umulhi(n, magic) + n) >> shift;
  }
};

// --- Activations -----------------------------------------------------------

// std::min and std::max exactly as the host reference calls them (same
// argument order), so that a NaN clip limit behaves the same on both sides.
__device__ __forceinline__ float StdMin(float a, float b) { return b < a ? b : a; }
__device__ __forceinline__ float StdMax(float a, float b) { return a < b ? b : a; }

// Never overflows expf: for v < 0 it uses e^v / (1 + e^v). NaN gives NaN.
__device__ __forceinline__ float Sigmoid(float v) {
  if (v >= 0.0f) return 1.0f / (1.0f + expf(-v));
  const float e = expf(v);
  return e / (1.0f + e);
}

struct ActNone {
  __device__ float operator()(float v) const { return v; }
};
struct ActRelu {
  __device__ float operator()(float v) const { return v > 0.0f ? v : (v != v ? v : 0.0f); }
};
struct ActClip {
  float lo;
  float hi;
  __device__ float operator()(float v) const { return v != v ? v : StdMin(StdMax(v, lo), hi); }
};
struct ActSigmoid {
  __device__ float operator()(float v) const { return Sigmoid(v); }
};
// -inf gives -inf * 0 = NaN, as the Sigmoid-then-Mul graph it replaces.
struct ActSilu {
  __device__ float operator()(float v) const { return v * Sigmoid(v); }
};
// alpha * v + beta rounded once (fmaf), as the float64 reference rounds it.
struct ActHardSigmoid {
  float alpha;
  float beta;
  __device__ float operator()(float v) const {
    return v != v ? v : StdMax(0.0f, StdMin(1.0f, fmaf(alpha, v, beta)));
  }
};
// v * clamp(v / 6 + 1/2, 0, 1) computed as v * (v + 3) / 6 on the linear
// piece: v + 3 is exact there for v near -3 (Sterbenz), where v / 6 + 0.5
// would cancel and lose most of its bits. Below the ramp v * 0 keeps the
// reference's -0 and its NaN for -inf.
struct ActHardSwish {
  __device__ float operator()(float v) const {
    if (v != v) return v;
    const float r = v + 3.0f;
    if (!(r > 0.0f)) return v * 0.0f;
    if (r >= 6.0f) return v;
    return v * r / 6.0f;
  }
};

// Calls launch(functor) with the functor of a.kind.
template <typename Launch>
cudaError_t WithActivation(const ActivationParams& a, Launch&& launch) {
  switch (a.kind) {
    case Activation::kNone:
      return launch(ActNone{});
    case Activation::kRelu:
      return launch(ActRelu{});
    case Activation::kClip:
      return launch(ActClip{a.clip_min, a.clip_max});
    case Activation::kSigmoid:
      return launch(ActSigmoid{});
    case Activation::kSilu:
      return launch(ActSilu{});
    case Activation::kHardSigmoid:
      return launch(ActHardSigmoid{a.alpha, a.beta});
    case Activation::kHardSwish:
      return launch(ActHardSwish{});
  }
  return cudaErrorInvalidValue;
}

// --- Channel epilogue ------------------------------------------------------
// The kernels below read and write elements of T (float32, float16 or
// bfloat16; scale and shift too) and compute in float, rounding each output
// once to T. float32 keeps its 16-byte packed kernel.

using op_kernels_internal::VisitDeviceType;

// The element as float (the 16-bit floats exactly).
template <typename T>
__device__ __forceinline__ float Load(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

// Note [Sigmoid rounded to 16 bits]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Sigmoid's exact-in-float form (expf and an IEEE division, Sigmoid above)
// is some 25 instructions, four times an output's in a 3x3 depthwise
// convolution: EfficientNet-B0's depthwise kernels at batch 64 in float16
// issued instructions on 80% of cycles at 13-27% of the memory bandwidth
// (ncu, call 97 in bench/results/2026-12-01_d7c19d7_channels_last_pools_h200).
// An output rounded to float16 or bfloat16 (relative error 2^-11 or 2^-8)
// does not see the last few float ulps, so there sigmoid is the hardware's
// exponential and reciprocal, 1 / (1 + __expf(-v)): __expf is within
// 2 + 1.2 |v| ulps, and past |v| = 17 the result is 0 or 1 in float16
// either way. The special values keep their meaning: NaN gives NaN, +inf 1,
// -inf 0 (and SiLU's -inf * 0 NaN, as ActSilu). Float32 outputs keep the
// exact form.
template <typename T, typename Act>
__device__ __forceinline__ float Activate(const Act& act, float v) {
  constexpr bool kSilu = std::is_same_v<Act, ActSilu>;
  if constexpr (!std::is_same_v<T, float> && (kSilu || std::is_same_v<Act, ActSigmoid>)) {
    const float sigmoid = __frcp_rn(1.0f + __expf(-v));
    return kSilu ? v * sigmoid : sigmoid;
  } else {
    return act(v);
  }
}

// y = act(x * s + t [+ r]) for an output of type T.
template <typename T, typename Act>
__device__ __forceinline__ float Epilogue(const Act& act, float x, float s, float t) {
  return Activate<T>(act, fmaf(x, s, t));
}
template <typename T, typename Act>
__device__ __forceinline__ float Epilogue(const Act& act, float x, float s, float t, float r) {
  return Activate<T>(act, fmaf(x, s, t) + r);
}

// One 4-float pack per thread. spatial % 4 == 0, so a pack never straddles
// two channels; `plane_packs` divides by spatial / 4.
template <typename Act, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    EpilogueVec4Kernel(uint32_t packs, FastDivider plane_packs, FastDivider channels,
                       const float4* x, const float* scale, const float* shift,
                       const float4* residual, float4* y, Act act) {
  const uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= packs) return;
  const uint32_t plane = plane_packs.Div(p);
  const uint32_t c = plane - channels.Div(plane) * channels.divisor;
  const float s = scale != nullptr ? scale[c] : 1.0f;
  const float t = shift != nullptr ? shift[c] : 0.0f;
  float4 v = x[p];
  if constexpr (kResidual) {
    const float4 r = residual[p];
    v.x = Epilogue<float>(act, v.x, s, t, r.x);
    v.y = Epilogue<float>(act, v.y, s, t, r.y);
    v.z = Epilogue<float>(act, v.z, s, t, r.z);
    v.w = Epilogue<float>(act, v.w, s, t, r.w);
  } else {
    v.x = Epilogue<float>(act, v.x, s, t);
    v.y = Epilogue<float>(act, v.y, s, t);
    v.z = Epilogue<float>(act, v.z, s, t);
    v.w = Epilogue<float>(act, v.w, s, t);
  }
  y[p] = v;
}

template <typename T, typename Act, bool kResidual>
__global__ void __launch_bounds__(kThreads)
    EpilogueKernel(uint32_t count, FastDivider spatial, FastDivider channels, const T* x,
                   const T* scale, const T* shift, const T* residual, T* y, Act act) {
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= count) return;
  const uint32_t plane = spatial.Div(i);
  const uint32_t c = plane - channels.Div(plane) * channels.divisor;
  const float s = scale != nullptr ? Load(scale, c) : 1.0f;
  const float t = shift != nullptr ? Load(shift, c) : 0.0f;
  if constexpr (kResidual) {
    y[i] = static_cast<T>(Epilogue<T>(act, Load(x, i), s, t, Load(residual, i)));
  } else {
    y[i] = static_cast<T>(Epilogue<T>(act, Load(x, i), s, t));
  }
}

// Eight 16-bit elements per thread, through 16-byte loads and stores: the
// scalar kernel's 2-byte accesses ran ResNet-50's float16 epilogues at about
// half the memory bandwidth at batch 64 (H200, call 90: 2079 of the replay's
// 4324 us under ncu). With this kernel and the pool's division-free taps,
// ResNet-50 in float16 replays in 3045-3050 us at batch 64 against 4227-4235
// before, and 677-700 against 802-817 at batch 8 (same run, call 91,
// bench/results/2026-12-01_ef12d95_ensemble_device_tensors_depthwise_h200).
// The eight share a
// channel when a plane's elements come in eights (kChannelsInner false:
// `packs_per_row` divides by spatial / 8), or are eight consecutive
// channels of one position when channels are innermost (NHWC, spatial 1;
// kChannelsInner: `packs_per_row` divides by channels / 8).
template <typename T, typename Act, bool kResidual, bool kChannelsInner>
__global__ void __launch_bounds__(kThreads)
    EpilogueVec8Kernel(uint32_t packs, FastDivider packs_per_row, FastDivider channels,
                       const uint4* x, const T* scale, const T* shift, const uint4* residual,
                       uint4* y, Act act) {
  const uint32_t p = blockIdx.x * kThreads + threadIdx.x;
  if (p >= packs) return;
  const uint32_t row = packs_per_row.Div(p);
  uint32_t c0;
  if constexpr (kChannelsInner) {
    c0 = (p - row * packs_per_row.divisor) * 8;
  } else {
    c0 = row - channels.Div(row) * channels.divisor;
  }
  const uint4 xv = x[p];
  const T* xs = reinterpret_cast<const T*>(&xv);
  uint4 rv{};
  if constexpr (kResidual) rv = residual[p];
  const T* rs = reinterpret_cast<const T*>(&rv);
  uint4 out;
  T* os = reinterpret_cast<T*>(&out);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const uint32_t c = kChannelsInner ? c0 + j : c0;
    const float sc = scale != nullptr ? Load(scale, c) : 1.0f;
    const float t = shift != nullptr ? Load(shift, c) : 0.0f;
    if constexpr (kResidual) {
      os[j] = static_cast<T>(
          Epilogue<T>(act, static_cast<float>(xs[j]), sc, t, static_cast<float>(rs[j])));
    } else {
      os[j] = static_cast<T>(Epilogue<T>(act, static_cast<float>(xs[j]), sc, t));
    }
  }
  y[p] = out;
}

// The epilogue of y in one layout with the residual in the other (Note
// [Channels-last convolutions] in runtime/fusion.h): each y element's
// (n, c, s) from its index, the residual's index from them. One residual
// read per output element, as the same-layout kernels make, strided.
template <typename T, typename Act, ConvLayout kYLayout>
__global__ void __launch_bounds__(kThreads)
    CrossLayoutEpilogueKernel(int64_t count, int64_t spatial, int64_t channels, const T* x,
                              const T* scale, const T* shift, const T* residual, T* y, Act act) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += step) {
    int64_t c;
    int64_t r;
    if constexpr (kYLayout == ConvLayout::kNHWC) {  // y [n, s, c], residual [n, c, s]
      c = i % channels;
      const int64_t s = (i / channels) % spatial;
      const int64_t n = i / (channels * spatial);
      r = (n * channels + c) * spatial + s;
    } else {  // y [n, c, s], residual [n, s, c]
      const int64_t s = i % spatial;
      c = (i / spatial) % channels;
      const int64_t n = i / (channels * spatial);
      r = (n * spatial + s) * channels + c;
    }
    const float sc = scale != nullptr ? Load(scale, c) : 1.0f;
    const float t = shift != nullptr ? Load(shift, c) : 0.0f;
    y[i] = static_cast<T>(Epilogue<T>(act, Load(x, i), sc, t, Load(residual, r)));
  }
}

// Note [Index width]: tensors of 2^31 elements or more.
template <typename T, typename Act>
__global__ void __launch_bounds__(kThreads)
    EpilogueKernel64(int64_t count, int64_t spatial, int64_t channels, const T* x,
                     const T* scale, const T* shift, const T* residual, T* y, Act act) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += step) {
    const int64_t c = (i / spatial) % channels;
    const float s = scale != nullptr ? Load(scale, c) : 1.0f;
    const float t = shift != nullptr ? Load(shift, c) : 0.0f;
    y[i] =
        static_cast<T>(residual != nullptr ? Epilogue<T>(act, Load(x, i), s, t, Load(residual, i))
                                           : Epilogue<T>(act, Load(x, i), s, t));
  }
}

// --- Depthwise convolution -------------------------------------------------

// Note [Depthwise convolutions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A depthwise Conv (one input channel per group, one output channel per
// input channel) reads each input element k x k times and does k x k
// multiply-adds per output: it is bound by memory, not arithmetic, and
// cuDNN's engines for it (a grouped direct kernel, NCHW) took 315 of the
// 1424 us of EfficientNet-B0's float16 replay at batch 8 under ncu, against
// 111 us for torch.compile's depthwise kernels (NHWC). Here each
// thread computes kDepthwiseRows outputs of one column of one plane, top to
// bottom: the input rows they share are read once each (k loads into
// registers, from L1 when the neighbouring columns' threads read them too),
// and the weights of the channel are kept in registers. The bias, the
// residual and the activation of the Conv's fused epilogue are applied
// before the one rounding to T, so the epilogue costs no pass of its own.
// Products and sums are float, in the host reference's order of taps; a
// padding read is a 0 that is still multiplied (Note in ConvReference).
// Measured against cuDNN in one run on an H200 (runtime_bench
// --own-depthwise-convs, bench/results/2026-12-01_ef12d95_ensemble_device_
// tensors_depthwise_h200): EfficientNet-B0 float16 at batch 1 / 8, 484-512 /
// 947-954 us against 520-557 / 1107-1122; MobileNetV3-L 353-365 / 535-539
// against 378-395 / 647-648; float32 faster too (EfficientNet-B0 1491-1499
// against 1655-1670 us at batch 8). At batch 64 it issues instructions on
// about 80% of cycles at 13-27% of the memory bandwidth (ncu, call 97 in
// bench/results/2026-12-01_d7c19d7_channels_last_pools_h200): instructions,
// not bytes, bound it. Two variants measured slower there: staging each
// block's input in shared memory first (EfficientNet-B0 3621-3640 against
// 3356 us at batch 64, call 96) and eight rows a thread (505-527 against
// 481-484 us at batch 1, call 99). Sigmoid's cost went (Note [Sigmoid
// rounded to 16 bits]).
constexpr int kDepthwiseRows = 4;

struct DepthwiseGeometry {
  int32_t in_h = 0;
  int32_t in_w = 0;
  uint32_t out_h = 0;
  uint32_t out_w = 0;
  int32_t pad_h = 0;
  int32_t pad_w = 0;
  uint32_t count = 0;    // threads: planes x strips x out_w
  FastDivider columns;   // out_w: a thread's (plane, strip) and column
  FastDivider strips;    // strips of kDepthwiseRows output rows per plane
  FastDivider channels;  // a plane's channel
};

// residual and y may be the same buffer (each element is read, then written,
// by one thread), so neither is __restrict__.
template <typename T, int K, int S, typename Act>
__global__ void __launch_bounds__(kThreads)
    DepthwiseConvKernel(DepthwiseGeometry g, const T* __restrict__ x, const T* __restrict__ w,
                        const T* __restrict__ bias, const T* residual, T* y, Act act) {
  constexpr int kRows = kDepthwiseRows;
  constexpr int kInRows = (kRows - 1) * S + K;
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= g.count) return;
  const uint32_t row = g.columns.Div(i);
  const uint32_t ox = i - row * g.columns.divisor;
  const uint32_t plane = g.strips.Div(row);
  const uint32_t strip = row - plane * g.strips.divisor;
  const uint32_t c = plane - g.channels.Div(plane) * g.channels.divisor;
  float taps[K * K];
#pragma unroll
  for (int t = 0; t < K * K; ++t) taps[t] = static_cast<float>(__ldg(w + c * (K * K) + t));
  float acc[kRows];
#pragma unroll
  for (int v = 0; v < kRows; ++v) acc[v] = 0.0f;
  const T* __restrict__ x_plane = x + static_cast<int64_t>(plane) * g.in_h * g.in_w;
  const int oy0 = static_cast<int>(strip) * kRows;
  const int iy0 = oy0 * S - g.pad_h;
  const int ix0 = static_cast<int>(ox) * S - g.pad_w;
#pragma unroll
  for (int r = 0; r < kInRows; ++r) {
    const int iy = iy0 + r;
    const bool row_inside = iy >= 0 && iy < g.in_h;
    float in[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int ix = ix0 + k;
      in[k] = row_inside && ix >= 0 && ix < g.in_w
                  ? static_cast<float>(__ldg(x_plane + iy * g.in_w + ix))
                  : 0.0f;
    }
#pragma unroll
    for (int v = 0; v < kRows; ++v) {
      const int ky = r - v * S;  // known at compile time
      if (ky < 0 || ky >= K) continue;
#pragma unroll
      for (int k = 0; k < K; ++k) acc[v] = fmaf(in[k], taps[ky * K + k], acc[v]);
    }
  }
  const float b = bias != nullptr ? static_cast<float>(bias[c]) : 0.0f;
#pragma unroll
  for (int v = 0; v < kRows; ++v) {
    const uint32_t oy = static_cast<uint32_t>(oy0 + v);
    if (oy >= g.out_h) break;
    const int64_t o = (static_cast<int64_t>(plane) * g.out_h + oy) * g.out_w + ox;
    float value = acc[v] + b;
    if (residual != nullptr) value += static_cast<float>(residual[o]);
    y[o] = static_cast<T>(Activate<T>(act, value));
  }
}

// launch(std::integral_constant<int, K>, std::integral_constant<int, S>) for
// the kernel sizes and strides DepthwiseConvRuns takes.
template <typename Launch>
cudaError_t WithDepthwiseShape(int64_t kernel, int64_t stride, Launch&& launch) {
  using std::integral_constant;
  const auto with_stride = [&](auto k) -> cudaError_t {
    if (stride == 1) return launch(k, integral_constant<int, 1>{});
    if (stride == 2) return launch(k, integral_constant<int, 2>{});
    return cudaErrorInvalidValue;
  };
  switch (kernel) {
    case 3:
      return with_stride(integral_constant<int, 3>{});
    case 5:
      return with_stride(integral_constant<int, 5>{});
    case 7:
      return with_stride(integral_constant<int, 7>{});
  }
  return cudaErrorInvalidValue;
}

// --- Windowed pooling ------------------------------------------------------

// Half-open range [begin, end) of the window taps k < kernel whose position
// start + k * dilation lies in [lo, hi); the host reference's TapsWithin.
struct TapRange {
  int64_t begin = 0;
  int64_t end = 0;
  __device__ int64_t count() const { return end > begin ? end - begin : 0; }
};

// Without dilation (every pool of the CNNs measured) no division: a 64-bit
// one is a long instruction sequence, and four to eight per output made
// ResNet-50's 3x3 max pool take 200 us at batch 64 in float16 on the H200,
// where reading its input once takes about 30 (bench/results/
// 2026-12-01_ef12d95_ensemble_device_tensors_depthwise_h200, call 90).
__device__ __forceinline__ int64_t FirstTapAtOrAfter(int64_t start, int64_t dilation,
                                                     int64_t kernel, int64_t bound) {
  if (start >= bound) return 0;
  const int64_t k = dilation == 1 ? bound - start : (bound - start + dilation - 1) / dilation;
  return k < kernel ? k : kernel;
}

__device__ __forceinline__ TapRange TapsWithin(int64_t start, int64_t dilation, int64_t kernel,
                                               int64_t lo, int64_t hi) {
  TapRange range;
  if (hi <= lo || kernel <= 0) return range;
  range.begin = FirstTapAtOrAfter(start, dilation, kernel, lo);
  range.end = FirstTapAtOrAfter(start, dilation, kernel, hi);
  return range;
}

// kVec consecutive elements of one 16-byte (or narrower) load.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

// One output position of kVec channels, whose window taps lie at `x0` plus
// a row's and a column's stride per tap: NCHW, a plane (rows in_w apart,
// columns 1) and one channel; NHWC, a batch item's first channel of the kVec
// (rows in_w * channels apart, columns channels). Max: NaN wins and stays
// (no comparison with it is true); -inf when no tap is inside the input.
// Average: see PoolParams.
template <PoolKind kKind, typename T, int kVec>
__device__ __forceinline__ void PoolAt(const PoolParams& p, const T* __restrict__ x0,
                                       int64_t row_stride, int64_t col_stride, int64_t oh,
                                       int64_t ow, float (&out)[kVec]) {
  const int64_t h0 = oh * p.stride_h - p.pad_top;
  const int64_t w0 = ow * p.stride_w - p.pad_left;
  const TapRange rows = TapsWithin(h0, p.dilation_h, p.kernel_h, 0, p.in_h);
  const TapRange cols = TapsWithin(w0, p.dilation_w, p.kernel_w, 0, p.in_w);
#pragma unroll
  for (int j = 0; j < kVec; ++j) out[j] = kKind == PoolKind::kMax ? -INFINITY : 0.0f;
  for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
    const T* __restrict__ x_row = x0 + (h0 + kh * p.dilation_h) * row_stride + w0 * col_stride;
    for (int64_t kw = cols.begin; kw < cols.end; ++kw) {
      const Pack<T, kVec> v =
          *reinterpret_cast<const Pack<T, kVec>*>(x_row + kw * p.dilation_w * col_stride);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float e = static_cast<float>(v.v[j]);
        if constexpr (kKind == PoolKind::kMax) {
          if (e > out[j] || e != e) out[j] = e;
        } else {
          out[j] += e;
        }
      }
    }
  }
  if constexpr (kKind == PoolKind::kAverage) {
    int64_t divisor = rows.count() * cols.count();
    if (p.count_include_pad) {
      // Padded positions count, but not those past the padded end that
      // ceil_mode's last window can reach.
      divisor =
          TapsWithin(h0, p.dilation_h, p.kernel_h, -p.pad_top, p.in_h + p.pad_bottom).count() *
          TapsWithin(w0, p.dilation_w, p.kernel_w, -p.pad_left, p.in_w + p.pad_right).count();
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      out[j] = rows.count() == 0 || cols.count() == 0 ? 0.0f : out[j] / static_cast<float>(divisor);
    }
  }
}

// Output element (n, c, oh, ow) of an NCHW pool, from its plane n * C + c.
template <PoolKind kKind, typename T>
__device__ __forceinline__ T PoolNchwAt(const PoolParams& p, const T* __restrict__ x, int64_t plane,
                                        int64_t oh, int64_t ow) {
  float out[1];
  PoolAt<kKind, T, 1>(p, x + plane * p.in_h * p.in_w, p.in_w, 1, oh, ow, out);
  return static_cast<T>(out[0]);
}

template <PoolKind kKind, typename T>
__global__ void __launch_bounds__(kThreads)
    PoolKernel(PoolParams p, uint32_t count, FastDivider out_w, FastDivider out_h,
               const T* __restrict__ x, T* __restrict__ y) {
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= count) return;
  const uint32_t row = out_w.Div(i);
  const uint32_t ow = i - row * out_w.divisor;
  const uint32_t plane = out_h.Div(row);
  const uint32_t oh = row - plane * out_h.divisor;
  y[i] = PoolNchwAt<kKind>(p, x, plane, oh, ow);
}

template <PoolKind kKind, typename T>
__global__ void __launch_bounds__(kThreads)
    PoolKernel64(PoolParams p, int64_t count, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += step) {
    const int64_t row = i / p.out_w;
    const int64_t plane = row / p.out_h;
    y[i] = PoolNchwAt<kKind>(p, x, plane, row - plane * p.out_h, i - row * p.out_w);
  }
}

// Channels-last pooling (Note [Channels-last convolutions] in
// runtime/fusion.h): one thread per output position and kVec consecutive
// channels, so a warp's loads of one tap are consecutive bytes (16 a thread
// for 16-bit types when the channels come in eights). Pack `i` of y holds
// position (n, oh, ow) = i / groups, channels (i % groups) * kVec on.
template <PoolKind kKind, typename T, int kVec>
__device__ __forceinline__ void PoolNhwcPack(const PoolParams& p, const T* __restrict__ x,
                                             T* __restrict__ y, int64_t i, int64_t n, int64_t oh,
                                             int64_t ow, int64_t c0) {
  float out[kVec];
  PoolAt<kKind, T, kVec>(p, x + n * p.in_h * p.in_w * p.channels + c0, p.in_w * p.channels,
                         p.channels, oh, ow, out);
  Pack<T, kVec> packed;
#pragma unroll
  for (int j = 0; j < kVec; ++j) packed.v[j] = static_cast<T>(out[j]);
  reinterpret_cast<Pack<T, kVec>*>(y)[i] = packed;
}

template <PoolKind kKind, typename T, int kVec>
__global__ void __launch_bounds__(kThreads)
    PoolNhwcKernel(PoolParams p, uint32_t packs, FastDivider groups, FastDivider out_w,
                   FastDivider out_h, const T* __restrict__ x, T* __restrict__ y) {
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i >= packs) return;
  const uint32_t position = groups.Div(i);
  const uint32_t row = out_w.Div(position);
  const uint32_t n = out_h.Div(row);
  PoolNhwcPack<kKind, T, kVec>(p, x, y, i, n, row - n * out_h.divisor,
                               position - row * out_w.divisor,
                               (i - position * groups.divisor) * kVec);
}

template <PoolKind kKind, typename T, int kVec>
__global__ void __launch_bounds__(kThreads)
    PoolNhwcKernel64(PoolParams p, int64_t packs, int64_t groups, const T* __restrict__ x,
                     T* __restrict__ y) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < packs;
       i += step) {
    const int64_t position = i / groups;
    const int64_t row = position / p.out_w;
    const int64_t n = row / p.out_h;
    PoolNhwcPack<kKind, T, kVec>(p, x, y, i, n, row - n * p.out_h, position - row * p.out_w,
                                 (i - position * groups) * kVec);
  }
}

template <PoolKind kKind, typename T, int kVec>
cudaError_t LaunchPoolNhwcOf(const PoolParams& p, int64_t count, const T* x, T* y,
                             cudaStream_t stream) {
  const int64_t packs = count / kVec;
  const int64_t groups = p.channels / kVec;
  if (packs <= kIndex32Limit) {
    PoolNhwcKernel<kKind, T, kVec><<<BlocksFor(packs), kThreads, 0, stream>>>(
        p, static_cast<uint32_t>(packs), FastDivider(static_cast<uint32_t>(groups)),
        FastDivider(static_cast<uint32_t>(p.out_w)), FastDivider(static_cast<uint32_t>(p.out_h)), x,
        y);
  } else {
    PoolNhwcKernel64<kKind, T, kVec>
        <<<StridedBlocks(packs), kThreads, 0, stream>>>(p, packs, groups, x, y);
  }
  return cudaGetLastError();
}

template <PoolKind kKind, typename T>
cudaError_t LaunchPoolOf(const PoolParams& p, int64_t count, const T* x, T* y,
                         cudaStream_t stream) {
  if (p.layout == ConvLayout::kNHWC) {
    constexpr int kVec = 16 / sizeof(T);
    if (p.channels % kVec == 0 && IsAligned(x, 16) && IsAligned(y, 16)) {
      return LaunchPoolNhwcOf<kKind, T, kVec>(p, count, x, y, stream);
    }
    return LaunchPoolNhwcOf<kKind, T, 1>(p, count, x, y, stream);
  }
  if (count <= kIndex32Limit) {
    PoolKernel<kKind, T><<<BlocksFor(count), kThreads, 0, stream>>>(
        p, static_cast<uint32_t>(count), FastDivider(static_cast<uint32_t>(p.out_w)),
        FastDivider(static_cast<uint32_t>(p.out_h)), x, y);
  } else {
    PoolKernel64<kKind, T><<<StridedBlocks(count), kThreads, 0, stream>>>(p, count, x, y);
  }
  return cudaGetLastError();
}

// --- Global pooling --------------------------------------------------------

// NaN wins: once `a` is NaN no comparison is true and it stays.
__device__ __forceinline__ float MaxPropagatingNan(float a, float b) {
  return b > a || b != b ? b : a;
}

template <PoolKind kKind>
__device__ __forceinline__ float Combine(float a, float b) {
  if constexpr (kKind == PoolKind::kMax) {
    return MaxPropagatingNan(a, b);
  } else {
    return a + b;
  }
}

template <PoolKind kKind>
__device__ __forceinline__ float WarpReduce(float v) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
    v = Combine<kKind>(v, __shfl_xor_sync(kFullMask, v, offset));
  }
  return v;
}

template <PoolKind kKind>
__device__ __forceinline__ float Identity() {
  return kKind == PoolKind::kMax ? -INFINITY : 0.0f;
}

template <PoolKind kKind>
__device__ __forceinline__ float Finish(float acc, int64_t spatial) {
  if constexpr (kKind == PoolKind::kMax) {
    return acc;
  } else {
    return acc / static_cast<float>(spatial);  // spatial 0: 0 / 0 = NaN
  }
}

// One warp per row; the row index is uniform across the warp, so the whole
// warp takes part in every shuffle.
template <PoolKind kKind, typename T>
__global__ void __launch_bounds__(kThreads)
    GlobalPoolWarpKernel(int64_t rows, int64_t spatial, const T* __restrict__ x,
                         T* __restrict__ y) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
       row < rows; row += step) {
    const T* __restrict__ x_row = x + row * spatial;
    float acc = Identity<kKind>();
    for (int64_t s = lane; s < spatial; s += kWarpSize) {
      acc = Combine<kKind>(acc, static_cast<float>(__ldg(x_row + s)));
    }
    acc = WarpReduce<kKind>(acc);
    if (lane == 0) y[row] = static_cast<T>(Finish<kKind>(acc, spatial));
  }
}

// One block per row, for long rows.
template <PoolKind kKind, typename T>
__global__ void __launch_bounds__(kThreads)
    GlobalPoolBlockKernel(int64_t rows, int64_t spatial, const T* __restrict__ x,
                          T* __restrict__ y) {
  __shared__ float partial[kWarpsPerBlock];
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* __restrict__ x_row = x + row * spatial;
    float acc = Identity<kKind>();
    for (int64_t s = threadIdx.x; s < spatial; s += kThreads) {
      acc = Combine<kKind>(acc, static_cast<float>(__ldg(x_row + s)));
    }
    acc = WarpReduce<kKind>(acc);
    if (lane == 0) partial[warp] = acc;
    __syncthreads();
    if (warp == 0) {
      acc = lane < kWarpsPerBlock ? partial[lane] : Identity<kKind>();
      acc = WarpReduce<kKind>(acc);
      if (lane == 0) y[row] = static_cast<T>(Finish<kKind>(acc, spatial));
    }
    __syncthreads();  // `partial` is rewritten for the next row
  }
}

// Channels-last global pooling: one thread per batch item and kVec
// consecutive channels, summing (or taking the max of) its positions in
// order, so a warp reads consecutive bytes at each position. Pack `i` of y
// is row n * channels + c for n = i / groups, c = (i % groups) * kVec on.
template <PoolKind kKind, typename T, int kVec>
__global__ void __launch_bounds__(kThreads)
    GlobalPoolNhwcKernel(int64_t packs, int64_t groups, int64_t spatial, const T* __restrict__ x,
                         T* __restrict__ y) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < packs;
       i += step) {
    const int64_t n = i / groups;
    const auto* column =
        reinterpret_cast<const Pack<T, kVec>*>(x) + n * spatial * groups + (i - n * groups);
    float acc[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) acc[j] = Identity<kKind>();
    for (int64_t s = 0; s < spatial; ++s) {
      const Pack<T, kVec> v = column[s * groups];
#pragma unroll
      for (int j = 0; j < kVec; ++j) acc[j] = Combine<kKind>(acc[j], static_cast<float>(v.v[j]));
    }
    Pack<T, kVec> packed;
#pragma unroll
    for (int j = 0; j < kVec; ++j) packed.v[j] = static_cast<T>(Finish<kKind>(acc[j], spatial));
    reinterpret_cast<Pack<T, kVec>*>(y)[i] = packed;
  }
}

template <PoolKind kKind, typename T, int kVec>
cudaError_t LaunchGlobalPoolNhwcOf(const GlobalPoolParams& p, const T* x, T* y,
                                   cudaStream_t stream) {
  const int64_t packs = p.rows / kVec;
  GlobalPoolNhwcKernel<kKind, T, kVec>
      <<<StridedBlocks(packs), kThreads, 0, stream>>>(packs, p.channels / kVec, p.spatial, x, y);
  return cudaGetLastError();
}

template <PoolKind kKind, typename T>
cudaError_t LaunchGlobalPoolOf(const GlobalPoolParams& p, const T* x, T* y,
                               cudaStream_t stream) {
  if (p.layout == ConvLayout::kNHWC) {
    constexpr int kVec = 16 / sizeof(T);
    if (p.channels % kVec == 0 && IsAligned(x, 16) && IsAligned(y, 16)) {
      return LaunchGlobalPoolNhwcOf<kKind, T, kVec>(p, x, y, stream);
    }
    return LaunchGlobalPoolNhwcOf<kKind, T, 1>(p, x, y, stream);
  }
  if (p.spatial >= kBlockRowSpatial) {
    const auto blocks = static_cast<unsigned>(std::min(p.rows, kMaxStridedBlocks));
    GlobalPoolBlockKernel<kKind, T><<<blocks, kThreads, 0, stream>>>(p.rows, p.spatial, x, y);
  } else {
    const int64_t blocks = (p.rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
    GlobalPoolWarpKernel<kKind, T>
        <<<static_cast<unsigned>(std::min(blocks, kMaxStridedBlocks)), kThreads, 0, stream>>>(
            p.rows, p.spatial, x, y);
  }
  return cudaGetLastError();
}

// --- Pad -------------------------------------------------------------------

// PadParams with the input strides and, for 32-bit indexing, the dividers of
// the output dims. A scalar is a rank-1 tensor of one element.
struct PadGeometry {
  PadMode mode = PadMode::kConstant;
  int32_t rank = 1;
  int64_t in_dims[kMaxPadRank] = {};
  int64_t out_dims[kMaxPadRank] = {};
  int64_t pads_begin[kMaxPadRank] = {};
  int64_t in_strides[kMaxPadRank] = {};
  FastDivider out_div[kMaxPadRank] = {};
};

// Input index that output index `o` of one dim reads, or -1 where the
// constant supplies the value; the host reference's PadSourceIndex.
__device__ __forceinline__ int64_t PadSourceIndex(PadMode mode, int64_t o, int64_t pad_begin,
                                                  int64_t in_dim) {
  const int64_t i = o - pad_begin;
  if (i >= 0 && i < in_dim) return i;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return i < 0 ? 0 : in_dim - 1;
    case PadMode::kReflect: {
      if (in_dim == 1) return 0;
      // numpy 'reflect' repeats with period 2 * (n - 1) however far the pad
      // reaches.
      const int64_t period = 2 * (in_dim - 1);
      int64_t m = i % period;
      if (m < 0) m += period;
      return m < in_dim ? m : period - m;
    }
  }
  return -1;
}

template <bool kIndex32, typename T>
__device__ __forceinline__ T PadOne(const PadGeometry& g, int64_t i, T fill,
                                    const T* __restrict__ x) {
  int64_t in_offset = 0;
  bool constant = false;
#pragma unroll
  for (int d = kMaxPadRank - 1; d >= 0; --d) {
    if (d >= g.rank) continue;
    int64_t o = i;
    if (d > 0) {
      int64_t quotient;
      if constexpr (kIndex32) {
        quotient = g.out_div[d].Div(static_cast<uint32_t>(i));
      } else {
        quotient = i / g.out_dims[d];
      }
      o = i - quotient * g.out_dims[d];
      i = quotient;
    }
    const int64_t source = PadSourceIndex(g.mode, o, g.pads_begin[d], g.in_dims[d]);
    if (source < 0) {
      constant = true;
    } else {
      in_offset += source * g.in_strides[d];
    }
  }
  return constant ? fill : x[in_offset];
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    PadKernel(PadGeometry g, uint32_t count, T fill, const T* __restrict__ x, T* __restrict__ y) {
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i < count) y[i] = PadOne<true>(g, i, fill, x);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    PadKernel64(PadGeometry g, int64_t count, T fill, const T* __restrict__ x, T* __restrict__ y) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < count;
       i += step) {
    y[i] = PadOne<false>(g, i, fill, x);
  }
}

template <typename T>
cudaError_t LaunchPadOf(const PadGeometry& g, int64_t count, T fill, const void* x, void* y,
                        cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* out = static_cast<T*>(y);
  if (count <= kIndex32Limit) {
    PadKernel<T>
        <<<BlocksFor(count), kThreads, 0, stream>>>(g, static_cast<uint32_t>(count), fill, in, out);
  } else {
    PadKernel64<T><<<StridedBlocks(count), kThreads, 0, stream>>>(g, count, fill, in, out);
  }
  return cudaGetLastError();
}

// fn(T{}) for the element types of the pooling and epilogue kernels:
// float32 and the two 16-bit floats.
template <typename Fn>
cudaError_t VisitNnType(DType dtype, Fn&& fn) {
  return VisitDeviceType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Type;
    if constexpr (std::is_same_v<T, float> || op_kernels_internal::kIsHalfType<T>) {
      return fn(T{});
    } else {
      return cudaErrorInvalidValue;
    }
  });
}

// The epilogue of `count` elements of T in NCHW (or channels last as the
// NCHW epilogue of one-element planes: its channel is the innermost index).
template <typename T>
cudaError_t LaunchChannelEpilogueOf(const ChannelEpilogueParams& given, int64_t count, const T* x,
                                    const T* scale, const T* shift, const T* residual, T* y,
                                    cudaStream_t stream) {
  const bool has_residual = residual != nullptr;
  if (has_residual && given.residual_layout != given.layout) {
    return WithActivation(given.activation, [&](auto act) -> cudaError_t {
      using Act = decltype(act);
      if (given.layout == ConvLayout::kNHWC) {
        CrossLayoutEpilogueKernel<T, Act, ConvLayout::kNHWC>
            <<<StridedBlocks(count), kThreads, 0, stream>>>(count, given.spatial, given.channels, x,
                                                            scale, shift, residual, y, act);
      } else {
        CrossLayoutEpilogueKernel<T, Act, ConvLayout::kNCHW>
            <<<StridedBlocks(count), kThreads, 0, stream>>>(count, given.spatial, given.channels, x,
                                                            scale, shift, residual, y, act);
      }
      return cudaGetLastError();
    });
  }
  ChannelEpilogueParams p = given;
  if (p.layout == ConvLayout::kNHWC) {
    p.batch *= p.spatial;
    p.spatial = 1;
  }
  const bool aligned =
      IsAligned(x, 16) && IsAligned(y, 16) && (!has_residual || IsAligned(residual, 16));
  bool vec4 = false;
  bool vec8 = false;
  bool channels_inner = false;
  if constexpr (std::is_same_v<T, float>) {
    vec4 = p.spatial % 4 == 0 && aligned;
  } else {
    channels_inner = p.spatial == 1 && p.channels % 8 == 0;
    vec8 = aligned && (p.spatial % 8 == 0 || channels_inner);
  }
  return WithActivation(p.activation, [&](auto act) -> cudaError_t {
    using Act = decltype(act);
    if (count > kIndex32Limit) {
      EpilogueKernel64<T, Act><<<StridedBlocks(count), kThreads, 0, stream>>>(
          count, p.spatial, p.channels, x, scale, shift, residual, y, act);
    } else if (vec4) {
      if constexpr (std::is_same_v<T, float>) {
        const auto packs = static_cast<uint32_t>(count / 4);
        const FastDivider plane_packs(static_cast<uint32_t>(p.spatial / 4));
        const FastDivider channels(static_cast<uint32_t>(p.channels));
        const auto* x4 = reinterpret_cast<const float4*>(x);
        const auto* r4 = reinterpret_cast<const float4*>(residual);
        auto* y4 = reinterpret_cast<float4*>(y);
        if (has_residual) {
          EpilogueVec4Kernel<Act, true><<<BlocksFor(packs), kThreads, 0, stream>>>(
              packs, plane_packs, channels, x4, scale, shift, r4, y4, act);
        } else {
          EpilogueVec4Kernel<Act, false><<<BlocksFor(packs), kThreads, 0, stream>>>(
              packs, plane_packs, channels, x4, scale, shift, r4, y4, act);
        }
      }
    } else if (vec8) {
      const auto packs = static_cast<uint32_t>(count / 8);
      const FastDivider packs_per_row(
          static_cast<uint32_t>(channels_inner ? p.channels / 8 : p.spatial / 8));
      const FastDivider channels(static_cast<uint32_t>(p.channels));
      const auto* x8 = reinterpret_cast<const uint4*>(x);
      const auto* r8 = reinterpret_cast<const uint4*>(residual);
      auto* y8 = reinterpret_cast<uint4*>(y);
      const auto launch = [&](auto residual_tag, auto inner_tag) {
        EpilogueVec8Kernel<T, Act, decltype(residual_tag)::value, decltype(inner_tag)::value>
            <<<BlocksFor(packs), kThreads, 0, stream>>>(packs, packs_per_row, channels, x8, scale,
                                                        shift, r8, y8, act);
      };
      using std::false_type;
      using std::true_type;
      if (has_residual && channels_inner) launch(true_type{}, true_type{});
      if (has_residual && !channels_inner) launch(true_type{}, false_type{});
      if (!has_residual && channels_inner) launch(false_type{}, true_type{});
      if (!has_residual && !channels_inner) launch(false_type{}, false_type{});
    } else {
      const auto n = static_cast<uint32_t>(count);
      const FastDivider spatial(static_cast<uint32_t>(p.spatial));
      const FastDivider channels(static_cast<uint32_t>(p.channels));
      if (has_residual) {
        EpilogueKernel<T, Act, true><<<BlocksFor(n), kThreads, 0, stream>>>(
            n, spatial, channels, x, scale, shift, residual, y, act);
      } else {
        EpilogueKernel<T, Act, false><<<BlocksFor(n), kThreads, 0, stream>>>(
            n, spatial, channels, x, scale, shift, residual, y, act);
      }
    }
    return cudaGetLastError();
  });
}

}  // namespace

cudaError_t LaunchPool(const PoolParams& p, const void* x, void* y, cudaStream_t stream) {
  if (p.batch < 0 || p.channels < 0 || p.in_h < 0 || p.in_w < 0 || p.out_h < 0 || p.out_w < 0 ||
      p.kernel_h < 1 || p.kernel_w < 1 || p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 ||
      p.dilation_w < 1) {
    return cudaErrorInvalidValue;
  }
  const int64_t count = p.batch * p.channels * p.out_h * p.out_w;
  if (count == 0) return cudaSuccess;
  return VisitNnType(p.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    const auto* in = static_cast<const T*>(x);
    auto* out = static_cast<T*>(y);
    switch (p.kind) {
      case PoolKind::kMax:
        return LaunchPoolOf<PoolKind::kMax>(p, count, in, out, stream);
      case PoolKind::kAverage:
        return LaunchPoolOf<PoolKind::kAverage>(p, count, in, out, stream);
    }
    return cudaErrorInvalidValue;
  });
}

cudaError_t LaunchGlobalPool(const GlobalPoolParams& p, const void* x, void* y,
                             cudaStream_t stream) {
  if (p.rows < 0 || p.spatial < 0 ||
      (p.layout == ConvLayout::kNHWC && (p.channels < 1 || p.rows % p.channels != 0))) {
    return cudaErrorInvalidValue;
  }
  if (p.rows == 0) return cudaSuccess;
  return VisitNnType(p.dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    const auto* in = static_cast<const T*>(x);
    auto* out = static_cast<T*>(y);
    switch (p.kind) {
      case PoolKind::kMax:
        return LaunchGlobalPoolOf<PoolKind::kMax>(p, in, out, stream);
      case PoolKind::kAverage:
        return LaunchGlobalPoolOf<PoolKind::kAverage>(p, in, out, stream);
    }
    return cudaErrorInvalidValue;
  });
}

cudaError_t LaunchChannelEpilogue(const ChannelEpilogueParams& p, const void* x,
                                  const void* scale, const void* shift, const void* residual,
                                  void* y, cudaStream_t stream) {
  if (p.batch < 0 || p.channels < 0 || p.spatial < 0) return cudaErrorInvalidValue;
  const int64_t count = p.batch * p.channels * p.spatial;
  if (count == 0) return cudaSuccess;
  return VisitNnType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return LaunchChannelEpilogueOf<T>(p, count, static_cast<const T*>(x),
                                      static_cast<const T*>(scale), static_cast<const T*>(shift),
                                      static_cast<const T*>(residual), static_cast<T*>(y), stream);
  });
}

bool DepthwiseConvRuns(const ConvParams& p) {
  const bool depthwise = p.groups == p.in_channels && p.out_channels == p.in_channels;
  const bool square = p.kernel_h == p.kernel_w && p.stride_h == p.stride_w;
  const bool sizes = (p.kernel_h == 3 || p.kernel_h == 5 || p.kernel_h == 7) &&
                     (p.stride_h == 1 || p.stride_h == 2) && p.dilation_h == 1 && p.dilation_w == 1;
  const bool layout = p.x_layout == ConvLayout::kNCHW && p.y_layout == ConvLayout::kNCHW;
  const bool dtype =
      p.dtype == DType::kFloat32 || p.dtype == DType::kFloat16 || p.dtype == DType::kBFloat16;
  // Note [Index width]: 32-bit thread indices and in-plane offsets.
  const int64_t strips = (p.out_h + kDepthwiseRows - 1) / kDepthwiseRows;
  const bool narrow = p.batch * p.out_channels * strips * p.out_w <= kIndex32Limit &&
                      p.in_h * p.in_w <= kIndex32Limit && p.pad_h >= 0 && p.pad_w >= 0 &&
                      p.pad_h <= p.kernel_h && p.pad_w <= p.kernel_w;
  return p.batch >= 0 && depthwise && square && sizes && layout && dtype && narrow;
}

cudaError_t LaunchDepthwiseConv(const ConvParams& p, const ActivationParams& activation,
                                const void* x, const void* w, const void* bias,
                                const void* residual, void* y, cudaStream_t stream) {
  if (!DepthwiseConvRuns(p)) return cudaErrorInvalidValue;
  const int64_t strips = (p.out_h + kDepthwiseRows - 1) / kDepthwiseRows;
  const int64_t count = p.batch * p.out_channels * strips * p.out_w;
  if (count == 0) return cudaSuccess;
  DepthwiseGeometry g;
  g.in_h = static_cast<int32_t>(p.in_h);
  g.in_w = static_cast<int32_t>(p.in_w);
  g.out_h = static_cast<uint32_t>(p.out_h);
  g.out_w = static_cast<uint32_t>(p.out_w);
  g.pad_h = static_cast<int32_t>(p.pad_h);
  g.pad_w = static_cast<int32_t>(p.pad_w);
  g.count = static_cast<uint32_t>(count);
  g.columns = FastDivider(static_cast<uint32_t>(p.out_w));
  g.strips = FastDivider(static_cast<uint32_t>(strips));
  g.channels = FastDivider(static_cast<uint32_t>(p.out_channels));
  return VisitNnType(p.dtype, [&](auto tag) {
    using T = decltype(tag);
    return WithActivation(activation, [&](auto act) {
      return WithDepthwiseShape(p.kernel_h, p.stride_h, [&](auto k, auto s) -> cudaError_t {
        DepthwiseConvKernel<T, decltype(k)::value, decltype(s)::value>
            <<<BlocksFor(count), kThreads, 0, stream>>>(
                g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
                static_cast<const T*>(residual), static_cast<T*>(y), act);
        return cudaGetLastError();
      });
    });
  });
}

cudaError_t LaunchPad(const PadParams& p, const void* x, void* y, int element_size,
                      uint64_t value_bits, cudaStream_t stream) {
  if (p.rank < 0 || p.rank > kMaxPadRank) return cudaErrorInvalidValue;
  if (element_size != 1 && element_size != 2 && element_size != 4 && element_size != 8) {
    return cudaErrorInvalidValue;
  }
  PadGeometry g;
  g.mode = p.mode;
  g.rank = p.rank > 0 ? p.rank : 1;
  int64_t count = 1;
  bool empty_input = false;
  for (int d = 0; d < g.rank; ++d) {
    g.in_dims[d] = p.rank > 0 ? p.in_dims[d] : 1;
    g.out_dims[d] = p.rank > 0 ? p.out_dims[d] : 1;
    g.pads_begin[d] = p.rank > 0 ? p.pads_begin[d] : 0;
    if (g.in_dims[d] < 0 || g.out_dims[d] < 0) return cudaErrorInvalidValue;
    count *= g.out_dims[d];
    empty_input = empty_input || g.in_dims[d] == 0;
  }
  if (count == 0) return cudaSuccess;
  int64_t stride = 1;
  for (int d = g.rank - 1; d >= 0; --d) {
    g.in_strides[d] = stride;
    stride *= g.in_dims[d];
    if (count <= kIndex32Limit) g.out_div[d] = FastDivider(static_cast<uint32_t>(g.out_dims[d]));
  }
  if (empty_input && g.mode != PadMode::kConstant) {
    // Nothing to reflect or repeat: zeros, as the host reference writes. A
    // constant pad reads no input either, since the empty dim maps every
    // output index to the constant.
    g.mode = PadMode::kConstant;
    value_bits = 0;
  }
  switch (element_size) {
    case 1:
      return LaunchPadOf<uint8_t>(g, count, static_cast<uint8_t>(value_bits), x, y, stream);
    case 2:
      return LaunchPadOf<uint16_t>(g, count, static_cast<uint16_t>(value_bits), x, y, stream);
    case 4:
      return LaunchPadOf<uint32_t>(g, count, static_cast<uint32_t>(value_bits), x, y, stream);
    case 8:
      return LaunchPadOf<uint64_t>(g, count, value_bits, x, y, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchActivation(const ActivationParams& params, DType dtype, const void* x, void* y,
                             int64_t count, cudaStream_t stream) {
  if (count < 0) return cudaErrorInvalidValue;
  // The epilogue of one channel with no scale, shift or residual: fmaf(x, 1,
  // 0) is x, so the activation sees its input unchanged.
  ChannelEpilogueParams p;
  p.batch = 1;
  p.channels = 1;
  p.spatial = count;
  p.activation = params;
  p.dtype = dtype;
  return LaunchChannelEpilogue(p, x, nullptr, nullptr, nullptr, y, stream);
}

}  // namespace graphserve
