#include "server/triton_config.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "capture/model_config_writer.h"
#include "common/status.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "proto/config_dtype.h"
#include "runtime/bind.h"
#include "server/model_interface.h"

namespace graphserve {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The fields GraphServe acts on, by path; a message's whole subtree when the
// message itself is named. Everything else Triton's schema allows is
// accepted and reported by IgnoredConfigFields.
const std::set<std::string>& HonouredPaths() {
  static const auto* const paths = new std::set<std::string>{
      "name",
      "platform",
      "backend",
      "version_policy",
      "max_batch_size",
      "input.name",
      "input.data_type",
      "input.format",  // a hint for clients, returned as written
      "input.dims",
      "input.reshape",  // the model's shape; clients keep dims (InterfaceFromConfig)
      // Requests may leave it out; filled with the model file's default
      // (Note [Inputs with defaults] in runtime/ir.h).
      "input.optional",
      "output.name",
      "output.data_type",
      "output.dims",
      "output.reshape",
      "output.label_filename",  // classification labels (ReadOutputLabels)
      "instance_group.name",
      "instance_group.count",
      "instance_group.kind",
      "instance_group.gpus",
      "default_model_filename",
      "dynamic_batching",  // the request queue's policy (QueuePolicyFromConfig)
      // Served as written or refused at load (RefuseUnservedFeatures): a
      // decoupled policy, batch inputs and outputs; sequence batching by
      // the sequence batcher (Note [Sequence batching] in
      // server/sequence_batcher.h), its unserved parts refused there.
      "model_transaction_policy",
      "sequence_batching",
      "batch_input",
      "batch_output",
      // An ensemble's steps (Note [Ensembles] in server/ensemble_scheduler.h),
      // refused on other platforms by Triton's rules.
      "ensemble_scheduling",
      "optimization.cuda.graphs",
      "optimization.cuda.graph_spec.batch_size",
      "capture",  // GraphServe's own section
  };
  return *paths;
}

// Whether some honoured path lies below `path`, so its set fields must be
// looked at one by one.
bool HasHonouredBelow(const std::string& path) {
  const std::string prefix = path + ".";
  for (const std::string& honoured : HonouredPaths()) {
    if (absl::StartsWith(honoured, prefix)) return true;
  }
  return false;
}

void CollectIgnored(const Message& message, const std::string& prefix,
                    std::vector<std::string>& ignored) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path =
        prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    if (HonouredPaths().count(path) > 0) continue;
    const bool message_field =
        field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !field->is_map();
    if (message_field && HasHonouredBelow(path)) {
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
          CollectIgnored(reflection->GetRepeatedMessage(message, field, i), path, ignored);
        }
      } else {
        CollectIgnored(reflection->GetMessage(message, field), path, ignored);
      }
      continue;
    }
    if (std::find(ignored.begin(), ignored.end(), path) == ignored.end()) ignored.push_back(path);
  }
}

}  // namespace

std::vector<std::string> IgnoredConfigFields(const inference::ModelConfig& config) {
  std::vector<std::string> ignored;
  CollectIgnored(config, "", ignored);
  return ignored;
}

bool GraphsDisabledByConfig(const inference::ModelConfig& config) {
  const inference::ModelOptimizationPolicy::Cuda& cuda = config.optimization().cuda();
  return config.capture().graphs_disabled() || (cuda.has_graphs() && !cuda.graphs());
}

