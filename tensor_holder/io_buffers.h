#pragma once
// Per stream slot, for each named graph input and output: a device buffer the
// graph reads or writes, and one or more pinned host staging buffers the
// server copies request rows into (and response rows out of): several let a
// slot stage the next chunk while the current one runs (Note
// [Double-buffered staging] in capture/graph_set.h). Pinned memory makes the
// copies truly asynchronous, so they can run on the slot's stream or be
// recorded as graph memcpy nodes.

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cuda_handles.h"

namespace graphserve {

// Thread-compatible: one thread reserves while setting a slot up; afterwards
// the const accessors may be called from any thread.
class IoBuffers {
 public:
  // No buffers yet, on `device`, each name to get `host_buffers` (1 or 2)
  // pinned host sides; InvalidArgument if the device does not exist.
  static absl::StatusOr<std::shared_ptr<IoBuffers>> Create(int device, int host_buffers = 1);

  // Makes `name`'s device and pinned host buffers (all of them) hold at least `bytes`
  // (rounded up to a multiple of 256, and at least 256, so every reserved
  // name has non-null buffers). Never shrinks. Growing reallocates both: the
  // pointers change and contents are not kept, so reserve the largest batch
  // size before capturing any graph that uses them, and never while one may
  // run. On failure (ResourceExhausted) the buffers of `name` are unchanged.
  absl::Status Reserve(const std::string& name, size_t bytes);

  // The buffers of `name`, owned by this object; nullptr if `name` was never
  // reserved.
  [[nodiscard]] void* device(const std::string& name) const;
  // Host side `side` (0 .. host_buffers - 1).
  [[nodiscard]] void* host(const std::string& name, int side = 0) const;
  // Bytes held for `name` (the same on both sides); 0 if unknown.
  [[nodiscard]] size_t bytes(const std::string& name) const;

  // Totals over all names.
  [[nodiscard]] size_t device_bytes() const;
  [[nodiscard]] size_t pinned_bytes() const;
  [[nodiscard]] int device() const { return device_; }
  [[nodiscard]] int host_buffers() const { return host_buffers_; }
  static constexpr int kMaxHostBuffers = 2;

  ~IoBuffers();
  IoBuffers(const IoBuffers&) = delete;
  IoBuffers& operator=(const IoBuffers&) = delete;

  // Implementation details follow.
 private:
  struct Slot {
    DeviceBuffer device;
    std::array<PinnedHostBuffer, kMaxHostBuffers> host;  // the first host_buffers_ used
  };

  IoBuffers(int device, int host_buffers) : device_(device), host_buffers_(host_buffers) {}
  [[nodiscard]] const Slot* Find(const std::string& name) const;

  int device_;
  int host_buffers_;
  std::map<std::string, Slot> slots_;
};

}  // namespace graphserve
