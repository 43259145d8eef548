#pragma once
// A CUDA kernel: one node of a bound graph (or a fusion of several), planned
// once by its factory (runtime/cuda/cuda_kernel_registry.h) and enqueued on
// every run.
//
// A kernel is prepared once at plan time from the bound node (all index
// arithmetic parameters computed then), and enqueued on every run with no
// allocation, no synchronisation and no host-device copy, so a run can be
// captured into a CUDA graph as it is.

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace graphserve {

class CudaOpKernel {
 public:
  virtual ~CudaOpKernel() = default;

  // Enqueues the op on `stream`. `inputs` and `outputs` are device addresses
  // following node.inputs and node.outputs. Returns the launch error, if any
  // (naming the node).
  virtual absl::Status Enqueue(absl::Span<const void* const> inputs,
                               absl::Span<void* const> outputs, cudaStream_t stream) const = 0;

  // Plan time only, never while capturing: times the library's algorithms
  // for this op on these buffers (their contents do not matter) and keeps
  // the fastest; may change what its step workspace requires (Note [Step
  // workspaces]) and synchronise `stream`.
  // Kernels with nothing to choose keep this default.
  virtual absl::Status Autotune(absl::Span<const void* const> inputs,
                                absl::Span<void* const> outputs, cudaStream_t stream) {
    return absl::OkStatus();
  }
};

}  // namespace graphserve
