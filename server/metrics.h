#pragma once
// Prometheus metrics on --metrics-port (default 8002, as Triton's), GET
// /metrics in the text exposition format, under Triton's names and labels
// (model, version), so existing dashboards read them:
//
//   nv_inference_request_success, nv_inference_request_failure{reason} (every
//   model has all four of Triton's reasons, REJECTED, CANCELED, BACKEND and
//   OTHER: Note [Failure reasons] in server/model_counters.h),
//   nv_inference_count, nv_inference_exec_count,
//   nv_inference_{request,queue,compute_input,compute_infer,compute_output}_duration_us,
//   nv_inference_pending_request_count, nv_model_load_duration_secs, and per
//   GPU (label gpu_uuid, through NVML when the machine has it)
//   nv_gpu_utilization, nv_gpu_memory_total_bytes, nv_gpu_memory_used_bytes,
//   nv_gpu_power_usage, nv_gpu_power_limit, nv_energy_consumption; the
//   host's nv_cpu_utilization, nv_cpu_memory_total_bytes and
//   nv_cpu_memory_used_bytes (with --allow-cpu-metrics, server/cpu_monitor.h),
//   and nv_pinned_memory_pool_total_bytes / _used_bytes (Note [Pinned
//   memory pool]).
//
// And GraphServe's own, per model and version:
//
//   graphserve_request_rows (histogram: rows of each request, the live
//   batch-size histogram sizes are chosen from), graphserve_chunk_demand_rows
//   (histogram: under dynamic batching, the rows queued each chunk could have
//   merged, which select --plan-rows chunk-demand plans from; Note [Demand
//   rows] in server/model_counters.h), graphserve_request_length
//   (histogram, only for a model with one shape dim: each request's extent
//   along it, e.g. its sequence length, the live length histogram buckets
//   are chosen from; Note [Live length histogram] in
//   server/model_counters.h), graphserve_request_duration_us
//   (histogram: accept to answer, for percentiles), graphserve_padded_rows_total,
//   graphserve_graph_launches_total{batch_size,stream} (one sample per captured
//   size and stream slot, launched or not), graphserve_split_requests_total
//   (requests answered OK whose rows ran in more than one chunk),
//   graphserve_merged_executions_total (chunks holding rows of more than one
//   request), and the gauges graphserve_expected_padded_rows{sizes="current"|
//   "optimal"} and, for a model with one shape dim,
//   graphserve_expected_padded_positions{sizes=...} (Note [Re-capture
//   signal]).
//
// One source of numbers: every scrape reads the counters the statistics RPC
// reads (ModelCounters), so the two never disagree.

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/grpc_service.pb.h"
#include "server/cpu_monitor.h"
#include "server/gpu_monitor.h"
#include "server/http_listener.h"
#include "server/model_counters.h"
#include "server/model_registry.h"

namespace graphserve {

// Expected padded rows per request: Note [Re-capture signal].
struct PaddingSignal {
  double current = 0;  // with the captured sizes
  double optimal = 0;  // with the best as many sizes for the same histogram
};

// The re-capture signal of a model version with one shape dim, in padded
// positions (rows x length) per request: from its rows and length
// histograms read as independent, its captured sizes and bucket extents
// (both non-empty) and its max_batch_size; the optimal grid has at most as
// many graphs (sizes x buckets). Both 0 before any request. Note
// [Re-capture signal].
absl::StatusOr<PaddingSignal> ExpectedPaddedPositionsSignal(
    const ModelCounters::Histogram& rows, const ModelCounters::Histogram& lengths,
    const std::vector<int64_t>& captured_sizes, const std::vector<int64_t>& captured_buckets,
    int64_t max_batch_size);

// The re-capture signal of a model version from its rows histogram
// (ModelCounters::RequestRows), its captured sizes (non-empty) and its
// max_batch_size; both 0 before any request. Errors only for a histogram
// ModelCounters does not make (RowHistogramFromBuckets' errors).
absl::StatusOr<PaddingSignal> ExpectedPaddedRowsSignal(const ModelCounters::Histogram& rows,
                                                       const std::vector<int64_t>& captured_sizes,
                                                       int64_t max_batch_size);

// What one model version contributes to a scrape.
struct ModelMetrics {
  inference::ModelStatistics statistics;
  double load_seconds = 0;
  int64_t pending_requests = 0;
  std::array<uint64_t, kNumFailureReasons> failures{};  // by FailureReason
  ModelCounters::Histogram request_rows;
  ModelCounters::Histogram chunk_demand_rows;              // no samples without dynamic batching
  std::optional<ModelCounters::Histogram> request_length;  // only with one shape dim
  ModelCounters::Histogram request_duration_us;
  uint64_t padded_rows = 0;
  std::vector<ModelCounters::Launches> launches;  // per captured key and stream
  std::optional<uint64_t> padded_positions;        // only with shape dims
  uint64_t split_requests = 0;
  uint64_t merged_executions = 0;
  std::optional<PaddingSignal> padding;  // absent: no samples
  // In padded positions, for a model with one shape dim; absent otherwise.
  std::optional<PaddingSignal> position_padding;
  uint64_t pinned_bytes = 0;  // pinned host staging it holds (Note [Pinned memory pool])
};

// The metrics of `models`, `gpus` and the host's `cpu` (absent: no CPU
// families) in Prometheus' text format.
std::string MetricsText(const std::vector<ModelMetrics>& models,
                        const std::vector<GpuReading>& gpus = {},
                        const std::optional<CpuReading>& cpu = std::nullopt);

// Every loaded model version of `registry`, read now.
std::vector<ModelMetrics> ReadMetrics(const ModelRegistry& registry);

// The address a metrics endpoint on `host`:`port` listens on, never shared
// with another process, named by the server's flag in errors.
TcpListenAddress MetricsListenAddress(const std::string& host, int port);

// Tritonserver's switches of the host-side families.
struct MetricsOptions {
  // nv_cpu_* (Triton's --allow-cpu-metrics).
  bool allow_cpu_metrics = true;
  // The shortest window nv_cpu_utilization is measured over (Triton's
  // --metrics-interval-ms; Note [CPU utilisation window]).
  absl::Duration interval = absl::Milliseconds(2000);
};

class MetricsEndpoint {
 public:
  // Borrows `registry`. `port` 0 picks a free one (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const ModelRegistry* registry, const std::string& host, int port,
      const MetricsOptions& options = {});
  [[nodiscard]] int port() const { return listener_->port(); }
  void Stop() { listener_->Stop(); }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<GpuMonitor> gpus_;  // null without NVML
  std::unique_ptr<CpuMonitor> cpu_;   // null with --allow-cpu-metrics=false or no /proc
  std::unique_ptr<HttpListener> listener_;
};

