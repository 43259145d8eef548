#include "common/graph_key.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphserve {

bool GraphKey::Holds(const GraphKey& shape) const {
  if (batch_size < shape.batch_size || bucket.size() != shape.bucket.size()) return false;
  for (size_t d = 0; d < bucket.size(); ++d) {
    if (bucket[d] < shape.bucket[d]) return false;
  }
  return true;
}

std::vector<GraphKey> BatchOnlyKeys(const std::vector<int64_t>& batch_sizes) {
  std::vector<GraphKey> keys;
  keys.reserve(batch_sizes.size());
  for (int64_t size : batch_sizes) keys.push_back({size, {}});
  return keys;
}

std::vector<int64_t> BatchSizesOf(const std::vector<GraphKey>& keys) {
  std::vector<int64_t> sizes;
  sizes.reserve(keys.size());
  for (const GraphKey& key : keys) sizes.push_back(key.batch_size);
  return sizes;
}

std::string GraphKeyString(const GraphKey& key) {
  if (key.bucket.empty()) return absl::StrCat(key.batch_size);
  return absl::StrCat(key.batch_size, "x[", absl::StrJoin(key.bucket, ","), "]");
}

}  // namespace graphserve
