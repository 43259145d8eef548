#pragma once
// Scaled dot-product attention on cuDNN's fused (flash) attention engines:
// the sdpa node of cuDNN's C++ frontend graph, for float16 and bfloat16
// operands, as runtime/cuda/fused_attention.h's FusedAttentionParams define
// it (strided views, an additive mask, a scale).
//
// Note [cuDNN attention]
// ~~~~~~~~~~~~~~~~~~~~~~
// A kAttention step (Note [Fused attention] in runtime/fusion.h) of 16-bit
// operands runs here: one cuDNN kernel reads q, k, v and the mask where they
// lie and writes the output, against the chain's ten kernels (two cuBLASLt
// GEMMs, the scale, the mask Add, the Softmax and the copies around them),
// which is what PyTorch's graph runs for the same models (its SDPA picks
// cuDNN's engine on Hopper). Our own fused kernel computes with float FMAs,
// not tensor cores, and lost to the chain; cuDNN's engines use the tensor
// cores with float accumulation and an online softmax in float, so the
// scores and probabilities are never rounded to 16 bits (the chain rounds
// both), and the output is rounded once.
//
// What cuDNN takes, and what we give it:
//  * q, k, v and the output as [batch, heads, rows, head_dim] with any
//    strides whose last is 1 (the heads' Transposes read in place: Note
//    [Attention views] in runtime/fusion.h); k and v may have fewer heads
//    (one, shared), not fewer batches;
//  * the mask as a bias tensor added to the scaled scores, of dims
//    [batch or 1, heads or 1, rows or 1, keys], the ones broadcast;
//  * head dims up to 256, multiples of 8 (16-byte rows).
// Anything else is Unimplemented at Create, and the step runs our own fused
// kernel instead (runtime/cuda/fused_attention_kernel.cc).
//
// Semantics. cuDNN's softmax is max-subtracted and exact in float. ONNX's
// Softmax makes a whole row NaN when a score is NaN or the row's max is +inf
// or -inf (every key masked with -inf); the chain's Where(IsNaN(p), 0, p),
// which the dynamo exporter writes after it (nan_to_zero), makes that row 0.
// cuDNN's engines answer such rows their own way (measured on the H200: NaN
// for a NaN score, 0 for a row of -inf), which matches neither form in every
// case. So the plan also asks cuDNN for each row's log-sum-exp (its softmax
// statistic, float, kept in the step's workspace after cuDNN's own), which is
// finite exactly when the row's softmax is, and a small kernel
// (LaunchAttentionRowFill) writes those rows as the chain would: 0 under
// the guard, else NaN. That is exact whatever the mask holds, for one
// launch that reads batch x heads x rows floats.
//
// Capture. Execute patches the variant pack on the host and launches the
// plan's kernels on the handle's stream with the caller's workspace: no
// allocation, no synchronisation, capturable like the convolutions' plans
// (Note [cuDNN graph API convolution] in cudnn_conv.h). The plan's engine is
// cuDNN's heuristics' first that builds (inference fprop is deterministic);
// plans are shared through AlgorithmChoices under their params' key, so the
// twelve identical layers of BERT and the M stream slots build one.

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/fused_attention.h"

namespace graphserve {

inline constexpr int64_t kCudnnAttentionMaxHeadDim = 256;

// "Attention float16 b=8 h=12 sq=128 sk=128 d=64 dv=64 scale=0.125 q[...]
// k[...] v[...] mask[...] out[...]": the key plans are shared under, and
// what error messages name.
std::string AttentionParamsToString(const FusedAttentionParams& params);

// One attention of fixed sizes, planned on one cuDNN handle (not owned; it
// must outlive this object, and one thread at a time may use the handle and
// every CudnnAttention on it, as with CudnnConv).
class CudnnAttention {
 public:
  // Builds (or finds in `choices`, which may be null) the plan of `params`,
  // with params.mask's view of a mask when `has_mask`. Unimplemented when
  // cuDNN cannot run them (Note [cuDNN attention]).
  static absl::StatusOr<std::unique_ptr<CudnnAttention>> Create(
      cudnnHandle_t handle, const FusedAttentionParams& params, bool has_mask,
      AlgorithmChoices* choices);

  ~CudnnAttention();

  // Device bytes Enqueue's workspace must hold: cuDNN's own and the rows'
  // statistics.
  [[nodiscard]] size_t workspace_bytes() const;

  // Enqueues the attention on `stream`; `mask` is null exactly when the
  // params have no mask. Capturable.
  absl::Status Enqueue(const void* q, const void* k, const void* v, const void* mask, void* out,
                       void* workspace, cudaStream_t stream) const;

  struct Plan;

 private:
  CudnnAttention(cudnnHandle_t handle, std::shared_ptr<const Plan> plan);

  cudnnHandle_t handle_;
  std::shared_ptr<const Plan> plan_;
};

}  // namespace graphserve
