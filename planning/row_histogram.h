#pragma once
// A Prometheus rows histogram (cumulative buckets, as the server's
// graphserve_request_rows exports it) read back into requests per row count:
// the BatchHistogram that ChooseBatchSizes takes. The server reads its own
// counters this way for its re-capture signal (Note [Re-capture signal] in
// server/metrics.h) and `graphserve-capture select --from-metrics` reads a
// scraped page this way, so both see the same histogram.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "planning/batch_sizes.h"

namespace graphserve {

// One bucket of a Prometheus histogram: observations <= upper_bound, counted
// cumulatively.
struct CumulativeBucket {
  double upper_bound = 0;
  double cumulative_count = 0;
};

// A bucket wider than one row that held requests, e.g. rows 65..128.
struct WideBucket {
  int64_t first_row = 0;
  int64_t last_row = 0;  // its upper bound: where its requests are counted
  int64_t requests = 0;  // as counted in the histogram, before any scaling
};

// Requests per row count, from a histogram's buckets.
struct RowHistogram {
  // Row count -> requests, ready for ChooseBatchSizes; scaled by `scale`.
  BatchHistogram histogram;
  // Requests the histogram counted (its +Inf bucket), before scaling.
  int64_t requests = 0;
  // The buckets wider than one row that held requests, ascending:
  // Note [Rows of a wide bucket].
  std::vector<WideBucket> wide_buckets;
  // 1, or the factor every count was multiplied by (each nonzero count kept
  // at least 1) so that the total fits kMaxHistoryRequests.
  double scale = 1;
};

// Turns cumulative buckets (any order, one of them +Inf) into requests per
// row count. A bucket (previous bound, bound] holds the row counts
// floor(previous) + 1 .. floor(bound); all its requests are counted at
// floor(bound) (Note [Rows of a wide bucket]). InvalidArgument, saying which
// bucket, for: no +Inf bucket, two buckets with the same bound, counts that
// decrease or are not whole numbers, requests in a bucket that holds no
// positive row count, requests above the largest finite bound (their rows
// are unknown). A histogram with no requests gives an empty one, not an
// error.
absl::StatusOr<RowHistogram> RowHistogramFromBuckets(std::vector<CumulativeBucket> buckets);

}  // namespace graphserve
