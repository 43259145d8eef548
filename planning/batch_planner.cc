#include "planning/batch_planner.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<BatchPlanner> BatchPlanner::Create(std::vector<GraphKey> keys,
                                                  std::vector<double> costs_us, int64_t max_rows) {
  if (keys.empty()) {
    return absl::InvalidArgumentError("the batch planner needs at least one captured batch size");
  }
  if (max_rows < 1 || max_rows > kMaxPlannedRows) {
    return absl::InvalidArgumentError(absl::StrCat("the batch planner's max_rows is ", max_rows,
                                                   "; it must be 1 to ", kMaxPlannedRows));
  }
  if (!costs_us.empty() && costs_us.size() != keys.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the batch planner got ", costs_us.size(),
                                                   " costs for ", keys.size(),
                                                   " graphs; it needs one per graph or none"));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].batch_size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("captured batch size ", keys[i].batch_size, " is below 1"));
    }
    // The cost table's sums and comparisons assume real, positive costs: a zero
    // cost would make extra chunks free.
    if (!costs_us.empty() && !(std::isfinite(costs_us[i]) && costs_us[i] > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("the cost of graph ", GraphKeyString(keys[i]),
                                                     " is ", costs_us[i],
                                                     " us; costs must be positive and finite"));
    }
  }

  // Keys ascending, carrying their costs along: by bucket, then batch.
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(keys[a].bucket, keys[a].batch_size) <
           std::tie(keys[b].bucket, keys[b].batch_size);
  });
  std::vector<int64_t> sizes;  // the first bucket's
  std::vector<std::vector<int64_t>> buckets;
  std::vector<std::vector<double>> costs;  // per bucket, per size
  for (size_t i : order) {
    const GraphKey& key = keys[i];
    if (buckets.empty() || buckets.back() != key.bucket) {
      buckets.push_back(key.bucket);
      costs.emplace_back();
    }
    if (!costs_us.empty()) costs.back().push_back(costs_us[i]);
    if (buckets.size() == 1) {
      if (!sizes.empty() && sizes.back() == key.batch_size) {
        return absl::InvalidArgumentError(
            absl::StrCat("captured graph ", GraphKeyString(key), " is listed twice"));
      }
      sizes.push_back(key.batch_size);
    }
  }
  if (keys.size() != sizes.size() * buckets.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the batch planner needs every batch size at every bucket; it got ", keys.size(),
        " graphs for ", sizes.size(), " batch sizes at ", buckets.size(), " buckets"));
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t s = 0; s < sizes.size(); ++s) {
      const GraphKey& key = keys[order[b * sizes.size() + s]];
      if (key.batch_size != sizes[s]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the batch planner needs every batch size at every bucket; graph ", GraphKeyString(key),
            " is not at batch ", sizes[s], " as the first bucket's is"));
      }
    }
  }
  BatchPlanner planner(std::move(sizes), std::move(buckets), max_rows);
  if (!costs_us.empty()) {
    for (const std::vector<double>& bucket_costs : costs) {
      planner.tables_.push_back(planner.ComputeCheapestPlans(bucket_costs));
    }
  }
  return planner;
}

BatchPlanner::BatchPlanner(std::vector<int64_t> sizes, std::vector<std::vector<int64_t>> buckets,
                           int64_t max_rows)
    : sizes_(std::move(sizes)), buckets_(std::move(buckets)), max_rows_(max_rows) {}

std::vector<PlannedChunk> BatchPlanner::Plan(int64_t rows, size_t bucket) const {
  if (rows < 1 || rows > max_rows_ || bucket >= buckets_.size()) return {};
  // Each chunk is the first of the cheapest plan for the rows left, which is
  // the cheapest plan's next chunk (see ComputeCheapestPlans).
  std::vector<PlannedChunk> chunks;
  for (int64_t first_row = 0; first_row < rows;) {
    PlannedChunk chunk = FirstChunk(rows - first_row, bucket);
    chunk.first_row = first_row;
    first_row += chunk.rows;
    chunks.push_back(chunk);
  }
  return chunks;
}

PlannedChunk BatchPlanner::FirstChunk(int64_t rows, size_t bucket) const {
  if (rows < 1 || bucket >= buckets_.size()) return {};
  rows = std::min(rows, max_rows_);
  if (has_costs()) {
    const int64_t batch_size = tables_[bucket].first_chunk[rows];
    return {batch_size, 0, std::min(batch_size, rows)};
  }
  // Without costs: chunks of the largest size, the remainder padded up to the
  // smallest size that holds it.
  const int64_t largest = sizes_.back();
  if (rows >= largest) return {largest, 0, largest};
  return {*std::lower_bound(sizes_.begin(), sizes_.end(), rows), 0, rows};
}

double BatchPlanner::EstimatedCostUs(int64_t rows, size_t bucket) const {
  if (rows < 1 || rows > max_rows_ || bucket >= buckets_.size()) return 0;
  if (has_costs()) return tables_[bucket].cost_us[rows];
  double padded_rows = 0;
  for (const PlannedChunk& chunk : Plan(rows, bucket)) padded_rows += chunk.batch_size;
  return padded_rows;
}

BatchPlanner::CheapestPlans BatchPlanner::ComputeCheapestPlans(
    const std::vector<double>& costs_us) const {
  // cheapest[r] is the best plan for r rows, compared as (cost, chunks, padded
  // rows). Adding the same first chunk to two plans keeps their order, so the
  // best plan for r starts with some size s followed by the best plan for
  // r - s: the recurrence below. Only the last chunk is ever padded: a plan
  // whose full capacity leaves a whole chunk idle costs more than the same
  // plan without that chunk.
  CheapestPlans plans;
  plans.first_chunk.assign(max_rows_ + 1, 0);
  plans.cost_us.assign(max_rows_ + 1, 0);
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
      const double cost = costs_us[i] + plans.cost_us[rest];
      const int64_t chunks = 1 + chunk_count[rest];
      const int64_t padded = size >= r ? size - r : padded_rows[rest];
      const bool better = !found || cheaper(cost, plans.cost_us[r]) ||
                          (!cheaper(plans.cost_us[r], cost) &&
                           std::pair(chunks, padded) < std::pair(chunk_count[r], padded_rows[r]));
      if (better) {
        found = true;
        plans.first_chunk[r] = size;
        plans.cost_us[r] = cost;
        chunk_count[r] = chunks;
        padded_rows[r] = padded;
      }
    }
  }
  return plans;
}

}  // namespace graphserve
