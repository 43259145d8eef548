// Transformer ops of opset 23: RotaryEmbedding and Attention.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; RotaryEmbedding's kernels are in
// runtime/host/attention_kernels.cc and runtime/cuda/attention_ops.cc;
// Attention binds into primitive ops (Note [Attention lowering]).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/attention_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

// Note [Rotary embedding] in runtime/host/attention_kernels.h.
absl::Status BindRotaryEmbedding(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kFloat32, DType::kFloat16, DType::kBFloat16}));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 2));
  const Dims& dims = ctx.in_dims(0);
  ASSIGN_OR_RETURN(const int64_t num_heads, ctx.IntAttrOr("num_heads", 0));
  ASSIGN_OR_RETURN(int64_t rotary_dim, ctx.IntAttrOr("rotary_embedding_dim", 0));
  ASSIGN_OR_RETURN(const int64_t interleaved, ctx.IntAttrOr("interleaved", 0));
  int64_t batch = 0, seq = 0, heads = 0, head_size = 0;
  if (dims.size() == 4) {  // [batch, heads, seq, head_size]
    batch = dims[0];
    heads = dims[1];
    seq = dims[2];
    head_size = dims[3];
  } else if (dims.size() == 3) {  // [batch, seq, heads * head_size]
    if (num_heads <= 0 || dims[2] % num_heads != 0) {
      return ctx.Error("a 3-D input ", DimsToString(dims),
                       " needs num_heads dividing its last dim, got ", num_heads);
    }
    batch = dims[0];
    seq = dims[1];
    heads = num_heads;
    head_size = dims[2] / num_heads;
  } else {
    return ctx.Error("input should be 3-D or 4-D, got ", DimsToString(dims));
  }
  if (rotary_dim == 0) rotary_dim = head_size;
  if (rotary_dim < 0 || rotary_dim % 2 != 0 || rotary_dim > head_size) {
    return ctx.Error("rotary_embedding_dim ", rotary_dim,
                     " should be even and at most the head size ", head_size);
  }
  const int64_t half = rotary_dim / 2;
  const bool has_positions = ctx.has_input(3);
  const Dims cache_dims = ctx.in_dims(1);
  const bool cache_fits = has_positions ? cache_dims.size() == 2 && cache_dims[1] == half
                                        : cache_dims == Dims{batch, seq, half};
  if (!cache_fits || ctx.in_dims(2) != cache_dims) {
    return ctx.Error("cos_cache ", DimsToString(cache_dims), " and sin_cache ",
                     DimsToString(ctx.in_dims(2)), " should both be ",
                     has_positions ? absl::StrCat("[max_position,", half, "]")
                                   : DimsToString({batch, seq, half}),
                     has_positions ? " with position_ids" : " without position_ids");
  }
  if (has_positions) {
    RETURN_IF_ERROR(ctx.CheckDType(3, {DType::kInt64}));
    if (ctx.in_dims(3) != Dims{batch, seq}) {
      return ctx.Error("position_ids ", DimsToString(ctx.in_dims(3)), " should be [", batch, ",",
                       seq, "]");
    }
  }
  return ctx.EmitSimple(ctx.inputs(),
                        {{"batch", batch},
                         {"seq", seq},
                         {"heads", heads},
                         {"head_size", head_size},
                         {"rotary_dim", rotary_dim},
                         {"interleaved", int64_t{interleaved != 0}},
                         {"heads_outer", int64_t{dims.size() == 4}}},
                        ctx.in_dtype(0), dims);
}

}  // namespace

void AddAttentionOps(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{.name = "RotaryEmbedding",
                      .family = "attention",
                      .since_opset = 23,
                      .attributes = {"interleaved", "num_heads", "rotary_embedding_dim"},
                      .arity = {{1, {3, 4}}},
                      .bind = BindRotaryEmbedding,
                      .host = HostRotaryEmbedding,
                      .kernel_inputs = {3, 4},
                      .summary = "float32, float16, bfloat16; 3-D (num_heads) or 4-D input, "
                                 "position_ids or per-token caches, interleaved, partial "
                                 "rotary_embedding_dim"});
  ops.back().input_names = {"X", "cos_cache", "sin_cache", "position_ids"};
}

}  // namespace graphserve
