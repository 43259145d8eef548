#pragma once
// Scoped selection of the current CUDA device, which is thread-local state:
// the guard switches this thread to a device and switches it back on scope
// exit, so code that owns a device (a graph set, a weight store, an arena)
// sets it itself and never leaves a caller on a device it did not choose
// (PyTorch's CUDAGuard). The CUDA runtime alone: the client uses it too.

#include "absl/status/status.h"

namespace graphserve {

// Usage:
//   CudaDeviceGuard guard(device);
//   RETURN_IF_ERROR(guard.status());
// If status() is not OK the current device was left unchanged (or could not
// be read) and the destructor does nothing. Already on `device`, the guard
// costs one cudaGetDevice (thread-local, no driver call), so a hot path may
// take one per call.
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
