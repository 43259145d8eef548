#pragma once
// Canonical parameters of the convolutional-network ops (Conv, pooling, Pad,
// per-channel affine epilogues), computed once by binding from a bound node
// and shared by the host reference kernels (runtime/host/nn_reference.h) and
// the CUDA kernels (runtime/cuda/cudnn_conv.h, runtime/cuda/nn_kernels.h), so
// both executors read one description of the op.
//
// Layout is NCHW, dense row-major (a convolution's, its epilogue's and a
// pool's may say otherwise: ConvLayout); elements are float32, float16 or bfloat16 (each
// struct's dtype), computed in float. A 1-D op (NCW) is the 2-D op with
// in_h = out_h = kernel_h = stride_h = dilation_h = 1 and zero pads in H.

#include <cstdint>

#include "common/dtype_table.h"

namespace graphserve {

// How a convolution's x or y (N, C, H, W) lies in memory, densely.
enum class ConvLayout : int32_t {
  kNCHW,  // row-major in the order named: ONNX's layout, and binding's
  kNHWC,  // channels last: what cuDNN's tensor-core engines read and write
          // without transposing (Note [Channels-last convolutions] in
          // runtime/fusion.h). Binding and the host reference never make it.
};

// y[n, oc, oh, ow] = sum over ic in oc's group, kh, kw of
//   x[n, g*icpg + ic, oh*stride_h - pad_top + kh*dilation_h,
//                     ow*stride_w - pad_left + kw*dilation_w] * w[oc, ic, kh, kw]
// (reads outside the input are 0), where icpg = in_channels / groups and
// g = oc / (out_channels / groups). Weights are [out_channels, icpg, kh, kw].
// Pads are symmetric: binding puts an explicit Pad before a Conv whose ONNX
// pads are not (cuDNN's descriptor has one pad per spatial dim).
struct ConvParams {
  int64_t batch = 1;
  int64_t in_channels = 1;
  int64_t out_channels = 1;
  int64_t groups = 1;
  int64_t in_h = 1;
  int64_t in_w = 1;
  int64_t out_h = 1;
  int64_t out_w = 1;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  int64_t pad_h = 0;  // both sides of H
  int64_t pad_w = 0;  // both sides of W
  // Element type of x, w and y on the device: float32, float16 or bfloat16.
  // Products and sums are float32 whatever it is (cuDNN's compute type
  // FLOAT); y is rounded to it once. The host reference reads and writes
  // float, of values the type holds.
  DType dtype = DType::kFloat32;
  ConvLayout x_layout = ConvLayout::kNCHW;
  ConvLayout y_layout = ConvLayout::kNCHW;
};

// Whether w is [out_channels, kh, kw, icpg] rather than [out_channels, icpg,
// kh, kw]: when x or y is channels last, as the tensor-core engines read it.
inline bool ChannelsLastWeights(const ConvParams& p) {
  return p.x_layout == ConvLayout::kNHWC || p.y_layout == ConvLayout::kNHWC;
}

enum class PoolKind : int32_t { kMax, kAverage };

// Windowed pooling (MaxPool, AveragePool). Output (oh, ow) covers input rows
// oh*stride_h - pad_top + kh*dilation_h for kh < kernel_h (and likewise in W);
// out_h/out_w already include ceil_mode (binding computes them; a window that
// would start in the bottom/right padding is never produced).
//  * kMax: the maximum over the window positions inside the input; NaN if any
//    of them is NaN (ONNX and PyTorch propagate NaN). Padding never wins.
//  * kAverage: the sum over the window positions inside the input, divided by
//    - count_include_pad: the number of window positions inside the padded
//      input, i.e. rows in [-pad_top, in_h + pad_bottom) times columns in
//      [-pad_left, in_w + pad_right) (PyTorch's and ONNX's divisor: positions
//      past the padded end, possible with ceil_mode, are not counted);
//    - otherwise: the number of window positions inside the input.
//    A window with no position inside the input gives 0.
// Dilation applies to kMax only (ONNX AveragePool has dilations since opset
// 19; binding refuses them != 1 for average).
struct PoolParams {
  PoolKind kind = PoolKind::kMax;
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t in_h = 1;
  int64_t in_w = 1;
  int64_t out_h = 1;
  int64_t out_w = 1;
  int64_t kernel_h = 1;
  int64_t kernel_w = 1;
  int64_t stride_h = 1;
  int64_t stride_w = 1;
  int64_t dilation_h = 1;
  int64_t dilation_w = 1;
  int64_t pad_top = 0;
  int64_t pad_left = 0;
  int64_t pad_bottom = 0;
  int64_t pad_right = 0;
  bool count_include_pad = false;
  DType dtype = DType::kFloat32;  // of x and y
  // Of x and y alike: NHWC between channels-last convolutions (Note
  // [Channels-last convolutions] in runtime/fusion.h), on the device only.
  ConvLayout layout = ConvLayout::kNCHW;
};

// GlobalAveragePool / GlobalMaxPool: each of `rows` = N*C rows of `spatial`
// = H*W (or any product of spatial dims) contiguous floats reduces to one.
// Max propagates NaN; average accumulates in float64 on the host and float32
// (tree order) on the GPU.
struct GlobalPoolParams {
  PoolKind kind = PoolKind::kAverage;
  int64_t rows = 1;
  int64_t spatial = 1;
  DType dtype = DType::kFloat32;  // of x and y
  // kNHWC (the device only): x is [batch, spatial, channels] with rows =
  // batch * channels, a row's elements `channels` apart; y [rows] is the
  // same bytes in either layout.
  ConvLayout layout = ConvLayout::kNCHW;
  int64_t channels = 1;
};

// The activation at the end of a fused epilogue. NaN in gives NaN out for
// every kind (kRelu is x > 0 ? x : (x == x ? 0 : x), not fmaxf).
enum class Activation : int32_t {
  kNone,
  kRelu,
  kClip,         // min(max(x, clip_min), clip_max); ReLU6 is clip [0, 6]
  kSigmoid,      // 1 / (1 + exp(-x))
  kSilu,         // x * sigmoid(x): PyTorch's SiLU exports as Sigmoid then Mul
  kHardSigmoid,  // max(0, min(1, alpha * x + beta))
  kHardSwish,    // x * max(0, min(1, x / 6 + 1/2))
};

struct ActivationParams {
  Activation kind = Activation::kNone;
  float clip_min = 0.0f;  // kClip
  float clip_max = 0.0f;  // kClip
  float alpha = 0.2f;     // kHardSigmoid
  float beta = 0.5f;      // kHardSigmoid
};

// The per-channel epilogue after a convolution, and BatchNormalization when it
// cannot be folded into one:
//   y[n, c, s] = act(x[n, c, s] * scale[c] + shift[c] + residual[n, c, s])
// over `batch` x `channels` x `spatial` elements, where scale (null: 1),
// shift (null: 0) and residual (null: 0) are optional. In place (y == x) is
// allowed. x and y lie in `layout` (NCHW: [n, c, s]; NHWC: [n, s, c]), the
// residual in its own.
struct ChannelEpilogueParams {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t spatial = 1;
  ActivationParams activation;
  DType dtype = DType::kFloat32;  // of x, scale, shift, residual and y
  ConvLayout layout = ConvLayout::kNCHW;
  ConvLayout residual_layout = ConvLayout::kNCHW;
};

// Pad (ONNX opset >= 11 semantics) of a tensor of rank <= 8.
enum class PadMode : int32_t { kConstant, kReflect, kEdge };

inline constexpr int kMaxPadRank = 8;

// out dims = in dims + pads_begin + pads_end per dim; pads may be negative
// (cropping). Output element at index o reads input index o - pads_begin in
// each dim; outside the input: kConstant gives `value`, kReflect mirrors
// without repeating the edge (numpy 'reflect'), kEdge repeats the edge.
struct PadParams {
  PadMode mode = PadMode::kConstant;
  int32_t rank = 0;
  int64_t in_dims[kMaxPadRank] = {};
  int64_t out_dims[kMaxPadRank] = {};
  int64_t pads_begin[kMaxPadRank] = {};
  float value = 0.0f;  // kConstant, float32 tensors
};

}  // namespace graphserve
