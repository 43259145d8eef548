#pragma once
// The model's own cost in a served measurement: the full-chunk replay of
// Note [The served floor] (client/perf_report.h), read from the capture
// section of the served model's config (the ModelConfig RPC).

#include <cstdint>

#include "client/perf_report.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// The measured cost of one replay at `batch_size`: capture.cost's graph_us
// for that size, or eager_us when the config says the model's graphs are off
// (capture.graphs_disabled). A size that is not captured gets the cost of the
// smallest captured size above it, the size the request pads to, and the note
// says so. Unknown, with the note saying why, when the config has no measured
// costs, no captured size holds the batch (the server splits it), or the cost
// of the size is not measured.
ReplayCost FullChunkReplay(const inference::ModelConfig& config, int64_t batch_size);

}  // namespace graphserve
