// Elementwise ops.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/elementwise_kernels.cc and
// runtime/cuda/elementwise_kernels.cc.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/elementwise_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

const std::vector<DType> kFloatTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                        DType::kFloat64};
// Every type with a sign: the arithmetic, Relu, Abs, Neg, Sign and PRelu
// (int32: token ids and the position arithmetic exports do on them).
const std::vector<DType> kFloatAndSignedIntTypes = {DType::kFloat32, DType::kFloat16,
                                                    DType::kBFloat16, DType::kFloat64,
                                                    DType::kInt64,   DType::kInt32};

absl::Status BindUnary(BindContext& ctx, std::vector<DType> allowed) {
  RETURN_IF_ERROR(ctx.CheckDType(0, std::move(allowed)));
  return ctx.EmitSimple({ctx.input(0)}, {}, ctx.in_dtype(0), ctx.in_dims(0));
}

struct FloatAttrDefault {
  const char* name;
  float onnx_default;
};

// A float activation (Elu, Selu, Celu, ThresholdedRelu): one input of a
// float type, its float attributes written out with ONNX's defaults.
absl::Status BindFloatActivation(BindContext& ctx, std::initializer_list<FloatAttrDefault> attrs) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  Attributes canonical;
  for (const FloatAttrDefault& attr : attrs) {
    ASSIGN_OR_RETURN(canonical[attr.name], ctx.FloatAttrOr(attr.name, attr.onnx_default));
  }
  return ctx.EmitSimple({ctx.input(0)}, std::move(canonical), ctx.in_dtype(0), ctx.in_dims(0));
}

// Celu divides by alpha.
absl::Status BindCelu(BindContext& ctx) {
  ASSIGN_OR_RETURN(const float alpha, ctx.FloatAttrOr("alpha", 1.0f));
  if (alpha == 0.0f) return ctx.Error("attribute alpha should not be 0");
  return BindFloatActivation(ctx, {{"alpha", 1.0f}});
}

// PRelu (opset 7 on): the slope broadcasts to X, not X to the slope.
absl::Status BindPRelu(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatAndSignedIntTypes));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  const Dims& x = ctx.in_dims(0);
  const std::optional<Dims> dims = BroadcastPair(x, ctx.in_dims(1));
  if (!dims || *dims != x) {
    return ctx.Error("slope ", DimsToString(ctx.in_dims(1)), " does not broadcast to X ",
                     DimsToString(x));
  }
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, {}, ctx.in_dtype(0), x);
}

absl::Status BindLeakyRelu(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttrOr("alpha", 0.01f));
  return ctx.EmitSimple({ctx.input(0)}, {{"alpha", alpha}}, ctx.in_dtype(0), ctx.in_dims(0));
}

// Two float32 or int64 inputs broadcast to one output of their dtype;
// `attrs` are the op's canonical attributes.
absl::Status BindBinary(BindContext& ctx, Attributes attrs) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatAndSignedIntTypes));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.in_dims(0), ctx.in_dims(1)));
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, std::move(attrs), ctx.in_dtype(0),
                        std::move(dims));
}

// fmod=0 (the sign of the divisor) is defined for integers, and from opset
// 28 for floats too (floor(a / b)); before 28 a float Mod must say fmod=1.
absl::Status BindMod(BindContext& ctx) {
  ASSIGN_OR_RETURN(int64_t fmod, ctx.IntAttrOr("fmod", 0));
  if (fmod != 0 && fmod != 1) return ctx.Error("attribute fmod should be 0 or 1, got ", fmod);
  if (fmod == 0 && IsFloatingDType(ctx.in_dtype(0)) && ctx.opset() < 28) {
    return ctx.Error("fmod=0 on floats needs opset 28 (the model imports ", ctx.opset(),
                     "); before it ONNX requires fmod=1 for float inputs");
  }
  return BindBinary(ctx, {{"fmod", fmod}});
}