// Note [Re-capture signal]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Captured sizes are chosen from a batch-size histogram, and traffic drifts
// away from the one they were chosen for. graphserve_expected_padded_rows
// says when it has drifted far enough to re-choose, with the cost function
// `graphserve-capture select` minimises (planning/batch_sizes.h), over the
// live rows histogram graphserve_request_rows exports:
//  * sizes="current": ExpectedPaddedRows of the captured sizes;
//  * sizes="optimal": that of ChooseBatchSizes with as many sizes (N), i.e.
//    what `graphserve-capture select --from-metrics URL --model M
//    --num-sizes N` would choose now (the same histogram, the same reading
//    of its wide buckets: Note [Rows of a wide bucket] in
//    planning/row_histogram.cc).
// A current well above optimal means re-choosing would save that many padded
// rows per request: run select with --reload. Optimal may exceed current
// when the captured sizes' largest is below the largest request, since the
// cost function counts the extra launches of a split request as free and
// ChooseBatchSizes always takes the largest request as its top size. Both
// assume each request runs on its own, as the cost function does; under
// dynamic batching chunks hold merged requests, so the padding launched
// (graphserve_padded_rows_total) may differ from both.
//
// A model with one shape dim (a sequence length) pads positions too, and
// its buckets drift like its sizes: graphserve_expected_padded_positions
// prices the grid captured now (sizes x buckets) and the best grid of as
// many graphs, with ExpectedPaddedPositions and ChooseSizesAndBuckets
// (planning/shape_grid.h) over the live rows and length histograms read as
// independent (IndependentShapes): what `graphserve-capture select
// --from-metrics URL --model M --max-graphs G` would choose now. That
// planner is a search of a few exact dynamic programs per split of the
// budget, over the length histogram's at most 128 + buckets bounds
// (metrics_test records how long the widest took).
//
// Computed at each scrape, not cached: the histogram has one bucket per row
// up to 64, then powers of two, then max_batch_size, so the dynamic program
// (O(N m^2) for m distinct bucket bounds with requests, m > N) sees at most
// 65 + log2(max_batch_size) sizes whatever max_batch_size is: under 300,000
// steps even at max_batch_size 2^20, well under a millisecond per model.

// Note [Pinned memory pool]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Triton stages host tensors through one pinned pool of
// --pinned-memory-pool-byte-size, allocated at start and lent out per
// request, so its total and used bytes differ. GraphServe has no pool: each
// stream slot of a model on a GPU pins its own staging at capture, sized for
// its largest batch (tensor_holder/io_buffers.h), and holds it until the
// model unloads. So nv_pinned_memory_pool_total_bytes is the pinned staging
// of every loaded model (ModelLoadSummary::pinned_bytes, summed), and
// nv_pinned_memory_pool_used_bytes is the same number: all of it is held,
// none of it is free to lend. Both are 0 on the host executor, which stages
// nothing. Pinned shared-memory regions clients register are theirs, not
// the server's, and are not counted.

}  // namespace graphserve
