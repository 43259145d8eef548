#pragma once
// How each op family's CUDA file adds its kernels to the registry
// (runtime/cuda/cuda_kernel_registry.h), as runtime/ops/families.h does for
// the op definitions.

#include <cstddef>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "runtime/cuda/cuda_kernel_context.h"

namespace graphserve {

// One kernel of an op: the factory of nodes of `op` whose input
// `typed_input` has a dtype in `dtypes`. An op may have several, for
// disjoint dtypes (a library for some, our own kernel for others).
struct CudaKernelDef {
  std::string op;
  DTypeSet dtypes = 0;
  CudaKernelFactory factory = nullptr;
  // The input whose dtype selects the kernel: the data input, not a
  // condition or an index (Where's is 1).
  size_t typed_input = 0;
};

using CudaKernelDefs = std::vector<CudaKernelDef>;

void AddElementwiseCudaKernels(CudaKernelDefs& defs);    // elementwise_ops.cc
void AddDataMovementCudaKernels(CudaKernelDefs& defs);   // data_movement_ops.cc
void AddNormalizationCudaKernels(CudaKernelDefs& defs);  // normalization_ops.cc
void AddLinearAlgebraCudaKernels(CudaKernelDefs& defs);  // linear_algebra_ops.cc
void AddNnCudaKernels(CudaKernelDefs& defs);             // nn_ops.cc
void AddAttentionCudaKernels(CudaKernelDefs& defs);      // attention_ops.cc

}  // namespace graphserve
