#include "runtime/passes/precision.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/ir.h"

namespace graphserve {
namespace {

constexpr int64_t kOpset = 17;  // LayerNormalization's first
constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxFloat16 = 10;

std::shared_ptr<const HostTensor> Weights(Dims dims, uint64_t seed, float scale) {
  HostTensor tensor = RandomTensor(DType::kFloat32, std::move(dims), seed);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] *= scale;
  return std::make_shared<const HostTensor>(std::move(tensor));
}

Node Constant(const std::string& output, float value) {
  return Node{output, "Constant", {}, {output}, {{"value_float", value}}};
}

// A transformer block of the ops BERT-style exports use, in float32:
// single-head attention (MatMul, Transpose, a scale Constant, Softmax), a
// residual Add, LayerNormalization, an MLP with PyTorch's exact GELU chain
// (Div, Erf, Add, Mul, Mul) and a Tanh. Outputs y and the attention
// probabilities p.
Model TransformerBlock() {
  constexpr int64_t kTokens = 4;
  constexpr int64_t kHidden = 8;
  constexpr int64_t kInner = 16;
  Model model;
  model.name = "block";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, kTokens, kHidden}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kTokens, kHidden}},
                   {"p", DType::kFloat32, {-1, kTokens, kTokens}}};
  // Weights scaled so that activations stay near 1: Tanh and the Softmax
  // are not saturated, so their outputs show the rounding of what feeds them.
  model.initializers["wq"] = Weights({kHidden, kHidden}, 1, 0.35f);
  model.initializers["wk"] = Weights({kHidden, kHidden}, 2, 0.35f);
  model.initializers["w1"] = Weights({kHidden, kInner}, 3, 0.35f);
  model.initializers["b1"] = Weights({kInner}, 4, 0.1f);
  model.initializers["w2"] = Weights({kInner, kHidden}, 5, 0.25f);
  model.initializers["b2"] = Weights({kHidden}, 6, 0.1f);
  model.initializers["gamma"] = Weights({kHidden}, 7, 0.2f);
  model.initializers["beta"] = Weights({kHidden}, 8, 0.1f);
  model.nodes = {
      Node{"q", "MatMul", {"x", "wq"}, {"q"}, {}},
      Node{"k", "MatMul", {"x", "wk"}, {"k"}, {}},
      Node{"kt", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}},
      Node{"s", "MatMul", {"q", "kt"}, {"s"}, {}},
      Constant("scale", 1.0f / std::sqrt(static_cast<float>(kHidden))),
      Node{"ss", "Mul", {"s", "scale"}, {"ss"}, {}},
      Node{"p", "Softmax", {"ss"}, {"p"}, {{"axis", int64_t{-1}}}},
      Node{"a", "MatMul", {"p", "x"}, {"a"}, {}},
      Node{"r", "Add", {"a", "x"}, {"r"}, {}},
      Node{"ln", "LayerNormalization", {"r", "gamma", "beta"}, {"ln"},
           {{"axis", int64_t{-1}}, {"epsilon", 1e-5f}}},
      Node{"h", "MatMul", {"ln", "w1"}, {"h"}, {}},
      Node{"hb", "Add", {"h", "b1"}, {"hb"}, {}},
      Constant("sqrt2", std::sqrt(2.0f)),
      Node{"d", "Div", {"hb", "sqrt2"}, {"d"}, {}},
      Node{"e", "Erf", {"d"}, {"e"}, {}},
      Constant("one", 1.0f),
      Node{"e1", "Add", {"e", "one"}, {"e1"}, {}},
      Node{"m", "Mul", {"hb", "e1"}, {"m"}, {}},
      Constant("half", 0.5f),
      Node{"g", "Mul", {"m", "half"}, {"g"}, {}},
      Node{"o", "MatMul", {"g", "w2"}, {"o"}, {}},
      Node{"ob", "Add", {"o", "b2"}, {"ob"}, {}},
      Node{"y", "Tanh", {"ob"}, {"y"}, {}},
  };
  return model;
}

