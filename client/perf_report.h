#pragma once
// What a load level measured, and how it is written: client latency
// percentiles, a human table, and a CSV file in perf_analyzer's format so that
// tools that read perf_analyzer's `-f FILE` output read ours.
//
// Units follow perf_analyzer: durations are kept in nanoseconds and written
// as whole microseconds (truncated), throughput as inferences per second,
// where one request of batch B counts B inferences.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace graphserve {

// How the load was generated; it names the CSV's first column.
enum class LoadMode {
  kConcurrency,  // a fixed number of requests outstanding ("Concurrency")
  kRequestRate,  // requests sent at a fixed rate ("Request Rate")
};

// Client-side latency of the successful requests of a level, from the call's
// start to its result, in nanoseconds. Zero when there were none.
struct LatencySummary {
  int64_t count = 0;
  int64_t p50_ns = 0;
  int64_t p90_ns = 0;
  int64_t p95_ns = 0;
  int64_t p99_ns = 0;
  int64_t avg_ns = 0;
};

// The server's own account of the measured period: per-request averages of
// the ModelStatistics inference_stats durations (ns / count of each counter's
// increase), as perf_analyzer computes them.
struct ServerAverages {
  int64_t requests = 0;  // increase of inference_stats.success.count
  int64_t queue_ns = 0;
  int64_t compute_input_ns = 0;
  int64_t compute_infer_ns = 0;
  int64_t compute_output_ns = 0;
};

// Note [The served floor]
// A served latency mixes three costs: the client, gRPC and the network, which
// any RPC pays; the model's own GPU work; and what the server adds between
// them (validation, queueing for a stream, copies in and out, the
// responder). To show the last, `perf` measures, right after each level and
// over the same connections at the same concurrency (or rate), an empty RPC:
// ServerLive, answered from memory. That is the floor. The model's work is
// its full-chunk replay: the measured cost of one replay at the batch size
// sent, from the capture section of the served model's config (capture.cost,
// graph_us, or eager_us when graphs are off), or, for a size not captured,
// the cost of the size the request pads to. Then
//   served overhead = served p50 - floor p50 - full-chunk replay.
// A request split over several graphs has no single replay cost, and a
// config without measured costs (the host executor) none at all: the
// overhead is left out and the report says why.

// The floor of one level: ServerLive at the same concurrency or rate.
struct FloorResult {
  LatencySummary latency;  // successful calls
  int64_t completed = 0;   // calls that finished inside the windows
  int64_t errors = 0;
  std::string first_error;  // empty without errors
};

// The model's measured cost of one replay for the batch sent.
struct ReplayCost {
  // Unset when unknown: `note` says why.
  std::optional<double> us;
  // The captured size whose cost `us` is: the batch itself, or the size it
  // pads to. 0 when unknown.
  int64_t captured_size = 0;
  // Whether `us` is a graph replay (capture.cost.graph_us) or an eager run
  // (eager_us, the model's graphs being off).
  bool graphs = true;
  // Empty when `us` is the batch's own measured cost; otherwise what it is
  // instead ("batch 3 is not captured: the cost of 4, the size it pads to")
  // or why there is none.
  std::string note;
};

// One load level: a concurrency or a request rate, measured over its windows.
// How far behind its schedule a request-rate send may go out before it is
// counted in LevelResult::late_sends.
inline constexpr std::chrono::microseconds kLateSend{1000};

// One measured request: when it was sent, on the steady clock (Linux's
// CLOCK_MONOTONIC, so that it lines up with other samplers of the machine,
// bench/thread_sampler.py), and how long it took.
struct TimedRequest {
  int64_t sent_ns = 0;
  int64_t latency_ns = 0;
  bool ok = true;
};

