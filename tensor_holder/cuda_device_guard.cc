#include "tensor_holder/cuda_device_guard.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/logging.h"

namespace graphserve {

absl::Status ValidateCudaDevice(int device) {
  const int count = CudaDeviceCount();
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " does not exist: the driver sees ", count, " device(s)"));
  }
  return absl::OkStatus();
}

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
    status_ = AnnotateStatus(CudaErrorToStatus(error, "cudaSetDevice"),
                             absl::StrCat("selecting CUDA device ", device));
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
