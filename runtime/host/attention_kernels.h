#pragma once
// Host reference kernels, attention family: RotaryEmbedding. (Attention
// itself binds into primitive ops: Note [Attention lowering] in
// runtime/ops/attention.cc.) The op registry (runtime/ops/attention.cc)
// names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

// Note [Rotary embedding].
absl::Status HostRotaryEmbedding(const HostKernelArgs& args);

// Note [Rotary embedding]
// ~~~~~~~~~~~~~~~~~~~~~~~
// RotaryEmbedding (opset 23) binds to one canonical form: inputs X, cos_cache,
// sin_cache[, position_ids]; attrs batch, seq, heads, head_size, rotary_dim
// (even, <= head_size; ONNX's 0 spelled out as head_size), interleaved (0/1)
// and heads_outer: 1 when X is [batch, heads, seq, head_size] (ONNX's 4-D
// input), 0 when it is [batch, seq, heads, head_size] (the 3-D input
// [batch, seq, heads * head_size] with num_heads). Y has X's dims.
// With position_ids [batch, seq] (int64) the caches are [max_position,
// rotary_dim / 2] and row position_ids[b, s] is read (a negative id counts
// from the end, as numpy's indexing in ONNX's reference does); without, the
// caches are [batch, seq, rotary_dim / 2] and row (b, s) is read.
// Each head vector's first rotary_dim elements are rotated in pairs
// (x1, x2) = (x[i], x[i + rotary_dim / 2]), or (x[2i], x[2i + 1]) when
// interleaved, to (cos x1 - sin x2, sin x1 + cos x2) in the pair's places;
// the rest is copied. It is a kernel of its own on both executors rather than
// a chain of Gather, Slice, Mul and Concat: one pass over X instead of a
// dozen, and the exported models call it once per layer for Q and for K.
// The host computes in float64 and rounds once; CUDA in float32 for float32
// and the 16-bit floats. An id outside [-max_position, max_position) is an
// InvalidArgument on the host; on the GPU, where a kernel cannot report,
// its rotated elements are NaN.

}  // namespace graphserve
