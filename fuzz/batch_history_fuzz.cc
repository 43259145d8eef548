// A batch-size history file (planning/batch_sizes.h), the input of
// `graphserve-capture select`, and the same bytes as a (rows, length)
// history (planning/shape_grid.h), the input of `select --max-graphs`.
// Invariants: a parsed history has positive sizes and counts within the
// documented bounds; choosing sizes from it (the next step of the command)
// returns ascending, distinct, positive sizes topped by TopBatchSize; choosing
// a grid stays within the budget, its largest bucket the longest length, its
// cost the one ExpectedPaddedPositions gives.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "planning/batch_sizes.h"
#include "planning/shape_grid.h"

namespace {

// The planner is O(graphs x distinct values^2) per round: histories of
// more distinct shapes than this are parsed only, to keep each input fast.
constexpr size_t kMaxPlannedShapes = 64;

void CheckShapeHistory(const std::string& text, int max_graphs) {
  using namespace graphserve;
  absl::StatusOr<ShapeHistogram> history = ParseShapeHistory(text, "fuzz.shapes");
  if (!history.ok()) return;
  int64_t longest = 0;
  for (const auto& [shape, count] : *history) {
    FUZZ_CHECK(shape.first >= 1 && shape.second >= 1, "positive rows and lengths");
    FUZZ_CHECK(count >= 1 && count <= kMaxHistoryRequests, "counts within bounds");
    longest = std::max(longest, shape.second);
  }
  if (history->size() > kMaxPlannedShapes) return;
  absl::StatusOr<GridChoice> grid = ChooseSizesAndBuckets(*history, max_graphs, std::nullopt);
  if (!grid.ok()) return;
  FUZZ_CHECK(!grid->sizes.empty() && !grid->buckets.empty(), "sizes and buckets");
  FUZZ_CHECK(grid->sizes.size() * grid->buckets.size() <= static_cast<size_t>(max_graphs),
             "within the budget of graphs");
  FUZZ_CHECK(grid->buckets.back() == longest, "the largest bucket is the longest length");
  FUZZ_CHECK(grid->expected_padded_positions ==
                 ExpectedPaddedPositions(*history, grid->sizes, grid->buckets),
             "the cost the cost function gives");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  if (size < 1) return 0;
  const int num_sizes = 1 + data[0] % 8;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  CheckShapeHistory(text, num_sizes);
  absl::StatusOr<BatchHistogram> history = ParseBatchHistory(text, "fuzz.history");
  if (!history.ok()) return 0;
  for (const auto& [batch, count] : *history) {
    FUZZ_CHECK(batch >= 1 && batch <= kMaxHistoryBatchSize, "sizes within bounds");
    FUZZ_CHECK(count >= 1 && count <= kMaxHistoryRequests, "counts within bounds");
  }
  absl::StatusOr<SizeChoice> choice = ChooseBatchSizes(*history, num_sizes, std::nullopt);
  if (!choice.ok()) return 0;
  FUZZ_CHECK(!choice->sizes.empty() && static_cast<int>(choice->sizes.size()) <= num_sizes,
             "at most num_sizes sizes");
  for (size_t i = 0; i < choice->sizes.size(); ++i) {
    FUZZ_CHECK(choice->sizes[i] >= 1, "positive sizes");
    FUZZ_CHECK(i == 0 || choice->sizes[i - 1] < choice->sizes[i], "ascending and distinct");
  }
  FUZZ_CHECK(choice->sizes.back() == TopBatchSize(*history, std::nullopt), "topped by the top size");
  return 0;
}
