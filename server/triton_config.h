#pragma once
// What GraphServe makes of the Triton fields of a model config. Every field of
// Triton's model_config.proto parses (proto/model_config.proto), so a
// repository written for Triton loads unchanged; this says which of the set
// fields are acted on, and reads the two Triton settings GraphServe honours
// beyond the model's interface: optimization.cuda.graphs and the batch sizes
// of optimization.cuda.graph_spec.

#include <cstdint>
#include <string>
#include <vector>

#include "proto/model_config.pb.h"

namespace graphserve {

// The set fields of `config` GraphServe accepts but does not act on, as
// dotted paths ("optimization.cuda.busy_wait_events", "sequence_batching"),
// each once, in the order they appear in the schema. The loader logs one line
// for each; none is an error.
std::vector<std::string> IgnoredConfigFields(const inference::ModelConfig& config);

// Whether the config turns CUDA graphs off: `capture { graphs_disabled: true }`,
// or Triton's `optimization { cuda { graphs: false } }` written out. Triton's
// default for `graphs` is false, GraphServe's is on: an unwritten `graphs`
// leaves them on.
bool GraphsDisabledByConfig(const inference::ModelConfig& config);

// The batch sizes to capture the config asks for: capture.batch_sizes, or
// when that is empty the batch_size of each optimization.cuda.graph_spec
// (Triton's way of naming the CUDA graphs to capture). Unsorted, as written;
// empty when the config names none.
std::vector<int64_t> RequestedCaptureSizes(const inference::ModelConfig& config);

}  // namespace graphserve