// Pow allows an exponent of another type than the base; kernels see one
// dtype, so the exponent goes through a Cast first.
absl::Status BindPow(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatAndSignedIntTypes));
  RETURN_IF_ERROR(ctx.CheckDType(1, kFloatAndSignedIntTypes));
  const DType dtype = ctx.in_dtype(0);
  ValueId exponent = ctx.input(1);
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.in_dims(0), ctx.in_dims(1)));
  if (ctx.value(exponent).dtype != dtype) {
    ASSIGN_OR_RETURN(exponent,
                     ctx.EmitHelper("cast_exponent", "Cast", {exponent},
                                    {{"to", static_cast<int64_t>(dtype)}}, dtype, ctx.in_dims(1)));
  }
  return ctx.EmitSimple({ctx.input(0), exponent}, {}, dtype, std::move(dims));
}

// Max and Min: one input is Identity, n > 2 a chain of two-input nodes
// whose last link produces the model's output.
absl::Status BindVariadic(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatAndSignedIntTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  const DType dtype = ctx.in_dtype(0);
  if (ctx.num_inputs() == 1) {
    return ctx.EmitModelNode("Identity", {ctx.input(0)}, {},
                             {OutputSpec{"", dtype, ctx.in_dims(0)}});
  }
  ValueId acc = ctx.input(0);
  for (size_t i = 1; i + 1 < ctx.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.value(acc).dims, ctx.in_dims(i)));
    ASSIGN_OR_RETURN(acc, ctx.EmitHelper(absl::StrCat("chain_", i), ctx.op(), {acc, ctx.input(i)},
                                         {}, dtype, std::move(dims)));
  }
  const ValueId last = ctx.inputs().back();
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.value(acc).dims, ctx.value(last).dims));
  return ctx.EmitSimple({acc, last}, {}, dtype, std::move(dims));
}

absl::Status BindEqual(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.in_dims(0), ctx.in_dims(1)));
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, {}, DType::kBool, std::move(dims));
}

// Less, Greater, LessOrEqual, GreaterOrEqual: two inputs of one dtype (not
// bool), broadcast, to bool.
absl::Status BindOrderedCompare(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  if (ctx.in_dtype(0) == DType::kBool) {
    return ctx.Error("input 0 '", ctx.in(0).name, "' is bool, which ", ctx.op(),
                     " does not order");
  }
  return BindEqual(ctx);
}

// And, Or, Xor: two bool inputs, broadcast.
absl::Status BindLogical(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kBool}));
  return BindEqual(ctx);
}

// IsNaN and IsInf: a float input of any width to bool; IsInf's attributes
// written out with ONNX's defaults.
absl::Status BindFloatClass(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  Attributes attrs;
  if (ctx.op() == "IsInf") {
    ASSIGN_OR_RETURN(int64_t negative, ctx.IntAttrOr("detect_negative", 1));
    ASSIGN_OR_RETURN(int64_t positive, ctx.IntAttrOr("detect_positive", 1));
    attrs = {{"detect_negative", negative}, {"detect_positive", positive}};
  }
  return ctx.EmitSimple({ctx.input(0)}, std::move(attrs), DType::kBool, ctx.in_dims(0));
}

// Gelu (opset 20): approximate "none" (erf) or "tanh", canonical as
// approximate_tanh 0 or 1.
absl::Status BindGelu(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kFloatTypes));
  // Read in place: gcc 12 at -O2 warns falsely of a copied std::string here.
  bool tanh_form = false;
  if (auto it = ctx.attrs().find("approximate"); it != ctx.attrs().end()) {
    const std::string* value = std::get_if<std::string>(&it->second);
    if (value == nullptr || (*value != "none" && *value != "tanh")) {
      return ctx.Error("attribute approximate should be the string none or tanh");
    }
    tanh_form = *value == "tanh";
  }
  return ctx.EmitSimple({ctx.input(0)}, {{"approximate_tanh", int64_t{tanh_form}}},
                        ctx.in_dtype(0), ctx.in_dims(0));
}

absl::Status BindWhere(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, {DType::kBool}));
  RETURN_IF_ERROR(ctx.CheckSameDType(1, 2));
  ASSIGN_OR_RETURN(Dims xy, ctx.Broadcast(ctx.in_dims(1), ctx.in_dims(2)));
  ASSIGN_OR_RETURN(Dims dims, ctx.Broadcast(ctx.in_dims(0), xy));
  return ctx.EmitSimple({ctx.input(0), ctx.input(1), ctx.input(2)}, {}, ctx.in_dtype(1),
                        std::move(dims));
}

