#pragma once
// What a bind rule (runtime/op_registry.h) sees of the binding in progress:
// the model node with its inputs resolved to bound values, typed attribute
// lookups and checks whose errors name the node, and the emission of
// canonical bound nodes (folded to constants when all their inputs are
// known). The engine behind it is runtime/bind.cc.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/tensor.h"
#include "runtime/bound_graph.h"
#include "runtime/ir.h"

namespace graphserve {

inline constexpr ValueId kOmitted = -1;  // an optional input the model leaves out ("")

// What a node computes for one output, before it becomes a BoundValue.
struct OutputSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Dims dims;
};

// Product of dims[begin, end).
int64_t Product(const Dims& dims, size_t begin, size_t end);

// Multidirectional (numpy) broadcasting of two shapes; nullopt when a pair of
// dims is neither equal nor 1.
std::optional<Dims> BroadcastPair(const Dims& a, const Dims& b);

class BindContext {
 public:
  // --- The node --------------------------------------------------------------
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& op() const { return node_->op_type; }
  [[nodiscard]] const Attributes& attrs() const { return node_->attributes; }
  [[nodiscard]] int64_t opset() const { return opset_; }
  // One entry per model input after trailing omitted inputs are dropped;
  // kOmitted where the model leaves an optional input out.
  [[nodiscard]] const std::vector<ValueId>& inputs() const { return inputs_; }
  [[nodiscard]] size_t num_inputs() const { return inputs_.size(); }
  [[nodiscard]] ValueId input(size_t i) const { return inputs_[i]; }
  [[nodiscard]] bool has_input(size_t i) const {
    return i < inputs_.size() && inputs_[i] != kOmitted;
  }
  // The model's output names with trailing "" dropped.
  [[nodiscard]] const std::vector<std::string>& outputs() const { return outputs_; }

  // References into the values are valid until the next Emit*/AddConstant,
  // which may add values: copy what a rule reads after emitting.
  [[nodiscard]] const BoundValue& value(ValueId id) const { return graph_->values[id]; }
  [[nodiscard]] bool is_constant(ValueId id) const { return graph_->values[id].is_constant(); }
  [[nodiscard]] const BoundValue& in(size_t i) const { return value(inputs_[i]); }
  [[nodiscard]] const Dims& in_dims(size_t i) const { return in(i).dims; }
  [[nodiscard]] DType in_dtype(size_t i) const { return in(i).dtype; }

