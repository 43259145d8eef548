#include "runtime/cuda/op_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve {
namespace {

using op_kernels_internal::BinaryOp;
using op_kernels_internal::BinaryParams;
using op_kernels_internal::ConcatLaunch;
using op_kernels_internal::CumSumParams;
using op_kernels_internal::GatherElementsParams;
using op_kernels_internal::GatherNDParams;
using op_kernels_internal::GatherParams;
using op_kernels_internal::kMaxConcatInputsPerLaunch;
using op_kernels_internal::kMaxMappedInputs;
using op_kernels_internal::kMaxRank;
using op_kernels_internal::LayerNormParams;
using op_kernels_internal::ReduceMeanParams;
using op_kernels_internal::SoftmaxParams;
using op_kernels_internal::StridedLayout;
using op_kernels_internal::TiledTransposeParams;
using op_kernels_internal::UnaryOp;
using op_kernels_internal::UnaryParams;
using op_kernels_internal::WhereParams;

// ------------------------------------------------------------ plan helpers

std::string NodeContext(const BoundNode& node) {
  return absl::StrCat("op '", node.name, "' (", node.op_type, ")");
}

absl::Status NodeError(absl::StatusCode code, const BoundNode& node, absl::string_view message) {
  return absl::Status(code, absl::StrCat(NodeContext(node), ": ", message));
}

absl::Status Invalid(const BoundNode& node, absl::string_view message) {
  return NodeError(absl::StatusCode::kInvalidArgument, node, message);
}

absl::Status Unsupported(const BoundNode& node, absl::string_view message) {
  return NodeError(absl::StatusCode::kUnimplemented, node, message);
}

std::vector<int64_t> ContiguousStrides(const Dims& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * dims[d - 1];
  return strides;
}

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t d = begin; d < end; ++d) product *= dims[d];
  return product;
}

// The node's inputs and outputs as values, after checking their counts, that
// every id is in range, and that no tensor exceeds kMaxRank. An output id
// below zero marks an optional output the model does not use.
struct NodeValues {
  std::vector<const BoundValue*> inputs;
  std::vector<const BoundValue*> outputs;  // null for an absent optional output
};

absl::StatusOr<NodeValues> GetNodeValues(const BoundGraph& graph, const BoundNode& node,
                                         size_t min_inputs, size_t max_inputs,
                                         size_t min_outputs, size_t max_outputs) {
  if (node.inputs.size() < min_inputs || node.inputs.size() > max_inputs) {
    return Invalid(node, absl::StrCat("expected ", min_inputs, "..", max_inputs,
                                      " inputs, got ", node.inputs.size()));
  }
  if (node.outputs.size() < min_outputs || node.outputs.size() > max_outputs) {
    return Invalid(node, absl::StrCat("expected ", min_outputs, "..", max_outputs,
                                      " outputs, got ", node.outputs.size()));
  }
  NodeValues values;
  auto check = [&](ValueId id, bool optional) -> absl::StatusOr<const BoundValue*> {
    if (id < 0 && optional) return nullptr;
    if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) {
      return Invalid(node, absl::StrCat("value id ", id, " out of range"));
    }
    const BoundValue& value = graph.value(id);
    if (value.dims.size() > static_cast<size_t>(kMaxRank)) {
      return Unsupported(node, absl::StrCat("value '", value.name, "' has rank ",
                                            value.dims.size(), "; the kernels index at most ",
                                            kMaxRank, " dims"));
    }
    for (int64_t dim : value.dims) {
      if (dim < 0) {
        return Invalid(node, absl::StrCat("value '", value.name, "' has dims ",
                                          DimsToString(value.dims), "; bound dims are concrete"));
      }
    }
    return &value;
  };
  for (ValueId id : node.inputs) {
    ASSIGN_OR_RETURN(const BoundValue* value, check(id, /*optional=*/false));
    values.inputs.push_back(value);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ASSIGN_OR_RETURN(const BoundValue* value, check(node.outputs[i], /*optional=*/i > 0));
    values.outputs.push_back(value);
  }
  return values;
}

// A set of rows of the datatype table, as bits by ONNX id (each below 32).
using DTypeSet = uint32_t;
constexpr DTypeSet DTypes(std::initializer_list<DType> dtypes) {
  DTypeSet set = 0;
  for (DType dtype : dtypes) set |= DTypeSet{1} << static_cast<int>(dtype);
  return set;
}
constexpr bool Contains(DTypeSet set, DType dtype) {
  return (set >> static_cast<int>(dtype)) & 1;
}
constexpr DTypeSet kFloatTypes =
    DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64});

absl::Status CheckDType(const BoundNode& node, const BoundValue& value, DTypeSet allowed) {
  if (Contains(allowed, value.dtype)) return absl::OkStatus();
  return Unsupported(node, absl::StrCat("no kernel for dtype ", DTypeName(value.dtype),
                                        " of value '", value.name, "'"));
}

