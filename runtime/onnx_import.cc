#include "runtime/onnx_import.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "onnx/checker.h"
#include "onnx/shape_inference/implementation.h"
#include "runtime/bind.h"
#include "runtime/op_registry.h"
#include "runtime/passes/model_passes.h"

namespace graphserve {

namespace {

// Node names listed per unsupported op before "and N more".
constexpr size_t kNodeNamesPerOp = 3;

// One read into a string of the file's size: streaming it through an
// ostringstream regrew and copied BERT-base's 440 MB several times (0.6 s of
// a load).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  const std::streamoff size = file.tellg();
  if (size < 0) return absl::InvalidArgumentError(absl::StrCat("cannot size '", path, "'"));
  std::string contents(static_cast<size_t>(size), '\0');
  file.seekg(0);
  if (!file.read(contents.data(), size)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  }
  return contents;
}

bool IsDefaultDomain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

// Ops whose output shape depends on the values of their inputs (how many
// boxes NonMaxSuppression keeps, how many elements NonZero finds): a captured
// graph replays fixed shapes, so they are refused with that reason and the
// way users serve such models, not as a gap in coverage.
const char* DataDependentShapeReason(const std::string& op) {
  if (op == "NonMaxSuppression") {
    return "how many boxes it keeps depends on the data, and a CUDA graph replays fixed "
           "shapes: serve the detector without its postprocessing (export its backbone and "
           "head, whose outputs have fixed shapes) and run NMS on the client";
  }
  if (op == "NonZero" || op == "Unique" || op == "Compress") {
    return "its output's length depends on the data, and a CUDA graph replays fixed shapes";
  }
  return nullptr;
}

// Problems found while converting a model. Note [One error for every problem]:
// a model that cannot run is usually unsupported in several places at once
// (an exporter emits a few ops we lack, each used by many nodes), and a user
// fixing them one error at a time would re-export the model again and again.
// So conversion walks the whole graph, collects every problem, and reports
// them together: Unimplemented when every problem is something GraphServe
// could support (an op, an element type), InvalidArgument when any is a
// property of the model itself (an input of unknown rank).
class ProblemList {
 public:
  void AddUnsupportedNode(const onnx::NodeProto& node, const std::string& node_name) {
    std::string key = IsDefaultDomain(node.domain())
                          ? node.op_type()
                          : absl::StrCat(node.domain(), "::", node.op_type());
    std::vector<std::string>& names = unsupported_ops_[key];
    if (names.empty()) op_order_.push_back(key);
    names.push_back(node_name);
  }

  void AddUnsupported(std::string message) {
    if (seen_.insert(message).second) unsupported_.push_back(std::move(message));
  }

  void AddInvalid(std::string message) {
    if (seen_.insert(message).second) invalid_.push_back(std::move(message));
  }

  [[nodiscard]] bool empty() const {
    return op_order_.empty() && unsupported_.empty() && invalid_.empty();
  }

  [[nodiscard]] absl::Status ToStatus(const std::string& model_name) const {
    std::vector<std::string> lines;
    for (const std::string& op : op_order_) {
      const std::vector<std::string>& names = unsupported_ops_.at(op);
      std::vector<std::string> shown(
          names.begin(), names.begin() + std::min(names.size(), kNodeNamesPerOp));
      std::string line = absl::StrCat("op ", op, " is not supported (", names.size(),
                                      names.size() == 1 ? " node: " : " nodes: ",
                                      absl::StrJoin(shown, ", "));
      if (names.size() > shown.size()) {
        absl::StrAppend(&line, ", and ", names.size() - shown.size(), " more");
      }
      absl::StrAppend(&line, ")");
      if (const char* reason = DataDependentShapeReason(op)) absl::StrAppend(&line, ": ", reason);
      lines.push_back(std::move(line));
    }
    lines.insert(lines.end(), unsupported_.begin(), unsupported_.end());
    lines.insert(lines.end(), invalid_.begin(), invalid_.end());
    std::string message = absl::StrCat("model '", model_name, "' cannot be imported: ",
                                       lines.size(), lines.size() == 1 ? " problem" : " problems",
                                       "\n  ", absl::StrJoin(lines, "\n  "));
    if (invalid_.empty()) return absl::UnimplementedError(message);
    return absl::InvalidArgumentError(message);
  }

