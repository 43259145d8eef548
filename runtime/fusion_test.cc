#include "runtime/fusion.h"

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/tensor.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"

namespace graphserve {
namespace {

std::shared_ptr<const HostTensor> Weights(Dims dims, uint64_t seed) {
  return std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, std::move(dims), seed));
}

std::shared_ptr<const HostTensor> Scalar(float v) {
  auto t = std::make_shared<HostTensor>(DType::kFloat32, Dims{});
  *t->data<float>() = v;
  return t;
}

BoundGraph Bind(const Model& model, int64_t batch = 2) {
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = batch});
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *std::move(graph);
}

// Every value a step reads is a graph input, a constant, or written by an
// earlier step (through aliases); every node is in exactly one step or is an
// alias.
void ExpectValidOrder(const BoundGraph& graph, const FusionPlan& plan) {
  std::set<ValueId> written;
  for (ValueId id : graph.inputs) written.insert(id);
  std::vector<int> covered(graph.nodes.size(), 0);
  for (const FusedStep& step : plan.steps) {
    for (ValueId in : step.inputs) {
      const ValueId root = plan.alias_root[in];
      EXPECT_TRUE(graph.value(root).is_constant() || written.count(root))
          << "step of '" << graph.nodes[step.anchor].name << "' reads '" << graph.value(in).name
          << "' before it is written";
    }
    for (ValueId out : step.outputs) written.insert(out);
    for (int n : step.nodes) ++covered[n];
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    // Alias ops, views and Transposes of unit dims own no bytes: no step.
    const BoundNode& node = graph.nodes[n];
    const bool aliased =
        node.outputs.size() == 1 && plan.alias_root[node.outputs[0]] != node.outputs[0];
    EXPECT_EQ(covered[n], IsAliasOp(node.op_type) || aliased ? 0 : 1) << node.name;
  }
  for (ValueId out : graph.outputs) {
    EXPECT_TRUE(written.count(plan.alias_root[out]) || graph.value(out).is_constant());
  }
}

// ResNet's bottleneck with a downsample branch, in the order PyTorch exports
// it: the main path's last Conv comes before the downsample Conv whose output
// it is added to, so the fused Conv+Add+Relu step must wait for it.
Model ResidualBlock() {
  Model model;
  model.name = "block";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 4, 6, 6}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8, 6, 6}}};
  model.initializers["w1"] = Weights({8, 4, 3, 3}, 1);
  model.initializers["b1"] = Weights({8}, 2);
  model.initializers["wd"] = Weights({8, 4, 1, 1}, 3);
  model.initializers["bd"] = Weights({8}, 4);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  model.nodes = {
      {"main", "Conv", {"x", "w1", "b1"}, {"m"}, pad1},
      {"down", "Conv", {"x", "wd", "bd"}, {"d"}, {}},
      {"add", "Add", {"m", "d"}, {"s"}, {}},
      {"relu", "Relu", {"s"}, {"y"}, {}},
  };
  return model;
}

TEST(FusionTest, ResidualAddWaitsForItsBranch) {
  const BoundGraph graph = Bind(ResidualBlock());
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.conv_steps, 2);
  EXPECT_EQ(plan.fused_into_convs, 2);  // the Add and the Relu
  // The downsample Conv is issued first, then the main Conv with its epilogue.
  EXPECT_EQ(graph.nodes[plan.steps[0].anchor].name, "down");
  const FusedStep& main = plan.steps[1];
  EXPECT_EQ(graph.nodes[main.anchor].name, "main");
  EXPECT_TRUE(main.conv_residual);
  EXPECT_EQ(main.conv_activation.kind, Activation::kRelu);
  EXPECT_EQ(main.inputs.size(), 4u);  // X, W, B, residual
  EXPECT_EQ(graph.value(main.outputs[0]).name, "y");
}

TEST(FusionTest, NothingFusedWhenFusionIsOff) {
  const BoundGraph graph = Bind(ResidualBlock());
  const FusionPlan plan = PlanFusion(graph, {.fuse = false});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.steps.size(), 4u);
  EXPECT_EQ(plan.fused_into_convs, 0);
}

// Note [K-major weights]: under the option, the GEMMs whose B is a 2-D
// float32 constant read N-major (a MatMul's; a Gemm's without transB) read a
// transposed copy of their own, and B leaves the step's inputs.
TEST(FusionTest, Float32WeightsReadNMajorAreTransposedWhenAsked) {
  Model model;
  model.name = "weights";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 16}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 6}}};
  model.initializers["w1"] = Weights({16, 8}, 1);
  model.initializers["w2"] = Weights({8, 4}, 2);
  model.initializers["c2"] = Weights({1, 4}, 3);
  model.initializers["w3"] = Weights({6, 4}, 4);
  model.nodes = {
      {"matmul", "MatMul", {"x", "w1"}, {"h1"}, {}},
      {"gemm_c", "Gemm", {"h1", "w2", "c2"}, {"h2"}, {{"beta", 0.5f}}},
      {"gemm_tb", "Gemm", {"h2", "w3"}, {"y"}, {{"transB", int64_t{1}}}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plain = PlanFusion(graph, {});
  EXPECT_EQ(plain.transposed_weights, 0);
  for (const FusedStep& step : plain.steps) EXPECT_FALSE(step.gemm_weight_transposed);

  const FusionPlan plan = PlanFusion(graph, {.k_major_float32_weights = true});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.transposed_weights, 2);
  std::map<std::string, const FusedStep*> by_name;
  for (const FusedStep& step : plan.steps) by_name[graph.nodes[step.anchor].name] = &step;
  const FusedStep& matmul = *by_name.at("matmul");
  EXPECT_TRUE(matmul.gemm_weight_transposed);
  EXPECT_EQ(matmul.inputs, std::vector<ValueId>{graph.nodes[0].inputs[0]});  // A only
  const FusedStep& gemm_c = *by_name.at("gemm_c");
  EXPECT_TRUE(gemm_c.gemm_weight_transposed);
  EXPECT_EQ(gemm_c.inputs, (std::vector<ValueId>{graph.nodes[1].inputs[0], graph.nodes[1].inputs[2]}));
  EXPECT_FALSE(by_name.at("gemm_tb")->gemm_weight_transposed);  // already K-major
}

