#pragma once
// Where one tensor's rows of a request lie, and how far apart: the unit a
// runner copies by. See Note [Pitched row copies] in capture/graph_set.h.

#include <cstddef>
#include <cstdint>

namespace graphserve {

// The memory a tensor's rows lie in, which decides who copies them: pageable
// host memory is read and written by the host (through pinned staging);
// pinned host memory and device memory are reached by the GPU's copy engines
// directly (Notes [Pinned shared memory] and [CUDA shared memory] in
// server/shared_memory.h).
enum class RowMemory : uint8_t { kPageable, kPinned, kDevice };

// One tensor's rows: row r at data + r * pitch, each `pitch` bytes long
// (a request's rows are contiguous, each the bytes of one row at the
// request's own extents).
template <typename Byte>
struct TensorRowsOf {
  Byte* data = nullptr;  // an output nobody asked for: null
  size_t pitch = 0;
  RowMemory memory = RowMemory::kPageable;

  [[nodiscard]] Byte* row(int64_t r) const { return data + static_cast<size_t>(r) * pitch; }
  // Whether the GPU's copy engines reach the rows without the host.
  [[nodiscard]] bool reached_by_device() const { return memory != RowMemory::kPageable; }
  // The same memory from row `first` on.
  [[nodiscard]] TensorRowsOf From(int64_t first) const {
    return {data == nullptr ? nullptr : row(first), pitch, memory};
  }
};

using InputRows = TensorRowsOf<const std::byte>;
using OutputRows = TensorRowsOf<std::byte>;

}  // namespace graphserve
