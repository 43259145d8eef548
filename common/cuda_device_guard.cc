#include "common/cuda_device_guard.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "common/cuda_error.h"
#include "common/logging.h"

namespace graphserve {

CudaDeviceGuard::CudaDeviceGuard(int device) {
  cudaError_t error = cudaGetDevice(&previous_device_);
  if (error != cudaSuccess) {
    cudaGetLastError();  // not sticky; do not leave it for the next caller
    status_ = CudaErrorToStatus(error, "cudaGetDevice");
    return;
  }
  if (previous_device_ == device) return;
  error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    cudaGetLastError();
    const absl::Status failed = CudaErrorToStatus(error, "cudaSetDevice");
    status_ = absl::Status(failed.code(), absl::StrCat("selecting CUDA device ", device, ": ",
                                                       failed.message()));
    return;
  }
  switched_ = true;
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (!switched_) return;
  const cudaError_t error = cudaSetDevice(previous_device_);
  if (error != cudaSuccess) {
    cudaGetLastError();
    spdlog::warn("cudaSetDevice({}) failed while restoring the previous device: {}",
                 previous_device_, cudaGetErrorString(error));
  }
}

}  // namespace graphserve