// x -> Gemm(W, b) -> Relu -> MatMul(W2) -> Add(b2) -> Reshape -> Sigmoid; and
// Conv -> Sigmoid, Mul (SiLU) and Conv -> Clip (ReLU6) beside it.
TEST(FusionTest, GemmTakesItsBiasButNotTheRelu) {
  Model model;
  model.name = "mlp";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 16}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 2, 4}}};
  model.initializers["w1"] = Weights({32, 16}, 1);
  model.initializers["b1"] = Weights({32}, 2);
  model.initializers["w2"] = Weights({32, 8}, 3);
  model.initializers["b2"] = Weights({8}, 4);
  auto shape = std::make_shared<HostTensor>(DType::kInt64, Dims{3});
  shape->data<int64_t>()[0] = -1;
  shape->data<int64_t>()[1] = 2;
  shape->data<int64_t>()[2] = 4;
  model.initializers["shape"] = shape;
  model.nodes = {
      {"fc1", "Gemm", {"x", "w1", "b1"}, {"h"}, {{"transB", int64_t{1}}}},
      {"relu", "Relu", {"h"}, {"a"}, {}},
      {"fc2", "MatMul", {"a", "w2"}, {"h2"}, {}},
      {"bias", "Add", {"h2", "b2"}, {"h3"}, {}},
      {"view", "Reshape", {"h3", "shape"}, {"r"}, {}},
      {"sig", "Sigmoid", {"r"}, {"y"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 4u);        // fc1, relu, fc2+bias, sig (the Reshape is an alias)
  EXPECT_EQ(plan.gemm_bias_epilogues, 2);  // fc1's own C, fc2's Add
  EXPECT_EQ(plan.steps[0].kind, StepKind::kGemm);
  EXPECT_EQ(plan.steps[0].inputs.size(), 2u);        // C goes into the epilogue, not read
  EXPECT_EQ(plan.steps[1].kind, StepKind::kKernel);  // Relu on its own: NaN propagates
  EXPECT_EQ(plan.steps[2].gemm_bias, graph.nodes[3].inputs[1]);
  EXPECT_EQ(plan.alias_root[graph.outputs[0]], graph.outputs[0]);
}

TEST(FusionTest, ConvEpiloguesTakeSiluAndClip) {
  Model model;
  model.name = "mobile";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 4, 5, 5}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 4, 5, 5}}};
  model.initializers["w1"] = Weights({4, 1, 3, 3}, 1);  // depthwise
  model.initializers["w2"] = Weights({4, 4, 1, 1}, 2);
  model.initializers["zero"] = Scalar(0.0f);
  model.initializers["six"] = Scalar(6.0f);
  model.nodes = {
      {"dw",
       "Conv",
       {"x", "w1"},
       {"c"},
       {{"group", int64_t{4}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"clip", "Clip", {"c", "zero", "six"}, {"q"}, {}},
      {"pw", "Conv", {"q", "w2"}, {"e"}, {}},
      {"sig", "Sigmoid", {"e"}, {"g"}, {}},
      {"silu", "Mul", {"g", "e"}, {"y"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].conv_activation.kind, Activation::kClip);
  EXPECT_EQ(plan.steps[0].conv_activation.clip_max, 6.0f);
  EXPECT_EQ(plan.steps[1].conv_activation.kind, Activation::kSilu);
  EXPECT_EQ(plan.fused_into_convs, 3);
}

// A Conv output that is also a graph output keeps its own value: nothing is
// fused after that Conv. The Add then goes to the other branch's Conv, with
// the returned value as its residual.
TEST(FusionTest, GraphOutputsAreNeverFusedAway) {
  Model model = ResidualBlock();
  model.outputs.push_back({"m", DType::kFloat32, {-1, 8, 6, 6}});
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(graph.nodes[plan.steps[0].anchor].name, "main");
  EXPECT_EQ(graph.value(plan.steps[0].outputs[0]).name, "m");
  EXPECT_FALSE(plan.steps[0].conv_residual);
  EXPECT_EQ(graph.nodes[plan.steps[1].anchor].name, "down");
  EXPECT_TRUE(plan.steps[1].conv_residual);
  EXPECT_EQ(graph.value(plan.steps[1].inputs.back()).name, "m");
  EXPECT_EQ(plan.fused_into_convs, 2);
}

std::shared_ptr<const HostTensor> Int64s(std::vector<int64_t> values, Dims dims) {
  auto tensor = std::make_shared<HostTensor>(DType::kInt64, std::move(dims));
  std::copy(values.begin(), values.end(), tensor->data<int64_t>());
  return tensor;
}

// nn.MultiheadAttention's q, k and v as both exporters write them: a fused
// projection stacked [3, batch, width] by a Transpose, then a Gather of each
// index along dim 0, here added and multiplied. `width` sets the blocks'
// bytes; "vout", a Gather reshaped into a graph output, stays a step.
Model StackedProjection(int64_t width) {
  Model model;
  model.name = "stacked";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, width}}};
  model.outputs = {{"z", DType::kFloat32, {-1, width}}, {"vout", DType::kFloat32, {-1, width}}};
  model.initializers["w"] = Weights({width, 3 * width}, 7);
  model.initializers["split"] = Int64s({-1, 3, width}, {3});
  model.initializers["flat"] = Int64s({-1, width}, {2});
  for (int64_t i = 0; i < 3; ++i) model.initializers[absl::StrCat("i", i)] = Int64s({i}, {});
  model.initializers["last"] = Int64s({-1}, {});
  model.nodes = {
      {"proj", "MatMul", {"x", "w"}, {"p"}, {}},
      {"heads", "Reshape", {"p", "split"}, {"p3"}, {}},
      {"stack", "Transpose", {"p3"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0, 2}}}},
      {"select_q", "Gather", {"t", "i0"}, {"q"}, {}},
      {"select_k", "Gather", {"t", "i1"}, {"k"}, {}},
      {"select_v", "Gather", {"t", "last"}, {"v"}, {}},
      {"select_vout", "Gather", {"t", "i2"}, {"vg"}, {}},
      {"add", "Add", {"q", "k"}, {"s"}, {}},
      {"mul", "Mul", {"s", "v"}, {"z"}, {}},
      {"vout_view", "Reshape", {"vg", "flat"}, {"vout"}, {}},
  };
  return model;
}

// Note [Contiguous views]: q, k and v read the stacked projection in place,
// each its block's bytes into it (an index of -1 is the last block); the
// Gather that reaches a graph output through a Reshape copies.
TEST(FusionTest, GathersOfStackedBlocksAreViewsIntoTheStack) {
  const BoundGraph graph = Bind(StackedProjection(64), /*batch=*/2);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.contiguous_views, 3);
  const auto value = [&](const std::string& name) {
    for (size_t v = 0; v < graph.values.size(); ++v) {
      if (graph.values[v].name == name) return static_cast<ValueId>(v);
    }
    ADD_FAILURE() << "no value " << name;
    return ValueId{0};
  };
  const size_t block = 2 * 64 * sizeof(float);  // [batch 2, 64] floats
  for (const auto& [name, offset] :
       std::vector<std::pair<std::string, size_t>>{{"q", 0}, {"k", block}, {"v", 2 * block}}) {
    EXPECT_EQ(plan.alias_root[value(name)], value("t")) << name;
    EXPECT_EQ(plan.alias_offset[value(name)], offset) << name;
  }
  EXPECT_EQ(plan.alias_root[value("vg")], value("vg"));
  EXPECT_EQ(plan.alias_offset[value("vout")], 0u);
  // proj, stack, select_vout, add + mul (one pointwise region).
  EXPECT_EQ(plan.steps.size(), 4u);
}

// A Transpose that moves only dims of extent 1 changes no byte: at batch 1,
// the batch-first [1, seq, width] and sequence-first [seq, 1, width]
// layouts are one. At batch 2 it is a copy.
TEST(FusionTest, TransposesOfUnitDimsAreAliases) {
  Model model;
  model.name = "seq_first";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 4, 8}}};
  model.outputs = {{"y", DType::kFloat32, {4, -1, 8}}};
  model.nodes = {
      {"relu", "Relu", {"x"}, {"r"}, {}},
      {"seq_first", "Transpose", {"r"}, {"t"}, {{"perm", std::vector<int64_t>{1, 0, 2}}}},
      {"sigmoid", "Sigmoid", {"t"}, {"y"}, {}},
  };
  for (const auto& [batch, steps] : {std::pair<int64_t, size_t>{1, 2}, {2, 3}}) {
    const BoundGraph graph = Bind(model, batch);
    const FusionPlan plan = PlanFusion(graph, {.fuse = false});
    ExpectValidOrder(graph, plan);
    EXPECT_EQ(plan.steps.size(), steps) << "batch " << batch;
  }
}