absl::Status BindCast(BindContext& ctx) {
  if (ctx.attrs().count("to") == 0) return ctx.Error("attribute 'to' is required");
  ASSIGN_OR_RETURN(int64_t to, ctx.IntAttrOr("to", 0));
  const absl::StatusOr<DType> to_dtype = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!to_dtype.ok()) {
    return absl::UnimplementedError(absl::StrCat("node '", ctx.name(), "' (Cast): target type ",
                                                 to, ": ", to_dtype.status().message()));
  }
  // saturate (opset 19) governs casts to the float8 types only, which have no
  // row in the datatype table: accepted (exporters write the default, 1) and
  // without effect on the types Cast converts here.
  ASSIGN_OR_RETURN(const int64_t saturate, ctx.IntAttrOr("saturate", 1));
  if (saturate != 0 && saturate != 1) {
    return ctx.Error("attribute saturate should be 0 or 1, got ", saturate);
  }
  // A Cast to its input's own type changes nothing, and is no node: the
  // precision pass leaves such Casts where a model's Cast up to float32
  // feeds converted nodes, as in the first attention of TorchScript's
  // .half() BERT, whose chain the Cast kept off the fused attention.
  if (*to_dtype == ctx.in_dtype(0)) return ctx.ForwardInput(0);
  return ctx.EmitSimple({ctx.input(0)}, {{"to", to}}, *to_dtype, ctx.in_dims(0));
}

// CastLike (opset 15): a Cast to the type of input 1, whose values are not
// read.
absl::Status BindCastLike(BindContext& ctx) {
  ASSIGN_OR_RETURN(const int64_t saturate, ctx.IntAttrOr("saturate", 1));
  if (saturate != 0 && saturate != 1) {
    return ctx.Error("attribute saturate should be 0 or 1, got ", saturate);
  }
  const DType to = ctx.in_dtype(1);
  if (to == ctx.in_dtype(0)) return ctx.ForwardInput(0);  // as Cast's
  return ctx.EmitModelNode("Cast", {ctx.input(0)}, {{"to", static_cast<int64_t>(to)}},
                           {{"", to, ctx.in_dims(0)}});
}

}  // namespace

