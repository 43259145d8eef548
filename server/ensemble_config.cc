#include "server/ensemble_config.h"

#include <deque>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace graphserve {

namespace {

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// --- The data flow of the ensemble's own config ---

// One ensemble tensor in the data flow: written by at most one step
// (`written`), read by the steps whose outputs list it in `next`.
struct FlowTensor {
  bool written = false;
  bool ready = false;
  std::vector<FlowTensor*> prev;  // what the step writing it reads
  std::vector<FlowTensor*> next;  // what the steps reading it write
};

// Links every step's inputs to its outputs, refusing a step without a model
// name, input_map or output_map, a model input mapped twice, and a tensor
// written by two steps.
absl::Status BuildFlow(const inference::ModelConfig& config,
                       std::map<std::string, FlowTensor>* tensors) {
  const std::string& name = config.name();
  int index = 0;
  for (const inference::ModelEnsembling::Step& step : config.ensemble_scheduling().step()) {
    const std::string where = absl::StrCat(" in step ", index, " of ensemble '", name, "'");
    if (step.model_name().empty()) return Invalid(absl::StrCat("must specify 'model_name'", where));
    if (step.input_map().empty()) return Invalid(absl::StrCat("must specify 'input_map'", where));
    if (step.output_map().empty()) return Invalid(absl::StrCat("must specify 'output_map'", where));
    std::vector<FlowTensor*> written;
    for (const auto& [model_output, tensor_name] : step.output_map()) {
      FlowTensor& tensor = (*tensors)[tensor_name];
      if (tensor.written) {
        return Invalid(absl::StrCat("ensemble tensor '", tensor_name,
                                    "' can appear in an output map only once for ensemble '",
                                    name, "' step ", index));
      }
      tensor.written = true;
      written.push_back(&tensor);
    }
    // A protobuf map cannot hold a key twice; the text format's repeated
    // key keeps the last, as in Triton.
    for (const auto& [model_input, tensor_name] : step.input_map()) {
      FlowTensor& tensor = (*tensors)[tensor_name];
      for (FlowTensor* output : written) {
        output->prev.push_back(&tensor);
        tensor.next.push_back(output);
      }
    }
    ++index;
  }
  return absl::OkStatus();
}

// Marks ready every tensor reachable from the ensemble inputs through steps
// whose inputs are all ready (Triton's walk; a cycle is never ready).
void MarkReady(std::deque<FlowTensor*> ready) {
  while (!ready.empty()) {
    FlowTensor* tensor = ready.front();
    ready.pop_front();
    for (FlowTensor* next : tensor->next) {
      if (next->ready) continue;
      bool all = true;
      for (const FlowTensor* prev : next->prev) all = all && prev->ready;
      if (all) {
        next->ready = true;
        ready.push_back(next);
      }
    }
  }
}

// The first tensor upstream of `output` that is not ready, following the
// not-ready inputs (Triton's hint for an unwritten output).
std::string UnconnectedSource(const std::map<std::string, FlowTensor>& tensors,
                              const std::string& output) {
  std::map<const FlowTensor*, std::string> names;
  for (const auto& [name, tensor] : tensors) names[&tensor] = name;
  const FlowTensor* last = &tensors.at(output);
  std::set<const FlowTensor*> seen;
  const std::vector<FlowTensor*>* prev = &last->prev;
  while (prev != nullptr && !prev->empty()) {
    const std::vector<FlowTensor*>* current = prev;
    prev = nullptr;
    for (const FlowTensor* tensor : *current) {
      if (!tensor->ready && seen.insert(tensor).second) {
        last = tensor;
        prev = &tensor->prev;
        break;
      }
    }
  }
  return names[last];
}

// --- Tensors against the composing models ---

// An ensemble tensor's type and dims as one model (the ensemble or a step's)
// declares them; full_dims has -1 first for a batching model.
struct TypedTensor {
  std::string model;
  inference::DataType type = inference::TYPE_INVALID;
  std::vector<int64_t> dims;
  std::vector<int64_t> full_dims;
};

TypedTensor Typed(const std::string& model, bool batching, inference::DataType type,
                  const google::protobuf::RepeatedField<int64_t>& dims) {
  TypedTensor tensor{model, type, {dims.begin(), dims.end()}, {}};
  if (batching) tensor.full_dims.push_back(-1);
  tensor.full_dims.insert(tensor.full_dims.end(), dims.begin(), dims.end());
  return tensor;
}

// Equal rank, each dim equal or either -1 (checked per request).
bool DimsCompatible(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && a[i] != -1 && b[i] != -1) return false;
  }
  return true;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// A tensor used by a batching and a non-batching model agrees when the full