// A block whose bytes would start off the arena's alignment is copied.
TEST(FusionTest, MisalignedBlocksAreCopied) {
  const BoundGraph graph = Bind(StackedProjection(8), /*batch=*/1);  // 32-byte blocks
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.contiguous_views, 1);  // only q's, at offset 0
}

// Attention's scales as the exporters write them: the dynamo exporter scales
// q and k^T by sqrt(1/sqrt(d)) each, TorchScript divides the scores by
// sqrt(d). Both go into the MatMul's alpha; a scale read by another node, or
// a zero scale, does not.
Model ScaledScores(bool scale_operands, float score_divisor) {
  Model model;
  model.name = "scaled_scores";
  model.opset = 17;
  model.inputs.push_back({"q", DType::kFloat32, {-1, 4, 8}});
  model.inputs.push_back({"kt", DType::kFloat32, {-1, 8, 4}});
  model.outputs.push_back({"p", DType::kFloat32, {-1, 4, 4}});
  model.initializers["s"] = Scalar(0.5f);
  model.initializers["d"] = Scalar(score_divisor);
  std::string q = "q", kt = "kt";
  if (scale_operands) {
    model.nodes.push_back({"scale_q", "Mul", {"q", "s"}, {"qs"}, {}});
    model.nodes.push_back({"scale_k", "Mul", {"s", "kt"}, {"ks"}, {}});
    q = "qs";
    kt = "ks";
  }
  model.nodes.push_back({"scores", "MatMul", {q, kt}, {"a"}, {}});
  model.nodes.push_back({"scale", "Div", {"a", "d"}, {"b"}, {}});
  model.nodes.push_back({"softmax", "Softmax", {"b"}, {"p"}, {{"axis", int64_t{-1}}}});
  return model;
}

TEST(FusionTest, GemmTakesScaleConstantsIntoAlpha) {
  const BoundGraph graph = Bind(ScaledScores(/*scale_operands=*/true, 2.0f));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 2u);  // the scaled MatMul, the Softmax
  const FusedStep& gemm = plan.steps[0];
  EXPECT_EQ(gemm.kind, StepKind::kGemm);
  EXPECT_EQ(gemm.nodes.size(), 4u);
  EXPECT_FLOAT_EQ(gemm.gemm_scale, 0.5f * 0.5f / 2.0f);
  EXPECT_EQ(graph.value(gemm.inputs[0]).name, "q");
  EXPECT_EQ(graph.value(gemm.inputs[1]).name, "kt");
  EXPECT_EQ(plan.gemm_scales, 1);
}

TEST(FusionTest, ZeroScalesStayOutOfAlpha) {
  const BoundGraph graph = Bind(ScaledScores(/*scale_operands=*/false, 0.0f));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.gemm_scales, 0);
  EXPECT_EQ(plan.steps[0].nodes.size(), 1u);
}

TEST(FusionTest, NoScalesTakenWhenFusionIsOff) {
  const BoundGraph graph = Bind(ScaledScores(/*scale_operands=*/true, 2.0f));
  const FusionPlan plan = PlanFusion(graph, {.fuse = false});
  EXPECT_EQ(plan.gemm_scales, 0);
  for (const FusedStep& step : plan.steps) EXPECT_EQ(step.gemm_scale, 1.0f);
}

// A transformer block's residual stream: s = x + a, y = LayerNorm(s), and s
// read again by the next residual Add (after the LayerNorm) when
// `reread_after`, or by a node between the Add and the LayerNorm otherwise.
Model ResidualLayerNorm(bool reread_after) {
  Model model;
  model.name = "residual_layer_norm";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 8}});
  model.inputs.push_back({"a", DType::kFloat32, {-1, 8}});
  model.outputs.push_back({"z", DType::kFloat32, {-1, 8}});
  model.initializers["gamma"] = Weights({8}, 3);
  model.initializers["beta"] = Weights({8}, 4);
  model.nodes.push_back({"residual", "Add", {"x", "a"}, {"s"}, {}});
  if (!reread_after) model.nodes.push_back({"early", "Relu", {"s"}, {"r"}, {}});
  model.nodes.push_back(
      {"norm", "LayerNormalization", {"s", "gamma", "beta"}, {"y"}, {{"axis", int64_t{-1}}}});
  model.nodes.push_back({"next", "Add", {reread_after ? "s" : "r", "y"}, {"z"}, {}});
  return model;
}

TEST(FusionTest, ResidualAddRunsWithItsLayerNormAndStillWritesTheSum) {
  const BoundGraph graph = Bind(ResidualLayerNorm(/*reread_after=*/true));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.add_layer_norms, 1);
  ASSERT_EQ(plan.steps.size(), 2u);
  const FusedStep& fused = plan.steps[0];
  EXPECT_EQ(fused.kind, StepKind::kAddLayerNorm);
  EXPECT_EQ(fused.nodes.size(), 2u);
  EXPECT_EQ(fused.inputs.size(), 4u);  // x, a, gamma, beta
  ASSERT_EQ(fused.outputs.size(), 2u);
  EXPECT_EQ(graph.value(fused.outputs[1]).name, "s");
}

TEST(FusionTest, ResidualAddReadBeforeTheLayerNormStaysApart) {
  const BoundGraph graph = Bind(ResidualLayerNorm(/*reread_after=*/false));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.add_layer_norms, 0);
}

