#pragma once
// The Prometheus families that the server writes (server/metrics.cc) and
// `graphserve-capture select --from-metrics` reads back
// (capture_cli/live_metrics.cc): one spelling for both sides.

namespace graphserve {

// Histogram of each successful request's rows: the live batch-size
// histogram, and the name of its bucket samples.
inline constexpr char kRequestRowsMetric[] = "graphserve_request_rows";
inline constexpr char kRequestRowsBucketSample[] = "graphserve_request_rows_bucket";

// Histogram of each successful request's extent along its model's one shape
// dim (a sequence length): the live length histogram, for models with one
// (Note [Live length histogram] in server/model_counters.h).
inline constexpr char kRequestLengthMetric[] = "graphserve_request_length";
inline constexpr char kRequestLengthBucketSample[] = "graphserve_request_length_bucket";

// Histogram of the rows queued that each chunk formed under dynamic batching
// could have merged (Note [Demand rows] in server/model_counters.h): what
// sizes are chosen from for a model that batches dynamically.
inline constexpr char kChunkDemandRowsMetric[] = "graphserve_chunk_demand_rows";
inline constexpr char kChunkDemandRowsBucketSample[] = "graphserve_chunk_demand_rows_bucket";

// Counter of chunks launched per captured batch size and stream slot.
inline constexpr char kGraphLaunchesMetric[] = "graphserve_graph_launches_total";

}  // namespace graphserve
