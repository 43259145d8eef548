#pragma once
// One row of a request, or of a captured graph's shape bucket: per input and
// output the dims and bytes of one batch row. A request shorter than its
// bucket is padded into the bucket's rows on the way in and sliced out of
// them on the way out (Note [Shape buckets]).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/tensor.h"

namespace graphserve {

// One batch row of one tensor.
struct TensorRow {
  Dims dims;  // the batch dimension left out
  size_t element_bytes = 0;
  size_t bytes = 0;  // the elements of `dims` times element_bytes
};

// The bytes a padded position of an input gets: one element, little-endian,
// in the input's type (only the first element_bytes are used).
using PadElement = std::array<std::byte, 8>;

struct RowShape {
  // The shape dims' extents (ModelInterface::shape_dims order); empty for a
  // model without shape dims, whose requests all share its one row shape.
  std::vector<int64_t> extents;
  std::vector<TensorRow> inputs;  // interface order
  std::vector<TensorRow> outputs;
  // A bucket's: per input, what its padded positions hold. Empty in a
  // request's shape.
  std::vector<PadElement> input_pad;

  // Whether a graph of this shape takes rows of `shape` as they are (same
  // extents), with no padding and no slicing.
  [[nodiscard]] bool SameAs(const RowShape& shape) const { return extents == shape.extents; }
};

// Whether a bucket of extents `bucket` holds rows of `extents`: as many
// shape dims, each at least as long.
bool BucketHolds(const std::vector<int64_t>& bucket, const std::vector<int64_t>& extents);

TensorRow TensorRowOf(const Dims& dims, size_t element_bytes);

// A row shape of bytes alone (each tensor's row one dim of bytes), for
// runners and tests that move rows without looking inside them.
RowShape RowShapeOfBytes(const std::vector<size_t>& input_bytes,
                         const std::vector<size_t>& output_bytes);

// Whether each row of `part` is the leading block of a row of `whole`: the
// same rank, every dim but the first equal, the first no longer (Note
// [Pitched row copies] in capture/graph_set.h). Then a row of `part` lies
// at the start of a row of `whole`, and the device pads or slices it by a
// pitched copy.
bool LeadingBlock(const TensorRow& part, const TensorRow& whole);

// The byte every byte of `pad` (its first `element_bytes`) is, so that a
// memset writes it; none when they differ (GPT-2's pad token 50256).
std::optional<uint8_t> RepeatedByte(const PadElement& pad, size_t element_bytes);

// Copies `rows` rows of `from` (each of `from_row.dims`) into `to` (each of
// `to_row.dims`, every dim at least from's, the same rank): each row's
// elements keep their index, and every position `from` lacks gets `pad`.
void PadRows(const std::byte* from, const TensorRow& from_row, std::byte* to,
             const TensorRow& to_row, const PadElement& pad, int64_t rows);

// The reverse: the leading block of `to_row.dims` of each of `rows` rows of
// `from` (each of `from_row.dims`) into `to`.
void SliceRows(const std::byte* from, const TensorRow& from_row, std::byte* to,
               const TensorRow& to_row, int64_t rows);

}  // namespace graphserve
