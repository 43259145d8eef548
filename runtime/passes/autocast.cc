#include "runtime/passes/autocast.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/passes/precision.h"

namespace graphserve {

namespace {

// What the calibration batch saw of one float32 value.
struct ValueRange {
  double max_abs = 0;  // over the finite elements, infinities' stand-ins excepted
  bool has_nan = false;
  bool has_inf = false;
  bool constant = false;  // known at plan time: a weight to its readers
  int64_t elements = 0;

  [[nodiscard]] bool finite() const { return !has_nan && !has_inf; }
};

ValueRange RangeOf(const HostTensor& tensor, bool constant) {
  ValueRange range;
  range.constant = constant;
  range.elements = tensor.num_elements();
  const float* data = tensor.data<float>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (std::isnan(data[i])) {
      range.has_nan = true;
    } else if (std::isinf(data[i]) || std::fabs(data[i]) >= kFloat32InfinityStandIn) {
      range.has_inf = true;  // Note [Automatic precision]: stand-ins count as infinities
    } else {
      range.max_abs = std::max(range.max_abs, static_cast<double>(std::fabs(data[i])));
    }
  }
  return range;
}

// The model's float32 values as the batch computed them, by name.
struct CalibrationValues {
  std::map<std::string, DType> dtypes;  // every value the model defines
  std::map<std::string, ValueRange> ranges;

  [[nodiscard]] bool IsFloat32(const std::string& name) const {
    auto it = dtypes.find(name);
    return it != dtypes.end() && it->second == DType::kFloat32;
  }
  [[nodiscard]] const ValueRange* Range(const std::string& name) const {
    auto it = ranges.find(name);
    return it == ranges.end() ? nullptr : &it->second;
  }
};

BindOptions CalibrationBindOptions(const Model& model, const CalibrationOptions& options) {
  BindOptions bind;
  bind.batch_size = 1;
  bind.dim_values = options.dim_values;
  for (const std::string& dim : ShapeDimNames(model)) {
    bind.dim_values.emplace(dim, kCalibrationExtent);  // keeps a given extent
  }
  return bind;
}

// "batch 1, sequence 16": the batch, for errors.
std::string BatchText(const BindOptions& bind) {
  std::string text = absl::StrCat("batch ", bind.batch_size);
  for (const auto& [dim, extent] : bind.dim_values) absl::StrAppend(&text, ", ", dim, " ", extent);
  return text;
}

// The model with every float32 node output that something uses (a node
// reads it, or it is a graph output) a graph output, each once (Note
// [Automatic precision]): what makes every intermediate observable. An
// output nothing uses is one binding drops (Note [Bound node outputs] in
// runtime/bind.h), such as LayerNormalization's Mean: served graphs never
// compute it, so the batch does not ask the executors for it either.
Model ObservedModel(const Model& model, const std::map<std::string, DType>& dtypes) {
  std::set<std::string> used;
  for (const Node& node : model.nodes) used.insert(node.inputs.begin(), node.inputs.end());
  for (const ValueInfo& output : model.outputs) used.insert(output.name);
  Model observed = model;
  observed.outputs.clear();
  std::set<std::string> listed;
  for (const Node& node : model.nodes) {
    for (const std::string& output : node.outputs) {
      auto it = dtypes.find(output);
      if (output.empty() || used.count(output) == 0 || it == dtypes.end() ||
          it->second != DType::kFloat32) {
        continue;
      }
      if (listed.insert(output).second) observed.outputs.push_back({output, DType::kFloat32, {}});
    }
  }
  return observed;
}

// Runs the batch and measures every float32 value: graph inputs, weights and
// node outputs.
absl::StatusOr<CalibrationValues> RunCalibrationBatch(const Model& model, const BindOptions& bind,
                                                      const CalibrationOptions& options) {
  CalibrationValues values;
  ASSIGN_OR_RETURN(values.dtypes, InferValueDTypes(model, bind));
  for (const auto& [name, tensor] : model.initializers) {
    if (tensor->dtype() == DType::kFloat32) values.ranges[name] = RangeOf(*tensor, true);
  }
  const Model observed = ObservedModel(model, values.dtypes);
  if (observed.outputs.empty()) return values;  // nothing computes in float32

  ASSIGN_OR_RETURN(BoundGraph graph, BindModel(observed, bind));
  std::vector<bool> constant_outputs;
  for (ValueId id : graph.outputs) constant_outputs.push_back(graph.value(id).is_constant());
  const std::vector<HostTensor> inputs =
      options.inputs.empty() ? RandomInputs(graph, options.seed) : options.inputs;
  for (size_t i = 0; i < graph.inputs.size() && i < inputs.size(); ++i) {
    const std::string& name = graph.value(graph.inputs[i]).name;
    if (inputs[i].dtype() == DType::kFloat32) values.ranges[name] = RangeOf(inputs[i], false);
  }
  const ExecutorFactory& make_executor =
      options.make_executor ? options.make_executor : HostExecutorFactory();
  ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor, make_executor(std::move(graph)));
  ASSIGN_OR_RETURN(const std::vector<HostTensor> outputs, executor->Run(inputs));
  if (outputs.size() != observed.outputs.size()) {
    return absl::InternalError(absl::StrCat("the executor returned ", outputs.size(),
                                            " outputs for ", observed.outputs.size(),
                                            " observed values"));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    values.ranges[observed.outputs[k].name] = RangeOf(outputs[k], constant_outputs[k]);
  }
  return values;
}