// A decoder's pre-norm residual stream: s = x + a, y = RMSNormalization(s),
// s read again after it. The step is the same as LayerNorm's, without B.
TEST(FusionTest, ResidualAddRunsWithItsRmsNorm) {
  Model model;
  model.name = "residual_rms_norm";
  model.opset = 23;
  model.inputs.push_back({"x", DType::kFloat16, {-1, 8}});
  model.inputs.push_back({"a", DType::kFloat16, {-1, 8}});
  model.outputs.push_back({"z", DType::kFloat16, {-1, 8}});
  model.initializers["gamma"] =
      std::make_shared<const HostTensor>(ConvertFloats(*Weights({8}, 3), DType::kFloat16));
  model.nodes = {
      {"residual", "Add", {"x", "a"}, {"s"}, {}},
      {"norm", "RMSNormalization", {"s", "gamma"}, {"y"}, {}},
      {"next", "Add", {"s", "y"}, {"z"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.add_layer_norms, 1);
  ASSERT_FALSE(plan.steps.empty());
  const FusedStep& fused = plan.steps[0];
  EXPECT_EQ(fused.kind, StepKind::kAddLayerNorm);
  EXPECT_EQ(fused.inputs.size(), 3u);  // x, a, gamma
  ASSERT_EQ(fused.outputs.size(), 2u);
  EXPECT_EQ(graph.value(fused.outputs[1]).name, "s");
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

// The dynamo exporter's attention (Note [Fused attention]): q and k^T
// scaled by 0.5 each, a mask Add, Softmax, the NaN guard, the context MatMul.
Model DynamoAttention() {
  Model model;
  model.name = "attention";
  model.opset = 17;
  model.inputs = {{"q", DType::kFloat32, {-1, 2, 8, 4}},
                  {"k", DType::kFloat32, {-1, 2, 8, 4}},
                  {"v", DType::kFloat32, {-1, 2, 8, 4}},
                  {"mask", DType::kFloat32, {-1, 1, 8, 8}}};
  model.outputs = {{"o", DType::kFloat32, {-1, 2, 8, 4}}};
  model.initializers["c"] = Scalar(0.5f);
  model.initializers["zero"] = Scalar(0.0f);
  model.nodes = {
      {"k_t", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}}},
      {"q_scale", "Mul", {"q", "c"}, {"qs"}, {}},
      {"k_scale", "Mul", {"kt", "c"}, {"ks"}, {}},
      {"scores", "MatMul", {"qs", "ks"}, {"s"}, {}},
      {"mask_add", "Add", {"s", "mask"}, {"a"}, {}},
      {"softmax", "Softmax", {"a"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"is_nan", "IsNaN", {"p"}, {"n"}, {}},
      {"guard", "Where", {"n", "zero", "p"}, {"w"}, {}},
      {"context", "MatMul", {"w", "v"}, {"o"}, {}},
  };
  return model;
}

TEST(FusionTest, AttentionChainIsOneStep) {
  const BoundGraph graph = Bind(DynamoAttention());
  const FusionPlan plan = PlanFusion(graph, {.fuse_attention = FuseAttention::kAll});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.attentions, 1);
  ASSERT_EQ(plan.steps.size(), 1u);  // k's Transpose is read in place
  const FusedStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, StepKind::kAttention);
  EXPECT_EQ(step.nodes.size(), 9u);
  EXPECT_FLOAT_EQ(step.attention.scale, 0.25f);
  EXPECT_TRUE(step.attention.has_mask);
  EXPECT_TRUE(step.attention.nan_to_zero);
  ASSERT_EQ(step.inputs.size(), 4u);
  EXPECT_EQ(graph.value(step.inputs[0]).name, "q");
  EXPECT_EQ(graph.value(step.inputs[1]).name, "k");
  EXPECT_EQ(graph.value(step.inputs[2]).name, "v");
  EXPECT_EQ(graph.value(step.inputs[3]).name, "mask");
  EXPECT_EQ(step.attention.q_perm, kIdentityPerm);
  EXPECT_EQ(step.attention.k_perm, (AttentionPerm{0, 1, 3, 2}));
}

// Note [Attention views]: q, k and v arrive as [batch, seq, heads, d] and
// the output leaves as that, through the Transposes exporters write.
Model HeadsSplitAttention() {
  Model model;
  model.name = "attention";
  model.opset = 17;
  model.inputs = {{"q", DType::kFloat16, {-1, 8, 2, 16}},
                  {"k", DType::kFloat16, {-1, 8, 2, 16}},
                  {"v", DType::kFloat16, {-1, 8, 2, 16}},
                  {"mask", DType::kFloat16, {-1, 1, 1, 8}}};
  model.outputs = {{"y", DType::kFloat16, {-1, 8, 2, 16}}};
  model.initializers["four"] = std::make_shared<const HostTensor>(
      ConvertFloats(*Scalar(4.0f), DType::kFloat16));
  model.nodes = {
      {"q_t", "Transpose", {"q"}, {"qt"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}},
      {"k_t", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}},
      {"v_t", "Transpose", {"v"}, {"vt"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}},
      {"scores", "MatMul", {"qt", "kt"}, {"s0"}, {}},
      {"scale", "Div", {"s0", "four"}, {"s"}, {}},
      {"mask_add", "Add", {"s", "mask"}, {"a"}, {}},
      {"softmax", "Softmax", {"a"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"context", "MatMul", {"p", "vt"}, {"o"}, {}},
      {"o_t", "Transpose", {"o"}, {"y"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}},
  };
  return model;
}

TEST(FusionTest, AttentionReadsTheHeadsTransposesInPlace) {
  const BoundGraph graph = Bind(HeadsSplitAttention());
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 1u);
  const FusedStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, StepKind::kAttention);
  EXPECT_EQ(step.nodes.size(), 9u);
  ASSERT_EQ(step.inputs.size(), 4u);
  EXPECT_EQ(graph.value(step.inputs[0]).name, "q");
  EXPECT_EQ(graph.value(step.inputs[1]).name, "k");
  EXPECT_EQ(graph.value(step.inputs[2]).name, "v");
  ASSERT_EQ(step.outputs.size(), 1u);
  EXPECT_EQ(graph.value(step.outputs[0]).name, "y");
  EXPECT_EQ(step.attention.q_perm, (AttentionPerm{0, 2, 1, 3}));
  EXPECT_EQ(step.attention.k_perm, (AttentionPerm{0, 2, 3, 1}));
  EXPECT_EQ(step.attention.v_perm, (AttentionPerm{0, 2, 1, 3}));
  // y [b, s, h, d] = Transpose(o [b, h, s, d]): o's dim i is y's perm[i].
  EXPECT_EQ(step.attention.out_perm, (AttentionPerm{0, 2, 1, 3}));
}

// A Transpose whose output something else reads too stays a copy.
TEST(FusionTest, SharedTransposeStaysOutsideTheAttention) {
  Model model = HeadsSplitAttention();
  model.outputs.push_back({"kt", DType::kFloat16, {-1, 2, 16, 8}});
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.attentions, 1);
  for (const FusedStep& step : plan.steps) {
    if (step.kind != StepKind::kAttention) continue;
    EXPECT_EQ(graph.value(step.inputs[1]).name, "kt");
    EXPECT_EQ(step.attention.k_perm, kIdentityPerm);
    EXPECT_EQ(graph.value(step.inputs[0]).name, "q");
  }
}

TEST(FusionTest, AttentionWithAnIntermediateOutputStaysApart) {
  Model model = DynamoAttention();
  model.outputs.push_back({"p", DType::kFloat32, {-1, 2, 8, 8}});  // the probabilities
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {.fuse_attention = FuseAttention::kAll});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.attentions, 0);
}

TEST(FusionTest, NoAttentionWhenFusionIsOff) {
  const BoundGraph graph = Bind(DynamoAttention());
  EXPECT_EQ(PlanFusion(graph, {.fuse = false, .fuse_attention = FuseAttention::kAll}).attentions, 0);
}

// Note [Masked softmax]: a float32 chain left unfused (kHalf fuses 16-bit
// chains only) runs its mask Add, Softmax and NaN guard as one step between
// the two GEMMs, which take the scales into alpha; without the mask and the
// guard a Softmax stays a node of its own.
TEST(FusionTest, UnfusedAttentionChainHasAMaskedSoftmax) {
  constexpr FusionOptions kUnfusedFloat32 = {.fuse_attention = FuseAttention::kHalf};
  Model model = DynamoAttention();
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, kUnfusedFloat32);
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.attentions, 0);
  EXPECT_EQ(plan.masked_softmaxes, 1);
  EXPECT_EQ(plan.gemm_scales, 1);
  // q k^T reads k with op(T) (Note [Transposed GEMM operands]), then the
  // masked softmax, the context.
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.gemm_transposes, 1);
  EXPECT_TRUE(plan.steps[0].gemm_trans_b);
  EXPECT_FALSE(plan.steps[0].gemm_trans_a);
  EXPECT_EQ(graph.value(plan.steps[0].inputs[1]).name, "k");
  const FusedStep& softmax = plan.steps[1];
  EXPECT_EQ(softmax.kind, StepKind::kMaskedSoftmax);
  EXPECT_EQ(softmax.nodes.size(), 4u);  // Add, Softmax, IsNaN, Where
  EXPECT_TRUE(softmax.softmax_has_mask);
  EXPECT_TRUE(softmax.softmax_nan_to_zero);
  ASSERT_EQ(softmax.inputs.size(), 2u);
  EXPECT_EQ(graph.value(softmax.inputs[0]).name, "s");
  EXPECT_EQ(graph.value(softmax.inputs[1]).name, "mask");
  EXPECT_EQ(graph.value(softmax.outputs[0]).name, "w");
  EXPECT_EQ(PlanFusion(graph, {.fuse = false}).masked_softmaxes, 0);
  EXPECT_EQ(PlanFusion(graph, {.fuse_attention = FuseAttention::kAll}).masked_softmaxes, 0);

  // The TorchScript form: no guard, the mask alone.
  model.nodes.erase(model.nodes.begin() + 6, model.nodes.begin() + 8);
  model.nodes.back().inputs[0] = "p";
  const BoundGraph no_guard = Bind(model);
  const FusionPlan masked = PlanFusion(no_guard, kUnfusedFloat32);
  ExpectValidOrder(no_guard, masked);
  ASSERT_EQ(masked.masked_softmaxes, 1);
  EXPECT_FALSE(masked.steps[1].softmax_nan_to_zero);
  EXPECT_EQ(masked.steps[1].nodes.size(), 2u);

  // Neither: the Softmax alone.
  model.nodes[4] = {"no_mask", "Identity", {"s"}, {"a"}, {}};
  EXPECT_EQ(PlanFusion(Bind(model), kUnfusedFloat32).masked_softmaxes, 0);
}