  // --- Errors ---------------------------------------------------------------
  // InvalidArgument "node '<name>' (<op>): <args...>".
  template <typename... Args>
  [[nodiscard]] absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(Prefix(), args...));
  }
  // Unimplemented, for valid ONNX that the runtime does not support.
  template <typename... Args>
  [[nodiscard]] absl::Status Unsupported(const Args&... args) const {
    return absl::UnimplementedError(absl::StrCat(Prefix(), args...));
  }
  // Prefixes an error (an attribute lookup's) with the node.
  [[nodiscard]] absl::Status Annotate(const absl::Status& status) const;

  // --- Attributes -----------------------------------------------------------
  absl::StatusOr<int64_t> IntAttrOr(const std::string& name, int64_t default_value) const;
  absl::StatusOr<float> FloatAttrOr(const std::string& name, float default_value) const;
  absl::StatusOr<std::vector<int64_t>> IntsAttrOr(const std::string& name,
                                                  std::vector<int64_t> default_value) const;
  absl::StatusOr<std::string> StringAttrOr(const std::string& name,
                                           std::string default_value) const;
  [[nodiscard]] bool has_attr(const std::string& name) const { return attrs().count(name) != 0; }

  // --- Checks ---------------------------------------------------------------
  absl::Status CheckDType(size_t input, std::vector<DType> allowed) const;
  absl::Status CheckSameDType(size_t a, size_t b) const;
  absl::StatusOr<Dims> Broadcast(const Dims& a, const Dims& b) const;
  // Normalises `axis` for a tensor of `rank` dims (ONNX range [-rank, rank-1]).
  absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const char* what) const;
  // Sorted, non-negative, duplicate-free axes.
  absl::StatusOr<std::vector<int64_t>> NormalizeAxes(std::vector<int64_t> axes, int64_t rank) const;
  // The values of constant int64 or int32 input `input` (1-D or scalar).
  absl::StatusOr<std::vector<int64_t>> ConstantInts(size_t input) const;
  // The value of a constant scalar input of a float type (float32, float16,
  // bfloat16) as float, nullopt when omitted.
  absl::StatusOr<std::optional<float>> ConstantScalar(size_t input) const;
  // Axes that ONNX lists as an attribute before `input_since_opset` and as
  // input 1 from it on; nullopt when neither is given.
  absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOperand(int64_t input_since_opset) const;

  // --- Emission -------------------------------------------------------------
  // Emits the canonical node for the model node: its outputs take the
  // model's names, in order (Note [Bound node outputs] in bind.h).
  absl::Status EmitModelNode(std::string op_type, std::vector<ValueId> inputs, Attributes attrs,
                             std::vector<OutputSpec> outputs);
  // A one-output node of the model's op type.
  absl::Status EmitSimple(std::vector<ValueId> inputs, Attributes attrs, DType dtype, Dims dims);
  // The model node's only output is input `input` unchanged.
  absl::Status EmitIdentity(size_t input);
  // The same, with no node at all: the output's name refers to the input's
  // value, so that the node breaks no chain the executors fuse (a Cast to its
  // input's own type). A graph output still gets EmitIdentity's node: a
  // graph output is a node's.
  absl::Status ForwardInput(size_t input);
  // An extra node binding adds ("<node>/<suffix>"), with one output named
  // "<node>/<suffix>_output"; returns the output's id.
  absl::StatusOr<ValueId> EmitHelper(const std::string& suffix, std::string op_type,
                                     std::vector<ValueId> inputs, Attributes attrs, DType dtype,
                                     Dims dims);
  // A node of `op_type` whose one output is the model node's output `output`
  // ("<node>/<output>"): how a multi-output op (Split) binds as several
  // canonical nodes. An unused (unnamed) output emits nothing.
  absl::Status EmitForOutput(size_t output, std::string op_type, std::vector<ValueId> inputs,
                             Attributes attrs, DType dtype, Dims dims);
  // Counts `bytes` of constants a rule is about to build on the host against
  // the binding's bound (Note [Folding bound] in bind.cc).
  absl::Status ReserveConstantBytes(uint64_t bytes);
  // A zero-filled tensor for a rule to compute at bind time, so counted.
  absl::StatusOr<HostTensor> NewConstant(DType dtype, Dims dims);
  // A model output known at bind time without running a kernel.
  absl::Status DefineConstantOutput(HostTensor tensor);
  // A constant binding derives (folded weights); returns its id.
  ValueId AddConstant(std::string name, HostTensor tensor);

  // Implementation details follow.
  // The binding in progress (runtime/bind.cc): values, names, and the
  // emission of a bound node, which folds it when all its inputs are known.
  class Engine {
   public:
    virtual ~Engine() = default;
    virtual ValueId AddValue(std::string name, DType dtype, Dims dims,
                             std::shared_ptr<const HostTensor> constant) = 0;
    virtual absl::Status Define(const std::string& name, ValueId id) = 0;
    virtual bool IsGraphOutput(const std::string& name) const = 0;
    virtual absl::StatusOr<std::vector<ValueId>> Emit(BoundNode node,
                                                      std::vector<OutputSpec> outputs) = 0;
    // Counts `bytes` more of folded constants; an error past the bound.
    virtual absl::Status ReserveFolded(uint64_t bytes) = 0;
  };
  BindContext(Engine* engine, BoundGraph* graph, const Node* node, std::string name, int64_t opset)
      : engine_(engine), graph_(graph), node_(node), name_(std::move(name)), opset_(opset) {}
  std::vector<ValueId> inputs_;
  std::vector<std::string> outputs_;

 private:
  [[nodiscard]] std::string Prefix() const {
    return absl::StrCat("node '", name_, "' (", node_->op_type, "): ");
  }

  Engine* engine_;
  BoundGraph* graph_;
  const Node* node_;
  std::string name_;
  int64_t opset_;
};

// A string attribute read as an enum: `choices` pairs ONNX's spellings with
// the values; any other spelling is an error naming them all.
template <typename Enum, size_t N>
absl::StatusOr<Enum> EnumAttr(const BindContext& ctx, const std::string& name,
                              const std::string& default_value,
                              const std::pair<const char*, Enum> (&choices)[N]) {
  absl::StatusOr<std::string> value = ctx.StringAttrOr(name, default_value);
  if (!value.ok()) return value.status();
  std::vector<std::string> names;
  for (const auto& [choice, e] : choices) {
    if (*value == choice) return e;
    names.push_back(choice);
  }
  return ctx.Error(name, " '", *value, "' is not one of ", absl::StrJoin(names, ", "));
}

}  // namespace graphserve