// "1.3e3": a magnitude as reasons print it.
std::string Magnitude(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1e", value);  // "1.3e+03"
  const std::string printed = text;
  const size_t e = printed.find('e');
  if (e == std::string::npos) return printed;
  return absl::StrCat(printed.substr(0, e), "e", std::stoi(printed.substr(e + 1)));
}

std::string Threshold(double value) { return absl::StrCat(static_cast<int64_t>(value)); }

// The underflow rule (Note [Automatic precision]): not all zeros, all below
// float16's smallest normal.
bool Underflows(double max_abs) { return max_abs > 0 && max_abs < kMinFloat16Normal; }

// "NaN", "inf", "NaN and inf": what non-finite elements a value holds.
std::string NonFinite(bool has_nan, bool has_inf) {
  if (has_nan && has_inf) return "NaN and inf";
  return has_nan ? "NaN" : "inf";
}

// Why `node` stays in float32 (Note [Automatic precision]); nullopt when it
// goes to float16.
std::optional<std::string> Float32Reason(const Node& node, const CalibrationValues& values) {
  if (ChoosesOutputDType(node.op_type)) return std::nullopt;
  std::vector<std::string> reasons;
  bool inputs_finite = true;
  bool reads_float32 = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& input = node.inputs[i];
    const ValueRange* range = values.IsFloat32(input) ? values.Range(input) : nullptr;
    if (range == nullptr || ReadsAnyDType(node, i)) continue;
    reads_float32 = true;
    inputs_finite = inputs_finite && range->finite();
    const double limit = range->constant ? kMaxFloat16Weight : kMaxFloat16Activation;
    const std::string read = absl::StrCat(range->constant ? "weight '" : "input '", input,
                                          "' max |", range->constant ? "w" : "x", "| ",
                                          Magnitude(range->max_abs));
    if (range->max_abs > limit) reasons.push_back(absl::StrCat(read, " > ", Threshold(limit)));
    if (Underflows(range->max_abs)) {
      reasons.push_back(absl::StrCat(read, " < ", Magnitude(kMinFloat16Normal)));
    }
  }
  ValueRange output;  // over every float32 output
  bool writes_float32 = false;
  for (const std::string& name : node.outputs) {
    const ValueRange* range = values.IsFloat32(name) ? values.Range(name) : nullptr;
    if (range == nullptr) continue;
    writes_float32 = true;
    output.max_abs = std::max(output.max_abs, range->max_abs);
    output.has_nan = output.has_nan || range->has_nan;
    output.has_inf = output.has_inf || range->has_inf;
  }
  if (!reads_float32 && !writes_float32) return std::nullopt;  // nothing goes to float16
  if (KeptInFloat32(node.op_type)) return absl::StrCat("op ", node.op_type, " kept in float32");
  if (output.max_abs > kMaxFloat16Activation) {
    reasons.push_back(absl::StrCat("output max |x| ", Magnitude(output.max_abs), " > ",
                                   Threshold(kMaxFloat16Activation)));
  }
  if (Underflows(output.max_abs)) {
    reasons.push_back(absl::StrCat("output max |x| ", Magnitude(output.max_abs), " < ",
                                   Magnitude(kMinFloat16Normal)));
  }
  if (!output.finite() && inputs_finite) {
    reasons.push_back(absl::StrCat("output ", NonFinite(output.has_nan, output.has_inf),
                                   " from finite inputs"));
  }
  if (reasons.empty()) return std::nullopt;
  return absl::StrJoin(reasons, "; ");
}

// Autocast's lower_precision_fp list in ONNX's names (Note [Autocast's
// promotion]): float16 whatever they read.
bool LowersToFloat16(const std::string& op_type) {
  static const std::set<std::string>* const kLowered = new std::set<std::string>{
      "MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "PRelu", "LSTM", "GRU", "RNN",
  };
  return kLowered->count(op_type) > 0;
}

// Constant operands a node reads as its configuration, not as data (Note
// [Autocast's promotion]).
bool ConfiguresNode(const Node& node, size_t input) {
  static const std::set<std::string>* const kConfigured = new std::set<std::string>{
      "BatchNormalization", "InstanceNormalization", "Resize", "Upsample", "Clip", "Pad",
  };
  return input > 0 && kConfigured->count(node.op_type) > 0;
}

