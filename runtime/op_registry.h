#pragma once
// The op registry: everything the runtime knows about an ONNX op (default
// domain) that does not need a GPU, in one entry per op. See Note [Op
// registry].

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/ir.h"

namespace graphserve {

class BindContext;      // runtime/bind_context.h
struct HostKernelArgs;  // runtime/host/kernel_args.h

// Binds one model node: checks its inputs and attributes, infers its output
// dims, and emits its canonical bound node(s) (Note [Canonical bound nodes]).
using BindRule = absl::Status (*)(BindContext& ctx);
// Computes one canonical bound node on host tensors.
using HostKernel = absl::Status (*)(const HostKernelArgs& args);

inline constexpr size_t kVariadicInputs = static_cast<size_t>(-1);

// Input counts of a model node at some opset (an omitted optional input still
// counts as absent).
struct Arity {
  size_t min = 1;
  size_t max = 1;  // kVariadicInputs: no upper bound
};

// One arity that holds from `since_opset` on (sorted, first entry opset 1).
struct ArityChange {
  int64_t since_opset = 1;
  Arity arity;
};

struct OpDef {
  std::string name;
  // Family file under runtime/ops/ (and the host and CUDA kernel files of the
  // same family): "elementwise", "data_movement", "linear_algebra",
  // "normalization", "nn", "attention".
  std::string family;
  // Oldest opset whose semantics binding implements; older models are refused.
  int64_t since_opset = 1;
  // Attributes binding reads. A node carrying any other attribute is refused,
  // naming the node and the attribute, so that nothing is silently ignored.
  std::vector<std::string> attributes;
  // Input counts by opset.
  std::vector<ArityChange> arity = {{1, {1, 1}}};
  // Inputs that must be known at plan time: those that describe a shape
  // (Reshape's shape, Slice's starts/ends/axes/steps, ...; from the opset they
  // became inputs), and weights the runtime folds or hands to a library
  // (Conv's W and B, BatchNormalization's statistics).
  std::vector<size_t> plan_time_operands;
  // The first input (if any) that may be omitted ("") before a later one;
  // so may every input after it (Resize's roi and scales before its sizes,
  // Attention's optional inputs).
  int omissible_input = -1;
  BindRule bind = nullptr;
  // Null for ops binding always replaces (Constant, Shape, Dropout).
  HostKernel host = nullptr;
  // Canonical inputs and outputs of the bound node the host kernel accepts.
  Arity kernel_inputs;
  size_t kernel_max_outputs = 1;
  // One line for the README's op table: what is supported beyond the basics.
  std::string summary;
  // ONNX's names of the inputs, for messages (may be empty or shorter).
  std::vector<std::string> input_names;

  // "input <i> '<name>'" (or "input <i>" when unnamed).
  [[nodiscard]] std::string InputLabel(size_t input) const;
  [[nodiscard]] Arity ArityAt(int64_t opset) const;
  [[nodiscard]] bool IsShapeOperand(size_t input) const;
};

// The entry of `op_type`, or null.
const OpDef* FindOp(const std::string& op_type);
// Every entry, sorted by name.
const std::vector<OpDef>& AllOps();

// Sorted op type names (AllOps' names).
const std::vector<std::string>& SupportedOps();
bool IsSupportedOp(const std::string& op_type);

// The README's op table, as markdown: op, family, opsets, summary.
std::string OpTableMarkdown();

// Note [Op registry]
// ~~~~~~~~~~~~~~~~~~
// An op is one OpDef, defined in its family's file runtime/ops/<family>.cc
// with its bind rule, and its kernels in runtime/host/<family>_kernels.cc and
// runtime/cuda/<family>_ops.cc (device code in the .cu files beside it):
// adding an op touches one family file per layer. Import (the supported-op
// check), binding (arity, shape operands, unknown attributes, the rule),
// constant folding and the host executor (RunHostNode) all read the entry;
// so do the README's op table and the supported-op list printed in errors.
//
// The CUDA kernels are registered beside their code, in the CUDA layer
// (runtime/cuda/kernel_families.h), each for the dtypes it computes on, and
// joined to the OpDef by name, as TensorFlow joins REGISTER_OP and
// REGISTER_KERNEL_BUILDER with a type constraint: the op definition must not
// link CUDA, because binding, import, the capture CLI's checks and the host
// fallback run on machines without a GPU. The executor finds a node's kernel
// by (op, dtype of its typed input) (runtime/cuda/cuda_kernel_registry.h)
// and refuses at load a node with none, naming the node, its dtype and the
// dtypes there are kernels for; cuda_kernel_registry_test checks that every
// OpDef with a host kernel has a CUDA kernel too, and that an op's kernels
// take disjoint dtypes.

}  // namespace graphserve
