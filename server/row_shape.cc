#include "server/row_shape.h"

#include <algorithm>
#include <cstring>

namespace graphserve {

namespace {

bool AllZero(const PadElement& pad, size_t element_bytes) {
  for (size_t b = 0; b < element_bytes; ++b) {
    if (pad[b] != std::byte{0}) return false;
  }
  return true;
}

void Fill(std::byte* to, size_t elements, const PadElement& pad, size_t element_bytes) {
  if (AllZero(pad, element_bytes)) {
    std::memset(to, 0, elements * element_bytes);
    return;
  }
  for (size_t e = 0; e < elements; ++e) std::memcpy(to + e * element_bytes, pad.data(), element_bytes);
}

// Bytes from one index of dim `d` to the next, for a row of `dims`.
std::vector<size_t> Strides(const Dims& dims, size_t element_bytes) {
  std::vector<size_t> strides(dims.size());
  size_t stride = element_bytes;
  for (size_t d = dims.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= static_cast<size_t>(dims[d]);
  }
  return strides;
}

// Walks one row of the small dims `small` placed at the start of one row of
// the large dims `large` (same rank, every dim at least small's), from dim
// `d` on: `copy(large_at, small_at, bytes)` for each contiguous run the two
// share, `fill(large_at, elements)` for each run only the large row has.
struct BlockWalk {
  const Dims& small;
  const Dims& large;
  std::vector<size_t> small_strides;
  std::vector<size_t> large_strides;
  size_t element_bytes;

  template <typename Copy, typename Fill>
  void Run(size_t d, size_t small_at, size_t large_at, Copy& copy, Fill& fill) const {
    if (small.empty()) {
      copy(large_at, small_at, element_bytes);
      return;
    }
    const auto inside = static_cast<size_t>(small[d]);
    const auto outside = static_cast<size_t>(large[d]) - inside;
    if (d + 1 == small.size()) {
      copy(large_at, small_at, inside * element_bytes);
      if (outside > 0) fill(large_at + inside * element_bytes, outside);
      return;
    }
    for (size_t k = 0; k < inside; ++k) {
      Run(d + 1, small_at + k * small_strides[d], large_at + k * large_strides[d], copy, fill);
    }
    if (outside > 0) {
      fill(large_at + inside * large_strides[d], outside * large_strides[d] / element_bytes);
    }
  }
};

BlockWalk WalkOf(const TensorRow& small, const TensorRow& large) {
  return {small.dims, large.dims, Strides(small.dims, small.element_bytes),
          Strides(large.dims, large.element_bytes), large.element_bytes};
}

}  // namespace

bool BucketHolds(const std::vector<int64_t>& bucket, const std::vector<int64_t>& extents) {
  if (bucket.size() != extents.size()) return false;
  for (size_t d = 0; d < bucket.size(); ++d) {
    if (bucket[d] < extents[d]) return false;
  }
  return true;
}

TensorRow TensorRowOf(const Dims& dims, size_t element_bytes) {
  size_t elements = 1;
  for (int64_t dim : dims) elements *= static_cast<size_t>(dim);
  return {.dims = dims, .element_bytes = element_bytes, .bytes = elements * element_bytes};
}

RowShape RowShapeOfBytes(const std::vector<size_t>& input_bytes,
                         const std::vector<size_t>& output_bytes) {
  RowShape shape;
  for (size_t bytes : input_bytes) shape.inputs.push_back(TensorRowOf({static_cast<int64_t>(bytes)}, 1));
  for (size_t bytes : output_bytes) {
    shape.outputs.push_back(TensorRowOf({static_cast<int64_t>(bytes)}, 1));
  }
  return shape;
}

bool LeadingBlock(const TensorRow& part, const TensorRow& whole) {
  if (part.dims.size() != whole.dims.size()) return false;
  if (part.dims.empty()) return true;
  return part.dims[0] <= whole.dims[0] &&
         std::equal(part.dims.begin() + 1, part.dims.end(), whole.dims.begin() + 1);
}

std::optional<uint8_t> RepeatedByte(const PadElement& pad, size_t element_bytes) {
  for (size_t b = 1; b < element_bytes; ++b) {
    if (pad[b] != pad[0]) return std::nullopt;
  }
  return static_cast<uint8_t>(pad[0]);
}

void PadRows(const std::byte* from, const TensorRow& from_row, std::byte* to,
             const TensorRow& to_row, const PadElement& pad, int64_t rows) {
  const BlockWalk walk = WalkOf(from_row, to_row);
  for (int64_t row = 0; row < rows; ++row) {
    const std::byte* source = from + static_cast<size_t>(row) * from_row.bytes;
    std::byte* target = to + static_cast<size_t>(row) * to_row.bytes;
    auto copy = [&](size_t large_at, size_t small_at, size_t bytes) {
      std::memcpy(target + large_at, source + small_at, bytes);
    };
    auto fill = [&](size_t large_at, size_t elements) {
      Fill(target + large_at, elements, pad, to_row.element_bytes);
    };
    walk.Run(0, 0, 0, copy, fill);
  }
}

void SliceRows(const std::byte* from, const TensorRow& from_row, std::byte* to,
               const TensorRow& to_row, int64_t rows) {
  const BlockWalk walk = WalkOf(to_row, from_row);
  for (int64_t row = 0; row < rows; ++row) {
    const std::byte* source = from + static_cast<size_t>(row) * from_row.bytes;
    std::byte* target = to + static_cast<size_t>(row) * to_row.bytes;
    auto copy = [&](size_t large_at, size_t small_at, size_t bytes) {
      std::memcpy(target + small_at, source + large_at, bytes);
    };
    auto skip = [](size_t /*large_at*/, size_t /*elements*/) {};
    walk.Run(0, 0, 0, copy, skip);
  }
}

}  // namespace graphserve
