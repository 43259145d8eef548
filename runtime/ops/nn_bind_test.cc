// The nn family's bind rules: shapes, canonical forms, refusals that name the
// node and the attribute. BatchNorm folding is a model pass, tested in
// runtime/passes/fold_batch_norms_test.cc.

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/op_registry.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kOpset = 17;  // what PyTorch 2.x's TorchScript exporter writes

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{std::move(name), std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

std::shared_ptr<const HostTensor> Random(Dims dims, uint64_t seed) {
  return std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, std::move(dims), seed));
}

// x [-1, 3, 9, 9] -> Conv(4 out channels, 3x3) -> ... -> y.
Model ConvModel(std::vector<Node> nodes, Dims y_dims, Attributes conv_attrs = {}) {
  Model model;
  model.name = "nn";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 3, 9, 9}}};
  model.outputs = {{"y", DType::kFloat32, std::move(y_dims)}};
  model.initializers["w"] = Random({4, 3, 3, 3}, 1);
  model.initializers["b"] = Random({4}, 2);
  nodes.insert(nodes.begin(), MakeNode("conv", "Conv", {"x", "w", "b"}, {"c"}, conv_attrs));
  model.nodes = std::move(nodes);
  return model;
}

const Dims& OutputDims(const BoundGraph& graph) { return graph.value(graph.outputs[0]).dims; }

absl::StatusOr<BoundGraph> Bind(const Model& model, int64_t batch = 2) {
  BindOptions options;
  options.batch_size = batch;
  return BindModel(model, options);
}

TEST(NnBindTest, ConvShapesAndCanonicalAttributes) {
  const Model model = ConvModel(
      {MakeNode("relu", "Relu", {"c"}, {"y"})}, {-1, 4, 5, 5},
      {{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const BoundNode& conv = graph->nodes[0];
  EXPECT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(graph->value(conv.outputs[0]).dims, (Dims{2, 4, 5, 5}));  // (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(IntsAttr(conv.attributes, "pads"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(IntAttr(conv.attributes, "group"), 1);
}

// cuDNN pads both sides alike: the excess of an asymmetric pad becomes a Pad
// node, and the result still equals ONNX's (the padded conv by definition).
TEST(NnBindTest, AsymmetricPadsBecomeAnExplicitPad) {
  const Model model = ConvModel({MakeNode("id", "Identity", {"c"}, {"y"})}, {-1, 4, 9, 8},
                                {{"pads", std::vector<int64_t>{1, 0, 1, 1}}});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_GE(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].op_type, "Pad");
  EXPECT_EQ(graph->nodes[0].name, "conv/asymmetric_pad");
  EXPECT_EQ(IntsAttr(graph->nodes[1].attributes, "pads"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(OutputDims(*graph), (Dims{2, 4, 9, 8}));
}

TEST(NnBindTest, AutoPadSameUpperKeepsTheSize) {
  const Model model = ConvModel({MakeNode("id", "Identity", {"c"}, {"y"})}, {-1, 4, 9, 9},
                                {{"auto_pad", std::string("SAME_UPPER")}});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(OutputDims(*graph), (Dims{2, 4, 9, 9}));
}

TEST(NnBindTest, PoolCeilModeDropsAWindowStartingInThePadding) {
  // 9 wide, kernel 2, stride 2: floor gives 4 windows, ceil 5 (the last
  // starts at 8, inside the input).
  const Model model = ConvModel({MakeNode("pool", "MaxPool", {"c"}, {"y"},
                                          {{"kernel_shape", std::vector<int64_t>{2, 2}},
                                           {"strides", std::vector<int64_t>{2, 2}},
                                           {"ceil_mode", int64_t{1}}})},
                                {-1, 4, 4, 4});
  absl::StatusOr<BoundGraph> graph = Bind(model);  // conv output 7x7
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(OutputDims(*graph), (Dims{2, 4, 4, 4}));  // ceil((7 - 2) / 2) + 1 = 4
}

TEST(NnBindTest, RefusalsNameTheNodeAndWhat) {
  struct Case {
    Node node;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {MakeNode("p", "MaxPool", {"c"}, {"y", "indices"},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}}),
       "Indices"},
      {MakeNode("p", "AveragePool", {"c"}, {"y"},
                {{"kernel_shape", std::vector<int64_t>{2, 2}},
                 {"dilations", std::vector<int64_t>{2, 2}}}),
       "dilations"},
      {MakeNode("p", "MaxPool", {"c"}, {"y"},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"storage_order", int64_t{1}}}),
       "storage_order"},
      {MakeNode("p", "MaxPool", {"c"}, {"y"},
                {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"fancy", int64_t{1}}}),
       "attribute 'fancy' is not supported"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    absl::StatusOr<BoundGraph> graph = Bind(ConvModel({c.node}, {-1, 4, 3, 3}));
    ASSERT_FALSE(graph.ok());
    EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented) << graph.status();
    EXPECT_THAT(graph.status().message(), HasSubstr("'p'"));
    EXPECT_THAT(graph.status().message(), HasSubstr(c.expected));
  }
}

TEST(NnBindTest, ConvWeightsComputedAtRunTimeAreRefused) {
  Model model = ConvModel({MakeNode("id", "Identity", {"c"}, {"y"})}, {-1, 4, 7, 7});
  model.inputs.push_back({"w_input", DType::kFloat32, {4, 3, 3, 3}});
  model.nodes[0].inputs[1] = "w_input";
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("'conv'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("known at plan time"));
}

TEST(NnBindTest, ThreeDimensionalPoolingIsRefused) {
  Model model;
  model.name = "pool3d";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 2, 4, 4, 4}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 2, 2, 2, 2}}};
  model.nodes = {
      MakeNode("pool", "MaxPool", {"x"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2, 2}}})};
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(graph.status().message(), HasSubstr("'pool'"));
}

TEST(NnBindTest, ClipBoundsMayBeOmittedAndDropoutIsTheIdentity) {
  Model model = ConvModel({MakeNode("clip", "Clip", {"c", "", "six"}, {"d"}),
                           MakeNode("drop", "Dropout", {"d"}, {"y"})},
                          {-1, 4, 7, 7});
  model.initializers["six"] = std::make_shared<const HostTensor>([] {
    HostTensor t(DType::kFloat32, {});
    *t.data<float>() = 6.0f;
    return t;
  }());
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 3u);
  EXPECT_EQ(graph->nodes[1].op_type, "Clip");
  EXPECT_TRUE(std::isinf(FloatAttr(graph->nodes[1].attributes, "min")));
  EXPECT_EQ(FloatAttr(graph->nodes[1].attributes, "max"), 6.0f);
  EXPECT_EQ(graph->nodes[2].op_type, "Identity");
}

}  // namespace
}  // namespace graphserve
