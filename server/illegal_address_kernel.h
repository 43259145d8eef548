#pragma once
// The kernel of the "illegal-address" fault (Note [Injected CUDA faults] in
// server/injected_cuda_fault.h): test-only.

#include <cuda_runtime.h>

namespace graphserve {

// Enqueues on `stream` (of the current device) one thread storing through
// an address no allocation holds. The launch itself succeeds; the fault, a
// sticky cudaErrorIllegalAddress, surfaces when the stream is waited on.
cudaError_t EnqueueIllegalAddressWrite(cudaStream_t stream);

}  // namespace graphserve
