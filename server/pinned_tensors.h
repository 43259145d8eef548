#pragma once
// Which of a request's tensors lie in memory the GPU's copy engines reach
// directly, pinned host memory or device memory (Notes [Pinned shared
// memory] and [CUDA shared memory] in server/shared_memory.h): bit i for
// tensor i in interface order. A mask, not a vector, so that requests and
// chunks carry it without an allocation; only tensors 0..63 are tracked, and
// any later one goes through staging (a CUDA one through the host).

#include <cstddef>
#include <cstdint>

namespace graphserve {

using PinnedTensors = uint64_t;

inline constexpr PinnedTensors PinnedBit(size_t index) {
  return index < 64 ? PinnedTensors{1} << index : PinnedTensors{0};
}
inline constexpr bool IsPinned(PinnedTensors tensors, size_t index) {
  return (tensors & PinnedBit(index)) != 0;
}

}  // namespace graphserve
