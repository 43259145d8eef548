#pragma once
// The cost table as the planner reads it: each captured graph's measured
// latency from a config's capture section (capture.cost, written by
// `graphserve-capture prepare` or by the server at load). The server builds
// its BatchPlanner from it and the client predicts the server's plan from the
// same served config, so both read it here, the one way.

#include <cstdint>
#include <optional>
#include <vector>

#include "common/graph_key.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// Graph `key`'s measured cost in `capture.cost` (the entry of its batch size
// and bucket): its graph_us, or its eager_us when `graphs` is false (the
// model's graphs are off). nullopt when no entry measures it (a cost of 0 or
// less counts as unmeasured).
std::optional<double> MeasuredCostUs(const inference::ModelCapture& capture, const GraphKey& key,
                                     bool graphs);

// One measured cost per entry of `keys`, in its order, as
// BatchPlanner::Create takes them; empty unless every key has one, so that
// an incomplete table plans by padding (Note [Planning by total cost]).
std::vector<double> CostsForKeys(const inference::ModelCapture& capture,
                                 const std::vector<GraphKey>& keys, bool graphs);

// The key `cost` measures.
GraphKey CostKey(const inference::CaptureCost& cost);

}  // namespace graphserve
