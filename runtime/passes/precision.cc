#include "runtime/passes/precision.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/dtype.h"
#include "common/status.h"
#include "common/tensor.h"
#include "runtime/bind.h"

namespace graphserve {

const char* ModelPrecisionName(ModelPrecision precision) {
  switch (precision) {
    case ModelPrecision::kFp32:
      return "fp32";
    case ModelPrecision::kTf32:
      return "tf32";
    case ModelPrecision::kFp16:
      return "fp16";
    case ModelPrecision::kBf16:
      return "bf16";
    case ModelPrecision::kAuto:
      return "auto";
  }
  return "unknown";
}

absl::StatusOr<ModelPrecision> ParseModelPrecision(absl::string_view text) {
  constexpr char kChoices[] = "fp32 (the default), tf32, fp16, bf16 or auto";
  if (text.empty()) return ModelPrecision::kFp32;
  for (ModelPrecision precision :
       {ModelPrecision::kFp32, ModelPrecision::kTf32, ModelPrecision::kFp16,
        ModelPrecision::kBf16, ModelPrecision::kAuto}) {
    if (text == ModelPrecisionName(precision)) return precision;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not a precision; choose ", kChoices));
}

bool AllowsTf32(ModelPrecision precision, bool server_allows_tf32) {
  return precision == ModelPrecision::kTf32 || server_allows_tf32;
}

bool KeptInFloat32(const std::string& op_type) {
  // Note [Ops kept in float32]
  static const std::set<std::string>* const kKept = new std::set<std::string>{
      "Exp",       "Log",         "Pow",       "Reciprocal",      "Softplus",
      "LayerNormalization",       "GroupNormalization",
      "Softmax",   "LogSoftmax",  "CumSum",
      "ReduceSum", "ReduceMean",  "ReduceProd", "ReduceSumSquare", "ReduceL1",
      "ReduceL2",  "ReduceLogSum", "ReduceLogSumExp",
  };
  return kKept->count(op_type) > 0;
}

bool ChoosesOutputDType(const std::string& op_type) {
  return op_type == "Constant" || op_type == "ConstantOfShape" || op_type == "Cast";
}

// Their dtype is not tied to the outputs'.
bool ReadsAnyDType(const Node& node, size_t input) {
  if (node.op_type == "Cast" || node.op_type == "Shape" || node.op_type == "Size") return true;
  return node.op_type == "CastLike" && input == 0;
}

// Implementation details follow.

namespace {

// Where a float32 value of the model comes from: what decides its stored
// dtype (Note [Model precision]).
enum class Producer {
  kGraphInput,   // float32: the declared interface
  kInitializer,  // chosen by its readers
  kChosenNode,   // Constant, ConstantOfShape, Cast to float32: chosen by its readers
  kKeptNode,     // float32
  kNode,         // the target
};

struct FloatValue {
  Producer producer = Producer::kNode;
  bool graph_output = false;
  std::set<DType> wanted;  // by its readers
  DType stored = DType::kFloat32;
  // The value's name in each dtype it exists in (stored and wanted).
  std::map<DType, std::string> names;
};

// Operands that stay float32 whatever the data's type: Resize's roi and
// scales and Upsample's scales place the samples, so a float16 copy would
// move them and even change an output length (floor(3 * float16(1/3)) is 0).
bool ReadsFloat32Operand(const Node& node, size_t input) {
  return (node.op_type == "Resize" || node.op_type == "Upsample") && input > 0;
}

// A Constant node's float32 value, from any of ONNX's spellings of it.
absl::StatusOr<HostTensor> Float32ConstantValue(const Node& node) {
  for (const auto& [name, attr] : node.attributes) {
    if (const HostTensor* tensor = std::get_if<HostTensor>(&attr)) {
      if (tensor->dtype() == DType::kFloat32) return *tensor;
    } else if (const float* value = std::get_if<float>(&attr)) {
      HostTensor tensor(DType::kFloat32, {});
      *tensor.data<float>() = *value;
      return tensor;
    } else if (const auto* values = std::get_if<std::vector<float>>(&attr)) {
      HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(values->size())});
      std::copy(values->begin(), values->end(), tensor.data<float>());
      return tensor;
    }
  }
  return absl::InternalError(
      absl::StrCat("precision pass: Constant node '", node.name, "' holds no float32 value"));
}

// `node` (a ChoosesOutputDType node making float32) made to produce `dtype`.
absl::Status SetOutputDType(Node& node, DType dtype) {
  if (node.op_type == "Cast") {
    node.attributes["to"] = static_cast<int64_t>(dtype);
    return absl::OkStatus();
  }
  if (node.op_type == "Constant") {
    ASSIGN_OR_RETURN(const HostTensor value, Float32ConstantValue(node));
    node.attributes.clear();
    node.attributes["value"] = ConvertFloats(value, dtype);
    return absl::OkStatus();
  }
  // ConstantOfShape: its `value`, one element, float32 zero when absent.
  HostTensor value(DType::kFloat32, {1});
  if (auto it = node.attributes.find("value"); it != node.attributes.end()) {
    if (const HostTensor* given = std::get_if<HostTensor>(&it->second)) value = *given;
  }
  node.attributes["value"] = ConvertFloats(value, dtype);
  return absl::OkStatus();
}

class PrecisionRewrite {
 public:
  PrecisionRewrite(Model& model, DType target, const std::set<std::string>& float32_nodes,
                   const std::map<std::string, DType>& dtypes)
      : model_(model), target_(target), float32_nodes_(float32_nodes) {
    for (const ValueInfo& input : model_.inputs) taken_.insert(input.name);
    for (const auto& [name, dtype] : dtypes) {
      taken_.insert(name);
      if (dtype == DType::kFloat32) values_[name];
    }
  }