 private:
  std::vector<std::string> op_order_;  // unsupported ops, in order of first use
  std::map<std::string, std::vector<std::string>> unsupported_ops_;  // op -> node names
  std::vector<std::string> unsupported_;
  std::vector<std::string> invalid_;
  std::set<std::string> seen_;  // one line per distinct problem
};

// The dtype of a value's type, or a problem naming the value.
std::optional<DType> ValueDType(const onnx::TypeProto& type, const std::string& what,
                                ProblemList* problems) {
  if (!type.has_tensor_type()) {
    problems->AddUnsupported(
        absl::StrCat(what, " is not a tensor (only tensor values are supported)"));
    return std::nullopt;
  }
  absl::StatusOr<DType> dtype = DTypeFromOnnx(type.tensor_type().elem_type());
  if (!dtype.ok()) {
    problems->AddUnsupported(absl::StrCat(what, ": ", dtype.status().message()));
    return std::nullopt;
  }
  return *dtype;
}

// Dims of a tensor type: dim_value, or -1 for a dim_param or an unknown dim.
Dims ShapeDims(const onnx::TypeProto& type) {
  Dims dims;
  if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return dims;
  for (const onnx::TensorShapeProto_Dimension& dim : type.tensor_type().shape().dim()) {
    dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
  }
  return dims;
}

// A graph input: a dynamic dim 0 is the batch (or, for a model served
// without one, a shape dim: Note [Models without a batch dim] in
// runtime/ir.h), any other dynamic dim a shape dim (Note [Shape dims]).
ValueInfo ConvertGraphInput(const onnx::ValueInfoProto& input, ProblemList* problems) {
  ValueInfo info;
  info.name = input.name();
  const std::string what = absl::StrCat("input '", input.name(), "'");
  if (std::optional<DType> dtype = ValueDType(input.type(), what, problems)) {
    info.dtype = *dtype;
  }
  if (!input.type().has_tensor_type()) return info;
  const onnx::TypeProto_Tensor& tensor = input.type().tensor_type();
  if (!tensor.has_shape()) {
    problems->AddInvalid(absl::StrCat(what, " has no shape (its rank must be known)"));
    return info;
  }
  for (int d = 0; d < tensor.shape().dim_size(); ++d) {
    const onnx::TensorShapeProto_Dimension& dim = tensor.shape().dim(d);
    const bool dynamic = !dim.has_dim_value();
    info.dims.push_back(dynamic ? -1 : dim.dim_value());
    if (!dynamic) {
      info.dim_names.emplace_back();
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      info.dim_names.push_back(dim.dim_param());
    } else {
      info.dim_names.push_back(absl::StrCat(input.name(), ":", d));
    }
  }
  return info;
}

// The first IR version whose initializers listed as graph inputs are inputs
// with a default (Note [Inputs with defaults] in runtime/ir.h).
constexpr int64_t kFirstIrWithInputDefaults = 4;

// A graph input with a default, `value` (Note [Inputs with defaults] in
// runtime/ir.h). The default must be a value of the input, as ONNX requires:
// its dtype, its rank, its fixed dims (a dynamic dim takes any extent). An
// input the file types without a shape has the default's.
ValueInfo ConvertInputWithDefault(const onnx::ValueInfoProto& input,
                                  std::shared_ptr<const HostTensor> value,
                                  ProblemList* problems) {
  ValueInfo info;
  if (input.type().has_tensor_type() && !input.type().tensor_type().has_shape()) {
    info.name = input.name();
    info.dtype = value->dtype();
    info.dims = value->dims();
    info.dim_names.resize(info.dims.size());
  } else {
    info = ConvertGraphInput(input, problems);
  }
  bool fits = value->dtype() == info.dtype && value->dims().size() == info.dims.size();
  for (size_t d = 0; fits && d < info.dims.size(); ++d) {
    fits = info.dims[d] == -1 || info.dims[d] == value->dims()[d];
  }
  if (!fits) {
    problems->AddInvalid(absl::StrCat("input '", info.name,
                                      "' has a default (the initializer of its name) of ",
                                      DTypeName(value->dtype()), " ", DimsToString(value->dims()),
                                      ", which is not a value of the input (",
                                      DTypeName(info.dtype), " ", DimsToString(info.dims), ")"));
  }
  info.default_value = std::move(value);
  return info;
}

absl::StatusOr<Attribute> ConvertAttribute(const onnx::AttributeProto& attr) {
  switch (attr.type()) {
    case onnx::AttributeProto::INT:
      return Attribute(static_cast<int64_t>(attr.i()));
    case onnx::AttributeProto::FLOAT:
      return Attribute(attr.f());
    case onnx::AttributeProto::STRING:
      return Attribute(attr.s());
    case onnx::AttributeProto::INTS:
      return Attribute(std::vector<int64_t>(attr.ints().begin(), attr.ints().end()));
    case onnx::AttributeProto::FLOATS:
      return Attribute(std::vector<float>(attr.floats().begin(), attr.floats().end()));
    case onnx::AttributeProto::TENSOR: {
      ASSIGN_OR_RETURN(HostTensor tensor, TensorFromOnnx(attr.t()));
      return Attribute(std::move(tensor));
    }
    default:
      return absl::UnimplementedError(
          absl::StrCat("attribute '", attr.name(), "' has type ",
                       onnx::AttributeProto::AttributeType_Name(attr.type()),
                       " (supported: INT, FLOAT, STRING, INTS, FLOATS, TENSOR)"));
  }
}

// ---------------------------------------------------------------- STRING

constexpr int32_t kOnnxString = onnx::TensorProto::STRING;

int32_t ElemType(const onnx::ValueInfoProto& value) {
  return value.type().has_tensor_type() ? value.type().tensor_type().elem_type() : 0;
}

void SetElemType(onnx::ValueInfoProto* value, int32_t elem_type) {
  value->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
}

// What the rewrite of Note [Strings at the model's edges] found.
struct StringEdges {
  std::set<std::string> text_inputs;
  std::set<std::string> text_outputs;
  std::vector<PassedString> passed;
};

// Rewrites `graph` by Note [Strings at the model's edges] (in runtime/ir.h):
// STRING inputs read by Casts to one number type, and STRING outputs Cast
// from a number, become numbers; STRING outputs that are STRING inputs
// through Identity nodes leave the graph, with those nodes and inputs. Every
// other STRING graph input, graph output or value is a problem naming the
// node that makes or reads it, and the only problem reported for it:
// conversion skips STRING values.
class StringEdgeRewrite {
 public:
  StringEdgeRewrite(onnx::GraphProto& graph, ProblemList* problems)
      : graph_(graph), problems_(problems) {}

  StringEdges Run() {
    for (const onnx::TensorProto& initializer : graph_.initializer()) {
      initializers_.insert(initializer.name());
    }
    for (const onnx::ValueInfoProto& input : graph_.input()) {
      if (ElemType(input) == kOnnxString && !initializers_.contains(input.name())) {
        string_inputs_.insert(input.name());
      }
    }
    for (const onnx::ValueInfoProto& output : graph_.output()) outputs_.insert(output.name());
    for (const onnx::ValueInfoProto& value : graph_.value_info()) {
      if (ElemType(value) == kOnnxString) typed_strings_.insert(value.name());
    }
    for (int i = 0; i < graph_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_.node(i);
      for (const std::string& output : node.output()) producer_[output] = i;
      std::set<std::string> read;  // a node reading a value twice reads it once here
      for (const std::string& input : node.input()) {
        if (!input.empty() && read.insert(input).second) readers_[input].push_back(i);
      }
      if (IsCastToString(node)) {
        for (const std::string& output : node.output()) typed_strings_.insert(output);
      }
    }
    if (string_inputs_.empty() && typed_strings_.empty() && !AnyStringOutput()) return {};

    for (const std::string& input : string_inputs_) ResolveInput(input);
    for (const onnx::ValueInfoProto& output : graph_.output()) {
      if (ElemType(output) == kOnnxString && !passed_outputs_.contains(output.name())) {
        ResolveOutput(output.name());
      }
    }
    // A STRING value inside the model that no edge above accounts for.
    for (int i = 0; i < graph_.node_size(); ++i) {
      const onnx::NodeProto& node = graph_.node(i);
      if (IsCastToString(node) && !accounted_.contains(i)) {
        problems_->AddUnsupported(absl::StrCat(
            "node '", NodeName(i), "' (Cast) makes STRING value '",
            node.output_size() > 0 ? node.output(0) : "", "' inside the model; GraphServe serves STRING only at a model's edges, as a graph "
            "output of Cast(to=STRING) (Note [Strings at the model's edges])"));
      }
    }
    RemovePassedStrings();
    return std::move(edges_);
  }

 private:
  bool AnyStringOutput() const {
    return std::any_of(graph_.output().begin(), graph_.output().end(),
                       [](const onnx::ValueInfoProto& v) { return ElemType(v) == kOnnxString; });
  }

  static bool IsOp(const onnx::NodeProto& node, absl::string_view op) {
    return IsDefaultDomain(node.domain()) && node.op_type() == op;
  }