void AddElementwiseOps(std::vector<OpDef>& ops) {
  constexpr const char* kAnyFloat = "float16, bfloat16, float32, float64";
  constexpr const char* kSignedTypesText = "float16, bfloat16, float32, float64, int64, int32";
  auto unary_float = [](BindContext& ctx) { return BindUnary(ctx, kFloatTypes); };
  auto unary_signed = [](BindContext& ctx) {
    return BindUnary(ctx, kFloatAndSignedIntTypes);
  };
  auto binary = [](BindContext& ctx) { return BindBinary(ctx, {}); };
  const Arity two{2, 2};
  const std::vector<ArityChange> binary_arity = {{1, two}};
  struct Unary {
    const char* name;
    BindRule bind;
    HostKernel host;
    const char* summary;
  };
  for (const Unary& u : std::initializer_list<Unary>{
           {"Sqrt", unary_float, HostSqrt, kAnyFloat},
           {"Exp", unary_float, HostExp, kAnyFloat},
           {"Log", unary_float, HostLog, kAnyFloat},
           {"Sigmoid", unary_float, HostSigmoid,
            "float16, bfloat16, float32, float64; x*Sigmoid(x) fused as SiLU after a Conv"},
           {"Tanh", unary_float, HostTanh, kAnyFloat},
           {"Erf", unary_float, HostErf, "float16, bfloat16, float32, float64; PyTorch's exact GELU chain fused on the GPU"},
           {"Reciprocal", unary_float, HostReciprocal, kAnyFloat},
           {"Relu", unary_signed, HostRelu,
            "float16, bfloat16, float32, float64, int64, int32; NaN propagates; fused into GEMM and Conv epilogues"},
           {"Abs", unary_signed, HostAbs, kSignedTypesText},
           {"Neg", unary_signed, HostNeg, kSignedTypesText},
       }) {
    ops.push_back(OpDef{.name = u.name,
                        .family = "elementwise",
                        .bind = u.bind,
                        .host = u.host,
                        .summary = u.summary});
  }
  // Float math on every float type (the 16-bit floats computed in float).
  auto unary_any_float = [](BindContext& ctx) { return BindUnary(ctx, kFloatTypes); };
  struct FloatUnary {
    const char* name;
    int64_t since;
    std::vector<std::string> attributes;
    BindRule bind;
    HostKernel host;
    std::string summary;
  };
  for (FloatUnary& u : std::vector<FloatUnary>{
           {"Floor", 1, {}, unary_any_float, HostFloor, kAnyFloat},
           {"Ceil", 1, {}, unary_any_float, HostCeil, kAnyFloat},
           {"Round", 11, {}, unary_any_float, HostRound,
            absl::StrCat(kAnyFloat, "; halves to even")},
           {"Sin", 7, {}, unary_any_float, HostSin, kAnyFloat},
           {"Cos", 7, {}, unary_any_float, HostCos, kAnyFloat},
           {"Softplus", 1, {}, unary_any_float, HostSoftplus,
            absl::StrCat(kAnyFloat, "; without overflow for large x")},
           {"Softsign", 1, {}, unary_any_float, HostSoftsign, kAnyFloat},
           {"Mish", 18, {}, unary_any_float, HostMish, kAnyFloat},
           {"Elu", 1, {"alpha"},
            [](BindContext& ctx) { return BindFloatActivation(ctx, {{"alpha", 1.0f}}); },
            HostElu, kAnyFloat},
           {"Selu", 1, {"alpha", "gamma"},
            [](BindContext& ctx) {
              return BindFloatActivation(ctx, {{"alpha", kSeluAlpha}, {"gamma", kSeluGamma}});
            },
            HostSelu, kAnyFloat},
           {"Celu", 12, {"alpha"}, BindCelu, HostCelu, kAnyFloat},
           {"ThresholdedRelu", 10, {"alpha"},
            [](BindContext& ctx) { return BindFloatActivation(ctx, {{"alpha", 1.0f}}); },
            HostThresholdedRelu, kAnyFloat},
       }) {
    ops.push_back(OpDef{.name = u.name,
                        .family = "elementwise",
                        .since_opset = u.since,
                        .attributes = std::move(u.attributes),
                        .bind = u.bind,
                        .host = u.host,
                        .summary = std::move(u.summary)});
  }
  ops.push_back(OpDef{
      .name = "Sign",
      .family = "elementwise",
      .since_opset = 9,
      .bind = [](BindContext& ctx) { return BindUnary(ctx, kFloatAndSignedIntTypes); },
      .host = HostSign,
      .summary = "float16, bfloat16, float32, float64, int64, int32; NaN stays NaN"});
  ops.push_back(OpDef{.name = "PRelu",
                      .family = "elementwise",
                      .since_opset = 7,
                      .arity = binary_arity,
                      .bind = BindPRelu,
                      .host = HostPRelu,
                      .kernel_inputs = two,
                      .summary = "float16, bfloat16, float32, float64, int64, int32; slope "
                                 "broadcast to X"});
  ops.back().input_names = {"X", "slope"};
  ops.push_back(OpDef{.name = "Gelu",
                      .family = "elementwise",
                      .since_opset = 20,
                      .attributes = {"approximate"},
                      .bind = BindGelu,
                      .host = HostGelu,
                      .summary = "float16, bfloat16, float32, float64; approximate none (erf) or tanh"});
  ops.push_back(OpDef{.name = "Not",
                      .family = "elementwise",
                      .bind = [](BindContext& ctx) { return BindUnary(ctx, {DType::kBool}); },
                      .host = HostNot,
                      .summary = "bool"});
  ops.push_back(OpDef{.name = "IsNaN",
                      .family = "elementwise",
                      .since_opset = 9,
                      .bind = BindFloatClass,
                      .host = HostIsNaN,
                      .summary = "float16, bfloat16, float32, float64; output bool"});
  ops.push_back(OpDef{.name = "IsInf",
                      .family = "elementwise",
                      .since_opset = 10,
                      .attributes = {"detect_negative", "detect_positive"},
                      .bind = BindFloatClass,
                      .host = HostIsInf,
                      .summary = "float16, bfloat16, float32, float64; output bool"});
  ops.push_back(OpDef{.name = "LeakyRelu",
                      .family = "elementwise",
                      .attributes = {"alpha"},
                      .bind = BindLeakyRelu,
                      .host = HostLeakyRelu,
                      .summary = "float16, bfloat16, float32, float64"});
  struct Binary {
    const char* name;
    int64_t since;
    BindRule bind;
    HostKernel host;
    const char* summary;
  };
  for (const Binary& b : std::initializer_list<Binary>{
           {"Add", 7, binary, HostAdd,
            "float16, bfloat16, float32, float64, int64, int32; numpy broadcasting; bias Adds fused into GEMM and Conv"},
           {"Sub", 7, binary, HostSub, "float16, bfloat16, float32, float64, int64, int32; numpy broadcasting"},
           {"Mul", 7, binary, HostMul, "float16, bfloat16, float32, float64, int64, int32; numpy broadcasting"},
           {"Div", 7, binary, HostDiv, "float16, bfloat16, float32, float64, int64, int32 (truncating); numpy broadcasting"},
           {"Pow", 7, BindPow, HostPow, "float16, bfloat16, float32, float64, int64, int32; exponent of another type is cast"},
           {"Equal", 7, BindEqual, HostEqual, "any dtype; output bool"},
           {"Less", 7, BindOrderedCompare, HostLess, "any dtype but bool; output bool"},
           {"Greater", 7, BindOrderedCompare, HostGreater, "any dtype but bool; output bool"},
           {"LessOrEqual", 12, BindOrderedCompare, HostLessOrEqual,
            "any dtype but bool; output bool"},
           {"GreaterOrEqual", 12, BindOrderedCompare, HostGreaterOrEqual,
            "any dtype but bool; output bool"},
           {"And", 7, BindLogical, HostAnd, "bool; numpy broadcasting"},
           {"Or", 7, BindLogical, HostOr, "bool; numpy broadcasting"},
           {"Xor", 7, BindLogical, HostXor, "bool; numpy broadcasting"},
       }) {
    ops.push_back(OpDef{.name = b.name,
                        .family = "elementwise",
                        .arity = binary_arity,
                        .bind = b.bind,
                        .host = b.host,
                        .kernel_inputs = two,
                        .summary = b.summary});
  }
  ops.push_back(OpDef{.name = "Mod",
                      .family = "elementwise",
                      .since_opset = 10,
                      .attributes = {"fmod"},
                      .arity = binary_arity,
                      .bind = BindMod,
                      .host = HostMod,
                      .kernel_inputs = two,
                      .summary = "float16, bfloat16, float32, float64, int64, int32; fmod=0 floors (floats: opset 28)"});
  for (auto [name, host] : {std::pair<const char*, HostKernel>{"Max", HostMax}, {"Min", HostMin}}) {
    ops.push_back(OpDef{.name = name,
                        .family = "elementwise",
                        .arity = {{1, {1, kVariadicInputs}}},
                        .bind = BindVariadic,
                        .host = host,
                        .kernel_inputs = two,
                        .summary = "float16, bfloat16, float32, float64, int64, int32; variadic; NaN propagates"});
  }
  ops.push_back(OpDef{.name = "Where",
                      .family = "elementwise",
                      .since_opset = 9,
                      .arity = {{1, {3, 3}}},
                      .bind = BindWhere,
                      .host = HostWhere,
                      .kernel_inputs = {3, 3},
                      .summary = "any dtype"});
  ops.push_back(OpDef{.name = "Cast",
                      .family = "elementwise",
                      .attributes = {"to", "saturate"},
                      .bind = BindCast,
                      .host = HostCast,
                      .summary = "between any two dtypes; float to integer truncates and "
                                 "saturates, NaN gives 0; rounds to nearest even"});
  ops.push_back(OpDef{.name = "CastLike",
                      .family = "elementwise",
                      .since_opset = 15,
                      .attributes = {"saturate"},
                      .arity = {{1, {2, 2}}},
                      .bind = BindCastLike,
                      .summary = "a Cast to input 1's dtype"});
  ops.back().input_names = {"input", "target_type"};
}

}  // namespace graphserve
