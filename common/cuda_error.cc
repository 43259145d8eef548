#include "common/cuda_error.h"

namespace graphserve {

bool IsStickyCudaError(cudaError_t error) {
  // Exactly the codes whose documentation (driver_types.h, CUDA 13) says the
  // process "must be terminated and relaunched" (Note [Sticky CUDA errors]).
  switch (error) {
    case cudaErrorContained:            // a contained device error (e.g. a poisoned page)
    case cudaErrorIllegalAddress:       // a load or store outside any allocation
    case cudaErrorLaunchTimeout:        // a kernel ran past the watchdog
    case cudaErrorAssert:               // a device-side assert
    case cudaErrorHardwareStackError:   // stack overflow or corruption
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:        // any other exception while a kernel ran
    case cudaErrorTensorMemoryLeak:     // tensor memory not freed when a kernel exited
    case cudaErrorMpsClientTerminated:  // the MPS server ended this client
    case cudaErrorExternalDevice:       // an error of an external device (e.g. NVLink peer)
      return true;
    default:
      return false;
  }
}

}  // namespace graphserve
