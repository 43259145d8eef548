#include "server/config_validation.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace graphserve {

// Note [Triton's config rules]
// Triton checks every model config it loads (core's model_config_utils.cc)
// and refuses a broken one with a message scripts and users know; its QA
// keeps a directory of such configs with the text each must produce
// (qa/L0_model_config). GraphServe used to accept most of them, reading what
// it understood and ignoring the rest, so a config Triton refuses could load
// here and answer differently. These rules are Triton's, in Triton's words
// (each message contains Triton's text, so a grep written for Triton
// matches), applied to the config as it will be served: after auto-complete
// from the model file, before anything is started for it. GraphServe's own
// limits come after them, so a config broken for Triton is reported the way
// Triton reports it, not as a GraphServe limitation. Deliberate differences:
// - a KIND_GPU group on the host executor (--device cpu) is served on the
//   host, where Triton without GPUs refuses it: the same repository serves on
//   both, and GPU ids are checked on the CUDA executor only;
// - Triton's rules on platform and backend pairs live in the repository scan
//   (model_repository.cc), which refuses every non-ONNX platform by name.
// tests/triton_model_config_test.py runs Triton's QA configs that apply to
// ONNX models against the server.

namespace {

using inference::ModelConfig;
using inference::ModelInput;
using inference::ModelInstanceGroup;
using inference::ModelOutput;
using inference::ModelQueuePolicy;
using inference::ModelSequenceBatching;

// Triton's variable-size dimension.
constexpr int64_t kWildcardDim = -1;

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

std::string For(const ModelConfig& config) { return absl::StrCat(" for ", config.name()); }

std::string ControlKindName(ModelSequenceBatching::Control::Kind kind) {
  return ModelSequenceBatching::Control::Kind_Name(kind);
}

// The element count of `dims` per run between variable-size dims: [2,4,-1,6]
// is {8, 6}. A reshape keeps each run's count (Triton: [2,4,-1,6] may become
// [8,-1,1,6]). InvalidArgument naming `what` when a run's count overflows.
absl::StatusOr<std::vector<int64_t>> ElementCountsBetweenWildcards(
    const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  std::vector<int64_t> counts;
  int64_t count = 1;
  for (const int64_t dim : dims) {
    if (dim == kWildcardDim) {
      counts.push_back(count);
      count = 1;
    } else if (__builtin_mul_overflow(count, dim, &count)) {
      return Invalid(absl::StrCat(what, " [", absl::StrJoin(dims, ","),
                                  "] has more elements than an int64 counts"));
    }
  }
  counts.push_back(count);
  return counts;
}

// Triton's ValidateIOShape. `kind` is "input" or "output".
template <typename ModelIO>
absl::Status ValidateIOShape(const ModelIO& io, const ModelConfig& config, const char* kind) {
  const std::string prefix = absl::StrCat("model ", kind, " ");
  if (io.name().empty()) {
    return Invalid(absl::StrCat(prefix, "must specify 'name'", For(config)));
  }
  const std::string named = absl::StrCat(prefix, "'", io.name(), "' ");
  if (io.data_type() == inference::TYPE_INVALID) {
    return Invalid(absl::StrCat(named, "must specify 'data_type'", For(config)));
  }
  if (io.dims_size() == 0) {
    return Invalid(absl::StrCat(named, "must specify 'dims'", For(config),
                                " (a tensor whose rows are scalars is dims: [ 1 ] with "
                                "reshape: { shape: [ ] })"));
  }
  // Without batching an empty reshape would make the whole tensor a scalar,
  // which Triton does not serve.
  if (io.has_reshape() && io.reshape().shape_size() == 0 && config.max_batch_size() == 0) {
    return Invalid(absl::StrCat(named,
                                "cannot have empty reshape for non-batching model as scalar "
                                "tensors are not supported",
                                For(config)));
  }
  for (const int64_t dim : io.dims()) {
    if (dim < 1 && dim != kWildcardDim) {
      return Invalid(absl::StrCat(named,
                                  "dimension must be integer >= 1, or -1 to indicate a "
                                  "variable-size dimension",
                                  For(config), " (dims [", absl::StrJoin(io.dims(), ","), "])"));
    }
  }
  if (!io.has_reshape()) return absl::OkStatus();
  for (const int64_t dim : io.reshape().shape()) {
    if (dim < 1 && dim != kWildcardDim) {
      return Invalid(absl::StrCat(named,
                                  "reshape dimensions must be integer >= 1, or -1 to indicate a "
                                  "variable-size dimension",
                                  For(config), " (reshape shape [",
                                  absl::StrJoin(io.reshape().shape(), ","), "])"));
    }
  }
  ASSIGN_OR_RETURN(const std::vector<int64_t> dims_counts,
                   ElementCountsBetweenWildcards(io.dims(), named + "dims"));
  ASSIGN_OR_RETURN(const std::vector<int64_t> reshape_counts,
                   ElementCountsBetweenWildcards(io.reshape().shape(), named + "reshape"));
  const std::string both = absl::StrCat(" (dims [", absl::StrJoin(io.dims(), ","),
                                        "], reshape shape [",
                                        absl::StrJoin(io.reshape().shape(), ","), "])");
  // An empty reshape is a scalar row: it takes dims of one element.
  const bool scalar_row = io.reshape().shape_size() == 0 && dims_counts == std::vector<int64_t>{1};
  if (scalar_row) return absl::OkStatus();
  if (dims_counts.size() != reshape_counts.size()) {
    // A different count of -1s; with none on one side Triton calls it a
    // different size.
    const bool both_variable = dims_counts.size() > 1 && reshape_counts.size() > 1;
    return Invalid(absl::StrCat(named,
                                both_variable
                                    ? "has different number of variable-size dimensions for "
                                      "dims and reshape"
                                    : "has different size for dims and reshape",
                                For(config), both));
  }
  if (dims_counts != reshape_counts) {
    return Invalid(
        absl::StrCat(named, "has different size for dims and reshape", For(config), both));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelInput(const ModelInput& input, const ModelConfig& config) {
  RETURN_IF_ERROR(ValidateIOShape(input, config, "input"));
  if ((input.format() == ModelInput::FORMAT_NHWC || input.format() == ModelInput::FORMAT_NCHW) &&
      input.dims_size() != 3) {
    return Invalid(absl::StrCat("model input NHWC/NCHW require 3 dims", For(config),
                                " (input '", input.name(), "' has ", input.dims_size(), ")"));
  }
  if (input.is_shape_tensor()) {
    return Invalid(absl::StrCat("shape tensors are only supported for TensorRT platform",
                                For(config), " (input '", input.name(), "' is_shape_tensor)"));
  }
  if (input.is_non_linear_format_io()) {
    return Invalid(absl::StrCat("Non-linear IO format is only supported for the TensorRT platform",
                                For(config), " (input '", input.name(),
                                "' is_non_linear_format_io)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelOutput(const ModelOutput& output, const ModelConfig& config) {
  RETURN_IF_ERROR(ValidateIOShape(output, config, "output"));
  if (output.is_shape_tensor()) {
    return Invalid(absl::StrCat("shape tensors are only supported for TensorRT platform",
                                For(config), " (output '", output.name(), "' is_shape_tensor)"));
  }
  if (output.is_non_linear_format_io()) {
    return Invalid(absl::StrCat("Non-linear IO format is only supported for the TensorRT platform",
                                For(config), " (output '", output.name(),
                                "' is_non_linear_format_io)"));
  }
  return absl::OkStatus();
}

// Triton's ValidateBatchIO.
absl::Status ValidateBatchIO(const ModelConfig& config) {
  std::set<std::string> inputs;
  std::set<std::string> outputs;
  for (const ModelInput& input : config.input()) inputs.insert(input.name());
  for (const ModelOutput& output : config.output()) outputs.insert(output.name());
  const auto check_sources = [&](const auto& sources) -> absl::Status {
    for (const std::string& source : sources) {
      if (!inputs.contains(source)) {
        return Invalid(absl::StrCat("unknown source input name '", source, "'", For(config)));
      }
    }
    return absl::OkStatus();
  };
  for (const inference::BatchInput& batch_input : config.batch_input()) {
    const std::string kind = inference::BatchInput::Kind_Name(batch_input.kind());
    if (kind.empty()) {
      return Invalid(absl::StrCat("unknown batch input kind '", batch_input.kind(), "'",
                                  For(config)));
    }
    if (batch_input.source_input_size() != 1) {
      return Invalid(absl::StrCat("batch input kind '", kind, "' expects 1 source input, got ",
                                  batch_input.source_input_size(), For(config)));
    }
    if (batch_input.data_type() != inference::TYPE_INT32 &&
        batch_input.data_type() != inference::TYPE_FP32) {
      return Invalid(
          absl::StrCat("batch input data type must be TYPE_INT32 or TYPE_FP32", For(config)));
    }
    RETURN_IF_ERROR(check_sources(batch_input.source_input()));
  }
  for (const inference::BatchOutput& batch_output : config.batch_output()) {
    const std::string kind = inference::BatchOutput::Kind_Name(batch_output.kind());
    if (kind.empty()) {
      return Invalid(absl::StrCat("unknown batch output kind '", batch_output.kind(), "'",
                                  For(config)));
    }
    if (batch_output.source_input_size() != 1) {
      return Invalid(absl::StrCat("batch output kind '", kind, "' expects 1 source input, got ",
                                  batch_output.source_input_size(), For(config)));
    }
    RETURN_IF_ERROR(check_sources(batch_output.source_input()));
    std::set<std::string> targets;
    for (const std::string& target : batch_output.target_name()) {
      if (!outputs.contains(target)) {
        return Invalid(absl::StrCat("unknown target output name '", target, "'", For(config)));
      }
      if (!targets.insert(target).second) {
        return Invalid(absl::StrCat("target output name '", target,
                                    "' can only be specified once", For(config)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateQueuePolicyWithOrdering(const ModelQueuePolicy& policy,
                                             const ModelConfig& config,
                                             const std::string& which) {
  if (policy.default_timeout_microseconds() != 0 &&
      policy.timeout_action() == ModelQueuePolicy::DELAY) {
    return Invalid(absl::StrCat(
        "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true",
        For(config), " (dynamic_batching.", which, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidateDynamicBatching(const ModelConfig& config) {
  const inference::ModelDynamicBatching& batching = config.dynamic_batching();
  for (const int32_t size : batching.preferred_batch_size()) {
    if (size <= 0) {
      return Invalid(absl::StrCat("dynamic batching preferred size must be positive", For(config),
                                  " (dynamic_batching.preferred_batch_size ", size, ")"));
    }
    if (size > config.max_batch_size()) {
      return Invalid(absl::StrCat("dynamic batching preferred size must be <= max batch size",
                                  For(config), " (dynamic_batching.preferred_batch_size ", size,
                                  ", max_batch_size ", config.max_batch_size(), ")"));
    }
  }
  const uint64_t levels = batching.priority_levels();
  if (levels != 0) {
    const std::string range = absl::StrCat("[1, ", levels, "]");
    const uint64_t default_level = batching.default_priority_level();
    if (default_level == 0 || default_level > levels) {
      return Invalid(absl::StrCat("default priority level must be in range ", range, For(config),
                                  " (dynamic_batching.default_priority_level ", default_level,
                                  ")"));
    }
    for (const auto& [level, policy] : batching.priority_queue_policy()) {
      if (level == 0 || level > levels) {
        return Invalid(absl::StrCat("priority queue policy must have priority level in range ",
                                    range, For(config),
                                    " (dynamic_batching.priority_queue_policy key ", level, ")"));
      }
    }
  }
  if (batching.preserve_ordering()) {
    // Responses leave in arrival order; priorities and delayed requests
    // would reorder them.
    if (levels > 1) {
      return Invalid(absl::StrCat(
          "Only one priority level is allowed when 'preserve_ordering' is true", For(config),
          " (dynamic_batching.priority_levels ", levels, ")"));
    }
    RETURN_IF_ERROR(ValidateQueuePolicyWithOrdering(batching.default_queue_policy(), config,
                                                    "default_queue_policy"));
    for (const auto& [level, policy] : batching.priority_queue_policy()) {
      RETURN_IF_ERROR(ValidateQueuePolicyWithOrdering(
          policy, config, absl::StrCat("priority_queue_policy ", level)));
    }
  }
  return absl::OkStatus();
}

// Triton's checks of one control kind over every control input: tensors
// named and each used once, the kind on at most one tensor; `boolean` kinds
// (START, END, READY) carry exactly one of the false/true value lists with
// two entries, typed kinds (CORRID) none. The kind's data type, when
// present, goes to `data_type`.
absl::Status ValidateSequenceControl(const ModelSequenceBatching& batcher,
                                     const ModelConfig& config,
                                     ModelSequenceBatching::Control::Kind kind, bool boolean,
                                     std::optional<inference::DataType>* data_type) {
  const std::string kind_name = ControlKindName(kind);
  std::set<std::string> tensors;
  bool seen = false;
  for (const ModelSequenceBatching::ControlInput& input : batcher.control_input()) {
    if (input.name().empty()) {
      return Invalid(
          absl::StrCat("sequence batching control tensor must have a name", For(config)));
    }
    if (!tensors.insert(input.name()).second) {
      return Invalid(absl::StrCat("sequence batching control tensor '", input.name(),
                                  "' is specified for multiple control kinds", For(config)));
    }
    for (const ModelSequenceBatching::Control& control : input.control()) {
      if (control.kind() != kind) continue;
      if (seen) {
        return Invalid(absl::StrCat("sequence batching specifies multiple ", kind_name,
                                    " tensors", For(config)));
      }
      seen = true;
      const int lists = (control.int32_false_true_size() > 0) +
                        (control.fp32_false_true_size() > 0) +
                        (control.bool_false_true_size() > 0);
      if (!boolean) {
        if (lists > 0) {
          return Invalid(absl::StrCat(
              "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' "
              "or 'bool_false_true' for ",
              kind_name, For(config)));
        }
        if (data_type != nullptr) *data_type = control.data_type();
        continue;
      }
      if (lists == 0) {
        return Invalid(absl::StrCat(
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
            "'bool_false_true' for ",
            kind_name, For(config)));
      }
      if (lists > 1) {
        return Invalid(absl::StrCat(
            "sequence batching specifies more than one from 'int32_false_true', "
            "'fp32_false_true' and 'bool_false_true' for ",
            kind_name, For(config)));
      }
      const auto [list, size] =
          control.int32_false_true_size() > 0
              ? std::pair<const char*, int>{"int32_false_true", control.int32_false_true_size()}
          : control.fp32_false_true_size() > 0
              ? std::pair<const char*, int>{"fp32_false_true", control.fp32_false_true_size()}
              : std::pair<const char*, int>{"bool_false_true", control.bool_false_true_size()};
      if (size != 2) {
        return Invalid(absl::StrCat("sequence batching control '", list,
                                    "' must have exactly 2 entries for ", kind_name,
                                    For(config)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSequenceBatching(const ModelConfig& config) {
  if (config.response_cache().enable()) {
    return Invalid(absl::StrCat("Response Cache does not currently support model ", config.name(),
                                " with sequence batching scheduler. Please disable the response "
                                "cache."));
  }
  const ModelSequenceBatching& batcher = config.sequence_batching();
  for (const auto kind : {ModelSequenceBatching::Control::CONTROL_SEQUENCE_START,
                          ModelSequenceBatching::Control::CONTROL_SEQUENCE_END,
                          ModelSequenceBatching::Control::CONTROL_SEQUENCE_READY}) {
    RETURN_IF_ERROR(ValidateSequenceControl(batcher, config, kind, /*boolean=*/true, nullptr));
  }
  std::optional<inference::DataType> corrid_type;
  RETURN_IF_ERROR(ValidateSequenceControl(batcher, config,
                                          ModelSequenceBatching::Control::CONTROL_SEQUENCE_CORRID,
                                          /*boolean=*/false, &corrid_type));
  if (corrid_type.has_value()) {
    static const auto* const allowed = new std::set<inference::DataType>{
        inference::TYPE_UINT64, inference::TYPE_INT64, inference::TYPE_UINT32,
        inference::TYPE_INT32, inference::TYPE_STRING};
    if (!allowed->contains(*corrid_type)) {
      return Invalid(absl::StrCat(
          "unexpected data type for control ",
          ControlKindName(ModelSequenceBatching::Control::CONTROL_SEQUENCE_CORRID), For(config),
          ". Allowed data types are TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and "
          "TYPE_STRING"));
    }
  }
  if (batcher.has_oldest()) {
    for (const int32_t size : batcher.oldest().preferred_batch_size()) {
      if (size <= 0) {
        return Invalid(absl::StrCat("sequence batching preferred batch size must be positive",
                                    For(config), " (sequence_batching.oldest.preferred_batch_size ",
                                    size, ")"));
      }
      if (size > config.max_batch_size()) {
        return Invalid(absl::StrCat(
            "sequence batching preferred batch size must be <= max batch size", For(config),
            " (sequence_batching.oldest.preferred_batch_size ", size, ", max_batch_size ",
            config.max_batch_size(), ")"));
      }
    }
  }
  if (batcher.has_direct()) {
    const float utilization = batcher.direct().minimum_slot_utilization();
    if (utilization < 0.0f || utilization > 1.0f) {
      return Invalid(absl::StrCat(
          "sequence batching minimum slot utilization must be in range (0.0, 1.0]", For(config),
          " (sequence_batching.direct.minimum_slot_utilization ", utilization, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateModelMetrics(const inference::ModelMetrics& metrics) {
  for (const auto& control : metrics.metric_control()) {
    if (!control.has_metric_identifier()) {
      return Invalid("metric control must specify 'metric_identifier'");
    }
    if (control.metric_identifier().family().empty()) {
      return Invalid("metric identifier must specify non-empty 'family'");
    }
    if (!control.has_histogram_options()) {
      return Invalid("metric control must specify 'histogram_options'");
    }
    if (control.histogram_options().buckets_size() == 0) {
      return Invalid("histogram options must specify non-empty 'buckets'");
    }
  }
  return absl::OkStatus();
}

// Triton's ValidateInstanceGroup, less what the executor decides (see Note
// [Triton's config rules]).
absl::Status ValidateInstanceGroups(const ModelConfig& config,
                                    const ConfigValidationOptions& options) {
  for (int index = 0; index < config.instance_group_size(); ++index) {
    const ModelInstanceGroup& group = config.instance_group(index);
    const std::string name =
        group.name().empty() ? absl::StrCat(config.name(), "_", index) : group.name();
    const std::string which =
        absl::StrCat("instance group ", name, " of model ", config.name());
    const std::string gpus = absl::StrCat(" (gpus [", absl::StrJoin(group.gpus(), ","), "])");
    switch (group.kind()) {
      case ModelInstanceGroup::KIND_CPU:
      case ModelInstanceGroup::KIND_MODEL:
        if (!group.gpus().empty()) {
          return Invalid(absl::StrCat(which, " has kind ",
                                      ModelInstanceGroup::Kind_Name(group.kind()),
                                      " but specifies one or more GPUs", gpus));
        }
        break;
      default:  // KIND_GPU, or KIND_AUTO, which is KIND_GPU when it lists GPUs
        for (const int32_t gpu : group.gpus()) {
          if (gpu < 0 || (options.visible_gpus.has_value() && gpu >= *options.visible_gpus)) {
            return Invalid(absl::StrCat(
                which, " specifies invalid or unsupported gpu id ", gpu,
                ". GPUs with at least the minimum required CUDA compute compatibility are: ",
                !options.visible_gpus.has_value() ? "(not looked at on the host executor)"
                : *options.visible_gpus == 0      ? "(none)"
                                                  : absl::StrCat("0 to ", *options.visible_gpus - 1)));
          }
        }
        break;
    }
    if (!group.profile().empty()) {
      return Invalid(absl::StrCat(which, " and platform ", config.platform(),
                                  " specifies profile field which is only supported for "
                                  "TensorRT models"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateModelConfig(const ModelConfig& config,
                                 const ConfigValidationOptions& options) {
  if (config.max_batch_size() < 0) {
    return Invalid(absl::StrCat("'max_batch_size' must be non-negative value", For(config),
                                " (max_batch_size ", config.max_batch_size(), ")"));
  }
  if (config.has_dynamic_batching()) RETURN_IF_ERROR(ValidateDynamicBatching(config));
  if (config.has_sequence_batching()) RETURN_IF_ERROR(ValidateSequenceBatching(config));
  if (config.has_ensemble_scheduling() && config.platform() != "ensemble") {
    return Invalid(absl::StrCat("ensemble scheduling cannot be set for model '", config.name(),
                                "' whose platform is not ensemble"));
  }
  if (config.model_transaction_policy().decoupled() && config.response_cache().enable()) {
    return Invalid(absl::StrCat("Response Cache does not currently support model ", config.name(),
                                " with 'decoupled' transaction policy. Please disable the "
                                "response cache."));
  }
  RETURN_IF_ERROR(ValidateModelMetrics(config.model_metrics()));
  for (const ModelInput& input : config.input()) RETURN_IF_ERROR(ValidateModelInput(input, config));
  for (const ModelOutput& output : config.output()) {
    RETURN_IF_ERROR(ValidateModelOutput(output, config));
  }
  RETURN_IF_ERROR(ValidateBatchIO(config));
  return ValidateInstanceGroups(config, options);
}

absl::Status RefuseUnservedFeatures(const ModelConfig& config) {
  const std::string model = absl::StrCat("model '", config.name(), "'");
  if (config.model_transaction_policy().decoupled()) {
    return absl::UnimplementedError(absl::StrCat(
        "decoupled models are not supported: ", model,
        " sets model_transaction_policy { decoupled: true }, but this runtime serves ONNX models "
        "that answer each request once; remove the policy or set decoupled: false"));
  }
  if (config.has_sequence_batching()) {
    // The registry loads such a model with LoadSequenceModel, which serves
    // its controls and state (Note [Sequence batching] in
    // server/sequence_batcher.h) and executes it from a config without them.
    return absl::UnimplementedError(absl::StrCat(
        model, " sets sequence_batching, which only the sequence batcher serves "
        "(LoadSequenceModel): loaded on its own, its START/END/READY/CORRID controls and "
        "implicit state would get no values"));
  }
  if (!config.batch_input().empty() || !config.batch_output().empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "batch inputs and batch outputs are not supported: ", model, " sets ",
        config.batch_input().empty() ? "batch_output" : "batch_input",
        ", which GraphServe does not compute; the model's inputs must all come from requests"));
  }
  return absl::OkStatus();
}

}  // namespace graphserve
