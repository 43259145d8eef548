#include "runtime/bind.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "runtime/bind_context.h"
#include "runtime/host/kernels.h"
#include "runtime/op_registry.h"

namespace graphserve {

namespace {

// "'sequence', 'height'": shape dims as errors name them.
std::string QuotedNames(const std::vector<std::string>& names) {
  return absl::StrCat("'", absl::StrJoin(names, "', '"), "'");
}

}  // namespace

absl::StatusOr<BindOptions> BindOptionsAt(const Model& model, const GraphKey& key) {
  const std::vector<std::string> shape_dims = ShapeDimNames(model);
  if (key.bucket.size() != shape_dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch ", GraphKeyString(key), " gives ", key.bucket.size(),
        " shape extents; the model has ", shape_dims.size(), " dynamic dims beyond the batch",
        shape_dims.empty() ? "" : absl::StrCat(" (", QuotedNames(shape_dims), ")")));
  }
  if (!model.batches && key.batch_size != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch ", GraphKeyString(key), ": the model is served without a batch dim "
        "(max_batch_size 0), so each of its graphs runs one request, at batch 1"));
  }
  BindOptions options;
  options.batch_size = key.batch_size;
  for (size_t d = 0; d < shape_dims.size(); ++d) options.dim_values[shape_dims[d]] = key.bucket[d];
  return options;
}

bool IsShapeOperand(const std::string& op_type, int input_index) {
  const OpDef* op = FindOp(op_type);
  return op != nullptr && input_index >= 0 && op->IsShapeOperand(static_cast<size_t>(input_index));
}

// Implementation details follow.

namespace {

std::string DTypeString(DType dtype) { return std::string(DTypeName(dtype)); }

// NodeKey's pieces (Note [Repeated nodes]): each appends a value's bytes,
// led by what tells it from other kinds and lengths.
void AppendKeyBytes(std::string& key, const void* data, size_t size) {
  key.append(reinterpret_cast<const char*>(&size), sizeof(size));
  key.append(static_cast<const char*>(data), size);
}

void AppendTensorKey(std::string& key, const HostTensor& tensor) {
  key.push_back(static_cast<char>(tensor.dtype()));
  AppendKeyBytes(key, tensor.dims().data(), tensor.dims().size() * sizeof(int64_t));
  AppendKeyBytes(key, tensor.raw(), tensor.bytes());
}

void AppendAttributeKey(std::string& key, const Attribute& attribute) {
  key.push_back(static_cast<char>('0' + attribute.index()));
  std::visit(
      [&key](const auto& value) {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, HostTensor>) {
          AppendTensorKey(key, value);
        } else if constexpr (std::is_same_v<T, std::string>) {
          AppendKeyBytes(key, value.data(), value.size());
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                             std::is_same_v<T, std::vector<float>>) {
          AppendKeyBytes(key, value.data(), value.size() * sizeof(value[0]));
        } else {
          AppendKeyBytes(key, &value, sizeof(value));
        }
      },
      attribute);
}

class Binder final : public BindContext::Engine {
 public:
  Binder(const Model& model, const BindOptions& options) : model_(model), options_(options) {}

  absl::StatusOr<BoundGraph> Bind() {
    RETURN_IF_ERROR(BindValues());
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

  absl::StatusOr<std::map<std::string, DType>> ValueDTypes() {
    RETURN_IF_ERROR(BindValues());
    std::map<std::string, DType> dtypes;
    for (const auto& [name, id] : by_name_) dtypes.emplace(name, graph_.values[id].dtype);
    return dtypes;
  }

 private:
  // Graph inputs, initializers, then every node in order: each model value
  // defined in by_name_.
  absl::Status BindValues() {
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
      fold_bound_ += kFoldGrowth * tensor->bytes();
    }
    for (size_t i = 0; i < model_.nodes.size(); ++i) {
      RETURN_IF_ERROR(BindNode(model_.nodes[i], i));
    }
    return absl::OkStatus();
  }

  // --- Values ---------------------------------------------------------------

  ValueId AddValue(std::string name, DType dtype, Dims dims,
                   std::shared_ptr<const HostTensor> constant) override {
    BoundValue value;
    value.name = std::move(name);
    value.dtype = dtype;
    value.dims = std::move(dims);
    value.constant = std::move(constant);
    graph_.values.push_back(std::move(value));
    return static_cast<ValueId>(graph_.values.size() - 1);
  }