  // Cast's `to`, or 0 without one.
  static int64_t CastTarget(const onnx::NodeProto& node) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      if (attr.name() == "to" && attr.type() == onnx::AttributeProto::INT) return attr.i();
    }
    return 0;
  }

  static bool IsCastToString(const onnx::NodeProto& node) {
    return IsOp(node, "Cast") && CastTarget(node) == kOnnxString;
  }

  std::string NodeName(int index) const {
    const onnx::NodeProto& node = graph_.node(index);
    return node.name().empty() ? absl::StrCat(node.op_type(), "_", index) : node.name();
  }

  // The node becomes Identity of its first input: a Cast that the edge
  // conversion now does.
  void MakeIdentity(int index) {
    onnx::NodeProto* node = graph_.mutable_node(index);
    node->set_op_type("Identity");
    node->clear_attribute();
    accounted_.insert(index);
  }

  const std::vector<int>& Readers(const std::string& value) const {
    static const std::vector<int> kNone;
    const auto it = readers_.find(value);
    return it == readers_.end() ? kNone : it->second;
  }

  void ResolveInput(const std::string& input) {
    const std::vector<int>& readers = Readers(input);
    // Read as a number: every reader a Cast to one type, and not an output.
    std::set<int64_t> targets;
    for (int reader : readers) {
      targets.insert(IsOp(graph_.node(reader), "Cast") ? CastTarget(graph_.node(reader)) : -1);
    }
    if (!readers.empty() && targets.size() == 1 && *targets.begin() > 0 &&
        !outputs_.contains(input)) {
      const int64_t target = *targets.begin();
      absl::StatusOr<DType> dtype = DTypeFromOnnx(static_cast<int32_t>(target));
      if (!dtype.ok() || *dtype == DType::kBool) {
        problems_->AddUnsupported(absl::StrCat(
            "node '", NodeName(readers.front()), "' (Cast) reads STRING input '", input,
            "' into ", OnnxTypeName(static_cast<int32_t>(target)),
            dtype.ok() ? ", which has no number text (Note [Number text])"
                       : absl::StrCat(": ", dtype.status().message())));
        return;
      }
      for (int reader : readers) MakeIdentity(reader);
      for (onnx::ValueInfoProto& value : *graph_.mutable_input()) {
        if (value.name() == input) SetElemType(&value, static_cast<int32_t>(target));
      }
      edges_.text_inputs.insert(input);
      return;
    }
    // Passed through: every value reached through Identity nodes is read by
    // Identity nodes only, and some are graph outputs.
    std::vector<std::string> reached = {input};
    std::set<int> chain;
    for (size_t next = 0; next < reached.size(); ++next) {
      for (int reader : Readers(reached[next])) {
        const onnx::NodeProto& node = graph_.node(reader);
        if (!IsOp(node, "Identity")) {
          problems_->AddUnsupported(absl::StrCat(
              "node '", NodeName(reader), "' (", node.op_type(), ") reads STRING value '",
              reached[next], "' of input '", input,
              "'; GraphServe reads a STRING input only through Cast to one number type, or "
              "passes it unchanged through Identity to outputs (Note [Strings at the model's "
              "edges])"));
          return;
        }
        chain.insert(reader);
        if (node.output_size() > 0 && !node.output(0).empty()) reached.push_back(node.output(0));
      }
    }
    std::vector<std::string> outputs;
    for (const std::string& value : reached) {
      if (outputs_.contains(value)) outputs.push_back(value);
    }
    if (outputs.empty()) {
      problems_->AddUnsupported(absl::StrCat("STRING input '", input,
                                             "' reaches no output and is read by no Cast to a "
                                             "number (Note [Strings at the model's edges])"));
      return;
    }
    for (const std::string& output : outputs) {
      const int32_t declared = ElemType(*FindValue(graph_.output(), output));
      if (declared != 0 && declared != kOnnxString) {
        problems_->AddInvalid(absl::StrCat("output '", output, "' is declared ",
                                           OnnxTypeName(declared), " but passes STRING input '",
                                           input, "' through unchanged"));
        return;
      }
    }
    const Dims input_dims = ShapeDims(FindValue(graph_.input(), input)->type());
    for (const std::string& output : outputs) {
      edges_.passed.push_back(
          {input, input_dims, output, ShapeDims(FindValue(graph_.output(), output)->type())});
      passed_outputs_.insert(output);
    }
    passed_inputs_.insert(input);
    passed_values_.insert(reached.begin(), reached.end());
    passed_nodes_.insert(chain.begin(), chain.end());
  }

  void ResolveOutput(const std::string& output) {
    const auto producer = producer_.find(output);
    if (producer == producer_.end()) {
      // A STRING input that is also a graph output but read elsewhere:
      // reported with the input.
      if (!string_inputs_.contains(output)) {
        problems_->AddUnsupported(absl::StrCat("STRING output '", output, "' is made by no node"));
      }
      return;
    }
    const int index = producer->second;
    const onnx::NodeProto& node = graph_.node(index);
    const std::string& source = node.input_size() > 0 ? node.input(0) : output;
    const bool from_number = IsCastToString(node) && !typed_strings_.contains(source) &&
                             !string_inputs_.contains(source);
    if (!from_number) {
      accounted_.insert(index);
      problems_->AddUnsupported(absl::StrCat(
          "STRING output '", output, "' is made by node '", NodeName(index), "' (",
          node.op_type(), IsOp(node, "Cast") ? " of a STRING value" : "",
          "); GraphServe serves a STRING output only as Cast(to=STRING) of a number, or as a "
          "STRING input passed through Identity (Note [Strings at the model's edges])"));
      return;
    }
    if (!Readers(output).empty()) {
      accounted_.insert(index);
      const int reader = Readers(output).front();
      problems_->AddUnsupported(absl::StrCat(
          "node '", NodeName(reader), "' (", graph_.node(reader).op_type(),
          ") reads STRING output '", output,
          "'; a STRING value is served only at a model's edges (Note [Strings at the model's "
          "edges])"));
      return;
    }
    MakeIdentity(index);
    // Its dtype is the Cast's input's, which binding infers (ConvertModel).
    for (onnx::ValueInfoProto& value : *graph_.mutable_output()) {
      if (value.name() == output) SetElemType(&value, onnx::TensorProto::UNDEFINED);
    }
    edges_.text_outputs.insert(output);
  }

  static const onnx::ValueInfoProto* FindValue(
      const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
      const std::string& name) {
    for (const onnx::ValueInfoProto& value : values) {
      if (value.name() == name) return &value;
    }
    return nullptr;
  }

  // The passed inputs and outputs, their Identity nodes and the types of
  // their values leave the graph.
  void RemovePassedStrings() {
    if (edges_.passed.empty()) return;
    const auto drop_values = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* values,
                                const std::set<std::string>& names) {
      google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
      for (onnx::ValueInfoProto& value : *values) {
        if (!names.contains(value.name())) *kept.Add() = std::move(value);
      }
      values->Swap(&kept);
    };
    drop_values(graph_.mutable_input(), passed_inputs_);
    drop_values(graph_.mutable_output(), passed_outputs_);
    drop_values(graph_.mutable_value_info(), passed_values_);
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (!passed_nodes_.contains(i)) *nodes.Add() = std::move(*graph_.mutable_node(i));
    }
    graph_.mutable_node()->Swap(&nodes);
  }

  onnx::GraphProto& graph_;
  ProblemList* const problems_;
  std::set<std::string> initializers_;
  std::set<std::string> string_inputs_;
  std::set<std::string> outputs_;
  // Values known to be STRING: typed so in value_info, or made by Cast(to=STRING).
  std::set<std::string> typed_strings_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> readers_;
  // Casts to STRING made Identity, or refused already with their output.
  std::set<int> accounted_;
  std::set<std::string> passed_inputs_;
  std::set<std::string> passed_outputs_;
  std::set<std::string> passed_values_;
  std::set<int> passed_nodes_;
  StringEdges edges_;
};

