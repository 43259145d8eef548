#pragma once
// Host reference computations of the convolutional-network ops on raw float32
// NCHW buffers, described by the canonical parameters of runtime/nn_params.h.
// Products and sums accumulate in float64. These are the oracle the CUDA
// kernels are tested against and what the host executor's kernels call.
// Every pointer is owned by the caller; outputs are fully overwritten.

#include <cstdint>

#include "runtime/nn_params.h"

namespace graphserve {

// y [batch, out_channels, out_h, out_w] = conv(x, w) (+ bias[oc] if bias).
void ConvReference(const ConvParams& p, const float* x, const float* w, const float* bias,
                   float* y);

// y [batch, channels, out_h, out_w].
void PoolReference(const PoolParams& p, const float* x, float* y);

// y [rows].
void GlobalPoolReference(const GlobalPoolParams& p, const float* x, float* y);

// The activation of one value (NaN in, NaN out).
float ApplyActivation(const ActivationParams& a, float x);

// y = act(x * scale[c] + shift[c] + residual); see ChannelEpilogueParams.
// scale, shift and residual may be null; y may equal x.
void ChannelEpilogueReference(const ChannelEpilogueParams& p, const float* x, const float* scale,
                              const float* shift, const float* residual, float* y);

// Pad of `element_size`-byte elements (4 or 8: float32 or int64; 1: bool).
// For kConstant, `value` holds the pad value's bytes (element_size of them).
void PadReference(const PadParams& p, const void* x, void* y, int element_size, const void* value);

// BatchNormalization (inference) as a per-channel affine:
//   scale[c] = gamma[c] / sqrt(var[c] + epsilon), shift[c] = beta[c] - mean[c] * scale[c]
// computed in float64 and rounded once.
void BatchNormAffine(int64_t channels, const float* gamma, const float* beta, const float* mean,
                     const float* var, float epsilon, float* scale, float* shift);

// Folds a per-output-channel affine into a convolution's weights and bias:
//   w'[oc, ...] = w[oc, ...] * scale[oc],  b'[oc] = b[oc] * scale[oc] + shift[oc]
// (b null: 0). `weights_per_channel` = icpg * kernel_h * kernel_w.
void FoldAffineIntoConv(int64_t out_channels, int64_t weights_per_channel, const float* scale,
                        const float* shift, const float* w, const float* b, float* w_out,
                        float* b_out);

}  // namespace graphserve