  absl::Status Define(const std::string& name, ValueId id) override {
    if (!by_name_.emplace(name, id).second) {
      return absl::InvalidArgumentError(absl::StrCat("value '", name, "' is defined twice"));
    }
    return absl::OkStatus();
  }

  bool IsGraphOutput(const std::string& name) const override {
    return std::any_of(model_.outputs.begin(), model_.outputs.end(),
                       [&name](const ValueInfo& output) { return output.name == name; });
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
        RETURN_IF_ERROR(
            Define(input.name, AddValue(input.name, known->second.dtype(), known->second.dims(),
                                        std::make_shared<const HostTensor>(known->second))));
        continue;
      }
      ASSIGN_OR_RETURN(Dims dims, ConcreteDims(input));
      if (!TensorBytes(dims, input.dtype).has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("graph input '", input.name, "' of dims ",
                                                       DimsToString(dims), " is too large"));
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
    const std::vector<std::string> shape_dims = ShapeDimNames(model_);
    for (const auto& [name, extent] : options_.dim_values) {
      if (std::find(shape_dims.begin(), shape_dims.end(), name) == shape_dims.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "dim '", name, "' is not a dynamic dim of the model's inputs (they have ",
            shape_dims.empty() ? "none" : QuotedNames(shape_dims),
            ")"));
      }
    }
    graph_.dim_values = options_.dim_values;
    return absl::OkStatus();
  }

  // `input`'s dims with the batch and its shape dims made concrete.
  absl::StatusOr<Dims> ConcreteDims(const ValueInfo& input) const {
    Dims dims = input.dims;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] >= 0) continue;
      if (d == 0 && model_.batches) {  // else a shape dim: Note [Models without a batch dim]
        dims[d] = options_.batch_size;
        continue;
      }
      const std::string name = d < input.dim_names.size() ? input.dim_names[d] : "";
      auto extent = options_.dim_values.find(name);
      if (name.empty() || extent == options_.dim_values.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph input '", input.name, "' dim ", d,
            name.empty() ? "" : absl::StrCat(" ('", name, "')"), " is dynamic (dims ",
            DimsToString(input.dims), ") and no extent was given for it"));
      }
      if (extent->second < 1) {
        return absl::InvalidArgumentError(absl::StrCat("dim '", name, "' must be at least 1, got ",
                                                       extent->second));
      }
      dims[d] = extent->second;
    }
    return dims;
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
          "known input '", input.name, "': the model declares dims ", DimsToString(input.dims),
          ", the given tensor has ", DimsToString(tensor.dims())));
    }
    return absl::OkStatus();
  }

  // --- Emission and constant folding --------------------------------------

  // Note [Folding bound]
  // ~~~~~~~~~~~~~~~~~~~~
  // Folding runs a node on the host and keeps its outputs, so a few bytes of
  // model can ask for any amount of host memory: an Expand or
  // ConstantOfShape of a constant to [2^20, 2^20] would end the server in
  // std::bad_alloc. The bytes one binding folds are bounded instead, and a
  // model past the bound is refused naming the node. Real models fold shape
  // arithmetic, masks and transformed weights, the largest of which
  // (int8 weights dequantized to float32) is four times the file's
  // initializers; the bound is that plus 1 GiB for masks and the rest.
  static constexpr uint64_t kFoldGrowth = 4;
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // Fuzz builds (.bazelrc's --config=fuzz) fold 64 MiB: an input must bind
  // in seconds under ASan, whose strided copies fill 1 GiB in about 30 s.
  static constexpr uint64_t kFoldSlack = uint64_t{64} << 20;
#else
  static constexpr uint64_t kFoldSlack = uint64_t{1} << 30;
