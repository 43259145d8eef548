#pragma once
// One device allocation that holds the activations of every plan (batch size)
// of one stream slot. Plans place their buffers at fixed offsets from base()
// (see tensor_holder/memory_planner.h), so captured graphs replay on the same
// addresses. The N graphs of a slot share it because a slot runs one graph at
// a time; that is what keeps M x N graphs at M x (largest arena) bytes.

#include <cstddef>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cuda_handles.h"

namespace graphserve {

// Thread-compatible: one thread sets a slot up; afterwards the const
// accessors may be called from any thread.
class StreamArena {
 public:
  // An empty arena on `device`; InvalidArgument if the device does not exist.
  static absl::StatusOr<std::shared_ptr<StreamArena>> Create(int device);

  // Grows the arena to at least `bytes`; never shrinks (a smaller request is
  // a no-op and keeps base()). Growing reallocates: base() changes and the
  // contents are not kept, so every address taken from the old base is
  // dangling. Callers therefore reserve the largest plan's size before
  // capturing any graph on this arena (capture largest batch size first),
  // and never call Reserve while a graph using the arena may run or while
  // this thread is capturing (cudaMalloc/cudaFree are not capturable).
  // On failure (ResourceExhausted) the arena is unchanged.
  absl::Status Reserve(size_t bytes);

  // Start of the arena (at least 256-byte aligned, as cudaMalloc returns);
  // nullptr while bytes() is 0. The arena owns the memory.
  [[nodiscard]] void* base() const { return buffer_.get(); }
  [[nodiscard]] size_t bytes() const { return buffer_.bytes(); }
  [[nodiscard]] int device() const { return device_; }

  ~StreamArena();
  StreamArena(const StreamArena&) = delete;
  StreamArena& operator=(const StreamArena&) = delete;

  // Implementation details follow.
 private:
  explicit StreamArena(int device) : device_(device) {}

  int device_;
  DeviceBuffer buffer_;
};

}  // namespace graphserve
