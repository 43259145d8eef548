// The elementwise family's CUDA kernels (runtime/ops/elementwise.cc): the
// unary ops, Cast, the binary arithmetic, comparison and logical ops and
// PRelu with broadcasting, and Where. Device code: op_kernels_unary.cu,
// op_kernels_binary.cu.

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/kernel_families.h"
#include "runtime/cuda/kernel_plan.h"
#include "runtime/cuda/op_kernels_launch.h"
#include "runtime/activation_defaults.h"

namespace graphserve {
namespace {

using kernel_plan::BroadcastStrides;
using kernel_plan::CheckDType;
using kernel_plan::CheckElementCount;
using kernel_plan::CheckSameDType;
using kernel_plan::ContiguousStrides;
using kernel_plan::DeviceInputs;
using kernel_plan::DeviceOutputs;
using kernel_plan::GetNodeValues;
using kernel_plan::Invalid;
using kernel_plan::MakeLayout;
using kernel_plan::MakeParamsKernel;
using kernel_plan::NodeValues;
using kernel_plan::UnaryKernel;
using op_kernels_internal::BinaryOp;
using op_kernels_internal::BinaryParams;
using op_kernels_internal::kMaxMappedInputs;
using op_kernels_internal::UnaryOp;
using op_kernels_internal::UnaryParams;
using op_kernels_internal::WhereParams;

cudaError_t EnqueueBinary(const BinaryParams& params, DeviceInputs inputs,
                          DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchBinary(params, inputs[0], inputs[1], outputs[0], stream);
}

cudaError_t EnqueueWhere(const WhereParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                         cudaStream_t stream) {
  return op_kernels_internal::LaunchWhere(params, inputs[0], inputs[1], inputs[2], outputs[0],
                                          stream);
}

struct UnaryOpInfo {
  const char* op_type;
  UnaryOp op;
  DTypeSet inputs;   // the input types its kernel takes
  bool bool_output;  // a test (Not, IsNaN, IsInf); else the input's type
};

// Every type with a sign: the arithmetic, Relu, Abs, Neg, Sign and PRelu.
constexpr DTypeSet kFloatsAndSignedIntegers = kFloatDTypes | DTypes({DType::kInt64, DType::kInt32});
constexpr DTypeSet kBool = DTypes({DType::kBool});
constexpr DTypeSet kOrdered = kAnyDType & ~kBool;

constexpr UnaryOpInfo kUnaryOps[] = {
    {"Sqrt", UnaryOp::kSqrt, kFloatDTypes, false},
    {"Exp", UnaryOp::kExp, kFloatDTypes, false},
    {"Log", UnaryOp::kLog, kFloatDTypes, false},
    {"Sigmoid", UnaryOp::kSigmoid, kFloatDTypes, false},
    {"Tanh", UnaryOp::kTanh, kFloatDTypes, false},
    {"Erf", UnaryOp::kErf, kFloatDTypes, false},
    {"LeakyRelu", UnaryOp::kLeakyRelu, kFloatDTypes, false},
    {"Relu", UnaryOp::kRelu, kFloatsAndSignedIntegers, false},
    {"Abs", UnaryOp::kAbs, kFloatsAndSignedIntegers, false},
    {"Neg", UnaryOp::kNeg, kFloatsAndSignedIntegers, false},
    {"Reciprocal", UnaryOp::kReciprocal, kFloatDTypes, false},
    {"Gelu", UnaryOp::kGelu, kFloatDTypes, false},  // kGeluTanh for approximate_tanh=1
    {"Not", UnaryOp::kNot, kBool, true},
    {"IsNaN", UnaryOp::kIsNaN, kFloatDTypes, true},
    {"IsInf", UnaryOp::kIsInf, kFloatDTypes, true},
    {"Floor", UnaryOp::kFloor, kFloatDTypes, false},
    {"Ceil", UnaryOp::kCeil, kFloatDTypes, false},
    {"Round", UnaryOp::kRound, kFloatDTypes, false},
    {"Sin", UnaryOp::kSin, kFloatDTypes, false},
    {"Cos", UnaryOp::kCos, kFloatDTypes, false},
    {"Softplus", UnaryOp::kSoftplus, kFloatDTypes, false},
    {"Softsign", UnaryOp::kSoftsign, kFloatDTypes, false},
    {"Mish", UnaryOp::kMish, kFloatDTypes, false},
    {"Elu", UnaryOp::kElu, kFloatDTypes, false},
    {"Selu", UnaryOp::kSelu, kFloatDTypes, false},
    {"Celu", UnaryOp::kCelu, kFloatDTypes, false},
    {"ThresholdedRelu", UnaryOp::kThresholdedRelu, kFloatDTypes, false},
    {"Sign", UnaryOp::kSign, kFloatsAndSignedIntegers, false},
};

struct BinaryOpInfo {
  const char* op_type;
  BinaryOp op;
  DTypeSet inputs;  // the type both inputs share
};

constexpr BinaryOpInfo kBinaryOps[] = {
    {"Add", BinaryOp::kAdd, kFloatsAndSignedIntegers},
    {"Sub", BinaryOp::kSub, kFloatsAndSignedIntegers},
    {"Mul", BinaryOp::kMul, kFloatsAndSignedIntegers},
    {"Div", BinaryOp::kDiv, kFloatsAndSignedIntegers},
    {"Pow", BinaryOp::kPow, kFloatsAndSignedIntegers},
    {"Max", BinaryOp::kMax, kFloatsAndSignedIntegers},
    {"Min", BinaryOp::kMin, kFloatsAndSignedIntegers},
    {"Mod", BinaryOp::kMod, kFloatsAndSignedIntegers},  // kFmod when the node has fmod=1, see MakeBinary
    {"Equal", BinaryOp::kEqual, kAnyDType},
    {"Less", BinaryOp::kLess, kOrdered},
    {"Greater", BinaryOp::kGreater, kOrdered},
    {"LessOrEqual", BinaryOp::kLessOrEqual, kOrdered},
    {"GreaterOrEqual", BinaryOp::kGreaterOrEqual, kOrdered},
    {"And", BinaryOp::kAnd, kBool},
    {"Or", BinaryOp::kOr, kBool},
    {"Xor", BinaryOp::kXor, kBool},
    {"PRelu", BinaryOp::kPRelu, kFloatsAndSignedIntegers},
};

// Ops with a bool output whatever their inputs' type.
constexpr bool IsBoolResult(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual ||
         op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}

// The row of `table` for `op_type` (the registry only calls a factory for
// the ops it was registered with, which are the table's).
template <typename Info, size_t kSize>
const Info& InfoOf(const Info (&table)[kSize], const std::string& op_type) {
  for (const Info& info : table) {
    if (op_type == info.op_type) return info;
  }
  return table[0];
}

// The activations' float attributes, with the host kernels' defaults
// (ONNX's) for a node built without them.
absl::Status ReadActivationAttributes(const BoundNode& node, UnaryParams& params) {
  const UnaryOp op = params.op;
  if (op == UnaryOp::kLeakyRelu) {
    ASSIGN_OR_RETURN(params.alpha, GetFloatAttr(node.attributes, "alpha", 0.01f));
  } else if (op == UnaryOp::kElu || op == UnaryOp::kCelu || op == UnaryOp::kThresholdedRelu) {
    ASSIGN_OR_RETURN(params.alpha, GetFloatAttr(node.attributes, "alpha", 1.0f));
  } else if (op == UnaryOp::kSelu) {
    ASSIGN_OR_RETURN(params.alpha, GetFloatAttr(node.attributes, "alpha", kSeluAlpha));
    ASSIGN_OR_RETURN(params.gamma, GetFloatAttr(node.attributes, "gamma", kSeluGamma));
  }
  if (op == UnaryOp::kCelu && params.alpha == 0.0f) {
    return Invalid(node, "Celu's alpha must not be 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeUnary(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  const UnaryOpInfo& info = InfoOf(kUnaryOps, node.op_type);
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  if (info.bool_output) {
    RETURN_IF_ERROR(CheckDType(node, out, kBool));
  } else {
    RETURN_IF_ERROR(CheckSameDType(node, in, out));
  }
  RETURN_IF_ERROR(CheckElementCount(node, out, NumElements(in.dims)));
  UnaryParams params;
  params.op = info.op;
  params.input_type = in.dtype;
  params.output_type = out.dtype;
  RETURN_IF_ERROR(ReadActivationAttributes(node, params));
  if (info.op == UnaryOp::kGelu) {
    ASSIGN_OR_RETURN(const int64_t tanh_form, GetIntAttr(node.attributes, "approximate_tanh", 0));
    if (tanh_form != 0) params.op = UnaryOp::kGeluTanh;
  }
  if (info.op == UnaryOp::kIsInf) {
    ASSIGN_OR_RETURN(const int64_t negative, GetIntAttr(node.attributes, "detect_negative", 1));
    ASSIGN_OR_RETURN(const int64_t positive, GetIntAttr(node.attributes, "detect_positive", 1));
    params.detect_negative = negative != 0;
    params.detect_positive = positive != 0;
  }
  params.layout = MakeLayout(out.dims, {ContiguousStrides(out.dims)});
  return std::make_unique<UnaryKernel>(node, params, 0);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCast(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  ASSIGN_OR_RETURN(const int64_t to, GetIntAttr(node.attributes, "to", -1));
  ASSIGN_OR_RETURN(const DType to_dtype, DTypeFromOnnx(static_cast<int32_t>(to)));
  if (to_dtype != out.dtype) {
    return Invalid(node, absl::StrCat("attribute to=", to, " disagrees with output dtype ",
                                      DTypeName(out.dtype)));
  }
  RETURN_IF_ERROR(CheckElementCount(node, out, NumElements(in.dims)));
  UnaryParams params;
  params.op = in.dtype == out.dtype ? UnaryOp::kCopy : UnaryOp::kCast;
  params.input_type = in.dtype;
  params.output_type = out.dtype;
  params.layout = MakeLayout(out.dims, {ContiguousStrides(out.dims)});
  return std::make_unique<UnaryKernel>(node, params, 0);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeBinary(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  const BinaryOpInfo& info = InfoOf(kBinaryOps, node.op_type);
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 2, 2, 1, 1));
  const BoundValue& a = *v.inputs[0];
  const BoundValue& b = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, a, b));
  if (IsBoolResult(info.op)) {
    RETURN_IF_ERROR(CheckDType(node, out, kBool));
  } else {
    RETURN_IF_ERROR(CheckSameDType(node, a, out));
  }
  if (info.op == BinaryOp::kPRelu && a.dims != out.dims) {
    return Invalid(node, absl::StrCat("X ", DimsToString(a.dims), " and Y ", DimsToString(out.dims),
                                      " differ: the slope broadcasts to X"));
  }
  BinaryOp op = info.op;
  if (op == BinaryOp::kMod) {
    // Note [Canonical bound nodes]: fmod=1 truncates, fmod=0 floors.
    ASSIGN_OR_RETURN(const int64_t fmod, GetIntAttr(node.attributes, "fmod", 0));
    if (fmod != 0 && fmod != 1) {
      return Invalid(node, absl::StrCat("attribute fmod should be 0 or 1, got ", fmod));
    }
    if (fmod == 1) op = BinaryOp::kFmod;
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> a_strides, BroadcastStrides(node, a, out.dims));
  ASSIGN_OR_RETURN(std::vector<int64_t> b_strides, BroadcastStrides(node, b, out.dims));
  BinaryParams params;
  params.op = op;
  params.input_type = a.dtype;
  params.layout = MakeLayout(out.dims, {std::move(a_strides), std::move(b_strides)});
  return MakeParamsKernel(node, params, EnqueueBinary, "LaunchBinary");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeWhere(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(context.graph, node, 3, 3, 1, 1));
  const BoundValue& cond = *v.inputs[0];
  const BoundValue& x = *v.inputs[1];
  const BoundValue& y = *v.inputs[2];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, cond, DTypes({DType::kBool})));
  RETURN_IF_ERROR(CheckSameDType(node, x, y));
  RETURN_IF_ERROR(CheckSameDType(node, x, out));
  ASSIGN_OR_RETURN(std::vector<int64_t> cond_strides, BroadcastStrides(node, cond, out.dims));
  ASSIGN_OR_RETURN(std::vector<int64_t> x_strides, BroadcastStrides(node, x, out.dims));
  ASSIGN_OR_RETURN(std::vector<int64_t> y_strides, BroadcastStrides(node, y, out.dims));
  static_assert(kMaxMappedInputs >= 3, "Where maps three inputs");
  WhereParams params;
  params.value_type = x.dtype;
  params.layout = MakeLayout(
      out.dims, {std::move(cond_strides), std::move(x_strides), std::move(y_strides)});
  return MakeParamsKernel(node, params, EnqueueWhere, "LaunchWhere");
}

}  // namespace

void AddElementwiseCudaKernels(CudaKernelDefs& defs) {
  for (const UnaryOpInfo& info : kUnaryOps) defs.push_back({info.op_type, info.inputs, MakeUnary});
  for (const BinaryOpInfo& info : kBinaryOps) {
    defs.push_back({info.op_type, info.inputs, MakeBinary});
  }
  defs.push_back({"Cast", kAnyDType, MakeCast});
  defs.push_back({"Where", kAnyDType, MakeWhere, /*typed_input=*/1});
}

}  // namespace graphserve