namespace {

// Note [Strings at the model's edges]: a model that only hands strings back
// binds nothing; its file's dims are the tensors'.
absl::Status CompleteConfigFromPassedStrings(const Model& model, bool complete_inputs,
                                             bool complete_outputs,
                                             inference::ModelConfig* config) {
  const bool batching = config->max_batch_size() > 0;
  const auto row_dims = [batching](const Dims& dims) {
    return batching && !dims.empty() ? Dims(dims.begin() + 1, dims.end()) : dims;
  };
  std::set<std::string> inputs;
  for (const PassedString& passed : model.passed_strings) {
    if (complete_inputs && inputs.insert(passed.input).second) {
      inference::ModelInput* input = config->add_input();
      input->set_name(passed.input);
      input->set_data_type(inference::TYPE_STRING);
      SetConfigRowDims(row_dims(passed.input_dims), input);
    }
    if (complete_outputs) {
      inference::ModelOutput* output = config->add_output();
      output->set_name(passed.output);
      output->set_data_type(inference::TYPE_STRING);
      // A file that gives no shape for the output: it is its input's.
      SetConfigRowDims(row_dims(passed.output_dims.empty() ? passed.input_dims
                                                           : passed.output_dims),
                       output);
    }
  }
  return absl::OkStatus();
}

// config.pbtxt's type of a model tensor: TYPE_STRING for one the file reads
// or writes as text (Note [Strings at the model's edges]).
inference::DataType ConfigTypeOf(const Model& model, const TensorSpec& spec) {
  for (const std::vector<ValueInfo>* values : {&model.inputs, &model.outputs}) {
    for (const ValueInfo& value : *values) {
      if (value.name == spec.name && value.text) return inference::TYPE_STRING;
    }
  }
  return ConfigDataType(spec.dtype);
}

// Note [Models without a batch dim]: Triton reads max_batch_size 0 as unset
// when a config declares nothing; GraphServe's own configs may mean it.
enum class ZeroMaxBatchSize { kUnset, kNoBatch };

absl::Status CompleteConfig(Model* served, inference::ModelConfig* config, ZeroMaxBatchSize zero) {
  const Model& model = *served;
  const bool zero_is_unset = zero == ZeroMaxBatchSize::kUnset;
  const bool complete_inputs = config->input_size() == 0;
  const bool complete_outputs = config->output_size() == 0;
  if (!complete_inputs && !complete_outputs) {
    served->batches = config->max_batch_size() > 0;
    return absl::OkStatus();
  }
  const bool nothing_declared = complete_inputs && complete_outputs;
  if (!model.passed_strings.empty()) {
    // As Triton's ONNX Runtime backend below: batching when dim 0 of every
    // input is dynamic.
    const bool batches = std::all_of(
        model.passed_strings.begin(), model.passed_strings.end(), [](const PassedString& p) {
          return !p.input_dims.empty() && p.input_dims[0] == -1;
        });
    if (nothing_declared && batches && zero_is_unset && config->max_batch_size() == 0) {
      config->set_max_batch_size(kAutoCompleteMaxBatchSize);
    }
    served->batches = config->max_batch_size() > 0;
    return CompleteConfigFromPassedStrings(model, complete_inputs, complete_outputs, config);
  }
  // Triton's ONNX Runtime backend batches a model when dim 0 of every input
  // is dynamic, and completes any other with max_batch_size 0.
  const auto unbatched = std::find_if(model.inputs.begin(), model.inputs.end(),
                                      [](const ValueInfo& input) {
                                        return input.dims.empty() || input.dims[0] != -1;
                                      });
  const bool model_batches = unbatched == model.inputs.end();
  if (!model_batches && config->max_batch_size() > 0) {
    // Triton's words for the same refusal.
    return absl::InvalidArgumentError(absl::StrCat(
        "autofill failed for model '", config->name(),
        "': model does not support batching while non-zero max_batch_size is specified: "
        "its input '", unbatched->name, "' has shape ", DimsToString(unbatched->dims),
        " whose first dimension is not symbolic; set max_batch_size: 0 to serve it without "
        "batching"));
  }
  if (nothing_declared && model_batches && zero_is_unset && config->max_batch_size() == 0) {
    config->set_max_batch_size(kAutoCompleteMaxBatchSize);
  }
  const bool batching = config->max_batch_size() > 0;
  served->batches = batching;  // Note [Models without a batch dim]
  // Bound at one row, the graph gives every tensor's dims, outputs included;
  // a model with shape dims is bound at two extents, and a dim that differs
  // between them is written -1 (Note [Shape buckets] in server/shape_buckets.h);
  // without a batch, so is a dynamic dim 0.
  const size_t shape_dims = ShapeDimNames(model).size();
  ASSIGN_OR_RETURN(const BindOptions bind, BindOptionsAt(model, {1, std::vector<int64_t>(shape_dims, 16)}));
  ASSIGN_OR_RETURN(const BoundGraph graph, BindModel(model, bind));
  ModelInterface interface =
      InterfaceFromGraph(config->name(), config->max_batch_size(), batching, graph);
  if (shape_dims > 0) {
    ASSIGN_OR_RETURN(const BindOptions other,
                     BindOptionsAt(model, {1, std::vector<int64_t>(shape_dims, 32)}));
    ASSIGN_OR_RETURN(const BoundGraph other_graph, BindModel(model, other));
    const ModelInterface at_other =
        InterfaceFromGraph(config->name(), config->max_batch_size(), batching, other_graph);
    for (auto [side, other_side] : {std::pair{&interface.inputs, &at_other.inputs},
                                    std::pair{&interface.outputs, &at_other.outputs}}) {
      for (size_t t = 0; t < side->size(); ++t) {
        Dims& dims = (*side)[t].dims;
        for (size_t d = 0; d < dims.size(); ++d) {
          if (dims[d] != (*other_side)[t].dims[d]) dims[d] = -1;
        }
      }
    }
  }
  if (complete_inputs) {
    for (const TensorSpec& spec : interface.inputs) {
      inference::ModelInput* input = config->add_input();
      input->set_name(spec.name);
      input->set_data_type(ConfigTypeOf(model, spec));
      SetConfigRowDims(spec.dims, input);
    }
  }
  if (complete_outputs) {
    for (const TensorSpec& spec : interface.outputs) {
      inference::ModelOutput* output = config->add_output();
      output->set_name(spec.name);
      output->set_data_type(ConfigTypeOf(model, spec));
      SetConfigRowDims(spec.dims, output);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompleteConfigFromModel(Model* model, inference::ModelConfig* config) {
  return CompleteConfig(model, config, ZeroMaxBatchSize::kUnset);
}

absl::Status DeclareConfigFromModel(Model* model, inference::ModelConfig* config) {
  return CompleteConfig(model, config, ZeroMaxBatchSize::kNoBatch);
}

std::vector<int64_t> RequestedCaptureSizes(const inference::ModelConfig& config) {
  std::vector<int64_t> sizes(config.capture().batch_sizes().begin(),
                             config.capture().batch_sizes().end());
  if (!sizes.empty()) return sizes;
  for (const auto& spec : config.optimization().cuda().graph_spec()) {
    sizes.push_back(spec.batch_size());
  }
  if (!sizes.empty()) return sizes;
  for (int32_t size : config.dynamic_batching().preferred_batch_size()) sizes.push_back(size);
  return sizes;
}

namespace {

LevelPolicy LevelPolicyFromProto(const inference::ModelQueuePolicy& proto) {
  LevelPolicy policy;
  policy.timeout_action = proto.timeout_action() == inference::ModelQueuePolicy::DELAY
                              ? LevelPolicy::TimeoutAction::kDelay
                              : LevelPolicy::TimeoutAction::kReject;
  policy.default_timeout = std::chrono::microseconds(
      std::min<uint64_t>(proto.default_timeout_microseconds(), uint64_t{1} << 62));
  policy.allow_timeout_override = proto.allow_timeout_override();
  policy.max_queue_size = proto.max_queue_size();
  return policy;
}

}  // namespace

absl::StatusOr<QueuePolicy> QueuePolicyFromConfig(const inference::ModelConfig& config) {
  QueuePolicy policy;
  if (!config.has_dynamic_batching()) return policy;
  const inference::ModelDynamicBatching& batching = config.dynamic_batching();
  policy.merge = true;
  policy.max_queue_delay = std::chrono::microseconds(
      std::min<uint64_t>(batching.max_queue_delay_microseconds(), uint64_t{1} << 62));
  for (int32_t size : batching.preferred_batch_size()) {
    if (size < 1 || size > config.max_batch_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic_batching preferred_batch_size ", size,
                       " must be from 1 to max_batch_size ", config.max_batch_size()));
    }
    policy.preferred_batch_sizes.push_back(size);
  }
  // Triton: priority_levels 0 means one level; levels are 1 (served first)
  // to priority_levels.
  const uint64_t levels = std::max<uint64_t>(batching.priority_levels(), 1);
  constexpr uint64_t kMaxLevels = 1024;
  if (levels > kMaxLevels) {
    return absl::InvalidArgumentError(absl::StrCat("dynamic_batching priority_levels ", levels,
                                                   " is above GraphServe's limit of ",
                                                   kMaxLevels));
  }
  const uint64_t default_level =
      batching.default_priority_level() == 0 ? 1 : batching.default_priority_level();
  if (default_level > levels) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic_batching default_priority_level ", default_level,
                     " must be from 1 to priority_levels ", levels));
  }
  policy.levels.assign(levels, LevelPolicyFromProto(batching.default_queue_policy()));
  policy.default_level = static_cast<int>(default_level);
  for (const auto& [level, proto] : batching.priority_queue_policy()) {
    if (level < 1 || level > levels) {
      return absl::InvalidArgumentError(
          absl::StrCat("dynamic_batching priority_queue_policy names level ", level,
                       "; levels are 1 to priority_levels ", levels));
    }
    policy.levels[level - 1] = LevelPolicyFromProto(proto);
  }
  return policy;
}

}  // namespace graphserve
