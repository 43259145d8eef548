// The elementwise family's bind rules for the activations and rounding ops:
// accepted types, canonical attributes with ONNX's defaults, PRelu's
// unidirectional broadcast, and refusals that name the node.

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/elementwise_kernels.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kOpset = 18;  // Mish's first

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{std::move(name), std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

// x [2, 3] of `dtype` -> node -> y.
Model UnaryModel(Node node, DType dtype = DType::kFloat32, int64_t opset = kOpset) {
  Model model;
  model.name = "elementwise";
  model.opset = opset;
  model.inputs = {{"x", dtype, {2, 3}}};
  model.outputs = {{"y", dtype, {2, 3}}};
  model.nodes = {std::move(node)};
  return model;
}

absl::StatusOr<BoundGraph> Bind(const Model& model) { return BindModel(model, BindOptions{}); }

// The attributes of the one node `model` binds to.
Attributes BoundAttributes(const Model& model) {
  absl::StatusOr<BoundGraph> graph = Bind(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok() || graph->nodes.size() != 1) return {};
  return graph->nodes[0].attributes;
}

TEST(ElementwiseBindTest, ActivationAttributesAreWrittenOutWithOnnxDefaults) {
  Attributes elu = BoundAttributes(UnaryModel(MakeNode("a", "Elu", {"x"}, {"y"})));
  EXPECT_EQ(FloatAttr(elu, "alpha"), 1.0f);
  Attributes selu = BoundAttributes(UnaryModel(MakeNode("a", "Selu", {"x"}, {"y"},
                                                        {{"gamma", 2.0f}})));
  EXPECT_EQ(FloatAttr(selu, "alpha"), kSeluAlpha);
  EXPECT_EQ(FloatAttr(selu, "gamma"), 2.0f);
  Attributes celu = BoundAttributes(UnaryModel(MakeNode("a", "Celu", {"x"}, {"y"})));
  EXPECT_EQ(FloatAttr(celu, "alpha"), 1.0f);
  Attributes thresholded = BoundAttributes(
      UnaryModel(MakeNode("a", "ThresholdedRelu", {"x"}, {"y"}, {{"alpha", 0.25f}})));
  EXPECT_EQ(FloatAttr(thresholded, "alpha"), 0.25f);
}

TEST(ElementwiseBindTest, FloatMathTakesEveryFloatTypeAndNoInteger) {
  for (const char* op : {"Floor", "Ceil", "Round", "Sin", "Cos", "Softplus", "Softsign", "Mish",
                         "Elu", "Selu", "Celu", "ThresholdedRelu"}) {
    for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64}) {
      absl::StatusOr<BoundGraph> graph = Bind(UnaryModel(MakeNode("f", op, {"x"}, {"y"}), dtype));
      EXPECT_TRUE(graph.ok()) << op << " " << DTypeName(dtype) << ": " << graph.status();
    }
    absl::StatusOr<BoundGraph> ints =
        Bind(UnaryModel(MakeNode("f", op, {"x"}, {"y"}), DType::kInt64));
    ASSERT_FALSE(ints.ok()) << op;
    EXPECT_THAT(ints.status().message(), HasSubstr("'f'")) << op;
  }
}

TEST(ElementwiseBindTest, SignTakesIntegersToo) {
  for (DType dtype : {DType::kInt32, DType::kInt64, DType::kFloat16}) {
    absl::StatusOr<BoundGraph> graph =
        Bind(UnaryModel(MakeNode("s", "Sign", {"x"}, {"y"}), dtype));
    EXPECT_TRUE(graph.ok()) << DTypeName(dtype) << ": " << graph.status();
  }
  EXPECT_FALSE(Bind(UnaryModel(MakeNode("s", "Sign", {"x"}, {"y"}), DType::kBool)).ok());
}

TEST(ElementwiseBindTest, OpsBeforeTheirFirstOpsetAreRefused) {
  // Mish is opset 18, Celu 12, Round 11.
  const struct {
    const char* op;
    int64_t opset;
  } cases[] = {{"Mish", 17}, {"Celu", 11}, {"Round", 10}};
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph =
        Bind(UnaryModel(MakeNode("n", c.op, {"x"}, {"y"}), DType::kFloat32, c.opset));
    EXPECT_FALSE(graph.ok()) << c.op << " at opset " << c.opset;
  }
}

TEST(ElementwiseBindTest, CeluRefusesAlphaZero) {
  absl::StatusOr<BoundGraph> graph =
      Bind(UnaryModel(MakeNode("c", "Celu", {"x"}, {"y"}, {{"alpha", 0.0f}})));
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("alpha"));
}

// x [2, 3, 4, 4] and a slope input of `slope_dims`.
Model PReluModel(Dims slope_dims, int64_t opset = kOpset) {
  Model model;
  model.name = "prelu";
  model.opset = opset;
  model.inputs = {{"x", DType::kFloat32, {2, 3, 4, 4}},
                  {"slope", DType::kFloat32, std::move(slope_dims)}};
  model.outputs = {{"y", DType::kFloat32, {2, 3, 4, 4}}};
  model.nodes = {MakeNode("p", "PRelu", {"x", "slope"}, {"y"})};
  return model;
}

TEST(ElementwiseBindTest, PReluBroadcastsTheSlopeToXOnly) {
  for (const Dims& slope : std::vector<Dims>{{3, 1, 1}, {1}, {4}, {2, 3, 4, 4}}) {
    absl::StatusOr<BoundGraph> graph = Bind(PReluModel(slope));
    ASSERT_TRUE(graph.ok()) << DimsToString(slope) << ": " << graph.status();
    EXPECT_EQ(graph->value(graph->outputs[0]).dims, (Dims{2, 3, 4, 4}));
  }
  // Broadcasting X to the slope would widen the output: refused.
  for (const Dims& slope : std::vector<Dims>{{3}, {5, 2, 3, 4, 4}, {2, 3, 4, 4, 1}}) {
    absl::StatusOr<BoundGraph> graph = Bind(PReluModel(slope));
    ASSERT_FALSE(graph.ok()) << DimsToString(slope);
    EXPECT_THAT(graph.status().message(), HasSubstr("slope"));
  }
  // Opset 6's PRelu predates its broadcasting.
  EXPECT_FALSE(Bind(PReluModel({3, 1, 1}, 6)).ok());
}

// Mod with fmod=0 on floats is defined from opset 28 (floor division);
// before it ONNX requires fmod=1 for floats.
TEST(ElementwiseBindTest, FloatModWithoutFmodNeedsOpset28) {
  for (const int64_t opset : {int64_t{17}, int64_t{28}}) {
    Model model;
    model.name = "mod";
    model.opset = opset;
    model.inputs = {{"a", DType::kFloat32, {4}}, {"b", DType::kFloat32, {4}}};
    model.outputs = {{"y", DType::kFloat32, {4}}};
    Node mod = MakeNode("m", "Mod", {"a", "b"}, {"y"});
    mod.attributes["fmod"] = int64_t{0};
    model.nodes = {mod};
    absl::StatusOr<BoundGraph> graph = Bind(model);
    if (opset >= 28) {
      EXPECT_TRUE(graph.ok()) << graph.status();
    } else {
      ASSERT_FALSE(graph.ok());
      EXPECT_THAT(graph.status().message(), HasSubstr("opset 28"));
    }
  }
}

}  // namespace
}  // namespace graphserve
