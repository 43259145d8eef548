// The normalization family's bind rules for the reductions (Note
// [Reductions] in runtime/host/normalization_kernels.h) and ArgMax/ArgMin:
// axes as an attribute or an input by opset, keepdims, noop_with_empty_axes,
// accepted types, and refusals that name the node; InstanceNormalization's and
// GroupNormalization's canonical form (Note [Group normalization]);
// RMSNormalization's (Note [RMS normalization]).

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{std::move(name), std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

// x [2, 3, 4] of `dtype` -> node -> y; `axes` (when given) an initializer.
Model ReduceModel(int64_t opset, Node node, DType dtype = DType::kFloat32,
                  const std::vector<int64_t>* axes = nullptr) {
  Model model;
  model.name = "reduce";
  model.opset = opset;
  model.inputs = {{"x", dtype, {2, 3, 4}}};
  model.outputs = {{"y", dtype, {}}};
  model.nodes = {std::move(node)};
  if (axes != nullptr) {
    auto tensor = std::make_shared<HostTensor>(DType::kInt64,
                                               Dims{static_cast<int64_t>(axes->size())});
    for (size_t i = 0; i < axes->size(); ++i) tensor->data<int64_t>()[i] = (*axes)[i];
    model.initializers["axes"] = std::move(tensor);
  }
  return model;
}

absl::StatusOr<BoundGraph> Bind(const Model& model) { return BindModel(model, BindOptions{}); }

TEST(NormalizationBindTest, AxesMoveFromAttributeToInputAtEachOpsFirstOpset) {
  // ReduceSum's axes became an input at 13, the others' at 18: both spellings
  // bind to the same canonical node.
  const std::vector<int64_t> axes = {-1, 0};
  const struct {
    const char* op;
    int64_t input_since;
  } ops[] = {{"ReduceSum", 13}, {"ReduceMax", 18}, {"ReduceL2", 18}, {"ReduceLogSumExp", 18}};
  for (const auto& op : ops) {
    const Model as_attribute =
        ReduceModel(op.input_since - 1, MakeNode("r", op.op, {"x"}, {"y"}, {{"axes", axes}}));
    const Model as_input =
        ReduceModel(op.input_since, MakeNode("r", op.op, {"x", "axes"}, {"y"}),
                    DType::kFloat32, &axes);
    for (const Model* model : {&as_attribute, &as_input}) {
      absl::StatusOr<BoundGraph> graph = Bind(*model);
      ASSERT_TRUE(graph.ok()) << op.op << " at opset " << model->opset << ": " << graph.status();
      ASSERT_EQ(graph->nodes.size(), 1u);
      EXPECT_EQ(graph->nodes[0].inputs.size(), 1u) << "the axes input is consumed";
      EXPECT_THAT(IntsAttr(graph->nodes[0].attributes, "axes"), ElementsAre(0, 2));
      EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(1, 3, 1));
    }
  }
}

TEST(NormalizationBindTest, KeepdimsZeroDropsTheReducedDims) {
  const Attributes attributes = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  absl::StatusOr<BoundGraph> graph =
      Bind(ReduceModel(17, MakeNode("r", "ReduceProd", {"x"}, {"y"}, attributes)));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 4));
}

TEST(NormalizationBindTest, NoAxesReducesEverythingOrNothing) {
  // Without axes: every axis.
  absl::StatusOr<BoundGraph> all =
      Bind(ReduceModel(18, MakeNode("r", "ReduceMin", {"x"}, {"y"}, {{"keepdims", int64_t{0}}})));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(IntsAttr(all->nodes[0].attributes, "axes"), ElementsAre(0, 1, 2));
  EXPECT_TRUE(all->value(all->outputs[0]).dims.empty());
  // With noop_with_empty_axes: nothing. ReduceSum of one element is the
  // element, an Identity; ReduceSumSquare squares it, a node with no axes.
  const Attributes noop = {{"noop_with_empty_axes", int64_t{1}}};
  absl::StatusOr<BoundGraph> sum =
      Bind(ReduceModel(18, MakeNode("r", "ReduceSum", {"x"}, {"y"}, noop)));
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->nodes.size(), 1u);
  EXPECT_EQ(sum->nodes[0].op_type, "Identity");
  absl::StatusOr<BoundGraph> square =
      Bind(ReduceModel(18, MakeNode("r", "ReduceSumSquare", {"x"}, {"y"}, noop)));
  ASSERT_TRUE(square.ok()) << square.status();
  ASSERT_EQ(square->nodes.size(), 1u);
  EXPECT_EQ(square->nodes[0].op_type, "ReduceSumSquare");
  EXPECT_TRUE(IntsAttr(square->nodes[0].attributes, "axes").empty());
  EXPECT_THAT(square->value(square->outputs[0]).dims, ElementsAre(2, 3, 4));
}

