#include "planning/cost_table.h"

namespace graphserve {

GraphKey CostKey(const inference::CaptureCost& cost) {
  return {cost.batch_size(), {cost.bucket().begin(), cost.bucket().end()}};
}

std::optional<double> MeasuredCostUs(const inference::ModelCapture& capture, const GraphKey& key,
                                     bool graphs) {
  for (const inference::CaptureCost& cost : capture.cost()) {
    const double us = graphs ? cost.graph_us() : cost.eager_us();
    if (CostKey(cost) == key && us > 0) return us;
  }
  return std::nullopt;
}

std::vector<double> CostsForKeys(const inference::ModelCapture& capture,
                                 const std::vector<GraphKey>& keys, bool graphs) {
  std::vector<double> costs;
  for (const GraphKey& key : keys) {
    const std::optional<double> us = MeasuredCostUs(capture, key, graphs);
    if (!us.has_value()) return {};
    costs.push_back(*us);
  }
  return costs;
}

}  // namespace graphserve
