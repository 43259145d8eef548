// The linear algebra family's CUDA kernels (runtime/ops/linear_algebra.cc):
// Gemm and MatMul, one GemmKernel on cuBLASLt each.

#include <memory>

#include "common/dtype.h"
#include "runtime/cuda/gemm_kernel.h"
#include "runtime/cuda/kernel_families.h"

namespace graphserve {
namespace {

// A GEMM with nothing fused (the executor's fusions hand GemmKernel::Create
// a bias to absorb).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGemm(const CudaKernelContext& context) {
  return GemmKernel::Create(context);
}

}  // namespace

void AddLinearAlgebraCudaKernels(CudaKernelDefs& defs) {
  // Note [GEMM datatypes] in runtime/cuda/gemm.h.
  const DTypeSet gemm_types = DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  defs.push_back({"Gemm", gemm_types, MakeGemm});
  defs.push_back({"MatMul", gemm_types, MakeGemm});
}

}  // namespace graphserve