  absl::Status Run() {
    FindListedOpsBetween16BitNeighbours();
    FindProducers();
    FindReaders();
    for (auto& [name, value] : values_) ChooseNames(name, value);
    ConvertInitializers();
    return RewriteNodes();
  }

  // Every name the rewritten model gives a float32 value's versions, with the
  // dtype the pass meant it to have.
  [[nodiscard]] std::map<std::string, DType> IntendedDTypes() const {
    std::map<std::string, DType> intended;
    for (const auto& [name, value] : values_) {
      for (const auto& [dtype, version] : value.names) intended[version] = dtype;
    }
    return intended;
  }

 private:
  // Whether `node` computes in float32: the one test of keeping, for its
  // outputs' dtype and for what it wants its inputs in.
  bool Kept(const Node& node) const {
    return (KeptInFloat32(node.op_type) && between_16bit_.count(&node) == 0) ||
           float32_nodes_.count(node.name) > 0;
  }

  // Kept as the list or float32_nodes say, before Note [Listed ops between
  // 16-bit neighbours] takes any back.
  bool KeptByTheList(const Node& node) const {
    return KeptInFloat32(node.op_type) || float32_nodes_.count(node.name) > 0;
  }

  // Note [Listed ops between 16-bit neighbours]: the nodes of
  // KeptInFloat32's ops that read only target-type values of converted
  // nodes (and weights within the target's range) and whose one output only
  // converted nodes read.
  void FindListedOpsBetween16BitNeighbours() {
    std::map<std::string, const Node*> producers;
    std::map<std::string, std::vector<std::pair<const Node*, size_t>>> readers;
    for (const Node& node : model_.nodes) {
      for (const std::string& output : node.outputs) producers[output] = &node;
      for (size_t i = 0; i < node.inputs.size(); ++i) readers[node.inputs[i]].push_back({&node, i});
    }
    std::set<std::string> graph_values;
    for (const ValueInfo& value : model_.inputs) graph_values.insert(value.name);
    for (const ValueInfo& value : model_.outputs) graph_values.insert(value.name);
    const auto converted_neighbour = [&](const Node* node) {
      return node != nullptr && !KeptByTheList(*node);
    };
    for (const Node& node : model_.nodes) {
      // One output (LayerNormalization's optional Mean and InvStdDev, which
      // ONNX keeps in float32, not asked for), a float32 one, no graph's.
      const bool one_output =
          !node.outputs.empty() &&
          std::all_of(node.outputs.begin() + 1, node.outputs.end(),
                      [](const std::string& output) { return output.empty(); });
      if (!KeptInFloat32(node.op_type) || float32_nodes_.count(node.name) > 0 || !one_output ||
          Find(node.outputs[0]) == nullptr || graph_values.count(node.outputs[0]) > 0) {
        continue;
      }
      // At least one converted node on each side: a node of constants only,
      // or one nobody reads, has no Casts to save.
      bool between = true;
      bool converted_input = false;
      for (const std::string& input : node.inputs) {
        if (input.empty() || Find(input) == nullptr) continue;  // absent, or not float32
        if (graph_values.count(input) > 0) {
          between = false;
        } else if (auto weight = model_.initializers.find(input);
                   weight != model_.initializers.end()) {
          between = between && FitsTarget(*weight->second);
        } else {
          const auto producer = producers.find(input);
          const bool converted =
              producer != producers.end() && !ChoosesOutputDType(producer->second->op_type) &&
              converted_neighbour(producer->second);
          converted_input = converted_input || converted;
          between = between && producer != producers.end() &&
                    (converted || ChoosesOutputDType(producer->second->op_type));
        }
      }
      const auto& output_readers = readers[node.outputs[0]];
      between = between && converted_input && !output_readers.empty();
      for (const auto& [reader, index] : output_readers) {
        between = between && converted_neighbour(reader) && !ReadsFloat32Operand(*reader, index);
      }
      if (between) between_16bit_.insert(&node);
    }
  }

