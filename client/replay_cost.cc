#include "client/replay_cost.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/batch_planner.h"

namespace graphserve {

namespace {

// Size `size`'s measured graph (or eager) cost, if capture.cost has one.
std::optional<double> MeasuredCost(const inference::ModelCapture& capture, int64_t size,
                                   bool graphs) {
  for (const inference::CaptureCost& cost : capture.cost()) {
    const double us = graphs ? cost.graph_us() : cost.eager_us();
    if (cost.batch_size() == size && us > 0) return us;
  }
  return std::nullopt;
}

// Each size's measured cost, in `sizes` order; empty unless every size has
// one, as the server reads the table (CostsFromConfig in
// server/served_model.cc).
std::vector<double> CostsOf(const inference::ModelCapture& capture,
                            const std::vector<int64_t>& sizes, bool graphs) {
  std::vector<double> costs;
  for (int64_t size : sizes) {
    const std::optional<double> us = MeasuredCost(capture, size, graphs);
    if (!us.has_value()) return {};
    costs.push_back(*us);
  }
  return costs;
}

}  // namespace

ReplayCost FullChunkReplay(const inference::ModelConfig& config, int64_t batch_size) {
  const inference::ModelCapture& capture = config.capture();
  ReplayCost replay;
  replay.graphs = !capture.graphs_disabled();
  if (capture.cost().empty()) {
    replay.note =
        "the served config carries no measured costs (capture.cost), as on the host "
        "executor";
    return replay;
  }
  // The sizes the server runs: capture.batch_sizes, or failing that the
  // sizes measured.
  std::vector<int64_t> sizes(capture.batch_sizes().begin(), capture.batch_sizes().end());
  if (sizes.empty()) {
    for (const inference::CaptureCost& cost : capture.cost()) sizes.push_back(cost.batch_size());
  }
  std::sort(sizes.begin(), sizes.end());
  // The server's own plan for the batch: the cheapest by the cost table, or
  // padding up when the table is incomplete (server/batch_planner.h).
  const std::vector<double> costs = CostsOf(capture, sizes, replay.graphs);
  const int64_t max_rows = config.max_batch_size() > 0 ? config.max_batch_size() : sizes.back();
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(sizes, costs, max_rows);
  if (!planner.ok()) {
    replay.note = absl::StrCat("the served config's capture section cannot be planned: ",
                               planner.status().message());
    return replay;
  }
  const std::vector<PlannedChunk> plan = planner->Plan(batch_size);
  if (plan.empty()) {
    replay.note = absl::StrCat("batch ", batch_size, " exceeds max_batch_size ", max_rows);
    return replay;
  }
  if (plan.size() > 1) {
    std::vector<int64_t> chunks;
    for (const PlannedChunk& chunk : plan) chunks.push_back(chunk.batch_size);
    replay.note = absl::StrCat("the server runs batch ", batch_size, " as ",
                               absl::StrJoin(chunks, " + "), ": no single replay");
    return replay;
  }
  const int64_t planned = plan.front().batch_size;
  replay.us = MeasuredCost(capture, planned, replay.graphs);
  if (!replay.us.has_value()) {
    replay.note = absl::StrCat("capture.cost has no measured ",
                               replay.graphs ? "graph replay" : "eager run", " of batch ",
                               planned);
    return replay;
  }
  replay.captured_size = planned;
  if (planned != batch_size) {
    replay.note = absl::StrCat("batch ", batch_size, " is not captured: the cost of ", planned,
                               ", the size it pads to");
  }
  return replay;
}

}  // namespace graphserve
