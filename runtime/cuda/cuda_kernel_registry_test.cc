#include "runtime/cuda/cuda_kernel_registry.h"

#include "gtest/gtest.h"
#include "runtime/fusion.h"
#include "runtime/op_registry.h"

namespace graphserve {
namespace {

// Note [Op registry]: every op the host can compute, the GPU can too (or
// aliases its input); nothing is registered on the GPU that the registry
// does not define.
TEST(CudaKernelRegistryTest, EveryOpWithAHostKernelHasACudaKernelOrIsAnAlias) {
  for (const OpDef& op : AllOps()) {
    SCOPED_TRACE(op.name);
    if (op.host == nullptr) {
      EXPECT_EQ(FindCudaKernelFactory(op.name), nullptr) << "binding replaces this op";
      continue;
    }
    EXPECT_TRUE(FindCudaKernelFactory(op.name) != nullptr || IsAliasOp(op.name));
    EXPECT_FALSE(FindCudaKernelFactory(op.name) != nullptr && IsAliasOp(op.name));
  }
  EXPECT_EQ(FindCudaKernelFactory("NoSuchOp"), nullptr);
}

}  // namespace
}  // namespace graphserve
