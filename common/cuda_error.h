#pragma once
// CUDA runtime errors: as absl::Status, and which of them lose the device's
// context (Note [Sticky CUDA errors]). The runtime alone: code that links
// no cuBLAS or cuDNN (the client) uses it too; common/cuda_status.h adds
// the libraries' codes.
//
// Note [Sticky CUDA errors]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A CUDA error either fails one call or loses the context. A launch refused
// for its configuration or resources, a failed allocation, a bad argument:
// the call fails, the context is intact, and the next call works. But a
// kernel that faults on the device (an illegal or misaligned address, an
// illegal instruction, a device-side assert, a timeout, a hardware
// exception) leaves the context unusable: CUDA's documentation of these
// codes (cudaError in driver_types.h and the Runtime API reference) says
// "This leaves the process in an inconsistent state and any further CUDA
// work will return the same error. To continue using CUDA, the process must
// be terminated and relaunched." Such an error is *sticky*: cudaGetLastError
// does not clear it, and every later call on the context returns it.
//
// So the server answers the two differently (server/graph_set_runner.h): a
// non-sticky error fails the requests of the chunk it touched, INTERNAL, and
// the slot serves on; a sticky one fails what is in flight, turns health
// NOT_SERVING and exits non-zero so that the orchestrator restarts the
// process (common/lost_cuda_context.h).

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// OK for cudaSuccess; otherwise ResourceExhausted for an allocation failure,
// Internal for the rest, naming `call` and CUDA's name and text of the error.
inline absl::Status CudaErrorToStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  const absl::StatusCode code = error == cudaErrorMemoryAllocation
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat(call, " failed: ", cudaGetErrorName(error), " (",
                                         cudaGetErrorString(error), ")"));
}

// Whether `error` loses the context (Note [Sticky CUDA errors]): the one
// place that decides it, by code.
bool IsStickyCudaError(cudaError_t error);

}  // namespace graphserve
