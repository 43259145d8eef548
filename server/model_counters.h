#pragma once
// The counters of one served model version: the one source of numbers that
// both the statistics RPC (Fill) and /metrics read, so the two never
// disagree. In Triton's units: requests, except executions and the per-size
// counters, which count chunks (one graph launch each).
//
// Besides Triton's statistics it keeps GraphServe's own, for /metrics: the
// live histogram of request rows (what the captured sizes should be chosen
// from) and, for a model with one shape dim, of request lengths (what its
// buckets should be chosen from: Note [Live length histogram]), a histogram
// of request latency (p99 needs buckets, not sums),
// padding rows launched, graph launches per captured size and stream slot,
// split requests and merged executions, and failures by Triton's reason.
//
// Lock-free: every counter is an atomic that request threads and slot workers
// add to, and readers load at any time.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/graph_key.h"
#include "proto/grpc_service.pb.h"
#include "server/chunk_runner.h"

namespace graphserve {

// A duration as the statistics count it: whole nanoseconds.
inline uint64_t StatisticsNanos(std::chrono::steady_clock::duration duration) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count());
}

// Why a request failed: Triton's reason label of nv_inference_request_failure.
// See Note [Failure reasons].
enum class FailureReason { kRejected, kCanceled, kBackend, kOther };
inline constexpr size_t kNumFailureReasons = 4;

// Triton's label value: "REJECTED", "CANCELED", "BACKEND" or "OTHER".
const char* FailureReasonLabel(FailureReason reason);

// The batch sizes statistics are kept under for a model served without
// captured sizes (an ensemble, a model that only hands strings back): every
// size up to 64 (Triton keys batch_stats by the exact size), then powers of
// two up to max_batch_size.
std::vector<int64_t> StatisticsSizes(int64_t max_batch_size);

// The extents of `buckets`, each of one extent (a model with one shape
// dim), in order.
std::vector<int64_t> OneDimExtents(const std::vector<std::vector<int64_t>>& buckets);

// The upper bounds of the live length histogram of a model with one shape
// dim captured at `bucket_extents` along it: every multiple of 8 up to the
// largest (a wider multiple of 8 past 128 of them), and each extent itself.
// Note [Live length histogram].
std::vector<uint64_t> LengthBounds(const std::vector<int64_t>& bucket_extents);

// One chunk run on a stream slot.
struct ChunkRun {
  int stream = 0;          // the slot that ran it, 0 .. num_streams - 1
  int64_t batch_size = 0;  // the captured size launched
  int64_t rows = 0;        // real rows; batch_size - rows were padding
  int64_t requests = 1;    // requests with rows in it; more than one: merged
  // For a model with shape dims: the bucket launched (an index into the
  // counters' buckets), and the chunk's positions (a row's positions: the
  // product of its extents), launched (batch_size rows at the bucket) and
  // real (each row at its own extents).
  size_t bucket = 0;
  int64_t launched_positions = 0;
  int64_t real_positions = 0;
  // With dynamic batching: the rows queued the chunk could have merged
  // (FormedChunk::demand_rows; Note [Demand rows]); 0 otherwise.
  int64_t demand_rows = 0;
};

// Note [Demand rows]
// ~~~~~~~~~~~~~~~~~~
// `select --from-metrics` plans batch sizes from a histogram of rows. The
// rows of each request are the right one when each request runs alone; under
// dynamic batching an execution merges the requests queued when a stream
// slot frees, so sizes planned from requests of 1-4 rows cap every merge at
// 4. What a larger size would run is the rows queued then, which the
// captured sizes do not bound (only max_batch_size does): each chunk formed
// under dynamic batching records them (graphserve_chunk_demand_rows), and
// `select --from-metrics --plan-rows chunk-demand` plans from them.
//
// It is not the default, and the re-capture gauges stay with the requests'
// rows, because the plan prices padded rows, not time: a merged chunk of a
// model with shape buckets runs at its longest request's bucket, which the
// plan does not see, and a merge pays only where a launch costs more than
// its rows. On the GPU machine BERT served to 8 HTTP clients of 1-4 rows
// was re-chosen live both ways in one run: planned from the requests (sizes
// 1-4) it served 0.96x the requests/s of before the reload, planned from the
// demand (sizes 4-21) 0.76x (bench/results/2026-12-01_11fe960_chunk_demand_h200).

class ModelCounters {
 public:
  // `batch_sizes`: the captured sizes, ascending; chunks are counted under
  // the smallest of them at least as large as the chunk's size.
  // `max_batch_size` bounds the rows histogram. `num_streams`: the stream
  // slots chunks run on (launches are counted per slot). `buckets`: the
  // shape buckets every size is captured at (ModelInterface::buckets), one
  // empty bucket for a model without shape dims.
  ModelCounters(std::vector<int64_t> batch_sizes, int64_t max_batch_size, int num_streams,
                std::vector<std::vector<int64_t>> buckets = {{}});