absl::Status CheckSameDType(const BoundNode& node, const BoundValue& a, const BoundValue& b) {
  if (a.dtype == b.dtype) return absl::OkStatus();
  return Invalid(node, absl::StrCat("values '", a.name, "' (", DTypeName(a.dtype), ") and '",
                                    b.name, "' (", DTypeName(b.dtype),
                                    ") must share a dtype"));
}

absl::Status CheckElementCount(const BoundNode& node, const BoundValue& value, int64_t expected) {
  if (NumElements(value.dims) == expected) return absl::OkStatus();
  return Invalid(node, absl::StrCat("value '", value.name, "' has dims ",
                                    DimsToString(value.dims), ", expected ", expected,
                                    " elements"));
}

// Strides (in elements) with which `input` is read when broadcast
// (multidirectionally, right-aligned) to `out`: 0 along broadcast dims.
absl::StatusOr<std::vector<int64_t>> BroadcastStrides(const BoundNode& node,
                                                      const BoundValue& input, const Dims& out) {
  const Dims& in = input.dims;
  if (in.size() > out.size()) {
    return Invalid(node, absl::StrCat("input '", input.name, "' ", DimsToString(in),
                                      " has more dims than the output ", DimsToString(out)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in);
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i]) {
      strides[lead + i] = in_strides[i];
    } else if (in[i] != 1) {
      return Invalid(node, absl::StrCat("input '", input.name, "' ", DimsToString(in),
                                        " does not broadcast to ", DimsToString(out)));
    }
  }
  return strides;
}

// Dims with one stride list per operand, outermost first.
struct StridedDims {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

// Drops dims of size 1 and merges each dim into its outer neighbour where
// every operand walks the pair as one contiguous run (Note [Strided
// layouts]). Never returns rank 0: a single element is one dim of size 1.
StridedDims MergeDims(const std::vector<int64_t>& dims,
                      const std::vector<std::vector<int64_t>>& strides) {
  StridedDims merged;
  merged.strides.resize(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    bool mergeable = !merged.dims.empty();
    for (size_t k = 0; k < strides.size() && mergeable; ++k) {
      mergeable = merged.strides[k].back() == strides[k][d] * dims[d];
    }
    if (mergeable) {
      merged.dims.back() *= dims[d];
      for (size_t k = 0; k < strides.size(); ++k) merged.strides[k].back() = strides[k][d];
    } else {
      merged.dims.push_back(dims[d]);
      for (size_t k = 0; k < strides.size(); ++k) merged.strides[k].push_back(strides[k][d]);
    }
  }
  if (merged.dims.empty()) {
    merged.dims.push_back(1);
    for (auto& s : merged.strides) s.push_back(1);
  }
  return merged;
}

// The launch layout for a dense output of `out_dims` read through
// `input_strides` (one list of out_dims.size() strides per input).
StridedLayout MakeLayout(const Dims& out_dims,
                         const std::vector<std::vector<int64_t>>& input_strides) {
  StridedLayout layout;
  layout.num_elements = NumElements(out_dims);
  layout.index32 = layout.num_elements <= INT32_MAX;
  const StridedDims merged = MergeDims(out_dims, input_strides);
  // Merging never increases the rank, which the caller has bounded.
  layout.rank = static_cast<int32_t>(merged.dims.size());
  layout.contiguous = merged.dims.size() == 1;
  for (size_t d = 0; d < merged.dims.size(); ++d) layout.dims[d] = merged.dims[d];
  for (size_t k = 0; k < input_strides.size(); ++k) {
    for (size_t d = 0; d < merged.dims.size(); ++d) {
      layout.strides[k][d] = merged.strides[k][d];
    }
    layout.contiguous = layout.contiguous && merged.strides[k][0] == 1;
  }
  return layout;
}

// ------------------------------------------------------------------ kernels

// Checks the arity of each Enqueue against the node and turns launch errors
// into Statuses that name the node.
class NodeKernel : public CudaOpKernel {
 protected:
  explicit NodeKernel(const BoundNode& node)
      : context_(NodeContext(node)),
        num_inputs_(node.inputs.size()),
        num_outputs_(node.outputs.size()) {}

  absl::Status CheckArity(absl::Span<const void* const> inputs,
                          absl::Span<void* const> outputs) const {
    if (inputs.size() == num_inputs_ && outputs.size() == num_outputs_) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(context_, ": Enqueue got ", inputs.size(), " inputs and ", outputs.size(),
                     " outputs, the node has ", num_inputs_, " and ", num_outputs_));
  }

  absl::Status LaunchStatus(cudaError_t error, absl::string_view call) const {
    return AnnotateStatus(CudaErrorToStatus(error, call), context_);
  }

 private:
  std::string context_;
  size_t num_inputs_;
  size_t num_outputs_;
};

class UnaryKernel final : public NodeKernel {
 public:
  // `input_offset_bytes` moves the input pointer to the first element read
  // (a Slice's start).
  UnaryKernel(const BoundNode& node, const UnaryParams& params, int64_t input_offset_bytes)
      : NodeKernel(node), params_(params), input_offset_bytes_(input_offset_bytes) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    const void* input = static_cast<const std::byte*>(inputs[0]) + input_offset_bytes_;
    return LaunchStatus(op_kernels_internal::LaunchUnary(params_, input, outputs[0], stream),
                        "LaunchUnary");
  }

 private:
  UnaryParams params_;
  int64_t input_offset_bytes_;
};

