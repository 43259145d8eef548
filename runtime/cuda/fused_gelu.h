#pragma once
// Exact (erf) GELU as one kernel: y = 0.5 * x * (1 + erf(x / sqrt(2))), the
// function PyTorch's nn.GELU / F.gelu compute with approximate='none'. The
// CUDA executor replaces the five-node chain PyTorch exports for it (Div, Erf,
// Add, Mul, Mul) with this launch. Not the tanh approximation that cuBLASLt's
// GELU epilogue computes.
//
// Plain C++ and CUDA runtime types only, so callers compile without nvcc.

#include <cuda_runtime.h>

#include <cstdint>

#include "common/dtype_table.h"

namespace graphserve {

// Enqueues y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f)) for i in
// [0, count) on `stream`, x and y of `dtype` (float32, float16 or bfloat16):
// each element widened to float, the result rounded once to `dtype` (Note
// [16-bit fusions] in runtime/fusion.h); 16-byte loads and stores when both
// addresses are 16-byte aligned. x and y may be the same address; otherwise
// they must not overlap. Returns cudaGetLastError() after the launch; no
// allocation, no synchronisation, capturable. A count of 0 enqueues nothing;
// a negative count or another dtype is cudaErrorInvalidValue.
cudaError_t LaunchErfGelu(DType dtype, const void* x, void* y, int64_t count,
                          cudaStream_t stream);

}  // namespace graphserve
