#pragma once
// The counters of one served model version: the one source of numbers that
// both the statistics RPC (Fill) and /metrics read, so the two never
// disagree. In Triton's units: requests, except executions and the per-size
// counters, which count chunks (one graph launch each).
//
// Lock-free: every counter is an atomic that request threads and slot workers
// add to, and readers load at any time.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "proto/grpc_service.pb.h"
#include "server/chunk_runner.h"

namespace graphserve {

class ModelCounters {
 public:
  // `batch_sizes`: the captured sizes, ascending; chunks are counted under
  // the smallest of them at least as large as the chunk's size.
  explicit ModelCounters(std::vector<int64_t> batch_sizes);

  // A request between accept and answer (Triton's pending request count).
  void RequestAccepted() { pending_.fetch_add(1, std::memory_order_relaxed); }
  void RequestAnswered() { pending_.fetch_sub(1, std::memory_order_relaxed); }
  [[nodiscard]] int64_t pending() const { return pending_.load(std::memory_order_relaxed); }

  // One chunk run at `batch_size`, with where its time went.
  void RecordChunk(int64_t batch_size, const ChunkTiming& timing);
  // A request answered OK: its rows, its whole time, its longest chunk wait
  // and its chunks' time summed.
  void RecordSuccess(int64_t rows, uint64_t elapsed_ns, uint64_t queue_ns,
                     const ChunkTiming& compute);
  // A request answered with an error (refused, or a chunk failed).
  void RecordFailure(uint64_t elapsed_ns);

  // Triton's ModelStatistics from the counters; name and version are the
  // caller's.
  void Fill(inference::ModelStatistics* statistics) const;

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

 private:
  [[nodiscard]] SizeCounters& CountersFor(int64_t batch_size);

  const std::vector<int64_t> batch_sizes_;
  Duration success_, fail_, queue_, compute_input_, compute_infer_, compute_output_;
  std::atomic<uint64_t> inference_count_{0};  // rows
  std::atomic<int64_t> pending_{0};
  std::atomic<uint64_t> execution_count_{0};  // chunks run
  std::atomic<uint64_t> last_inference_ms_{0};
  std::vector<std::unique_ptr<SizeCounters>> size_counters_;  // by batch_sizes_ index
};

}  // namespace graphserve
