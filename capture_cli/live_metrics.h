#pragma once
// The live batch-size histogram of a running GraphServe, read from its
// Prometheus /metrics page (server/metrics.h): the input of
// `graphserve-capture select --from-metrics`.
//
// Two families matter, per model and version:
//   graphserve_request_rows_bucket{model,version,le}  the rows of each request
//       answered OK since the version was (re)loaded, as a cumulative
//       histogram: one bucket per row count up to 64, then powers of two, then
//       max_batch_size, then +Inf;
//   graphserve_graph_launches_total{model,version,batch_size,stream}  one
//       sample per captured size and stream slot (every one, launched or
//       not): its distinct batch_size labels are the sizes served now.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "capture_cli/metrics_text.h"
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

// What /metrics says about one model version.
struct LiveBatchSizes {
  std::string model;
  std::string version;
  // From graphserve_request_rows; its `requests` may be 0.
  RowHistogram rows;
  // From graphserve_graph_launches_total's batch_size labels, ascending;
  // empty when the page has none for this version.
  std::vector<int64_t> captured_sizes;
};

// Finds `model` in `samples` and reads its histogram and captured sizes.
// `version` empty: the latest version there (the largest number; the last
// in string order when some version is not a number). NotFound when the
// page has no graphserve_request_rows at all (is it GraphServe's metrics
// port?), or not this model (listing the models and versions it has), or
// not this version (listing the model's versions); RowHistogramFromBuckets'
// errors, naming the model and version.
absl::StatusOr<LiveBatchSizes> ReadLiveBatchSizes(const std::vector<MetricSample>& samples,
                                                  const std::string& model,
                                                  const std::string& version);

// GETs `url` (http://; without a path, /metrics) and returns the body.
// Unavailable naming the URL and why (cannot connect, timed out, an HTTP
// status other than 200); InvalidArgument for a URL that is not http://
// (https:// by name: no TLS in this build, and GraphServe serves plain HTTP).
// `timeout` bounds connecting and reading, each.
absl::StatusOr<std::string> FetchMetricsText(const std::string& url,
                                             absl::Duration timeout = absl::Seconds(10));

// The three steps together: fetch, parse, read. Parse errors name the URL.
absl::StatusOr<LiveBatchSizes> ReadLiveBatchSizesFromUrl(const std::string& url,
                                                         const std::string& model,
                                                         const std::string& version);

}  // namespace graphserve
