#include "runtime/cuda/cuda_kernel_registry.h"

#include <map>

#include "runtime/cuda/gemm_kernel.h"
#include "runtime/cuda/nn_ops.h"
#include "runtime/nn_node_params.h"

namespace graphserve {

namespace {

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeOwnKernel(const CudaKernelContext& context) {
  return MakeCudaOpKernel(context.graph, context.node);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeNnKernel(const CudaKernelContext& context) {
  return MakeNnOpKernel(context.graph, context.node);
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeGemmKernel(const CudaKernelContext& context) {
  return GemmKernel::Create(context, /*fused_bias=*/nullptr);
}

// A Conv with its bias, nothing fused after it.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeConvKernel(const CudaKernelContext& context) {
  ConvFusion fusion;
  fusion.has_bias = context.node.inputs.size() > 2;
  return ConvKernel::Create(context, fusion);
}

const std::map<std::string, CudaKernelFactory>& Factories() {
  static const auto* const kFactories = [] {
    auto* factories = new std::map<std::string, CudaKernelFactory>;
    // The elementwise, data movement and normalization families: our own
    // kernels (runtime/cuda/op_kernels*.cu).
    for (const char* op : {"Abs",
                           "Add",
                           "And",
                           "Cast",
                           "CumSum",
                           "Concat",
                           "Div",
                           "Equal",
                           "Erf",
                           "Exp",
                           "Expand",
                           "Gather",
                           "GatherElements",
                           "GatherND",
                           "Gelu",
                           "Greater",
                           "GreaterOrEqual",
                           "IsInf",
                           "IsNaN",
                           "LayerNormalization",
                           "LeakyRelu",
                           "Less",
                           "LessOrEqual",
                           "Log",
                           "Max",
                           "Min",
                           "Mod",
                           "Mul",
                           "Neg",
                           "Not",
                           "Or",
                           "Pow",
                           "ReduceMean",
                           "Reciprocal",
                           "Relu",
                           "Sigmoid",
                           "Slice",
                           "Softmax",
                           "Sqrt",
                           "Sub",
                           "Tanh",
                           "Transpose",
                           "Where",
                           "Xor"}) {
      (*factories)[op] = MakeOwnKernel;
    }
    (*factories)["Gemm"] = MakeGemmKernel;
    (*factories)["MatMul"] = MakeGemmKernel;
    (*factories)["Conv"] = MakeConvKernel;
    for (const char* op : {"AveragePool", "BatchNormalization", "Clip", "GlobalAveragePool",
                           "GlobalMaxPool", "HardSigmoid", "HardSwish", "MaxPool", "Pad"}) {
      (*factories)[op] = MakeNnKernel;
    }
    return factories;
  }();
  return *kFactories;
}

}  // namespace

CudaKernelFactory FindCudaKernelFactory(const std::string& op_type) {
  auto it = Factories().find(op_type);
  return it == Factories().end() ? nullptr : it->second;
}

}  // namespace graphserve