TEST(NormalizationBindTest, IntegerTypesOnlyWhereTheReductionStaysInIntegers) {
  for (const char* op : {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceL1",
                         "ReduceSumSquare"}) {
    absl::StatusOr<BoundGraph> graph =
        Bind(ReduceModel(17, MakeNode("r", op, {"x"}, {"y"}), DType::kInt32));
    EXPECT_TRUE(graph.ok()) << op << ": " << graph.status();
  }
  for (const char* op : {"ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    absl::StatusOr<BoundGraph> graph =
        Bind(ReduceModel(17, MakeNode("r", op, {"x"}, {"y"}), DType::kInt64));
    ASSERT_FALSE(graph.ok()) << op;
    EXPECT_THAT(graph.status().message(), HasSubstr("'r'")) << op;
  }
}

TEST(NormalizationBindTest, ArgMaxNormalisesItsAxisAndOutputsInt64) {
  const Model model = ReduceModel(
      13, MakeNode("a", "ArgMax", {"x"}, {"y"},
                   {{"axis", int64_t{-2}}, {"keepdims", int64_t{0}},
                    {"select_last_index", int64_t{1}}}),
      DType::kFloat16);
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const BoundNode& node = graph->nodes[0];
  EXPECT_EQ(IntAttr(node.attributes, "axis"), 1);
  EXPECT_EQ(IntAttr(node.attributes, "select_last_index"), 1);
  EXPECT_EQ(graph->value(graph->outputs[0]).dtype, DType::kInt64);
  EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 4));
}

TEST(NormalizationBindTest, ArgMinRefusals) {
  absl::StatusOr<BoundGraph> last = Bind(ReduceModel(
      13, MakeNode("a", "ArgMin", {"x"}, {"y"}, {{"select_last_index", int64_t{2}}})));
  ASSERT_FALSE(last.ok());
  EXPECT_THAT(last.status().message(), HasSubstr("select_last_index"));
  absl::StatusOr<BoundGraph> axis =
      Bind(ReduceModel(13, MakeNode("a", "ArgMin", {"x"}, {"y"}, {{"axis", int64_t{3}}})));
  ASSERT_FALSE(axis.ok());
  EXPECT_THAT(axis.status().message(), HasSubstr("'a'"));
}

// x [2, 6, 3, 2], scale and bias of `affine` elements (initializers) -> node -> y.
Model GroupNormModel(int64_t opset, Node node, int64_t affine) {
  Model model;
  model.name = "group_norm";
  model.opset = opset;
  model.inputs = {{"x", DType::kFloat32, {2, 6, 3, 2}}};
  model.outputs = {{"y", DType::kFloat32, {}}};
  model.nodes = {std::move(node)};
  for (const char* name : {"scale", "bias"}) {
    auto tensor = std::make_shared<HostTensor>(DType::kFloat32, Dims{affine});
    for (int64_t i = 0; i < affine; ++i) tensor->data<float>()[i] = 1.0f;
    model.initializers[name] = std::move(tensor);
  }
  return model;
}

Node GroupNormNode(const char* op, Attributes attributes) {
  return MakeNode("g", op, {"x", "scale", "bias"}, {"y"}, std::move(attributes));
}

// Note [Group normalization]: both ops bind to batch, channels, groups,
// spatial, epsilon and affine_per_group.
TEST(NormalizationBindTest, InstanceAndGroupNormShareOneCanonicalForm) {
  const struct {
    const char* op;
    int64_t opset;
    Attributes attributes;
    int64_t affine;
    int64_t groups;
    int64_t per_group;
  } cases[] = {
      {"InstanceNormalization", 6, {{"epsilon", 1e-3f}}, 6, 6, 0},
      {"GroupNormalization", 18, {{"num_groups", int64_t{3}}, {"epsilon", 1e-3f}}, 3, 3, 1},
      {"GroupNormalization", 21, {{"num_groups", int64_t{3}}, {"epsilon", 1e-3f}}, 6, 3, 0},
      {"GroupNormalization",
       21,
       {{"num_groups", int64_t{2}}, {"epsilon", 1e-3f}, {"stash_type", int64_t{11}}},
       6,
       2,
       0},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph =
        Bind(GroupNormModel(c.opset, GroupNormNode(c.op, c.attributes), c.affine));
    ASSERT_TRUE(graph.ok()) << c.op << " at opset " << c.opset << ": " << graph.status();
    ASSERT_EQ(graph->nodes.size(), 1u);
    const BoundNode& node = graph->nodes[0];
    EXPECT_EQ(node.op_type, c.op);
    EXPECT_EQ(node.inputs.size(), 3u);
    EXPECT_EQ(IntAttr(node.attributes, "batch"), 2);
    EXPECT_EQ(IntAttr(node.attributes, "channels"), 6);
    EXPECT_EQ(IntAttr(node.attributes, "groups"), c.groups) << c.op << " " << c.opset;
    EXPECT_EQ(IntAttr(node.attributes, "spatial"), 6);
    EXPECT_EQ(IntAttr(node.attributes, "affine_per_group"), c.per_group) << c.op << " " << c.opset;
    EXPECT_FLOAT_EQ(FloatAttr(node.attributes, "epsilon"), 1e-3f);
    EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 6, 3, 2));
  }
}

