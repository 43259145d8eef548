#include "planning/batch_planner.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<BatchPlanner> BatchPlanner::Create(std::vector<int64_t> batch_sizes,
                                                  std::vector<double> costs_us, int64_t max_rows) {
  if (batch_sizes.empty()) {
    return absl::InvalidArgumentError("the batch planner needs at least one captured batch size");
  }
  if (max_rows < 1 || max_rows > kMaxPlannedRows) {
    return absl::InvalidArgumentError(absl::StrCat("the batch planner's max_rows is ", max_rows,
                                                   "; it must be 1 to ", kMaxPlannedRows));
  }
  if (!costs_us.empty() && costs_us.size() != batch_sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the batch planner got ", costs_us.size(),
                                                   " costs for ", batch_sizes.size(),
                                                   " batch sizes; it needs one per size or none"));
  }
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    if (batch_sizes[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("captured batch size ", batch_sizes[i], " is below 1"));
    }
    // The cost table's sums and comparisons assume real, positive costs: a zero
    // cost would make extra chunks free.
    if (!costs_us.empty() && !(std::isfinite(costs_us[i]) && costs_us[i] > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("the cost of batch size ", batch_sizes[i],
                                                     " is ", costs_us[i],
                                                     " us; costs must be positive and finite"));
    }
  }

  // Sort sizes ascending, carrying their costs along.
  std::vector<size_t> order(batch_sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return batch_sizes[a] < batch_sizes[b]; });
  std::vector<int64_t> sizes;
  std::vector<double> costs;
  for (size_t i : order) {
    if (!sizes.empty() && sizes.back() == batch_sizes[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("captured batch size ", batch_sizes[i], " is listed twice"));
    }
    sizes.push_back(batch_sizes[i]);
    if (!costs_us.empty()) costs.push_back(costs_us[i]);
  }
  BatchPlanner planner(std::move(sizes), std::move(costs), max_rows);
  if (planner.has_costs()) planner.ComputeCheapestPlans();
  return planner;
}

BatchPlanner::BatchPlanner(std::vector<int64_t> sizes, std::vector<double> costs_us,
                           int64_t max_rows)
    : sizes_(std::move(sizes)), costs_us_(std::move(costs_us)), max_rows_(max_rows) {}

std::vector<PlannedChunk> BatchPlanner::Plan(int64_t rows) const {
  if (rows < 1 || rows > max_rows_) return {};
  // Each chunk is the first of the cheapest plan for the rows left, which is
  // the cheapest plan's next chunk (see ComputeCheapestPlans).
  std::vector<PlannedChunk> chunks;
  for (int64_t first_row = 0; first_row < rows;) {
    PlannedChunk chunk = FirstChunk(rows - first_row);
    chunk.first_row = first_row;
    first_row += chunk.rows;
    chunks.push_back(chunk);
  }
  return chunks;
}

PlannedChunk BatchPlanner::FirstChunk(int64_t rows) const {
  if (rows < 1) return {};
  rows = std::min(rows, max_rows_);
  if (has_costs()) {
    const int64_t batch_size = first_chunk_[rows];
    return {batch_size, 0, std::min(batch_size, rows)};
  }
  // Without costs: chunks of the largest size, the remainder padded up to the
  // smallest size that holds it.
  const int64_t largest = sizes_.back();
  if (rows >= largest) return {largest, 0, largest};
  return {*std::lower_bound(sizes_.begin(), sizes_.end(), rows), 0, rows};
}

double BatchPlanner::EstimatedCostUs(int64_t rows) const {
  if (rows < 1 || rows > max_rows_) return 0;
  if (has_costs()) return plan_cost_us_[rows];
  double padded_rows = 0;
  for (const PlannedChunk& chunk : Plan(rows)) padded_rows += chunk.batch_size;
  return padded_rows;
}

void BatchPlanner::ComputeCheapestPlans() {
  // cheapest[r] is the best plan for r rows, compared as (cost, chunks, padded
  // rows). Adding the same first chunk to two plans keeps their order, so the
  // best plan for r starts with some size s followed by the best plan for
  // r - s: the recurrence below. Only the last chunk is ever padded: a plan
  // whose full capacity leaves a whole chunk idle costs more than the same
  // plan without that chunk.
  first_chunk_.assign(max_rows_ + 1, 0);
  plan_cost_us_.assign(max_rows_ + 1, 0);
  std::vector<int64_t> chunk_count(max_rows_ + 1, 0);
  std::vector<int64_t> padded_rows(max_rows_ + 1, 0);

  // Costs that differ by rounding only (sums of the same terms in another
  // order) count as equal, so that the tie-breaks decide.
  const auto cheaper = [](double a, double b) { return a < b - 1e-9 * std::max(a, b); };
  for (int64_t r = 1; r <= max_rows_; ++r) {
    bool found = false;
    // Largest first, so that among equal plans the larger chunks come first.
    for (size_t i = sizes_.size(); i-- > 0;) {
      const int64_t size = sizes_[i];
      const int64_t rest = std::max<int64_t>(r - size, 0);
      const double cost = costs_us_[i] + plan_cost_us_[rest];
      const int64_t chunks = 1 + chunk_count[rest];
      const int64_t padded = size >= r ? size - r : padded_rows[rest];
      const bool better = !found || cheaper(cost, plan_cost_us_[r]) ||
                          (!cheaper(plan_cost_us_[r], cost) &&
                           std::pair(chunks, padded) < std::pair(chunk_count[r], padded_rows[r]));
      if (better) {
        found = true;
        first_chunk_[r] = size;
        plan_cost_us_[r] = cost;
        chunk_count[r] = chunks;
        padded_rows[r] = padded;
      }
    }
  }
}

}  // namespace graphserve
