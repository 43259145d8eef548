// Transformer ops of opset 23: RotaryEmbedding and Attention.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; RotaryEmbedding's kernels are in
// runtime/host/attention_kernels.cc and runtime/cuda/attention_ops.cc;
// Attention binds into primitive ops (Note [Attention lowering]).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/tensor.h"
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

// Note [Attention lowering]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Attention (opsets 23 to 25) binds into the primitive ops it is defined by,
// each of which already has a host kernel and a CUDA kernel (the MatMuls on
// cuBLASLt): no attention kernel of our own, and every dtype those ops take
// (float32, float16, bfloat16; float64 on the host). With T the dtype of Q:
//   q = heads_first(Q) * sqrt(scale)            [B, Hq, Sq, D]
//   k = (K * sqrt(scale)) transposed            [B, Hkv, D, Skv]
//   s = q @ k                                   [B, Hq, Sq, Skv]
//   s = tanh(s / softcap) * softcap             (softcap > 0)
//   s = s + bias                                (a mask, is_causal or a window)
//   p = Softmax(s) over Skv; fully masked rows 0
//   Y = p @ heads_first(V), back to [B, Sq, Hq * Dv] for 3-D inputs.
// scale defaults to 1 / sqrt(D) and is applied as sqrt(scale) to Q and to K,
// rounded to T, as ONNX's function body and reference do. A 3-D input
// [B, S, H * D] becomes [B, H, S, D] by a Reshape and a Transpose; K's
// transposes fold into one. Grouped-query attention (Hkv dividing Hq, each
// KV head serving Hq / Hkv consecutive Q heads) repeats nothing: Q viewed as
// [B, Hkv, (Hq / Hkv) * Sq, D] multiplies K as it is, and the scores are
// viewed back as [B, Hq, Sq, Skv], both views free Reshapes.
// The bias is one tensor that broadcasts to the scores: a boolean attn_mask
// as Where(mask, 0, -inf), a float one as it is (cast to T), plus a constant
// [Sq, Skv] for is_causal (query i sees key j <= i) and opset 25's windows
// (i - left_window_size <= j <= i + right_window_size), all folded at bind
// time when the mask is a constant. A row whose bias is -inf throughout
// softmaxes to NaN; ONNX wants 0 there, so where such a row can occur (a
// mask known only at run time, or a constant one that has it) the
// probabilities go through Where(ReduceMax(bias) == -inf, 0, p) — decided
// on the bias, as ONNX's reference decides it. softmax_precision may name T
// or a wider float type: the Softmax kernels compute in float32 or wider
// and read scores already rounded to T, so the result is the same.
// A fused attention kernel (cuDNN's, flash attention) would be a fusion step
// over this chain, as the erf GELU chain is (runtime/fusion.h), rather than
// a second way to bind it; until then the chain keeps to kernels that are
// already checked against the host, and its MatMuls are cuBLASLt's.
// qk_matmul_output (output 3) is an Identity of the intermediate its mode
// names: s after the scaling (0), after softcap (1), after the bias (2), or p
// (3). Not supported, as Unimplemented naming the input: the KV caches
// (past_key, past_value and the present_* outputs) and nonpad_kv_seqlen
// (opset 24); an attn_mask shorter than Skv (ONNX pads it with -inf), and
// integer masks.

// The float types Attention takes.
const std::vector<DType> kAttentionTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                            DType::kFloat64};

// Attention's inputs and outputs that come with a KV cache.
constexpr size_t kPastKey = 4, kPastValue = 5, kNonpadKvSeqlen = 6;
constexpr size_t kPresentKey = 1, kPresentValue = 2, kQkMatmulOutput = 3;

// Q, K and V's sizes as [batch, heads, seq, head].
struct AttentionShape {
  int64_t batch = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  int64_t q_seq = 0;
  int64_t kv_seq = 0;
  int64_t head_size = 0;    // Q's and K's
  int64_t v_head_size = 0;  // V's
  bool three_d = false;     // [batch, seq, heads * head] inputs and output

