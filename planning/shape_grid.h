#pragma once
// Batch sizes and length buckets together: which N batch sizes x K buckets
// to capture for a model with one shape dim (a sequence length, Note [Shape
// buckets] in server/shape_buckets.h), chosen from the (rows, length)
// history of its requests under a budget of N x K graphs, so that the
// expected padded positions per request are as few as the planner finds.
//
// Serving model (batch_sizes.h's, times a bucket): a request of b rows and
// length l runs its rows as batch_sizes.h serves them, b + PaddedRows(b)
// rows in all, each padded to the smallest bucket B(l) >= l; it executes
// (b + PaddedRows(b)) x B(l) positions, of which b x l are real. The largest
// bucket is the longest length in the history (a longer request is refused,
// so the history holds none).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "planning/batch_sizes.h"

namespace graphserve {

// (rows, length) -> requests. Rows and lengths positive, counts positive.
using ShapeHistogram = std::map<std::pair<int64_t, int64_t>, int64_t>;

// Reads a (rows, length) history: each line `ROWSxLENGTH` (one request) or
// `ROWSxLENGTH,COUNT`, e.g. `4x128,17`, read by ParseHistoryLines
// (batch_sizes.h); repeated pairs add up. Errors name the source and the
// 1-based line, with ParseBatchHistory's bounds on rows, lengths and the
// total.
absl::StatusOr<ShapeHistogram> ParseShapeHistory(const std::string& text,
                                                 const std::string& source);
absl::StatusOr<ShapeHistogram> ReadShapeHistory(const std::string& path);

// The joint histogram of two independent marginals (a live rows histogram
// and a live length histogram, which a Prometheus page gives apart): each
// pair gets requests(rows) x requests(length) / total, at least 1 where
// both are nonzero, scaled so that the total stays within the bounds.
ShapeHistogram IndependentShapes(const BatchHistogram& rows, const BatchHistogram& lengths);

struct GridChoice {
  std::vector<int64_t> sizes;    // ascending, distinct
  std::vector<int64_t> buckets;  // ascending, distinct; the last the longest length
  double expected_padded_positions = 0.0;  // per request, ExpectedPaddedPositions
};

// The cost function: expected padded positions per request when serving `h`
// with `sizes` and `buckets` (any order), as the top of this file says. 0
// for an empty histogram; infinity when a length is above every bucket or
// either list is empty.
double ExpectedPaddedPositions(const ShapeHistogram& h, const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& buckets);

// Chooses sizes and buckets, at most `max_graphs` graphs (sizes x buckets),
// the largest size TopBatchSize of the rows and the largest bucket the
// longest length (Note [Choosing sizes and buckets together]). Deterministic.
// InvalidArgument for max_graphs < 1, max_batch_size < 1, an empty history
// or one outside the bounds.
absl::StatusOr<GridChoice> ChooseSizesAndBuckets(const ShapeHistogram& h, int max_graphs,
                                                 std::optional<int64_t> max_batch_size);

// The buckets for sizes already chosen (a server's sizes under dynamic
// batching, which merges requests into executions the history does not
// show): at most max_graphs / sizes.size() of them, the largest the longest
// length, with the fewest expected padded positions (the exact step of Note
// [Choosing sizes and buckets together] for fixed sizes). InvalidArgument
// for no sizes, a size below 1, fewer than one bucket's worth of graphs, or
// an empty history.
absl::StatusOr<GridChoice> ChooseBucketsForSizes(const ShapeHistogram& h,
                                                 std::vector<int64_t> sizes, int max_graphs);

// The usual baseline: a power-of-two ladder of sizes (PowerOfTwoLadder) by a
// power-of-two ladder of buckets, the top bucket the longest length rounded
// up to a power of two and none below the shortest length's (it would hold
// no request), over the split of `max_graphs` that costs least.
GridChoice PowerOfTwoGrid(const ShapeHistogram& h, int max_graphs,
                          std::optional<int64_t> max_batch_size);

// Note [Choosing sizes and buckets together]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Either list alone has an exact planner: ChooseBatchSizes's dynamic program
// is exact for any weights on the requests. With the buckets fixed, the
// padded positions are sum over requests of (b + PaddedRows_S(b)) x B(l) -
// b x l, so the best sizes are ChooseBatchSizes over the rows weighted by
// B(l); with the sizes fixed, they are sum of (b + PaddedRows_S(b)) x (B(l) -
// l) plus a constant, so the best buckets are ChooseBatchSizes over the
// lengths weighted by b + PaddedRows_S(b), with the longest length as its top
// (no length is split). For each split of the budget, N sizes by K buckets
// with N x K <= max_graphs, the planner starts from each list chosen alone
// (on its marginal) and alternates the two exact steps until neither
// changes (each step can only lower the cost, so this ends; at most 16
// rounds); the best split wins, fewer graphs on ties. Coordinate descent
// finds a local optimum, not always the global one: the tests compare it
// with exhaustive search on small histories. When rows and lengths are
// independent (IndependentShapes) the cost is a rows term times a lengths
// term, each minimised by its list alone: the start is then already optimal
// for its split.
// Weighted histograms are scaled to ChooseBatchSizes' bounds (kMaxHistory
// Requests), each nonzero weight kept at least 1: a rounding of weights, not
// of the cost, which ExpectedPaddedPositions computes exactly.

}  // namespace graphserve