// dims do ([-1, d] of one against [d] of the other).
absl::Status CheckConsistent(const TypedTensor& known, const TypedTensor& seen,
                             const std::string& prefix) {
  if (known.type != seen.type) {
    return Invalid(absl::StrCat(prefix, "inconsistent data type: ",
                                inference::DataType_Name(known.type), " is inferred from model ",
                                known.model, " while ", inference::DataType_Name(seen.type),
                                " is inferred from model ", seen.model));
  }
  if (!DimsCompatible(known.dims, seen.dims) && !DimsCompatible(known.full_dims, seen.full_dims)) {
    return Invalid(absl::StrCat(prefix, "inconsistent shape: ", DimsText(known.full_dims),
                                " is inferred from model ", known.model, " while ",
                                DimsText(seen.full_dims), " is inferred from model ",
                                seen.model));
  }
  return absl::OkStatus();
}

// Records `seen` as what `tensor_name` is, or checks it against what it is.
absl::Status Observe(const std::string& ensemble, const std::string& tensor_name,
                     TypedTensor seen, std::map<std::string, TypedTensor>* tensors) {
  const auto [it, inserted] = tensors->emplace(tensor_name, seen);
  if (inserted) return absl::OkStatus();
  return CheckConsistent(it->second, seen,
                         absl::StrCat("in ensemble ", ensemble, ", ensemble tensor ", tensor_name,
                                      ": "));
}

// One step's maps against its model's config (Triton's ValidateTensorMapping),
// filling the step's plan in the model's tensor order.
absl::Status CheckStepMapping(const std::string& ensemble,
                              const inference::ModelEnsembling::Step& step,
                              const inference::ModelConfig& model,
                              std::map<std::string, TypedTensor>* tensors,
                              EnsembleStepPlan* plan) {
  const std::string& step_model = step.model_name();
  const bool batching = model.max_batch_size() > 0;
  std::set<std::string> inputs, outputs;
  for (const inference::ModelInput& input : model.input()) inputs.insert(input.name());
  for (const inference::ModelOutput& output : model.output()) outputs.insert(output.name());
  for (const auto& [model_input, tensor_name] : step.input_map()) {
    if (!inputs.contains(model_input)) {
      return Invalid(absl::StrCat("in ensemble ", ensemble, ", ensemble tensor ", tensor_name,
                                  " is mapping to non-existing input ", model_input,
                                  " in model ", step_model));
    }
  }
  for (const inference::ModelInput& input : model.input()) {
    const auto mapped = step.input_map().find(input.name());
    if (mapped == step.input_map().end()) {
      if (input.optional()) continue;
      return Invalid(absl::StrCat("in ensemble ", ensemble, ", input ", input.name(),
                                  " in model ", step_model,
                                  " is not mapped to any ensemble tensors"));
    }
    RETURN_IF_ERROR(Observe(ensemble, mapped->second,
                            Typed(step_model, batching, input.data_type(), input.dims()),
                            tensors));
    plan->inputs.emplace_back(input.name(), mapped->second);
  }
  for (const auto& [model_output, tensor_name] : step.output_map()) {
    if (!outputs.contains(model_output)) {
      return Invalid(absl::StrCat("in ensemble ", ensemble, ", ensemble tensor ", tensor_name,
                                  " is mapped from non-existing output ", model_output,
                                  " in model ", step_model));
    }
  }
  std::set<std::string> written;
  for (const inference::ModelOutput& output : model.output()) {
    const auto mapped = step.output_map().find(output.name());
    if (mapped == step.output_map().end()) continue;
    if (!written.insert(mapped->second).second) {
      return Invalid(absl::StrCat("in ensemble ", ensemble, ", multiple outputs in model ",
                                  step_model, " are mapped to the same ensemble tensor ",
                                  mapped->second));
    }
    RETURN_IF_ERROR(Observe(ensemble, mapped->second,
                            Typed(step_model, batching, output.data_type(), output.dims()),
                            tensors));
    plan->outputs.emplace_back(output.name(), mapped->second);
  }
  return absl::OkStatus();
}

