#include "bench/launch_overhead.h"

namespace graphserve {
namespace {

__global__ void EmptyKernel() {}

}  // namespace

cudaError_t LaunchEmptyKernel(cudaStream_t stream) {
  // The triple-chevron launch, as eager code writes it (CUDA 13's stub caches
  // the kernel's handle, which cudaLaunchKernel(&EmptyKernel, ...) would look
  // up on every call). cudaGetLastError() is a thread-local read.
  EmptyKernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

}  // namespace graphserve
