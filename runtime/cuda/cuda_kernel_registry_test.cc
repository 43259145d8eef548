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
      EXPECT_EQ(CudaKernelDTypes(op.name), 0u) << "binding replaces this op";
      continue;
    }
    EXPECT_TRUE(CudaKernelDTypes(op.name) != 0 || IsAliasOp(op.name));
    EXPECT_FALSE(CudaKernelDTypes(op.name) != 0 && IsAliasOp(op.name));
  }
  EXPECT_EQ(CudaKernelDTypes("NoSuchOp"), 0u);
}

TEST(CudaKernelRegistryTest, EveryKernelIsOfADefinedOp) {
  for (const auto& [op, defs] : CudaKernelsByOp()) EXPECT_NE(FindOp(op), nullptr) << op;
}

// One kernel per (op, dtype): the defs of an op take disjoint dtypes, and
// select by the same input.
TEST(CudaKernelRegistryTest, KernelsOfAnOpTakeDisjointDTypesOfOneInput) {
  for (const auto& [op, defs] : CudaKernelsByOp()) {
    SCOPED_TRACE(op);
    DTypeSet seen = 0;
    for (const CudaKernelDef& def : defs) {
      EXPECT_NE(def.factory, nullptr);
      EXPECT_NE(def.dtypes, 0u);
      EXPECT_EQ(def.dtypes & seen, 0u);
      EXPECT_EQ(def.typed_input, defs.front().typed_input);
      seen |= def.dtypes;
    }
  }
}

TEST(CudaKernelRegistryTest, FindsTheKernelOfADType) {
  EXPECT_NE(FindCudaKernel("Add", DType::kInt32), nullptr);
  EXPECT_EQ(FindCudaKernel("Add", DType::kBool), nullptr);
  EXPECT_NE(FindCudaKernel("And", DType::kBool), nullptr);
  EXPECT_EQ(FindCudaKernel("NoSuchOp", DType::kFloat32), nullptr);
  EXPECT_EQ(FindCudaKernel("Where", DType::kInt64)->typed_input, 1u);
}

}  // namespace
}  // namespace graphserve