// Model DynamoAttention in float16 fuses by default (cuDNN's engines); in
// float32 by default over few keys and many query rows only (our own
// kernel: slower than the chain's GEMMs over many keys, and below a wave of
// blocks), always when asked, never under kHalf.
TEST(FusionTest, HalfAttentionFusedByDefaultFloatOverFewKeysAndManyRows) {
  Model model = DynamoAttention();
  // [batch, 2 heads, keys, 4] at `batch` (the mask [batch, 1, keys, keys]).
  const auto at = [&model](int64_t batch, int64_t keys) {
    Model m = model;
    for (auto* values : {&m.inputs, &m.outputs}) {
      for (ValueInfo& value : *values) value.dims[2] = keys;
    }
    m.inputs[3].dims[3] = keys;
    return Bind(m, batch);
  };
  const int64_t keys = kShortFloat32AttentionKeys;
  const int64_t enough = kMinFusedFloat32AttentionRows / (2 * keys);  // batches
  EXPECT_EQ(PlanFusion(at(enough, keys), {}).attentions, 1);
  EXPECT_EQ(PlanFusion(at(enough - 1, keys), {}).attentions, 0);     // too few rows
  EXPECT_EQ(PlanFusion(at(enough, keys + 1), {}).attentions, 0);     // too many keys
  EXPECT_EQ(PlanFusion(at(enough, keys), {.fuse_attention = FuseAttention::kHalf}).attentions,
            0);
  EXPECT_EQ(PlanFusion(at(1, keys + 1), {.fuse_attention = FuseAttention::kAll}).attentions, 1);
  EXPECT_EQ(PlanFusion(Bind(model), {}).attentions, 0);  // batch 2, 8 keys: 32 rows
  for (auto* values : {&model.inputs, &model.outputs}) {
    for (auto& value : *values) value.dtype = DType::kFloat16;
  }
  for (const char* name : {"c", "zero"}) {
    model.initializers[name] = std::make_shared<const HostTensor>(
        ConvertFloats(*model.initializers[name], DType::kFloat16));
  }
  const BoundGraph graph = Bind(model);
  EXPECT_EQ(PlanFusion(graph, {}).attentions, 1);
  EXPECT_EQ(PlanFusion(graph, {.fuse_attention = FuseAttention::kNone}).attentions, 0);
}

}  // namespace
}  // namespace graphserve

// Note [16-bit fusions]: the same models in float16 and bfloat16, as an
// exporter writes them after .half(): every float32 input, output and
// initializer of the float32 model in `dtype`, constants rounded once.
namespace graphserve {
namespace {

Model AsType(Model model, DType dtype) {
  for (auto* values : {&model.inputs, &model.outputs}) {
    for (ValueInfo& value : *values) {
      if (value.dtype == DType::kFloat32) value.dtype = dtype;
    }
  }
  for (auto& [name, tensor] : model.initializers) {
    if (tensor->dtype() == DType::kFloat32) {
      tensor = std::make_shared<const HostTensor>(ConvertFloats(*tensor, dtype));
    }
  }
  return model;
}

class HalfFusionTest : public ::testing::TestWithParam<DType> {};

// The erf GELU chain PyTorch exports for nn.GELU after a bias Add, with the
// constants it writes (sqrt(2) rounded to the model's type: 1.4140625), or
// with `sqrt2` instead.
Model ErfGeluChain(float sqrt2 = 1.4142135381698608f, float half = 0.5f) {
  Model model;
  model.name = "erf_gelu";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8}}};
  model.initializers["sqrt2"] = Scalar(sqrt2);
  model.initializers["one"] = Scalar(1.0f);
  model.initializers["half"] = Scalar(half);
  model.nodes = {
      {"div", "Div", {"x", "sqrt2"}, {"d"}, {}},
      {"erf", "Erf", {"d"}, {"e"}, {}},
      {"add", "Add", {"e", "one"}, {"a"}, {}},
      {"mul", "Mul", {"x", "a"}, {"m"}, {}},
      {"half_mul", "Mul", {"m", "half"}, {"y"}, {}},
  };
  return model;
}

TEST_P(HalfFusionTest, ErfGeluChainIsOneStep) {
  const BoundGraph graph = Bind(AsType(ErfGeluChain(), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.erf_gelus, 1);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kind, StepKind::kErfGelu);
  EXPECT_EQ(plan.steps[0].nodes.size(), 5u);
  EXPECT_EQ(graph.value(plan.steps[0].inputs[0]).name, "x");
  EXPECT_EQ(graph.value(plan.steps[0].outputs[0]).name, "y");
}

// Another function: a divisor more than half a unit in the last place of the
// type from sqrt(2), or a last factor that is not 0.5. Such chains become a
// pointwise region (not the GELU kernel), which computes what they say.
TEST_P(HalfFusionTest, ChainsThatAreNotGeluStayApartFromTheGeluKernel) {
  for (const Model& model : {ErfGeluChain(/*sqrt2=*/1.5f), ErfGeluChain(1.4142135f, 0.6f)}) {
    const BoundGraph graph = Bind(AsType(model, GetParam()));
    const FusionPlan plan = PlanFusion(graph, {});
    ExpectValidOrder(graph, plan);
    EXPECT_EQ(plan.erf_gelus, 0);
    EXPECT_EQ(plan.pointwise_regions, 1);
    EXPECT_EQ(plan.fused_into_pointwise, 5);
  }
}

