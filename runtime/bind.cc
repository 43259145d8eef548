#include "runtime/bind.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/host/kernels.h"
#include "runtime/op_list.h"

namespace graphserve {

bool IsShapeOperand(const std::string& op_type, int input_index) {
  if (op_type == "Slice") return input_index >= 1 && input_index <= 4;
  if (op_type == "Reshape" || op_type == "Expand" || op_type == "Unsqueeze" ||
      op_type == "Squeeze" || op_type == "ReduceMean") {
    return input_index == 1;
  }
  return false;
}

// Implementation details follow.

namespace {

constexpr ValueId kOmitted = -1;  // an optional input the model leaves out ("")

// What a node computes for one output, before it becomes a BoundValue.
struct OutputSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Dims dims;
};

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) product *= dims[i];
  return product;
}

// Multidirectional (numpy) broadcasting of two shapes; nullopt when a pair of
// dims is neither equal nor 1.
std::optional<Dims> BroadcastPair(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::string DTypeString(DType dtype) { return std::string(DTypeName(dtype)); }

// The view of one model node that every op binder works from.
struct NodeContext {
  const Node* node = nullptr;
  std::string name;  // the node's name, "<op_type>_<index>" when the model has none
  // One entry per model input after trailing omitted inputs are dropped;
  // kOmitted where the model leaves an optional input out.
  std::vector<ValueId> inputs;
  // The model's output names with trailing "" dropped.
  std::vector<std::string> outputs;

  [[nodiscard]] const std::string& op() const { return node->op_type; }
  [[nodiscard]] const Attributes& attrs() const { return node->attributes; }

  template <typename... Args>
  [[nodiscard]] absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(
        absl::StrCat("node '", name, "' (", node->op_type, "): ", args...));
  }
  // Prefixes an attribute lookup error with the node.
  [[nodiscard]] absl::Status Annotate(const absl::Status& status) const {
    return absl::Status(status.code(), absl::StrCat("node '", name, "' (", node->op_type,
                                                    "): ", status.message()));
  }
};

// Name of shape operand `index` of `op_type`, for messages.
std::string ShapeOperandName(const std::string& op_type, int index) {
  if (op_type == "Slice") {
    static const char* const kNames[] = {"data", "starts", "ends", "axes", "steps"};
    if (index >= 0 && index < 5) return kNames[index];
  }
  if (op_type == "Reshape" || op_type == "Expand") return "shape";
  return "axes";
}

// Allowed input counts for an op at the model's opset (before trailing
// omitted inputs are dropped, an omitted input still counts as absent).
struct Arity {
  size_t min;
  size_t max;
};

Arity InputArity(const std::string& op, int64_t opset) {
  constexpr size_t kMany = std::numeric_limits<size_t>::max();
  if (op == "Constant") return {0, 0};
  if (op == "Max" || op == "Min" || op == "Concat") return {1, kMany};
  if (op == "Where") return {3, 3};
  if (op == "Gemm" || op == "LayerNormalization") return {2, 3};
  if (op == "Slice") return opset < 10 ? Arity{1, 1} : Arity{3, 5};
  if (op == "ReduceMean") return opset < 18 ? Arity{1, 1} : Arity{1, 2};
  if (op == "Squeeze") return opset < 13 ? Arity{1, 1} : Arity{1, 2};
  if (op == "Unsqueeze") return opset < 13 ? Arity{1, 1} : Arity{2, 2};
  if (op == "Reshape") return opset < 5 ? Arity{1, 1} : Arity{2, 2};
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Pow" ||
      op == "MatMul" || op == "Equal" || op == "Expand" || op == "Gather") {
    return {2, 2};
  }
  return {1, 1};
}

class Binder {
 public:
  Binder(const Model& model, const BindOptions& options) : model_(model), options_(options) {}

