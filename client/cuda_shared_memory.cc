#include "client/cuda_shared_memory.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_error.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {

absl::Status CheckCudaDevice(int device) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA device: --shared-memory cuda needs a GPU on the client's machine (",
        error != cudaSuccess ? absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(error), ", ",
                                            cudaGetErrorString(error))
                             : "cudaGetDeviceCount found none",
        "); use --shared-memory system or none"));
  }
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat("CUDA device ", device,
                                                   " does not exist: this machine has ", count,
                                                   " (0 to ", count - 1, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaSharedMemory>> CudaSharedMemory::Create(int device,
                                                                           uint64_t byte_size) {
  RETURN_IF_ERROR(CheckCudaDevice(device));
  if (byte_size == 0) {
    return absl::InvalidArgumentError("CUDA shared memory needs a size of at least 1 byte");
  }
  const std::string where = absl::StrCat(" of ", byte_size, " bytes on CUDA device ", device);
  const CudaDeviceGuard current(device);
  RETURN_IF_ERROR(current.status());
  void* data = nullptr;
  RETURN_IF_ERROR(CudaErrorToStatus(cudaMalloc(&data, byte_size), absl::StrCat("cudaMalloc", where)));
  // Freed here on failure; once constructed, by the destructor.
  auto fail = [data](absl::Status status) {
    cudaFree(data);
    return status;
  };
  if (absl::Status zeroed =
          CudaErrorToStatus(cudaMemset(data, 0, byte_size), absl::StrCat("cudaMemset", where));
      !zeroed.ok()) {
    return fail(zeroed);
  }
  cudaIpcMemHandle_t handle;
  if (absl::Status exported = CudaErrorToStatus(cudaIpcGetMemHandle(&handle, data),
                                         absl::StrCat("cudaIpcGetMemHandle", where));
      !exported.ok()) {
    return fail(exported);
  }
  return std::unique_ptr<CudaSharedMemory>(
      new CudaSharedMemory(device, byte_size, data,
                           std::string(reinterpret_cast<const char*>(&handle), sizeof(handle))));
}

CudaSharedMemory::~CudaSharedMemory() {
  const CudaDeviceGuard current(device_);
  absl::Status freed = current.status();
  if (freed.ok()) freed = CudaErrorToStatus(cudaFree(data_), "cudaFree");
  if (!freed.ok()) {
    spdlog::warn("freeing CUDA shared memory of {} bytes on device {}: {}", byte_size_, device_,
                 freed.ToString());
  }
}

absl::Status CudaSharedMemory::CheckRange(uint64_t offset, uint64_t byte_size) const {
  if (offset > byte_size_ || byte_size > byte_size_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("bytes [", offset, ", ", offset + byte_size,
                                              ") lie past the end of CUDA shared memory of ",
                                              byte_size_, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CudaSharedMemory::CopyIn(uint64_t offset, absl::string_view bytes) {
  RETURN_IF_ERROR(CheckRange(offset, bytes.size()));
  const CudaDeviceGuard current(device_);
  RETURN_IF_ERROR(current.status());
  RETURN_IF_ERROR(CudaErrorToStatus(
      cudaMemcpy(static_cast<char*>(data_) + offset, bytes.data(), bytes.size(),
                 cudaMemcpyHostToDevice),
      absl::StrCat("cudaMemcpy of ", bytes.size(), " bytes to CUDA device ", device_)));
  // A copy from pageable memory (and the cudaMemset before it) may return
  // before the bytes reach the device; the server reads them from another
  // process, ordered by nothing but this wait.
  return CudaErrorToStatus(cudaDeviceSynchronize(),
                    absl::StrCat("cudaDeviceSynchronize after a copy to CUDA device ", device_));
}

absl::StatusOr<std::string> CudaSharedMemory::CopyOut(uint64_t offset, uint64_t byte_size) const {
  RETURN_IF_ERROR(CheckRange(offset, byte_size));
  const CudaDeviceGuard current(device_);
  RETURN_IF_ERROR(current.status());
  std::string bytes(byte_size, '\0');
  RETURN_IF_ERROR(
      CudaErrorToStatus(cudaMemcpy(bytes.data(), static_cast<const char*>(data_) + offset, byte_size,
                            cudaMemcpyDeviceToHost),
                 absl::StrCat("cudaMemcpy of ", byte_size, " bytes from CUDA device ", device_)));
  return bytes;
}

}  // namespace graphserve
