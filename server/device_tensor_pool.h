#pragma once
// Device buffers for the tensors an ensemble passes between its steps (Note
// [Ensemble tensors on the device] in server/ensemble_scheduler.h): each a
// CUDA region of the server's own, which step requests name as a client
// names a CUDA shared-memory region.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/shared_memory.h"

namespace graphserve {

struct DeviceTensorPoolLimits {
  // Buffers allocated at once, and their bytes: past either a tensor goes
  // through the host, so that many requests in flight cannot take the GPU's
  // memory from the models.
  int64_t max_buffers = 64;
  uint64_t max_bytes = uint64_t{1} << 30;
};

// Buffers are kept once allocated and handed out again, so a steady load
// allocates nothing. Thread-safe.
class DeviceTensorPool {
 public:
  // `name` prefixes the regions' names (for logs and errors).
  explicit DeviceTensorPool(std::string name, DeviceTensorPoolLimits limits = {});
  DeviceTensorPool(const DeviceTensorPool&) = delete;
  DeviceTensorPool& operator=(const DeviceTensorPool&) = delete;

  // One buffer: region `region` of registry(), `capacity` bytes on GPU `gpu`.
  struct Buffer {
    std::string region;
    int gpu = 0;
    uint64_t capacity = 0;
  };

  // A free buffer of at least `bytes` on GPU `gpu`, else a new one of
  // `bytes` rounded up to a power of two (so requests of other batch sizes
  // reuse it); nullopt when a new one would pass the limits or CUDA cannot
  // allocate it.
  std::optional<Buffer> Take(int gpu, uint64_t bytes);
  // Hands `buffer` out again; nothing may read or write it after.
  void Give(Buffer buffer);

  // Where step requests find the buffers' regions.
  [[nodiscard]] const SharedMemoryRegistry* registry() const { return &registry_; }
  // Buffers allocated (free or taken).
  [[nodiscard]] int64_t buffers() const;

 private:
  const std::string name_;
  const DeviceTensorPoolLimits limits_;
  SharedMemoryRegistry registry_;

  mutable absl::Mutex mu_;
  // Free buffers by (GPU, capacity).
  std::map<std::pair<int, uint64_t>, std::vector<Buffer>> free_ ABSL_GUARDED_BY(mu_);
  int64_t buffers_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_region_ ABSL_GUARDED_BY(mu_) = 0;  // names are never reused
  bool refused_logged_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace graphserve
