#pragma once
// Scaled dot-product attention as one kernel: o = softmax(scale * q k^T +
// mask) v per (batch, head), in float whatever the element type, rounded
// once to it. The CUDA executor runs the chains Note [Fused attention] in
// runtime/fusion.h describes with it.
//
// Plain C++ and CUDA runtime types only, so callers compile without nvcc.

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype_table.h"

namespace graphserve {

// Element strides of an operand seen as [batch, heads, rows, cols]; 0 along
// a dim it broadcasts over.
struct AttentionStrides {
  int64_t batch = 0;
  int64_t head = 0;
  int64_t row = 0;
  int64_t col = 0;
};

struct FusedAttentionParams {
  DType dtype = DType::kFloat32;  // of every operand: float32, float16 or bfloat16
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t query_rows = 0;  // Sq
  int64_t key_rows = 0;    // Sk
  int64_t head_dim = 0;    // D, at most 128
  int64_t value_dim = 0;   // Dv, at most 128
  float scale = 1.0f;
  // A row whose softmax is NaN (a NaN score, or a max of +inf or -inf) is
  // written as 0 instead of NaN.
  bool nan_to_zero = false;
  // The mask and the output are float32 while q, k and v are of the 16-bit
  // `dtype`: the model casts the scores and v up (the TorchScript exporter's
  // float16 SDPA, Note [Fused attention]).
  bool float_scores = false;
  AttentionStrides q;     // [batch, heads, Sq, D]
  AttentionStrides k;     // [batch, heads, Sk, D]: k itself, not k^T
  AttentionStrides v;     // [batch, heads, Sk, Dv]
  AttentionStrides mask;  // [batch, heads, Sq, Sk], added to the scaled scores
  AttentionStrides out;   // [batch, heads, Sq, Dv]
};

// The type of an attention's mask and output (FusedAttentionParams).
inline DType AttentionScoreType(const FusedAttentionParams& params) {
  return params.float_scores ? DType::kFloat32 : params.dtype;
}

inline constexpr int64_t kFusedAttentionMaxHeadDim = 128;

// Enqueues the attention on `stream`; `mask` may be null. The operands must
// not overlap `out`. No allocation, no synchronisation, capturable. Returns
// cudaErrorInvalidValue for sizes out of range or a type outside the three.
cudaError_t LaunchFusedAttention(const FusedAttentionParams& params, const void* q, const void* k,
                                 const void* v, const void* mask, void* out, cudaStream_t stream);

// Writes 0 (params.nan_to_zero) or NaN over each output row whose softmax
// statistic `row_stats` (float, [batch, heads, query_rows] packed: cuDNN's
// log-sum-exp of the scaled, masked scores) is not finite: the rows whose
// softmax ONNX makes NaN (Note [cuDNN attention], Semantics). With `staged`
// (the output in params.dtype, [batch, heads, query_rows, value_dim]
// packed) every other row is copied from it into `out`, converted to the
// output's type (float_scores); without, they are left alone. Capturable.
cudaError_t LaunchAttentionRowFill(const FusedAttentionParams& params, const float* row_stats,
                                   const void* staged, void* out, cudaStream_t stream);

}  // namespace graphserve
