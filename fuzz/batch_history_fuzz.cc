// A batch-size history file (planning/batch_sizes.h), the input of
// `graphserve-capture select`. Invariants: a parsed history has positive
// sizes and counts within the documented bounds, and choosing sizes from it
// (the next step of the command) returns ascending, distinct, positive sizes
// topped by TopBatchSize.

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "planning/batch_sizes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace graphserve;
  if (size < 1) return 0;
  const int num_sizes = 1 + data[0] % 8;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
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
