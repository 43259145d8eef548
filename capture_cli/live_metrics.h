#pragma once
// The live batch-size histogram of a running GraphServe, read from its
// Prometheus /metrics page (server/metrics.h): the input of
// `graphserve-capture select --from-metrics`.
//
// These families matter, per model and version:
//   graphserve_request_rows_bucket{model,version,le}  the rows of each request
//       answered OK since the version was (re)loaded, as a cumulative
//       histogram: one bucket per row count up to 64, then powers of two, then
//       max_batch_size, then +Inf;
//   graphserve_graph_launches_total{model,version,batch_size,stream}  one
//       sample per captured size and stream slot (every one, launched or
//       not): its distinct batch_size labels are the sizes served now, and
//       for a model with shape buckets its `bucket` labels the buckets;
//   graphserve_request_length_bucket{model,version,le}  for a model with
//       one shape dim (a sequence length), the length of each request
//       answered OK, as a cumulative histogram;
//   graphserve_chunk_demand_rows_bucket{model,version,le}  for a model
//       under dynamic batching, the rows queued each chunk could have
//       merged, which `select --plan-rows chunk-demand` plans from instead
//       of the requests' rows (Note [Demand rows] in
//       server/model_counters.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "capture_cli/metrics_text.h"
#include "planning/row_histogram.h"

namespace graphserve {

// What /metrics says about one model version.
struct LiveBatchSizes {
  std::string model;
  std::string version;
  // From graphserve_request_rows; its `requests` may be 0.
  RowHistogram rows;
  // From graphserve_chunk_demand_rows (a model under dynamic batching: the
  // rows each chunk could have merged, Note [Demand rows] in
  // server/model_counters.h); nullopt when the page has none for this
  // version, its `requests` 0 when no chunk merged under it.
  std::optional<RowHistogram> chunk_demand;
  // Whether `rows` holds chunk_demand's histogram instead (select's
  // --plan-rows chunk-demand puts it there).
  bool rows_are_demand = false;
  // From graphserve_graph_launches_total's batch_size labels, ascending;
  // empty when the page has none for this version.
  std::vector<int64_t> captured_sizes;
  // From graphserve_request_length, for a model with one shape dim; nullopt
  // when the page has none for this version.
  std::optional<RowHistogram> lengths;
  // From graphserve_graph_launches_total's bucket labels of one extent,
  // ascending; empty for a model without shape buckets.
  std::vector<int64_t> captured_buckets;
};

// Finds `model` in `samples` and reads its histogram and captured sizes.
// `version` empty: the latest version there (the largest number; the last
// in string order when some version is not a number). NotFound when the
// page has no graphserve_request_rows at all (is it GraphServe's metrics
// port?), or not this model (listing the models and versions it has), or
// not this version (listing the model's versions); RowHistogramFromBuckets'
// errors, naming the model and version (and the histogram, for lengths).
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