TEST_P(HalfFusionTest, ScaleConstantsGoIntoAlpha) {
  const BoundGraph graph = Bind(AsType(ScaledScores(/*scale_operands=*/true, 2.0f), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 2u);  // the scaled MatMul, the Softmax
  const FusedStep& gemm = plan.steps[0];
  EXPECT_EQ(gemm.kind, StepKind::kGemm);
  EXPECT_EQ(gemm.nodes.size(), 4u);
  EXPECT_FLOAT_EQ(gemm.gemm_scale, 0.5f * 0.5f / 2.0f);  // exact in every type
  EXPECT_EQ(graph.value(gemm.inputs[0]).name, "q");
  EXPECT_EQ(graph.value(gemm.inputs[1]).name, "kt");
  EXPECT_EQ(plan.gemm_scales, 1);
}

// The scale takes the constant's value as the model stores it: 1/sqrt(8)
// rounded to the type, widened exactly.
TEST_P(HalfFusionTest, AlphaIsTheStoredConstant) {
  constexpr float kInvSqrt8 = 0.35355339f;  // the dynamo exporter's d^-1/2 for d = 8
  const BoundGraph graph = Bind(AsType(ScaledScores(/*scale_operands=*/false, 1.0f / kInvSqrt8),
                                       GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.gemm_scales, 1);
  HostTensor divisor(DType::kFloat32, Dims{});
  divisor.data<float>()[0] = 1.0f / kInvSqrt8;
  const HostTensor stored = ConvertFloats(ConvertFloats(divisor, GetParam()), DType::kFloat32);
  EXPECT_EQ(plan.steps[0].gemm_scale, 1.0f / stored.data<float>()[0]);
}

TEST_P(HalfFusionTest, ZeroScalesStayOutOfAlpha) {
  const BoundGraph graph = Bind(AsType(ScaledScores(/*scale_operands=*/false, 0.0f), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.gemm_scales, 0);
  EXPECT_EQ(plan.steps[0].nodes.size(), 1u);
}

// GPT-2's tanh GELU, eight nodes over x, in one region.
Model TanhGelu() {
  Model model;
  model.name = "tanh_gelu";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 16}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 16}}};
  model.initializers["half"] = Scalar(0.5f);
  model.initializers["three"] = Scalar(3.0f);
  model.initializers["k"] = Scalar(0.044715f);
  model.initializers["c"] = Scalar(0.7978845608f);
  model.initializers["one"] = Scalar(1.0f);
  model.nodes = {
      {"half_x", "Mul", {"x", "half"}, {"a"}, {}},
      {"cube", "Pow", {"x", "three"}, {"b"}, {}},
      {"scale_cube", "Mul", {"b", "k"}, {"c1"}, {}},
      {"inner", "Add", {"x", "c1"}, {"d"}, {}},
      {"scale_inner", "Mul", {"d", "c"}, {"e"}, {}},
      {"tanh", "Tanh", {"e"}, {"f"}, {}},
      {"plus_one", "Add", {"f", "one"}, {"g"}, {}},
      {"gelu", "Mul", {"a", "g"}, {"y"}, {}},
  };
  return model;
}

