#include "tensor_holder/stream_arena.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

absl::StatusOr<std::shared_ptr<StreamArena>> StreamArena::Create(int device) {
  RETURN_IF_ERROR(AnnotateStatus(ValidateCudaDevice(device), "creating a stream arena"));
  return std::shared_ptr<StreamArena>(new StreamArena(device));
}

absl::Status StreamArena::Reserve(size_t bytes) {
  if (bytes <= buffer_.bytes()) return absl::OkStatus();
  CudaDeviceGuard guard(device_);
  RETURN_IF_ERROR(guard.status());
  // Allocate before releasing the old buffer, so a failure leaves the arena
  // as it was.
  absl::StatusOr<DeviceBuffer> grown = DeviceBuffer::Allocate(bytes);
  if (!grown.ok()) {
    return AnnotateStatus(grown.status(),
                          absl::StrCat("growing the stream arena on device ", device_, " from ",
                                       buffer_.bytes(), " to ", bytes, " bytes"));
  }
  buffer_ = *std::move(grown);  // frees the old allocation
  return absl::OkStatus();
}

StreamArena::~StreamArena() {
  if (buffer_.get() == nullptr) return;
  // Free with the arena's device current; cudaFree is attempted even if the
  // device cannot be selected (unified addressing finds the allocation).
  CudaDeviceGuard guard(device_);
  buffer_ = DeviceBuffer();
}

}  // namespace graphserve