// Identity, Reshape, Flatten, Squeeze, Unsqueeze: the same bytes. Executors
// usually alias these; when they do not, one device-to-device copy.
class ByteCopyKernel final : public NodeKernel {
 public:
  ByteCopyKernel(const BoundNode& node, size_t bytes) : NodeKernel(node), bytes_(bytes) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    if (bytes_ == 0 || inputs[0] == outputs[0]) return absl::OkStatus();
    return LaunchStatus(cudaMemcpyAsync(outputs[0], inputs[0], bytes_,
                                        cudaMemcpyDeviceToDevice, stream),
                        absl::StrCat("cudaMemcpyAsync of ", bytes_, " bytes"));
  }

 private:
  size_t bytes_;
};

class LayerNormKernel final : public NodeKernel {
 public:
  // `has_mean` / `has_inv_std_dev`: whether output 1 / 2 is used.
  LayerNormKernel(const BoundNode& node, const LayerNormParams& params, bool has_mean,
                  bool has_inv_std_dev)
      : NodeKernel(node),
        params_(params),
        has_bias_(node.inputs.size() == 3),
        has_mean_(has_mean),
        has_inv_std_dev_(has_inv_std_dev) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* mean = has_mean_ ? static_cast<float*>(outputs[1]) : nullptr;
    float* inv_std_dev = has_inv_std_dev_ ? static_cast<float*>(outputs[2]) : nullptr;
    return LaunchStatus(op_kernels_internal::LaunchLayerNorm(
                            params_, static_cast<const float*>(inputs[0]),
                            static_cast<const float*>(inputs[1]), bias,
                            static_cast<float*>(outputs[0]), mean, inv_std_dev, stream),
                        "LaunchLayerNorm");
  }

 private:
  LayerNormParams params_;
  bool has_bias_;
  bool has_mean_;
  bool has_inv_std_dev_;
};

class ConcatKernel final : public NodeKernel {
 public:
  // launches[j] copies inputs first_input[j] .. first_input[j] + count - 1.
  ConcatKernel(const BoundNode& node, std::vector<ConcatLaunch> launches,
               std::vector<size_t> first_input)
      : NodeKernel(node), launches_(std::move(launches)), first_input_(std::move(first_input)) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    for (size_t j = 0; j < launches_.size(); ++j) {
      ConcatLaunch launch = launches_[j];
      for (int k = 0; k < launch.count; ++k) launch.inputs[k] = inputs[first_input_[j] + k];
      RETURN_IF_ERROR(LaunchStatus(op_kernels_internal::LaunchConcat(launch, outputs[0], stream),
                                   "LaunchConcat"));
    }
    return absl::OkStatus();
  }

 private:
  std::vector<ConcatLaunch> launches_;
  std::vector<size_t> first_input_;
};

// The device pointers an Enqueue receives, in the node's order.
using DeviceInputs = absl::Span<const void* const>;
using DeviceOutputs = absl::Span<void* const>;

// One launch of an op_kernels_internal kernel with `params` on the node's
// device pointers.
template <typename Params>
using ParamsLaunch = cudaError_t (*)(const Params& params, DeviceInputs inputs,
                                     DeviceOutputs outputs, cudaStream_t stream);

// A node whose Enqueue is a single launch configured by `params`; `call`
// (a string literal) names the launch in errors.
template <typename Params>
class ParamsKernel final : public NodeKernel {
 public:
  ParamsKernel(const BoundNode& node, const Params& params, ParamsLaunch<Params> launch,
               const char* call)
      : NodeKernel(node), params_(params), launch_(launch), call_(call) {}

  absl::Status Enqueue(DeviceInputs inputs, DeviceOutputs outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    return LaunchStatus(launch_(params_, inputs, outputs, stream), call_);
  }

 private:
  Params params_;
  ParamsLaunch<Params> launch_;
  const char* call_;
};

template <typename Params>
std::unique_ptr<CudaOpKernel> MakeParamsKernel(const BoundNode& node, const Params& params,
                                               ParamsLaunch<Params> launch, const char* call) {
  return std::make_unique<ParamsKernel<Params>>(node, params, launch, call);
}

// The ParamsLaunch of each single-launch op.

cudaError_t EnqueueBinary(const BinaryParams& params, DeviceInputs inputs,
                          DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchBinary(params, inputs[0], inputs[1], outputs[0], stream);
}

cudaError_t EnqueueWhere(const WhereParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                         cudaStream_t stream) {
  return op_kernels_internal::LaunchWhere(params, inputs[0], inputs[1], inputs[2], outputs[0],
                                          stream);
}

cudaError_t EnqueueTiledTranspose(const TiledTransposeParams& params, DeviceInputs inputs,
                                  DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchTiledTranspose(params, inputs[0], outputs[0], stream);
}

cudaError_t EnqueueSoftmax(const SoftmaxParams& params, DeviceInputs inputs,
                           DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchSoftmax(params, static_cast<const float*>(inputs[0]),
                                            static_cast<float*>(outputs[0]), stream);
}

