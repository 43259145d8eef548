#include "tensor_holder/io_buffers.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {
namespace {

// cudaMalloc's alignment; a coarser granularity also lets small growths
// (one more row) fit without reallocating.
constexpr size_t kGranule = 256;

}  // namespace

absl::StatusOr<std::shared_ptr<IoBuffers>> IoBuffers::Create(int device, int host_buffers) {
  RETURN_IF_ERROR(AnnotateStatus(ValidateCudaDevice(device), "creating I/O buffers"));
  if (host_buffers < 1 || host_buffers > kMaxHostBuffers) {
    return absl::InvalidArgumentError(absl::StrCat("I/O buffers take 1 to ", kMaxHostBuffers,
                                                   " host buffers per name, not ", host_buffers));
  }
  return std::shared_ptr<IoBuffers>(new IoBuffers(device, host_buffers));
}

absl::Status IoBuffers::Reserve(const std::string& name, size_t bytes) {
  if (bytes > SIZE_MAX - kGranule) {
    return absl::InvalidArgumentError(
        absl::StrCat("I/O buffer '", name, "': ", bytes, " bytes is too large"));
  }
  const size_t rounded = bytes == 0 ? kGranule : (bytes + kGranule - 1) / kGranule * kGranule;
  const Slot* existing = Find(name);
  if (existing != nullptr && existing->device.bytes() >= rounded) return absl::OkStatus();

  CudaDeviceGuard guard(device_);
  RETURN_IF_ERROR(guard.status());
  // Allocate both sides before releasing anything, so a failure leaves the
  // old buffers in place.
  const std::string context =
      absl::StrCat("reserving I/O buffer '", name, "' of ", rounded, " bytes on device ", device_);
  absl::StatusOr<DeviceBuffer> device = DeviceBuffer::Allocate(rounded);
  if (!device.ok()) return AnnotateStatus(device.status(), context);
  std::array<PinnedHostBuffer, kMaxHostBuffers> hosts;
  for (int side = 0; side < host_buffers_; ++side) {
    absl::StatusOr<PinnedHostBuffer> host = PinnedHostBuffer::Allocate(rounded);
    if (!host.ok()) return AnnotateStatus(host.status(), context);
    hosts[static_cast<size_t>(side)] = *std::move(host);
  }
  Slot& slot = slots_[name];
  slot.device = *std::move(device);
  slot.host = std::move(hosts);
  return absl::OkStatus();
}

const IoBuffers::Slot* IoBuffers::Find(const std::string& name) const {
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : &it->second;
}

void* IoBuffers::device(const std::string& name) const {
  const Slot* slot = Find(name);
  return slot == nullptr ? nullptr : slot->device.get();
}

void* IoBuffers::host(const std::string& name, int side) const {
  const Slot* slot = Find(name);
  return slot == nullptr || side < 0 || side >= host_buffers_
             ? nullptr
             : slot->host[static_cast<size_t>(side)].get();
}

size_t IoBuffers::bytes(const std::string& name) const {
  const Slot* slot = Find(name);
  return slot == nullptr ? 0 : slot->device.bytes();
}

size_t IoBuffers::device_bytes() const {
  size_t total = 0;
  for (const auto& [name, slot] : slots_) total += slot.device.bytes();
  return total;
}

size_t IoBuffers::pinned_bytes() const {
  size_t total = 0;
  for (const auto& [name, slot] : slots_) {
    for (const PinnedHostBuffer& host : slot.host) total += host.bytes();
  }
  return total;
}

IoBuffers::~IoBuffers() {
  if (slots_.empty()) return;
  // Free with the slot's device current (see StreamArena::~StreamArena).
  CudaDeviceGuard guard(device_);
  slots_.clear();
}

}  // namespace graphserve
