#pragma once
// What a CUDA kernel factory receives (runtime/cuda/cuda_kernel_registry.h).

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/cuda/step_workspace.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

// What a factory may reach besides the node: the stream slot's library
// handles, the step's library workspace, the device's weight store (for
// constants a kernel derives or hands to a library as a pointer), and plan
// options. All outlive the kernel; one thread at a time uses the handles.
struct CudaKernelContext {
  const BoundGraph& graph;
  const BoundNode& node;
  cublasLtHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  WeightStore* weights = nullptr;
  // This step's library workspace (Note [Step workspaces]): the kernel
  // Requires what it needs and reads get() at Enqueue.
  std::shared_ptr<StepWorkspace> workspace;
  // TF32 tensor-core math in GEMMs and convolutions.
  bool allow_tf32 = false;
  // Timed choices shared by the stream slots' plans (null: time every plan).
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
  // Whether the kernel's Autotune runs before its first Enqueue (the
  // executor's autotune_gemms): a kernel may then leave choosing its library
  // plan to Autotune instead of building the heuristic's here.
  bool autotune = false;
  // Depthwise convolutions on our own kernel where it runs them (Note
  // [Depthwise convolutions] in runtime/cuda/nn_kernels.cu), not cuDNN.
  bool own_depthwise_convs = true;
};

// Plans the kernel of context.node, or says why it cannot (naming the node).
using CudaKernelFactory =
    absl::StatusOr<std::unique_ptr<CudaOpKernel>> (*)(const CudaKernelContext& context);

}  // namespace graphserve