  // Whether every element of a float32 weight is finite in the target type.
  bool FitsTarget(const HostTensor& weight) const {
    const HostTensor rounded = ConvertFloats(weight, target_);
    const HostTensor back = ConvertFloats(rounded, DType::kFloat32);
    for (int64_t i = 0; i < back.num_elements(); ++i) {
      if (std::isinf(back.data<float>()[i]) && !std::isinf(weight.data<float>()[i])) return false;
    }
    return true;
  }

  FloatValue* Find(const std::string& name) {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

  void FindProducers() {
    for (const ValueInfo& input : model_.inputs) {
      if (FloatValue* value = Find(input.name)) value->producer = Producer::kGraphInput;
    }
    for (const auto& [name, tensor] : model_.initializers) {
      if (FloatValue* value = Find(name)) value->producer = Producer::kInitializer;
    }
    for (const Node& node : model_.nodes) {
      const Producer producer = Kept(node)                         ? Producer::kKeptNode
                                : ChoosesOutputDType(node.op_type) ? Producer::kChosenNode
                                                                   : Producer::kNode;
      for (const std::string& output : node.outputs) {
        if (FloatValue* value = Find(output)) value->producer = producer;
      }
    }
  }

  // The dtype `node` wants its float32 input `input` in.
  DType Wanted(const Node& node, size_t input) const {
    return Kept(node) || ReadsFloat32Operand(node, input) ? DType::kFloat32 : target_;
  }

  void FindReaders() {
    for (const Node& node : model_.nodes) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        FloatValue* value = Find(node.inputs[i]);
        if (value != nullptr && !ReadsAnyDType(node, i)) value->wanted.insert(Wanted(node, i));
      }
    }
    for (const ValueInfo& output : model_.outputs) {
      if (FloatValue* value = Find(output.name)) {
        value->graph_output = true;
        value->wanted.insert(DType::kFloat32);
      }
    }
  }