  [[nodiscard]] Dims scores() const { return {batch, q_heads, q_seq, kv_seq}; }
};

absl::Status RefuseCaches(const BindContext& ctx) {
  for (const auto& [input, name] : {std::pair<size_t, const char*>{kPastKey, "past_key"},
                                    {kPastValue, "past_value"},
                                    {kNonpadKvSeqlen, "nonpad_kv_seqlen"}}) {
    if (ctx.has_input(input)) {
      return ctx.Unsupported("input ", input, " '", name,
                             "' is not supported: Attention binds without a KV cache");
    }
  }
  for (const auto& [output, name] : {std::pair<size_t, const char*>{kPresentKey, "present_key"},
                                     {kPresentValue, "present_value"}}) {
    if (output < ctx.outputs().size() && !ctx.outputs()[output].empty()) {
      return ctx.Unsupported("output ", output, " '", name,
                             "' is not supported: Attention binds without a KV cache");
    }
  }
  return absl::OkStatus();
}

// Heads from the dims (4-D) or from q_num_heads and kv_num_heads (3-D).
absl::StatusOr<AttentionShape> ReadAttentionShape(const BindContext& ctx) {
  const Dims& q = ctx.in_dims(0);
  const Dims& k = ctx.in_dims(1);
  const Dims& v = ctx.in_dims(2);
  ASSIGN_OR_RETURN(const int64_t q_num_heads, ctx.IntAttrOr("q_num_heads", 0));
  ASSIGN_OR_RETURN(const int64_t kv_num_heads, ctx.IntAttrOr("kv_num_heads", 0));
  AttentionShape s;
  if (q.size() == 4 && k.size() == 4 && v.size() == 4) {
    s = AttentionShape{q[0], q[1], k[1], q[2], k[2], q[3], v[3], false};
    if (k[0] != s.batch || v[0] != s.batch || v[1] != s.kv_heads || v[2] != s.kv_seq ||
        k[3] != s.head_size || (q_num_heads != 0 && q_num_heads != s.q_heads) ||
        (kv_num_heads != 0 && kv_num_heads != s.kv_heads)) {
      return ctx.Error("Q ", DimsToString(q), ", K ", DimsToString(k), ", V ", DimsToString(v),
                       " (and q_num_heads ", q_num_heads, ", kv_num_heads ", kv_num_heads,
                       ") do not agree as [batch, heads, seq, head]");
    }
  } else if (q.size() == 3 && k.size() == 3 && v.size() == 3) {
    if (q_num_heads <= 0 || kv_num_heads <= 0 || q[2] % q_num_heads != 0 ||
        k[2] % kv_num_heads != 0 || v[2] % kv_num_heads != 0 || k[0] != q[0] || v[0] != q[0] ||
        v[1] != k[1] || q[2] / q_num_heads != k[2] / kv_num_heads) {
      return ctx.Error("3-D Q ", DimsToString(q), ", K ", DimsToString(k), ", V ",
                       DimsToString(v), " need q_num_heads and kv_num_heads (got ", q_num_heads,
                       ", ", kv_num_heads, ") dividing their hidden sizes into one head size");
    }
    s = AttentionShape{q[0], q_num_heads, kv_num_heads, q[1], k[1], q[2] / q_num_heads,
                       v[2] / kv_num_heads, true};
  } else {
    return ctx.Error("Q, K and V should all be 3-D or all 4-D, got ", DimsToString(q), ", ",
                     DimsToString(k), ", ", DimsToString(v));
  }
  if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
    return ctx.Error(s.kv_heads, " KV heads should divide the ", s.q_heads, " query heads");
  }
  return s;
}

// A float constant of `dtype` from float64 values (rounded once, as a Cast
// to T in ONNX's function body rounds).
ValueId FloatConstant(BindContext& ctx, const std::string& suffix, Dims dims,
                      const std::vector<double>& values, DType dtype) {
  HostTensor wide(DType::kFloat64, std::move(dims));
  std::copy(values.begin(), values.end(), wide.data<double>());
  return ctx.AddConstant(absl::StrCat(ctx.name(), "/", suffix), ConvertFloats(wide, dtype));
}