  absl::StatusOr<BoundGraph> Bind() {
    if (options_.batch_size < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch size must be at least 1, got ", options_.batch_size));
    }
    graph_.batch_size = options_.batch_size;
    RETURN_IF_ERROR(BindGraphInputs());
    for (const auto& [name, tensor] : model_.initializers) {
      if (tensor == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("initializer '", name, "' is null"));
      }
      RETURN_IF_ERROR(Define(name, AddValue(name, tensor->dtype(), tensor->dims(), tensor)));
    }
    for (size_t i = 0; i < model_.nodes.size(); ++i) {
      RETURN_IF_ERROR(BindNode(model_.nodes[i], i));
    }
    for (const ValueInfo& output : model_.outputs) {
      auto it = by_name_.find(output.name);
      if (it == by_name_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph output '", output.name, "' is produced by no node"));
      }
      graph_.outputs.push_back(it->second);
    }
    RemoveDeadNodes();
    CompactValues();
    return std::move(graph_);
  }

 private:
  // --- Values ---------------------------------------------------------------

  ValueId AddValue(std::string name, DType dtype, Dims dims,
                   std::shared_ptr<const HostTensor> constant) {
    BoundValue value;
    value.name = std::move(name);
    value.dtype = dtype;
    value.dims = std::move(dims);
    value.constant = std::move(constant);
    graph_.values.push_back(std::move(value));
    return static_cast<ValueId>(graph_.values.size() - 1);
  }

  absl::Status Define(const std::string& name, ValueId id) {
    if (!by_name_.emplace(name, id).second) {
      return absl::InvalidArgumentError(absl::StrCat("value '", name, "' is defined twice"));
    }
    return absl::OkStatus();
  }

  const BoundValue& Value(ValueId id) const { return graph_.values[id]; }
  bool IsConstant(ValueId id) const { return graph_.values[id].is_constant(); }

  absl::Status BindGraphInputs() {
    std::set<std::string> input_names;
    for (const ValueInfo& input : model_.inputs) {
      input_names.insert(input.name);
      auto known = options_.known_inputs.find(input.name);
      if (known != options_.known_inputs.end()) {
        RETURN_IF_ERROR(CheckKnownInput(input, known->second));
        RETURN_IF_ERROR(Define(
            input.name, AddValue(input.name, known->second.dtype(), known->second.dims(),
                                 std::make_shared<const HostTensor>(known->second))));
        continue;
      }
      Dims dims = input.dims;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] >= 0) continue;
        if (d == 0 && dims[d] == -1) {
          dims[d] = options_.batch_size;
          continue;
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "graph input '", input.name, "' has dynamic dim ", d, " (dims ",
            DimsToString(input.dims), "); only dim 0, the batch dim, may be -1"));
      }
      const ValueId id = AddValue(input.name, input.dtype, std::move(dims), nullptr);
      RETURN_IF_ERROR(Define(input.name, id));
      graph_.inputs.push_back(id);
    }
    for (const auto& [name, tensor] : options_.known_inputs) {
      if (input_names.count(name) == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("known input '", name, "' is not a graph input of the model"));
      }
    }
    return absl::OkStatus();
  }

  static absl::Status CheckKnownInput(const ValueInfo& input, const HostTensor& tensor) {
    if (tensor.dtype() != input.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "known input '", input.name, "': the model declares ", DTypeString(input.dtype),
          ", the given tensor is ", DTypeString(tensor.dtype())));
    }
    bool dims_match = tensor.dims().size() == input.dims.size();
    for (size_t d = 0; dims_match && d < input.dims.size(); ++d) {
      // A declared -1 (the batch dim) accepts any size.
      dims_match = input.dims[d] == -1 || input.dims[d] == tensor.dims()[d];
    }
    if (!dims_match) {
      return absl::InvalidArgumentError(absl::StrCat(
          "known input '", input.name, "': the model declares dims ",
          DimsToString(input.dims), ", the given tensor has ", DimsToString(tensor.dims())));
    }
    return absl::OkStatus();
  }

  // --- Emission and constant folding --------------------------------------

  // Creates the output values of `node` and either appends it to the graph
  // or, when all its inputs are constants, runs it on the host and makes its
  // outputs constants. Returns the output ids.
  absl::StatusOr<std::vector<ValueId>> Emit(BoundNode node, std::vector<OutputSpec> outputs) {
    node.outputs.clear();
    for (OutputSpec& spec : outputs) {
      node.outputs.push_back(
          AddValue(std::move(spec.name), spec.dtype, std::move(spec.dims), nullptr));
    }
    std::vector<ValueId> ids = node.outputs;
    const bool foldable =
        !node.inputs.empty() &&
        std::all_of(node.inputs.begin(), node.inputs.end(),
                    [this](ValueId id) { return IsConstant(id); });
    if (!foldable) {
      graph_.nodes.push_back(std::move(node));
      return ids;
    }
    std::vector<const HostTensor*> inputs;
    for (ValueId id : node.inputs) inputs.push_back(Value(id).constant.get());
    std::vector<HostTensor> results;
    results.reserve(ids.size());
    std::vector<HostTensor*> result_ptrs;
    for (ValueId id : ids) {
      results.emplace_back(Value(id).dtype, Value(id).dims);
      result_ptrs.push_back(&results.back());
    }
    absl::Status status = RunHostNode(node, inputs, result_ptrs);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("folding constant node '", node.name, "' (",
                                       node.op_type, ") at bind time: ", status.message()));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      graph_.values[ids[i]].constant = std::make_shared<const HostTensor>(std::move(results[i]));
    }
    return ids;
  }

  // Emits the canonical node for a model node: outputs take the model's
  // names, in order (Note [Bound node outputs] in bind.h).
  absl::Status EmitModelNode(const NodeContext& ctx, std::string op_type,
                             std::vector<ValueId> inputs, Attributes attrs,
                             std::vector<OutputSpec> outputs) {
    if (ctx.outputs.size() > outputs.size()) {
      return ctx.Error("expected at most ", outputs.size(), " output(s), got ",
                       ctx.outputs.size());
    }
    outputs.resize(ctx.outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].name = ctx.outputs[i].empty()
                            ? absl::StrCat(ctx.name, "/unused_output_", i)
                            : ctx.outputs[i];
    }
    BoundNode node;
    node.name = ctx.name;
    node.op_type = std::move(op_type);
    node.inputs = std::move(inputs);
    node.attributes = std::move(attrs);
    ASSIGN_OR_RETURN(std::vector<ValueId> ids, Emit(std::move(node), std::move(outputs)));
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!ctx.outputs[i].empty()) RETURN_IF_ERROR(Define(ctx.outputs[i], ids[i]));
    }
    return absl::OkStatus();
  }

  // A one-output node whose output is the model node's output 0.
  absl::Status EmitSimple(const NodeContext& ctx, std::vector<ValueId> inputs, Attributes attrs,
                          DType dtype, Dims dims) {
    return EmitModelNode(ctx, ctx.op(), std::move(inputs), std::move(attrs),
                         {OutputSpec{"", dtype, std::move(dims)}});
  }

  // A model output that is known at bind time without running a kernel.
  absl::Status DefineConstantOutput(const NodeContext& ctx, HostTensor tensor) {
    if (ctx.outputs.size() != 1 || ctx.outputs[0].empty()) {
      return ctx.Error("expected exactly one named output, got ", ctx.outputs.size());
    }
    const DType dtype = tensor.dtype();
    Dims dims = tensor.dims();
    return Define(ctx.outputs[0],
                  AddValue(ctx.outputs[0], dtype, std::move(dims),
                           std::make_shared<const HostTensor>(std::move(tensor))));
  }

  // --- Node dispatch -------------------------------------------------------

  absl::Status BindNode(const Node& node, size_t index) {
    NodeContext ctx;
    ctx.node = &node;
    ctx.name = node.name.empty() ? absl::StrCat(node.op_type, "_", index) : node.name;
    if (!IsSupportedOp(node.op_type)) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", ctx.name, "': op '", node.op_type, "' is not supported; supported ops: ",
          absl::StrJoin(SupportedOps(), ", ")));
    }
    size_t input_count = node.inputs.size();
    while (input_count > 0 && node.inputs[input_count - 1].empty()) --input_count;
    const Arity arity = InputArity(node.op_type, model_.opset);
    if (input_count < arity.min || input_count > arity.max) {
      return ctx.Error("expected ", arity.min,
                       arity.max == arity.min ? std::string()
                       : arity.max == std::numeric_limits<size_t>::max()
                           ? std::string(" or more")
                           : absl::StrCat(" to ", arity.max),
                       " inputs at opset ", model_.opset, ", got ", input_count);
    }
    for (size_t i = 0; i < input_count; ++i) {
      const std::string& input = node.inputs[i];
      if (input.empty()) {
        // Only Slice's axes may be left out before a later input (steps).
        if (!(node.op_type == "Slice" && i == 3)) {
          return ctx.Error("input ", i, " is required but omitted");
        }
        ctx.inputs.push_back(kOmitted);
        continue;
      }
      auto it = by_name_.find(input);
      if (it == by_name_.end()) {
        return ctx.Error("input ", i, " '", input, "' is not defined by a graph input, ",
                         "an initializer or an earlier node");
      }
      if (IsShapeOperand(node.op_type, static_cast<int>(i)) && !IsConstant(it->second)) {
        return ctx.Error("operand '", ShapeOperandName(node.op_type, static_cast<int>(i)),
                         "' (input ", i, ", value '", input,
                         "') must be known at plan time: a constant, an initializer, a "
                         "known input or a foldable shape computation");
      }
      ctx.inputs.push_back(it->second);
    }
    ctx.outputs = node.outputs;
    while (!ctx.outputs.empty() && ctx.outputs.back().empty()) ctx.outputs.pop_back();
    if (ctx.outputs.empty()) return ctx.Error("has no outputs");

    const std::string& op = node.op_type;
    if (op == "Constant") return BindConstant(ctx);
    if (op == "Shape") return BindShape(ctx);
    if (op == "Identity") return BindUnary(ctx, {DType::kFloat32, DType::kInt64, DType::kBool});
    if (op == "Sqrt" || op == "Exp" || op == "Log" || op == "Sigmoid" || op == "Tanh" ||
        op == "Erf") {
      return BindUnary(ctx, {DType::kFloat32});
    }
    if (op == "Relu" || op == "Abs" || op == "Neg") {
      return BindUnary(ctx, {DType::kFloat32, DType::kInt64});
    }
    if (op == "LeakyRelu") return BindLeakyRelu(ctx);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return BindBinary(ctx, {});
    if (op == "Mod") return BindMod(ctx);
    if (op == "Pow") return BindPow(ctx);
    if (op == "Max" || op == "Min") return BindVariadic(ctx);
    if (op == "Equal") return BindEqual(ctx);
    if (op == "Where") return BindWhere(ctx);
    if (op == "Cast") return BindCast(ctx);
    if (op == "Gemm") return BindGemm(ctx);
    if (op == "MatMul") return BindMatMul(ctx);
    if (op == "Softmax") return BindSoftmax(ctx);
    if (op == "LayerNormalization") return BindLayerNorm(ctx);
    if (op == "ReduceMean") return BindReduceMean(ctx);
    if (op == "Concat") return BindConcat(ctx);
    if (op == "Transpose") return BindTranspose(ctx);
    if (op == "Slice") return BindSlice(ctx);
    if (op == "Expand") return BindExpand(ctx);
    if (op == "Gather") return BindGather(ctx);
    if (op == "Reshape") return BindReshape(ctx);
    if (op == "Flatten") return BindFlatten(ctx);
    if (op == "Squeeze") return BindSqueeze(ctx);
    if (op == "Unsqueeze") return BindUnsqueeze(ctx);
    return absl::UnimplementedError(
        absl::StrCat("node '", ctx.name, "': binding has no rule for op '", op, "'"));
  }

  // --- Shared checks -------------------------------------------------------

  // Normalises `axis` for a tensor of `rank` dims (ONNX range [-rank, rank-1]).
  static absl::StatusOr<int64_t> NormalizeAxis(const NodeContext& ctx, int64_t axis,
                                               int64_t rank, const char* what) {
    if (axis < -rank || axis >= rank) {
      return ctx.Error(what, " ", axis, " is out of range for rank ", rank, " (expected [",
                       -rank, ", ", rank - 1, "])");
    }
    return axis < 0 ? axis + rank : axis;
  }

  // Sorted, non-negative, duplicate-free axes.
  static absl::StatusOr<std::vector<int64_t>> NormalizeAxes(const NodeContext& ctx,
                                                            std::vector<int64_t> axes,
                                                            int64_t rank) {
    for (int64_t& axis : axes) {
      ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, axis, rank, "axis"));
    }
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
      return ctx.Error("axes [", absl::StrJoin(axes, ","), "] repeat an axis");
    }
    return axes;
  }

  absl::Status CheckDType(const NodeContext& ctx, size_t input, std::vector<DType> allowed) {
    const DType dtype = Value(ctx.inputs[input]).dtype;
    if (std::find(allowed.begin(), allowed.end(), dtype) != allowed.end()) {
      return absl::OkStatus();
    }
    std::vector<std::string> names;
    for (DType a : allowed) names.push_back(DTypeString(a));
    return ctx.Error("input ", input, " '", Value(ctx.inputs[input]).name, "' should be ",
                     absl::StrJoin(names, " or "), ", got ", DTypeString(dtype));
  }

  absl::Status CheckSameDType(const NodeContext& ctx, size_t a, size_t b) {
    const DType da = Value(ctx.inputs[a]).dtype;
    const DType db = Value(ctx.inputs[b]).dtype;
    if (da == db) return absl::OkStatus();
    return ctx.Error("inputs ", a, " and ", b, " should have one dtype, got ", DTypeString(da),
                     " and ", DTypeString(db));
  }

  absl::StatusOr<Dims> Broadcast(const NodeContext& ctx, const Dims& a, const Dims& b) {
    std::optional<Dims> out = BroadcastPair(a, b);
    if (!out) {
      return ctx.Error("cannot broadcast dims ", DimsToString(a), " with ", DimsToString(b),
                       " (each pair of trailing-aligned dims must be equal or 1)");
    }
    return *out;
  }

  // The int64 values of a constant input (shape operands, checked constant
  // in BindNode).
  absl::StatusOr<std::vector<int64_t>> ConstantInts(const NodeContext& ctx, size_t input) {
    const BoundValue& value = Value(ctx.inputs[input]);
    if (!value.is_constant()) {
      return ctx.Error("input ", input, " '", value.name, "' must be a constant");
    }
    if (value.dtype != DType::kInt64) {
      return ctx.Error("input ", input, " '", value.name, "' should be int64, got ",
                       DTypeString(value.dtype));
    }
    if (value.dims.size() > 1) {
      return ctx.Error("input ", input, " '", value.name, "' should be 1-D, got dims ",
                       DimsToString(value.dims));
    }
    const int64_t* data = value.constant->data<int64_t>();
    return std::vector<int64_t>(data, data + value.constant->num_elements());
  }

  const Dims& InDims(const NodeContext& ctx, size_t input) const {
    return Value(ctx.inputs[input]).dims;
  }

  // Inputs ONNX lists as attributes in old opsets and as inputs in new ones.
  // Returns nullopt when neither is given.
  absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOperand(const NodeContext& ctx,
                                                                  int64_t input_since_opset) {
    if (model_.opset < input_since_opset) {
      if (ctx.attrs().count("axes") == 0) return std::optional<std::vector<int64_t>>();
      absl::StatusOr<std::vector<int64_t>> axes = GetIntsAttr(ctx.attrs(), "axes", {});
      if (!axes.ok()) return ctx.Annotate(axes.status());
      return std::optional<std::vector<int64_t>>(*std::move(axes));
    }
    if (ctx.inputs.size() < 2 || ctx.inputs[1] == kOmitted) {
      return std::optional<std::vector<int64_t>>();
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstantInts(ctx, 1));
    return std::optional<std::vector<int64_t>>(std::move(axes));
  }

  absl::StatusOr<int64_t> IntAttrOr(const NodeContext& ctx, const std::string& name,
                                    int64_t default_value) {
    absl::StatusOr<int64_t> value = GetIntAttr(ctx.attrs(), name, default_value);
    if (!value.ok()) return ctx.Annotate(value.status());
    return *value;
  }

  absl::StatusOr<float> FloatAttrOr(const NodeContext& ctx, const std::string& name,
                                    float default_value) {
    absl::StatusOr<float> value = GetFloatAttr(ctx.attrs(), name, default_value);
    if (!value.ok()) return ctx.Annotate(value.status());
    return *value;
  }

  // --- Ops -----------------------------------------------------------------

  absl::Status BindConstant(const NodeContext& ctx) {
    const Attributes& attrs = ctx.attrs();
    if (attrs.size() != 1) {
      return ctx.Error("expected exactly one value attribute, got ", attrs.size());
    }
    const auto& [name, attr] = *attrs.begin();
    if (name == "value") {
      if (const HostTensor* tensor = std::get_if<HostTensor>(&attr)) {
        return DefineConstantOutput(ctx, *tensor);
      }
    } else if (name == "value_float") {
      if (const float* v = std::get_if<float>(&attr)) {
        HostTensor tensor(DType::kFloat32, {});
        *tensor.data<float>() = *v;
        return DefineConstantOutput(ctx, std::move(tensor));
      }
    } else if (name == "value_floats") {
      if (const auto* v = std::get_if<std::vector<float>>(&attr)) {
        HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(v->size())});
        std::copy(v->begin(), v->end(), tensor.data<float>());
        return DefineConstantOutput(ctx, std::move(tensor));
      }
    } else if (name == "value_int") {
      if (const int64_t* v = std::get_if<int64_t>(&attr)) {
        HostTensor tensor(DType::kInt64, {});
        *tensor.data<int64_t>() = *v;
        return DefineConstantOutput(ctx, std::move(tensor));
      }
    } else if (name == "value_ints") {
      if (const auto* v = std::get_if<std::vector<int64_t>>(&attr)) {
        HostTensor tensor(DType::kInt64, {static_cast<int64_t>(v->size())});
        std::copy(v->begin(), v->end(), tensor.data<int64_t>());
        return DefineConstantOutput(ctx, std::move(tensor));
      }
    } else {
      return absl::UnimplementedError(absl::StrCat("node '", ctx.name,
                                                   "' (Constant): attribute '", name,
                                                   "' is not supported"));
    }
    return ctx.Error("attribute '", name, "' has the wrong type");
  }

  absl::Status BindShape(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(int64_t start, IntAttrOr(ctx, "start", 0));
    ASSIGN_OR_RETURN(int64_t end, IntAttrOr(ctx, "end", rank));
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    const int64_t count = std::max<int64_t>(0, end - start);
    HostTensor tensor(DType::kInt64, {count});
    for (int64_t i = 0; i < count; ++i) tensor.data<int64_t>()[i] = dims[start + i];
    return DefineConstantOutput(ctx, std::move(tensor));
  }

  absl::Status BindUnary(const NodeContext& ctx, std::vector<DType> allowed) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, std::move(allowed)));
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype, InDims(ctx, 0));
  }

  absl::Status BindLeakyRelu(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32}));
    ASSIGN_OR_RETURN(float alpha, FloatAttrOr(ctx, "alpha", 0.01f));
    return EmitSimple(ctx, {ctx.inputs[0]}, {{"alpha", alpha}}, DType::kFloat32,
                      InDims(ctx, 0));
  }

  // Two float32 or int64 inputs broadcast to one output of their dtype;
  // `attrs` are the op's canonical attributes.
  absl::Status BindBinary(const NodeContext& ctx, Attributes attrs) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32, DType::kInt64}));
    RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, InDims(ctx, 0), InDims(ctx, 1)));
    return EmitSimple(ctx, {ctx.inputs[0], ctx.inputs[1]}, std::move(attrs),
                      Value(ctx.inputs[0]).dtype, std::move(dims));
  }

  // ONNX defines fmod=0 (the sign of the divisor) for integers only.
  absl::Status BindMod(const NodeContext& ctx) {
    ASSIGN_OR_RETURN(int64_t fmod, IntAttrOr(ctx, "fmod", 0));
    if (fmod != 0 && fmod != 1) return ctx.Error("attribute fmod should be 0 or 1, got ", fmod);
    if (fmod == 0 && Value(ctx.inputs[0]).dtype == DType::kFloat32) {
      return ctx.Error("fmod=0 is integer modulo; ONNX requires fmod=1 for float inputs");
    }
    return BindBinary(ctx, {{"fmod", fmod}});
  }

  // Pow allows an exponent of another type than the base; kernels see one
  // dtype, so the exponent goes through a Cast first.
  absl::Status BindPow(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32, DType::kInt64}));
    RETURN_IF_ERROR(CheckDType(ctx, 1, {DType::kFloat32, DType::kInt64}));
    const DType dtype = Value(ctx.inputs[0]).dtype;
    ValueId exponent = ctx.inputs[1];
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, InDims(ctx, 0), InDims(ctx, 1)));
    if (Value(exponent).dtype != dtype) {
      BoundNode cast;
      cast.name = absl::StrCat(ctx.name, "/cast_exponent");
      cast.op_type = "Cast";
      cast.inputs = {exponent};
      cast.attributes = {{"to", static_cast<int64_t>(dtype)}};
      ASSIGN_OR_RETURN(std::vector<ValueId> ids,
                       Emit(std::move(cast), {OutputSpec{absl::StrCat(ctx.name, "/exponent"),
                                                         dtype, InDims(ctx, 1)}}));
      exponent = ids[0];
    }
    return EmitSimple(ctx, {ctx.inputs[0], exponent}, {}, dtype, std::move(dims));
  }

  // Max and Min: one input is Identity, n > 2 a chain of two-input nodes
  // whose last link produces the model's output.
  absl::Status BindVariadic(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32, DType::kInt64}));
    for (size_t i = 1; i < ctx.inputs.size(); ++i) RETURN_IF_ERROR(CheckSameDType(ctx, 0, i));
    const DType dtype = Value(ctx.inputs[0]).dtype;
    if (ctx.inputs.size() == 1) {
      return EmitModelNode(ctx, "Identity", {ctx.inputs[0]}, {},
                           {OutputSpec{"", dtype, InDims(ctx, 0)}});
    }
    ValueId acc = ctx.inputs[0];
    for (size_t i = 1; i + 1 < ctx.inputs.size(); ++i) {
      ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, Value(acc).dims, InDims(ctx, i)));
      BoundNode link;
      link.name = absl::StrCat(ctx.name, "/chain_", i);
      link.op_type = ctx.op();
      link.inputs = {acc, ctx.inputs[i]};
      ASSIGN_OR_RETURN(std::vector<ValueId> ids,
                       Emit(std::move(link), {OutputSpec{absl::StrCat(ctx.name, "/chain_", i,
                                                                      "_output"),
                                                         dtype, std::move(dims)}}));
      acc = ids[0];
    }
    const ValueId last = ctx.inputs.back();
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, Value(acc).dims, Value(last).dims));
    return EmitSimple(ctx, {acc, last}, {}, dtype, std::move(dims));
  }

  absl::Status BindEqual(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckSameDType(ctx, 0, 1));
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, InDims(ctx, 0), InDims(ctx, 1)));
    return EmitSimple(ctx, {ctx.inputs[0], ctx.inputs[1]}, {}, DType::kBool, std::move(dims));
  }

  absl::Status BindWhere(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kBool}));
    RETURN_IF_ERROR(CheckSameDType(ctx, 1, 2));
    ASSIGN_OR_RETURN(Dims xy, Broadcast(ctx, InDims(ctx, 1), InDims(ctx, 2)));
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, InDims(ctx, 0), xy));
    return EmitSimple(ctx, {ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]}, {},
                      Value(ctx.inputs[1]).dtype, std::move(dims));
  }

  absl::Status BindCast(const NodeContext& ctx) {
    if (ctx.attrs().count("to") == 0) return ctx.Error("attribute 'to' is required");
    ASSIGN_OR_RETURN(int64_t to, IntAttrOr(ctx, "to", 0));
    if (to != static_cast<int64_t>(DType::kFloat32) &&
        to != static_cast<int64_t>(DType::kInt64) && to != static_cast<int64_t>(DType::kBool)) {
      return absl::UnimplementedError(
          absl::StrCat("node '", ctx.name, "' (Cast): target type ", to,
                       " is not supported (expected 1 float32, 7 int64 or 9 bool)"));
    }
    return EmitSimple(ctx, {ctx.inputs[0]}, {{"to", to}}, static_cast<DType>(to),
                      InDims(ctx, 0));
  }

  absl::Status BindGemm(const NodeContext& ctx) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      RETURN_IF_ERROR(CheckDType(ctx, i, {DType::kFloat32}));
    }
    ASSIGN_OR_RETURN(int64_t trans_a, IntAttrOr(ctx, "transA", 0));
    ASSIGN_OR_RETURN(int64_t trans_b, IntAttrOr(ctx, "transB", 0));
    ASSIGN_OR_RETURN(float alpha, FloatAttrOr(ctx, "alpha", 1.0f));
    ASSIGN_OR_RETURN(float beta, FloatAttrOr(ctx, "beta", 1.0f));
    const Dims& a = InDims(ctx, 0);
    const Dims& b = InDims(ctx, 1);
    if (a.size() != 2 || b.size() != 2) {
      return ctx.Error("A and B should be 2-D, got ", DimsToString(a), " and ",
                       DimsToString(b));
    }
    const int64_t m = trans_a ? a[1] : a[0];
    const int64_t k = trans_a ? a[0] : a[1];
    const int64_t k_b = trans_b ? b[1] : b[0];
    const int64_t n = trans_b ? b[0] : b[1];
    if (k != k_b) {
      return ctx.Error("inner dims differ: A ", DimsToString(a), " (transA=", trans_a,
                       ") has K=", k, ", B ", DimsToString(b), " (transB=", trans_b,
                       ") has K=", k_b);
    }
    if (ctx.inputs.size() == 3) {
      const Dims& c = InDims(ctx, 2);
      std::optional<Dims> out = BroadcastPair(c, {m, n});
      if (c.size() > 2 || !out || *out != Dims{m, n}) {
        return ctx.Error("C ", DimsToString(c), " does not broadcast to [M,N] ",
                         DimsToString({m, n}));
      }
    }
    Attributes attrs = {{"transA", int64_t{trans_a != 0}},
                        {"transB", int64_t{trans_b != 0}},
                        {"alpha", alpha},
                        {"beta", beta}};
    return EmitSimple(ctx, ctx.inputs, std::move(attrs), DType::kFloat32, {m, n});
  }

  absl::Status BindMatMul(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32}));
    RETURN_IF_ERROR(CheckDType(ctx, 1, {DType::kFloat32}));
    Dims a = InDims(ctx, 0);
    Dims b = InDims(ctx, 1);
    if (a.empty() || b.empty()) {
      return ctx.Error("operands should have rank >= 1, got ", DimsToString(a), " and ",
                       DimsToString(b));
    }
    const bool a_vector = a.size() == 1;
    const bool b_vector = b.size() == 1;
    if (a_vector) a.insert(a.begin(), 1);
    if (b_vector) b.push_back(1);
    const int64_t k = a[a.size() - 1];
    const int64_t k_b = b[b.size() - 2];
    if (k != k_b) {
      return ctx.Error("inner dims differ: A ", DimsToString(InDims(ctx, 0)), " has K=", k,
                       ", B ", DimsToString(InDims(ctx, 1)), " has K=", k_b);
    }
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, Dims(a.begin(), a.end() - 2),
                                          Dims(b.begin(), b.end() - 2)));
    if (!a_vector) dims.push_back(a[a.size() - 2]);
    if (!b_vector) dims.push_back(b[b.size() - 1]);
    return EmitSimple(ctx, {ctx.inputs[0], ctx.inputs[1]}, {}, DType::kFloat32,
                      std::move(dims));
  }

  absl::Status BindSoftmax(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32}));
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    const bool flattens = model_.opset < 13;  // opset < 13: softmax over dims[axis:]
    ASSIGN_OR_RETURN(int64_t axis, IntAttrOr(ctx, "axis", flattens ? 1 : -1));
    if (rank == 0) return ctx.Error("input should have rank >= 1, got a scalar");
    ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, axis, rank, "axis"));
    const size_t a = static_cast<size_t>(axis);
    const int64_t outer = Product(dims, 0, a);
    const int64_t axis_size = flattens ? Product(dims, a, dims.size()) : dims[a];
    const int64_t inner = flattens ? 1 : Product(dims, a + 1, dims.size());
    return EmitSimple(ctx, {ctx.inputs[0]},
                      {{"outer", outer}, {"axis_size", axis_size}, {"inner", inner}},
                      DType::kFloat32, dims);
  }

  absl::Status BindLayerNorm(const NodeContext& ctx) {
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      RETURN_IF_ERROR(CheckDType(ctx, i, {DType::kFloat32}));
    }
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(int64_t axis, IntAttrOr(ctx, "axis", -1));
    ASSIGN_OR_RETURN(float epsilon, FloatAttrOr(ctx, "epsilon", 1e-5f));
    ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, axis, rank, "axis"));
    const size_t a = static_cast<size_t>(axis);
    const int64_t outer = Product(dims, 0, a);
    const int64_t inner = Product(dims, a, dims.size());
    for (size_t i = 1; i < ctx.inputs.size(); ++i) {
      if (NumElements(InDims(ctx, i)) != inner) {
        return ctx.Error(i == 1 ? "Scale " : "B ", DimsToString(InDims(ctx, i)),
                         " should hold ", inner, " elements (X ", DimsToString(dims),
                         " normalised from axis ", axis, ")");
      }
    }
    Dims stat_dims = dims;
    std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
    return EmitModelNode(
        ctx, ctx.op(), ctx.inputs, {{"outer", outer}, {"inner", inner}, {"epsilon", epsilon}},
        {OutputSpec{"", DType::kFloat32, dims}, OutputSpec{"", DType::kFloat32, stat_dims},
         OutputSpec{"", DType::kFloat32, stat_dims}});
  }

  absl::Status BindReduceMean(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 0, {DType::kFloat32}));
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(int64_t keepdims, IntAttrOr(ctx, "keepdims", 1));
    ASSIGN_OR_RETURN(int64_t noop_with_empty_axes, IntAttrOr(ctx, "noop_with_empty_axes", 0));
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, AxesOperand(ctx, 18));
    std::vector<int64_t> axes;
    if (given && !given->empty()) {
      ASSIGN_OR_RETURN(axes, NormalizeAxes(ctx, *std::move(given), rank));
    } else if (noop_with_empty_axes != 0) {
      return EmitModelNode(ctx, "Identity", {ctx.inputs[0]}, {},
                           {OutputSpec{"", DType::kFloat32, dims}});
    } else {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    }
    Dims out;
    for (int64_t d = 0; d < rank; ++d) {
      const bool reduced = std::binary_search(axes.begin(), axes.end(), d);
      if (!reduced) {
        out.push_back(dims[d]);
      } else if (keepdims) {
        out.push_back(1);
      }
    }
    if (axes.empty()) {
      // A scalar input: nothing to reduce, the mean is the value itself.
      return EmitModelNode(ctx, "Identity", {ctx.inputs[0]}, {},
                           {OutputSpec{"", DType::kFloat32, dims}});
    }
    return EmitSimple(ctx, {ctx.inputs[0]},
                      {{"axes", std::move(axes)}, {"keepdims", int64_t{keepdims != 0}}},
                      DType::kFloat32, std::move(out));
  }

  absl::Status BindConcat(const NodeContext& ctx) {
    if (ctx.attrs().count("axis") == 0) return ctx.Error("attribute 'axis' is required");
    ASSIGN_OR_RETURN(int64_t axis, IntAttrOr(ctx, "axis", 0));
    Dims dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, axis, rank, "axis"));
    for (size_t i = 1; i < ctx.inputs.size(); ++i) {
      RETURN_IF_ERROR(CheckSameDType(ctx, 0, i));
      const Dims& other = InDims(ctx, i);
      bool compatible = other.size() == dims.size();
      for (int64_t d = 0; compatible && d < rank; ++d) {
        compatible = d == axis || other[d] == dims[d];
      }
      if (!compatible) {
        return ctx.Error("input ", i, " dims ", DimsToString(other),
                         " do not match input 0 dims ", DimsToString(InDims(ctx, 0)),
                         " outside axis ", axis);
      }
      dims[axis] += other[axis];
    }
    return EmitSimple(ctx, ctx.inputs, {{"axis", axis}}, Value(ctx.inputs[0]).dtype,
                      std::move(dims));
  }

  absl::Status BindTranspose(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> reversed;
    for (int64_t d = rank - 1; d >= 0; --d) reversed.push_back(d);
    absl::StatusOr<std::vector<int64_t>> perm = GetIntsAttr(ctx.attrs(), "perm", reversed);
    if (!perm.ok()) return ctx.Annotate(perm.status());
    std::vector<int64_t> sorted = *perm;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> identity(rank);
    for (int64_t d = 0; d < rank; ++d) identity[d] = d;
    if (sorted != identity) {
      return ctx.Error("perm [", absl::StrJoin(*perm, ","),
                       "] is not a permutation of the input's ", rank, " dims");
    }
    Dims out;
    for (int64_t p : *perm) out.push_back(dims[p]);
    return EmitSimple(ctx, {ctx.inputs[0]}, {{"perm", *std::move(perm)}},
                      Value(ctx.inputs[0]).dtype, std::move(out));
  }

  absl::Status BindSlice(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    std::vector<int64_t> starts, ends, axes, steps;
    bool has_axes = false;
    bool has_steps = false;
    if (model_.opset < 10) {
      if (ctx.attrs().count("starts") == 0 || ctx.attrs().count("ends") == 0) {
        return ctx.Error("attributes 'starts' and 'ends' are required at opset ",
                         model_.opset);
      }
      absl::StatusOr<std::vector<int64_t>> s = GetIntsAttr(ctx.attrs(), "starts", {});
      absl::StatusOr<std::vector<int64_t>> e = GetIntsAttr(ctx.attrs(), "ends", {});
      absl::StatusOr<std::vector<int64_t>> a = GetIntsAttr(ctx.attrs(), "axes", {});
      for (const auto* r : {&s, &e, &a}) {
        if (!r->ok()) return ctx.Annotate(r->status());
      }
      starts = *s;
      ends = *e;
      has_axes = ctx.attrs().count("axes") != 0;
      axes = *a;
    } else {
      ASSIGN_OR_RETURN(starts, ConstantInts(ctx, 1));
      ASSIGN_OR_RETURN(ends, ConstantInts(ctx, 2));
      if (ctx.inputs.size() > 3 && ctx.inputs[3] != kOmitted) {
        has_axes = true;
        ASSIGN_OR_RETURN(axes, ConstantInts(ctx, 3));
      }
      if (ctx.inputs.size() > 4) {
        has_steps = true;
        ASSIGN_OR_RETURN(steps, ConstantInts(ctx, 4));
      }
    }
    if (ends.size() != starts.size()) {
      return ctx.Error("starts has ", starts.size(), " values, ends has ", ends.size());
    }
    if (!has_axes) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (!has_steps) steps.assign(starts.size(), 1);
    if (axes.size() != starts.size() || steps.size() != starts.size()) {
      return ctx.Error("starts, ends, axes and steps should have one length, got ",
                       starts.size(), ", ", ends.size(), ", ", axes.size(), ", ",
                       steps.size());
    }
    std::vector<int64_t> canonical_starts(rank, 0);
    std::vector<int64_t> canonical_steps(rank, 1);
    Dims out = dims;
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < axes.size(); ++i) {
      ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(ctx, axes[i], rank, "axis"));
      if (seen[axis]) return ctx.Error("axis ", axis, " is sliced twice");
      seen[axis] = true;
      const int64_t step = steps[i];
      if (step == 0) return ctx.Error("step for axis ", axis, " is 0");
      const int64_t dim = dims[axis];
      int64_t start = starts[i];
      int64_t end = ends[i];
      // ONNX Slice: negative positions count from the end, then clamp to
      // [0, dim] for positive steps and [0, dim-1] / [-1, dim-1] for negative.
      if (start < 0) start += dim;
      if (end < 0) end += dim;
      int64_t count = 0;
      if (dim == 0) {
        start = 0;
      } else if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        count = end > start ? (end - start - 1) / step + 1 : 0;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        const int64_t magnitude =
            step == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max()
                                                        : -step;
        count = start > end ? (start - end - 1) / magnitude + 1 : 0;
      }
      // An empty slice reads nothing; keep its start a valid index anyway.
      if (count == 0) start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
      canonical_starts[axis] = start;
      canonical_steps[axis] = step;
      out[axis] = count;
    }
    return EmitSimple(ctx, {ctx.inputs[0]},
                      {{"starts", std::move(canonical_starts)},
                       {"steps", std::move(canonical_steps)}},
                      Value(ctx.inputs[0]).dtype, std::move(out));
  }

  absl::Status BindExpand(const NodeContext& ctx) {
    ASSIGN_OR_RETURN(std::vector<int64_t> shape, ConstantInts(ctx, 1));
    for (int64_t s : shape) {
      if (s < 0) return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has a negative dim");
    }
    ASSIGN_OR_RETURN(Dims dims, Broadcast(ctx, InDims(ctx, 0), shape));
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype, std::move(dims));
  }

  absl::Status BindGather(const NodeContext& ctx) {
    RETURN_IF_ERROR(CheckDType(ctx, 1, {DType::kInt64}));
    const Dims& data = InDims(ctx, 0);
    const Dims& indices = InDims(ctx, 1);
    const int64_t rank = static_cast<int64_t>(data.size());
    if (rank == 0) return ctx.Error("data should have rank >= 1, got a scalar");
    ASSIGN_OR_RETURN(int64_t axis, IntAttrOr(ctx, "axis", 0));
    ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx, axis, rank, "axis"));
    const BoundValue& index_value = Value(ctx.inputs[1]);
    if (index_value.is_constant()) {
      const int64_t* idx = index_value.constant->data<int64_t>();
      for (int64_t i = 0; i < index_value.constant->num_elements(); ++i) {
        if (idx[i] < -data[axis] || idx[i] >= data[axis]) {
          return ctx.Error("index ", idx[i], " is out of range for axis ", axis, " of dims ",
                           DimsToString(data));
        }
      }
    }
    Dims out(data.begin(), data.begin() + axis);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    return EmitSimple(ctx, {ctx.inputs[0], ctx.inputs[1]}, {{"axis", axis}},
                      Value(ctx.inputs[0]).dtype, std::move(out));
  }

  absl::Status BindReshape(const NodeContext& ctx) {
    const Dims& in = InDims(ctx, 0);
    std::vector<int64_t> shape;
    if (model_.opset < 5) {
      absl::StatusOr<std::vector<int64_t>> attr = GetIntsAttr(ctx.attrs(), "shape", {});
      if (!attr.ok()) return ctx.Annotate(attr.status());
      shape = *std::move(attr);
    } else {
      ASSIGN_OR_RETURN(shape, ConstantInts(ctx, 1));
    }
    ASSIGN_OR_RETURN(int64_t allowzero, IntAttrOr(ctx, "allowzero", 0));
    Dims out(shape.size());
    int64_t inferred = -1;
    int64_t known = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      const int64_t s = shape[i];
      if (s == 0 && allowzero == 0) {
        if (i >= in.size()) {
          return ctx.Error("shape [", absl::StrJoin(shape, ","), "] copies dim ", i,
                           " of the input, which has only ", in.size(), " dims ",
                           DimsToString(in));
        }
        out[i] = in[i];
      } else if (s == -1) {
        if (inferred >= 0) {
          return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has more than one -1");
        }
        inferred = static_cast<int64_t>(i);
        continue;
      } else if (s < -1) {
        return ctx.Error("shape [", absl::StrJoin(shape, ","), "] has invalid dim ", s);
      } else {
        out[i] = s;
      }
      known *= out[i];
    }
    const int64_t total = NumElements(in);
    if (inferred >= 0) {
      if (known == 0 || total % known != 0) {
        return ctx.Error("cannot infer the -1 in shape [", absl::StrJoin(shape, ","),
                         "] for input dims ", DimsToString(in), " (", total, " elements)");
      }
      out[inferred] = total / known;
    }
    if (NumElements(out) != total) {
      return ctx.Error("shape [", absl::StrJoin(shape, ","), "] gives dims ",
                       DimsToString(out), " with ", NumElements(out),
                       " elements, the input dims ", DimsToString(in), " have ", total);
    }
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype, std::move(out));
  }

  absl::Status BindFlatten(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(int64_t axis, IntAttrOr(ctx, "axis", 1));
    if (axis < -rank || axis > rank) {
      return ctx.Error("axis ", axis, " is out of range for rank ", rank, " (expected [", -rank,
                       ", ", rank, "])");
    }
    if (axis < 0) axis += rank;
    const size_t a = static_cast<size_t>(axis);
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype,
                      {Product(dims, 0, a), Product(dims, a, dims.size())});
  }

  absl::Status BindSqueeze(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    const int64_t rank = static_cast<int64_t>(dims.size());
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, AxesOperand(ctx, 13));
    std::vector<int64_t> axes;
    if (given && !given->empty()) {
      ASSIGN_OR_RETURN(axes, NormalizeAxes(ctx, *std::move(given), rank));
      for (int64_t axis : axes) {
        if (dims[axis] != 1) {
          return ctx.Error("cannot squeeze axis ", axis, " of dims ", DimsToString(dims),
                           ": its size is ", dims[axis], ", expected 1");
        }
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        if (dims[d] == 1) axes.push_back(d);
      }
    }
    Dims out;
    for (int64_t d = 0; d < rank; ++d) {
      if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(dims[d]);
    }
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype, std::move(out));
  }

  absl::Status BindUnsqueeze(const NodeContext& ctx) {
    const Dims& dims = InDims(ctx, 0);
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> given, AxesOperand(ctx, 13));
    if (!given || given->empty()) return ctx.Error("axes are required and must be non-empty");
    const int64_t out_rank = static_cast<int64_t>(dims.size() + given->size());
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, NormalizeAxes(ctx, *std::move(given), out_rank));
    Dims out;
    size_t next = 0;
    for (int64_t d = 0; d < out_rank; ++d) {
      if (std::binary_search(axes.begin(), axes.end(), d)) {
        out.push_back(1);
      } else {
        out.push_back(dims[next++]);
      }
    }
    return EmitSimple(ctx, {ctx.inputs[0]}, {}, Value(ctx.inputs[0]).dtype, std::move(out));
  }

  // --- Clean-up ------------------------------------------------------------

  // Drops nodes none of whose outputs reach a graph output, and trailing
  // outputs nothing reads (Note [Bound node outputs] in bind.h).
  void RemoveDeadNodes() {
    std::vector<bool> needed(graph_.values.size(), false);
    for (ValueId id : graph_.outputs) needed[id] = true;
    std::vector<BoundNode> live;
    for (auto it = graph_.nodes.rbegin(); it != graph_.nodes.rend(); ++it) {
      BoundNode& node = *it;
      const bool is_live = std::any_of(node.outputs.begin(), node.outputs.end(),
                                       [&needed](ValueId id) { return needed[id]; });
      if (!is_live) continue;
      while (node.outputs.size() > 1 && !needed[node.outputs.back()]) node.outputs.pop_back();
      for (ValueId id : node.inputs) needed[id] = true;
      live.push_back(std::move(node));
    }
    std::reverse(live.begin(), live.end());
    graph_.nodes = std::move(live);
  }

  // Renumbers values so that only those the graph refers to remain (dead
  // nodes' outputs, unused constants and folded intermediates go).
  void CompactValues() {
    std::vector<ValueId> remap(graph_.values.size(), -1);
    std::vector<BoundValue> kept;
    auto keep = [&](ValueId& id) {
      if (remap[id] < 0) {
        remap[id] = static_cast<ValueId>(kept.size());
        kept.push_back(std::move(graph_.values[id]));
      }
      id = remap[id];
    };
    for (ValueId& id : graph_.inputs) keep(id);
    for (BoundNode& node : graph_.nodes) {
      for (ValueId& id : node.inputs) keep(id);
      for (ValueId& id : node.outputs) keep(id);
    }
    for (ValueId& id : graph_.outputs) keep(id);
    graph_.values = std::move(kept);
  }

  const Model& model_;
  const BindOptions& options_;
  BoundGraph graph_;
  std::map<std::string, ValueId> by_name_;
};

}  // namespace

absl::StatusOr<BoundGraph> BindModel(const Model& model, const BindOptions& options) {
  return Binder(model, options).Bind();
}

}  // namespace graphserve
