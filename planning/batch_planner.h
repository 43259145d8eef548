#pragma once
// How a request's rows map onto the captured batch sizes: padded up to one
// size, or split into chunks that each run one captured graph. See
// Note [Planning by total cost].

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace graphserve {

// One chunk of a request: rows [first_row, first_row + rows) run through the
// graph of batch_size (the rows beyond `rows` are padding).
struct PlannedChunk {
  int64_t batch_size = 0;
  int64_t first_row = 0;
  int64_t rows = 0;

  friend bool operator==(const PlannedChunk&, const PlannedChunk&) = default;
};

class BatchPlanner {
 public:
  // The most rows a planner precomputes plans for: 16 bytes of table per row,
  // so at most 16 MiB, and far above any max_batch_size one gRPC message can
  // feed (a request carries all its rows in one message).
  static constexpr int64_t kMaxPlannedRows = int64_t{1} << 20;

  // `batch_sizes`: the captured sizes (any order, distinct, >= 1). `costs_us`:
  // empty (unmeasured) or one per size in the same order (> 0, finite): the
  // measured latency of one launch at that size (capture/launch_costs.h).
  // `max_rows`: the largest request (the model's max_batch_size, 1 to
  // kMaxPlannedRows); plans up to it are precomputed so Plan() is O(chunks) on
  // the request path. InvalidArgument for bad arguments.
  static absl::StatusOr<BatchPlanner> Create(std::vector<int64_t> batch_sizes,
                                             std::vector<double> costs_us, int64_t max_rows);

  // 1 <= rows <= max_rows (empty outside). Chunks in row order, covering
  // [0, rows) exactly, each rows <= batch_size; only the last chunk is padded.
  [[nodiscard]] std::vector<PlannedChunk> Plan(int64_t rows) const;

  // The first chunk of Plan(rows) (first_row 0); rows above max_rows count as
  // max_rows, so a queue of merged requests asks for its next chunk in O(1).
  // All zero for rows < 1.
  [[nodiscard]] PlannedChunk FirstChunk(int64_t rows) const;

  // The estimated cost of Plan(rows): the sum of its chunks' costs; with no
  // costs measured, its padded rows (the sum of its batch sizes). 0 outside
  // [1, max_rows].
  [[nodiscard]] double EstimatedCostUs(int64_t rows) const;

  [[nodiscard]] bool has_costs() const { return !costs_us_.empty(); }

  // The captured sizes, ascending.
  [[nodiscard]] const std::vector<int64_t>& batch_sizes() const { return sizes_; }
  [[nodiscard]] int64_t max_rows() const { return max_rows_; }

  // Implementation details follow.
 private:
  BatchPlanner(std::vector<int64_t> sizes, std::vector<double> costs_us, int64_t max_rows);

  void ComputeCheapestPlans();

  std::vector<int64_t> sizes_;    // ascending
  std::vector<double> costs_us_;  // per entry of sizes_, or empty
  int64_t max_rows_ = 0;
  // With costs, per row count r in [0, max_rows]: the batch size of the first
  // chunk of the cheapest plan for r rows, and that plan's cost.
  std::vector<int64_t> first_chunk_;
  std::vector<double> plan_cost_us_;
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

}  // namespace graphserve