TEST(NormalizationBindTest, GroupNormRefusals) {
  const struct {
    int64_t opset;
    Attributes attributes;
    int64_t affine;
    const char* message;
  } cases[] = {
      {18, {}, 3, "num_groups is required"},
      {18, {{"num_groups", int64_t{4}}}, 4, "divide the 6 channels"},
      // Per channel from 21: a per-group scale is opset 18's.
      {21, {{"num_groups", int64_t{3}}}, 3, "one per channel"},
      {18, {{"num_groups", int64_t{3}}}, 6, "one per group"},
      {21, {{"num_groups", int64_t{3}}, {"stash_type", int64_t{10}}}, 6, "stash_type 10"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph =
        Bind(GroupNormModel(c.opset, GroupNormNode("GroupNormalization", c.attributes), c.affine));
    ASSERT_FALSE(graph.ok()) << c.message;
    EXPECT_THAT(graph.status().message(), HasSubstr("'g'"));
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

// x [2, 3, 4] float32 and scale (a model input, so that binding's helpers
// stay nodes rather than folding) -> RMSNormalization -> y.
Model RmsNormModel(Dims scale_dims, DType scale_dtype, Attributes attributes) {
  Model model;
  model.name = "rms_norm";
  model.opset = 23;
  model.inputs = {{"x", DType::kFloat32, {2, 3, 4}}, {"scale", scale_dtype, scale_dims}};
  model.outputs = {{"y", DType::kFloat32, {}}};
  model.nodes = {MakeNode("r", "RMSNormalization", {"x", "scale"}, {"y"}, std::move(attributes))};
  return model;
}

TEST(NormalizationBindTest, RmsNormRowsFromTheAxisAndScaleMadeInnerElements) {
  const struct {
    Dims scale;
    DType scale_dtype;
    int64_t axis;
    int64_t outer;
    int64_t inner;
    std::vector<std::string> helpers;  // op types binding adds before the norm
  } cases[] = {
      {{4}, DType::kFloat32, -1, 6, 4, {}},
      {{3, 4}, DType::kFloat32, 1, 2, 12, {}},
      {{1, 1, 4}, DType::kFloat32, -1, 6, 4, {}},  // leading 1s: the same elements
      {{1, 4}, DType::kFloat32, 1, 2, 12, {"Expand"}},
      {{1, 1, 4}, DType::kFloat32, 1, 2, 12, {"Reshape", "Expand"}},
      {{4}, DType::kFloat16, -1, 6, 4, {"Cast"}},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph = Bind(RmsNormModel(
        c.scale, c.scale_dtype, {{"axis", c.axis}, {"epsilon", 1e-3f}}));
    ASSERT_TRUE(graph.ok()) << DimsToString(c.scale) << ": " << graph.status();
    ASSERT_EQ(graph->nodes.size(), c.helpers.size() + 1) << DimsToString(c.scale);
    for (size_t i = 0; i < c.helpers.size(); ++i) {
      EXPECT_EQ(graph->nodes[i].op_type, c.helpers[i]);
    }
    const BoundNode& node = graph->nodes.back();
    EXPECT_EQ(node.op_type, "RMSNormalization");
    EXPECT_EQ(IntAttr(node.attributes, "outer"), c.outer) << DimsToString(c.scale);
    EXPECT_EQ(IntAttr(node.attributes, "inner"), c.inner) << DimsToString(c.scale);
    EXPECT_FLOAT_EQ(FloatAttr(node.attributes, "epsilon"), 1e-3f);
    const BoundValue& scale = graph->value(node.inputs[1]);
    EXPECT_EQ(NumElements(scale.dims), c.inner);
    EXPECT_EQ(scale.dtype, DType::kFloat32);
    EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 3, 4));
  }
}

TEST(NormalizationBindTest, RmsNormRefusals) {
  const struct {
    Dims scale;
    Attributes attributes;
    const char* message;
  } cases[] = {
      {{4}, {{"stash_type", int64_t{11}}}, "stash_type 11"},
      {{2, 1, 1}, {{"axis", int64_t{1}}}, "should broadcast to the normalised dims [3,4]"},
      {{5}, {}, "should broadcast"},
      {{4}, {{"axis", int64_t{3}}}, "axis"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph = Bind(RmsNormModel(c.scale, DType::kFloat32, c.attributes));
    ASSERT_FALSE(graph.ok()) << c.message;
    EXPECT_THAT(graph.status().message(), HasSubstr("'r'"));
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace graphserve