// Each step after the steps writing what it reads; a topological order of
// them (ValidateEnsembleScheduling has refused cycles).
absl::Status OrderSteps(const std::string& ensemble, EnsemblePlan* plan) {
  std::map<std::string, size_t> writer;
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    for (const auto& [model_output, tensor] : plan->steps[i].outputs) writer[tensor] = i;
  }
  std::vector<std::vector<size_t>> dependents(plan->steps.size());
  std::vector<size_t> waiting(plan->steps.size(), 0);
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    std::set<size_t> after;
    for (const auto& [model_input, tensor] : plan->steps[i].inputs) {
      const auto found = writer.find(tensor);
      if (found != writer.end()) after.insert(found->second);
    }
    plan->steps[i].after.assign(after.begin(), after.end());
    waiting[i] = after.size();
    for (size_t before : after) dependents[before].push_back(i);
  }
  std::deque<size_t> ready;
  for (size_t i = 0; i < waiting.size(); ++i) {
    if (waiting[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const size_t step = ready.front();
    ready.pop_front();
    plan->order.push_back(step);
    for (size_t next : dependents[step]) {
      if (--waiting[next] == 0) ready.push_back(next);
    }
  }
  if (plan->order.size() != plan->steps.size()) {
    return Invalid(absl::StrCat("the steps of ensemble '", ensemble,
                                "' depend on each other in a cycle"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsEnsembleConfig(const inference::ModelConfig& config) {
  if (config.platform() == kEnsemblePlatform) return true;
  return config.platform().empty() && config.backend().empty() &&
         config.has_ensemble_scheduling();
}

void NormalizeEnsembleConfig(inference::ModelConfig* config) {
  if (IsEnsembleConfig(*config)) config->set_platform(kEnsemblePlatform);
}

absl::Status ValidateEnsembleScheduling(const inference::ModelConfig& config) {
  const std::string& name = config.name();
  if (!config.backend().empty()) {
    return Invalid(absl::StrCat("Ensemble model '", name, "' must have platform type '",
                                config.platform(), "' and empty backend type"));
  }
  if (!config.has_ensemble_scheduling()) {
    return Invalid(absl::StrCat("ensemble scheduling must be set for ensemble ", name,
                                " whose platform is ", kEnsemblePlatform));
  }
  if (!config.instance_group().empty()) {
    return Invalid(
        absl::StrCat("instance group should not be specified for ensemble '", name, "'"));
  }
  if (config.has_optimization()) {
    return Invalid(absl::StrCat("optimization should not be specified for ensemble '", name, "'"));
  }
  if (!config.model_warmup().empty()) {
    return Invalid(absl::StrCat("model_warmup can not be specified for ensemble '", name, "'"));
  }
  if (config.ensemble_scheduling().step().empty()) {
    return Invalid(absl::StrCat("must specify 'step' for ensemble '", name, "'"));
  }
  std::map<std::string, FlowTensor> tensors;
  RETURN_IF_ERROR(BuildFlow(config, &tensors));

  std::deque<FlowTensor*> ready;
  for (const inference::ModelInput& input : config.input()) {
    const auto found = tensors.find(input.name());
    if (found == tensors.end()) {
      // Triton's text, its stray quote included: scripts match it.
      return Invalid(absl::StrCat("ensemble input '", input.name(), "' for ensemble ", name,
                                  "' is not used"));
    }
    found->second.ready = true;
    ready.push_back(&found->second);
  }
  MarkReady(std::move(ready));

  std::set<std::string> outputs;
  for (const inference::ModelOutput& output : config.output()) {
    const auto found = tensors.find(output.name());
    if (found == tensors.end()) {
      return Invalid(absl::StrCat("ensemble output '", output.name(), "' for ensemble ", name,
                                  "' is not used"));
    }
    if (!found->second.ready) {
      std::string message =
          absl::StrCat("output '", output.name(), "' for ensemble '", name, "' is not written");
      const std::string source = UnconnectedSource(tensors, output.name());
      if (source != output.name()) {
        absl::StrAppend(&message, ": at least one of its depending tensors, '", source,
                        "', is not connected");
      }
      return Invalid(message);
    }
    outputs.insert(output.name());
  }
  for (const auto& [tensor_name, tensor] : tensors) {
    if (outputs.contains(tensor_name)) continue;
    if (!tensor.ready || tensor.next.empty()) {
      return Invalid(absl::StrCat("ensemble tensor '", tensor_name, "' is unused in ensemble '",
                                  name, "'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EnsemblePlan> PlanEnsemble(const inference::ModelConfig& config,
                                          const ComposingConfigLookup& lookup) {
  const std::string& name = config.name();
  const bool batching = config.max_batch_size() > 0;
  std::map<std::string, TypedTensor> tensors;
  for (const inference::ModelInput& input : config.input()) {
    tensors.emplace(input.name(), Typed(name, batching, input.data_type(),
                                        input.has_reshape() ? input.reshape().shape()
                                                            : input.dims()));
  }
  for (const inference::ModelOutput& output : config.output()) {
    tensors.emplace(output.name(), Typed(name, batching, output.data_type(),
                                         output.has_reshape() ? output.reshape().shape()
                                                              : output.dims()));
  }
  EnsemblePlan plan;
  for (const inference::ModelEnsembling::Step& step : config.ensemble_scheduling().step()) {
    ASSIGN_OR_RETURN(const inference::ModelConfig model, lookup(step));
    if (model.max_batch_size() != 0 && model.max_batch_size() < config.max_batch_size()) {
      return Invalid(absl::StrCat("ensemble ", name, " allows maximum batch size ",
                                  config.max_batch_size(), ", but it contains model ",
                                  step.model_name(),
                                  " which only allows maximum batch size to be ",
                                  model.max_batch_size()));
    }
    EnsembleStepPlan step_plan;
    step_plan.model_name = step.model_name();
    step_plan.model_version =
        step.model_version() < 0 ? "" : absl::StrCat(step.model_version());
    RETURN_IF_ERROR(CheckStepMapping(name, step, model, &tensors, &step_plan));
    plan.steps.push_back(std::move(step_plan));
  }
  RETURN_IF_ERROR(OrderSteps(name, &plan));
  return plan;
}

std::vector<std::string> ComposingModelNames(const inference::ModelConfig& config) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const inference::ModelEnsembling::Step& step : config.ensemble_scheduling().step()) {
    if (seen.insert(step.model_name()).second) names.push_back(step.model_name());
  }
  return names;
}

}  // namespace graphserve