std::vector<HostTensor> RunOnHost(const Model& model, const std::vector<HostTensor>& inputs) {
  BindOptions bind;
  bind.batch_size = inputs.front().dims().front();
  absl::StatusOr<BoundGraph> graph = BindModel(model, bind);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return {};
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs) : std::vector<HostTensor>{};
}

std::vector<const Node*> NodesOf(const Model& model, const std::string& op_type) {
  std::vector<const Node*> nodes;
  for (const Node& node : model.nodes) {
    if (node.op_type == op_type) nodes.push_back(&node);
  }
  return nodes;
}

// The Cast nodes as "input->output:to", for messages and exact checks.
std::vector<std::string> Casts(const Model& model) {
  std::vector<std::string> casts;
  for (const Node* node : NodesOf(model, "Cast")) {
    casts.push_back(node->inputs[0] + "->" + node->outputs[0] + ":" +
                    std::to_string(std::get<int64_t>(node->attributes.at("to"))));
  }
  return casts;
}

const Node& NodeNamed(const Model& model, const std::string& name) {
  for (const Node& node : model.nodes) {
    if (node.name == name) return node;
  }
  ADD_FAILURE() << "no node " << name;
  static const Node kNone;
  return kNone;
}

struct PrecisionCase {
  ModelPrecision precision;
  DType target;
  // ||converted - float32|| / ||float32||: the 16-bit type's rounding of
  // weights and activations through two GEMM layers (float16 keeps 11
  // significant bits, bfloat16 8).
  double tolerance;
};

class TransformerBlockPrecision : public testing::TestWithParam<PrecisionCase> {};

TEST_P(TransformerBlockPrecision, RunsOnTheHostCloseToFloat32WithFloat32Outputs) {
  const PrecisionCase& c = GetParam();
  const Model original = TransformerBlock();
  Model converted = original;
  ASSERT_TRUE(ConvertPrecision(converted, c.precision).ok());

  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {3, 4, 8}, 42)};
  const std::vector<HostTensor> want = RunOnHost(original, inputs);
  const std::vector<HostTensor> got = RunOnHost(converted, inputs);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(want.size(), 2u);
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(original.outputs[i].name);
    EXPECT_EQ(got[i].dtype(), DType::kFloat32);  // as declared
    EXPECT_EQ(got[i].dims(), want[i].dims());
    EXPECT_LT(RelativeError(got[i], want[i]), c.tolerance);
  }
  // Not the float32 model under another name: the 16-bit rounding shows.
  EXPECT_GT(RelativeError(got[0], want[0]), 0.0);
}

TEST_P(TransformerBlockPrecision, CastsOnlyAtTheInterfaceAndAroundKeptOps) {
  const PrecisionCase& c = GetParam();
  Model model = TransformerBlock();
  ASSERT_TRUE(ConvertPrecision(model, c.precision).ok());
  const std::string target = std::to_string(static_cast<int>(c.target));
  const std::string name = DTypeName(c.target);
  // x in for the GEMMs and the residual; Softmax's input to float32 and its
  // result back for the next GEMM (p itself stays float32: a graph output);
  // y back to its declared float32. LayerNorm, between converted GEMMs and
  // Adds, runs in the target type (Note [Listed ops between 16-bit
  // neighbours]): no Casts around it.
  std::vector<std::string> expected = {
      "x->x/" + name + ":" + target,
      "ss->ss/float32:1",
      "p->p/" + name + ":" + target,
      "y/" + name + "->y:1",
  };
  std::vector<std::string> casts = Casts(model);
  std::sort(casts.begin(), casts.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(casts, expected);

  // The interface is as declared.
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].dtype, DType::kFloat32);
  for (const ValueInfo& output : model.outputs) EXPECT_EQ(output.dtype, DType::kFloat32);
  // Every weight converted once, LayerNorm's scale and bias with the rest.
  for (const char* weight : {"wq", "wk", "w1", "b1", "w2", "b2", "gamma", "beta"}) {
    EXPECT_EQ(model.initializers.at(weight)->dtype(), c.target) << weight;
  }
  EXPECT_EQ(model.initializers.size(), 8u);
  // Constants in the target type, rounded from float32.
  const HostTensor& half = std::get<HostTensor>(NodeNamed(model, "half").attributes.at("value"));
  EXPECT_EQ(half.dtype(), c.target);
  // Readers read the right versions.
  EXPECT_EQ(NodeNamed(model, "q").inputs[0], "x/" + name);
  EXPECT_EQ(NodeNamed(model, "p").inputs[0], "ss/float32");
  EXPECT_EQ(NodeNamed(model, "a").inputs[0], "p/" + name);
  EXPECT_EQ(NodeNamed(model, "ln").inputs, (std::vector<std::string>{"r", "gamma", "beta"}));
  EXPECT_EQ(NodeNamed(model, "y").outputs[0], "y/" + name);
}

