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
  return GemmKernel::Create(context, /*fused_bias=*/nullptr);
}

}  // namespace

void AddLinearAlgebraCudaKernels(CudaKernelDefs& defs) {
  const DTypeSet float32 = DTypes({DType::kFloat32});
  defs.push_back({"Gemm", float32, MakeGemm});
  defs.push_back({"MatMul", float32, MakeGemm});
}

}  // namespace graphserve