// Gives each text output the dtype of the number it is the text of, as
// binding infers it (Note [Strings at the model's edges]): the file types
// the output STRING and its Cast's input often not at all.
absl::Status TypeTextOutputs(const std::string& name, Model& model) {
  if (std::none_of(model.outputs.begin(), model.outputs.end(),
                   [](const ValueInfo& output) { return output.text; })) {
    return absl::OkStatus();
  }
  const auto annotated = [&name](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("model '", name,
                                                    "': typing its STRING outputs' numbers: ",
                                                    status.message()));
  };
  // Any extent binds for types; 1 is the smallest.
  const absl::StatusOr<BindOptions> options =
      BindOptionsAt(model, {1, std::vector<int64_t>(ShapeDimNames(model).size(), 1)});
  if (!options.ok()) return annotated(options.status());
  const absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(model, *options);
  if (!dtypes.ok()) return annotated(dtypes.status());
  for (ValueInfo& output : model.outputs) {
    const auto it = dtypes->find(output.name);
    if (output.text && it != dtypes->end()) output.dtype = it->second;
  }
  return absl::OkStatus();
}

// `proto` has passed the checks of Note [Model files of today]. Its STRING
// edges are rewritten first (Note [Strings at the model's edges]).
absl::StatusOr<Model> ConvertModel(onnx::ModelProto& proto, const std::string& name,
                                   const std::string& model_dir,
                                   const ModelPassOptions& passes) {
  Model model;
  model.name = proto.graph().name().empty() ? name : proto.graph().name();
  for (const onnx::OperatorSetIdProto& opset : proto.opset_import()) {
    if (IsDefaultDomain(opset.domain())) model.opset = opset.version();
  }

  ProblemList problems;
  StringEdges strings = StringEdgeRewrite(*proto.mutable_graph(), &problems).Run();
  model.passed_strings = std::move(strings.passed);
  const onnx::GraphProto& graph = proto.graph();
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    absl::StatusOr<HostTensor> tensor = TensorFromOnnx(initializer, model_dir);
    if (!tensor.ok()) {
      std::string line =
          absl::StrCat("initializer '", initializer.name(), "': ", tensor.status().message());
      if (absl::IsUnimplemented(tensor.status())) {
        problems.AddUnsupported(std::move(line));
      } else {
        problems.AddInvalid(std::move(line));
      }
      continue;
    }
    model.initializers[initializer.name()] =
        std::make_shared<const HostTensor>(*std::move(tensor));
  }
  std::set<std::string> initializer_names;
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    initializer_names.insert(initializer.name());
  }

  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (initializer_names.count(input.name())) {
      // Note [Inputs with defaults]: before IR version 4 every initializer
      // was listed as an input too, and is a weight.
      if (proto.ir_version() < kFirstIrWithInputDefaults) continue;
      const auto initializer = model.initializers.find(input.name());
      if (initializer == model.initializers.end()) continue;  // its problem is listed
      model.inputs.push_back(ConvertInputWithDefault(input, initializer->second, &problems));
      model.initializers.erase(initializer);
      continue;
    }
    if (ElemType(input) == kOnnxString) continue;  // refused by StringEdgeRewrite
    model.inputs.push_back(ConvertGraphInput(input, &problems));
    model.inputs.back().text = strings.text_inputs.contains(input.name());
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (ElemType(output) == kOnnxString) continue;  // refused by StringEdgeRewrite
    ValueInfo info;
    info.name = output.name();
    info.text = strings.text_outputs.contains(output.name());
    // A text output's dtype is its number's, which binding infers below.
    if (!info.text) {
      if (std::optional<DType> dtype = ValueDType(
              output.type(), absl::StrCat("output '", output.name(), "'"), &problems)) {
        info.dtype = *dtype;
      }
    }
    // No shape (shape inference could not tell) leaves dims empty; binding
    // infers every output's dims for the batch size anyway.
    info.dims = ShapeDims(output.type());
    model.outputs.push_back(std::move(info));
  }
  // Intermediate values: shape inference has typed what it could.
  for (const onnx::ValueInfoProto& value : graph.value_info()) {
    // An untyped tensor, or STRING (StringEdgeRewrite accounts for each).
    if (value.type().has_tensor_type() &&
        (ElemType(value) == 0 || ElemType(value) == kOnnxString)) {
      continue;
    }
    ValueDType(value.type(), absl::StrCat("value '", value.name(), "'"), &problems);
  }

  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& proto_node = graph.node(i);
    Node node;
    node.name = proto_node.name().empty() ? absl::StrCat(proto_node.op_type(), "_", i)
                                          : proto_node.name();
    node.op_type = proto_node.op_type();
    node.inputs.assign(proto_node.input().begin(), proto_node.input().end());
    node.outputs.assign(proto_node.output().begin(), proto_node.output().end());
    if (!IsDefaultDomain(proto_node.domain()) || !IsSupportedOp(proto_node.op_type())) {
      problems.AddUnsupportedNode(proto_node, node.name);
      continue;  // its attributes (subgraphs, ...) need not make sense to us
    }
    for (const onnx::AttributeProto& attr : proto_node.attribute()) {
      absl::StatusOr<Attribute> value = ConvertAttribute(attr);
      if (!value.ok()) {
        std::string line = absl::StrCat("node '", node.name, "' (", node.op_type,
                                        "): ", value.status().message());
        if (absl::IsUnimplemented(value.status())) {
          problems.AddUnsupported(std::move(line));
        } else {
          problems.AddInvalid(std::move(line));
        }
        continue;
      }
      node.attributes.emplace(attr.name(), *std::move(value));
    }
    model.nodes.push_back(std::move(node));
  }

  if (!problems.empty()) return problems.ToStatus(name);
  // A model of other domains only has reported its ops above.
  if (model.opset == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", name, "' imports no opset of the default ONNX domain"));
  }
  RETURN_IF_ERROR(TypeTextOutputs(name, model));
  absl::Status passes_status = RunModelPasses(model, passes);  // Note [Model passes]
  if (!passes_status.ok()) {
    return absl::Status(passes_status.code(),
                        absl::StrCat("model '", name, "': ", passes_status.message()));
  }
  return model;
}