// Note [Listed ops between 16-bit neighbours]: with the probabilities no
// graph output, the Softmax sits between the scores' and the context's
// GEMMs and runs in the target type too, so the attention chain is of one
// type (what cuDNN's fused attention takes); the only Casts are the
// interface's, and the block still runs close to float32.
TEST_P(TransformerBlockPrecision, ListedOpsBetween16BitNeighboursRunInTheTarget) {
  const PrecisionCase& c = GetParam();
  Model original = TransformerBlock();
  original.outputs.pop_back();  // p
  Model model = original;
  ASSERT_TRUE(ConvertPrecision(model, c.precision).ok());
  const std::string name = DTypeName(c.target);
  EXPECT_EQ(Casts(model), (std::vector<std::string>{
                              "x->x/" + name + ":" + std::to_string(static_cast<int>(c.target)),
                              "y/" + name + "->y:1"}));
  EXPECT_EQ(NodeNamed(model, "p").inputs[0], "ss");
  EXPECT_EQ(NodeNamed(model, "a").inputs[0], "p");

  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {3, 4, 8}, 42)};
  const std::vector<HostTensor> want = RunOnHost(original, inputs);
  const std::vector<HostTensor> got = RunOnHost(model, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(RelativeError(got[0], want[0]), c.tolerance);
}

// A listed op next to a float32 value stays in float32: reading a graph
// input, feeding a graph output, or reading a weight the target cannot hold.
TEST(ConvertPrecisionTest, ListedOpsNextToFloat32ValuesStayFloat32) {
  Model model;
  model.name = "edges";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}};
  model.initializers["w"] = Weights({8, 8}, 1, 0.3f);
  model.initializers["big"] = Weights({8}, 2, 1e6f);  // past float16's 65504
  model.nodes = {
      Node{"from_input", "Softmax", {"x"}, {"s0"}, {{"axis", int64_t{-1}}}},
      Node{"mm", "MatMul", {"s0", "w"}, {"mm"}, {}},
      Node{"big_pow", "Pow", {"mm", "big"}, {"pw"}, {}},
      Node{"mm2", "MatMul", {"pw", "w"}, {"mm2"}, {}},
      Node{"y", "Softmax", {"mm2"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  EXPECT_EQ(NodeNamed(model, "from_input").inputs[0], "x");
  EXPECT_EQ(NodeNamed(model, "big_pow").inputs,
            (std::vector<std::string>{"mm/float32", "big"}));
  EXPECT_EQ(model.initializers.at("big")->dtype(), DType::kFloat32);
  EXPECT_EQ(NodeNamed(model, "y").inputs[0], "mm2/float32");
  EXPECT_EQ(NodeNamed(model, "y").outputs[0], "y");
}

INSTANTIATE_TEST_SUITE_P(HalfPrecisions, TransformerBlockPrecision,
                         testing::Values(PrecisionCase{ModelPrecision::kFp16, DType::kFloat16, 1e-2},
                                         PrecisionCase{ModelPrecision::kBf16, DType::kBFloat16,
                                                       5e-2}),
                         [](const testing::TestParamInfo<PrecisionCase>& info) {
                           return std::string(ModelPrecisionName(info.param.precision));
                         });

TEST(ConvertPrecisionTest, Fp32AndTf32LeaveTheModelAsItIs) {
  for (ModelPrecision precision : {ModelPrecision::kFp32, ModelPrecision::kTf32}) {
    Model model = TransformerBlock();
    const size_t nodes = model.nodes.size();
    ASSERT_TRUE(ConvertPrecision(model, precision).ok());
    EXPECT_EQ(model.nodes.size(), nodes);
    EXPECT_TRUE(NodesOf(model, "Cast").empty());
    EXPECT_EQ(model.initializers.at("wq")->dtype(), DType::kFloat32);
  }
}

// Kept ops in a row compute in float32 from end to end: MatMul's result is
// cast once into Exp, and ReduceSum and Log read float32 straight on; the
// kept result is the float32 graph output with no Cast back.
TEST(ConvertPrecisionTest, ChainsOfKeptOpsDoNotBounceThroughTheTarget) {
  Model model;
  model.name = "logsumexp";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 1}}};
  model.initializers["w"] = Weights({8, 8}, 1, 0.3f);
  HostTensor axes(DType::kInt64, {1});
  axes.data<int64_t>()[0] = -1;
  model.initializers["axes"] = std::make_shared<const HostTensor>(axes);
  model.nodes = {
      Node{"mm", "MatMul", {"x", "w"}, {"mm"}, {}},
      Node{"exp", "Exp", {"mm"}, {"exp"}, {}},
      Node{"sum", "ReduceSum", {"exp", "axes"}, {"sum"}, {{"keepdims", int64_t{1}}}},
      Node{"y", "Log", {"sum"}, {"y"}, {}},
  };
  const Model original = model;
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  EXPECT_EQ(Casts(model),
            (std::vector<std::string>{"x->x/float16:10", "mm->mm/float32:1"}));
  EXPECT_EQ(NodeNamed(model, "sum").inputs, (std::vector<std::string>{"exp", "axes"}));
  EXPECT_EQ(NodeNamed(model, "y").outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(model.initializers.at("axes")->dtype(), DType::kInt64);

  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {2, 8}, 7)};
  const std::vector<HostTensor> got = RunOnHost(model, inputs);
  const std::vector<HostTensor> want = RunOnHost(original, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].dtype(), DType::kFloat32);
  EXPECT_LT(RelativeError(got[0], want[0]), 1e-2);
}

