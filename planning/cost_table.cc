#include "planning/cost_table.h"

namespace graphserve {

std::optional<double> MeasuredCostUs(const inference::ModelCapture& capture, int64_t batch_size,
                                     bool graphs) {
  for (const inference::CaptureCost& cost : capture.cost()) {
    const double us = graphs ? cost.graph_us() : cost.eager_us();
    if (cost.batch_size() == batch_size && us > 0) return us;
  }
  return std::nullopt;
}

std::vector<double> CostsForSizes(const inference::ModelCapture& capture,
                                  const std::vector<int64_t>& sizes, bool graphs) {
  std::vector<double> costs;
  for (int64_t size : sizes) {
    const std::optional<double> us = MeasuredCostUs(capture, size, graphs);
    if (!us.has_value()) return {};
    costs.push_back(*us);
  }
  return costs;
}

}  // namespace graphserve
