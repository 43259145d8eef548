#pragma once
// What a CUDA kernel factory receives (runtime/cuda/cuda_kernel_registry.h).

#include <cublasLt.h>
#include <cudnn.h>

#include <memory>

#include "runtime/bound_graph.h"
#include "runtime/cuda/algorithm_choices.h"
#include "tensor_holder/stream_arena.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

// What a factory may reach besides the node: the stream slot's library
// handles and library workspace, the device's weight store (for constants a
// kernel derives or hands to a library as a pointer), and plan options. All
// outlive the kernel; one thread at a time uses the handles.
struct CudaKernelContext {
  const BoundGraph& graph;
  const BoundNode& node;
  cublasLtHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  WeightStore* weights = nullptr;
  // Grown (StreamArena::Reserve) to what each kernel needs; read at Enqueue.
  std::shared_ptr<StreamArena> workspace;
  // TF32 tensor-core math in GEMMs and convolutions.
  bool allow_tf32 = false;
  // Timed choices shared by the stream slots' plans (null: time every plan).
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
};

}  // namespace graphserve