// A graph input read only by kept ops needs no Cast, and LayerNorm's Mean,
// float32 by ONNX's schema, stays float32 as a graph output.
TEST(ConvertPrecisionTest, KeptOpsReadAndWriteTheInterfaceDirectly) {
  Model model;
  model.name = "ln";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}, {"mean", DType::kFloat32, {-1, 1}}};
  model.initializers["gamma"] = Weights({8}, 1, 1.0f);
  model.nodes = {
      Node{"ln", "LayerNormalization", {"x", "gamma"}, {"ln", "mean"}, {{"axis", int64_t{-1}}}},
      Node{"y", "Softmax", {"ln"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kBf16).ok());
  EXPECT_TRUE(NodesOf(model, "Cast").empty()) << testing::PrintToString(Casts(model));
  EXPECT_EQ(model.initializers.at("gamma")->dtype(), DType::kFloat32);
  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(model, {});
  ASSERT_TRUE(dtypes.ok()) << dtypes.status();
  EXPECT_EQ(dtypes->at("mean"), DType::kFloat32);
  EXPECT_EQ(dtypes->at("y"), DType::kFloat32);
}

// An attention mask as exporters write it: int64 in, Cast to float, scaled
// into an additive bias. The model's Cast now casts to the target, and the
// bias's constants follow.
TEST(ConvertPrecisionTest, TheModelsOwnCastsToFloatCastToTheTarget) {
  Model model;
  model.name = "mask";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 4}}, {"mask", DType::kInt64, {-1, 4}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 4}}};
  model.nodes = {
      Node{"m", "Cast", {"mask"}, {"m"}, {{"to", kOnnxFloat}}},
      Constant("one", 1.0f),
      Node{"inv", "Sub", {"one", "m"}, {"inv"}, {}},
      Constant("big", -10000.0f),
      Node{"bias", "Mul", {"inv", "big"}, {"bias"}, {}},
      Node{"sum", "Add", {"x", "bias"}, {"sum"}, {}},
      Node{"y", "Softmax", {"sum"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  const Model original = model;
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  EXPECT_EQ(std::get<int64_t>(NodeNamed(model, "m").attributes.at("to")), kOnnxFloat16);
  EXPECT_EQ(NodeNamed(model, "m").outputs[0], "m");
  EXPECT_EQ(model.inputs[1].dtype, DType::kInt64);

  HostTensor mask(DType::kInt64, {2, 4});
  for (int64_t i = 0; i < mask.num_elements(); ++i) mask.data<int64_t>()[i] = i % 3 != 0;
  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {2, 4}, 3), mask};
  const std::vector<HostTensor> got = RunOnHost(model, inputs);
  const std::vector<HostTensor> want = RunOnHost(original, inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LT(RelativeError(got[0], want[0]), 1e-2);
}

// A weight read both by a kept op and by one in the target gets a version in
// each type, each rounded once from the float32 original (no Cast for
// binding to fold again at every batch size).
TEST(ConvertPrecisionTest, AConstantReadInBothTypesHasAVersionInEach) {
  Model model;
  model.name = "shared";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}};
  model.initializers["w"] = Weights({8}, 1, 1.0f);
  model.nodes = {
      Node{"shifted", "Add", {"x", "w"}, {"shifted"}, {}},
      Node{"y", "LayerNormalization", {"shifted", "w"}, {"y"}, {{"axis", int64_t{-1}}}},
      Constant("c", 0.25f),
      Node{"unused", "Exp", {"c"}, {"unused"}, {}},
  };
  const std::shared_ptr<const HostTensor> original = model.initializers.at("w");
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  EXPECT_EQ(model.initializers.at("w")->dtype(), DType::kFloat16);
  EXPECT_EQ(model.initializers.at("w/float32"), original);  // shared, not copied
  EXPECT_EQ(NodeNamed(model, "shifted").inputs, (std::vector<std::string>{"x/float16", "w"}));
  EXPECT_EQ(NodeNamed(model, "y").inputs,
            (std::vector<std::string>{"shifted/float32", "w/float32"}));
  // A Constant read only by a kept op stays float32.
  EXPECT_EQ(std::get<float>(NodeNamed(model, "c").attributes.at("value_float")), 0.25f);
}

