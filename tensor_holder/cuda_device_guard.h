#pragma once
// Scoped selection of the current CUDA device, which is thread-local state:
// the guard switches this thread to a device and switches it back on scope
// exit, so tensor_holder never leaves a caller on a device it did not choose
// (as PyTorch's CUDAGuard).

#include "absl/status/status.h"

namespace graphserve {

// OK if `device` names a device the driver sees; InvalidArgument otherwise,
// with the number of devices (0 without a driver or GPU).
absl::Status ValidateCudaDevice(int device);

// Usage:
//   CudaDeviceGuard guard(device);
//   RETURN_IF_ERROR(guard.status());
// If status() is not OK the current device was left unchanged (or could not
// be read) and the destructor does nothing.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device);
  // Restores the previous device; a failure is logged, never thrown.
  ~CudaDeviceGuard();

  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard(CudaDeviceGuard&&) = delete;
  CudaDeviceGuard& operator=(CudaDeviceGuard&&) = delete;

  [[nodiscard]] const absl::Status& status() const { return status_; }

  // Implementation details follow.
 private:
  absl::Status status_;
  int previous_device_ = -1;
  // True only when the constructor changed the device, so the destructor
  // must change it back.
  bool switched_ = false;
};

}  // namespace graphserve