TEST_P(HalfFusionTest, ElementwiseChainIsOneRegion) {
  const BoundGraph graph = Bind(AsType(TanhGelu(), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kind, StepKind::kPointwise);
  EXPECT_EQ(plan.pointwise_regions, 1);
  EXPECT_EQ(plan.fused_into_pointwise, 8);
  ASSERT_EQ(plan.steps[0].inputs.size(), 1u);
  EXPECT_EQ(graph.value(plan.steps[0].inputs[0]).name, "x");
}

TEST_P(HalfFusionTest, NothingFusedWhenFusionIsOff) {
  for (const Model& model : {TanhGelu(), ErfGeluChain(), ScaledScores(true, 2.0f)}) {
    const BoundGraph graph = Bind(AsType(model, GetParam()));
    const FusionPlan plan = PlanFusion(graph, {.fuse = false});
    EXPECT_EQ(plan.steps.size(), graph.nodes.size()) << model.name;
    EXPECT_EQ(plan.erf_gelus + plan.pointwise_regions + plan.gemm_scales, 0) << model.name;
  }
}

// x (of the type) -> Tanh -> Cast to float32 -> Sigmoid, Mul (SiLU) -> Cast
// back -> Neg -> Abs -> y: a region holds one type, so the Casts stay steps
// of their own, the float32 SiLU and the 16-bit Neg, Abs are a region each,
// and the Tanh (whose only reader is a Cast) stays alone.
TEST_P(HalfFusionTest, RegionsStopAtCasts) {
  const DType dtype = GetParam();
  Model model;
  model.name = "mixed";
  model.opset = 17;
  model.inputs = {{"x", dtype, {-1, 8}}};
  model.outputs = {{"y", dtype, {-1, 8}}};
  model.nodes = {
      {"tanh", "Tanh", {"x"}, {"t"}, {}},
      {"widen", "Cast", {"t"}, {"w"}, {{"to", static_cast<int64_t>(DType::kFloat32)}}},
      {"sigmoid", "Sigmoid", {"w"}, {"s"}, {}},
      {"silu", "Mul", {"w", "s"}, {"m"}, {}},
      {"narrow", "Cast", {"m"}, {"n"}, {{"to", static_cast<int64_t>(dtype)}}},
      {"neg", "Neg", {"n"}, {"g"}, {}},
      {"abs", "Abs", {"g"}, {"y"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.pointwise_regions, 2);
  EXPECT_EQ(plan.fused_into_pointwise, 4);
  ASSERT_EQ(plan.steps.size(), 5u);  // tanh, widen, the SiLU, narrow, the Neg and Abs
  for (const FusedStep& step : plan.steps) {
    if (step.kind != StepKind::kPointwise) continue;
    const DType type = graph.value(step.outputs[0]).dtype;
    for (const int n : step.nodes) {
      EXPECT_EQ(graph.value(graph.nodes[n].outputs[0]).dtype, type) << graph.nodes[n].name;
    }
  }
}

// A stem Conv into a MaxPool, then a block with a downsample branch in
// PyTorch's export order (the main path's Conv before the downsample Conv,
// as ResidualBlock), and a last Conv adding the block's output to itself
// into a global pool:
//   stem   Conv 3x3 (x)                -> s   (MaxPool reads it)
//   pool   MaxPool(s)                  -> p
//   conv1  Relu(Conv 3x3 (p))          -> a   (conv2 reads it)
//   conv2  Relu(Conv 3x3 (a) + d)      -> r   (conv3's x and residual)
//   down   Conv 3x3, or 1x1 (p)        -> d   (conv2's residual)
//   conv3  Relu(Conv 3x3, or 1x1 (r) + r) -> y3 (the global pool reads it)
//   gap    GlobalAveragePool(y3)       -> y
// With ChainEnds::kAbs, Abs stands for the pool and the global pool (an op
// that only reads NCHW).
enum class ChainEnds { kPools, kAbs };
Model ConvChain(bool pointwise_tail, ChainEnds ends = ChainEnds::kAbs) {
  Model model;
  model.name = "conv_chain";
  model.opset = 17;
  const int64_t k = pointwise_tail ? 1 : 3;
  const bool pools = ends == ChainEnds::kPools;
  model.inputs = {{"x", DType::kFloat32, {-1, 4, 8, 8}}};
  model.outputs = {{"y", DType::kFloat32, pools ? Dims{-1, 8, 1, 1} : Dims{-1, 8, 8, 8}}};
  model.initializers["w0"] = Weights({8, 4, 3, 3}, 1);
  model.initializers["w1"] = Weights({8, 8, 3, 3}, 2);
  model.initializers["wd"] = Weights({8, 8, k, k}, 3);
  model.initializers["w2"] = Weights({8, 8, 3, 3}, 4);
  model.initializers["w3"] = Weights({8, 8, k, k}, 5);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  const Attributes tail = pointwise_tail ? Attributes{} : pad1;
  model.nodes = {
      {"stem", "Conv", {"x", "w0"}, {"s"}, pad1},
      {"pool",
       pools ? "MaxPool" : "Abs",
       {"s"},
       {"p"},
       pools ? Attributes{{"kernel_shape", std::vector<int64_t>{2, 2}},
                          {"strides", std::vector<int64_t>{2, 2}}}
             : Attributes{}},
      {"conv1", "Conv", {"p", "w1"}, {"c1"}, pad1},
      {"relu1", "Relu", {"c1"}, {"a"}, {}},
      {"conv2", "Conv", {"a", "w2"}, {"c2"}, pad1},
      {"down", "Conv", {"p", "wd"}, {"d"}, tail},
      {"add2", "Add", {"c2", "d"}, {"s2"}, {}},
      {"relu2", "Relu", {"s2"}, {"r"}, {}},
      {"conv3", "Conv", {"r", "w3"}, {"c3"}, tail},
      {"add3", "Add", {"c3", "r"}, {"s3"}, {}},
      {"relu3", "Relu", {"s3"}, {"y3"}, {}},
      {"gap", pools ? "GlobalAveragePool" : "Abs", {"y3"}, {"y"}, {}},
  };
  return model;
}

struct ConvLayouts {
  ConvLayout x, y, residual;
  size_t inputs;
};

void ExpectConvLayouts(const BoundGraph& graph, const FusionPlan& plan,
                       const std::map<std::string, ConvLayouts>& want) {
  size_t convs = 0;
  for (const FusedStep& step : plan.steps) {
    if (step.kind != StepKind::kConv) continue;
    ++convs;
    const std::string& name = graph.nodes[step.anchor].name;
    const ConvLayouts& w = want.at(name);
    EXPECT_EQ(step.conv_x_layout, w.x) << name;
    EXPECT_EQ(step.conv_y_layout, w.y) << name;
    EXPECT_EQ(step.conv_residual_layout, w.residual) << name;
    EXPECT_EQ(step.inputs.size(), w.inputs) << name;
  }
  EXPECT_EQ(convs, want.size());
}

constexpr ConvLayout kNchw = ConvLayout::kNCHW;
constexpr ConvLayout kNhwc = ConvLayout::kNHWC;

// Note [Channels-last convolutions]: where 3x3 convolutions pass values on,
// those values are NHWC, each step's layouts follow, and a step with an
// NHWC side reads its own copy of W. conv3 writes NCHW for the Abs and
// reads its residual NHWC.
TEST_P(HalfFusionTest, ValuesBetween3x3ConvsAreChannelsLast) {
  const BoundGraph graph = Bind(AsType(ConvChain(/*pointwise_tail=*/false), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.channels_last_values, 3);  // a, d, r
  ExpectConvLayouts(graph, plan,
                    {
                        {"stem", {kNchw, kNchw, kNchw, 2}},   // X, W
                        {"conv1", {kNchw, kNhwc, kNchw, 1}},  // X
                        {"down", {kNchw, kNhwc, kNchw, 1}},   // X
                        {"conv2", {kNhwc, kNhwc, kNhwc, 2}},  // X, residual
                        {"conv3", {kNhwc, kNchw, kNhwc, 2}},  // X, residual
                    });
  // Off, and for float32 (no tensor-core layout to want): all NCHW.
  EXPECT_EQ(PlanFusion(graph, {.channels_last_convs = false}).channels_last_values, 0);
  EXPECT_EQ(PlanFusion(Bind(ConvChain(false)), {}).channels_last_values, 0);
}

// The layout of each pool step of `plan`, by node name.
std::map<std::string, ConvLayout> PoolLayouts(const BoundGraph& graph, const FusionPlan& plan) {
  std::map<std::string, ConvLayout> layouts;
  for (const FusedStep& step : plan.steps) {
    const BoundNode& node = graph.nodes[step.anchor];
    if (absl::StrContains(node.op_type, "Pool")) layouts[node.name] = step.pool_layout;
  }
  return layouts;
}

// Pools pass the layout on (Note [Channels-last convolutions]): the stem's
// output reaches the block through the MaxPool, and the block's output
// reaches the global pool, all NHWC, as in ResNet.
TEST_P(HalfFusionTest, PoolsBetweenConvsAreChannelsLast) {
  const BoundGraph graph = Bind(AsType(ConvChain(false, ChainEnds::kPools), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.channels_last_values, 6);  // s, p, a, d, r, y3
  ExpectConvLayouts(graph, plan,
                    {
                        {"stem", {kNchw, kNhwc, kNchw, 1}},  // X: the graph's input
                        {"conv1", {kNhwc, kNhwc, kNchw, 1}},
                        {"down", {kNhwc, kNhwc, kNchw, 1}},
                        {"conv2", {kNhwc, kNhwc, kNhwc, 2}},
                        {"conv3", {kNhwc, kNhwc, kNhwc, 2}},
                    });
  EXPECT_EQ(PoolLayouts(graph, plan),
            (std::map<std::string, ConvLayout>{{"gap", kNhwc}, {"pool", kNhwc}}));
  // A windowed pool reads and writes one layout: when its output is a graph
  // output (NCHW), its input stays NCHW too; the global pool still reads
  // the block's NHWC.
  Model outputs_pool = AsType(ConvChain(false, ChainEnds::kPools), GetParam());
  outputs_pool.outputs.push_back({"p", outputs_pool.inputs[0].dtype, {-1, 8, 4, 4}});
  const BoundGraph graph2 = Bind(outputs_pool);
  const FusionPlan plan2 = PlanFusion(graph2, {});
  ExpectValidOrder(graph2, plan2);
  EXPECT_EQ(PoolLayouts(graph2, plan2),
            (std::map<std::string, ConvLayout>{{"gap", kNhwc}, {"pool", kNchw}}));
  ExpectConvLayouts(graph2, plan2,
                    {
                        {"stem", {kNchw, kNchw, kNchw, 2}},
                        {"conv1", {kNchw, kNhwc, kNchw, 1}},
                        {"down", {kNchw, kNhwc, kNchw, 1}},
                        {"conv2", {kNhwc, kNhwc, kNhwc, 2}},
                        {"conv3", {kNhwc, kNhwc, kNhwc, 2}},
                    });
  // Float32 pools stay NCHW with their convolutions.
  const BoundGraph float32 = Bind(ConvChain(false, ChainEnds::kPools));
  EXPECT_EQ(PoolLayouts(float32, PlanFusion(float32, {})),
            (std::map<std::string, ConvLayout>{{"gap", kNchw}, {"pool", kNchw}}));
}

// A 1x1 convolution is a GEMM over NCHW data: with a 1x1 downsample and a
// 1x1 conv3 (whose output the pool reads NCHW), d and r in NHWC would cost
// a transpose in down and in conv3 and a strided residual read, for one
// saved in conv2: they stay NCHW, and only a (between two 3x3s) changes.
TEST_P(HalfFusionTest, PointwiseConvsNextToNchwValuesKeepTheirsNchw) {
  const BoundGraph graph = Bind(AsType(ConvChain(/*pointwise_tail=*/true), GetParam()));
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.channels_last_values, 1);
  ExpectConvLayouts(graph, plan,
                    {
                        {"stem", {kNchw, kNchw, kNchw, 2}},
                        {"conv1", {kNchw, kNhwc, kNchw, 1}},
                        {"down", {kNchw, kNchw, kNchw, 2}},
                        {"conv2", {kNhwc, kNchw, kNchw, 2}},  // X, residual
                        {"conv3", {kNchw, kNchw, kNchw, 3}},  // X, W, residual
                    });
}

INSTANTIATE_TEST_SUITE_P(Types, HalfFusionTest,
                         ::testing::Values(DType::kFloat16, DType::kBFloat16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

// Integers compute in no float: an int32 chain forms no region.
TEST(FusionTest, IntegerChainsFormNoRegion) {
  Model model;
  model.name = "integers";
  model.opset = 17;
  model.inputs = {{"x", DType::kInt32, {-1, 8}}};
  model.outputs = {{"y", DType::kInt32, {-1, 8}}};
  model.nodes = {
      {"neg", "Neg", {"x"}, {"n"}, {}},
      {"abs", "Abs", {"n"}, {"y"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  EXPECT_EQ(plan.pointwise_regions, 0);
  EXPECT_EQ(plan.steps.size(), 2u);
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

// The dynamo exporter's k^T (Note [Attention views]): k [b, h, s, d] through
// Reshape [b*h, s, d], Transpose (0 2 1), Reshape [b, h, d, s].
TEST(FusionTest, AttentionReadsTheBatchedSwapOfKInPlace) {
  Model model = HeadsSplitAttention();
  Model swapped = model;
  swapped.nodes.clear();
  const auto shape = [](std::vector<int64_t> dims) {
    HostTensor value(DType::kInt64, Dims{static_cast<int64_t>(dims.size())});
    for (size_t i = 0; i < dims.size(); ++i) value.data<int64_t>()[i] = dims[i];
    return std::make_shared<const HostTensor>(std::move(value));
  };
  swapped.initializers["merged_shape"] = shape({-1, 8, 16});
  swapped.initializers["split_shape"] = shape({-1, 2, 16, 8});
  for (const auto& node : model.nodes) {
    if (node.name != "k_t") {
      swapped.nodes.push_back(node);
      continue;
    }
    swapped.nodes.push_back(
        {"k_heads", "Transpose", {"k"}, {"kh"}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}});
    swapped.nodes.push_back({"k_merge", "Reshape", {"kh", "merged_shape"}, {"km"}, {}});
    swapped.nodes.push_back(
        {"k_swap", "Transpose", {"km"}, {"ks"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}});
    swapped.nodes.push_back({"k_split", "Reshape", {"ks", "split_shape"}, {"kt"}, {}});
  }
  const BoundGraph graph = Bind(swapped);
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.steps.size(), 1u);
  const FusedStep& step = plan.steps[0];
  EXPECT_EQ(step.kind, StepKind::kAttention);
  EXPECT_EQ(graph.value(step.inputs[1]).name, "k");
  // k^T's dim i is kh's swap, kh's dim j is k's (0 2 1 3)[j].
  EXPECT_EQ(step.attention.k_perm, (AttentionPerm{0, 2, 3, 1}));

  // Unfused, q k^T reads kh with op(T) (Note [Transposed GEMM operands]).
  const FusionPlan chain = PlanFusion(graph, {.fuse_attention = FuseAttention::kNone});
  ExpectValidOrder(graph, chain);
  EXPECT_EQ(chain.gemm_transposes, 1);
  const auto scores = std::find_if(chain.steps.begin(), chain.steps.end(), [&](const FusedStep& s) {
    return graph.nodes[s.anchor].name == "scores";
  });
  ASSERT_NE(scores, chain.steps.end());
  EXPECT_TRUE(scores->gemm_trans_b);
  EXPECT_EQ(graph.value(scores->inputs[1]).name, "kh");
}

// Rank-3 operands (heads folded into the batch): k^T's Transpose (0 2 1) is
// read in place, right-aligned to four dims.
TEST(FusionTest, RankThreeAttentionReadsKInPlace) {
  Model model;
  model.name = "attention3";
  model.opset = 17;
  model.inputs = {{"q", DType::kFloat16, {-1, 8, 16}},
                  {"k", DType::kFloat16, {-1, 8, 16}},
                  {"v", DType::kFloat16, {-1, 8, 16}}};
  model.outputs = {{"o", DType::kFloat16, {-1, 8, 16}}};
  model.nodes = {
      {"k_t", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}},
      {"scores", "MatMul", {"q", "kt"}, {"s"}, {}},
      {"softmax", "Softmax", {"s"}, {"p"}, {{"axis", int64_t{-1}}}},
      {"context", "MatMul", {"p", "v"}, {"o"}, {}},
  };
  const BoundGraph graph = Bind(model);
  const FusionPlan plan = PlanFusion(graph, {});
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(graph.value(plan.steps[0].inputs[1]).name, "k");
  EXPECT_EQ(plan.steps[0].attention.k_perm, (AttentionPerm{0, 1, 3, 2}));
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

// Model DynamoAttention as the TorchScript exporter writes it in float16
// (Note [Fused attention]): q, k and v float16, the scores cast up to float32
// after q k^T (the mask, Softmax and guard in float32), v cast up before the
// context MatMul, the output float32.
Model FloatScoresAttention() {
  Model model = DynamoAttention();
  model.name = "attention_float_scores";
  for (size_t i = 0; i < 3; ++i) model.inputs[i].dtype = DType::kFloat16;  // q, k, v
  model.initializers["c"] =
      std::make_shared<const HostTensor>(ConvertFloats(*model.initializers["c"], DType::kFloat16));
  const Attributes to_float = {{"to", static_cast<int64_t>(DType::kFloat32)}};
  const auto at = [&](const char* name) {
    return std::find_if(model.nodes.begin(), model.nodes.end(),
                        [&](const Node& node) { return node.name == name; });
  };
  at("scores")->outputs = {"s16"};
  model.nodes.insert(at("scores") + 1, {"up", "Cast", {"s16"}, {"s"}, to_float});
  at("context")->inputs[1] = "vf";
  model.nodes.insert(at("context"), {"v_up", "Cast", {"v"}, {"vf"}, to_float});
  return model;
}

TEST(FusionTest, FloatScoresAttentionIsOneStepOnTheHalfOperands) {
  const BoundGraph graph = Bind(FloatScoresAttention());
  const FusionPlan plan = PlanFusion(graph, {});
  ExpectValidOrder(graph, plan);
  ASSERT_EQ(plan.attentions, 1);
  ASSERT_EQ(plan.steps.size(), 1u);
  const FusedStep& step = plan.steps[0];
  EXPECT_TRUE(step.attention.float_scores);
  EXPECT_EQ(step.nodes.size(), graph.nodes.size());
  EXPECT_EQ(graph.value(step.inputs[0]).name, "q");
  EXPECT_EQ(graph.value(step.inputs[1]).name, "k");
  EXPECT_EQ(graph.value(step.inputs[2]).name, "v");
  EXPECT_EQ(graph.value(step.inputs[3]).name, "mask");
  EXPECT_EQ(graph.value(step.outputs[0]).name, "o");
}

// Scores cast up but v not: the chain's types do not fit, nothing fuses.
TEST(FusionTest, FloatScoresWithoutACastOfVStayApart) {
  Model model = FloatScoresAttention();
  model.inputs[2].dtype = DType::kFloat32;
  const auto v_up = std::find_if(model.nodes.begin(), model.nodes.end(),
                                 [](const Node& node) { return node.name == "v_up"; });
  model.nodes.erase(v_up);
  model.nodes.back().inputs[1] = "v";
  const BoundGraph graph = Bind(model);
  EXPECT_EQ(PlanFusion(graph, {}).attentions, 0);
}

}  // namespace
}  // namespace graphserve
