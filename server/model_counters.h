#pragma once
// The counters of one served model version: the one source of numbers that
// both the statistics RPC (Fill) and /metrics read, so the two never
// disagree. In Triton's units: requests, except executions and the per-size
// counters, which count chunks (one graph launch each).
//
// Besides Triton's statistics it keeps GraphServe's own, for /metrics: the
// live histogram of request rows (what the captured sizes should be chosen
// from), a histogram of request latency (p99 needs buckets, not sums),
// padding rows launched and graph launches per captured size.
//
// Lock-free: every counter is an atomic that request threads and slot workers
// add to, and readers load at any time.

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "proto/grpc_service.pb.h"
#include "server/chunk_runner.h"

namespace graphserve {

class ModelCounters {
 public:
  // `batch_sizes`: the captured sizes, ascending; chunks are counted under
  // the smallest of them at least as large as the chunk's size.
  // `max_batch_size` bounds the rows histogram.
  ModelCounters(std::vector<int64_t> batch_sizes, int64_t max_batch_size);

  // A request between accept and answer (Triton's pending request count).
  void RequestAccepted() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void RequestAnswered() { pending_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] int64_t pending() const { return pending_.load(std::memory_order_relaxed); }

  // One chunk of `rows` real rows launched at `batch_size`, with where its
  // time went; batch_size - rows rows were padding.
  void RecordChunk(int64_t batch_size, int64_t rows, const ChunkTiming& timing);
  // A request answered OK: its rows, its whole time, its longest chunk wait
  // and its chunks' time summed.
  void RecordSuccess(int64_t rows, uint64_t elapsed_ns, uint64_t queue_ns,
                     const ChunkTiming& compute);
  // A request answered with an error (refused, or a chunk failed).
  void RecordFailure(uint64_t elapsed_ns);

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
  // Microseconds from accept to answer of each request answered OK.
  [[nodiscard]] Histogram RequestDurationUs() const;
  // Padding rows launched, over all chunks.
  [[nodiscard]] uint64_t padded_rows() const {
    return padded_rows_.load(std::memory_order_relaxed);
  }
  // (captured size, chunks launched at it), for every captured size.
  [[nodiscard]] std::vector<std::pair<int64_t, uint64_t>> LaunchesPerSize() const;

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
  [[nodiscard]] SizeCounters& CountersFor(int64_t batch_size);

  const std::vector<int64_t> batch_sizes_;
  Duration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;
  std::atomic<uint64_t> inference_count_{0};  // rows
  std::atomic<int64_t> pending_{0};
  std::atomic<uint64_t> execution_count_{0};  // chunks run
  std::atomic<uint64_t> last_inference_ms_{0};
  std::vector<std::unique_ptr<SizeCounters>> size_counters_;  // by batch_sizes_ index
  AtomicHistogram request_rows_;
  AtomicHistogram request_duration_us_;
  std::atomic<uint64_t> padded_rows_{0};
};

}  // namespace graphserve
