#include "runtime/fusion.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "common/half.h"
#include "runtime/ir.h"
#include "runtime/nn_node_params.h"

namespace graphserve {

bool IsAliasOp(const std::string& op_type) {
  return op_type == "Identity" || op_type == "Reshape" || op_type == "Flatten" ||
         op_type == "Squeeze" || op_type == "Unsqueeze";
}

bool IsPointwiseOp(const std::string& op_type) {
  static const auto* const kOps = new std::set<std::string>{
      "Add", "Sub",     "Mul",  "Div", "Pow",  "Max", "Min", "Sqrt",       "Exp",
      "Log", "Sigmoid", "Tanh", "Erf", "Relu", "Abs", "Neg", "Reciprocal", "LeakyRelu"};
  return kOps->count(op_type) > 0;
}

std::optional<float> FloatScalar(const BoundValue& value) {
  if (!value.is_constant() || value.constant->num_elements() != 1) return std::nullopt;
  switch (value.dtype) {
    case DType::kFloat32:
      return value.constant->data<float>()[0];
    case DType::kFloat16:
      return Widen(value.constant->data<Half>()[0]);
    case DType::kBFloat16:
      return Widen(value.constant->data<BFloat16>()[0]);
    default:
      return std::nullopt;
  }
}

bool ComputesInFloat(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

bool IsColumnBias(const BoundValue& value, int64_t n) {
  // cuBLASLt's bias epilogue reads the GEMM's output type (Note [GEMM
  // datatypes]); binding gives the Add or C that type.
  const bool gemm_type = value.dtype == DType::kFloat32 || value.dtype == DType::kFloat16 ||
                         value.dtype == DType::kBFloat16;
  if (!value.is_constant() || !gemm_type || value.dims.empty()) return false;
  if (value.dims.back() != n) return false;
  for (size_t i = 0; i + 1 < value.dims.size(); ++i) {
    if (value.dims[i] != 1) return false;
  }
  return true;
}

int64_t GemmColumns(const BoundGraph& graph, const BoundNode& node) {
  const Dims& b = graph.value(node.inputs[1]).dims;
  if (node.op_type == "Gemm") return IntAttr(node.attributes, "transB") != 0 ? b[0] : b[1];
  return b.size() == 1 ? 1 : b.back();  // MatMul: a 1-D B gives one column
}

namespace {

// What an epilogue reading its residual in the other layout costs, in
// transposes: one strided read, no write (Note [Channels-last convolutions]).
constexpr double kCrossLayoutEpilogueCost = 0.5;
// A windowed pool reads and writes one layout: a value on either side that
// the other's layout would need is kept out of channels last by this.
constexpr double kPoolLayoutChangeCost = 1e9;

// Gemm with a C that contributes (beta != 0).
bool GemmUsesC(const BoundNode& node) {
  return node.op_type == "Gemm" && node.inputs.size() > 2 &&
         FloatAttr(node.attributes, "beta") != 0.0f;
}

// A GEMM whose B is a 2-D float32 constant it reads N-major (Note [K-major
// weights]).
bool HasNMajorFloat32Weight(const BoundGraph& graph, const BoundNode& node) {
  const BoundValue& b = graph.value(node.inputs[1]);
  const bool b_transposed = node.op_type == "Gemm" && IntAttr(node.attributes, "transB") != 0;
  return b.is_constant() && b.dtype == DType::kFloat32 && b.dims.size() == 2 && !b_transposed;
}

// Whether `mode` fuses a float32 attention chain whose scores are
// `scores_dims` ([batch..., query rows, keys]).
bool FusesFloat32Attention(FuseAttention mode, const Dims& scores_dims) {
  if (mode == FuseAttention::kAll) return true;
  const int64_t keys = scores_dims.back();
  const int64_t query_rows = NumElements(scores_dims) / std::max<int64_t>(keys, 1);
  return mode == FuseAttention::kHalfAndShort && keys <= kShortFloat32AttentionKeys &&
         query_rows >= kMinFusedFloat32AttentionRows;
}

}  // namespace

bool GemmCIsBias(const BoundGraph& graph, const BoundNode& node) {
  return GemmUsesC(node) && FloatAttr(node.attributes, "beta") == 1.0f &&
         IsColumnBias(graph.value(node.inputs[2]), GemmColumns(graph, node));
}

bool GemmReadsC(const BoundGraph& graph, const BoundNode& node) {
  return GemmUsesC(node) && !GemmCIsBias(graph, node);
}

namespace {

// Nodes that read each value.
std::vector<std::vector<int>> ConsumersOf(const BoundGraph& graph) {
  std::vector<std::vector<int>> consumers(graph.values.size());
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (ValueId input : graph.nodes[i].inputs) consumers[input].push_back(i);
  }
  return consumers;
}

bool IsGraphOutput(const BoundGraph& graph, ValueId id) {
  for (ValueId output : graph.outputs) {
    if (output == id) return true;
  }
  return false;
}

// The single consumer of `value` when it has exactly one and is not a graph
// output (so the value need not be materialised if the consumer is fused).
std::optional<int> SoleConsumer(const BoundGraph& graph,
                                const std::vector<std::vector<int>>& consumers, ValueId value) {
  if (consumers[value].size() != 1 || IsGraphOutput(graph, value)) return std::nullopt;
  return consumers[value][0];
}

// The value of a float constant (ComputesInFloat) holding one finite, nonzero
// element (a scale a GEMM can take as alpha, which is float whatever the
// operands: zero would let cuBLASLt skip reading A and B, losing their NaNs).
std::optional<float> ScaleConstant(const BoundValue& value) {
  const std::optional<float> v = FloatScalar(value);
  if (!v || !std::isfinite(*v) || *v == 0.0f) return std::nullopt;
  return v;
}

// How far a constant the exporter wrote as `target` may be from it once
// stored in `dtype`: float32's 1e-6 relative (a few ulps, for constants
// computed in float), the 16-bit floats' unit roundoff (half an ulp), since
// the exporter's double constant is rounded once to the model's type
// (sqrt(2) is 1.4140625 in float16 and bfloat16).
float ConstantTolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 0x1p-11f;
    case DType::kBFloat16:
      return 0x1p-8f;
    default:
      return 1e-6f;
  }
}

// A float constant holding one element equal to `target` within
// ConstantTolerance of its type. Its dims are checked by the caller through
// the result's dims.
bool IsScalarConstant(const BoundValue& value, float target) {
  const std::optional<float> v = FloatScalar(value);
  return v && std::fabs(*v - target) <= ConstantTolerance(value.dtype) * std::fabs(target);
}

// `from` broadcasts to `to` under numpy rules.
bool BroadcastsTo(const Dims& from, const Dims& to) {
  if (from.size() > to.size()) return false;
  const size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[offset + i]) return false;
  }
  return true;
}

// The node producing each value; -1 for inputs and constants.
std::vector<int> ProducersOf(const BoundGraph& graph) {
  std::vector<int> producers(graph.values.size(), -1);
  for (int i = 0; i < static_cast<int>(graph.nodes.size()); ++i) {
    for (ValueId output : graph.nodes[i].outputs) producers[output] = i;
  }
  return producers;
}

// For a two-input node: the input other than `known` when the other one is
// `known` (either order); nullopt otherwise.
std::optional<ValueId> OtherInput(const BoundNode& node, ValueId known) {
  if (node.inputs.size() != 2) return std::nullopt;
  if (node.inputs[0] == known) return node.inputs[1];
  if (node.inputs[1] == known) return node.inputs[0];
  return std::nullopt;
}

class FusionPlanner {
 public:
  FusionPlanner(const BoundGraph& graph, const FusionOptions& options)
      : graph_(graph), options_(options) {}

