#pragma once
// Note [Step workspaces]
// ~~~~~~~~~~~~~~~~~~~~~~
// A library call's scratch memory (cuBLASLt's, cuDNN's) belongs to its step:
// the executor plans it as a buffer of the slot's arena that lives only while
// that step runs (a PlannedBuffer with no readers), so it takes bytes that
// hold no live activation at that point, and two steps that may run at once
// on different lanes never share them (Note [Reuse across streams]). No slot
// holds a fixed workspace beside its arena.
//
// A kernel says what its current algorithm needs at plan time (Require, and
// again after Autotune). Autotune times candidates in scratch memory of its
// own, so the executor first plans the arena for the activations alone,
// autotunes, then plans it with the chosen algorithms' workspaces and places
// them: the arena never shrinks, and would otherwise keep room for
// algorithms that were not chosen. Kernels read the address at every
// Enqueue: the arena may move while the slot's plans grow it, before any
// graph is captured.

#include <cstddef>
#include <memory>
#include <utility>

#include "tensor_holder/stream_arena.h"

namespace graphserve {

// One step's workspace. Plan time only (one thread); get() is then read on
// the slot's thread.
class StepWorkspace {
 public:
  // The bytes the step's library call needs (replacing what was required
  // before: a new algorithm may need less).
  void Require(size_t bytes) { bytes_ = bytes; }
  [[nodiscard]] size_t bytes() const { return bytes_; }

  // Places the workspace at `offset` bytes into `arena` (the executor, after
  // planning the arena).
  void Place(std::shared_ptr<const StreamArena> arena, size_t offset) {
    arena_ = std::move(arena);
    offset_ = offset;
  }

  // The workspace's device address; null when it needs no bytes or is not
  // placed yet.
  [[nodiscard]] void* get() const {
    if (bytes_ == 0 || arena_ == nullptr || arena_->base() == nullptr) return nullptr;
    return static_cast<char*>(arena_->base()) + offset_;
  }

 private:
  size_t bytes_ = 0;
  std::shared_ptr<const StreamArena> arena_;
  size_t offset_ = 0;
};

}  // namespace graphserve
