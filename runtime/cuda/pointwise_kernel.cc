#include "runtime/cuda/pointwise_kernel.h"

#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/fusion.h"

namespace graphserve {
namespace {

struct OpInstruction {
  const char* op_type;
  PointwiseOp op;
};

// What each fusable op compiles to (runtime/fusion.cc's IsPointwiseOp names
// the same ops).
constexpr OpInstruction kInstructions[] = {
    {"Add", PointwiseOp::kAdd},
    {"Sub", PointwiseOp::kSub},
    {"Mul", PointwiseOp::kMul},
    {"Div", PointwiseOp::kDiv},
    {"Pow", PointwiseOp::kPow},
    {"Max", PointwiseOp::kMax},
    {"Min", PointwiseOp::kMin},
    {"Sqrt", PointwiseOp::kSqrt},
    {"Exp", PointwiseOp::kExp},
    {"Log", PointwiseOp::kLog},
    {"Sigmoid", PointwiseOp::kSigmoid},
    {"Tanh", PointwiseOp::kTanh},
    {"Erf", PointwiseOp::kErf},
    {"Relu", PointwiseOp::kRelu},
    {"Abs", PointwiseOp::kAbs},
    {"Neg", PointwiseOp::kNeg},
    {"Reciprocal", PointwiseOp::kReciprocal},
    {"LeakyRelu", PointwiseOp::kLeakyRelu},
};

const OpInstruction* FindInstruction(const std::string& op_type) {
  for (const OpInstruction& entry : kInstructions) {
    if (op_type == entry.op_type) return &entry;
  }
  return nullptr;
}

class PointwiseKernel final : public CudaOpKernel {
 public:
  PointwiseKernel(std::string label, DType dtype, const PointwiseProgram& program, int64_t count)
      : label_(std::move(label)), dtype_(dtype), program_(program), count_(count) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override {
    if (static_cast<int>(inputs.size()) != program_.num_inputs || outputs.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(label_, ": Enqueue got ", inputs.size(),
                                                     " inputs and ", outputs.size(),
                                                     " outputs"));
    }
    PointwiseInputs data;
    for (size_t k = 0; k < inputs.size(); ++k) data.data[k] = inputs[k];
    return CudaErrorToStatus(
        LaunchPointwise(dtype_, program_, data, outputs[0], count_, stream),
        absl::StrCat("LaunchPointwise for ", label_, " (", count_, " ", DTypeName(dtype_),
                     " elements)"));
  }

 private:
  std::string label_;
  DType dtype_;
  PointwiseProgram program_;
  int64_t count_;
};

}  // namespace

bool HasPointwiseInstruction(const std::string& op_type) {
  return FindInstruction(op_type) != nullptr;
}

absl::StatusOr<PointwiseProgram> CompilePointwise(const BoundGraph& graph,
                                                  const std::vector<int>& nodes,
                                                  const std::vector<ValueId>& inputs,
                                                  ValueId output) {
  if (inputs.size() > static_cast<size_t>(kPointwiseMaxInputs) ||
      nodes.size() > static_cast<size_t>(kPointwiseMaxInstructions)) {
    return absl::InvalidArgumentError(absl::StrCat("a pointwise region of ", nodes.size(),
                                                   " nodes and ", inputs.size(),
                                                   " inputs is too large"));
  }
  const DType dtype = graph.value(output).dtype;
  if (!ComputesInFloat(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("a pointwise region of ", DTypeName(dtype),
                                                   " does not compute in float"));
  }
  PointwiseProgram program;
  std::map<ValueId, uint8_t> registers;
  for (const ValueId input : inputs) {
    const auto next = static_cast<uint8_t>(registers.size());
    registers.emplace(input, next);
  }
  program.num_inputs = static_cast<int32_t>(inputs.size());
  for (const int n : nodes) {
    const BoundNode& node = graph.nodes[n];
    const OpInstruction* found = FindInstruction(node.op_type);
    if (found == nullptr || node.outputs.size() != 1 || node.inputs.empty() ||
        node.inputs.size() > 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("node '", node.name, "' (", node.op_type, ") is not pointwise"));
    }
    PointwiseInstruction& in = program.code[program.num_instructions];
    in.op = found->op;
    in.dst = static_cast<uint8_t>(program.num_inputs + program.num_instructions);
    uint8_t* operands[] = {&in.a, &in.b};
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const ValueId id = node.inputs[k];
      if (const auto it = registers.find(id); it != registers.end()) {
        *operands[k] = it->second;
        continue;
      }
      const BoundValue& value = graph.value(id);
      const std::optional<float> scalar = FloatScalar(value);
      if (!scalar || value.dtype != dtype || in.a == kPointwiseImmediate) {
        return absl::InvalidArgumentError(absl::StrCat(
            "node '", node.name, "' reads '", value.name, "', neither a region input, an ",
            "earlier node's output nor one scalar constant of the region's type"));
      }
      *operands[k] = kPointwiseImmediate;
      in.imm = *scalar;
    }
    if (in.op == PointwiseOp::kLeakyRelu) {
      ASSIGN_OR_RETURN(in.imm, GetFloatAttr(node.attributes, "alpha", 0.01f));
    }
    registers[node.outputs[0]] = in.dst;
    ++program.num_instructions;
  }
  const auto result = registers.find(output);
  if (result == registers.end()) {
    return absl::InvalidArgumentError("the pointwise region does not compute its output");
  }
  program.result = result->second;
  if (!IsWellFormed(program)) return absl::InternalError("compiled an ill-formed pointwise program");
  return program;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePointwiseKernel(
    std::string label, const BoundGraph& graph, const std::vector<int>& nodes,
    const std::vector<ValueId>& inputs, ValueId output) {
  ASSIGN_OR_RETURN(const PointwiseProgram program, CompilePointwise(graph, nodes, inputs, output));
  return std::make_unique<PointwiseKernel>(std::move(label), graph.value(output).dtype, program,
                                           NumElements(graph.value(output).dims));
}

}  // namespace graphserve