// Resize's scales place its samples: they stay float32 while the image
// goes to float16 (a float16 1/3 would make floor(3 * scale) 0).
TEST(ConvertPrecisionTest, ResizeScalesStayFloat32) {
  Model model;
  model.name = "resize";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 1, 3, 3}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 1, 1, 1}}};
  auto scales = std::make_shared<HostTensor>(DType::kFloat32, Dims{4});
  for (int i = 0; i < 4; ++i) scales->data<float>()[i] = i < 2 ? 1.0f : 1.0f / 3;
  model.initializers["scales"] = scales;
  model.nodes = {Node{"resize", "Resize", {"x", "", "scales"}, {"y"}, {}}};
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  EXPECT_EQ(model.initializers.at("scales")->dtype(), DType::kFloat32);
  EXPECT_EQ(NodeNamed(model, "resize").inputs,
            (std::vector<std::string>{"x/float16", "", "scales"}));
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = 2});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{2, 1, 1, 1}));
}

// A model exported in half precision runs as written.
TEST(ConvertPrecisionTest, AModelAlreadyInFloat16IsUnchanged) {
  Model model;
  model.name = "half";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat16, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat16, {-1, 8}}};
  model.initializers["w"] = std::make_shared<const HostTensor>(RandomTensor(DType::kFloat16, {8, 8}, 1));
  model.nodes = {
      Node{"mm", "MatMul", {"x", "w"}, {"mm"}, {}},
      Node{"y", "Softmax", {"mm"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16).ok());
  ASSERT_EQ(model.nodes.size(), 2u);
  EXPECT_EQ(model.nodes[1].inputs[0], "mm");
  EXPECT_EQ(model.initializers.size(), 1u);
}

