#pragma once
// Host reference kernels, normalization family: Softmax, LogSoftmax, Hardmax,
// LayerNormalization, InstanceNormalization, GroupNormalization, the Reduce*
// ops, ArgMax and ArgMin, CumSum. Each computes one canonical bound node
// (Note [Canonical bound nodes]); the op registry
// (runtime/ops/normalization.cc) names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostSoftmax(const HostKernelArgs& args);
absl::Status HostLogSoftmax(const HostKernelArgs& args);
absl::Status HostHardmax(const HostKernelArgs& args);
absl::Status HostLayerNormalization(const HostKernelArgs& args);
// Note [RMS normalization].
absl::Status HostRMSNormalization(const HostKernelArgs& args);
// InstanceNormalization and GroupNormalization (Note [Group normalization]).
absl::Status HostGroupNormalization(const HostKernelArgs& args);
absl::Status HostReduceSum(const HostKernelArgs& args);
absl::Status HostReduceMean(const HostKernelArgs& args);
absl::Status HostReduceProd(const HostKernelArgs& args);
absl::Status HostReduceMax(const HostKernelArgs& args);
absl::Status HostReduceMin(const HostKernelArgs& args);
absl::Status HostReduceL1(const HostKernelArgs& args);
absl::Status HostReduceL2(const HostKernelArgs& args);
absl::Status HostReduceSumSquare(const HostKernelArgs& args);
absl::Status HostReduceLogSum(const HostKernelArgs& args);
absl::Status HostReduceLogSumExp(const HostKernelArgs& args);
absl::Status HostArgMax(const HostKernelArgs& args);
absl::Status HostArgMin(const HostKernelArgs& args);
absl::Status HostCumSum(const HostKernelArgs& args);

// Note [Group normalization]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// InstanceNormalization and GroupNormalization bind to one canonical form:
// inputs X [N, C, spatial...], scale, B; attrs batch (N), channels (C),
// groups (G, which divides C; C for InstanceNormalization), spatial (the
// product of X's dims after C), epsilon, and affine_per_group (1 when scale
// and B hold one value per group, GroupNormalization before opset 21; 0 when
// one per channel). Each (n, g) is a contiguous row of C / G * spatial
// elements, normalised by its own mean and (biased) variance:
//   y = scale[k] * (x - mean) / sqrt(var + epsilon) + B[k],
// k the element's group or channel. Both executors keep the statistics in
// float64 (two passes: the mean, then the squared deviations from it). A NaN
// or an infinity in a row makes the whole row NaN, as in ONNX's reference.

// Note [RMS normalization]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// RMSNormalization (opset 23) binds to LayerNormalization's canonical form
// without B: X viewed as [outer, inner] rows, Scale of `inner` elements
// (binding expands a Scale that broadcasts to X[axis:] and casts it to X's
// dtype), attrs outer, inner, epsilon; one output Y. Each row is
//   y = x / sqrt(mean(x^2) + epsilon) * scale,
// which is LayerNormalization with the row's mean taken as 0, so both
// executors run LayerNormalization's kernels with the centring switched off:
// the host in float64, CUDA in float32 for float32 and the 16-bit floats
// (ONNX's stash_type 1, the only one binding accepts). As in ONNX's
// reference, a NaN makes its row NaN, and an infinity makes its own element
// NaN (inf / inf) and the row's finite elements 0.

// Note [Reductions]
// ~~~~~~~~~~~~~~~~~
// ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp bind to one
// canonical form: one input, attrs axes (sorted, non-negative) and keepdims.
// Empty axes (noop_with_empty_axes) reduce nothing: each output element is
// its one input element put through the reduction (|x| for ReduceL1 and
// ReduceL2, x^2 for ReduceSumSquare, log x for ReduceLogSum, as ONNX's
// reference computes it and its spec says since its fix); binding emits
// Identity instead where that is x itself.
//
// ONNX's values hold at the edges. NaN propagates through every reduction
// (ReduceMax and ReduceMin as numpy's maximum and minimum). An empty
// reduction (a reduced dim of 0) gives 0 for the sums, 1 for ReduceProd,
// -Inf and +Inf (the lowest and highest integer) for ReduceMax and
// ReduceMin, -Inf for ReduceLogSum and ReduceLogSumExp, NaN for ReduceMean.
// ReduceLogSumExp subtracts the peak before exponentiating, so it overflows
// only where the result does; a peak of +-Inf is the result (all -Inf gives
// -Inf, where ONNX's reference computes -Inf - -Inf = NaN).
//
// The float types accumulate in float64 on both executors. int32 and int64
// (ReduceSum, ReduceProd, ReduceMax, ReduceMin, ReduceL1, ReduceSumSquare)
// wrap as the element type does.

}  // namespace graphserve