  FusionPlan Plan() {
    consumers_ = ConsumersOf(graph_);
    producers_ = ProducersOf(graph_);
    absorbed_.assign(graph_.nodes.size(), false);
    plan_.alias_root.resize(graph_.values.size());
    for (size_t i = 0; i < graph_.values.size(); ++i) {
      plan_.alias_root[i] = static_cast<ValueId>(i);
    }
    plan_.alias_offset.assign(graph_.values.size(), 0);
    // Elementwise chains first: a chain's nodes need not be contiguous in the
    // node order (PyTorch may emit the 0.5 Mul before the Div), so all are
    // found before any node becomes a step.
    if (options_.fuse) {
      for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
        if (absorbed_[i]) continue;
        if (std::optional<ErfGeluMatch> match = MatchErfGelu(i)) {
          for (int n : match->nodes) absorbed_[n] = true;
          FusedStep step;
          step.kind = StepKind::kErfGelu;
          step.nodes = match->nodes;
          step.anchor = match->nodes.front();
          step.inputs = {match->x};
          step.outputs = {match->y};
          Add(std::move(step));
          ++plan_.erf_gelus;
        }
      }
    }
    // Attention before the GEMMs, which would take its MatMuls.
    if (options_.fuse && options_.fuse_attention != FuseAttention::kNone) {
      TakeEach(&FusionPlanner::MatchAttention, plan_.attentions);
    }
    // The library steps take their epilogues before pointwise regions form,
    // so a Conv keeps its residual Add and activation.
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (absorbed_[i]) continue;
      const std::string& op = graph_.nodes[i].op_type;
      if (op == "Gemm" || op == "MatMul") {
        absorbed_[i] = true;
        PlanGemm(i);
      } else if (op == "Conv") {
        absorbed_[i] = true;
        PlanConv(i);
      }
    }
    if (options_.fuse) {
      // After the GEMMs, which take a scale before the mask Add, and a
      // constant mask that is a column bias into their epilogue.
      TakeEach(&FusionPlanner::MatchMaskedSoftmax, plan_.masked_softmaxes);
      TakeEach(&FusionPlanner::MatchAddLayerNorm, plan_.add_layer_norms);
      for (int i = static_cast<int>(graph_.nodes.size()) - 1; i >= 0; --i) {
        if (absorbed_[i]) continue;
        if (std::optional<FusedStep> region = MatchPointwiseRegion(i)) {
          for (int n : region->nodes) absorbed_[n] = true;
          ++plan_.pointwise_regions;
          plan_.fused_into_pointwise += static_cast<int>(region->nodes.size());
          Add(*std::move(region));
        }
      }
    }
    const std::vector<bool> feeds_output = FeedsGraphOutputByAlias();
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (absorbed_[i]) continue;
      absorbed_[i] = true;
      const BoundNode& node = graph_.nodes[i];
      const std::optional<size_t> view =
          feeds_output[i] ? std::nullopt : ContiguousViewOffset(node);
      if (IsAliasNode(node) || view.has_value()) {
        plan_.alias_root[node.outputs[0]] = plan_.alias_root[node.inputs[0]];
        plan_.alias_offset[node.outputs[0]] = plan_.alias_offset[node.inputs[0]] + view.value_or(0);
        if (view.has_value()) ++plan_.contiguous_views;
      } else {
        FusedStep step;
        step.nodes = {i};
        step.anchor = i;
        step.inputs = node.inputs;
        step.outputs = node.outputs;
        Add(std::move(step));
      }
    }
    // Each step takes the place of its last node: a fused residual may be
    // computed after the Conv it is added to (ResNet's downsample branch).
    std::stable_sort(by_last_node_.begin(), by_last_node_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [last, step] : by_last_node_) plan_.steps.push_back(std::move(step));
    if (options_.channels_last_convs) ChooseConvLayouts();
    return std::move(plan_);
  }

 private:
  void Add(FusedStep step) {
    std::sort(step.nodes.begin(), step.nodes.end());
    const int last = step.nodes.back();
    by_last_node_.emplace_back(last, std::move(step));
  }

  // An alias op, or a Transpose that moves only dims of extent 1 (the
  // batch-first and sequence-first layouts of one sequence): its output is
  // its input's bytes.
  bool IsAliasNode(const BoundNode& node) const {
    if (IsAliasOp(node.op_type)) return true;
    if (node.op_type != "Transpose" || node.inputs.size() != 1 || node.outputs.size() != 1) {
      return false;
    }
    const Dims& dims = graph_.value(node.inputs[0]).dims;
    const std::vector<int64_t> perm = IntsAttr(node.attributes, "perm");
    if (perm.size() != dims.size()) return false;
    int64_t last = -1;
    for (int64_t d : perm) {
      if (d < 0 || static_cast<size_t>(d) >= dims.size()) return false;
      if (dims[d] == 1) continue;
      if (d < last) return false;
      last = d;
    }
    return true;
  }

  // Note [Contiguous views]: the byte offset of the block `node` takes from
  // its data when it is a Gather that may be one; nullopt otherwise.
  std::optional<size_t> ContiguousViewOffset(const BoundNode& node) const {
    if (node.op_type != "Gather" || node.inputs.size() != 2 || node.outputs.size() != 1) {
      return std::nullopt;
    }
    const BoundValue& data = graph_.value(node.inputs[0]);
    const BoundValue& indices = graph_.value(node.inputs[1]);
    if (!indices.is_constant() || !indices.dims.empty() || indices.dtype != DType::kInt64) {
      return std::nullopt;
    }
    const int64_t axis = IntAttr(node.attributes, "axis");
    if (axis < 0 || static_cast<size_t>(axis) >= data.dims.size()) return std::nullopt;
    for (int64_t d = 0; d < axis; ++d) {
      if (data.dims[d] != 1) return std::nullopt;
    }
    const int64_t extent = data.dims[axis];
    int64_t index = indices.constant->data<int64_t>()[0];
    if (index < 0) index += extent;
    if (index < 0 || index >= extent) return std::nullopt;  // the kernel names the error
    const size_t offset = static_cast<size_t>(index) * (data.bytes() / static_cast<size_t>(extent));
    if (offset % kViewAlignment != 0) return std::nullopt;
    return offset;
  }

  // Per node: whether a graph output is its output or is reached from it
  // through alias ops and possible views only (Note [Contiguous views]).
  std::vector<bool> FeedsGraphOutputByAlias() const {
    std::vector<bool> feeds(graph_.nodes.size(), false);
    for (ValueId output : graph_.outputs) {
      for (ValueId v = output;;) {
        const int producer = producers_[v];
        if (producer < 0) break;
        feeds[producer] = true;
        const BoundNode& node = graph_.nodes[producer];
        if (!IsAliasNode(node) && node.op_type != "Gather") break;
        v = node.inputs[0];
      }
    }
    return feeds;
  }

  // The exact GELU chain PyTorch exports for nn.GELU (approximate='none'):
  //   d = Div(x, sqrt(2)) | Mul(x, 1/sqrt(2));  e = Erf(d);  a = Add(e, 1)
  //   then  y = Mul(Mul(x, a), 0.5)  or  y = Mul(Mul(x, 0.5), a)
  // with Add and Mul operands in either order. Every intermediate has one
  // reader and is no graph output, every value has x's type, one that
  // ComputesInFloat, and x's dims (x is not broadcast), and both x operands
  // are the same value. The constants may be the exporter's rounded to x's
  // type (Note [16-bit fusions]).
  struct ErfGeluMatch {
    ValueId x = -1;
    ValueId y = -1;
    std::vector<int> nodes;  // node order ascending; the last one writes y
  };

  // One output of x's type and dims.
  bool IsLikeX(const BoundNode& node, const BoundValue& x) const {
    if (node.outputs.size() != 1) return false;
    const BoundValue& out = graph_.value(node.outputs[0]);
    return out.dtype == x.dtype && out.dims == x.dims;
  }

  // The sole reader of node's output when it is of type `op_type` and not yet
  // absorbed.
  std::optional<int> NextNode(const BoundNode& node, const char* op_type) const {
    std::optional<int> next = SoleConsumer(graph_, consumers_, node.outputs[0]);
    if (!next || absorbed_[*next] || graph_.nodes[*next].op_type != op_type) return std::nullopt;
    return next;
  }

  // Starts at the Div (or Mul by 1/sqrt(2)) at `node_index`.
  std::optional<ErfGeluMatch> MatchErfGelu(int node_index) const {
    constexpr float kSqrt2 = 1.41421356f;
    constexpr float kInvSqrt2 = 0.70710678f;
    const BoundNode& scale = graph_.nodes[node_index];
    if (scale.inputs.size() != 2 || scale.outputs.size() != 1) return std::nullopt;
    ValueId x = -1;
    if (scale.op_type == "Div") {
      if (!IsScalarConstant(graph_.value(scale.inputs[1]), kSqrt2)) return std::nullopt;
      x = scale.inputs[0];
    } else if (scale.op_type == "Mul") {
      if (IsScalarConstant(graph_.value(scale.inputs[1]), kInvSqrt2)) {
        x = scale.inputs[0];
      } else if (IsScalarConstant(graph_.value(scale.inputs[0]), kInvSqrt2)) {
        x = scale.inputs[1];
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
    const BoundValue& xv = graph_.value(x);
    if (xv.is_constant() || !ComputesInFloat(xv.dtype) || !IsLikeX(scale, xv)) {
      return std::nullopt;
    }
    ErfGeluMatch match;
    match.x = x;
    match.nodes.push_back(node_index);

    const std::optional<int> erf = NextNode(scale, "Erf");
    if (!erf || graph_.nodes[*erf].inputs.size() != 1 || !IsLikeX(graph_.nodes[*erf], xv)) {
      return std::nullopt;
    }
    match.nodes.push_back(*erf);
    const BoundNode& erf_node = graph_.nodes[*erf];

    const std::optional<int> add = NextNode(erf_node, "Add");
    if (!add || !IsLikeX(graph_.nodes[*add], xv)) return std::nullopt;
    const BoundNode& add_node = graph_.nodes[*add];
    const std::optional<ValueId> one = OtherInput(add_node, erf_node.outputs[0]);
    if (!one || !IsScalarConstant(graph_.value(*one), 1.0f)) return std::nullopt;
    match.nodes.push_back(*add);

    // a = 1 + erf(...) times x, times 0.5, in either grouping.
    const std::optional<int> mul = NextNode(add_node, "Mul");
    if (!mul || !IsLikeX(graph_.nodes[*mul], xv)) return std::nullopt;
    const BoundNode& mul_node = graph_.nodes[*mul];
    const std::optional<ValueId> other = OtherInput(mul_node, add_node.outputs[0]);
    if (!other) return std::nullopt;
    if (*other == x) {
      // m = x * a, then y = m * 0.5.
      match.nodes.push_back(*mul);
      const std::optional<int> half = NextNode(mul_node, "Mul");
      if (!half || !IsLikeX(graph_.nodes[*half], xv)) return std::nullopt;
      const std::optional<ValueId> c = OtherInput(graph_.nodes[*half], mul_node.outputs[0]);
      if (!c || !IsScalarConstant(graph_.value(*c), 0.5f)) return std::nullopt;
      match.nodes.push_back(*half);
    } else {
      // h = x * 0.5 (read by this Mul only), then y = h * a.
      const int half = producers_[*other];
      if (half < 0 || absorbed_[half] || graph_.nodes[half].op_type != "Mul" ||
          SoleConsumer(graph_, consumers_, *other) != std::optional<int>(*mul) ||
          !IsLikeX(graph_.nodes[half], xv)) {
        return std::nullopt;
      }
      const std::optional<ValueId> c = OtherInput(graph_.nodes[half], x);
      if (!c || !IsScalarConstant(graph_.value(*c), 0.5f)) return std::nullopt;
      match.nodes.push_back(half);
      match.nodes.push_back(*mul);
    }
    std::sort(match.nodes.begin(), match.nodes.end());
    match.y = graph_.nodes[match.nodes.back()].outputs[0];
    return match;
  }

  // A Mul of `value` by a scale constant, or a Div by one (as 1/s):
  // `node` and the factor.
  struct Scaling {
    int node = -1;
    float factor = 1.0f;
    ValueId scaled = -1;  // the value scaled
  };

  // The sole reader of `value` when it is not yet absorbed, is no graph
  // output and runs `op_type`.
  std::optional<int> SoleReader(ValueId value, const char* op_type) const {
    const std::optional<int> reader = SoleConsumer(graph_, consumers_, value);
    if (!reader || absorbed_[*reader] || graph_.nodes[*reader].op_type != op_type) {
      return std::nullopt;
    }
    return reader;
  }

  // The node producing `value` when it runs `op_type`, is not yet absorbed and
  // `value` has no other reader nor is a graph output.
  std::optional<int> SoleProducer(ValueId value, const char* op_type) const {
    const int producer = producers_[value];
    if (producer < 0 || absorbed_[producer] || graph_.nodes[producer].op_type != op_type ||
        consumers_[value].size() != 1 || IsGraphOutput(graph_, value)) {
      return std::nullopt;
    }
    return producer;
  }

  // A Mul of `value` by a scalar float constant, or a Div of it by one, read
  // by `reader` alone: the node, the scaled value and the factor.
  std::optional<Scaling> ScaledOperand(ValueId value) const {
    const int node_index = producers_[value];
    if (node_index < 0 || absorbed_[node_index] || consumers_[value].size() != 1 ||
        IsGraphOutput(graph_, value)) {
      return std::nullopt;
    }
    const BoundNode& node = graph_.nodes[node_index];
    if (node.inputs.size() != 2 || (node.op_type != "Mul" && node.op_type != "Div")) {
      return std::nullopt;
    }
    for (size_t k = 0; k < 2; ++k) {
      const std::optional<float> c = FloatScalar(graph_.value(node.inputs[k]));
      if (!c || !std::isfinite(*c) || *c == 0.0f) continue;
      if (node.op_type == "Div" && k == 0) return std::nullopt;  // c / x is no scaling
      const ValueId scaled = node.inputs[1 - k];
      if (graph_.value(scaled).dims != graph_.value(value).dims) return std::nullopt;
      return Scaling{node_index, node.op_type == "Div" ? 1.0f / *c : *c, scaled};
    }
    return std::nullopt;
  }

  // Note [Fused attention]: the step of the Softmax at `node_index` with the
  // MatMuls around it, or nullopt.
  std::optional<FusedStep> MatchAttention(int node_index) const {
    const BoundNode& softmax = graph_.nodes[node_index];
    if (softmax.op_type != "Softmax" || softmax.inputs.size() != 1 ||
        softmax.outputs.size() != 1 || IntAttr(softmax.attributes, "inner") != 1) {
      return std::nullopt;
    }
    FusedStep step;
    step.kind = StepKind::kAttention;
    step.anchor = node_index;
    step.nodes = {node_index};
    AttentionFusion& fusion = step.attention;
    // Backwards: [Add mask] <- [scale] <- MatMul(q', k').
    ValueId scores = softmax.inputs[0];
    if (consumers_[scores].size() != 1 || IsGraphOutput(graph_, scores)) return std::nullopt;
    const Dims scores_dims = graph_.value(scores).dims;
    ValueId mask = -1;
    if (const std::optional<int> add = SoleProducer(scores, "Add")) {
      const BoundNode& add_node = graph_.nodes[*add];
      if (add_node.inputs.size() != 2) return std::nullopt;
      // The scores are the operand a MatMul (maybe scaled) produced.
      const auto from_matmul = [&](ValueId id) {
        if (std::optional<Scaling> scaling = ScaledOperand(id)) id = scaling->scaled;
        if (std::optional<int> cast = UpcastOf(id)) id = graph_.nodes[*cast].inputs[0];
        return SoleProducer(id, "MatMul").has_value();
      };
      const size_t k = from_matmul(add_node.inputs[0]) ? 0 : 1;
      if (!from_matmul(add_node.inputs[k])) return std::nullopt;
      mask = add_node.inputs[1 - k];
      if (!BroadcastsTo(graph_.value(mask).dims, scores_dims) ||
          graph_.value(mask).dtype != graph_.value(scores).dtype ||
          graph_.value(add_node.inputs[k]).dims != scores_dims) {
        return std::nullopt;
      }
      step.nodes.push_back(*add);
      scores = add_node.inputs[k];
    }
    if (std::optional<Scaling> scaling = ScaledOperand(scores)) {
      fusion.scale *= scaling->factor;
      step.nodes.push_back(scaling->node);
      scores = scaling->scaled;
    }
    if (const std::optional<int> cast = UpcastOf(scores)) {
      fusion.float_scores = true;
      step.nodes.push_back(*cast);
      scores = graph_.nodes[*cast].inputs[0];
    }
    const std::optional<int> qk = SoleProducer(scores, "MatMul");
    if (!qk) return std::nullopt;
    step.nodes.push_back(*qk);
    ValueId q = graph_.nodes[*qk].inputs[0];
    ValueId k = graph_.nodes[*qk].inputs[1];
    for (ValueId* operand : {&q, &k}) {
      if (std::optional<Scaling> scaling = ScaledOperand(*operand)) {
        fusion.scale *= scaling->factor;
        step.nodes.push_back(scaling->node);
        *operand = scaling->scaled;
      }
    }
    // Forwards: [IsNaN + Where] -> MatMul(p, v).
    ValueId p = softmax.outputs[0];
    if (IsGraphOutput(graph_, p)) return std::nullopt;
    if (consumers_[p].size() == 2) {
      const std::optional<NanGuard> guard = NanGuardOf(p);
      if (!guard) return std::nullopt;
      fusion.nan_to_zero = true;
      step.nodes.push_back(guard->is_nan);
      step.nodes.push_back(guard->where);
      p = guard->output;
    }
    const std::optional<int> pv = SoleReader(p, "MatMul");
    if (!pv || graph_.nodes[*pv].inputs[0] != p) return std::nullopt;
    step.nodes.push_back(*pv);
    ValueId v = graph_.nodes[*pv].inputs[1];
    ValueId out = graph_.nodes[*pv].outputs[0];
    // Float scores weigh a v cast up from the operands' type.
    if (fusion.float_scores) {
      const std::optional<int> cast = UpcastOf(v);
      if (!cast) return std::nullopt;
      step.nodes.push_back(*cast);
      v = graph_.nodes[*cast].inputs[0];
    }
    if (!AttentionShapesFit(q, k, v, out, scores_dims, fusion.float_scores)) return std::nullopt;
    if (graph_.value(q).dtype == DType::kFloat32 &&
        !FusesFloat32Attention(options_.fuse_attention, scores_dims)) {
      return std::nullopt;
    }
    q = TakeInputTransposes(q, fusion.q_perm, step.nodes);
    k = TakeInputTransposes(k, fusion.k_perm, step.nodes);
    v = TakeInputTransposes(v, fusion.v_perm, step.nodes);
    out = TakeOutputTransposes(out, fusion.out_perm, step.nodes);
    fusion.has_mask = mask >= 0;
    step.inputs = {q, k, v};
    if (fusion.has_mask) step.inputs.push_back(mask);
    step.outputs = {out};
    std::sort(step.nodes.begin(), step.nodes.end());
    return step;
  }

  // The dynamo exporter's guard after a Softmax, Where(IsNaN(p), 0, p), as
  // the only readers of `p`: its two nodes and its output.
  struct NanGuard {
    int is_nan;
    int where;
    ValueId output;
  };
  std::optional<NanGuard> NanGuardOf(ValueId p) const {
    if (consumers_[p].size() != 2 || IsGraphOutput(graph_, p)) return std::nullopt;
    int is_nan = consumers_[p][0];
    int where = consumers_[p][1];
    if (graph_.nodes[is_nan].op_type != "IsNaN") std::swap(is_nan, where);
    const BoundNode& is_nan_node = graph_.nodes[is_nan];
    const BoundNode& where_node = graph_.nodes[where];
    if (absorbed_[is_nan] || absorbed_[where] || is_nan_node.op_type != "IsNaN" ||
        where_node.op_type != "Where" || where_node.inputs.size() != 3 ||
        SoleConsumer(graph_, consumers_, is_nan_node.outputs[0]) != std::optional<int>(where) ||
        where_node.inputs[0] != is_nan_node.outputs[0] || where_node.inputs[2] != p ||
        FloatScalar(graph_.value(where_node.inputs[1])) != std::optional<float>(0.0f) ||
        graph_.value(where_node.outputs[0]).dims != graph_.value(p).dims) {
      return std::nullopt;
    }
    return NanGuard{is_nan, where, where_node.outputs[0]};
  }

  // Note [Masked softmax]: the step of the Softmax at `node_index` over its
  // last axis with the mask Add before it and the NaN guard after it (one of
  // them at least), or nullopt.
  std::optional<FusedStep> MatchMaskedSoftmax(int node_index) const {
    const BoundNode& softmax = graph_.nodes[node_index];
    if (softmax.op_type != "Softmax" || softmax.inputs.size() != 1 ||
        softmax.outputs.size() != 1 || IntAttr(softmax.attributes, "inner") != 1) {
      return std::nullopt;
    }
    const BoundValue& probabilities = graph_.value(softmax.outputs[0]);
    const Dims& dims = probabilities.dims;
    if (!ComputesInFloat(probabilities.dtype) || dims.size() < 2 ||
        dims.size() > kMaxMaskedSoftmaxRank) {
      return std::nullopt;
    }
    FusedStep step;
    step.kind = StepKind::kMaskedSoftmax;
    step.anchor = node_index;
    step.nodes = {node_index};
    step.inputs = {softmax.inputs[0]};
    if (const std::optional<int> add = SoleProducer(softmax.inputs[0], "Add")) {
      const BoundNode& add_node = graph_.nodes[*add];
      // The scores are the operand of the Softmax's dims; the mask broadcasts to them.
      const size_t k = graph_.value(add_node.inputs[0]).dims == dims ? 0 : 1;
      const BoundValue& scores = graph_.value(add_node.inputs[k]);
      const BoundValue& mask = graph_.value(add_node.inputs[1 - k]);
      if (scores.dims == dims && scores.dtype == probabilities.dtype &&
          mask.dtype == probabilities.dtype && BroadcastsTo(mask.dims, dims)) {
        step.nodes.push_back(*add);
        step.inputs = {add_node.inputs[k], add_node.inputs[1 - k]};
        step.softmax_has_mask = true;
      }
    }
    ValueId p = softmax.outputs[0];
    if (const std::optional<NanGuard> guard = NanGuardOf(p)) {
      step.nodes.push_back(guard->is_nan);
      step.nodes.push_back(guard->where);
      step.softmax_nan_to_zero = true;
      p = guard->output;
    }
    if (!step.softmax_has_mask && !step.softmax_nan_to_zero) return std::nullopt;
    step.outputs = {p};
    std::sort(step.nodes.begin(), step.nodes.end());
    return step;
  }

  // Note [Fused attention]: the Cast producing `value` for it alone from a
  // 16-bit float to float32, or nullopt.
  std::optional<int> UpcastOf(ValueId value) const {
    const std::optional<int> cast = SoleProducer(value, "Cast");
    if (!cast) return std::nullopt;
    const DType from = graph_.value(graph_.nodes[*cast].inputs[0]).dtype;
    if (graph_.value(value).dtype != DType::kFloat32 ||
        (from != DType::kFloat16 && from != DType::kBFloat16)) {
      return std::nullopt;
    }
    return cast;
  }

  // Note [Attention views]: from `value` back through the Transposes that
  // produce it for it alone, composing `perm`, each taken into `nodes`; the
  // value the step then reads.
  ValueId TakeInputTransposes(ValueId value, AttentionPerm& perm, std::vector<int>& nodes) const {
    while (true) {
      if (const std::optional<int> transpose = SoleProducer(value, "Transpose")) {
        const std::array<int, 4> p = TransposePerm(graph_.nodes[*transpose]);
        // value's dim j is its input's dim p[j].
        for (int& axis : perm) axis = p[axis];
        nodes.push_back(*transpose);
        value = graph_.nodes[*transpose].inputs[0];
      } else if (const std::optional<BatchedSwap> swap = BatchedSwapOf(value)) {
        for (int& axis : perm) axis = std::array<int, 4>{0, 1, 3, 2}[axis];
        nodes.push_back(swap->transpose);
        value = swap->source;
      } else {
        return value;
      }
    }
  }

  // Note [Transposed GEMM operands]: `value` as a swap of the last two dims
  // of another, made for its reader alone by one Transpose or by the batched
  // swap; the Transpose and the value swapped.
  struct LastTwoSwap {
    int transpose;
    ValueId source;
  };
  std::optional<LastTwoSwap> LastTwoSwapOf(ValueId value) const {
    if (const std::optional<BatchedSwap> swap = BatchedSwapOf(value)) {
      return LastTwoSwap{swap->transpose, swap->source};
    }
    const std::optional<int> transpose = SoleProducer(value, "Transpose");
    const int rank = static_cast<int>(graph_.value(value).dims.size());
    if (!transpose || rank < 2) return std::nullopt;
    std::vector<int64_t> swapped(rank);
    for (int i = 0; i < rank; ++i) swapped[i] = i;
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    std::vector<int64_t> perm = IntsAttr(graph_.nodes[*transpose].attributes, "perm");
    if (perm.empty()) perm = {1, 0};  // the default reverses: a swap at rank 2 only
    if (perm != swapped) return std::nullopt;
    return LastTwoSwap{*transpose, graph_.nodes[*transpose].inputs[0]};
  }

  // Note [Batch-swapped GEMM operands]: a MatMul of two operands with the
  // same batch dims (more than one matrix), neither broadcast.
  bool BatchesMatrices(const BoundNode& node) const {
    if (node.op_type != "MatMul") return false;
    const Dims& a = graph_.value(node.inputs[0]).dims;
    const Dims& b = graph_.value(node.inputs[1]).dims;
    if (a.size() < 3 || a.size() != b.size()) return false;
    const Dims batch(a.begin(), a.end() - 2);
    return batch == Dims(b.begin(), b.end() - 2) && NumElements(batch) > 1;
  }
  // The perm of a Transpose that moves dim `from` of a rank `rank` value to
  // position `to`, the others in order.
  static std::vector<int64_t> MovePerm(int64_t rank, int64_t from, int64_t to) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < rank; ++d) {
      if (d != from) perm.push_back(d);
    }
    perm.insert(perm.begin() + to, from);
    return perm;
  }
  bool IsTransposeWithPerm(int node, const std::vector<int64_t>& perm) const {
    return graph_.nodes[node].op_type == "Transpose" &&
           IntsAttr(graph_.nodes[node].attributes, "perm") == perm;
  }
  // `operand` [batch..., rows, cols] as the Transpose of `source` [rows,
  // batch..., cols] that moves the rows behind the batch, made for its one
  // reader: that Transpose itself, or (nn.MultiheadAttention's heads) a
  // Transpose (1 0 2) of a rank-3 source whose batch a Reshape then splits
  // into `operand`'s batch dims; the Reshape stays an alias node whose
  // output goes unread.
  struct RowsFirst {
    int transpose;
    ValueId source;
  };
  std::optional<RowsFirst> RowsFirstSource(ValueId operand) const {
    const Dims& dims = graph_.value(operand).dims;
    const int64_t rank = static_cast<int64_t>(dims.size());
    if (rank < 3) return std::nullopt;
    if (const std::optional<int> transpose = SoleProducer(operand, "Transpose")) {
      if (!IsTransposeWithPerm(*transpose, MovePerm(rank, 0, rank - 2))) return std::nullopt;
      return RowsFirst{*transpose, graph_.nodes[*transpose].inputs[0]};
    }
    const std::optional<int> reshape = SoleProducer(operand, "Reshape");
    if (!reshape) return std::nullopt;
    const ValueId folded = graph_.nodes[*reshape].inputs[0];
    const Dims& f = graph_.value(folded).dims;
    if (f.size() != 3 || f[1] != dims[rank - 2] || f[2] != dims[rank - 1] ||
        f[0] != NumElements(Dims(dims.begin(), dims.end() - 2))) {
      return std::nullopt;
    }
    const std::optional<int> transpose = SoleProducer(folded, "Transpose");
    if (!transpose || !IsTransposeWithPerm(*transpose, {1, 0, 2})) return std::nullopt;
    return RowsFirst{*transpose, graph_.nodes[*transpose].inputs[0]};
  }
  // The one reader of `result` [batch..., rows, cols] when it is a
  // Transpose moving the rows in front of the batch, and no graph output
  // needs `result`.
  std::optional<int> RowsFirstReader(ValueId result) const {
    const int64_t rank = static_cast<int64_t>(graph_.value(result).dims.size());
    const std::optional<int> reader = SoleConsumer(graph_, consumers_, result);
    if (!reader || absorbed_[*reader] || IsGraphOutput(graph_, result) ||
        !IsTransposeWithPerm(*reader, MovePerm(rank, rank - 2, 0))) {
      return std::nullopt;
    }
    return reader;
  }

  // Note [Attention views]: `value` [a, b, c, d] computed as
  // Reshape(Transpose(Reshape(x [a, b, d, c]) to [a*b, d, c], perm 0 2 1))
  // back to four dims, as the dynamo exporter writes k^T: x with its last
  // two dims swapped, each of the three nodes the sole producer of its
  // value. The Reshapes stay alias nodes (no step); their outputs go unread.
  struct BatchedSwap {
    int transpose;
    ValueId source;
  };
  std::optional<BatchedSwap> BatchedSwapOf(ValueId value) const {
    const std::optional<int> outer = SoleProducer(value, "Reshape");
    if (!outer) return std::nullopt;
    const ValueId swapped = graph_.nodes[*outer].inputs[0];
    const std::optional<int> transpose = SoleProducer(swapped, "Transpose");
    if (!transpose ||
        IntsAttr(graph_.nodes[*transpose].attributes, "perm") != std::vector<int64_t>{0, 2, 1}) {
      return std::nullopt;
    }
    const ValueId merged = graph_.nodes[*transpose].inputs[0];
    const std::optional<int> inner = SoleProducer(merged, "Reshape");
    if (!inner) return std::nullopt;
    const ValueId source = graph_.nodes[*inner].inputs[0];
    const Dims& x = graph_.value(source).dims;
    const Dims& m = graph_.value(merged).dims;
    const Dims& v = graph_.value(value).dims;
    if (x.size() != 4 || m.size() != 3 || v.size() != 4 || m[0] != x[0] * x[1] ||
        m[1] != x[2] || m[2] != x[3] || v[0] != x[0] || v[1] != x[1] || v[2] != x[3] ||
        v[3] != x[2]) {
      return std::nullopt;
    }
    return BatchedSwap{*transpose, source};
  }

  // The same forwards from an output `value` read by Transposes alone; the
  // value the step then writes.
  ValueId TakeOutputTransposes(ValueId value, AttentionPerm& perm, std::vector<int>& nodes) const {
    while (const std::optional<int> transpose = SoleReader(value, "Transpose")) {
      const std::array<int, 4> p = TransposePerm(graph_.nodes[*transpose]);
      // The Transpose's output's dim j is value's dim p[j], so value's dim
      // p[j] is the output's dim j.
      std::array<int, 4> inverse;
      for (int j = 0; j < 4; ++j) inverse[p[j]] = j;
      for (int& axis : perm) axis = inverse[axis];
      nodes.push_back(*transpose);
      value = graph_.nodes[*transpose].outputs[0];
    }
    return value;
  }

  // A Transpose's perm over its dims right-aligned to four (ONNX's default
  // reverses the dims); `rank` is its input's.
  std::array<int, 4> TransposePerm(const BoundNode& node) const {
    const int rank = static_cast<int>(graph_.value(node.inputs[0]).dims.size());
    std::vector<int64_t> perm = IntsAttr(node.attributes, "perm");
    if (perm.empty()) {
      for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    }
    std::array<int, 4> aligned = kIdentityPerm;
    for (int i = 0; i < rank; ++i) aligned[4 - rank + i] = static_cast<int>(perm[i]) + 4 - rank;
    return aligned;
  }

  // q [..., Sq, D], k^T [..., D, Sk], v [..., Sk, Dv] and out [..., Sq, Dv] of
  // rank 3 or 4 and one float type, k's and v's batch dims broadcasting to
  // q's, which are out's, and the scores [..., Sq, Sk].
  bool AttentionShapesFit(ValueId q, ValueId k, ValueId v, ValueId out, const Dims& scores,
                          bool float_scores) const {
    const BoundValue& qv = graph_.value(q);
    const BoundValue& kv = graph_.value(k);
    const BoundValue& vv = graph_.value(v);
    const BoundValue& ov = graph_.value(out);
    const size_t rank = qv.dims.size();
    if ((rank != 3 && rank != 4) || !ComputesInFloat(qv.dtype) || qv.is_constant() ||
        kv.is_constant() || vv.is_constant()) {
      return false;
    }
    for (const BoundValue* value : {&kv, &vv, &ov}) {
      const DType dtype = value == &ov && float_scores ? DType::kFloat32 : qv.dtype;
      if (value->dims.size() != rank || value->dtype != dtype) return false;
    }
    const int64_t sq = qv.dims[rank - 2], d = qv.dims[rank - 1];
    const int64_t sk = kv.dims[rank - 1], dv = vv.dims[rank - 1];
    if (kv.dims[rank - 2] != d || vv.dims[rank - 2] != sk || ov.dims[rank - 2] != sq ||
        ov.dims[rank - 1] != dv || d > kMaxFusedAttentionHeadDim ||
        dv > kMaxFusedAttentionHeadDim || d < 1 || dv < 1 || sk < 1) {
      return false;
    }
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (ov.dims[i] != qv.dims[i] || scores[i] != qv.dims[i]) return false;
      if (kv.dims[i] != 1 && kv.dims[i] != qv.dims[i]) return false;
      if (vv.dims[i] != 1 && vv.dims[i] != qv.dims[i]) return false;
    }
    return scores[rank - 2] == sq && scores[rank - 1] == sk;
  }

  // Note [Fusion], residual Add + LayerNorm: the step of the LayerNorm at
  // `node_index` with the Add producing its input, or nullopt.
  std::optional<FusedStep> MatchAddLayerNorm(int node_index) const {
    const BoundNode& norm = graph_.nodes[node_index];
    if ((norm.op_type != "LayerNormalization" && norm.op_type != "RMSNormalization") ||
        norm.inputs.size() < 2) {
      return std::nullopt;
    }
    for (size_t k = 1; k < norm.outputs.size(); ++k) {
      if (norm.outputs[k] >= 0) return std::nullopt;  // mean or inverse deviation used
    }
    const ValueId sum = norm.inputs[0];
    const int add = producers_[sum];
    if (add < 0 || absorbed_[add] || graph_.nodes[add].op_type != "Add") return std::nullopt;
    const BoundNode& add_node = graph_.nodes[add];
    if (add_node.inputs.size() != 2) return std::nullopt;
    const BoundValue& s = graph_.value(sum);
    if (s.dtype != DType::kFloat32 && s.dtype != DType::kFloat16 && s.dtype != DType::kBFloat16) {
      return std::nullopt;
    }
    for (const ValueId id : {add_node.inputs[0], add_node.inputs[1], sum}) {
      const BoundValue& value = graph_.value(id);
      if (value.dtype != s.dtype || value.dims != s.dims) return std::nullopt;
    }
    bool sum_read_elsewhere = IsGraphOutput(graph_, sum);
    for (const int reader : consumers_[sum]) {
      if (reader == node_index) continue;
      if (reader < node_index) return std::nullopt;  // it would run before the step writes it
      sum_read_elsewhere = true;
    }
    FusedStep step;
    step.kind = StepKind::kAddLayerNorm;
    step.nodes = {add, node_index};
    step.anchor = node_index;
    step.inputs = {add_node.inputs[0], add_node.inputs[1]};
    step.inputs.insert(step.inputs.end(), norm.inputs.begin() + 1, norm.inputs.end());
    step.outputs = {norm.outputs[0]};
    if (sum_read_elsewhere) step.outputs.push_back(sum);
    return step;
  }

  // A pointwise node whose output and tensor inputs are of `dtype` (one that
  // ComputesInFloat) and `dims` and whose other inputs are scalar constants
  // of `dtype`: a region holds one type, so no Cast joins it.
  bool IsPointwiseNode(int node_index, const Dims& dims, DType dtype) const {
    const BoundNode& node = graph_.nodes[node_index];
    const size_t arity = node.op_type == "Add" || node.op_type == "Sub" ||
                                 node.op_type == "Mul" || node.op_type == "Div" ||
                                 node.op_type == "Pow" || node.op_type == "Max" ||
                                 node.op_type == "Min"
                             ? 2
                             : 1;
    if (!IsPointwiseOp(node.op_type) || node.inputs.size() != arity ||
        node.outputs.size() != 1) {
      return false;
    }
    const BoundValue& out = graph_.value(node.outputs[0]);
    if (!ComputesInFloat(dtype) || out.dtype != dtype || out.dims != dims) return false;
    int scalars = 0;
    for (ValueId id : node.inputs) {
      const BoundValue& in = graph_.value(id);
      if (in.dtype != dtype) return false;
      if (in.is_constant() && in.constant->num_elements() == 1) {
        ++scalars;
      } else if (in.dims != dims) {
        return false;
      }
    }
    return scalars < static_cast<int>(arity);  // a node of constants alone is no region's
  }

  // Note [Pointwise regions]: the region ending at `sink`, or nullopt when
  // it would hold fewer than two nodes.
  std::optional<FusedStep> MatchPointwiseRegion(int sink) const {
    const BoundNode& sink_node = graph_.nodes[sink];
    if (sink_node.outputs.size() != 1) return std::nullopt;
    const Dims& dims = graph_.value(sink_node.outputs[0]).dims;
    const DType dtype = graph_.value(sink_node.outputs[0]).dtype;
    if (!IsPointwiseNode(sink, dims, dtype)) return std::nullopt;
    std::set<int> region = {sink};
    for (bool grew = true; grew && region.size() < kMaxPointwiseNodes;) {
      grew = false;
      for (const int member : std::vector<int>(region.begin(), region.end())) {
        for (const ValueId id : graph_.nodes[member].inputs) {
          const int producer = producers_[id];
          if (producer < 0 || absorbed_[producer] || region.count(producer) > 0 ||
              IsGraphOutput(graph_, id) || !IsPointwiseNode(producer, dims, dtype) ||
              region.size() >= kMaxPointwiseNodes) {
            continue;
          }
          const std::vector<int>& readers = consumers_[id];
          if (std::all_of(readers.begin(), readers.end(),
                          [&](int reader) { return region.count(reader) > 0; })) {
            region.insert(producer);
            grew = true;
          }
        }
      }
    }
    if (region.size() < 2) return std::nullopt;
    FusedStep step;
    step.kind = StepKind::kPointwise;
    step.nodes.assign(region.begin(), region.end());
    step.anchor = step.nodes.front();
    std::set<ValueId> produced;
    for (const int n : step.nodes) produced.insert(graph_.nodes[n].outputs[0]);
    for (const int n : step.nodes) {
      for (const ValueId id : graph_.nodes[n].inputs) {
        const BoundValue& value = graph_.value(id);
        const bool scalar = value.is_constant() && value.constant->num_elements() == 1;
        if (produced.count(id) == 0 && !scalar &&
            std::find(step.inputs.begin(), step.inputs.end(), id) == step.inputs.end()) {
          step.inputs.push_back(id);
        }
      }
    }
    if (step.inputs.size() > kMaxPointwiseInputs) return std::nullopt;
    step.outputs = {sink_node.outputs[0]};
    return step;
  }

  // The activation a node applies, for a Conv epilogue; kNone if the
  // epilogue cannot take it.
  static ActivationParams EpilogueActivation(const BoundNode& node) {
    const ActivationParams activation = ActivationOf(node);
    return activation.kind == Activation::kHardSigmoid ? ActivationParams{} : activation;
  }

  // x * Sigmoid(x) as PyTorch exports SiLU: `value` read by exactly one
  // Sigmoid and one Mul, which multiplies it by that Sigmoid's output (read
  // by nothing else). Returns the Sigmoid and the Mul.
  std::optional<std::pair<int, int>> MatchSilu(ValueId value) const {
    if (consumers_[value].size() != 2 || IsGraphOutput(graph_, value)) return std::nullopt;
    int sigmoid = consumers_[value][0];
    int mul = consumers_[value][1];
    if (graph_.nodes[sigmoid].op_type != "Sigmoid") std::swap(sigmoid, mul);
    if (graph_.nodes[sigmoid].op_type != "Sigmoid" || graph_.nodes[mul].op_type != "Mul" ||
        absorbed_[sigmoid] || absorbed_[mul]) {
      return std::nullopt;
    }
    const ValueId s = graph_.nodes[sigmoid].outputs[0];
    if (SoleConsumer(graph_, consumers_, s) != std::optional<int>(mul) ||
        OtherInput(graph_.nodes[mul], value) != std::optional<ValueId>(s) ||
        graph_.value(graph_.nodes[mul].outputs[0]).dims != graph_.value(value).dims) {
      return std::nullopt;
    }
    return std::make_pair(sigmoid, mul);
  }

  // Conv, absorbing a following residual Add (of a same-dims value) and then
  // an activation (Relu, Clip, Sigmoid, SiLU, HardSwish).
  void PlanConv(int node_index) {
    const BoundNode& node = graph_.nodes[node_index];
    FusedStep step;
    step.kind = StepKind::kConv;
    step.nodes = {node_index};
    step.anchor = node_index;
    step.inputs = node.inputs;
    ValueId output = node.outputs[0];
    if (options_.fuse) {
      if (std::optional<int> add = SoleConsumer(graph_, consumers_, output);
          add && !absorbed_[*add] && graph_.nodes[*add].op_type == "Add") {
        const BoundNode& add_node = graph_.nodes[*add];
        const std::optional<ValueId> other = OtherInput(add_node, output);
        if (other && *other != output &&
            graph_.value(*other).dtype == graph_.value(output).dtype &&
            graph_.value(*other).dims == graph_.value(output).dims &&
            graph_.value(add_node.outputs[0]).dims == graph_.value(output).dims) {
          step.conv_residual = true;
          step.inputs.push_back(*other);
          Absorb(step, *add);
          output = add_node.outputs[0];
        }
      }
      if (std::optional<std::pair<int, int>> silu = MatchSilu(output)) {
        step.conv_activation.kind = Activation::kSilu;
        Absorb(step, silu->first);
        Absorb(step, silu->second);
        output = graph_.nodes[silu->second].outputs[0];
      } else if (std::optional<int> next = SoleConsumer(graph_, consumers_, output);
                 next && !absorbed_[*next]) {
        const ActivationParams activation = EpilogueActivation(graph_.nodes[*next]);
        if (activation.kind != Activation::kNone &&
            graph_.value(graph_.nodes[*next].outputs[0]).dims == graph_.value(output).dims) {
          step.conv_activation = activation;
          Absorb(step, *next);
          output = graph_.nodes[*next].outputs[0];
        }
      }
    }
    step.outputs = {output};
    plan_.fused_into_convs += static_cast<int>(step.nodes.size()) - 1;
    ++plan_.conv_steps;
    Add(std::move(step));
  }

  // A Conv step that may read or write NHWC (Note [Channels-last
  // convolutions]): 16-bit data, 4-D, a constant W, not depthwise (one
  // input channel per group, of several).
  bool ChannelsLastCapable(const FusedStep& step) const {
    if (step.kind != StepKind::kConv) return false;
    const BoundValue& y = graph_.value(step.outputs[0]);
    const BoundValue& w = graph_.value(step.inputs[1]);
    const bool depthwise =
        w.dims.size() == 4 && w.dims[1] == 1 && graph_.value(step.inputs[0]).dims[1] > 1;
    return IsHalfImage(y) && w.is_constant() && !depthwise;
  }

  // A pool step that may read NHWC: MaxPool (without indices) or
  // AveragePool, which then writes NHWC too, or a global pool, whose
  // [N, C, 1, 1] output is the same bytes in both layouts; 16-bit, 4-D.
  enum class PoolShape { kNone, kWindowed, kGlobal };
  PoolShape ChannelsLastPool(const FusedStep& step) const {
    if (step.kind != StepKind::kKernel || step.outputs.size() != 1 ||
        !IsHalfImage(graph_.value(step.inputs[0]))) {
      return PoolShape::kNone;
    }
    const std::string& op = graph_.nodes[step.anchor].op_type;
    if (op == "MaxPool" || op == "AveragePool") return PoolShape::kWindowed;
    if (op == "GlobalAveragePool" || op == "GlobalMaxPool") return PoolShape::kGlobal;
    return PoolShape::kNone;
  }

  static bool IsHalfImage(const BoundValue& v) {
    return (v.dtype == DType::kFloat16 || v.dtype == DType::kBFloat16) && v.dims.size() == 4;
  }

  // Note [Channels-last convolutions]: which Conv outputs are stored NHWC,
  // and each Conv step's layouts.
  void ChooseConvLayouts() {
    const std::vector<bool> eligible = ChannelsLastEligible();
    // Components of eligible values that a layout change between them
    // would cost a transpose (or a strided epilogue): one layout each.
    std::vector<ValueId> parent(graph_.values.size());
    for (size_t v = 0; v < parent.size(); ++v) parent[v] = static_cast<ValueId>(v);
    const auto find = [&parent](ValueId v) {
      while (parent[v] != v) v = parent[v] = parent[parent[v]];  // halving the path
      return v;
    };
    // Transposes NHWC saves (positive) or costs (negative) each value.
    std::vector<double> gain(graph_.values.size(), 0.0);
    const auto tie = [&](ValueId a, ValueId b, double cost) {
      if (eligible[a] && eligible[b]) {
        parent[find(a)] = find(b);
      } else if (eligible[a] || eligible[b]) {
        gain[eligible[a] ? a : b] -= cost;  // its neighbour stays NCHW
      }
    };
    for (const FusedStep& step : plan_.steps) {
      if (!ChannelsLastCapable(step)) continue;
      const ValueId x = step.inputs[0];
      const ValueId y = step.outputs[0];
      if (IsNchwGemm(step)) {
        tie(x, y, 1.0);
      } else {  // NHWC saves one transpose per side (counted where eligible)
        gain[x] += 1.0;
        gain[y] += 1.0;
      }
      if (step.conv_residual) tie(step.inputs.back(), y, kCrossLayoutEpilogueCost);
    }
    for (const FusedStep& step : plan_.steps) {
      if (ChannelsLastPool(step) == PoolShape::kWindowed) {
        tie(step.inputs[0], step.outputs[0], kPoolLayoutChangeCost);
      }
    }
    std::map<ValueId, double> component_gain;
    for (size_t v = 0; v < gain.size(); ++v) {
      if (eligible[v]) component_gain[find(static_cast<ValueId>(v))] += gain[v];
    }
    std::vector<bool> channels_last(graph_.values.size(), false);
    for (size_t v = 0; v < gain.size(); ++v) {
      channels_last[v] = eligible[v] && component_gain[find(static_cast<ValueId>(v))] > 0;
    }
    const auto layout = [&](ValueId v) {
      return channels_last[v] ? ConvLayout::kNHWC : ConvLayout::kNCHW;
    };
    for (FusedStep& step : plan_.steps) {
      const PoolShape pool = ChannelsLastPool(step);
      if (pool != PoolShape::kNone) {
        step.pool_layout = layout(step.inputs[0]);
        if (pool == PoolShape::kWindowed && step.pool_layout == ConvLayout::kNHWC) {
          ++plan_.channels_last_values;
        }
        continue;
      }
      if (!ChannelsLastCapable(step)) continue;
      step.conv_x_layout = layout(step.inputs[0]);
      step.conv_y_layout = layout(step.outputs[0]);
      if (step.conv_residual) step.conv_residual_layout = layout(step.inputs.back());
      if (step.conv_y_layout == ConvLayout::kNHWC) ++plan_.channels_last_values;
      if (step.conv_x_layout == ConvLayout::kNHWC || step.conv_y_layout == ConvLayout::kNHWC) {
        step.inputs.erase(step.inputs.begin() + 1);  // W: the kernel's channels-last copy
      }
    }
  }

  // The values that may be stored NHWC: a capable Conv step's or windowed
  // pool's output that only capable Conv steps (as x or residual) and pools
  // (as x) read, that is no graph output and that no alias op reads.
  std::vector<bool> ChannelsLastEligible() const {
    std::vector<bool> eligible(graph_.values.size(), false);
    for (const FusedStep& step : plan_.steps) {
      const bool writer =
          ChannelsLastCapable(step) || ChannelsLastPool(step) == PoolShape::kWindowed;
      if (writer && !IsGraphOutput(graph_, step.outputs[0])) eligible[step.outputs[0]] = true;
    }
    for (size_t v = 0; v < plan_.alias_root.size(); ++v) {
      if (plan_.alias_root[v] != static_cast<ValueId>(v)) eligible[plan_.alias_root[v]] = false;
    }
    for (const FusedStep& step : plan_.steps) {
      const bool conv = ChannelsLastCapable(step);
      const bool pool = ChannelsLastPool(step) != PoolShape::kNone;
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        const bool as_x = i == 0;
        const bool as_residual = step.conv_residual && i + 1 == step.inputs.size();
        const bool reads_nhwc = (conv && (as_x || as_residual)) || (pool && as_x);
        if (!reads_nhwc) eligible[step.inputs[i]] = false;
      }
    }
    return eligible;
  }

  // A convolution that is a GEMM over NCHW data (1x1, stride 1, no pads, one
  // group): its engines read NCHW as it lies, so only a change of layout
  // between its x and y costs a transpose.
  bool IsNchwGemm(const FusedStep& step) const {
    const ConvParams p = ConvParamsOf(graph_, graph_.nodes[step.anchor]);
    return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 &&
           p.pad_h == 0 && p.pad_w == 0 && p.groups == 1;
  }

  std::optional<Scaling> ScalingOf(int node_index) const {
    const BoundNode& node = graph_.nodes[node_index];
    if (absorbed_[node_index] || node.inputs.size() != 2 || node.outputs.size() != 1) {
      return std::nullopt;
    }
    const auto is_scale = [&](size_t k) { return ScaleConstant(graph_.value(node.inputs[k])); };
    Scaling scaling;
    if (node.op_type == "Mul" && is_scale(1)) {
      scaling = {node_index, *is_scale(1), node.inputs[0]};
    } else if (node.op_type == "Mul" && is_scale(0)) {
      scaling = {node_index, *is_scale(0), node.inputs[1]};
    } else if (node.op_type == "Div" && is_scale(1)) {
      scaling = {node_index, 1.0f / *is_scale(1), node.inputs[0]};
    } else {
      return std::nullopt;
    }
    const BoundValue& scaled = graph_.value(scaling.scaled);
    const BoundValue& out = graph_.value(node.outputs[0]);
    if (!ComputesInFloat(scaled.dtype) || out.dtype != scaled.dtype || out.dims != scaled.dims) {
      return std::nullopt;
    }
    return scaling;
  }

  // Gemm / MatMul, absorbing into its alpha the scale constants of operands
  // scaled for it alone and of a Mul or Div following it (attention's
  // 1/sqrt(d), on q and k or on the scores), then a following bias Add into
  // the epilogue: D = alpha * A B + bias. Relu stays a step of its own (Note
  // [Fusion]).
  void PlanGemm(int node_index) {
    const BoundNode& node = graph_.nodes[node_index];
    FusedStep step;
    step.kind = StepKind::kGemm;
    step.nodes = {node_index};
    step.anchor = node_index;
    step.inputs = {node.inputs[0], node.inputs[1]};
    if (GemmReadsC(graph_, node)) step.inputs.push_back(node.inputs[2]);
    ValueId output = node.outputs[0];
    if (options_.fuse && !GemmUsesC(node)) {
      for (size_t k = 0; k < 2; ++k) {
        const int producer = producers_[step.inputs[k]];
        if (producer < 0 || SoleConsumer(graph_, consumers_, step.inputs[k]) != node_index) {
          continue;
        }
        if (std::optional<Scaling> scaling = ScalingOf(producer)) {
          step.gemm_scale *= scaling->factor;
          step.inputs[k] = scaling->scaled;
          Absorb(step, producer);
        }
      }
      if (node.op_type == "MatMul") {
        for (size_t k = 0; k < 2; ++k) {
          if (std::optional<LastTwoSwap> swap = LastTwoSwapOf(step.inputs[k])) {
            (k == 0 ? step.gemm_trans_a : step.gemm_trans_b) = true;
            step.inputs[k] = swap->source;
            Absorb(step, swap->transpose);
            ++plan_.gemm_transposes;
          }
        }
      }
      if (std::optional<int> next = SoleConsumer(graph_, consumers_, output)) {
        if (std::optional<Scaling> scaling = ScalingOf(*next);
            scaling && scaling->scaled == output) {
          step.gemm_scale *= scaling->factor;
          Absorb(step, *next);
          output = graph_.nodes[*next].outputs[0];
        }
      }
      if (std::optional<int> add = SoleConsumer(graph_, consumers_, output);
          add && !absorbed_[*add] && graph_.nodes[*add].op_type == "Add") {
        const BoundNode& add_node = graph_.nodes[*add];
        const std::optional<ValueId> other = OtherInput(add_node, output);
        if (other && IsColumnBias(graph_.value(*other), GemmColumns(graph_, node)) &&
            graph_.value(add_node.outputs[0]).dims == graph_.value(output).dims) {
          step.gemm_bias = *other;
          Absorb(step, *add);
          output = add_node.outputs[0];
        }
      }
      if (BatchesMatrices(node)) {
        for (size_t k = 0; k < 2; ++k) {
          if (std::optional<RowsFirst> stored = RowsFirstSource(step.inputs[k])) {
            (k == 0 ? step.gemm_swapped_a : step.gemm_swapped_b) = true;
            step.inputs[k] = stored->source;
            Absorb(step, stored->transpose);
            ++plan_.gemm_transposes;
          }
        }
        if (std::optional<int> transpose = RowsFirstReader(output)) {
          step.gemm_swapped_d = true;
          Absorb(step, *transpose);
          output = graph_.nodes[*transpose].outputs[0];
          ++plan_.gemm_transposes;
        }
      }
    }
    if (options_.k_major_float32_weights && HasNMajorFloat32Weight(graph_, node)) {
      step.gemm_weight_transposed = true;  // a constant: no producer was absorbed for it
      step.inputs.erase(step.inputs.begin() + 1);
      ++plan_.transposed_weights;
    }
    if (step.gemm_bias >= 0 || GemmCIsBias(graph_, node)) ++plan_.gemm_bias_epilogues;
    if (step.gemm_scale != 1.0f) ++plan_.gemm_scales;
    step.outputs = {output};
    Add(std::move(step));
  }

  // The step `match` makes of each node not yet taken, in node order, each
  // counted in `count`; its nodes are then taken.
  void TakeEach(std::optional<FusedStep> (FusionPlanner::*match)(int) const, int& count) {
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (absorbed_[i]) continue;
      if (std::optional<FusedStep> step = (this->*match)(i)) {
        for (int n : step->nodes) absorbed_[n] = true;
        ++count;
        Add(*std::move(step));
      }
    }
  }

  void Absorb(FusedStep& step, int node) {
    absorbed_[node] = true;
    step.nodes.push_back(node);
  }

  const BoundGraph& graph_;
  const FusionOptions& options_;
  std::vector<std::vector<int>> consumers_;
  std::vector<int> producers_;
  std::vector<bool> absorbed_;
  std::vector<std::pair<int, FusedStep>> by_last_node_;
  FusionPlan plan_;
};

}  // namespace

FusionPlan PlanFusion(const BoundGraph& graph, const FusionOptions& options) {
  return FusionPlanner(graph, options).Plan();
}

}  // namespace graphserve
