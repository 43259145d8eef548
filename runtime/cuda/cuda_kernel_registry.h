#pragma once
// The CUDA half of the op registry (Note [Op registry] in
// runtime/op_registry.h): each op's kernels by dtype, added by the op
// family's file (runtime/cuda/kernel_families.h) and joined to the OpDef by
// name. The executor plans a node's kernel here; its fusions (a GEMM or Conv
// epilogue absorbing the nodes after it, the erf GELU chain) build the same
// kernel classes with more to do.

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "runtime/cuda/cuda_kernel_context.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/cuda/kernel_families.h"

namespace graphserve {

// The kernel of `op_type` for nodes whose typed input is `dtype`, or null.
const CudaKernelDef* FindCudaKernel(const std::string& op_type, DType dtype);

// The dtypes some kernel of `op_type` takes (0: the op has no CUDA kernel,
// as the aliases of IsAliasOp in runtime/fusion.h, which share their input's
// bytes, and the ops binding always replaces: Constant, Shape, Dropout).
DTypeSet CudaKernelDTypes(const std::string& op_type);

// Every kernel, by op name.
const std::map<std::string, CudaKernelDefs>& CudaKernelsByOp();

// Plans context.node's kernel: Unimplemented, naming the node, its op and
// dtype and the dtypes there are kernels for, when none takes it.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeCudaKernel(const CudaKernelContext& context);

}  // namespace graphserve
