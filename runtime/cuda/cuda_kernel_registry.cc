#include "runtime/cuda/cuda_kernel_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

const std::map<std::string, CudaKernelDefs>& CudaKernelsByOp() {
  static const auto* const kKernels = [] {
    CudaKernelDefs defs;
    AddElementwiseCudaKernels(defs);
    AddDataMovementCudaKernels(defs);
    AddNormalizationCudaKernels(defs);
    AddLinearAlgebraCudaKernels(defs);
    AddNnCudaKernels(defs);
    AddAttentionCudaKernels(defs);
    auto* by_op = new std::map<std::string, CudaKernelDefs>;
    for (CudaKernelDef& def : defs) (*by_op)[def.op].push_back(std::move(def));
    return by_op;
  }();
  return *kKernels;
}

const CudaKernelDef* FindCudaKernel(const std::string& op_type, DType dtype) {
  const auto it = CudaKernelsByOp().find(op_type);
  if (it == CudaKernelsByOp().end()) return nullptr;
  for (const CudaKernelDef& def : it->second) {
    if (Contains(def.dtypes, dtype)) return &def;
  }
  return nullptr;
}

DTypeSet CudaKernelDTypes(const std::string& op_type) {
  const auto it = CudaKernelsByOp().find(op_type);
  if (it == CudaKernelsByOp().end()) return 0;
  DTypeSet dtypes = 0;
  for (const CudaKernelDef& def : it->second) dtypes |= def.dtypes;
  return dtypes;
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCudaKernel(const CudaKernelContext& context) {
  const BoundNode& node = context.node;
  const std::string label = absl::StrCat("op '", node.name, "' (", node.op_type, ")");
  const DTypeSet dtypes = CudaKernelDTypes(node.op_type);
  if (dtypes == 0) return absl::UnimplementedError(absl::StrCat(label, ": no CUDA kernel"));
  // Every def of an op selects on the same input.
  const size_t typed_input = CudaKernelsByOp().at(node.op_type).front().typed_input;
  if (typed_input >= node.inputs.size() || node.inputs[typed_input] < 0 ||
      static_cast<size_t>(node.inputs[typed_input]) >= context.graph.values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": has no input ", typed_input, " to choose a kernel by"));
  }
  const DType dtype = context.graph.value(node.inputs[typed_input]).dtype;
  const CudaKernelDef* def = FindCudaKernel(node.op_type, dtype);
  if (def == nullptr) {
    return absl::UnimplementedError(absl::StrCat(label, ": no CUDA kernel for ", DTypeName(dtype),
                                                 " (there are for ", DTypeSetToString(dtypes),
                                                 ")"));
  }
  return def->factory(context);
}

}  // namespace graphserve
