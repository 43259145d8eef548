#include "server/sequence_config.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "proto/config_dtype.h"

namespace graphserve {

namespace {

using inference::ModelSequenceBatching;
using Kind = ModelSequenceBatching::Control::Kind;

std::string ForModel(const inference::ModelConfig& config) {
  return absl::StrCat("model '", config.name(), "'");
}

template <typename T>
std::vector<std::byte> BytesOf(T value) {
  std::vector<std::byte> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

// A boolean control's type and false/true elements, from whichever list it
// carries (ValidateModelConfig has checked there is exactly one, of two).
SequenceControl BooleanControl(const std::string& tensor,
                               const ModelSequenceBatching::Control& control) {
  SequenceControl out;
  out.kind = control.kind();
  out.tensor = tensor;
  if (control.int32_false_true_size() == 2) {
    out.dtype = DType::kInt32;
    out.false_value = BytesOf<int32_t>(control.int32_false_true(0));
    out.true_value = BytesOf<int32_t>(control.int32_false_true(1));
  } else if (control.fp32_false_true_size() == 2) {
    out.dtype = DType::kFloat32;
    out.false_value = BytesOf<float>(control.fp32_false_true(0));
    out.true_value = BytesOf<float>(control.fp32_false_true(1));
  } else {
    out.dtype = DType::kBool;
    out.false_value = BytesOf<uint8_t>(control.bool_false_true(0) ? 1 : 0);
    out.true_value = BytesOf<uint8_t>(control.bool_false_true(1) ? 1 : 0);
  }
  return out;
}

absl::StatusOr<SequenceControl> ReadControl(const inference::ModelConfig& config,
                                            const std::string& tensor,
                                            const ModelSequenceBatching::Control& control) {
  if (control.kind() != ModelSequenceBatching::Control::CONTROL_SEQUENCE_CORRID) {
    return BooleanControl(tensor, control);
  }
  if (control.data_type() == inference::TYPE_STRING) {
    return absl::UnimplementedError(absl::StrCat(
        ForModel(config), " has a CONTROL_SEQUENCE_CORRID control '", tensor,
        "' of TYPE_STRING: GraphServe serves no STRING tensors yet; use TYPE_UINT64 (string "
        "sequence ids then go to models without a CORRID control)"));
  }
  SequenceControl out;
  out.kind = control.kind();
  out.tensor = tensor;
  ASSIGN_OR_RETURN(out.dtype, DTypeFromConfig(control.data_type()));
  return out;
}

// The state's one-row bytes at START, from its initial_state (Triton's
// checks and words, core's GenerateInitialStateData), else zeros.
absl::StatusOr<std::vector<std::byte>> InitialStateBytes(const ModelSequenceBatching::State& state,
                                                         size_t bytes,
                                                         const std::string& model_directory) {
  std::vector<std::byte> initial(bytes);
  if (state.initial_state().empty()) return initial;
  const ModelSequenceBatching::InitialState& given = state.initial_state(0);
  if (given.data_type() != state.data_type()) {
    return absl::InvalidArgumentError(
        absl::StrCat("The data type used for 'initial_state' field of state '", state.input_name(),
                     "' does not match the state data type."));
  }
  if (given.name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Field 'name' must be set when using initial_state for state input '",
                     state.input_name(), "'."));
  }
  if (given.dims_size() != state.dims_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Number of dimensions in 'initial_state' doesn't match the size of 'state' dimensions "
        "for state input '",
        state.input_name(), "'. ", given.dims_size(), " != ", state.dims_size()));
  }
  for (int d = 0; d < given.dims_size(); ++d) {
    if (given.dims(d) == -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("'initial_state' field for state input name '", state.input_name(),
                       "' contains variable dimensions."));
    }
    if (given.dims(d) != state.dims(d)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'initial_state' dim for input name '", state.input_name(),
          "' doesn't match 'state' dim description. ", given.dims(d), " != ", state.dims(d)));
    }
  }
  switch (given.state_data_case()) {
    case ModelSequenceBatching::InitialState::kZeroData:
      return initial;
    case ModelSequenceBatching::InitialState::kDataFile: {
      const std::filesystem::path path =
          std::filesystem::path(model_directory) / "initial_state" / given.data_file();
      std::ifstream file(path, std::ios::binary);
      if (!file) {
        return absl::InvalidArgumentError(
            absl::StrCat("unable to open initial_state data file '", path.string(),
                         "' of state input '", state.input_name(), "'"));
      }
      const std::string data((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
      if (data.size() < bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "initial_state setting expects ", bytes, " bytes, but the data provided from ",
            given.data_file(), "only has ", data.size(), " bytes."));
      }
      std::memcpy(initial.data(), data.data(), bytes);
      return initial;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "initial_state setting expects state'", state.input_name(), "' to have state_data set"));
  }
}