  // The stored dtype, and a name for each dtype the value exists in. The
  // model's own name goes to the declared float32 version of a graph
  // output, and to the stored version of any other value.
  void ChooseNames(const std::string& name, FloatValue& value) {
    switch (value.producer) {
      case Producer::kGraphInput:
      case Producer::kKeptNode:
        value.stored = DType::kFloat32;
        break;
      case Producer::kNode:
        value.stored = target_;
        break;
      case Producer::kInitializer:
      case Producer::kChosenNode:
        value.stored = !value.wanted.empty() && value.wanted == std::set<DType>{DType::kFloat32}
                           ? DType::kFloat32
                           : target_;
        break;
    }
    std::set<DType> versions = value.wanted;
    versions.insert(value.stored);
    for (DType dtype : versions) {
      const bool owns_name = value.graph_output ? dtype == DType::kFloat32 : dtype == value.stored;
      value.names[dtype] = owns_name ? name : UniqueName(absl::StrCat(name, "/", DTypeName(dtype)));
    }
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int n = 1; taken_.count(name) > 0; ++n) name = absl::StrCat(base, "_", n);
    taken_.insert(name);
    return name;
  }

  // Each version of a float32 initializer is an initializer of its own,
  // rounded once from the float32 original, so that the weight store uploads
  // it once for every batch size.
  void ConvertInitializers() {
    std::map<std::string, std::shared_ptr<const HostTensor>> converted;
    for (auto& [name, tensor] : model_.initializers) {
      const FloatValue* value = Find(name);
      if (value == nullptr) {
        converted.emplace(name, tensor);
        continue;
      }
      for (const auto& [dtype, version] : value->names) {
        converted.emplace(version, dtype == DType::kFloat32
                                       ? tensor
                                       : std::make_shared<const HostTensor>(
                                             ConvertFloats(*tensor, dtype)));
      }
    }
    model_.initializers = std::move(converted);
  }

  // A Cast of `value`'s stored version to its version in `dtype`.
  Node CastNode(const FloatValue& value, DType dtype) const {
    const std::string& output = value.names.at(dtype);
    return Node{absl::StrCat(output, "/cast"), "Cast", {value.names.at(value.stored)}, {output},
                {{"to", static_cast<int64_t>(dtype)}}};
  }

  absl::Status RewriteNodes() {
    std::vector<Node> nodes;
    // Graph inputs are float32 at the interface; their other versions are
    // Casts before any node.
    for (const ValueInfo& input : model_.inputs) {
      if (const FloatValue* value = Find(input.name)) AppendCasts(*value, nodes);
    }
    for (Node& node : model_.nodes) {
      const Node original = node;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const FloatValue* value = Find(node.inputs[i]);
        if (value == nullptr) continue;
        node.inputs[i] = value->names.at(ReadsAnyDType(node, i) ? value->stored : Wanted(node, i));
      }
      std::vector<const FloatValue*> outputs;
      for (std::string& output : node.outputs) {
        const FloatValue* value = Find(output);
        if (value == nullptr) continue;
        output = value->names.at(value->stored);
        outputs.push_back(value);
      }
      if (ChoosesOutputDType(node.op_type) && !outputs.empty() &&
          outputs.front()->stored != DType::kFloat32) {
        RETURN_IF_ERROR(SetOutputDType(node, outputs.front()->stored));
      }
      const std::vector<std::string> inputs = node.inputs;
      nodes.push_back(std::move(node));
      for (const FloatValue* value : outputs) {
        if (!ChoosesOutputDType(original.op_type)) {
          AppendCasts(*value, nodes);
          continue;
        }
        // Its own copy per other version, rounded once from the same source.
        for (const auto& [dtype, version] : value->names) {
          if (dtype == value->stored) continue;
          Node copy = original;
          copy.name = absl::StrCat(version, "/", original.op_type);
          copy.inputs = inputs;
          copy.outputs = {version};
          if (dtype != DType::kFloat32) RETURN_IF_ERROR(SetOutputDType(copy, dtype));
          nodes.push_back(std::move(copy));
        }
      }
    }
    model_.nodes = std::move(nodes);
    return absl::OkStatus();
  }

  void AppendCasts(const FloatValue& value, std::vector<Node>& nodes) const {
    for (const auto& [dtype, version] : value.names) {
      if (dtype != value.stored) nodes.push_back(CastNode(value, dtype));
    }
  }

  Model& model_;
  const DType target_;
  const std::set<std::string>& float32_nodes_;  // kept besides KeptInFloat32's ops
  // KeptInFloat32's nodes that compute in the target type after all (Note
  // [Listed ops between 16-bit neighbours]); pointers into model_.nodes,
  // which stay put until RewriteNodes replaces them.
  std::set<const Node*> between_16bit_;
  std::map<std::string, FloatValue> values_;  // the model's float32 values, by name
  std::set<std::string> taken_;               // every value name, for new ones
};

}  // namespace

