#pragma once
// How a request's rows map onto the captured batch sizes: padded up to one
// size, or split into chunks that each run one captured graph. See
// Note [Planning by total cost].

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph_key.h"

namespace graphserve {

// One chunk of a request: rows [first_row, first_row + rows) run through the
// graph of batch_size at the bucket planned for (the rows beyond `rows` are
// padding).
struct PlannedChunk {
  int64_t batch_size = 0;
  int64_t first_row = 0;
  int64_t rows = 0;

  friend bool operator==(const PlannedChunk&, const PlannedChunk&) = default;
};

class BatchPlanner {
 public:
  // The most rows a planner precomputes plans for: 16 bytes of table per row
  // and bucket, so at most 16 MiB a bucket, and far above any max_batch_size
  // one gRPC message can feed (a request carries all its rows in one message).
  static constexpr int64_t kMaxPlannedRows = int64_t{1} << 20;

  // `keys`: the captured graphs (any order, distinct, batch >= 1), every
  // batch size at every bucket, as a graph set captures them. `costs_us`:
  // empty (unmeasured) or one per key in the same order (> 0, finite): the
  // measured latency of one launch of that key's graph
  // (capture/launch_costs.h). `max_rows`: the largest request (the model's
  // max_batch_size, 1 to kMaxPlannedRows); plans up to it are precomputed
  // for each bucket so Plan() is O(chunks) on the request path.
  // InvalidArgument for bad arguments.
  static absl::StatusOr<BatchPlanner> Create(std::vector<GraphKey> keys,
                                             std::vector<double> costs_us, int64_t max_rows);

  // `bucket` indexes buckets(); a model without shape dims has one, 0.
  // 1 <= rows <= max_rows and a bucket in range (empty otherwise). Chunks in
  // row order, covering [0, rows) exactly, each rows <= batch_size, run at
  // `bucket`; only the last chunk is padded.
  [[nodiscard]] std::vector<PlannedChunk> Plan(int64_t rows, size_t bucket = 0) const;

  // The first chunk of Plan(rows, bucket) (first_row 0); rows above max_rows
  // count as max_rows, so a queue of merged requests asks for its next chunk
  // in O(1). All zero for rows < 1 or a bucket out of range.
  [[nodiscard]] PlannedChunk FirstChunk(int64_t rows, size_t bucket = 0) const;

  // The estimated cost of Plan(rows, bucket): the sum of its chunks' costs;
  // with no costs measured, its padded rows (the sum of its batch sizes). 0
  // outside [1, max_rows] or for a bucket out of range.
  [[nodiscard]] double EstimatedCostUs(int64_t rows, size_t bucket = 0) const;

  [[nodiscard]] bool has_costs() const { return !tables_.empty(); }

  // The captured sizes, ascending (the same at every bucket).
  [[nodiscard]] const std::vector<int64_t>& batch_sizes() const { return sizes_; }
  // The captured buckets in key order (each bucket's extents); one, empty,
  // for a model without shape dims. A server's buckets each hold the ones
  // before (server/shape_buckets.h), so key order is its order too.
  [[nodiscard]] const std::vector<std::vector<int64_t>>& buckets() const { return buckets_; }
  [[nodiscard]] int64_t max_rows() const { return max_rows_; }

  // Implementation details follow.
 private:
  // One bucket's cheapest plans: per row count r in [0, max_rows], the batch
  // size of the first chunk of the cheapest plan for r rows, and its cost.
  struct CheapestPlans {
    std::vector<int64_t> first_chunk;
    std::vector<double> cost_us;
  };

  BatchPlanner(std::vector<int64_t> sizes, std::vector<std::vector<int64_t>> buckets,
               int64_t max_rows);

  // The cheapest plans over `sizes_` whose launches cost `costs_us` (one per
  // size), by dynamic programming.
  [[nodiscard]] CheapestPlans ComputeCheapestPlans(const std::vector<double>& costs_us) const;

  std::vector<int64_t> sizes_;  // ascending
  std::vector<std::vector<int64_t>> buckets_;
  int64_t max_rows_ = 0;
  std::vector<CheapestPlans> tables_;  // per bucket with costs; empty without
};

// Note [Planning by total cost]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A request of r rows runs on captured sizes only, so the planner chooses
// between padding it up (one launch, wasted rows) and splitting it (several
// launches, each with its fixed overhead). Without measurements it pads to
// the smallest size that holds r, and above the largest size cuts chunks of
// the largest and pads the remainder: padding is cheap while kernels are
// launch-bound, which is the regime CUDA graphs are for.
//
// With measured costs it minimises the SUM of the chunks' costs, not the
// request's latency. Chunks of one request run in parallel, each on its own
// stream slot, so when the GPU is idle a split request finishes in about the
// time of its largest chunk, and latency alone would favour splitting into
// many small chunks. But a server is costed under load, where every slot is
// busy and the GPU's time is the scarce resource: each chunk then occupies
// the GPU for its cost, and the plan with the smallest total keeps the most
// capacity for other requests. Measured costs are not monotonic in the batch
// size (a size may hit a better GEMM tile than a smaller one), so the
// minimum is found exactly, by dynamic programming over the row count, not
// by a rule. Ties (within rounding) go to fewer chunks, which is fewer slots
// held, then to fewer padded rows.
//
// A model with shape buckets plans each bucket with its own costs: a chunk
// runs at one bucket (Note [Chunks of one bucket] in server/request_queue.h),
// and the shape of the cost curve changes with it: where a long bucket's
// launches grow with the batch (compute-bound), splitting a request can be
// cheaper than padding it, while a short bucket's may cost about the same at
// every batch (launch-bound), where padding is cheaper. Planning short
// requests with the longest bucket's costs would split what pads cheaper.

}  // namespace graphserve