  // A request between accept and answer (Triton's pending request count).
  void RequestAccepted() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void RequestAnswered() { pending_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] int64_t pending() const { return pending_.load(std::memory_order_relaxed); }

  // One chunk launched (or failed), with where its time went.
  void RecordChunk(const ChunkRun& run, const ChunkTiming& timing);
  // One request run eagerly at its own extents (Note [Eager fallback] in
  // server/eager_fallback.h): an execution, no graph launched.
  void RecordEagerExecution() { execution_count_.fetch_add(1, std::memory_order_relaxed); }
  // A request answered OK: its rows, its extent along the model's one shape
  // dim (`length`; 0 for a model without exactly one, which keeps no length
  // histogram: Note [Live length histogram]), its whole time, its longest
  // chunk wait and its chunks' time summed. `split`: its rows ran in more
  // than one chunk.
  void RecordSuccess(int64_t rows, int64_t length, uint64_t elapsed_ns, uint64_t queue_ns,
                     const ChunkTiming& compute, bool split = false);
  // A request answered with an error, and why (Note [Failure reasons]).
  void RecordFailure(uint64_t elapsed_ns, FailureReason reason);

  // Triton's ModelStatistics from the counters; name and version are the
  // caller's.
  void Fill(inference::ModelStatistics* statistics) const;

  // A histogram as Prometheus exposes it: for each upper bound, how many
  // observations were at most that, the last bound +Inf (so its count is
  // the total); and their sum.
  struct Histogram {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative_counts;
    uint64_t sum = 0;
  };
  // Rows of each request answered OK: one bucket per row count up to 64,
  // then powers of two, then max_batch_size.
  [[nodiscard]] Histogram RequestRows() const;
  // ChunkRun::demand_rows of each chunk formed under dynamic batching, in
  // RequestRows' buckets; no samples without it (Note [Demand rows]).
  [[nodiscard]] Histogram ChunkDemandRows() const;
  // The extent along the model's one shape dim of each request answered OK,
  // in LengthBounds' buckets; absent for a model without exactly one shape
  // dim (Note [Live length histogram]).
  [[nodiscard]] std::optional<Histogram> RequestLength() const;
  // Microseconds from accept to answer of each request answered OK.
  [[nodiscard]] Histogram RequestDurationUs() const;
  // Padding rows launched, over all chunks.
  [[nodiscard]] uint64_t padded_rows() const {
    return padded_rows_.load(std::memory_order_relaxed);
  }
  // Positions of padding launched (ChunkRun's launched minus real), over
  // all chunks of a model with shape dims.
  [[nodiscard]] uint64_t padded_positions() const {
    return padded_positions_.load(std::memory_order_relaxed);
  }
  // Chunks launched at one captured key on one stream slot.
  struct Launches {
    GraphKey key;
    int stream = 0;
    uint64_t count = 0;
  };
  // Every (captured key, slot), launched or not: keys ascending, then slots.
  [[nodiscard]] std::vector<Launches> LaunchesPerKeyAndStream() const;
  // Requests answered OK whose rows ran in more than one chunk.
  [[nodiscard]] uint64_t split_requests() const {
    return split_requests_.load(std::memory_order_relaxed);
  }
  // Chunks that held rows of more than one request (dynamic batching).
  [[nodiscard]] uint64_t merged_executions() const {
    return merged_executions_.load(std::memory_order_relaxed);
  }
  // Failed requests, indexed by FailureReason; they add up to Fill's fail
  // count.
  [[nodiscard]] std::array<uint64_t, kNumFailureReasons> FailuresByReason() const;
  // What the counters were built with.
  [[nodiscard]] const std::vector<int64_t>& batch_sizes() const { return batch_sizes_; }
  [[nodiscard]] const std::vector<std::vector<int64_t>>& buckets() const { return buckets_; }
  [[nodiscard]] int64_t max_batch_size() const { return max_batch_size_; }

  // Implementation details follow.
  struct Duration {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> ns{0};
    void Add(uint64_t nanos);
    void Fill(inference::StatisticDuration* duration) const;
  };
  struct SizeCounters {
    Duration input, infer, output;
  };
  // Observations of a non-negative integer in fixed buckets.
  class AtomicHistogram {
   public:
    explicit AtomicHistogram(std::vector<uint64_t> upper_bounds);
    void Observe(uint64_t value);
    [[nodiscard]] Histogram Read() const;