absl::StatusOr<SequenceState> ReadState(const inference::ModelConfig& config,
                                        const ModelSequenceBatching::State& state,
                                        const std::string& model_directory) {
  const std::string which =
      absl::StrCat(ForModel(config), " state '", state.input_name(), "'");
  if (state.use_same_buffer_for_input_output() || state.use_growable_memory()) {
    return absl::UnimplementedError(absl::StrCat(
        which, " sets ",
        state.use_growable_memory() ? "use_growable_memory" : "use_same_buffer_for_input_output",
        ": GraphServe keeps each state in buffers of fixed size it copies between executions "
        "(Note [Sequence batching]); remove the field"));
  }
  if (state.data_type() == inference::TYPE_STRING) {
    return absl::UnimplementedError(
        absl::StrCat(which, " is TYPE_STRING: GraphServe serves no STRING tensors yet"));
  }
  if (state.input_name().empty() || state.output_name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ForModel(config), " has a sequence_batching state without ",
                     state.input_name().empty() ? "input_name" : "output_name"));
  }
  SequenceState out;
  out.input_name = state.input_name();
  out.output_name = state.output_name();
  ASSIGN_OR_RETURN(out.dtype, DTypeFromConfig(state.data_type()));
  for (int64_t dim : state.dims()) {
    if (dim < 1) {
      return absl::UnimplementedError(absl::StrCat(
          which, " has dims [", absl::StrJoin(state.dims(), ","),
          "]: GraphServe keeps states of fixed dims (each >= 1); variable-size states are not "
          "served yet"));
    }
    out.dims.push_back(dim);
  }
  if (out.dims.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(which, " has no dims"));
  }
  ASSIGN_OR_RETURN(out.initial, InitialStateBytes(state, out.bytes_per_row(), model_directory));
  return out;
}

}  // namespace

size_t SequenceState::bytes_per_row() const {
  size_t elements = 1;
  for (int64_t dim : dims) elements *= static_cast<size_t>(dim);
  return elements * DTypeSize(dtype);
}

const SequenceControl* SequencePlan::Find(Kind kind) const {
  for (const SequenceControl& control : controls) {
    if (control.kind == kind) return &control;
  }
  return nullptr;
}

bool SequencePlan::IsBatcherInput(const std::string& name) const {
  for (const SequenceControl& control : controls) {
    if (control.tensor == name) return true;
  }
  for (const SequenceState& state : states) {
    if (state.input_name == name) return true;
  }
  return false;
}

void NormalizeSequenceBatching(inference::ModelConfig* config) {
  if (!config->has_sequence_batching()) return;
  ModelSequenceBatching* batcher = config->mutable_sequence_batching();
  if (batcher->max_sequence_idle_microseconds() == 0) {
    batcher->set_max_sequence_idle_microseconds(kDefaultSequenceIdle.count());
  }
  if (batcher->has_oldest() && batcher->oldest().preferred_batch_size().empty() &&
      config->max_batch_size() > 0) {
    batcher->mutable_oldest()->add_preferred_batch_size(config->max_batch_size());
  }
}