TEST(ConvertPrecisionTest, AModelThatDoesNotBindNamesThePrecision) {
  Model model;
  model.name = "broken";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}};
  model.initializers["w"] = Weights({3, 3}, 1, 1.0f);
  model.nodes = {Node{"y", "MatMul", {"x", "w"}, {"y"}, {}}};
  const absl::Status status = ConvertPrecision(model, ModelPrecision::kBf16);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("precision bf16: "), std::string::npos) << status;
}

// A node named in float32_nodes is kept as the list's ops are, through the
// same Cast placement: its input cast to float32 once, its weight left
// float32, its result cast back for the reader in the target.
TEST(ConvertPrecisionTest, NamedNodesStayInFloat32AsTheListsOpsDo) {
  Model model = TransformerBlock();
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kFp16, {"o"}).ok());
  EXPECT_EQ(NodeNamed(model, "o").inputs, (std::vector<std::string>{"g/float32", "w2"}));
  EXPECT_EQ(NodeNamed(model, "o").outputs, (std::vector<std::string>{"o"}));
  EXPECT_EQ(NodeNamed(model, "ob").inputs, (std::vector<std::string>{"o/float16", "b2"}));
  EXPECT_EQ(model.initializers.at("w2")->dtype(), DType::kFloat32);
  EXPECT_EQ(model.initializers.at("w1")->dtype(), DType::kFloat16);
  const std::vector<std::string> casts = Casts(model);
  for (const char* cast : {"g->g/float32:1", "o->o/float16:10"}) {
    EXPECT_NE(std::find(casts.begin(), casts.end(), cast), casts.end())
        << cast << " in " << testing::PrintToString(casts);
  }
}

// auto is float16 with the nodes its calibration names (autocast.h); with
// none, it is fp16.
TEST(ConvertPrecisionTest, AutoWithoutNamedNodesIsFp16) {
  Model automatic = TransformerBlock();
  Model fp16 = TransformerBlock();
  ASSERT_TRUE(ConvertPrecision(automatic, ModelPrecision::kAuto).ok());
  ASSERT_TRUE(ConvertPrecision(fp16, ModelPrecision::kFp16).ok());
  EXPECT_EQ(Casts(automatic), Casts(fp16));
  EXPECT_EQ(automatic.initializers.at("wq")->dtype(), DType::kFloat16);
}

// A shape dim binds for types at extent 1, and the converted model at any.
TEST(ConvertPrecisionTest, AModelWithAShapeDimConverts) {
  Model model;
  model.name = "sequence";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, -1, 8}, {"", "sequence", ""}}};
  model.outputs = {{"y", DType::kFloat32, {-1, -1, 8}}};
  model.initializers["w"] = Weights({8, 8}, 1, 0.3f);
  model.nodes = {
      Node{"mm", "MatMul", {"x", "w"}, {"mm"}, {}},
      Node{"y", "Softmax", {"mm"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  const absl::Status status = ConvertPrecision(model, ModelPrecision::kFp16);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(model.initializers.at("w")->dtype(), DType::kFloat16);
  absl::StatusOr<BoundGraph> graph =
      BindModel(model, {.batch_size = 2, .dim_values = {{"sequence", 5}}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{2, 5, 8}));
}

// Note [Half-precision models written in float32]: TorchScript's .half()
// export in small. Float16 embeddings and a first float16 GEMM, its result
// Cast up to meet a float32 value, then a float32 GEMM on a float32 weight.
Model HalfModelWidenedToFloat32() {
  Model model;
  model.name = "widened";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat16, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}};
  model.initializers["w16"] =
      std::make_shared<const HostTensor>(ConvertFloats(*Weights({8, 8}, 1, 0.3f), DType::kFloat16));
  model.initializers["w32"] = Weights({8, 8}, 2, 0.3f);
  model.nodes = {
      Node{"h", "MatMul", {"x", "w16"}, {"h"}, {}},
      Node{"up", "Cast", {"h"}, {"h32"}, {{"to", kOnnxFloat}}},
      Node{"y", "MatMul", {"h32", "w32"}, {"y"}, {}},
  };
  return model;
}

