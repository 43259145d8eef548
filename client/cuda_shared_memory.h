#pragma once
// Device memory the client shares with a server: the client's half of
// Triton's CUDA shared-memory extension. The server opens the allocation from
// its CUDA IPC handle (CudaSharedMemoryRegister), so both must run on the
// same machine and see the same GPU. This file is the client's only use of
// the CUDA runtime; its header is plain C++, so the rest of the client builds
// and runs without a GPU.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// OK when CUDA device `device` can be used. FailedPrecondition "no CUDA
// device: --shared-memory cuda needs a GPU on the client's machine (...)"
// when cudaGetDeviceCount fails (no driver) or finds no device;
// InvalidArgument when `device` is not one of those it finds.
absl::Status CheckCudaDevice(int device);

// One cudaMalloc'ed range on one device and its IPC handle. Not copyable;
// the destructor frees it on its own device (a failure is logged, never
// thrown). Every call sets the device itself and restores the caller's.
class CudaSharedMemory {
 public:
  // CheckCudaDevice's errors first, then cudaMalloc's (ResourceExhausted when
  // the device is out of memory) or cudaIpcGetMemHandle's, naming the call,
  // the device and the size. The memory starts zeroed.
  static absl::StatusOr<std::unique_ptr<CudaSharedMemory>> Create(int device, uint64_t byte_size);

  CudaSharedMemory(const CudaSharedMemory&) = delete;
  CudaSharedMemory& operator=(const CudaSharedMemory&) = delete;
  ~CudaSharedMemory();

  // Copies host bytes to `offset` and back (cudaMemcpy, synchronous).
  // OutOfRange for a range past the end.
  absl::Status CopyIn(uint64_t offset, absl::string_view bytes);
  absl::StatusOr<std::string> CopyOut(uint64_t offset, uint64_t byte_size) const;

  // The bytes of the allocation's cudaIpcMemHandle_t (64 of them), as
  // CudaSharedMemoryRegister's raw_handle carries them.
  [[nodiscard]] const std::string& ipc_handle() const { return ipc_handle_; }
  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] uint64_t byte_size() const { return byte_size_; }

  // Implementation details follow.
 private:
  CudaSharedMemory(int device, uint64_t byte_size, void* data, std::string ipc_handle)
      : device_(device), byte_size_(byte_size), data_(data), ipc_handle_(std::move(ipc_handle)) {}

  absl::Status CheckRange(uint64_t offset, uint64_t byte_size) const;

  const int device_;
  const uint64_t byte_size_;
  void* const data_;  // device memory
  const std::string ipc_handle_;
};

}  // namespace graphserve