cudaError_t EnqueueReduceMean(const ReduceMeanParams& params, DeviceInputs inputs,
                              DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchReduceMean(params, static_cast<const float*>(inputs[0]),
                                               static_cast<float*>(outputs[0]), stream);
}

cudaError_t EnqueueGather(const GatherParams& params, DeviceInputs inputs,
                          DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGather(params, inputs[0],
                                           static_cast<const int64_t*>(inputs[1]), outputs[0],
                                           stream);
}

cudaError_t EnqueueGatherElements(const GatherElementsParams& params, DeviceInputs inputs,
                                  DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGatherElements(
      params, inputs[0], static_cast<const int64_t*>(inputs[1]), outputs[0], stream);
}

cudaError_t EnqueueGatherND(const GatherNDParams& params, DeviceInputs inputs,
                            DeviceOutputs outputs, cudaStream_t stream) {
  return op_kernels_internal::LaunchGatherND(params, inputs[0],
                                             static_cast<const int64_t*>(inputs[1]), outputs[0],
                                             stream);
}

cudaError_t EnqueueCumSum(const CumSumParams& params, DeviceInputs inputs, DeviceOutputs outputs,
                          cudaStream_t stream) {
  return op_kernels_internal::LaunchCumSum(params, inputs[0], outputs[0], stream);
}

// ------------------------------------------------------------ per-op plans

struct UnaryOpInfo {
  const char* op_type;
  UnaryOp op;
  DTypeSet inputs;   // the input types its kernel takes
  bool bool_output;  // a test (Not, IsNaN, IsInf); else the input's type
};

constexpr DTypeSet kFloat32 = DTypes({DType::kFloat32});
// The signed types the arithmetic kernels take.
constexpr DTypeSet kSigned = DTypes({DType::kFloat32, DType::kInt64, DType::kInt32});
constexpr DTypeSet kBool = DTypes({DType::kBool});

constexpr UnaryOpInfo kUnaryOps[] = {
    {"Sqrt", UnaryOp::kSqrt, kFloat32, false},
    {"Exp", UnaryOp::kExp, kFloat32, false},
    {"Log", UnaryOp::kLog, kFloat32, false},
    {"Sigmoid", UnaryOp::kSigmoid, kFloat32, false},
    {"Tanh", UnaryOp::kTanh, kFloat32, false},
    {"Erf", UnaryOp::kErf, kFloat32, false},
    {"LeakyRelu", UnaryOp::kLeakyRelu, kFloat32, false},
    {"Relu", UnaryOp::kRelu, kSigned, false},
    {"Abs", UnaryOp::kAbs, kSigned, false},
    {"Neg", UnaryOp::kNeg, kSigned, false},
    {"Reciprocal", UnaryOp::kReciprocal, kFloat32, false},
    {"Gelu", UnaryOp::kGelu, kFloat32, false},  // kGeluTanh for approximate_tanh=1
    {"Not", UnaryOp::kNot, kBool, true},
    {"IsNaN", UnaryOp::kIsNaN, kFloatTypes, true},
    {"IsInf", UnaryOp::kIsInf, kFloatTypes, true},
};

struct BinaryOpInfo {
  const char* op_type;
  BinaryOp op;
};

constexpr BinaryOpInfo kBinaryOps[] = {
    {"Add", BinaryOp::kAdd}, {"Sub", BinaryOp::kSub}, {"Mul", BinaryOp::kMul},
    {"Div", BinaryOp::kDiv}, {"Pow", BinaryOp::kPow}, {"Max", BinaryOp::kMax},
    {"Min", BinaryOp::kMin}, {"Equal", BinaryOp::kEqual},
    {"Less", BinaryOp::kLess}, {"Greater", BinaryOp::kGreater},
    {"LessOrEqual", BinaryOp::kLessOrEqual}, {"GreaterOrEqual", BinaryOp::kGreaterOrEqual},
    {"And", BinaryOp::kAnd}, {"Or", BinaryOp::kOr}, {"Xor", BinaryOp::kXor},
    {"Mod", BinaryOp::kMod},  // kFmod when the node has fmod=1, see MakeBinary
};