// Note [Model files of today]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Debian's libonnx is 1.12: its checker refuses IR versions above 8 and
// opsets above 17, so on its own it refused every file onnx >= 1.14 saves and
// everything torch's dynamo exporter writes (IR 10, opset 18-20). We read
// newer files without a newer libonnx rather than build one: the op registry
// already holds what a checker would check for the ops we run (arity by
// opset, accepted attributes, dtypes) and binding infers every shape, and a
// second libonnx from source beside the one the build links would be two
// schemas for one format. So import checks, for every file:
//   - the versions against what GraphServe implements (kMaxIrVersion,
//     kMaxOpset), refusing newer ones by name;
//   - the graph's structure (CheckGraphStructure): every node input defined
//     before it is read, every name defined once, every output produced;
// and then, where libonnx 1.12 knows the file (IR <= 8, opset <= 17, no
// external data, which its checker looks for in the process's working
// directory), its checker and strict shape inference as a second opinion.
// kMaxOpset is 28 (what onnx 1.23 writes by default) because the default
// domain's changes from 18 to 28 were reviewed against the registry (each
// op's schema diffed between versions): for the ops GraphServe runs they add
// types (int4, float8, float6, float4, 2-bit) or inputs and modes that the
// registry's arity and bind rules refuse (Pad's wrap mode, pooling
// dilations), except ReduceMean's axes input (18) and Split's num_outputs
// (18), which binding implements, Cast's saturate (19), which concerns float8
// targets only, Range's stash_type (27: binding computes the 16-bit floats'
// range in float, stash_type 1, and refuses 0), SpaceToDepth's mode (28: DCR
// and CRD both bound) and Mod's fmod=0 for floats (28: floor division, on
// both executors; refused before 28, where ONNX leaves it undefined). New ops
// of 26-28 (BitCast, CumProd, SwiGLU, LinearAttention, ...) are refused by
// name as any unsupported op is. Later opsets are refused until they are
// reviewed the same way.
constexpr int64_t kMaxIrVersion = 14;
constexpr int64_t kMaxOpset = 28;
constexpr int64_t kLibOnnxMaxIrVersion = 8;
constexpr int64_t kLibOnnxMaxOpset = 17;

// The default domain's opset the model imports (0 when none).
int64_t DefaultOpset(const onnx::ModelProto& proto) {
  int64_t opset = 0;
  for (const onnx::OperatorSetIdProto& entry : proto.opset_import()) {
    if (IsDefaultDomain(entry.domain())) opset = entry.version();
  }
  return opset;
}

absl::Status CheckVersions(const onnx::ModelProto& proto, const std::string& name) {
  if (proto.ir_version() > kMaxIrVersion) {
    return absl::UnimplementedError(absl::StrCat("'", name, "' has IR version ",
                                                 proto.ir_version(), "; GraphServe reads up to ",
                                                 kMaxIrVersion));
  }
  if (DefaultOpset(proto) > kMaxOpset) {
    return absl::UnimplementedError(absl::StrCat(
        "'", name, "' imports opset ", DefaultOpset(proto),
        " of the default domain; GraphServe implements up to ", kMaxOpset,
        " (Note [Model files of today]): export with opset_version <= ", kMaxOpset));
  }
  return absl::OkStatus();
}

// Note [Model files of today]: what ONNX requires of a graph's structure,
// checked for every file. InvalidArgument naming the first node or value at
// fault.
// Every initializer's and Constant's raw_data holds what its dims and type
// need, before libonnx reads it: its shape inference (the lenient typing run
// of WidenMixedLayerNormParameters too) copies raw_data into a vector sized
// by whole elements, so 7 bytes for one int64 wrote through a null pointer
// (found by onnx_model_fuzz). TensorFromOnnx checks the same later, for
// files libonnx does not read. External data is not read here.
absl::Status CheckRawDataSizes(const onnx::GraphProto& graph, const std::string& name) {
  const auto check = [&name](const onnx::TensorProto& tensor) -> absl::Status {
    if (!tensor.has_raw_data() || tensor.data_location() == onnx::TensorProto::EXTERNAL) {
      return absl::OkStatus();
    }
    const absl::StatusOr<DType> dtype = DTypeFromOnnx(tensor.data_type());
    if (!dtype.ok()) return absl::OkStatus();  // refused by type when converted
    const Dims dims(tensor.dims().begin(), tensor.dims().end());
    const bool negative = std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; });
    const std::optional<uint64_t> bytes = negative ? std::nullopt : TensorBytes(dims, *dtype);
    if (bytes.has_value() && tensor.raw_data().size() == *bytes) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name, "' is not a valid ONNX graph: tensor '", tensor.name(), "' of dims ",
        DimsToString(dims), " and type ", std::string(DTypeName(*dtype)), " needs ",
        bytes.has_value() ? absl::StrCat(*bytes) : std::string("an impossible number of"),
        " bytes of raw_data, has ", tensor.raw_data().size()));
  };
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    RETURN_IF_ERROR(check(initializer));
  }
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_t()) RETURN_IF_ERROR(check(attribute.t()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGraphStructure(const onnx::GraphProto& graph, const std::string& name) {
  auto invalid = [&name](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a valid ONNX graph: ",
                                                   parts...));
  };
  // Nothing to compute or serve, and libonnx 1.12's shape inference
  // dereferences null on some such graphs (a Conv on a rank-2 input).
  if (graph.output_size() == 0) return invalid("the graph has no outputs");
  std::set<std::string> defined;
  auto define = [&](const std::string& value, absl::string_view what) -> absl::Status {
    if (value.empty()) return invalid(what, " has an empty name");
    if (!defined.insert(value).second) {
      return invalid(what, " '", value, "' is defined more than once");
    }
    return absl::OkStatus();
  };
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    RETURN_IF_ERROR(define(initializer.name(), "initializer"));
  }
  for (const onnx::ValueInfoProto& input : graph.input()) {
    // Before IR version 4 initializers were also listed as graph inputs.
    if (defined.count(input.name()) != 0) continue;
    RETURN_IF_ERROR(define(input.name(), "input"));
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto& node = graph.node(i);
    const std::string node_name =
        node.name().empty() ? absl::StrCat(node.op_type(), "_", i) : node.name();
    for (const std::string& input : node.input()) {
      if (!input.empty() && defined.count(input) == 0) {
        return invalid("node '", node_name, "' (", node.op_type(), ") reads '", input,
                       "', which no graph input, initializer or earlier node defines");
      }
    }
    for (const std::string& output : node.output()) {
      if (output.empty()) continue;  // an optional output left out
      RETURN_IF_ERROR(define(output, absl::StrCat("node '", node_name, "' output")));
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    if (defined.count(output.name()) == 0) {
      return invalid("graph output '", output.name(), "' is produced by no node");
    }
  }
  return absl::OkStatus();
}

