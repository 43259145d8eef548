#pragma once
// A set of a request's tensors, bit i for tensor i in interface order: those
// in pinned host memory, or in device memory, which the GPU's copy engines
// reach directly (Notes [Pinned shared memory] and [CUDA shared memory] in
// server/shared_memory.h). A mask, not a vector, so that requests and
// chunks carry it without an allocation; only tensors 0..63 are tracked, and
// any later one goes through staging (a CUDA one through the host).

#include <cstddef>
#include <cstdint>

namespace graphserve {

using TensorMask = uint64_t;

inline constexpr TensorMask MaskBit(size_t index) {
  return index < 64 ? TensorMask{1} << index : TensorMask{0};
}
inline constexpr bool InMask(TensorMask tensors, size_t index) {
  return (tensors & MaskBit(index)) != 0;
}

}  // namespace graphserve