// 3-D [batch, seq, heads * head] input `input` as [batch, heads, seq, head];
// a 4-D one as it is.
absl::StatusOr<ValueId> HeadsFirst(BindContext& ctx, const std::string& suffix, ValueId input,
                                   const AttentionShape& s, int64_t heads, int64_t seq,
                                   int64_t head) {
  if (!s.three_d) return input;
  const DType dtype = ctx.value(input).dtype;
  ASSIGN_OR_RETURN(const ValueId split,
                   ctx.EmitHelper(suffix + "_heads", "Reshape", {input}, {}, dtype,
                                  {s.batch, seq, heads, head}));
  return ctx.EmitHelper(suffix + "_heads_first", "Transpose", {split},
                        {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, dtype,
                        {s.batch, heads, seq, head});
}

// a [B, Hq, Sq, n] @ b [B, Hkv, n, m] -> [B, Hq, Sq, m], each KV head serving
// Hq / Hkv consecutive query heads (Note [Attention lowering]).
absl::StatusOr<ValueId> GroupedMatMul(BindContext& ctx, const std::string& suffix, ValueId a,
                                      ValueId b, const AttentionShape& s, int64_t m) {
  const DType dtype = ctx.value(a).dtype;
  const int64_t group = s.q_heads / s.kv_heads;
  if (group == 1) {
    return ctx.EmitHelper(suffix, "MatMul", {a, b}, {}, dtype, {s.batch, s.q_heads, s.q_seq, m});
  }
  const int64_t n = ctx.value(a).dims[3];
  ASSIGN_OR_RETURN(const ValueId grouped,
                   ctx.EmitHelper(suffix + "_grouped", "Reshape", {a}, {}, dtype,
                                  {s.batch, s.kv_heads, group * s.q_seq, n}));
  ASSIGN_OR_RETURN(const ValueId product,
                   ctx.EmitHelper(suffix, "MatMul", {grouped, b}, {}, dtype,
                                  {s.batch, s.kv_heads, group * s.q_seq, m}));
  return ctx.EmitHelper(suffix + "_per_head", "Reshape", {product}, {}, dtype,
                        {s.batch, s.q_heads, s.q_seq, m});
}

// The constant [Sq, Skv] bias of is_causal and the windows; nullopt when
// there are none. It is built in double, whose bytes count against the
// binding's bound (Note [Folding bound] in bind.cc): Sq and Skv come from
// the model's dims, which may be anything.
absl::StatusOr<std::optional<ValueId>> StructuralBias(BindContext& ctx, const AttentionShape& s,
                                                      bool causal, int64_t left_window,
                                                      int64_t right_window, DType dtype) {
  if (!causal && left_window < 0 && right_window < 0) return std::nullopt;
  const std::optional<uint64_t> bytes = TensorBytes({s.q_seq, s.kv_seq}, DType::kFloat64);
  if (!bytes.has_value()) {
    return ctx.Error("a causal or windowed bias of ", s.q_seq, " x ", s.kv_seq,
                     " positions is too large");
  }
  RETURN_IF_ERROR(ctx.ReserveConstantBytes(*bytes));
  std::vector<double> bias(static_cast<size_t>(s.q_seq * s.kv_seq));
  for (int64_t i = 0; i < s.q_seq; ++i) {
    for (int64_t j = 0; j < s.kv_seq; ++j) {
      const bool seen = (!causal || j <= i) && (left_window < 0 || i - j <= left_window) &&
                        (right_window < 0 || j - i <= right_window);
      bias[i * s.kv_seq + j] = seen ? 0.0 : -std::numeric_limits<double>::infinity();
    }
  }
  return FloatConstant(ctx, "structural_bias", {s.q_seq, s.kv_seq}, bias, dtype);
}

// attn_mask as an additive bias of T; nullopt when there is none.
absl::StatusOr<std::optional<ValueId>> MaskBias(BindContext& ctx, const AttentionShape& s,
                                                DType dtype) {
  if (!ctx.has_input(3)) return std::nullopt;
  const Dims mask_dims = ctx.in_dims(3);
  const DType mask_dtype = ctx.in_dtype(3);
  if (!mask_dims.empty() && mask_dims.back() != 1 && mask_dims.back() < s.kv_seq) {
    return ctx.Unsupported("attn_mask ", DimsToString(mask_dims), " is shorter than the ",
                           s.kv_seq, " keys: padding it with -inf is not supported");
  }
  if (BroadcastPair(mask_dims, s.scores()) != s.scores()) {
    return ctx.Error("attn_mask ", DimsToString(mask_dims), " does not broadcast to the scores ",
                     DimsToString(s.scores()));
  }
  if (mask_dtype == DType::kBool) {
    const ValueId zero = FloatConstant(ctx, "zero", {}, {0.0}, dtype);
    const ValueId masked =
        FloatConstant(ctx, "minus_infinity", {}, {-std::numeric_limits<double>::infinity()}, dtype);
    return ctx.EmitHelper("mask_bias", "Where", {ctx.input(3), zero, masked}, {}, dtype,
                          mask_dims);
  }
  if (!IsFloatingDType(mask_dtype)) {
    return ctx.Unsupported("attn_mask of type ", DTypeName(mask_dtype),
                           ": boolean and float masks only");
  }
  if (mask_dtype == dtype) return ctx.input(3);
  return ctx.EmitHelper("mask_bias", "Cast", {ctx.input(3)}, {{"to", static_cast<int64_t>(dtype)}},
                        dtype, mask_dims);
}

// Whether a row of `bias` (along its last dim) may be -inf throughout:
// always for a bias known only at run time.
bool MayMaskWholeRow(const BoundValue& bias) {
  if (!bias.is_constant()) return true;
  const HostTensor wide = ConvertFloats(*bias.constant, DType::kFloat64);
  const int64_t row = bias.dims.empty() ? 1 : bias.dims.back();
  const double* data = wide.data<double>();
  for (int64_t start = 0; start < wide.num_elements(); start += row) {
    bool all_masked = row > 0;
    for (int64_t j = 0; j < row && all_masked; ++j) {
      all_masked = std::isinf(data[start + j]) && data[start + j] < 0;
    }
    if (all_masked) return true;
  }
  return false;
}

// softmax_precision: T itself or a wider float type (Note [Attention lowering]).
absl::Status CheckSoftmaxPrecision(const BindContext& ctx, DType dtype) {
  if (!ctx.has_attr("softmax_precision")) return absl::OkStatus();
  ASSIGN_OR_RETURN(const int64_t precision, ctx.IntAttrOr("softmax_precision", 0));
  const bool sixteen_bit = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  if (precision == static_cast<int64_t>(dtype) ||
      precision == static_cast<int64_t>(DType::kFloat64) ||
      (sixteen_bit && precision == static_cast<int64_t>(DType::kFloat32))) {
    return absl::OkStatus();
  }
  return ctx.Unsupported("softmax_precision ", precision, ": only Q's type (", DTypeName(dtype),
                         ") or a wider float type; the scores are not rounded to another");
}

// Note [Attention lowering].
absl::Status BindAttention(BindContext& ctx) {
  RETURN_IF_ERROR(RefuseCaches(ctx));
  RETURN_IF_ERROR(ctx.CheckDType(0, kAttentionTypes));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  if (ctx.in_dtype(2) != ctx.in_dtype(0)) {
    return ctx.Unsupported("V of type ", DTypeName(ctx.in_dtype(2)), " beside Q and K of ",
                           DTypeName(ctx.in_dtype(0)), ": one type only");
  }
  const DType dtype = ctx.in_dtype(0);
  ASSIGN_OR_RETURN(const AttentionShape s, ReadAttentionShape(ctx));
  ASSIGN_OR_RETURN(const int64_t is_causal, ctx.IntAttrOr("is_causal", 0));
  ASSIGN_OR_RETURN(const float softcap, ctx.FloatAttrOr("softcap", 0.0f));
  ASSIGN_OR_RETURN(const int64_t mode, ctx.IntAttrOr("qk_matmul_output_mode", 0));
  ASSIGN_OR_RETURN(const int64_t left_window, ctx.IntAttrOr("left_window_size", -1));
  ASSIGN_OR_RETURN(const int64_t right_window, ctx.IntAttrOr("right_window_size", -1));
  if (mode < 0 || mode > 3) {
    return ctx.Error("qk_matmul_output_mode should be 0 to 3, got ", mode);
  }
  if (left_window < -1 || right_window < -1) {
    return ctx.Error("left_window_size and right_window_size should be -1 or more, got ",
                     left_window, " and ", right_window);
  }
  RETURN_IF_ERROR(CheckSoftmaxPrecision(ctx, dtype));
  double scale = 1.0 / std::sqrt(static_cast<double>(s.head_size));
  if (ctx.has_attr("scale")) {
    ASSIGN_OR_RETURN(const float given, ctx.FloatAttrOr("scale", 1.0f));
    scale = given;
  }
  const ValueId root_scale = FloatConstant(ctx, "root_scale", {}, {std::sqrt(scale)}, dtype);

  // Scores [B, Hq, Sq, Skv] and the value each qk_matmul_output_mode names.
  ASSIGN_OR_RETURN(const ValueId q_heads,
                   HeadsFirst(ctx, "q", ctx.input(0), s, s.q_heads, s.q_seq, s.head_size));
  ASSIGN_OR_RETURN(const ValueId q, ctx.EmitHelper("q_scaled", "Mul", {q_heads, root_scale}, {},
                                                   dtype, {s.batch, s.q_heads, s.q_seq,
                                                           s.head_size}));
  ASSIGN_OR_RETURN(ValueId k, ctx.EmitHelper("k_scaled", "Mul", {ctx.input(1), root_scale}, {},
                                             dtype, ctx.in_dims(1)));
  std::vector<int64_t> k_perm = {0, 1, 3, 2};
  if (s.three_d) {
    ASSIGN_OR_RETURN(k, ctx.EmitHelper("k_heads", "Reshape", {k}, {}, dtype,
                                       {s.batch, s.kv_seq, s.kv_heads, s.head_size}));
    k_perm = {0, 2, 3, 1};
  }
  ASSIGN_OR_RETURN(k, ctx.EmitHelper("k_transposed", "Transpose", {k}, {{"perm", k_perm}}, dtype,
                                     {s.batch, s.kv_heads, s.head_size, s.kv_seq}));
  std::vector<ValueId> exposed;  // by qk_matmul_output_mode
  ASSIGN_OR_RETURN(ValueId scores, GroupedMatMul(ctx, "qk", q, k, s, s.kv_seq));
  exposed.push_back(scores);
  if (softcap > 0.0f) {
    const ValueId cap = FloatConstant(ctx, "softcap", {}, {softcap}, dtype);
    ASSIGN_OR_RETURN(scores, ctx.EmitHelper("softcap_div", "Div", {scores, cap}, {}, dtype,
                                            s.scores()));
    ASSIGN_OR_RETURN(scores, ctx.EmitHelper("softcap_tanh", "Tanh", {scores}, {}, dtype,
                                            s.scores()));
    ASSIGN_OR_RETURN(scores, ctx.EmitHelper("softcap_mul", "Mul", {scores, cap}, {}, dtype,
                                            s.scores()));
  }
  exposed.push_back(scores);

  // The bias: the mask's plus is_causal's and the windows'.
  ASSIGN_OR_RETURN(std::optional<ValueId> bias, MaskBias(ctx, s, dtype));
  ASSIGN_OR_RETURN(const std::optional<ValueId> structural,
                   StructuralBias(ctx, s, is_causal != 0, left_window, right_window, dtype));
  if (bias && structural) {
    ASSIGN_OR_RETURN(const Dims both,
                     ctx.Broadcast(ctx.value(*bias).dims, ctx.value(*structural).dims));
    ASSIGN_OR_RETURN(bias, ctx.EmitHelper("bias", "Add", {*bias, *structural}, {}, dtype, both));
  } else if (structural) {
    bias = structural;
  }
  if (bias) {
    ASSIGN_OR_RETURN(scores, ctx.EmitHelper("biased", "Add", {scores, *bias}, {}, dtype,
                                            s.scores()));
  }
  exposed.push_back(scores);

  ASSIGN_OR_RETURN(ValueId probs, ctx.EmitHelper("softmax", "Softmax", {scores},
                                                 {{"outer", s.batch * s.q_heads * s.q_seq},
                                                  {"axis_size", s.kv_seq},
                                                  {"inner", int64_t{1}}},
                                                 dtype, s.scores()));
  if (bias && MayMaskWholeRow(ctx.value(*bias))) {
    Dims row_dims = ctx.value(*bias).dims;
    const int64_t last = static_cast<int64_t>(row_dims.size()) - 1;
    row_dims.back() = 1;
    ASSIGN_OR_RETURN(const ValueId row_max,
                     ctx.EmitHelper("bias_row_max", "ReduceMax", {*bias},
                                    {{"axes", std::vector<int64_t>{last}},
                                     {"keepdims", int64_t{1}}},
                                    dtype, row_dims));
    const ValueId minus_infinity = FloatConstant(
        ctx, "row_minus_infinity", {}, {-std::numeric_limits<double>::infinity()}, dtype);
    ASSIGN_OR_RETURN(const ValueId row_masked,
                     ctx.EmitHelper("row_masked", "Equal", {row_max, minus_infinity}, {},
                                    DType::kBool, row_dims));
    const ValueId zero = FloatConstant(ctx, "row_zero", {}, {0.0}, dtype);
    ASSIGN_OR_RETURN(probs, ctx.EmitHelper("masked_rows_zero", "Where",
                                           {row_masked, zero, probs}, {}, dtype, s.scores()));
  }
  exposed.push_back(probs);
  RETURN_IF_ERROR(ctx.EmitForOutput(kQkMatmulOutput, "Identity", {exposed[mode]}, {}, dtype,
                                    s.scores()));

  ASSIGN_OR_RETURN(const ValueId v,
                   HeadsFirst(ctx, "v", ctx.input(2), s, s.kv_heads, s.kv_seq, s.v_head_size));
  ASSIGN_OR_RETURN(ValueId y, GroupedMatMul(ctx, "pv", probs, v, s, s.v_head_size));
  if (!s.three_d) {
    return ctx.EmitForOutput(0, "Identity", {y}, {}, dtype,
                             {s.batch, s.q_heads, s.q_seq, s.v_head_size});
  }
  ASSIGN_OR_RETURN(y, ctx.EmitHelper("y_seq_first", "Transpose", {y},
                                     {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, dtype,
                                     {s.batch, s.q_seq, s.q_heads, s.v_head_size}));
  return ctx.EmitForOutput(0, "Reshape", {y}, {}, dtype,
                           {s.batch, s.q_seq, s.q_heads * s.v_head_size});
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
  ops.push_back(OpDef{
      .name = "Attention",
      .family = "attention",
      .since_opset = 23,
      .attributes = {"is_causal", "kv_num_heads", "left_window_size", "q_num_heads",
                     "qk_matmul_output_mode", "right_window_size", "scale", "softcap",
                     "softmax_precision"},
      .arity = {{1, {3, 6}}, {24, {3, 7}}},
      .omissible_input = 3,
      .bind = BindAttention,
      .summary = "float32, float16, bfloat16, float64; bound into MatMul, Softmax and "
                 "elementwise ops; 3-D or 4-D, GQA, boolean or float mask, is_causal, "
                 "windows, softcap, qk_matmul_output modes 0-3; no KV cache inputs"});
  ops.back().input_names = {"Q", "K", "V", "attn_mask", "past_key", "past_value",
                            "nonpad_kv_seqlen"};
}

}  // namespace graphserve
