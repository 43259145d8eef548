#pragma once
// Typical batch sizes: which N batch sizes to capture CUDA graphs for, chosen
// from the history of request batch sizes so that the expected number of
// padded rows per request is as small as it can be.
//
// Serving model (the one cost function below, shared by the exact choice, the
// power-of-two ladder and the tests): with chosen sizes S and C = max(S),
//   - a request of b <= C rows runs on the smallest s in S with s >= b, and
//     pads s - b rows;
//   - a request of b > C rows runs as floor(b / C) graphs of C rows (no
//     padding) plus, when r = b mod C > 0, one graph of the smallest s >= r,
//     padding s - r rows.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// Request batch size -> number of requests of that size. Sizes are positive,
// counts positive.
using BatchHistogram = std::map<int64_t, int64_t>;

// Bounds that keep every padded-row total inside int64_t (their product is
// below 2^62). ReadBatchHistory and ChooseBatchSizes enforce them.
inline constexpr int64_t kMaxHistoryBatchSize = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxHistoryRequests = (int64_t{1} << 31) - 1;

// The lines of a request history: `KEY` (one request) or `KEY,COUNT`, with
// whitespace around fields, blank lines and `#` comments (whole line or
// trailing) ignored. Calls `add(key, count)` for each line (count >= 0, 1
// when absent); an error `add` returns is reported as "SOURCE:LINE:
// message". InvalidArgument naming the source and line for a count that is
// not a non-negative integer, more than two fields (`form` says what a line
// holds, e.g. "`size` or `size,count`") or more than kMaxHistoryRequests
// requests in all; "SOURCE: `what` has no requests" when they add to none.
// ParseBatchHistory and the (rows, length) history (shape_grid.h) read
// their lines through it.
absl::Status ParseHistoryLines(const std::string& text, const std::string& source,
                               absl::string_view form, absl::string_view what,
                               const std::function<absl::Status(absl::string_view key,
                                                                int64_t count)>& add);

// The text of history file `path`: NotFound when it cannot be opened,
// DataLoss when it cannot be read, `what` naming it ("batch-size history").
absl::StatusOr<std::string> ReadHistoryText(const std::string& path, absl::string_view what);

// Reads a batch-size history. Each line is either `size` (one request) or
// `size,count`; whitespace around fields, blank lines and `#` comments (whole
// line or trailing) are ignored; repeated sizes add up; a count of 0 is
// allowed and adds nothing. Errors name the file and the 1-based line: a size
// that is not a positive integer, a count that is not a non-negative integer,
// extra fields, sizes or totals beyond the bounds above, and a history with no
// requests at all.
absl::StatusOr<BatchHistogram> ReadBatchHistory(const std::string& path);

// Same, from text already in memory; `source` names it in errors.
absl::StatusOr<BatchHistogram> ParseBatchHistory(const std::string& text,
                                                 const std::string& source);

struct SizeChoice {
  std::vector<int64_t> sizes;         // ascending, distinct
  double expected_padded_rows = 0.0;  // per request, by ExpectedPaddedRows
};

// The cost function: expected padded rows per request when serving `h` with
// `sizes` (any order; the largest is the chunk size, see the top of this
// file). 0 for an empty histogram. `sizes` must be non-empty and positive.
double ExpectedPaddedRows(const BatchHistogram& h, const std::vector<int64_t>& sizes);

// The padded rows of one request of `rows` rows served by `sorted_sizes`
// (ascending, non-empty): the serving model at the top of this file.
int64_t PaddedRows(int64_t rows, const std::vector<int64_t>& sorted_sizes);

// The top (largest) size to capture: the largest size in `h`, or
// `max_batch_size` when that is smaller.
int64_t TopBatchSize(const BatchHistogram& h, std::optional<int64_t> max_batch_size);

// Chooses at most `num_sizes` sizes, the largest being TopBatchSize(), that
// minimise ExpectedPaddedRows exactly (dynamic programming over the distinct
// sizes requests need). When the needed sizes (those in the history at most
// the top, the chunk remainders, and the top itself) number `num_sizes` or
// fewer, returns exactly those, with padding 0. Among optimal choices of the
// same cost the result is deterministic. InvalidArgument for num_sizes < 1,
// max_batch_size < 1, an empty histogram or one outside the bounds above.
absl::StatusOr<SizeChoice> ChooseBatchSizes(const BatchHistogram& h, int num_sizes,
                                            std::optional<int64_t> max_batch_size);

// The usual baseline, a power-of-two ladder. Rule: top = the largest size in
// `h` rounded up to a power of two, capped at `max_batch_size` when given
// (then top may be a non-power of two, e.g. 48); the other rungs are the
// powers of two below top, descending (48 -> 32, 16, 8, ...), until there are
// `num_sizes` rungs or the rung 1 is reached. Its cost is ExpectedPaddedRows.
// An empty histogram gives no sizes; num_sizes < 1 counts as 1 and
// max_batch_size < 1 as absent (ChooseBatchSizes rejects both).
SizeChoice PowerOfTwoLadder(const BatchHistogram& h, int num_sizes,
                            std::optional<int64_t> max_batch_size);

}  // namespace graphserve