TEST(Float32GemmsOfHalfModelTest, CountsTheGemmsAHalfModelComputesInFloat32) {
  const std::optional<std::string> notice =
      Float32GemmsOfHalfModel(HalfModelWidenedToFloat32(), ModelPrecision::kFp32);
  ASSERT_TRUE(notice.has_value());
  EXPECT_NE(notice->find("1 of its 2 MatMul, Gemm and Conv nodes compute in float32"),
            std::string::npos)
      << *notice;
  EXPECT_NE(notice->find("precision \"fp16\""), std::string::npos) << *notice;
  // tf32 also computes as written.
  EXPECT_TRUE(Float32GemmsOfHalfModel(HalfModelWidenedToFloat32(), ModelPrecision::kTf32));
}

TEST(Float32GemmsOfHalfModelTest, SaysNothingOfOtherModelsAndPrecisions) {
  // A 16-bit precision computes the GEMMs in 16 bits already.
  EXPECT_FALSE(Float32GemmsOfHalfModel(HalfModelWidenedToFloat32(), ModelPrecision::kFp16));
  EXPECT_FALSE(Float32GemmsOfHalfModel(HalfModelWidenedToFloat32(), ModelPrecision::kAuto));
  // A float32 model holds no 16-bit values.
  EXPECT_FALSE(Float32GemmsOfHalfModel(TransformerBlock(), ModelPrecision::kFp32));
  // A float16 model whose GEMMs are all float16.
  Model half = HalfModelWidenedToFloat32();
  half.nodes.resize(1);
  half.nodes[0].outputs = {"y"};
  half.outputs = {{"y", DType::kFloat16, {-1, 8}}};
  EXPECT_FALSE(Float32GemmsOfHalfModel(half, ModelPrecision::kFp32));
  // A model whose values do not bind: binding names the problem later.
  Model broken = HalfModelWidenedToFloat32();
  broken.nodes[2].inputs[1] = "w16";
  EXPECT_FALSE(Float32GemmsOfHalfModel(broken, ModelPrecision::kFp32));
}

TEST(ModelPrecisionTest, ParsesTheConfigSpellings) {
  EXPECT_EQ(*ParseModelPrecision(""), ModelPrecision::kFp32);
  EXPECT_EQ(*ParseModelPrecision("auto"), ModelPrecision::kAuto);
  for (ModelPrecision precision :
       {ModelPrecision::kFp32, ModelPrecision::kTf32, ModelPrecision::kFp16,
        ModelPrecision::kBf16, ModelPrecision::kAuto}) {
    absl::StatusOr<ModelPrecision> parsed = ParseModelPrecision(ModelPrecisionName(precision));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, precision);
  }
}

TEST(ModelPrecisionTest, RefusesOtherSpellingsListingTheChoices) {
  for (const char* text : {"fp8", "FP16", "half", "float16", "AUTO"}) {
    const absl::Status status = ParseModelPrecision(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find("fp32 (the default), tf32, fp16, bf16 or auto"),
              std::string::npos)
        << status;
  }
}

TEST(ModelPrecisionTest, Tf32IsPerModelOrServerWide) {
  EXPECT_TRUE(AllowsTf32(ModelPrecision::kTf32, false));
  EXPECT_FALSE(AllowsTf32(ModelPrecision::kFp32, false));
  EXPECT_TRUE(AllowsTf32(ModelPrecision::kFp32, true));
  EXPECT_FALSE(AllowsTf32(ModelPrecision::kFp16, false));
  EXPECT_FALSE(AllowsTf32(ModelPrecision::kAuto, false));
  EXPECT_TRUE(AllowsTf32(ModelPrecision::kAuto, true));
}

TEST(ModelPrecisionTest, KeepsTheAutocastFloat32OpsOnly) {
  for (const char* op : {"Softmax", "LogSoftmax", "LayerNormalization", "Exp", "Log", "Pow",
                         "ReduceSum", "ReduceMean", "CumSum"}) {
    EXPECT_TRUE(KeptInFloat32(op)) << op;
  }
  for (const char* op : {"MatMul", "Gemm", "Conv", "Add", "Erf", "Tanh", "ReduceMax", "Cast"}) {
    EXPECT_FALSE(KeptInFloat32(op)) << op;
  }
}

}  // namespace
}  // namespace graphserve