#endif

  // Note [Repeated nodes]
  // ~~~~~~~~~~~~~~~~~~~~~~
  // Exporters repeat work the model needs once: TorchScript's BERT builds its
  // additive attention mask (a Where of the expanded boolean mask between two
  // constants) in every layer, twelve kernels where one serves (BERT-base in
  // float16 replayed at batch 1 in 677 us against 635 for the dynamo export,
  // which builds it once; H200, bench/results/
  // 2026-11-30_f626f6f_cast_alias_keepalive_h200; 656 us built once, call
  // 62). A node with the op, attributes, inputs, output types and output
  // dims of one already emitted is not emitted again, nor folded again: its
  // outputs are that node's values. So a transform of a shared weight that
  // every layer repeats (a Transpose of ALBERT's shared matrices) folds
  // once, counting once against the folding bound, and the per-layer shape
  // arithmetic of TorchScript's exports folds once. Inputs compare by
  // value, and constants of at most kSameConstantBytes (the scalars
  // exporters write per layer) by content. No op draws random numbers, so
  // the two would compute the same. A node that makes a graph output is
  // emitted as it is: each graph output is a value of its own.
  static constexpr size_t kSameConstantBytes = 64;

  // Equal for nodes that compute the same (Note [Repeated nodes]).
  std::string NodeKey(const BoundNode& node, const std::vector<OutputSpec>& outputs) const {
    std::string key = node.op_type;
    key.push_back('\0');
    for (ValueId id : node.inputs) {
      const BoundValue& value = Value(id);
      if (value.is_constant() && value.constant->bytes() <= kSameConstantBytes) {
        key.push_back('c');
        AppendTensorKey(key, *value.constant);
      } else {
        key.push_back('v');
        AppendKeyBytes(key, &id, sizeof(id));
      }
    }
    for (const auto& [name, attribute] : node.attributes) {
      key.append(name);
      key.push_back('\0');
      AppendAttributeKey(key, attribute);
    }
    for (const OutputSpec& spec : outputs) {
      key.push_back(static_cast<char>(spec.dtype));
      AppendKeyBytes(key, spec.dims.data(), spec.dims.size() * sizeof(int64_t));
      key.push_back('\0');
    }
    return key;
  }

  // Creates the output values of `node` and either appends it to the graph
  // or, when all its inputs are constants, runs it on the host and makes its
  // outputs constants; a node repeating an emitted one gets that node's
  // values (Note [Repeated nodes]). Returns the output ids.
  absl::StatusOr<std::vector<ValueId>> Emit(BoundNode node,
                                            std::vector<OutputSpec> outputs) override {
    uint64_t output_bytes = 0;
    for (const OutputSpec& spec : outputs) {
      const std::optional<uint64_t> bytes = TensorBytes(spec.dims, spec.dtype);
      if (!bytes.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("node '", node.name, "' (", node.op_type,
                                                       "): output of dims ",
                                                       DimsToString(spec.dims), " is too large"));
      }
      output_bytes += *bytes;
    }
    const bool foldable =
        !node.inputs.empty() && std::all_of(node.inputs.begin(), node.inputs.end(),
                                            [this](ValueId id) { return IsConstant(id); });
    const bool makes_graph_output =
        std::any_of(outputs.begin(), outputs.end(),
                    [this](const OutputSpec& spec) { return IsGraphOutput(spec.name); });
    std::string key;
    if (!makes_graph_output) {
      key = NodeKey(node, outputs);
      if (auto same = emitted_.find(key); same != emitted_.end()) return same->second;
    }
    node.outputs.clear();
    for (OutputSpec& spec : outputs) {
      node.outputs.push_back(
          AddValue(std::move(spec.name), spec.dtype, std::move(spec.dims), nullptr));
    }
    std::vector<ValueId> ids = node.outputs;
    if (!key.empty()) emitted_.emplace(std::move(key), ids);
    if (!foldable) {
      graph_.nodes.push_back(std::move(node));
      return ids;
    }
    if (absl::Status reserved = ReserveFolded(output_bytes); !reserved.ok()) {
      return absl::Status(reserved.code(),
                          absl::StrCat("folding constant node '", node.name, "' (", node.op_type,
                                       ") at bind time: ", reserved.message()));
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
                          absl::StrCat("folding constant node '", node.name, "' (", node.op_type,
                                       ") at bind time: ", status.message()));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      graph_.values[ids[i]].constant = std::make_shared<const HostTensor>(std::move(results[i]));
    }
    return ids;
  }

  absl::Status ReserveFolded(uint64_t bytes) override {
    if (bytes > fold_bound_ - folded_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrCat("folded constants would take ", folded_bytes_ + bytes,
                       " bytes of host memory, past binding's bound of ", fold_bound_, " (",
                       kFoldSlack >> 20, " MiB and four times the model's initializers)"));
    }
    folded_bytes_ += bytes;
    return absl::OkStatus();
  }

  // --- Node dispatch -------------------------------------------------------

  // The registry's checks (Note [Op registry]), then the op's bind rule.
  absl::Status BindNode(const Node& node, size_t index) {
    const std::string name = node.name.empty() ? absl::StrCat(node.op_type, "_", index) : node.name;
    const OpDef* op = FindOp(node.op_type);
    if (op == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("node '", name, "': op '", node.op_type,
                       "' is not supported; supported ops: ", absl::StrJoin(SupportedOps(), ", ")));
    }
    BindContext ctx(this, &graph_, &node, name, model_.opset);
    if (model_.opset < op->since_opset) {
      return ctx.Unsupported("opset ", model_.opset, " is older than ", op->since_opset,
                             ", the oldest whose ", op->name, " the runtime implements");
    }
    for (const auto& [attribute, value] : node.attributes) {
      if (std::find(op->attributes.begin(), op->attributes.end(), attribute) ==
          op->attributes.end()) {
        return ctx.Unsupported(
            "attribute '", attribute, "' is not supported",
            op->attributes.empty()
                ? std::string(" (the op takes none)")
                : absl::StrCat(" (supported: ", absl::StrJoin(op->attributes, ", "), ")"));
      }
    }
    size_t input_count = node.inputs.size();
    while (input_count > 0 && node.inputs[input_count - 1].empty()) --input_count;
    const Arity arity = op->ArityAt(model_.opset);
    if (input_count < arity.min || input_count > arity.max) {
      return ctx.Error("expected ", arity.min,
                       arity.max == arity.min         ? std::string()
                       : arity.max == kVariadicInputs ? std::string(" or more")
                                                      : absl::StrCat(" to ", arity.max),
                       " inputs at opset ", model_.opset, ", got ", input_count);
    }
    for (size_t i = 0; i < input_count; ++i) {
      const std::string& input = node.inputs[i];
      if (input.empty()) {
        if (op->omissible_input < 0 || static_cast<int>(i) < op->omissible_input) {
          return ctx.Error("input ", i, " is required but omitted");
        }
        ctx.inputs_.push_back(kOmitted);
        continue;
      }
      auto it = by_name_.find(input);
      if (it == by_name_.end()) {
        return ctx.Error("input ", i, " '", input, "' is not defined by a graph input, ",
                         "an initializer or an earlier node");
      }
      // Shape operands became inputs in later opsets; an op whose arity at
      // this opset has no such input never reaches here with one.
      if (op->IsShapeOperand(i) && !graph_.values[it->second].is_constant()) {
        return ctx.Error(op->InputLabel(i), " (value '", input,
                         "') must be known at plan time: a constant, an initializer, a "
                         "known input or a foldable shape computation");
      }
      ctx.inputs_.push_back(it->second);
    }
    ctx.outputs_ = node.outputs;
    while (!ctx.outputs_.empty() && ctx.outputs_.back().empty()) ctx.outputs_.pop_back();
    if (ctx.outputs_.empty()) return ctx.Error("has no outputs");
    return op->bind(ctx);
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
  // Note [Repeated nodes]: the outputs of each node emitted, by NodeKey.
  std::map<std::string, std::vector<ValueId>> emitted_;
  // Note [Folding bound]: what this binding may fold, and has folded.
  uint64_t fold_bound_ = kFoldSlack;
  uint64_t folded_bytes_ = 0;
};

}  // namespace

absl::StatusOr<BoundGraph> BindModel(const Model& model, const BindOptions& options) {
  return Binder(model, options).Bind();
}

absl::StatusOr<std::map<std::string, DType>> InferValueDTypes(const Model& model,
                                                              const BindOptions& options) {
  return Binder(model, options).ValueDTypes();
}

absl::StatusOr<BoundGraph> BoundGraphs::At(const GraphKey& key) {
  const absl::MutexLock lock(&mu_);
  if (const auto found = bound_.find(key); found != bound_.end()) return found->second;
  ASSIGN_OR_RETURN(const BindOptions options, BindOptionsAt(model_, key));
  ASSIGN_OR_RETURN(BoundGraph graph, BindModel(model_, options));
  return bound_.emplace(key, std::move(graph)).first->second;
}

}  // namespace graphserve
