#pragma once
// The CUDA half of the op registry (Note [Op registry] in
// runtime/op_registry.h): one kernel factory per op, joined to its OpDef by
// name, and the context every factory receives. The executor looks kernels
// up here; its fusions (a GEMM or Conv epilogue absorbing the nodes after
// it, the erf GELU chain) build the same kernel classes with more to do.

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/cuda/cuda_kernel_context.h"
#include "runtime/cuda/op_kernels.h"

namespace graphserve {

using CudaKernelFactory =
    absl::StatusOr<std::unique_ptr<CudaOpKernel>> (*)(const CudaKernelContext& context);

// The factory of `op_type`; null for ops that never reach a CUDA kernel:
// the aliases (IsAliasOp in runtime/fusion.h: they share their input's
// bytes) and the ops binding always replaces (Constant, Shape,
// Dropout).
CudaKernelFactory FindCudaKernelFactory(const std::string& op_type);

}  // namespace graphserve