absl::StatusOr<SequencePlan> PlanSequenceBatching(const inference::ModelConfig& config,
                                                  const std::string& model_directory) {
  const ModelSequenceBatching& batcher = config.sequence_batching();
  if (batcher.iterative_sequence()) {
    return absl::UnimplementedError(absl::StrCat(
        ForModel(config),
        " sets sequence_batching.iterative_sequence: iterative (generative) sequences re-run a "
        "request until the model ends it, which needs decoupled responses GraphServe does not "
        "serve"));
  }
  SequencePlan plan;
  plan.batching = config.max_batch_size() > 0;
  plan.slots_per_instance = std::max<int64_t>(1, config.max_batch_size());
  if (batcher.has_oldest()) {
    plan.strategy = SequenceStrategy::kOldest;
    if (batcher.oldest().max_candidate_sequences() > 0) {
      plan.slots_per_instance = batcher.oldest().max_candidate_sequences();
    }
  } else if (batcher.direct().minimum_slot_utilization() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        ForModel(config), " sets sequence_batching.direct.minimum_slot_utilization ",
        batcher.direct().minimum_slot_utilization(),
        ": GraphServe runs the ready sequences' rows together once max_queue_delay_microseconds "
        "passes, whatever share of the slots they fill; remove the field"));
  }
  plan.max_idle = std::chrono::microseconds(batcher.max_sequence_idle_microseconds() > 0
                                                ? batcher.max_sequence_idle_microseconds()
                                                : kDefaultSequenceIdle.count());
  for (const ModelSequenceBatching::ControlInput& input : batcher.control_input()) {
    for (const ModelSequenceBatching::Control& control : input.control()) {
      ASSIGN_OR_RETURN(SequenceControl read, ReadControl(config, input.name(), control));
      plan.controls.push_back(std::move(read));
    }
  }
  for (const ModelSequenceBatching::State& state : batcher.state()) {
    for (const SequenceState& known : plan.states) {
      if (known.input_name == state.input_name()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "State input name '", state.input_name(), "' specified more than once."));
      }
    }
    ASSIGN_OR_RETURN(SequenceState read, ReadState(config, state, model_directory));
    plan.states.push_back(std::move(read));
  }
  return plan;
}

namespace {

bool Declares(const google::protobuf::RepeatedPtrField<inference::ModelInput>& tensors,
              const std::string& name) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const inference::ModelInput& t) { return t.name() == name; });
}

bool Declares(const google::protobuf::RepeatedPtrField<inference::ModelOutput>& tensors,
              const std::string& name) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const inference::ModelOutput& t) { return t.name() == name; });
}

}  // namespace

inference::ModelConfig ExecutionConfig(const inference::ModelConfig& config,
                                       const SequencePlan& plan) {
  inference::ModelConfig execution = config;
  execution.clear_sequence_batching();
  for (const SequenceControl& control : plan.controls) {
    if (Declares(execution.input(), control.tensor)) continue;
    inference::ModelInput* input = execution.add_input();
    input->set_name(control.tensor);
    input->set_data_type(ConfigDataType(control.dtype));
    input->add_dims(1);
  }
  for (const SequenceState& state : plan.states) {
    if (!Declares(execution.input(), state.input_name)) {
      inference::ModelInput* input = execution.add_input();
      input->set_name(state.input_name);
      input->set_data_type(ConfigDataType(state.dtype));
      for (int64_t dim : state.dims) input->add_dims(dim);
    }
    if (!Declares(execution.output(), state.output_name)) {
      inference::ModelOutput* output = execution.add_output();
      output->set_name(state.output_name);
      output->set_data_type(ConfigDataType(state.dtype));
      for (int64_t dim : state.dims) output->add_dims(dim);
    }
  }
  // Rows of different sequences ready at once run as one batch (Note
  // [Sequence batching]): the strategy's delay becomes the queue's.
  const ModelSequenceBatching& batcher = config.sequence_batching();
  if (!plan.batching) return execution;
  inference::ModelDynamicBatching* dynamic = execution.mutable_dynamic_batching();
  // Direct's delay applies only while fewer slots than
  // minimum_slot_utilization are ready, and PlanSequenceBatching refuses any
  // utilization above 0: as in Triton, ready rows run at once.
  if (batcher.has_oldest()) {
    dynamic->set_max_queue_delay_microseconds(batcher.oldest().max_queue_delay_microseconds());
    *dynamic->mutable_preferred_batch_size() = batcher.oldest().preferred_batch_size();
  }
  return execution;
}

}  // namespace graphserve
