#include "runtime/host/kernels.h"

#include "absl/strings/str_cat.h"
#include "runtime/host/kernel_args.h"
#include "runtime/op_registry.h"

namespace graphserve {

absl::Status RunHostNode(const BoundNode& node, absl::Span<const HostTensor* const> inputs,
                         absl::Span<HostTensor* const> outputs) {
  const HostKernelArgs args{node, inputs, outputs};
  const OpDef* op = FindOp(node.op_type);
  if (op == nullptr || op->host == nullptr) {
    return args.Unimplemented("no host kernel for this op");
  }
  const Arity arity = op->kernel_inputs;
  if (inputs.size() < arity.min || inputs.size() > arity.max) {
    const std::string expected = arity.max == kVariadicInputs
                                     ? absl::StrCat("at least ", arity.min)
                                     : absl::StrCat(arity.min, "..", arity.max);
    return args.Invalid("expected ", expected, " inputs, got ", inputs.size());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) return args.Invalid("input ", i, " is missing");
  }
  if (outputs.empty() || outputs[0] == nullptr || outputs.size() > op->kernel_max_outputs) {
    return args.Invalid("expected 1..", op->kernel_max_outputs,
                        " outputs with the first present, got ", outputs.size());
  }
  return op->host(args);
}

}  // namespace graphserve
