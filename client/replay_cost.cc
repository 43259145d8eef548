#include "client/replay_cost.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planning/batch_planner.h"
#include "planning/cost_table.h"

namespace graphserve {

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
  // sizes measured (each once, at any bucket).
  std::vector<int64_t> sizes(capture.batch_sizes().begin(), capture.batch_sizes().end());
  if (sizes.empty()) {
    for (const inference::CaptureCost& cost : capture.cost()) sizes.push_back(cost.batch_size());
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  // The bucket read: the largest measured (one, empty, without shape dims).
  std::vector<int64_t> bucket;
  for (const inference::CaptureCost& cost : capture.cost()) {
    bucket = std::max(bucket, CostKey(cost).bucket);
  }
  std::vector<GraphKey> keys;
  for (int64_t size : sizes) keys.push_back({size, bucket});
  // The server's own plan for the batch: the cheapest by the cost table, or
  // padding up when the table is incomplete (planning/batch_planner.h).
  const std::vector<double> costs = CostsForKeys(capture, keys, replay.graphs);
  const int64_t max_rows = config.max_batch_size() > 0 ? config.max_batch_size() : sizes.back();
  absl::StatusOr<BatchPlanner> planner = BatchPlanner::Create(keys, costs, max_rows);
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
  replay.us = MeasuredCostUs(capture, {planned, bucket}, replay.graphs);
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