// libonnx 1.12's checker and strict shape inference, on files it knows.
// Note [Guarding libonnx's shape inference]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// libonnx 1.12's shape inference for convolutions and pooling
// (convPoolShapeInference) reads the spatial dims of its input without
// checking the input's rank against the kernel, pads and strides: a Conv on
// a rank-2 value with 2-D pads reads past the shape and dereferences null
// (found by fuzz/onnx_model_fuzz; a model file could kill the server that
// loaded it). Shape inference here therefore runs on a schema registry that
// wraps those ops' inference functions in a check of the ranks first, which
// fails the way libonnx's own checks fail (an InferenceError). The rank of
// an intermediate value is known only as inference reaches it, so a check
// before inference could not cover it.

// Whether `op` is inferred by libonnx's convPoolShapeInference, and whether
// its input 1 is a weight of the input's rank.
struct ConvPoolOp {
  const char* name;
  bool has_weight;
};
constexpr ConvPoolOp kConvPoolOps[] = {{"Conv", true},        {"ConvInteger", true},
                                       {"ConvTranspose", true}, {"AveragePool", false},
                                       {"MaxPool", false},    {"LpPool", false}};

void CheckConvPoolRanks(onnx::InferenceContext& ctx, bool has_weight) {
  const auto rank_of = [&ctx](size_t input) -> int {
    if (input >= ctx.getNumInputs()) return -1;
    const onnx::TypeProto* type = ctx.getInputType(input);
    if (type == nullptr || !type->has_tensor_type() || !type->tensor_type().has_shape()) return -1;
    return type->tensor_type().shape().dim_size();
  };
  const int rank = rank_of(0);
  if (rank < 0) return;  // no shape: libonnx infers nothing from it
  if (rank < 3) {
    fail_shape_inference("the input has rank ", rank,
                         "; convolution and pooling need batch, channels and at least one "
                         "spatial dim");
  }
  const int spatial = rank - 2;
  if (has_weight && rank_of(1) >= 0 && rank_of(1) != rank) {
    fail_shape_inference("the weight has rank ", rank_of(1), " but the input has rank ", rank);
  }
  for (const char* attribute : {"kernel_shape", "strides", "dilations", "pads"}) {
    const onnx::AttributeProto* value = ctx.getAttribute(attribute);
    const int expected = std::strcmp(attribute, "pads") == 0 ? 2 * spatial : spatial;
    if (value == nullptr) continue;
    if (value->ints_size() != expected) {
      fail_shape_inference(attribute, " has ", value->ints_size(), " values; an input of rank ",
                           rank, " needs ", expected);
    }
    // libonnx divides by strides and dilations (a 0 was a division by zero)
    // and sizes the output from kernel_shape and pads.
    const int64_t least = std::strcmp(attribute, "pads") == 0 ? 0 : 1;
    for (int64_t element : value->ints()) {
      if (element < least) {
        fail_shape_inference(attribute, " holds ", element, "; each must be at least ", least);
      }
    }
  }
}

// libonnx's registry, with the inference of kConvPoolOps guarded by
// CheckConvPoolRanks (Note [Guarding libonnx's shape inference]). One per
// InferShapes call: the guarded copies are made as inference asks for them.
class GuardedSchemaRegistry : public onnx::ISchemaRegistry {
 public:
  const onnx::OpSchema* GetSchema(const std::string& key, const int max_inclusive_version,
                                  const std::string& domain) const override {
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Instance()->GetSchema(key, max_inclusive_version, domain);
    if (schema == nullptr || !domain.empty()) return schema;
    const auto op = std::find_if(std::begin(kConvPoolOps), std::end(kConvPoolOps),
                                 [&key](const ConvPoolOp& op) { return key == op.name; });
    if (op == std::end(kConvPoolOps)) return schema;
    std::unique_ptr<onnx::OpSchema>& guarded = guarded_[schema];
    if (guarded == nullptr) {
      guarded = std::make_unique<onnx::OpSchema>(*schema);
      onnx::InferenceFunction infer = schema->GetTypeAndShapeInferenceFunction();
      const bool has_weight = op->has_weight;
      guarded->TypeAndShapeInferenceFunction([infer, has_weight](onnx::InferenceContext& ctx) {
        CheckConvPoolRanks(ctx, has_weight);
        if (infer) infer(ctx);
      });
    }
    return guarded.get();
  }

 private:
  mutable std::map<const onnx::OpSchema*, std::unique_ptr<onnx::OpSchema>> guarded_;
};

// Initializers larger than this keep only their name, type and dims in
// CopyForTyping's copy: typing reads the values of small ones (a Reshape's
// shape), never a weight's.
constexpr size_t kTypingInitializerBytes = 4096;

// `proto` copied for a typing run of shape inference, without the data of
// its large initializers: copying BERT-base's 440 MB of weights took 0.3 s
// of a load. `proto` is left as it was.
onnx::ModelProto CopyForTyping(onnx::ModelProto& proto) {
  google::protobuf::RepeatedPtrField<onnx::TensorProto> initializers;
  initializers.Swap(proto.mutable_graph()->mutable_initializer());
  for (const onnx::TensorProto& initializer : initializers) {
    onnx::TensorProto* copy = proto.mutable_graph()->add_initializer();
    if (initializer.ByteSizeLong() <= kTypingInitializerBytes) {
      *copy = initializer;
      continue;
    }
    copy->set_name(initializer.name());
    copy->set_data_type(initializer.data_type());
    *copy->mutable_dims() = initializer.dims();
  }
  onnx::ModelProto typed = proto;
  proto.mutable_graph()->mutable_initializer()->Swap(&initializers);
  return typed;
}