absl::Status ConvertPrecision(Model& model, ModelPrecision precision,
                              const std::set<std::string>& float32_nodes) {
  if (precision == ModelPrecision::kFp32 || precision == ModelPrecision::kTf32) {
    return absl::OkStatus();
  }
  const DType target = precision == ModelPrecision::kBf16 ? DType::kBFloat16 : DType::kFloat16;
  const std::string context = absl::StrCat("precision ", ModelPrecisionName(precision));
  // Binding's errors keep their code (an op without a 16-bit form is
  // binding's to name), with the precision in front.
  const auto annotated = [&context](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
  };
  // Any extent binds for types; 1 is the smallest.
  absl::StatusOr<BindOptions> bind =
      BindOptionsAt(model, {1, std::vector<int64_t>(ShapeDimNames(model).size(), 1)});
  if (!bind.ok()) return annotated(bind.status());
  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(model, *bind);
  if (!dtypes.ok()) return annotated(dtypes.status());
  PrecisionRewrite rewrite(model, target, float32_nodes, *dtypes);
  RETURN_IF_ERROR(rewrite.Run());
  absl::StatusOr<std::map<std::string, DType>> rewritten = InferValueDTypes(model, *bind);
  if (!rewritten.ok()) return annotated(rewritten.status());
  for (const auto& [name, dtype] : rewrite.IntendedDTypes()) {
    auto it = rewritten->find(name);
    if (it != rewritten->end() && it->second != dtype) {
      return absl::InternalError(absl::StrCat(
          context, ": value '", name, "' binds as ", DTypeName(it->second), ", the pass meant ",
          DTypeName(dtype), " (its op's float output does not follow its float inputs)"));
    }
  }
  return absl::OkStatus();
}

std::optional<std::string> Float32GemmsOfHalfModel(const Model& model, ModelPrecision precision) {
  if (precision != ModelPrecision::kFp32 && precision != ModelPrecision::kTf32) return std::nullopt;
  // Binding for dtypes costs a load; only a model holding 16-bit floats pays.
  const auto is_16bit = [](DType dtype) {
    return dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  };
  std::optional<DType> half;
  for (const ValueInfo& input : model.inputs) {
    if (!half && is_16bit(input.dtype)) half = input.dtype;
  }
  for (const auto& [name, tensor] : model.initializers) {
    if (!half && is_16bit(tensor->dtype())) half = tensor->dtype();
  }
  if (!half) return std::nullopt;
  absl::StatusOr<BindOptions> bind =
      BindOptionsAt(model, {1, std::vector<int64_t>(ShapeDimNames(model).size(), 1)});
  if (!bind.ok()) return std::nullopt;
  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(model, *bind);
  if (!dtypes.ok()) return std::nullopt;
  size_t gemms = 0;
  size_t float32 = 0;
  for (const Node& node : model.nodes) {
    if (node.op_type != "MatMul" && node.op_type != "Gemm" && node.op_type != "Conv") continue;
    const auto dtype = dtypes->find(node.outputs.front());
    if (dtype == dtypes->end()) continue;  // every node output binds; defensive
    ++gemms;
    if (dtype->second == DType::kFloat32) ++float32;
  }
  if (float32 == 0) return std::nullopt;
  const ModelPrecision suggested =
      *half == DType::kBFloat16 ? ModelPrecision::kBf16 : ModelPrecision::kFp16;
  return absl::StrCat(
      float32, " of its ", gemms, " MatMul, Gemm and Conv nodes compute in float32 as written, ",
      "though it holds ", DTypeName(*half), " values (PyTorch's TorchScript exporter writes ",
      ".half() transformers so); precision \"", ModelPrecisionName(suggested),
      "\" (config.pbtxt's capture.precision, prepare --precision) computes them in ",
      DTypeName(*half));
}

}  // namespace graphserve
