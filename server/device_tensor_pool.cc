#include "server/device_tensor_pool.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// Small buffers are rounded up to this, so that few sizes exist.
constexpr uint64_t kSmallestCapacity = 4096;

}  // namespace

DeviceTensorPool::DeviceTensorPool(std::string name, DeviceTensorPoolLimits limits)
    : name_(std::move(name)),
      limits_(limits),
      // The pool's own regions only, one per buffer.
      registry_(SharedMemoryRegistryOptions{.max_regions = static_cast<int>(limits.max_buffers)}) {}

std::optional<DeviceTensorPool::Buffer> DeviceTensorPool::Take(int gpu, uint64_t bytes) {
  const uint64_t capacity = std::bit_ceil(std::max(bytes, kSmallestCapacity));
  std::string region;
  {
    absl::MutexLock lock(&mu_);
    // The smallest free buffer that holds `bytes` on `gpu`.
    for (auto it = free_.lower_bound({gpu, bytes}); it != free_.end() && it->first.first == gpu;
         ++it) {
      if (it->second.empty()) continue;
      Buffer buffer = std::move(it->second.back());
      it->second.pop_back();
      return buffer;
    }
    if (buffers_ >= limits_.max_buffers || bytes_ + capacity > limits_.max_bytes) {
      if (!refused_logged_) {
        refused_logged_ = true;
        spdlog::info(
            "{}: {} buffers of {} bytes in use, the limit; tensors past it go through "
            "the host",
            name_, buffers_, bytes_);
      }
      return std::nullopt;
    }
    // Counted before the allocation, outside the lock, so that concurrent
    // Takes respect the limits.
    region = absl::StrCat(name_, "/", next_region_++);
    ++buffers_;
    bytes_ += capacity;
  }
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> allocated =
      SharedMemoryRegion::AllocateCuda(region, gpu, capacity);
  absl::Status added = allocated.status();
  if (added.ok()) added = registry_.Add(*std::move(allocated));
  if (!added.ok()) {
    spdlog::warn("{}: a tensor goes through the host: {}", name_, std::string(added.message()));
    absl::MutexLock lock(&mu_);
    --buffers_;
    bytes_ -= capacity;
    return std::nullopt;
  }
  return Buffer{.region = std::move(region), .gpu = gpu, .capacity = capacity};
}

void DeviceTensorPool::Give(Buffer buffer) {
  absl::MutexLock lock(&mu_);
  const std::pair<int, uint64_t> key(buffer.gpu, buffer.capacity);
  free_[key].push_back(std::move(buffer));
}

int64_t DeviceTensorPool::buffers() const {
  absl::MutexLock lock(&mu_);
  return buffers_;
}

}  // namespace graphserve
