#pragma once
// What a model configuration must satisfy before GraphServe loads it: the
// rules Triton applies to every config (so that what Triton rejects as
// invalid is rejected here too, naming the field, in Triton's words), then
// the features of a valid config GraphServe does not implement, refused
// rather than ignored. See Note [Triton's config rules].
//
// GraphServe's own limits (fixed non-batch dims, supported data types, stream
// slots) are checked after these, where the interface is read
// (model_interface.h) and the repository scanned (model_repository.h).

#include <optional>

#include "absl/status/status.h"
#include "proto/model_config.pb.h"

namespace graphserve {

struct ConfigValidationOptions {
  // GPUs the CUDA executor sees: an instance_group GPU id at or beyond this is
  // refused. nullopt on the host executor, which serves a config written for
  // GPUs on the host, so only negative GPU ids are refused there.
  std::optional<int> visible_gpus = std::nullopt;
};

// InvalidArgument, with Triton's message, for the first rule of Triton's
// (core's ValidateModelConfig, ValidateModelIOConfig and
// ValidateInstanceGroup) that `config` breaks:
// - max_batch_size >= 0;
// - dynamic_batching: preferred_batch_size from 1 to max_batch_size;
//   default_priority_level and priority_queue_policy levels from 1 to
//   priority_levels when priority_levels is set; preserve_ordering with one
//   priority level and no DELAY timeout action;
// - sequence_batching: control tensors named, each used for one kind, each
//   kind on one tensor, START/END/READY with exactly one of
//   int32/fp32/bool_false_true of 2 entries, CORRID typed (uint64, int64,
//   uint32, int32 or string) without false/true values; oldest's
//   preferred_batch_size from 1 to max_batch_size, direct's
//   minimum_slot_utilization in [0, 1]; no response_cache;
// - ensemble_scheduling only on platform "ensemble"; no response_cache on a
//   decoupled model; model_metrics' controls complete;
// - every input and output: a name, a data_type, dims, each dim >= 1 or -1,
//   reshape dims likewise with the dims' element count (per run between -1s),
//   no empty reshape without batching; FORMAT_NHWC/NCHW with 3 dims; no
//   shape tensors or non-linear formats (TensorRT's);
// - batch_input and batch_output: one source input that exists, known kinds,
//   INT32 or FP32 batch inputs, each target output existing and named once;
// - instance_group: no GPUs on KIND_CPU or KIND_MODEL, no negative GPU id nor
//   one at or beyond options.visible_gpus, profile only for TensorRT. Groups
//   without a name are called "<model>_<index>", as Triton names them.
absl::Status ValidateModelConfig(const inference::ModelConfig& config,
                                 const ConfigValidationOptions& options = {});

// Unimplemented, saying why and what to change, for a valid config asking for
// what GraphServe does not do: a decoupled transaction policy, batch inputs
// or outputs; and sequence_batching, which only LoadSequenceModel serves
// (server/sequence_batcher.h), its unserved parts refused there. (An ensemble's own rules are
// ValidateEnsembleScheduling's, server/ensemble_config.h.) Accepting them would answer
// requests wrong (a stateful model without its state, a decoupled model once).
absl::Status RefuseUnservedFeatures(const inference::ModelConfig& config);

}  // namespace graphserve