   private:
    const std::vector<uint64_t> upper_bounds_;
    std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, +Inf last
    std::atomic<uint64_t> sum_{0};
  };

 private:
  // The batch_sizes_ index chunks of `batch_size` are counted under.
  [[nodiscard]] size_t SizeIndex(int64_t batch_size) const;
  // launches_: how many counters, and where one (size, bucket, slot) is.
  [[nodiscard]] size_t LaunchCounters() const;
  [[nodiscard]] size_t LaunchIndex(size_t size, size_t bucket, int stream) const;

  const std::vector<int64_t> batch_sizes_;
  const int64_t max_batch_size_;
  const int num_streams_;
  const std::vector<std::vector<int64_t>> buckets_;
  Duration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;
  std::array<std::atomic<uint64_t>, kNumFailureReasons> failures_{};  // by FailureReason
  std::atomic<uint64_t> inference_count_{0};                          // rows
  std::atomic<int64_t> pending_{0};
  std::atomic<uint64_t> execution_count_{0};  // chunks run
  std::atomic<uint64_t> last_inference_ms_{0};
  std::vector<std::unique_ptr<SizeCounters>> size_counters_;  // by batch_sizes_ index
  AtomicHistogram request_rows_;
  AtomicHistogram chunk_demand_rows_;
  std::optional<AtomicHistogram> request_length_;  // only with one shape dim
  AtomicHistogram request_duration_us_;
  std::atomic<uint64_t> padded_rows_{0};
  std::atomic<uint64_t> padded_positions_{0};
  // Per captured size (batch_sizes_ index), bucket (buckets_ index) and
  // slot: [(size * buckets + bucket) * num_streams_ + slot].
  std::unique_ptr<std::atomic<uint64_t>[]> launches_;
  std::atomic<uint64_t> split_requests_{0};
  std::atomic<uint64_t> merged_executions_{0};
};

// Note [Live length histogram]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A model with a shape dim runs each request in the smallest captured bucket
// that holds it (Note [Shape buckets] in server/shape_buckets.h), so its
// buckets, like its batch sizes, are best chosen from its traffic: the size
// planner chooses both from the joint (rows, length) distribution. For a
// model with one shape dim (a sequence length) the counters keep, beside the
// rows histogram, one of each request's extent along it, exported as
// graphserve_request_length. A model with two (an image's height and width)
// keeps none: a histogram per dim would lose which heights came with which
// widths. A model with none has no buckets to choose.
//
// A reader of the histogram knows a request's length only up to its bucket's
// upper bound, so the bounds (LengthBounds) are:
//  * every multiple of 8 up to the largest bucket: lengths to within 8
//    positions, finer than buckets far enough apart to be worth a graph each;
//  * each captured bucket's extent itself, so the requests each bucket served
//    now are counted exactly (those above the extent below it and at most its
//    own), whatever the extents: the cost of today's buckets, which a new
//    choice is compared against, is not blurred by the histogram;
//  * at most 128 multiples: past a largest bucket of 1024 the step widens,
//    still a multiple of 8 (64 for 8192), so a scrape and the planner's
//    search over the bounds stay small for long-context models.
// No request is longer than the largest bucket (validation refuses it), so
// the +Inf bucket adds none.

// Note [Failure reasons]
// ~~~~~~~~~~~~~~~~~~~~~~
// Triton tells failed requests apart by reason; GraphServe decides the
// reason where the request path knows it (server/served_model.cc):
//  * OTHER: refused before it was queued because the request itself is bad:
//    validation (shapes, datatypes, shared-memory regions) or a bad priority
//    or timeout parameter.
//  * REJECTED: the queue would not run it. Refused by Submit (the queue full:
//    RESOURCE_EXHAUSTED past the rows bound, UNAVAILABLE "Exceeds maximum
//    queue size"; or the pool shutting down), or, once queued, removed
//    without running: a queue timeout (UNAVAILABLE "Request timeout
//    expired") or a drain past its exit timeout.
//  * BACKEND: a chunk holding its rows failed (the runner's error, or a slot
//    whose worker thread could not be prepared).
//  * CANCELED: a cancelled request. No path produces one today: once
//    accepted, a request runs to its answer even if its client has gone. It
//    is exported anyway (as 0), as Triton does, so queries keep working.
// Queued rows come back through one callback whether they ran or were
// refused, and the callback says which (SegmentEnd in server/request_queue.h):
// refused rows are REJECTED, rows a runner failed BACKEND, whatever the
// status code. A CUDA shared-memory output that cannot be delivered after
// the run is BACKEND too. A request counts once, under the reason of the
// error it is answered with (its first).

}  // namespace graphserve