// Note [Mixed-precision LayerNormalization]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's TorchScript exporter writes a half-precision LayerNorm as
// LayerNormalization(Cast(x, FLOAT), scale, bias) with scale and bias left
// float16 (X reaches it through a Cast to float, often behind a residual
// Add; scale and bias are initializers, Constants or Identities of shared
// weights): it computes the norm in float, as autocast does, but ONNX's
// schema gives X, Scale and B one type, so ONNX's checker and shape
// inference refuse every Hugging Face transformer exported with .half()
// (ONNX Runtime accepts it: its kernel takes mixed types). Import puts a
// Cast of Scale and B to X's float type before such a norm (binding folds it
// for constants): exact when widening, and what ONNX Runtime computes. X's type comes from a lenient run of libonnx's shape inference
// on a copy (the strict one, after this, refuses the unfixed node); a type it
// cannot tell leaves the node as it is. Only files libonnx knows are checked
// by it, so only those are rewritten. The originals stay for any other
// reader.
absl::Status WidenMixedLayerNormParameters(onnx::ModelProto& proto) {
  onnx::GraphProto& graph = *proto.mutable_graph();
  std::map<std::string, int32_t> known_types;
  for (const onnx::ValueInfoProto& input : graph.input()) {
    if (input.type().has_tensor_type()) {
      known_types[input.name()] = input.type().tensor_type().elem_type();
    }
  }
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    known_types[initializer.name()] = initializer.data_type();
  }
  // Intermediate values: libonnx's shape inference, lenient (a node it
  // cannot type, such as the mixed LayerNormalization itself, is skipped),
  // on a copy.
  onnx::ModelProto typed = CopyForTyping(proto);
  try {
    const GuardedSchemaRegistry registry;
    const onnx::ShapeInferenceOptions lenient(/*check_type_val=*/false, /*strict_mode_val=*/0,
                                              /*data_prop_val=*/false);
    onnx::shape_inference::InferShapes(typed, &registry, lenient);
  } catch (const std::exception&) {
    return absl::OkStatus();  // the strict run after this names the problem
  }
  for (const onnx::ValueInfoProto& value : typed.graph().value_info()) {
    if (value.type().has_tensor_type()) {
      known_types[value.name()] = value.type().tensor_type().elem_type();
    }
  }
  const auto float_dtype = [](int32_t onnx_type) -> std::optional<DType> {
    absl::StatusOr<DType> dtype = DTypeFromOnnx(onnx_type);
    if (!dtype.ok() || !IsFloatingDType(*dtype)) return std::nullopt;
    return *dtype;
  };
  // Rebuilt with a Cast before each such norm.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  std::set<std::string> casts;
  for (onnx::NodeProto& node : *graph.mutable_node()) {
    const auto type_of = [&](int k) -> std::optional<DType> {
      const auto type = known_types.find(node.input(k));
      return type == known_types.end() ? std::nullopt : float_dtype(type->second);
    };
    if (node.op_type() == "LayerNormalization" && node.input_size() >= 2) {
      const std::optional<DType> x_dtype = type_of(0);
      for (int k = 1; x_dtype && k < node.input_size() && k <= 2; ++k) {
        const std::optional<DType> dtype = type_of(k);
        if (!dtype || *dtype == *x_dtype) continue;
        const std::string cast = absl::StrCat(node.input(k), "/as_", DTypeName(*x_dtype));
        if (casts.insert(cast).second) {
          onnx::NodeProto* widen = nodes.Add();
          widen->set_op_type("Cast");
          widen->set_name(cast);
          widen->add_input(node.input(k));
          widen->add_output(cast);
          onnx::AttributeProto* to = widen->add_attribute();
          to->set_name("to");
          to->set_type(onnx::AttributeProto::INT);
          to->set_i(known_types[node.input(0)]);
        }
        node.set_input(k, cast);
      }
    }
    *nodes.Add() = std::move(node);
  }
  *graph.mutable_node() = std::move(nodes);
  return absl::OkStatus();
}

// libonnx reports problems by throwing (ValidationError, InferenceError, and
// std::runtime_error from protobuf helpers); none may cross this API.
absl::Status LibOnnxChecker(const onnx::ModelProto& proto, const std::string& name) {
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' fails the ONNX checker: ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status LibOnnxShapeInference(onnx::ModelProto& proto, const std::string& name) {
  // Strict mode: a node whose inferred type or shape contradicts what the
  // file declares is an error here rather than a wrong shape at bind time.
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/true, /*strict_mode_val=*/1,
                                            /*data_prop_val=*/false);
  try {
    const GuardedSchemaRegistry registry;
    onnx::shape_inference::InferShapes(proto, &registry, options);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' fails ONNX shape inference: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Model> ImportOnnxBytes(const std::string& bytes, const std::string& name,
                                      const std::string& model_dir,
                                      const ModelPassOptions& passes) {
  onnx::ModelProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is not a serialized ONNX ModelProto"));
  }
  RETURN_IF_ERROR(CheckVersions(proto, name));
  RETURN_IF_ERROR(CheckGraphStructure(proto.graph(), name));
  RETURN_IF_ERROR(CheckRawDataSizes(proto.graph(), name));
  // libonnx 1.12's checker looks for external data relative to the process's
  // working directory, not the model's: such files get our checks alone.
  const bool external_data = std::any_of(
      proto.graph().initializer().begin(), proto.graph().initializer().end(),
      [](const onnx::TensorProto& t) { return t.data_location() == onnx::TensorProto::EXTERNAL; });
  if (proto.ir_version() <= kLibOnnxMaxIrVersion && DefaultOpset(proto) <= kLibOnnxMaxOpset &&
      !external_data) {
    // The checker first: libonnx's shape inference, even the lenient run
    // that typing the mixed norms takes, reads a malformed tensor (int64
    // values in the wrong field) through a null pointer.
    RETURN_IF_ERROR(LibOnnxChecker(proto, name));
    RETURN_IF_ERROR(WidenMixedLayerNormParameters(proto));
    RETURN_IF_ERROR(LibOnnxShapeInference(proto, name));
  }
  return ConvertModel(proto, name, model_dir, passes);
}

absl::StatusOr<Model> ImportOnnxFile(const std::string& path, const ModelPassOptions& passes) {
  ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ImportOnnxBytes(bytes, path, dir.empty() ? "." : dir, passes);
}

