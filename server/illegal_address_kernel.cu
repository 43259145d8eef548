// The "illegal-address" fault of Note [Injected CUDA faults]
// (server/injected_cuda_fault.h): test-only.
#include "server/illegal_address_kernel.h"

#include <cstdint>

namespace graphserve {
namespace {

// `address` comes from the host, so the compiler cannot see it is bad.
__global__ void StoreThrough(int* address) { *address = 1; }

}  // namespace

cudaError_t EnqueueIllegalAddressWrite(cudaStream_t stream) {
  // The first page: never mapped on the device (nor anywhere).
  int* const unmapped = reinterpret_cast<int*>(uintptr_t{0x10});
  StoreThrough<<<1, 1, 0, stream>>>(unmapped);
  return cudaGetLastError();
}

}  // namespace graphserve
