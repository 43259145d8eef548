#pragma once
// The model's own cost in a served measurement: the full-chunk replay of
// Note [The served floor] (client/perf_report.h), read from the capture
// section of the served model's config (the ModelConfig RPC).

#include <cstdint>

#include "client/perf_report.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// The measured cost of the one replay the server runs for `batch_size`, by
// the server's own plan (planning/batch_planner.h over capture.cost, as the
// server builds it): capture.cost's graph_us for the planned size, or
// eager_us when the config says the model's graphs are off
// (capture.graphs_disabled). A batch padded up to a larger captured size gets
// that size's cost, and the note says so. A model with shape buckets is read
// at the largest bucket capture.cost measures. Unknown, with the note saying
// why, when the config has no measured costs, the server splits the batch
// over several replays, or the planned size's cost is not measured.
ReplayCost FullChunkReplay(const inference::ModelConfig& config, int64_t batch_size);

}  // namespace graphserve
