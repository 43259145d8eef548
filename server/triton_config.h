#pragma once
// What GraphServe makes of the Triton fields of a model config. Every field of
// Triton's model_config.proto parses (proto/model_config.proto), so a
// repository written for Triton loads unchanged; this says which of the set
// fields are acted on, and reads the Triton settings GraphServe honours
// beyond the model's interface: optimization.cuda.graphs, the batch sizes of
// optimization.cuda.graph_spec and dynamic_batching.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/model_config.pb.h"
#include "runtime/ir.h"
#include "server/request_queue.h"

namespace graphserve {

// The set fields of `config` GraphServe accepts but does not act on, as
// dotted paths ("optimization.cuda.busy_wait_events", "model_warmup"),
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
// (Triton's way of naming the CUDA graphs to capture), or else
// dynamic_batching's preferred_batch_size (the sizes the operator expects
// batches of). Unsorted, as written; empty when the config names none.
std::vector<int64_t> RequestedCaptureSizes(const inference::ModelConfig& config);

// The request queue's policy from Triton's dynamic_batching: merging on,
// max_queue_delay_microseconds, preferred_batch_size, priority_levels with
// default_priority_level, default_queue_policy and priority_queue_policy
// (timeout_action, default_timeout_microseconds, allow_timeout_override,
// max_queue_size). Without dynamic_batching: no merging, one level, no
// timeouts. InvalidArgument naming the field for values Triton would refuse.
// (preserve_ordering is the served model's: it orders responses, not rows.)
absl::StatusOr<QueuePolicy> QueuePolicyFromConfig(const inference::ModelConfig& config);

// Triton's default max_batch_size for a config it completes
// (--backend-config=default-max-batch-size).
inline constexpr int kAutoCompleteMaxBatchSize = 4;

// Completes, as Triton's auto-complete does (--strict-model-config=false), a
// config that leaves out its inputs, its outputs or both, from the model
// file: each tensor's name, data type and dims (a scalar row as dims [1] with
// an empty reshape). With neither declared, a batch dimension when dim 0 of
// every input is symbolic (max_batch_size kAutoCompleteMaxBatchSize unless
// the config sets one; the default capture sizes follow from it), and
// otherwise max_batch_size 0 with the model's full dims, as Triton completes
// a model that does not batch. With one side declared, the config's
// max_batch_size says whether the model batches. Either way InvalidArgument
// in Triton's words, naming the input, when max_batch_size is above 0 for a
// model whose inputs have a fixed dim 0. A config that declares both is left
// as it is. Either way sets model->batches to whether the config, completed,
// batches: without a batch, a dynamic dim 0 of the model is a shape dim,
// which a completed config gives as -1 (Note [Models without a batch dim] in
// runtime/ir.h).
absl::Status CompleteConfigFromModel(Model* model, inference::ModelConfig* config);

// As CompleteConfigFromModel, with the config's max_batch_size as written,
// 0 included: a config that declares nothing and max_batch_size 0 is
// completed as a model served without a batch, the one thing Triton's
// auto-complete cannot be told (it reads 0 as unset). What
// `graphserve-capture prepare --max-batch-size 0` writes.
absl::Status DeclareConfigFromModel(Model* model, inference::ModelConfig* config);

}  // namespace graphserve
