#pragma once
// Which captured graph serves a chunk: its batch size and its shape bucket.

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

namespace graphserve {

// Note [Graph keys]
// ~~~~~~~~~~~~~~~~~
// A captured graph has fixed shapes: a batch size and, for a model with shape
// dims (a sequence length, an image's height and width: Note [Shape dims] in
// runtime/ir.h), one extent for each. That pair is the graph's key, and
// everything that picks, counts or reports graphs (the graph set, launch
// chunks, the planner, metrics, the capture section of config.pbtxt) speaks
// in keys. The bucket lists the extents in the order of the model's
// ShapeDimNames; a model without shape dims has one bucket, the empty one,
// so its keys are its batch sizes and read as before ("8"). Keys order by
// batch, then bucket, so a set's keys sort as its batch sizes did.
struct GraphKey {
  int64_t batch_size = 0;
  std::vector<int64_t> bucket;  // one extent per shape dim

  friend auto operator<=>(const GraphKey&, const GraphKey&) = default;
  friend bool operator==(const GraphKey&, const GraphKey&) = default;

  // True when this key's graph can take rows of `shape`'s key: at least
  // its batch and, dim by dim, at least its extents (padding fills the rest).
  [[nodiscard]] bool Holds(const GraphKey& shape) const;
};

// Keys of the batch sizes alone, for a model without shape dims.
std::vector<GraphKey> BatchOnlyKeys(const std::vector<int64_t>& batch_sizes);

// The keys' batch sizes, in their order.
std::vector<int64_t> BatchSizesOf(const std::vector<GraphKey>& keys);

// "8" for a key without a bucket, "8x[128]" or "8x[224,224]" with one: the
// batch, then the bucket's extents in shape-dim order.
std::string GraphKeyString(const GraphKey& key);

}  // namespace graphserve
