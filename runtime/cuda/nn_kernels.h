#pragma once
// CUDA kernels of the convolutional-network ops that cuDNN's convolution does
// not cover: windowed and global pooling, the per-channel epilogue that runs
// after every convolution (affine, residual, activation), Pad, and standalone
// activations. Each implements the op exactly as runtime/nn_params.h defines
// it, which runtime/host/nn_reference.h also implements; the tests compare the
// two.
//
// Plain C++ and CUDA runtime types only, so that .cc files include this
// without nvcc.
//
// Every launch function enqueues its kernel(s) on `stream` and returns
// cudaGetLastError(); none allocates, synchronises or copies between host and
// device, so each is capturable into a CUDA graph. Device pointers are owned by
// the caller and must stay valid until the stream has run the work. A launch
// with no output elements enqueues nothing and returns cudaSuccess; parameters
// no kernel can run (negative sizes, a rank above kMaxPadRank, an element size
// other than 1, 2, 4 or 8, a dtype other than float32, float16 or bfloat16
// for pooling and epilogues) give cudaErrorInvalidValue and enqueue nothing.
// Pooling and epilogues compute in float whatever the element type and round
// each output once to it.
//
// NaN propagates everywhere nn_params.h says it does: max pooling of a window
// holding a NaN is NaN, and every activation maps NaN to NaN (no fmaxf/fminf,
// which drop it).

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/nn_params.h"

namespace graphserve {

// y [batch, channels, out_h, out_w] = pool(x [batch, channels, in_h, in_w]).
// Max: NaN wins, a window with no position inside the input gives -inf.
// Average: float32 sum over the window's positions inside the input divided
// by PoolParams' divisor (count_include_pad either way); a window with no
// position inside the input gives 0. Dilation applies to both kinds, as the
// host reference does (binding never asks average for one). With
// params.layout kNHWC, x and y are [batch, h, w, channels] and the same
// outputs come out, summed in the same order; 16-byte loads when the
// channels come in 16 bytes and x and y are 16-byte aligned.
cudaError_t LaunchPool(const PoolParams& params, const void* x, void* y, cudaStream_t stream);

// y [rows] = max or mean of each row of x [rows, spatial]. One warp per row,
// one block per row for long rows; float32 tree-order sums. An empty row
// (spatial 0) gives -inf (max) or NaN (mean: 0 / 0), as the host reference.
// With params.layout kNHWC, x is [batch, spatial, channels]: one thread per
// batch item and channel (or 16 bytes of channels) sums its positions in
// order.
cudaError_t LaunchGlobalPool(const GlobalPoolParams& params, const void* x, void* y,
                             cudaStream_t stream);

// y[n, c, s] = act(x[n, c, s] * scale[c] + shift[c] + residual[n, c, s]), see
// ChannelEpilogueParams. scale (null: 1), shift (null: 0) and residual (null:
// 0) are optional; y may equal x or residual (in place), but must not
// otherwise overlap them. The affine is one fused multiply-add (one rounding);
// with a residual there is a second rounding. Uses 16-byte loads and stores
// when spatial % 4 == 0 and x, y and residual are 16-byte aligned.
cudaError_t LaunchChannelEpilogue(const ChannelEpilogueParams& params, const void* x,
                                  const void* scale, const void* shift, const void* residual,
                                  void* y, cudaStream_t stream);

// Whether LaunchDepthwiseConv runs `params`: a depthwise Conv (groups ==
// in_channels == out_channels) of a square 3x3, 5x5 or 7x7 kernel, stride 1
// or 2 in both dims, no dilation, x and y NCHW, float32, float16 or
// bfloat16, of sizes 32-bit indices cover. Note [Depthwise convolutions] in
// nn_kernels.cu.
bool DepthwiseConvRuns(const ConvParams& params);

// y = act(conv(x, w) + bias[c] + residual) for a depthwise Conv that
// DepthwiseConvRuns takes (cudaErrorInvalidValue otherwise): x [batch, C,
// in_h, in_w], w [C, 1, k, k], y and residual [batch, C, out_h, out_w], all
// of params.dtype; bias (null: 0) and residual (null: 0) optional. Float
// products and sums, rounded once to the type. y may equal residual, not x.
cudaError_t LaunchDepthwiseConv(const ConvParams& params, const ActivationParams& activation,
                                const void* x, const void* w, const void* bias,
                                const void* residual, void* y, cudaStream_t stream);

// Pad of `element_size`-byte elements (1, 2, 4 or 8: any row of the datatype
// table), see
// PadParams. For kConstant the pad value is the low `element_size` bytes of
// `value_bits` (little-endian; for float32 the bits of PadParams::value, which
// this function does not read itself, so that int64 and bool pads have a
// value too). kReflect and kEdge of an input with an empty dim write zeros, as
// the host reference does (ONNX rejects that case). x and y must not overlap.
cudaError_t LaunchPad(const PadParams& params, const void* x, void* y, int element_size,
                      uint64_t value_bits, cudaStream_t stream);

// y[i] = act(x[i]) for i < count (Clip, HardSigmoid, HardSwish, ... as their
// own nodes). y may equal x.
cudaError_t LaunchActivation(const ActivationParams& params, DType dtype, const void* x, void* y,
                             int64_t count, cudaStream_t stream);

}  // namespace graphserve
