#pragma once
// The kernel of the launch-overhead benchmark (bench/launch_overhead_main.cc):
// a __global__ function with no parameters and an empty body, so that an
// iteration of 32 of them costs what launching costs and nothing else.
//
// Plain C++ and CUDA runtime types only, so callers compile without nvcc.

#include <cuda_runtime.h>

namespace graphserve {

// Enqueues the empty kernel as one block of one thread (<<<1, 1>>>) on
// `stream` and returns cudaGetLastError(), which holds the launch's error. No
// allocation, no synchronisation, capturable.
cudaError_t LaunchEmptyKernel(cudaStream_t stream);

}  // namespace graphserve