struct LevelResult {
  // The concurrency N, or the request rate in requests per second.
  double level = 0;
  int64_t batch_size = 1;
  // Total length of the measurement windows.
  absl::Duration measured;
  // Requests that finished inside the windows, successful and failed.
  int64_t completed = 0;
  int64_t errors = 0;
  // The first failure's status ("NOT_FOUND: ..."), empty without errors.
  std::string first_error;
  // (completed - errors) * batch_size / measured seconds: failed requests
  // do not count.
  double infer_per_sec = 0;
  // Throughput of each window, to judge stability.
  std::vector<double> window_infer_per_sec;
  LatencySummary latency;
  // perf_analyzer's "Client Send" and "Client Recv": building the request
  // message and reading the response, averaged over successful requests.
  int64_t avg_send_ns = 0;
  int64_t avg_receive_ns = 0;
  // Empty when the server keeps no statistics or did not answer for them.
  std::optional<ServerAverages> server;
  // Request-rate mode: sends that waited because the cap on outstanding
  // requests was reached, i.e. went out later than scheduled.
  int64_t delayed_sends = 0;
  // Request-rate mode: sends that went out over kLateSend after their
  // scheduled time for any reason (the cap above, or the load generator's own
  // threads falling behind, Note [Schedule threads]).
  int64_t late_sends = 0;
  // Every request that finished inside the windows, in the order they
  // finished: what `perf --timeline` writes, so that a stall shows as the
  // requests it held rather than only as a p99.
  std::vector<TimedRequest> timeline;
  // The floor measured right after this level; empty when not measured.
  std::optional<FloorResult> floor;
  // The model's full-chunk replay for batch_size (the same for every level).
  ReplayCost replay;
};

// served p50 - floor p50 - full-chunk replay, in nanoseconds (Note [The
// served floor]); nullopt without a floor, a successful served request, a
// successful floor call or a known replay cost. May be negative: three
// medians of noisy measurements.
std::optional<int64_t> ServedOverheadNs(const LevelResult& level);

// Optional column groups of the CSV.
struct PerfCsvColumns {
  // perf_analyzer's five server columns (ModelStatistics).
  bool server_stats = false;
  // GraphServe's floor columns, after perf_analyzer's: "Floor p50 latency,
  // Floor p99 latency,Full-chunk replay,Served overhead" (microseconds; the
  // last two empty when unknown).
  bool floor = false;
};

// The `percentile` (0 to 100) of ascending `sorted` values by perf_analyzer's
// method: the element at index round(percentile / 100 * (n - 1)), halves
// rounded up; no interpolation, so the result is always an observed value.
// `sorted` must not be empty.
int64_t Percentile(absl::Span<const int64_t> sorted, double percentile);

// p50/p90/p95/p99 by Percentile and the mean (truncated to whole ns).
LatencySummary SummarizeLatencies(std::vector<int64_t> latencies_ns);

// perf_analyzer's CSV header for `mode`. With server statistics it is
//   Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,
//   Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,
//   Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,
//   request/response,response wait
// (one line; "Request Rate" first in request-rate mode), i.e. what
// `perf_analyzer -f FILE --verbose-csv` writes for a model without a response
// cache; without them the five server columns are left out, as perf_analyzer
// leaves them out. The floor columns follow when asked for; readers of
// perf_analyzer's files find its columns by name and are unaffected.
std::string PerfCsvHeader(LoadMode mode, PerfCsvColumns columns);

// One CSV row under that header (no newline). With columns.server_stats,
// `level.server` must be set; with columns.floor, `level.floor`.
std::string PerfCsvRow(LoadMode mode, const LevelResult& level, PerfCsvColumns columns);

// Header and rows, one per level in the order run (perf_analyzer sorts them by
// throughput instead; the order of a sweep is kept here because it reads
// better and no reader of the format depends on it). Server columns appear
// when every level has server statistics, floor columns when every level has
// a floor.
std::string FormatPerfCsv(LoadMode mode, absl::Span<const LevelResult> levels);

// The timeline CSV: "<Concurrency|Request Rate>,Sent us,Latency us,OK", a
// row per TimedRequest of every level, levels in order (Sent: CLOCK_MONOTONIC).
std::string FormatTimelineCsv(LoadMode mode, absl::Span<const LevelResult> levels);

// Writes `text` to `path`, replacing it: FormatPerfCsv or FormatTimelineCsv.
absl::Status WriteTextFile(const std::string& path, const std::string& text);

// A fixed-width table for people: one line per level, latencies in us (the
// floor's p50 and p99, the replay and the served overhead beside the served
// numbers when every level has a floor), then what the replay cost is, and a
// line per level with errors naming the first one.
std::string FormatPerfTable(LoadMode mode, absl::Span<const LevelResult> levels);

// One line printed as a level finishes, e.g. "Concurrency: 4, throughput:
// 5120 infer/sec, latency p50 712 usec, p99 1490 usec, 0 errors", then, with
// a floor, ", floor p50 95 usec, p99 180 usec, served overhead 210 usec".
std::string FormatLevelLine(LoadMode mode, const LevelResult& level);

}  // namespace graphserve