// The nodes autocast's promotion keeps in float32 beyond `kept` (the op and
// value rules' nodes, by name), each with its reason, by name (Note
// [Autocast's promotion]). One walk in model order, which is topological.
std::map<std::string, std::string> PromotedNodes(const Model& model,
                                                 const CalibrationValues& values,
                                                 const std::map<std::string, Float32Rule>& kept) {
  std::map<std::string, const Node*> producers;
  for (const Node& node : model.nodes) {
    for (const std::string& output : node.outputs) producers[output] = &node;
  }
  const auto lowered_result = [&](const std::string& name) {
    auto it = producers.find(name);
    return it != producers.end() && LowersToFloat16(it->second->op_type);
  };
  // The results of nodes computing in float32.
  std::set<std::string> float32_results;
  // Whether `node` reads a float32 value at `input`, counting parameters
  // when `parameters` says so.
  const auto reads_float32 = [&](const Node& node, size_t input, bool parameters) {
    const std::string& name = node.inputs[input];
    if (name.empty() || !values.IsFloat32(name) || ReadsAnyDType(node, input)) return false;
    const ValueRange* range = values.Range(name);
    if (range == nullptr || !range->constant) return float32_results.count(name) > 0;
    if (!parameters || range->elements <= 1 || ConfiguresNode(node, input)) return false;
    const bool bias = node.op_type == "Add" && node.inputs.size() == 2 &&
                      lowered_result(node.inputs[1 - input]);
    return !bias;
  };
  std::map<std::string, std::string> promoted;
  for (const Node& node : model.nodes) {
    if (ChoosesOutputDType(node.op_type)) continue;
    auto rule = kept.find(node.name);
    bool float32 = rule != kept.end() && rule->second == Float32Rule::kValues;
    if (!float32 && !LowersToFloat16(node.op_type)) {
      const bool listed = KeptInFloat32(node.op_type);
      for (size_t i = 0; i < node.inputs.size() && !float32; ++i) {
        if (!reads_float32(node, i, /*parameters=*/!listed)) continue;
        float32 = true;
        if (listed) continue;
        const std::string& input = node.inputs[i];
        promoted[node.name] = absl::StrCat("reads float32 ",
                                           float32_results.count(input) > 0 ? "'" : "weight '",
                                           input, "'");
      }
    }
    if (!float32) continue;
    for (const std::string& output : node.outputs) {
      if (!output.empty() && values.IsFloat32(output)) float32_results.insert(output);
    }
  }
  return promoted;
}

}  // namespace

absl::StatusOr<std::vector<Float32Node>> ChooseFloat32Nodes(const Model& model,
                                                            const CalibrationOptions& options) {
  const BindOptions bind = CalibrationBindOptions(model, options);
  absl::StatusOr<CalibrationValues> values = RunCalibrationBatch(model, bind, options);
  if (!values.ok()) {
    return absl::Status(values.status().code(), absl::StrCat("calibration batch (", BatchText(bind),
                                                             "): ", values.status().message()));
  }
  std::map<std::string, Float32Rule> rules;
  std::map<std::string, std::string> reasons;
  for (const Node& node : model.nodes) {
    if (std::optional<std::string> reason = Float32Reason(node, *values)) {
      rules[node.name] = KeptInFloat32(node.op_type) ? Float32Rule::kOp : Float32Rule::kValues;
      reasons[node.name] = *std::move(reason);
    }
  }
  for (auto& [name, reason] : PromotedNodes(model, *values, rules)) {
    if (rules.emplace(name, Float32Rule::kPromoted).second) reasons[name] = std::move(reason);
  }
  std::vector<Float32Node> kept;
  for (const Node& node : model.nodes) {
    auto rule = rules.find(node.name);
    if (rule == rules.end()) continue;
    kept.push_back({node.name, node.op_type, rule->second, reasons[node.name]});
  }
  return kept;
}

std::string Float32NodesSummary(const std::vector<Float32Node>& nodes) {
  constexpr size_t kNamed = 5;  // a log line, not the model: the first few
  std::map<Float32Rule, size_t> counts;
  std::vector<std::string> named;
  for (const Float32Node& node : nodes) {
    ++counts[node.rule];
    if (node.rule == Float32Rule::kValues && named.size() < kNamed) {
      named.push_back(absl::StrCat("'", node.name, "' (", node.reason, ")"));
    }
  }
  const size_t by_values = counts[Float32Rule::kValues];
  return absl::StrCat(
      "precision auto keeps ", nodes.size(), " nodes in float32: ", counts[Float32Rule::kOp],
      " for their op (as fp16), ", counts[Float32Rule::kPromoted], " as autocast promotes and ",
      by_values, " for their values on the calibration batch", named.empty() ? "" : ": ",
      absl::StrJoin(named, ", "),
      by_values > named.size() ? absl::StrCat(" and ", by_values - named.size(), " more") : "");
}

std::set<std::string> NodeNames(const std::vector<Float32Node>& nodes) {
  std::set<std::string> names;
  for (const Float32Node& node : nodes) {
    if (node.rule != Float32Rule::kOp) names.insert(node.name);
  }
  return names;
}

}  // namespace graphserve
