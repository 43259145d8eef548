#pragma once
// What a model's `sequence_batching` asks of the server, read once at load:
// the control tensors the batcher writes, the implicit state it keeps, the
// strategy and its slots. See Note [Sequence batching] in
// server/sequence_batcher.h.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/tensor.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// Triton's default for max_sequence_idle_microseconds (core's
// SEQUENCE_IDLE_DEFAULT_MICROSECONDS).
inline constexpr std::chrono::microseconds kDefaultSequenceIdle{1'000'000};

enum class SequenceStrategy {
  kDirect,  // a sequence owns one slot of an instance for its life
  kOldest,  // candidate sequences; a batch takes the oldest requests
};

// One control tensor the batcher writes into each execution.
struct SequenceControl {
  inference::ModelSequenceBatching::Control::Kind kind =
      inference::ModelSequenceBatching::Control::CONTROL_SEQUENCE_START;
  std::string tensor;  // the model input's name
  DType dtype = DType::kInt32;
  // START, END, READY: one element each, little-endian, of `dtype`
  // (int32_false_true, fp32_false_true or bool_false_true). Empty for CORRID.
  std::vector<std::byte> false_value;
  std::vector<std::byte> true_value;
};

// One implicit state: the model's input `input_name` is fed, per sequence,
// what its output `output_name` gave at the sequence's previous request.
struct SequenceState {
  std::string input_name;
  std::string output_name;
  DType dtype = DType::kFloat32;
  Dims dims;  // one row's, every dim fixed
  // One row's bytes at START: initial_state's data (zero_data or the file
  // under <model>/initial_state/), else zeros (Triton leaves it
  // uninitialised: the model must not read it at START).
  std::vector<std::byte> initial;

  [[nodiscard]] size_t bytes_per_row() const;
};

struct SequencePlan {
  SequenceStrategy strategy = SequenceStrategy::kDirect;
  // Sequences each model instance (stream slot) holds at once: direct,
  // max(1, max_batch_size); oldest, max_candidate_sequences (when set).
  int64_t slots_per_instance = 1;
  std::chrono::microseconds max_idle = kDefaultSequenceIdle;
  bool batching = true;  // max_batch_size > 0: control and state rows carry a batch dim
  std::vector<SequenceControl> controls;
  std::vector<SequenceState> states;

  // The control of `kind`, or null when the model has none.
  [[nodiscard]] const SequenceControl* Find(
      inference::ModelSequenceBatching::Control::Kind kind) const;
  // Whether `name` is a control or state input: a tensor clients do not send.
  [[nodiscard]] bool IsBatcherInput(const std::string& name) const;
};

// Triton's defaults for a sequence_batching config (core's
// NormalizeModelConfig): max_sequence_idle_microseconds 1 s when unset, and
// oldest's preferred_batch_size [max_batch_size] when empty.
void NormalizeSequenceBatching(inference::ModelConfig* config);

// Reads the (validated, normalised) `config`'s sequence_batching. `model_directory`
// holds initial_state/ for data_file states. InvalidArgument in Triton's
// words for an initial_state Triton refuses; Unimplemented, naming the field
// and why, for what GraphServe does not serve: iterative_sequence, direct's
// minimum_slot_utilization above 0, a STRING CORRID, a state of variable
// dims, of type STRING, or with use_same_buffer_for_input_output or
// use_growable_memory.
absl::StatusOr<SequencePlan> PlanSequenceBatching(const inference::ModelConfig& config,
                                                  const std::string& model_directory);

// The config the model executes with, as an ordinary batching model: the
// control inputs and state inputs added to `input` (dims [1] for a control,
// the state's dims), the state outputs added to `output`, both unless the
// config declares them already; sequence_batching replaced, for a batching
// model, by a dynamic_batching (so that rows of different sequences ready
// together run as one batch) with oldest's max_queue_delay_microseconds and
// preferred_batch_size, or no delay for direct (Triton's direct waits only
// below a minimum_slot_utilization, which GraphServe refuses).
inference::ModelConfig ExecutionConfig(const inference::ModelConfig& config,
                                       const SequencePlan& plan);

}  // namespace graphserve
