#pragma once
// A request's rows as every stage of the server sees them: validated, queued,
// and cut into the segments a chunk runs. See Note [Row segments] in
// server/request_queue.h.

#include <cstdint>
#include <vector>

#include "common/tensor_rows.h"
#include "server/row_shape.h"

namespace graphserve {

// `rows` rows of one shape, per tensor where they lie (the request's own
// memory, a shared-memory region or converted contents: borrowed, the
// request outlives every view of it) and in which memory. A slice of it
// (Rows) is the same view, moved along.
struct RowView {
  int64_t rows = 0;
  // Each tensor's row (its extents, for a model with shape dims: Note
  // [Shape buckets] in server/shape_buckets.h). Null until the request's
  // shape is known (ValidatedRequest; a queued model without shape dims
  // takes the stream pool's one row shape).
  const RowShape* shape = nullptr;
  // Per model input (interface order): the rows, pitch apart.
  std::vector<InputRows> inputs;
  // Per model output (interface order): where the rows go; data null for an
  // output the request did not ask for.
  std::vector<OutputRows> outputs;

  // Rows [first, first + count) of this view.
  [[nodiscard]] RowView Rows(int64_t first, int64_t count) const {
    RowView slice{count, shape, {}, {}};
    slice.inputs.reserve(inputs.size());
    for (const InputRows& input : inputs) slice.inputs.push_back(input.From(first));
    slice.outputs.reserve(outputs.size());
    for (const OutputRows& output : outputs) slice.outputs.push_back(output.From(first));
    return slice;
  }
  // Whether any tensor lies in `memory` (an output by its memory alone: a
  // validated request's outputs have no data yet).
  [[nodiscard]] bool Uses(RowMemory memory) const {
    for (const InputRows& input : inputs) {
      if (input.memory == memory) return true;
    }
    for (const OutputRows& output : outputs) {
      if (output.memory == memory) return true;
    }
    return false;
  }
};

}  // namespace graphserve
