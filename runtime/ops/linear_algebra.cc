// Gemm and MatMul.
// The OpDefs of this family (Note [Op registry] in runtime/op_registry.h) and
// their bind rules; the kernels are in runtime/host/linear_algebra_kernels.cc and
// runtime/cuda/linear_algebra_kernels.cc.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/linear_algebra_kernels.h"
#include "runtime/ops/families.h"

namespace graphserve {

namespace {

// The GEMMs' types: tensor-core inputs with float32 accumulation (Note
// [GEMM datatypes] in runtime/cuda/gemm.h), every operand one type.
const std::vector<DType> kGemmTypes = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

absl::Status BindGemm(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kGemmTypes));
  for (size_t i = 1; i < ctx.num_inputs(); ++i) RETURN_IF_ERROR(ctx.CheckSameDType(0, i));
  ASSIGN_OR_RETURN(int64_t trans_a, ctx.IntAttrOr("transA", 0));
  ASSIGN_OR_RETURN(int64_t trans_b, ctx.IntAttrOr("transB", 0));
  ASSIGN_OR_RETURN(float alpha, ctx.FloatAttrOr("alpha", 1.0f));
  ASSIGN_OR_RETURN(float beta, ctx.FloatAttrOr("beta", 1.0f));
  const Dims& a = ctx.in_dims(0);
  const Dims& b = ctx.in_dims(1);
  if (a.size() != 2 || b.size() != 2) {
    return ctx.Error("A and B should be 2-D, got ", DimsToString(a), " and ", DimsToString(b));
  }
  const int64_t m = trans_a ? a[1] : a[0];
  const int64_t k = trans_a ? a[0] : a[1];
  const int64_t k_b = trans_b ? b[1] : b[0];
  const int64_t n = trans_b ? b[0] : b[1];
  if (k != k_b) {
    return ctx.Error("inner dims differ: A ", DimsToString(a), " (transA=", trans_a, ") has K=", k,
                     ", B ", DimsToString(b), " (transB=", trans_b, ") has K=", k_b);
  }
  if (ctx.num_inputs() == 3) {
    const Dims& c = ctx.in_dims(2);
    std::optional<Dims> out = BroadcastPair(c, {m, n});
    if (c.size() > 2 || !out || *out != Dims{m, n}) {
      return ctx.Error("C ", DimsToString(c), " does not broadcast to [M,N] ",
                       DimsToString({m, n}));
    }
  }
  Attributes attrs = {{"transA", int64_t{trans_a != 0}},
                      {"transB", int64_t{trans_b != 0}},
                      {"alpha", alpha},
                      {"beta", beta}};
  return ctx.EmitSimple(ctx.inputs(), std::move(attrs), ctx.in_dtype(0), {m, n});
}

absl::Status BindMatMul(BindContext& ctx) {
  RETURN_IF_ERROR(ctx.CheckDType(0, kGemmTypes));
  RETURN_IF_ERROR(ctx.CheckSameDType(0, 1));
  Dims a = ctx.in_dims(0);
  Dims b = ctx.in_dims(1);
  if (a.empty() || b.empty()) {
    return ctx.Error("operands should have rank >= 1, got ", DimsToString(a), " and ",
                     DimsToString(b));
  }
  const bool a_vector = a.size() == 1;
  const bool b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  const int64_t k = a[a.size() - 1];
  const int64_t k_b = b[b.size() - 2];
  if (k != k_b) {
    return ctx.Error("inner dims differ: A ", DimsToString(ctx.in_dims(0)), " has K=", k, ", B ",
                     DimsToString(ctx.in_dims(1)), " has K=", k_b);
  }
  ASSIGN_OR_RETURN(Dims dims,
                   ctx.Broadcast(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2)));
  if (!a_vector) dims.push_back(a[a.size() - 2]);
  if (!b_vector) dims.push_back(b[b.size() - 1]);
  return ctx.EmitSimple({ctx.input(0), ctx.input(1)}, {}, ctx.in_dtype(0), std::move(dims));
}

}  // namespace

void AddLinearAlgebraOps(std::vector<OpDef>& ops) {
  ops.push_back(OpDef{.name = "Gemm",
                      .family = "linear_algebra",
                      .attributes = {"transA", "transB", "alpha", "beta"},
                      .arity = {{1, {2, 3}}},
                      .bind = BindGemm,
                      .host = HostGemm,
                      .kernel_inputs = {2, 3},
                      .summary = "float32, float16, bfloat16 on cuBLASLt (float32 accumulation); bias and Relu "
                                 "fused into the epilogue"});
  ops.push_back(OpDef{.name = "MatMul",
                      .family = "linear_algebra",
                      .arity = {{1, {2, 2}}},
                      .bind = BindMatMul,
                      .host = HostMatMul,
                      .kernel_inputs = {2, 2},
                      .summary = "float32, float16, bfloat16 on cuBLASLt (float32 accumulation); batch "
                                 "broadcasting"});
  AddEinsumOp(ops);
}

}  // namespace graphserve