namespace {

// The element count and bytes of a tensor of `dims` and `dtype`, checked
// against kMaxTensorBytes (common/tensor.h) before anything is allocated, so
// that a file declaring 2^40 floats and holding four bytes is refused.
absl::StatusOr<std::pair<int64_t, uint64_t>> CheckedTensorSize(const Dims& dims, DType dtype,
                                                               const std::string& what) {
  for (int64_t dim : dims) {
    if (dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has a negative dim: ", DimsToString(dims)));
    }
  }
  const std::optional<uint64_t> bytes = TensorBytes(dims, dtype);
  if (!bytes.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of dims ", DimsToString(dims), " is too large"));
  }
  return std::pair<int64_t, uint64_t>{NumElements(dims), *bytes};
}

// Note [External data]
// ~~~~~~~~~~~~~~~~~~~~
// Models over 2 GB keep their weights in files beside model.onnx (ONNX's
// external data: a location, an offset and a length per tensor). The
// location comes from the model file, which a repository user may not have
// written, so it is resolved only inside the model's directory: relative,
// without "..", and, once symbolic links are followed, still inside it. The
// bytes read are exactly the tensor's, checked against the file's size
// before reading.
absl::StatusOr<std::string> ReadExternalData(const onnx::TensorProto& tensor,
                                             const std::string& model_dir, uint64_t bytes,
                                             const std::string& what) {
  if (model_dir.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        what, " keeps its data in an external file, which needs the model's directory: load "
              "the model from its file"));
  }
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const onnx::StringStringEntryProto& entry : tensor.external_data()) {
    uint64_t number = 0;
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      if (!absl::SimpleAtoi(entry.value(), &number)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": external data ", entry.key(), " '",
                         entry.value().substr(0, 32), "' is not a byte count"));
      }
      (entry.key() == "offset" ? offset : length.emplace()) = number;
    }
  }
  const std::filesystem::path relative = std::filesystem::path(location).lexically_normal();
  if (location.empty() || relative.is_absolute() || relative.empty() ||
      *relative.begin() == "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": external data location '", location.substr(0, 64),
        "' must be a file inside the model's directory"));
  }
  std::error_code error;
  const std::filesystem::path dir = std::filesystem::canonical(model_dir, error);
  const std::filesystem::path file =
      error ? std::filesystem::path() : std::filesystem::weakly_canonical(dir / relative, error);
  const auto [dir_end, file_it] =
      std::mismatch(dir.begin(), dir.end(), file.begin(), file.end());
  if (error || dir_end != dir.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": external data '", location.substr(0, 64), "' leads outside the model's directory"));
  }
  const uint64_t size = std::filesystem::file_size(file, error);
  if (error) {
    return absl::NotFoundError(
        absl::StrCat(what, ": external data file '", location.substr(0, 64), "': ",
                     error.message()));
  }
  if ((length.has_value() && *length != bytes) || offset > size || size - offset < bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " needs ", bytes, " bytes of external data at offset ", offset, " of '",
        location.substr(0, 64), "' (", size, " bytes", length ? absl::StrCat(", length ", *length)
                                                              : std::string(), ")"));
  }
  std::ifstream in(file, std::ios::binary);
  std::string data(bytes, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(data.data(), static_cast<std::streamsize>(bytes));
  if (!in) {
    return absl::DataLossError(
        absl::StrCat(what, ": cannot read external data '", location.substr(0, 64), "'"));
  }
  return data;
}

// The number of elements a typed field of ONNX's holds for `dtype`: see
// TensorFromOnnx's note on which field holds which type.
template <typename T>
const auto& TypedField(const onnx::TensorProto& tensor) {
  if constexpr (std::is_same_v<T, float>) {
    return tensor.float_data();
  } else if constexpr (std::is_same_v<T, double>) {
    return tensor.double_data();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return tensor.int64_data();
  } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
    return tensor.uint64_data();
  } else {
    return tensor.int32_data();
  }
}

}  // namespace

absl::StatusOr<HostTensor> TensorFromOnnx(const onnx::TensorProto& tensor,
                                          const std::string& model_dir) {
  const std::string what =
      tensor.name().empty() ? std::string("tensor") : absl::StrCat("tensor '", tensor.name(), "'");
  if (tensor.has_segment()) {
    return absl::UnimplementedError(absl::StrCat(what, " is segmented, which is not supported"));
  }
  absl::StatusOr<DType> dtype = DTypeFromOnnx(tensor.data_type());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(what, ": ", dtype.status().message()));
  }
  Dims dims(tensor.dims().begin(), tensor.dims().end());
  // Sizes are checked against what the file holds before anything is
  // allocated for the tensor.
  ASSIGN_OR_RETURN(const auto size, CheckedTensorSize(dims, *dtype, what));
  const auto [count, bytes] = size;

  std::optional<std::string> external;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    ASSIGN_OR_RETURN(external, ReadExternalData(tensor, model_dir, bytes, what));
  }
  if (external.has_value() || tensor.has_raw_data()) {
    const std::string& raw = external.has_value() ? *external : tensor.raw_data();
    if (raw.size() != bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " of dims ", DimsToString(dims), " and type ", std::string(DTypeName(*dtype)),
          " needs ", bytes, " bytes of raw_data, has ", raw.size()));
    }
    HostTensor result(*dtype, dims);
    // ONNX stores raw_data little-endian, as every host we build for is.
    if (!raw.empty()) std::memcpy(result.raw(), raw.data(), raw.size());
    if (*dtype == DType::kBool) {
      bool* values = result.data<bool>();
      const auto* raw_bytes = reinterpret_cast<const unsigned char*>(raw.data());
      for (int64_t i = 0; i < count; ++i) values[i] = raw_bytes[i] != 0;
    }
    return result;
  }

  // ONNX's typed fields: float_data, int64_data, double_data and uint64_data
  // (UINT32 and UINT64) hold their values; int32_data holds every narrower
  // integer, bool, and the 16-bit floats as their bit patterns.
  const int64_t stored = VisitDType(*dtype, [&](auto tag) -> int64_t {
    return TypedField<typename decltype(tag)::Host>(tensor).size();
  });
  if (stored != count) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of dims ", DimsToString(dims),
                                                   " holds ", stored, " elements, needs ",
                                                   count));
  }
  HostTensor result(*dtype, dims);
  VisitDType(*dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    T* out = result.data<T>();
    const auto& field = TypedField<T>(tensor);
    for (int i = 0; i < field.size(); ++i) {
      if constexpr (kIsHost16BitFloat<T>) {
        out[i] = T::FromBits(static_cast<uint16_t>(field.Get(i)));
      } else if constexpr (std::is_same_v<T, bool>) {
        out[i] = field.Get(i) != 0;
      } else {
        out[i] = static_cast<T>(field.Get(i));
      }
    }
  });
  return result;
}

absl::StatusOr<HostTensor> ReadTensorProtoFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a serialized ONNX TensorProto"));
  }
  absl::StatusOr<HostTensor> tensor = TensorFromOnnx(proto);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        absl::StrCat(path, ": ", tensor.status().message()));
  }
  return tensor;
}

}  // namespace graphserve