// Ops with a bool output whatever their inputs' type.
constexpr bool IsBoolResult(BinaryOp op) {
  return op == BinaryOp::kEqual || op == BinaryOp::kLess || op == BinaryOp::kGreater ||
         op == BinaryOp::kLessOrEqual || op == BinaryOp::kGreaterOrEqual ||
         op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeUnary(const BoundGraph& graph,
                                                        const BoundNode& node,
                                                        const UnaryOpInfo& info) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, in, info.inputs));
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
  if (info.op == UnaryOp::kLeakyRelu) {
    ASSIGN_OR_RETURN(params.alpha, GetFloatAttr(node.attributes, "alpha", 0.01f));
  }
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

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCast(const BoundGraph& graph,
                                                       const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
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

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeBinary(const BoundGraph& graph,
                                                         const BoundNode& node,
                                                         const BinaryOpInfo& info) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 2, 2, 1, 1));
  const BoundValue& a = *v.inputs[0];
  const BoundValue& b = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, a, b));
  if (IsBoolResult(info.op)) {
    RETURN_IF_ERROR(CheckDType(node, out, kBool));
    const bool logical =
        info.op == BinaryOp::kAnd || info.op == BinaryOp::kOr || info.op == BinaryOp::kXor;
    if (logical) RETURN_IF_ERROR(CheckDType(node, a, kBool));
    if (!logical && info.op != BinaryOp::kEqual) RETURN_IF_ERROR(CheckDType(node, a, ~kBool));
  } else {
    RETURN_IF_ERROR(CheckDType(node, a, kSigned));
    RETURN_IF_ERROR(CheckSameDType(node, a, out));
  }
  BinaryOp op = info.op;
  if (op == BinaryOp::kMod) {
    // Note [Canonical bound nodes]: fmod=1 for both dtypes, fmod=0 for int64.
    ASSIGN_OR_RETURN(const int64_t fmod, GetIntAttr(node.attributes, "fmod", 0));
    if (fmod != 0 && fmod != 1) {
      return Invalid(node, absl::StrCat("attribute fmod should be 0 or 1, got ", fmod));
    }
    if (fmod == 0 && a.dtype == DType::kFloat32) {
      return Invalid(node, absl::StrCat("fmod=0 is integer modulo; value '", a.name, "' is ",
                                        DTypeName(a.dtype)));
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

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeWhere(const BoundGraph& graph,
                                                        const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 3, 3, 1, 1));
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

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeByteCopy(const BoundGraph& graph,
                                                           const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  RETURN_IF_ERROR(CheckElementCount(node, out, NumElements(in.dims)));
  return std::make_unique<ByteCopyKernel>(node, out.bytes());
}

// A copy of `dtype` elements into a contiguous output of `out_dims`, reading
// the input with `in_strides` (elements, one per output dim): the one
// mechanism behind Expand, Transpose and Slice.
UnaryParams StridedCopyParams(DType dtype, const Dims& out_dims, std::vector<int64_t> in_strides) {
  UnaryParams params;
  params.op = UnaryOp::kCopy;
  params.input_type = params.output_type = dtype;
  params.layout = MakeLayout(out_dims, {std::move(in_strides)});
  return params;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeExpand(const BoundGraph& graph,
                                                         const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, BroadcastStrides(node, in, out.dims));
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  return std::make_unique<UnaryKernel>(node, params, 0);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeTranspose(const BoundGraph& graph,
                                                            const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const std::vector<int64_t>& perm = IntsAttr(node.attributes, "perm");
  const size_t rank = in.dims.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank && out.dims.size() == rank;
  for (size_t d = 0; valid && d < perm.size(); ++d) {
    valid = perm[d] >= 0 && static_cast<size_t>(perm[d]) < rank && !seen[perm[d]] &&
            out.dims[d] == in.dims[perm[d]];
    if (valid) seen[perm[d]] = true;
  }
  if (!valid) {
    return Invalid(node, absl::StrCat("perm [", absl::StrJoin(perm, ","), "] does not map ",
                                      DimsToString(in.dims), " to ", DimsToString(out.dims)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  std::vector<int64_t> strides(rank);
  for (size_t d = 0; d < rank; ++d) strides[d] = in_strides[perm[d]];
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  // After merging, a swap of the two innermost dims is output [batch, rows,
  // cols] read with strides [rows * cols, 1, rows]: the strided map would
  // read with stride `rows`, so tile through shared memory instead.
  const StridedLayout& l = params.layout;
  const int r = l.rank;
  if (r == 2 || r == 3) {
    TiledTransposeParams tiled;
    tiled.elem_size = static_cast<int32_t>(DTypeSize(in.dtype));
    tiled.batch = r == 3 ? l.dims[0] : 1;
    tiled.rows = l.dims[r - 2];
    tiled.cols = l.dims[r - 1];
    const bool swaps_inner = l.strides[0][r - 2] == 1 && l.strides[0][r - 1] == tiled.rows &&
                             (r == 2 || l.strides[0][0] == tiled.rows * tiled.cols);
    if (swaps_inner && op_kernels_internal::TiledTransposeFits(tiled)) {
      return MakeParamsKernel(node, tiled, EnqueueTiledTranspose,
                              "LaunchTiledTranspose");
    }
  }
  return std::make_unique<UnaryKernel>(node, params, 0);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeSlice(const BoundGraph& graph,
                                                        const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const std::vector<int64_t>& starts = IntsAttr(node.attributes, "starts");
  const std::vector<int64_t>& steps = IntsAttr(node.attributes, "steps");
  const size_t rank = in.dims.size();
  if (starts.size() != rank || steps.size() != rank || out.dims.size() != rank) {
    return Invalid(node, absl::StrCat("starts [", absl::StrJoin(starts, ","), "] and steps [",
                                      absl::StrJoin(steps, ","), "] must give one entry per dim of ",
                                      DimsToString(in.dims), " and ", DimsToString(out.dims)));
  }
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  std::vector<int64_t> strides(rank);
  int64_t base = 0;
  const bool empty = NumElements(out.dims) == 0;
  for (size_t d = 0; d < rank; ++d) {
    // Every element read must lie inside the input: the first and the last
    // index along each dim.
    const int64_t last = starts[d] + (out.dims[d] - 1) * steps[d];
    if (!empty && (steps[d] == 0 || starts[d] < 0 || starts[d] >= in.dims[d] || last < 0 ||
                   last >= in.dims[d])) {
      return Invalid(node, absl::StrCat("dim ", d, ": start ", starts[d], ", step ", steps[d],
                                        " and count ", out.dims[d], " leave the input dim ",
                                        in.dims[d]));
    }
    strides[d] = in_strides[d] * steps[d];
    base += starts[d] * in_strides[d];
  }
  UnaryParams params = StridedCopyParams(in.dtype, out.dims, std::move(strides));
  const int64_t base_bytes = empty ? 0 : base * static_cast<int64_t>(DTypeSize(in.dtype));
  return std::make_unique<UnaryKernel>(node, params, base_bytes);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeSoftmax(const BoundGraph& graph,
                                                          const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, in, DTypes({DType::kFloat32})));
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  SoftmaxParams params;
  params.outer = IntAttr(node.attributes, "outer");
  params.axis_size = IntAttr(node.attributes, "axis_size");
  params.inner = IntAttr(node.attributes, "inner");
  if (params.outer < 0 || params.axis_size < 0 || params.inner < 0) {
    return Invalid(node, "outer, axis_size and inner must be non-negative");
  }
  const int64_t count = params.outer * params.axis_size * params.inner;
  RETURN_IF_ERROR(CheckElementCount(node, in, count));
  RETURN_IF_ERROR(CheckElementCount(node, out, count));
  return MakeParamsKernel(node, params, EnqueueSoftmax, "LaunchSoftmax");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeLayerNorm(const BoundGraph& graph,
                                                            const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 2, 3, 1, 3));
  LayerNormParams params;
  params.rows = IntAttr(node.attributes, "outer");
  params.cols = IntAttr(node.attributes, "inner");
  ASSIGN_OR_RETURN(params.epsilon, GetFloatAttr(node.attributes, "epsilon", 1e-5f));
  if (params.rows < 0 || params.cols < 0) {
    return Invalid(node, "outer and inner must be non-negative");
  }
  for (const BoundValue* value : v.inputs) {
    RETURN_IF_ERROR(CheckDType(node, *value, DTypes({DType::kFloat32})));
  }
  RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[0], params.rows * params.cols));
  for (size_t i = 1; i < v.inputs.size(); ++i) {
    RETURN_IF_ERROR(CheckElementCount(node, *v.inputs[i], params.cols));
  }
  for (size_t i = 0; i < v.outputs.size(); ++i) {
    if (v.outputs[i] == nullptr) continue;
    RETURN_IF_ERROR(CheckDType(node, *v.outputs[i], DTypes({DType::kFloat32})));
    RETURN_IF_ERROR(
        CheckElementCount(node, *v.outputs[i], i == 0 ? params.rows * params.cols : params.rows));
  }
  const bool has_mean = v.outputs.size() > 1 && v.outputs[1] != nullptr;
  const bool has_inv_std_dev = v.outputs.size() > 2 && v.outputs[2] != nullptr;
  return std::make_unique<LayerNormKernel>(node, params, has_mean, has_inv_std_dev);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeReduceMean(const BoundGraph& graph,
                                                             const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(node, in, DTypes({DType::kFloat32})));
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  const std::vector<int64_t>& axes = IntsAttr(node.attributes, "axes");
  const size_t rank = in.dims.size();
  std::vector<bool> reduced(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || static_cast<size_t>(axes[i]) >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      return Invalid(node, absl::StrCat("axes [", absl::StrJoin(axes, ","),
                                        "] must be sorted, distinct and within rank ", rank));
    }
    reduced[axes[i]] = true;
  }
  if (axes.empty() && rank > 0) return Invalid(node, "axes must not be empty");
  const std::vector<int64_t> in_strides = ContiguousStrides(in.dims);
  Dims kept_dims;
  Dims reduced_dims;
  std::vector<int64_t> kept_strides;
  std::vector<int64_t> reduced_strides;
  for (size_t d = 0; d < rank; ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(in.dims[d]);
    (reduced[d] ? reduced_strides : kept_strides).push_back(in_strides[d]);
  }
  ReduceMeanParams params;
  params.num_outputs = NumElements(kept_dims);
  params.reduce_count = NumElements(reduced_dims);
  RETURN_IF_ERROR(CheckElementCount(node, out, params.num_outputs));
  if (params.reduce_count == 0 && params.num_outputs > 0) {
    return Unsupported(node, "ReduceMean over zero elements");
  }
  const StridedDims kept = MergeDims(kept_dims, {kept_strides});
  const StridedDims reduced_merged = MergeDims(reduced_dims, {reduced_strides});
  params.kept_rank = static_cast<int32_t>(kept.dims.size());
  for (size_t d = 0; d < kept.dims.size(); ++d) {
    params.kept_dims[d] = kept.dims[d];
    // MergeDims gives a lone size-1 dim stride 1; it is only ever indexed at 0.
    params.kept_strides[d] = kept.strides[0][d];
  }
  params.reduced_rank = static_cast<int32_t>(reduced_merged.dims.size());
  for (size_t d = 0; d < reduced_merged.dims.size(); ++d) {
    params.reduced_dims[d] = reduced_merged.dims[d];
    params.reduced_strides[d] = reduced_merged.strides[0][d];
  }
  // Row-major [num_outputs, reduce_count]: the reduced elements of output t
  // are the reduce_count elements starting at t * reduce_count.
  params.rows_contiguous =
      params.reduced_rank == 1 && params.reduced_strides[0] == 1 &&
      (params.num_outputs == 1 ||
       (params.kept_rank == 1 && params.kept_strides[0] == params.reduce_count));
  return MakeParamsKernel(node, params, EnqueueReduceMean, "LaunchReduceMean");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeConcat(const BoundGraph& graph,
                                                         const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, SIZE_MAX, 1, 1));
  const BoundValue& out = *v.outputs[0];
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = out.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside rank ", rank));
  }
  int64_t axis_total = 0;
  for (const BoundValue* in : v.inputs) {
    RETURN_IF_ERROR(CheckSameDType(node, *in, out));
    bool matches = in->dims.size() == rank;
    for (size_t d = 0; matches && d < rank; ++d) {
      matches = static_cast<int64_t>(d) == axis || in->dims[d] == out.dims[d];
    }
    if (!matches) {
      return Invalid(node, absl::StrCat("input '", in->name, "' ", DimsToString(in->dims),
                                        " does not fit output ", DimsToString(out.dims),
                                        " along axis ", axis));
    }
    axis_total += in->dims[axis];
  }
  if (axis_total != out.dims[axis]) {
    return Invalid(node, absl::StrCat("inputs add up to ", axis_total, " along axis ", axis,
                                      ", the output has ", out.dims[axis]));
  }
  const int64_t outer = Product(out.dims, 0, axis);
  const int64_t inner = Product(out.dims, axis + 1, rank);
  std::vector<ConcatLaunch> launches;
  std::vector<size_t> first_input;
  int64_t col = 0;
  for (size_t first = 0; first < v.inputs.size(); first += kMaxConcatInputsPerLaunch) {
    ConcatLaunch launch;
    launch.elem_size = static_cast<int32_t>(DTypeSize(out.dtype));
    launch.count = static_cast<int32_t>(
        std::min<size_t>(kMaxConcatInputsPerLaunch, v.inputs.size() - first));
    launch.outer = outer;
    launch.out_row = out.dims[axis] * inner;
    launch.col_begin = col;
    launch.col_start[0] = 0;
    for (int k = 0; k < launch.count; ++k) {
      launch.in_row[k] = v.inputs[first + k]->dims[axis] * inner;
      launch.col_start[k + 1] = launch.col_start[k] + launch.in_row[k];
    }
    launch.width = launch.col_start[launch.count];
    col += launch.width;
    if (launch.width == 0) continue;  // only empty inputs: nothing to copy
    launches.push_back(launch);
    first_input.push_back(first);
  }
  return std::make_unique<ConcatKernel>(node, std::move(launches), std::move(first_input));
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGather(const BoundGraph& graph,
                                                         const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = data.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside data rank ", rank));
  }
  GatherParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.outer = Product(data.dims, 0, axis);
  params.axis_dim = data.dims[axis];
  params.num_indices = NumElements(indices.dims);
  params.inner = Product(data.dims, axis + 1, rank);
  Dims expected(data.dims.begin(), data.dims.begin() + axis);
  expected.insert(expected.end(), indices.dims.begin(), indices.dims.end());
  expected.insert(expected.end(), data.dims.begin() + axis + 1, data.dims.end());
  if (expected != out.dims) {
    return Invalid(node, absl::StrCat("output ", DimsToString(out.dims), " should be ",
                                      DimsToString(expected)));
  }
  return MakeParamsKernel(node, params, EnqueueGather, "LaunchGather");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGatherElements(const BoundGraph& graph,
                                                                 const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  const size_t rank = data.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank || indices.dims.size() != rank ||
      out.dims != indices.dims) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), ", output ",
                                      DimsToString(out.dims), " and axis ", axis, " disagree"));
  }
  GatherElementsParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.rank = static_cast<int32_t>(rank);
  params.axis = static_cast<int32_t>(axis);
  params.num_elements = NumElements(out.dims);
  params.axis_dim = data.dims[axis];
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  for (size_t d = 0; d < rank; ++d) {
    params.dims[d] = out.dims[d];
    params.data_strides[d] = strides[d];
  }
  return MakeParamsKernel(node, params, EnqueueGatherElements, "LaunchGatherElements");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGatherND(const BoundGraph& graph,
                                                           const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 2, 2, 1, 1));
  const BoundValue& data = *v.inputs[0];
  const BoundValue& indices = *v.inputs[1];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckSameDType(node, data, out));
  RETURN_IF_ERROR(CheckDType(node, indices, DTypes({DType::kInt64})));
  ASSIGN_OR_RETURN(const int64_t batch_dims, GetIntAttr(node.attributes, "batch_dims", 0));
  const int64_t rank = static_cast<int64_t>(data.dims.size());
  const int64_t index_rank = static_cast<int64_t>(indices.dims.size());
  const int64_t count = index_rank == 0 ? 0 : indices.dims.back();
  if (index_rank < 1 || batch_dims < 0 || batch_dims >= index_rank || count < 1 ||
      batch_dims + count > rank) {
    return Invalid(node, absl::StrCat("data ", DimsToString(data.dims), ", indices ",
                                      DimsToString(indices.dims), " and batch_dims ", batch_dims,
                                      " disagree"));
  }
  GatherNDParams params;
  params.elem_size = static_cast<int32_t>(DTypeSize(data.dtype));
  params.index_count = static_cast<int32_t>(count);
  params.batch = Product(data.dims, 0, batch_dims);
  params.tuples = Product(indices.dims, batch_dims, index_rank - 1);
  params.slice = Product(data.dims, batch_dims + count, rank);
  const std::vector<int64_t> strides = ContiguousStrides(data.dims);
  params.data_batch_stride = Product(data.dims, batch_dims, rank);
  for (int64_t j = 0; j < count; ++j) {
    params.indexed_dims[j] = data.dims[batch_dims + j];
    params.indexed_strides[j] = strides[batch_dims + j];
  }
  if (NumElements(out.dims) != params.batch * params.tuples * params.slice) {
    return Invalid(node, absl::StrCat("output ", DimsToString(out.dims), " does not match"));
  }
  return MakeParamsKernel(node, params, EnqueueGatherND, "LaunchGatherND");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCumSum(const BoundGraph& graph,
                                                         const BoundNode& node) {
  ASSIGN_OR_RETURN(NodeValues v, GetNodeValues(graph, node, 1, 1, 1, 1));
  const BoundValue& in = *v.inputs[0];
  const BoundValue& out = *v.outputs[0];
  RETURN_IF_ERROR(CheckDType(
      node, in, DTypes({DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64})));
  RETURN_IF_ERROR(CheckSameDType(node, in, out));
  RETURN_IF_ERROR(CheckElementCount(node, out, NumElements(in.dims)));
  ASSIGN_OR_RETURN(const int64_t axis, GetIntAttr(node.attributes, "axis", 0));
  ASSIGN_OR_RETURN(const int64_t exclusive, GetIntAttr(node.attributes, "exclusive", 0));
  ASSIGN_OR_RETURN(const int64_t reverse, GetIntAttr(node.attributes, "reverse", 0));
  const size_t rank = in.dims.size();
  if (axis < 0 || static_cast<size_t>(axis) >= rank) {
    return Invalid(node, absl::StrCat("axis ", axis, " outside rank ", rank));
  }
  CumSumParams params;
  params.dtype = in.dtype;
  params.outer = Product(in.dims, 0, axis);
  params.axis_dim = in.dims[axis];
  params.inner = Product(in.dims, axis + 1, rank);
  params.exclusive = exclusive != 0;
  params.reverse = reverse != 0;
  return MakeParamsKernel(node, params, EnqueueCumSum, "LaunchCumSum");
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCudaOpKernel(const BoundGraph& graph,
                                                               const BoundNode& node) {
  const std::string& op = node.op_type;
  if (op == "Gemm" || op == "MatMul") {
    return Unsupported(node, "GEMMs run on cuBLASLt (runtime/cuda/gemm.h), not op kernels");
  }
  for (const BinaryOpInfo& info : kBinaryOps) {
    if (op == info.op_type) return MakeBinary(graph, node, info);
  }
  for (const UnaryOpInfo& info : kUnaryOps) {
    if (op == info.op_type) return MakeUnary(graph, node, info);
  }
  if (op == "Where") return MakeWhere(graph, node);
  if (op == "Cast") return MakeCast(graph, node);
  if (op == "Identity" || op == "Reshape" || op == "Flatten" || op == "Squeeze" ||
      op == "Unsqueeze") {
    return MakeByteCopy(graph, node);
  }
  if (op == "Expand") return MakeExpand(graph, node);
  if (op == "Transpose") return MakeTranspose(graph, node);
  if (op == "Slice") return MakeSlice(graph, node);
  if (op == "Softmax") return MakeSoftmax(graph, node);
  if (op == "LayerNormalization") return MakeLayerNorm(graph, node);
  if (op == "ReduceMean") return MakeReduceMean(graph, node);
  if (op == "Concat") return MakeConcat(graph, node);
  if (op == "Gather") return MakeGather(graph, node);
  if (op == "GatherElements") return MakeGatherElements(graph, node);
  if (op == "GatherND") return MakeGatherND(graph, node);
  if (op == "CumSum") return MakeCumSum(graph, node);
  return Unsupported(node, "no CUDA kernel for this op");
}

}  // namespace graphserve
