#include "runtime/bind.h"

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kOpset = 17;  // a current PyTorch export opset

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  Node node;
  node.name = std::move(name);
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  return node;
}

std::shared_ptr<const HostTensor> Int64Tensor(Dims dims, const std::vector<int64_t>& values) {
  auto tensor = std::make_shared<HostTensor>(DType::kInt64, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) tensor->data<int64_t>()[i] = values[i];
  return tensor;
}

std::shared_ptr<const HostTensor> FloatTensor(Dims dims, const std::vector<float>& values) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) tensor->data<float>()[i] = values[i];
  return tensor;
}

Model MakeModel(int64_t opset, std::vector<ValueInfo> inputs, std::vector<ValueInfo> outputs,
                std::vector<Node> nodes) {
  Model model;
  model.name = "test";
  model.opset = opset;
  model.inputs = std::move(inputs);
  model.outputs = std::move(outputs);
  model.nodes = std::move(nodes);
  return model;
}

absl::StatusOr<BoundGraph> Bind(const Model& model, int64_t batch_size = 1) {
  BindOptions options;
  options.batch_size = batch_size;
  return BindModel(model, options);
}

const BoundValue& OutputValue(const BoundGraph& graph, size_t index = 0) {
  return graph.value(graph.outputs[index]);
}

// --- Graph inputs ------------------------------------------------------------

TEST(BindTest, BatchDimBecomesBatchSize) {
  const Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 3, 4}}},
                                {{"y", DType::kFloat32, {-1, 3, 4}}},
                                {MakeNode("relu", "Relu", {"x"}, {"y"})});
  for (int64_t batch : {1, 7}) {
    absl::StatusOr<BoundGraph> graph = Bind(model, batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(graph->batch_size, batch);
    ASSERT_EQ(graph->inputs.size(), 1u);
    EXPECT_THAT(graph->value(graph->inputs[0]).dims, ElementsAre(batch, 3, 4));
    ASSERT_EQ(graph->nodes.size(), 1u);
    EXPECT_EQ(graph->nodes[0].op_type, "Relu");
    EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(batch, 3, 4));
    EXPECT_FALSE(OutputValue(*graph).is_constant());
  }
}

// ids [batch, sequence] and mask [batch, sequence] share their sequence
// extent (Note [Shape dims]); the Add's broadcast would fail if they did not.
Model SequenceModel() {
  ValueInfo ids{"ids", DType::kFloat32, {-1, -1}, {"", "sequence"}};
  ValueInfo mask{"mask", DType::kFloat32, {-1, -1}, {"", "sequence"}};
  return MakeModel(kOpset, {ids, mask}, {{"y", DType::kFloat32, {}}},
                   {MakeNode("add", "Add", {"ids", "mask"}, {"y"})});
}

TEST(BindTest, ShapeDimsTakeTheirExtentFromDimValues) {
  const Model model = SequenceModel();
  for (int64_t sequence : {1, 128}) {
    BindOptions options;
    options.batch_size = 3;
    options.dim_values = {{"sequence", sequence}};
    absl::StatusOr<BoundGraph> graph = BindModel(model, options);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_THAT(graph->value(graph->inputs[0]).dims, ElementsAre(3, sequence));
    EXPECT_THAT(graph->value(graph->inputs[1]).dims, ElementsAre(3, sequence));
    EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(3, sequence));
    EXPECT_EQ(graph->dim_values.at("sequence"), sequence);
  }
}

TEST(BindTest, ShapeDimWithoutExtentIsAnErrorNamingIt) {
  absl::StatusOr<BoundGraph> graph = Bind(SequenceModel());
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(),
              HasSubstr("graph input 'ids' dim 1 ('sequence') is dynamic"));
}

// Note [Binding once per key]: each key's graph as BindModel binds it,
// whatever the order keys are asked in; a key that cannot bind errors each
// time it is asked.
TEST(BoundGraphsTest, GivesEachKeyItsOwnBindingAndRemembersNoError) {
  const Model model = SequenceModel();
  BoundGraphs bound(model);
  for (const GraphKey& key : {GraphKey{3, {128}}, GraphKey{1, {8}}, GraphKey{3, {128}}}) {
    absl::StatusOr<BoundGraph> graph = bound.At(key);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_THAT(graph->value(graph->inputs[0]).dims,
                ElementsAre(key.batch_size, key.bucket[0]));
    EXPECT_EQ(graph->dim_values.at("sequence"), key.bucket[0]);
  }
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<BoundGraph> graph = bound.At(GraphKey{3, {0}});
    ASSERT_FALSE(graph.ok());
    EXPECT_THAT(graph.status().message(), HasSubstr("must be at least 1, got 0"));
  }
}

TEST(BindTest, ExtentOfADimTheModelLacksIsAnError) {
  BindOptions options;
  options.dim_values = {{"sequence", 8}, {"height", 8}};
  absl::StatusOr<BoundGraph> graph = BindModel(SequenceModel(), options);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(),
              HasSubstr("dim 'height' is not a dynamic dim of the model's inputs (they have "
                        "'sequence')"));
  options.dim_values = {{"sequence", 0}};
  graph = BindModel(SequenceModel(), options);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("dim 'sequence' must be at least 1, got 0"));
}

TEST(BindTest, InitializersAreSharedNotCopied) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 4}}},
                          {{"y", DType::kFloat32, {-1, 2}}},
                          {MakeNode("mm", "MatMul", {"x", "w"}, {"y"})});
  model.initializers["w"] = FloatTensor({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  model.initializers["unused"] = FloatTensor({1}, {0});
  absl::StatusOr<BoundGraph> graph = Bind(model, 3);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const BoundValue& w = graph->value(graph->nodes[0].inputs[1]);
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.constant.get(), model.initializers["w"].get());
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(3, 2));
  for (const BoundValue& value : graph->values) EXPECT_NE(value.name, "unused");
}

TEST(BindTest, KnownInputsBecomeConstants) {
  const Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {2, 6}}, {"shape", DType::kInt64, {2}}},
      {{"y", DType::kFloat32, {3, 4}}}, {MakeNode("reshape", "Reshape", {"x", "shape"}, {"y"})});
  BindOptions options;
  options.known_inputs.emplace("shape", *Int64Tensor({2}, {3, -1}));
  absl::StatusOr<BoundGraph> graph = BindModel(model, options);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs.size(), 1u);  // "shape" is no longer an input
  EXPECT_EQ(graph->value(graph->inputs[0]).name, "x");
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(3, 4));

  // A known input of the wrong dtype is refused, naming it.
  BindOptions wrong;
  wrong.known_inputs.emplace("shape", *FloatTensor({2}, {3, -1}));
  absl::StatusOr<BoundGraph> refused = BindModel(model, wrong);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("'shape'"));
  EXPECT_THAT(refused.status().message(), HasSubstr("float32"));
}

TEST(BindTest, ShapeOperandThatIsNotConstantIsAnError) {
  const Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 6}}, {"target", DType::kInt64, {2}}},
      {{"y", DType::kFloat32, {}}},
      {MakeNode("view", "Reshape", {"x", "target"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'view'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("Reshape"));
  EXPECT_THAT(graph.status().message(), HasSubstr("'shape'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("'target'"));
}

TEST(BindTest, UnsupportedOpIsUnimplemented) {
  const Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {2}}},
                                {{"y", DType::kFloat32, {2}}},
                                {MakeNode("lp", "LpPool", {"x"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(graph.status().message(), HasSubstr("LpPool"));
}

TEST(BindTest, IsShapeOperand) {
  EXPECT_TRUE(IsShapeOperand("Reshape", 1));
  EXPECT_FALSE(IsShapeOperand("Reshape", 0));
  EXPECT_TRUE(IsShapeOperand("Slice", 4));
  EXPECT_FALSE(IsShapeOperand("Slice", 0));
  EXPECT_TRUE(IsShapeOperand("ReduceMean", 1));
  EXPECT_FALSE(IsShapeOperand("Gather", 1));  // indices are data
}

// --- Constant folding ----------------------------------------------------------

// PyTorch exports `x.view(x.size(0), -1)` as Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape; binding folds everything but the Reshape.
TEST(BindTest, PyTorchShapeChainFoldsToConstantReshape) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 4, 6}}}, {{"y", DType::kFloat32, {-1, 24}}},
      {
          MakeNode("shape", "Shape", {"x"}, {"s"}),
          MakeNode("gather", "Gather", {"s", "zero"}, {"batch"}, {{"axis", int64_t{0}}}),
          MakeNode("unsqueeze", "Unsqueeze", {"batch", "axes0"}, {"batch_1d"}),
          MakeNode("minus_one", "Constant", {}, {"m1"},
                   {{"value_ints", std::vector<int64_t>{-1}}}),
          MakeNode("concat", "Concat", {"batch_1d", "m1"}, {"target"}, {{"axis", int64_t{0}}}),
          MakeNode("view", "Reshape", {"x", "target"}, {"y"}),
      });
  model.initializers["zero"] = Int64Tensor({}, {0});
  model.initializers["axes0"] = Int64Tensor({1}, {0});
  for (int64_t batch : {1, 7}) {
    absl::StatusOr<BoundGraph> graph = Bind(model, batch);
    ASSERT_TRUE(graph.ok()) << graph.status();
    ASSERT_EQ(graph->nodes.size(), 1u);
    EXPECT_EQ(graph->nodes[0].op_type, "Reshape");
    EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);  // the shape operand is consumed
    EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(batch, 24));
    // Folded intermediates are not left behind.
    EXPECT_EQ(graph->values.size(), 2u);
  }
}

TEST(BindTest, AllConstantArithmeticIsFolded) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {2}}},
                          {{"y", DType::kFloat32, {2}}},
                          {MakeNode("sum", "Add", {"a", "b"}, {"ab"}),
                           MakeNode("mul", "Mul", {"x", "ab"}, {"y"})});
  model.initializers["a"] = FloatTensor({2}, {1.5f, 2.0f});
  model.initializers["b"] = FloatTensor({2}, {0.25f, -4.0f});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->nodes[0].op_type, "Mul");
  const BoundValue& folded = graph->value(graph->nodes[0].inputs[1]);
  ASSERT_TRUE(folded.is_constant());
  EXPECT_FLOAT_EQ(folded.constant->data<float>()[0], 1.75f);
  EXPECT_FLOAT_EQ(folded.constant->data<float>()[1], -2.0f);
}

TEST(BindTest, ShapeHonoursStartAndEnd) {
  const Model model = MakeModel(
      15, {{"x", DType::kFloat32, {-1, 3, 5, 7}}}, {{"s", DType::kInt64, {2}}},
      {MakeNode("shape", "Shape", {"x"}, {"s"}, {{"start", int64_t{1}}, {"end", int64_t{-1}}})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 4);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_TRUE(graph->nodes.empty());
  const BoundValue& s = OutputValue(*graph);
  ASSERT_TRUE(s.is_constant());
  EXPECT_THAT(s.dims, ElementsAre(2));
  EXPECT_EQ(s.constant->data<int64_t>()[0], 3);
  EXPECT_EQ(s.constant->data<int64_t>()[1], 5);
}

// --- Broadcasting --------------------------------------------------------------

TEST(BindTest, BinaryOpsBroadcast) {
  const Model model = MakeModel(
      kOpset,
      {{"a", DType::kFloat32, {-1, 1, 4}},
       {"b", DType::kFloat32, {3, 1}},
       {"c", DType::kBool, {4}}},
      {{"y", DType::kFloat32, {}}, {"w", DType::kFloat32, {}}},
      {MakeNode("add", "Add", {"a", "b"}, {"y"}),
       MakeNode("where", "Where", {"c", "b", "a"}, {"w"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 5);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OutputValue(*graph, 0).dims, ElementsAre(5, 3, 4));
  EXPECT_THAT(OutputValue(*graph, 1).dims, ElementsAre(5, 3, 4));
  EXPECT_EQ(OutputValue(*graph, 1).dtype, DType::kFloat32);
}

TEST(BindTest, IncompatibleBroadcastNamesNodeAndBothDims) {
  const Model model = MakeModel(
      kOpset, {{"a", DType::kFloat32, {-1, 3}}, {"b", DType::kFloat32, {4}}},
      {{"y", DType::kFloat32, {}}}, {MakeNode("bad_add", "Add", {"a", "b"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'bad_add'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("Add"));
  EXPECT_THAT(graph.status().message(), HasSubstr("[2,3]"));
  EXPECT_THAT(graph.status().message(), HasSubstr("[4]"));
}

TEST(BindTest, EqualOutputsBool) {
  const Model model = MakeModel(
      kOpset, {{"a", DType::kInt64, {-1, 1}}, {"b", DType::kInt64, {5}}},
      {{"y", DType::kBool, {}}}, {MakeNode("eq", "Equal", {"a", "b"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(OutputValue(*graph).dtype, DType::kBool);
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(2, 5));
}

TEST(BindTest, ModBroadcastsWithExplicitFmod) {
  const Model model = MakeModel(
      kOpset, {{"a", DType::kInt64, {-1, 1, 4}}, {"b", DType::kInt64, {3, 1}}},
      {{"y", DType::kInt64, {}}, {"z", DType::kInt64, {}}},
      {MakeNode("mod", "Mod", {"a", "b"}, {"y"}),
       MakeNode("fmod", "Mod", {"a", "b"}, {"z"}, {{"fmod", int64_t{1}}})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 5);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  // The default fmod=0 is written out.
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "fmod"), 0);
  EXPECT_EQ(IntAttr(graph->nodes[1].attributes, "fmod"), 1);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(OutputValue(*graph, i).dtype, DType::kInt64);
    EXPECT_THAT(OutputValue(*graph, i).dims, ElementsAre(5, 3, 4));
  }
}

TEST(BindTest, FloatModWithoutFmodNamesNode) {
  const Model model = MakeModel(
      kOpset, {{"a", DType::kFloat32, {-1, 4}}, {"b", DType::kFloat32, {4}}},
      {{"y", DType::kFloat32, {}}}, {MakeNode("float_mod", "Mod", {"a", "b"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'float_mod'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("fmod=1"));
}

TEST(BindTest, ConstantInt64ModByZeroFailsToFold) {
  Model model = MakeModel(kOpset, {{"x", DType::kInt64, {2}}}, {{"y", DType::kInt64, {2}}},
                          {MakeNode("mod", "Mod", {"a", "b"}, {"ab"}),
                           MakeNode("add", "Add", {"x", "ab"}, {"y"})});
  model.initializers["a"] = Int64Tensor({2}, {7, -7});
  model.initializers["b"] = Int64Tensor({2}, {3, 0});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("'mod'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("modulo by zero"));
}

// Note [Folding bound]: a few bytes of model cannot ask for any amount of
// host memory.
TEST(BindTest, FoldingPastTheBoundIsRefusedNamingTheNode) {
  Model model = MakeModel(kOpset, {}, {{"y", DType::kFloat32, {1 << 16, 1 << 16}}},
                          {MakeNode("expand", "Expand", {"c", "shape"}, {"y"})});
  model.initializers["c"] = FloatTensor({1}, {1.0f});
  model.initializers["shape"] = Int64Tensor({2}, {1 << 16, 1 << 16});  // 16 GiB of float32
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(graph.status().message(), HasSubstr("folding constant node 'expand'"));
  EXPECT_THAT(graph.status().message(), HasSubstr("past binding's bound"));
}

TEST(BindTest, ConstantsRulesMakePastTheBoundAreRefused) {
  Model model = MakeModel(kOpset, {}, {{"y", DType::kInt64, {-1}}},
                          {MakeNode("range", "Range", {"start", "limit", "delta"}, {"y"})});
  model.initializers["start"] = Int64Tensor({}, {0});
  model.initializers["limit"] = Int64Tensor({}, {int64_t{1} << 29});  // 4 GiB of int64
  model.initializers["delta"] = Int64Tensor({}, {1});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'range' (Range)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("past binding's bound"));
}

// Range folds to a constant; its integers are exact at any magnitude (a
// delta of 2^63 - 1 once overflowed a conversion through double).
absl::StatusOr<std::vector<int64_t>> Int64Range(int64_t start, int64_t limit, int64_t delta) {
  Model model = MakeModel(kOpset, {}, {{"y", DType::kInt64, {-1}}},
                          {MakeNode("range", "Range", {"start", "limit", "delta"}, {"y"})});
  model.initializers["start"] = Int64Tensor({}, {start});
  model.initializers["limit"] = Int64Tensor({}, {limit});
  model.initializers["delta"] = Int64Tensor({}, {delta});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  if (!graph.ok()) return graph.status();
  const HostTensor& y = *OutputValue(*graph).constant;
  return std::vector<int64_t>(y.data<int64_t>(), y.data<int64_t>() + y.num_elements());
}

TEST(BindTest, IntegerRangeIsExact) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_THAT(*Int64Range(kMax - 5, kMax, 2), ElementsAre(kMax - 5, kMax - 3, kMax - 1));
  EXPECT_THAT(*Int64Range(0, 1, kMax), ElementsAre(0));
  EXPECT_THAT(*Int64Range(kMax, kMin, kMin), ElementsAre(kMax, -1));
  EXPECT_THAT(*Int64Range(5, -4, -3), ElementsAre(5, 2, -1));
  EXPECT_THAT(*Int64Range(0, 5, -1), ElementsAre());
  absl::StatusOr<std::vector<int64_t>> zero = Int64Range(0, 5, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.status().message(), HasSubstr("delta is 0"));
}

TEST(BindTest, DoubleRangeKeepsDoublePrecision) {
  Model model = MakeModel(kOpset, {}, {{"y", DType::kFloat64, {-1}}},
                          {MakeNode("range", "Range", {"start", "limit", "delta"}, {"y"})});
  for (const auto& [name, value] :
       std::map<std::string, double>{{"start", 0.1}, {"limit", 0.35}, {"delta", 0.1}}) {
    auto tensor = std::make_shared<HostTensor>(DType::kFloat64, Dims{});
    *tensor->data<double>() = value;
    model.initializers[name] = tensor;
  }
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const HostTensor& y = *OutputValue(*graph).constant;
  ASSERT_EQ(y.num_elements(), 3);
  EXPECT_EQ(y.data<double>()[1], 0.1 + 0.1);
  EXPECT_EQ(y.data<double>()[2], 0.1 + 2 * 0.1);
}

TEST(BindTest, InputDimsPastAnyTensorAreRefused) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 1 << 30, 1 << 30}}},
                          {{"y", DType::kFloat32, {-1, 1 << 30, 1 << 30}}},
                          {MakeNode("relu", "Relu", {"x"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 4);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("graph input 'x' of dims [4,1073741824,"));
  EXPECT_THAT(graph.status().message(), HasSubstr("is too large"));
}

TEST(BindTest, OutputDimsPastAnyTensorAreRefused) {
  Model model =
      MakeModel(kOpset, {{"x", DType::kFloat32, {1}}}, {{"y", DType::kFloat32, {-1, -1, -1}}},
                {MakeNode("expand", "Expand", {"x", "shape"}, {"y"})});
  model.initializers["shape"] = Int64Tensor({3}, {1 << 30, 1 << 30, 1 << 30});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("node 'expand' (Expand)"));
  EXPECT_THAT(graph.status().message(), HasSubstr("is too large"));
}

// --- Per-op canonical forms ------------------------------------------------------

struct SoftmaxCase {
  int64_t opset;
  bool has_axis;
  int64_t axis;
  int64_t outer, axis_size, inner;
};

void PrintTo(const SoftmaxCase& c, std::ostream* os) {
  *os << "opset " << c.opset << " axis " << (c.has_axis ? std::to_string(c.axis) : "default");
}

class SoftmaxCanonicalTest : public ::testing::TestWithParam<SoftmaxCase> {};

TEST_P(SoftmaxCanonicalTest, OuterAxisInner) {
  const SoftmaxCase& c = GetParam();
  Attributes attrs;
  if (c.has_axis) attrs["axis"] = c.axis;
  // LogSoftmax and Hardmax share Softmax's axis semantics and canonical form.
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    const Model model = MakeModel(c.opset, {{"x", DType::kFloat32, {2, 3, 4, 5}}},
                                  {{"y", DType::kFloat32, {2, 3, 4, 5}}},
                                  {MakeNode("softmax", op, {"x"}, {"y"}, attrs)});
    absl::StatusOr<BoundGraph> graph = Bind(model);
    ASSERT_TRUE(graph.ok()) << op << ": " << graph.status();
    ASSERT_EQ(graph->nodes.size(), 1u);
    EXPECT_EQ(graph->nodes[0].op_type, op);
    const Attributes& canonical = graph->nodes[0].attributes;
    EXPECT_EQ(IntAttr(canonical, "outer"), c.outer) << op;
    EXPECT_EQ(IntAttr(canonical, "axis_size"), c.axis_size) << op;
    EXPECT_EQ(IntAttr(canonical, "inner"), c.inner) << op;
    EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(2, 3, 4, 5));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Opsets, SoftmaxCanonicalTest,
    ::testing::Values(
        // Opset 11 flattens [2,3,4,5] from axis 1 into [2, 60].
        SoftmaxCase{11, true, 1, 2, 60, 1},
        // Opset 11's default axis is 1.
        SoftmaxCase{11, false, 0, 2, 60, 1},
        // Opset 13 runs over the one axis: dim 1 of size 3, inner 4*5.
        SoftmaxCase{13, true, 1, 2, 3, 20},
        // Opset 13's default axis is -1.
        SoftmaxCase{13, false, 0, 24, 5, 1},
        // A negative axis at opset 11 still flattens to the end: axis -2 is 2.
        SoftmaxCase{11, true, -2, 6, 20, 1}));

struct SliceCase {
  std::string label;
  int64_t start, end, step;
  int64_t expected_start, expected_count;
};

void PrintTo(const SliceCase& c, std::ostream* os) {
  *os << c.label << " [" << c.start << ":" << c.end << ":" << c.step << "]";
}

class SliceCanonicalTest : public ::testing::TestWithParam<SliceCase> {};

constexpr int64_t kSliceDim = 10;  // size of the sliced axis

TEST_P(SliceCanonicalTest, StartsStepsAndDims) {
  const SliceCase& c = GetParam();
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, kSliceDim}}},
                          {{"y", DType::kFloat32, {}}},
                          {MakeNode("slice", "Slice", {"x", "starts", "ends", "axes", "steps"},
                                    {"y"})});
  model.initializers["starts"] = Int64Tensor({1}, {c.start});
  model.initializers["ends"] = Int64Tensor({1}, {c.end});
  model.initializers["axes"] = Int64Tensor({1}, {-1});
  model.initializers["steps"] = Int64Tensor({1}, {c.step});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const BoundNode& node = graph->nodes[0];
  EXPECT_EQ(node.inputs.size(), 1u);
  EXPECT_THAT(IntsAttr(node.attributes, "starts"), ElementsAre(0, c.expected_start));
  EXPECT_THAT(IntsAttr(node.attributes, "steps"), ElementsAre(1, c.step));
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(2, c.expected_count));
}

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

INSTANTIATE_TEST_SUITE_P(
    Clamping, SliceCanonicalTest,
    ::testing::Values(
        // x[:, 2:8:3] reads 2, 5.
        SliceCase{"Forward", 2, 8, 3, 2, 2},
        // x[:, ::-1]: PyTorch's flip spelling, start -1 is 9, end INT64_MIN clamps to -1.
        SliceCase{"Reverse", -1, kMin, -1, 9, 10},
        // x[:, -1::-2] reads 9, 7, 5, 3, 1.
        SliceCase{"ReverseByTwo", -1, kMin, -2, 9, 5},
        // Start past the end clamps to dim-1 for a negative step; end -100 to -1.
        SliceCase{"ReverseClamped", 100, -100, -1, 9, 10},
        // Positive step: start -100 clamps to 0, end INT64_MAX to 10: reads 0, 4, 8.
        SliceCase{"ForwardClamped", -100, kMax, 4, 0, 3},
        // Empty: start >= end with a positive step.
        SliceCase{"Empty", 7, 3, 1, 7, 0}),
    [](const ::testing::TestParamInfo<SliceCase>& info) { return info.param.label; });

TEST(BindTest, SliceOpset9ReadsAttributes) {
  const Model model = MakeModel(
      9, {{"x", DType::kFloat32, {-1, 6, 8}}}, {{"y", DType::kFloat32, {}}},
      {MakeNode("slice", "Slice", {"x"}, {"y"},
                {{"starts", std::vector<int64_t>{1, -3}},
                 {"ends", std::vector<int64_t>{kMax, -1}},
                 {"axes", std::vector<int64_t>{1, 2}}})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 3);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_THAT(IntsAttr(graph->nodes[0].attributes, "starts"), ElementsAre(0, 1, 5));
  EXPECT_THAT(IntsAttr(graph->nodes[0].attributes, "steps"), ElementsAre(1, 1, 1));
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(3, 5, 2));
}

TEST(BindTest, VariadicMaxBecomesChain) {
  const Model model = MakeModel(
      kOpset,
      {{"a", DType::kFloat32, {-1, 4}},
       {"b", DType::kFloat32, {4}},
       {"c", DType::kFloat32, {-1, 1}}},
      {{"y", DType::kFloat32, {}}, {"z", DType::kFloat32, {}}},
      {MakeNode("max3", "Max", {"a", "b", "c"}, {"y"}),
       MakeNode("min1", "Min", {"b"}, {"z"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 3u);
  const BoundNode& first = graph->nodes[0];
  const BoundNode& second = graph->nodes[1];
  EXPECT_EQ(first.op_type, "Max");
  EXPECT_EQ(second.op_type, "Max");
  ASSERT_EQ(first.inputs.size(), 2u);
  ASSERT_EQ(second.inputs.size(), 2u);
  EXPECT_EQ(graph->value(first.inputs[0]).name, "a");
  EXPECT_EQ(graph->value(first.inputs[1]).name, "b");
  EXPECT_EQ(second.inputs[0], first.outputs[0]);  // the chain feeds forward
  EXPECT_EQ(graph->value(second.inputs[1]).name, "c");
  EXPECT_EQ(second.outputs[0], graph->outputs[0]);
  EXPECT_THAT(OutputValue(*graph, 0).dims, ElementsAre(2, 4));
  EXPECT_EQ(graph->nodes[2].op_type, "Identity");
  EXPECT_EQ(graph->nodes[2].outputs[0], graph->outputs[1]);
}

TEST(BindTest, PowCastsMismatchedExponent) {
  const Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 3}}, {"e", DType::kInt64, {3}}},
      {{"y", DType::kFloat32, {}}}, {MakeNode("pow", "Pow", {"x", "e"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const BoundNode& cast = graph->nodes[0];
  EXPECT_EQ(cast.name, "pow/cast_exponent");
  EXPECT_EQ(cast.op_type, "Cast");
  EXPECT_EQ(IntAttr(cast.attributes, "to"), 1);
  EXPECT_EQ(graph->value(cast.outputs[0]).dtype, DType::kFloat32);
  EXPECT_EQ(graph->nodes[1].inputs[1], cast.outputs[0]);
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(2, 3));
}

// Opset 19's Cast carries saturate (float8 targets only): accepted, dropped
// from the canonical node; a value other than 0 or 1 is refused.
TEST(BindTest, CastAcceptsSaturate) {
  for (const int64_t saturate : {int64_t{0}, int64_t{1}}) {
    const Model model = MakeModel(
        19, {{"x", DType::kInt32, {-1, 3}}}, {{"y", DType::kFloat16, {}}},
        {MakeNode("cast", "Cast", {"x"}, {"y"},
                  {{"to", int64_t{10}}, {"saturate", saturate}})});
    absl::StatusOr<BoundGraph> graph = Bind(model, 2);
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(graph->nodes[0].attributes.count("saturate"), 0u);
    EXPECT_EQ(OutputValue(*graph).dtype, DType::kFloat16);
  }
  const Model bad = MakeModel(19, {{"x", DType::kInt32, {-1, 3}}}, {{"y", DType::kFloat16, {}}},
                              {MakeNode("cast", "Cast", {"x"}, {"y"},
                                        {{"to", int64_t{10}}, {"saturate", int64_t{2}}})});
  absl::StatusOr<BoundGraph> graph = Bind(bad, 2);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("saturate should be 0 or 1"));
}

// A Cast (or CastLike) to its input's own type is no node: its readers read
// the input, so the Cast breaks no fused chain; as a graph output it is an
// Identity.
TEST(BindTest, CastToItsOwnTypeIsNoNode) {
  const Model model = MakeModel(
      kOpset, {{"x", DType::kFloat16, {-1, 3}}}, {{"y", DType::kFloat16, {}}},
      {MakeNode("same", "Cast", {"x"}, {"c"}, {{"to", int64_t{10}}}),
       MakeNode("like", "CastLike", {"c", "x"}, {"l"}), MakeNode("neg", "Neg", {"l"}, {"n"}),
       MakeNode("out", "Cast", {"n"}, {"y"}, {{"to", int64_t{10}}})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const BoundNode& neg = graph->nodes[0];
  EXPECT_EQ(neg.op_type, "Neg");
  EXPECT_EQ(graph->value(neg.inputs[0]).name, "x");
  const BoundNode& out = graph->nodes[1];
  EXPECT_EQ(out.op_type, "Identity");
  EXPECT_EQ(out.inputs[0], neg.outputs[0]);
  EXPECT_EQ(out.outputs[0], graph->outputs[0]);
  EXPECT_EQ(OutputValue(*graph).dtype, DType::kFloat16);
}

// Note [Repeated nodes]: TorchScript's BERT mask in small. Each "layer"
// builds Where(mask, zero, lowest) from its own equal scalar constants and
// adds it to its scores: one Where serves both Adds. A node with other
// attributes, and one that makes a graph output, is emitted as it is.
TEST(BindTest, RepeatedNodesAreEmittedOnce) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 4}}, {"m", DType::kBool, {-1, 4}}},
      {{"y", DType::kFloat32, {}}, {"t", DType::kFloat32, {}}},
      {MakeNode("zero0", "Constant", {}, {"zero0"}, {{"value_float", 0.0f}}),
       MakeNode("low0", "Constant", {}, {"low0"}, {{"value_float", -1e30f}}),
       MakeNode("mask0", "Where", {"m", "zero0", "low0"}, {"mask0"}),
       MakeNode("add0", "Add", {"x", "mask0"}, {"h0"}),
       MakeNode("zero1", "Constant", {}, {"zero1"}, {{"value_float", 0.0f}}),
       MakeNode("low1", "Constant", {}, {"low1"}, {{"value_float", -1e30f}}),
       MakeNode("mask1", "Where", {"m", "zero1", "low1"}, {"mask1"}),
       MakeNode("add1", "Add", {"h0", "mask1"}, {"h1"}),
       MakeNode("soft0", "Softmax", {"h1"}, {"s0"}, {{"axis", int64_t{-1}}}),
       MakeNode("soft1", "Softmax", {"h1"}, {"s1"}, {{"axis", int64_t{0}}}),
       MakeNode("sum", "Add", {"s0", "s1"}, {"y"}), MakeNode("tanh0", "Tanh", {"y"}, {"t0"}),
       MakeNode("tanh1", "Tanh", {"y"}, {"t"}), MakeNode("use", "Add", {"t0", "t0"}, {"unused"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> names;
  for (const BoundNode& node : graph->nodes) names.push_back(node.name);
  EXPECT_THAT(names, ElementsAre("mask0", "add0", "add1", "soft0", "soft1", "sum", "tanh1"));
  const BoundNode& add1 = graph->nodes[2];
  EXPECT_EQ(add1.inputs[1], graph->nodes[0].outputs[0]);  // mask0's value
}

// Note [Repeated nodes]: a fold repeated per layer (a Transpose of a shared
// weight) folds once, and its readers share the constant.
TEST(BindTest, RepeatedFoldsFoldOnce) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 2}}}, {{"y", DType::kFloat32, {}}},
      {MakeNode("t0", "Transpose", {"w"}, {"wt0"}), MakeNode("mm0", "MatMul", {"x", "wt0"}, {"h"}),
       MakeNode("t1", "Transpose", {"w"}, {"wt1"}),
       MakeNode("mm1", "MatMul", {"h", "wt1"}, {"y"})});
  model.initializers["w"] = FloatTensor({2, 2}, {1, 2, 3, 4});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  const BoundValue& folded = graph->value(graph->nodes[0].inputs[1]);
  ASSERT_TRUE(folded.is_constant());
  EXPECT_EQ(folded.name, "wt0");
  EXPECT_EQ(graph->nodes[1].inputs[1], graph->nodes[0].inputs[1]);
  EXPECT_EQ(folded.constant->data<float>()[1], 3.0f);  // transposed
}

// An Identity is its input: an Identity of a weight is that weight, not a
// folded copy (TorchScript's ALBERT reads its shared weights through one per
// layer); as a graph output it is a node.
TEST(BindTest, IdentityIsItsInput) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 3}}}, {{"y", DType::kFloat32, {}}},
      {MakeNode("shared0", "Identity", {"w"}, {"w0"}),
       MakeNode("shared1", "Identity", {"w"}, {"w1"}), MakeNode("add0", "Add", {"x", "w0"}, {"h"}),
       MakeNode("add1", "Add", {"h", "w1"}, {"h1"}), MakeNode("out", "Identity", {"h1"}, {"y"})});
  model.initializers["w"] = FloatTensor({3}, {1, 2, 3});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 3u);
  EXPECT_EQ(graph->value(graph->nodes[0].inputs[1]).name, "w");
  EXPECT_EQ(graph->nodes[1].inputs[1], graph->nodes[0].inputs[1]);
  EXPECT_EQ(graph->value(graph->nodes[0].inputs[1]).constant, model.initializers["w"]);
  EXPECT_EQ(graph->nodes[2].op_type, "Identity");
  EXPECT_EQ(graph->nodes[2].outputs[0], graph->outputs[0]);
}

// A Concat of one input is that input (TorchScript's GPT-2 appends each
// layer's keys to an empty cache so): no node.
TEST(BindTest, ConcatOfOneInputIsNoNode) {
  const Model model =
      MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 3}}}, {{"y", DType::kFloat32, {}}},
                {MakeNode("cat", "Concat", {"x"}, {"c"}, {{"axis", int64_t{1}}}),
                 MakeNode("neg", "Neg", {"c"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->value(graph->nodes[0].inputs[0]).name, "x");
}

TEST(BindTest, GemmAttributesAreExplicit) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 8}}},
                          {{"y", DType::kFloat32, {}}},
                          {MakeNode("fc", "Gemm", {"x", "w", "bias"}, {"y"},
                                    {{"transB", int64_t{1}}})});
  model.initializers["w"] = std::make_shared<HostTensor>(DType::kFloat32, Dims{16, 8});
  model.initializers["bias"] = std::make_shared<HostTensor>(DType::kFloat32, Dims{16});
  absl::StatusOr<BoundGraph> graph = Bind(model, 4);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  const Attributes& attrs = graph->nodes[0].attributes;
  EXPECT_EQ(attrs.count("transA"), 1u);
  EXPECT_EQ(IntAttr(attrs, "transA"), 0);
  EXPECT_EQ(IntAttr(attrs, "transB"), 1);
  EXPECT_EQ(attrs.count("alpha"), 1u);
  EXPECT_FLOAT_EQ(FloatAttr(attrs, "alpha"), 1.0f);
  EXPECT_FLOAT_EQ(FloatAttr(attrs, "beta"), 1.0f);
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(4, 16));
}

TEST(BindTest, MatMulPromotesVectors) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 3, 5, 4}}},
                          {{"y", DType::kFloat32, {}}, {"v", DType::kFloat32, {}}},
                          {MakeNode("mm", "MatMul", {"x", "w"}, {"y"}),
                           MakeNode("mv", "MatMul", {"vec", "x"}, {"v"})});
  model.initializers["w"] = std::make_shared<HostTensor>(DType::kFloat32, Dims{4});
  model.initializers["vec"] = std::make_shared<HostTensor>(DType::kFloat32, Dims{5});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OutputValue(*graph, 0).dims, ElementsAre(2, 3, 5));
  EXPECT_THAT(OutputValue(*graph, 1).dims, ElementsAre(2, 3, 4));
}

TEST(BindTest, LayerNormStatsOutputsAndTrailingUnusedOutputs) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 6, 8}}},
      {{"y", DType::kFloat32, {}}, {"inv_std", DType::kFloat32, {}}},
      {MakeNode("ln", "LayerNormalization", {"x", "scale"}, {"y", "", "inv_std"}),
       MakeNode("ln2", "LayerNormalization", {"x", "scale"}, {"y2", "mean2"}),
       MakeNode("use", "Relu", {"y2"}, {"r"})});
  model.outputs.push_back({"r", DType::kFloat32, {}});
  model.initializers["scale"] = std::make_shared<HostTensor>(DType::kFloat32, Dims{8});
  absl::StatusOr<BoundGraph> graph = Bind(model, 2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 3u);
  const BoundNode& ln = graph->nodes[0];
  EXPECT_EQ(IntAttr(ln.attributes, "outer"), 12);
  EXPECT_EQ(IntAttr(ln.attributes, "inner"), 8);
  EXPECT_FLOAT_EQ(FloatAttr(ln.attributes, "epsilon"), 1e-5f);
  ASSERT_EQ(ln.outputs.size(), 3u);  // the unnamed Mean keeps InvStdDev at index 2
  EXPECT_THAT(graph->value(ln.outputs[2]).dims, ElementsAre(2, 6, 1));
  EXPECT_EQ(ln.outputs[2], graph->outputs[1]);
  // ln2's Mean is named but nothing reads it: dropped from the end.
  EXPECT_EQ(graph->nodes[1].outputs.size(), 1u);
}

// Squeeze's axes became an input at opset 13, ReduceMean's at opset 18.
TEST(BindTest, OldAndNewAxesSpellingsAgree) {
  for (int64_t opset : {11, 13, 18}) {
    const bool squeeze_input = opset >= 13;
    const bool reduce_input = opset >= 18;
    Attributes squeeze_attrs;
    if (!squeeze_input) squeeze_attrs["axes"] = std::vector<int64_t>{-2};
    Attributes reduce_attrs = {{"keepdims", int64_t{0}}};
    if (!reduce_input) reduce_attrs["axes"] = std::vector<int64_t>{-1};
    std::vector<std::string> squeeze_inputs = {"x"};
    if (squeeze_input) squeeze_inputs.push_back("squeeze_axes");
    std::vector<std::string> reduce_inputs = {"s"};
    if (reduce_input) reduce_inputs.push_back("reduce_axes");
    Model model = MakeModel(opset, {{"x", DType::kFloat32, {-1, 1, 4}}},
                            {{"m", DType::kFloat32, {}}},
                            {MakeNode("sq", "Squeeze", squeeze_inputs, {"s"}, squeeze_attrs),
                             MakeNode("mean", "ReduceMean", reduce_inputs, {"m"}, reduce_attrs)});
    model.initializers["squeeze_axes"] = Int64Tensor({1}, {-2});
    model.initializers["reduce_axes"] = Int64Tensor({1}, {-1});
    absl::StatusOr<BoundGraph> graph = Bind(model, 3);
    ASSERT_TRUE(graph.ok()) << "opset " << opset << ": " << graph.status();
    ASSERT_EQ(graph->nodes.size(), 2u) << "opset " << opset;
    EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);
    EXPECT_EQ(graph->nodes[1].inputs.size(), 1u);
    EXPECT_THAT(graph->value(graph->nodes[0].outputs[0]).dims, ElementsAre(3, 4));
    EXPECT_THAT(IntsAttr(graph->nodes[1].attributes, "axes"), ElementsAre(1));
    EXPECT_EQ(IntAttr(graph->nodes[1].attributes, "keepdims"), 0);
    EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(3)) << "opset " << opset;
  }
}

TEST(BindTest, ExpandGatherFlattenTransposeDims) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 5, 6}}, {"ids", DType::kInt64, {2, 3}}},
      {{"e", DType::kFloat32, {}},
       {"g", DType::kFloat32, {}},
       {"f", DType::kFloat32, {}},
       {"t", DType::kFloat32, {}}},
      {MakeNode("expand", "Expand", {"col", "expand_shape"}, {"e"}),
       MakeNode("gather", "Gather", {"x", "ids"}, {"g"}, {{"axis", int64_t{-2}}}),
       MakeNode("flatten", "Flatten", {"x"}, {"f"}, {{"axis", int64_t{-1}}}),
       MakeNode("transpose", "Transpose", {"x"}, {"t"})});
  // Bidirectional: [3,1] against [2,1,4] gives [2,3,4].
  model.initializers["expand_shape"] = Int64Tensor({3}, {2, 1, 4});
  model.initializers["col"] = FloatTensor({3, 1}, {1, 2, 3});
  absl::StatusOr<BoundGraph> graph = Bind(model, 4);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const BoundValue& expanded = OutputValue(*graph, 0);
  EXPECT_THAT(expanded.dims, ElementsAre(2, 3, 4));
  ASSERT_TRUE(expanded.is_constant());  // constant input: folded on the host
  EXPECT_FLOAT_EQ(expanded.constant->data<float>()[23], 3.0f);
  EXPECT_THAT(OutputValue(*graph, 1).dims, ElementsAre(4, 2, 3, 6));
  EXPECT_THAT(OutputValue(*graph, 2).dims, ElementsAre(20, 6));
  EXPECT_THAT(OutputValue(*graph, 3).dims, ElementsAre(6, 5, 4));
  ASSERT_EQ(graph->nodes.size(), 3u);
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "axis"), 1);  // Gather axis -2 of rank 3
  EXPECT_THAT(IntsAttr(graph->nodes[2].attributes, "perm"), ElementsAre(2, 1, 0));
}

TEST(BindTest, DeadNodesAreRemoved) {
  const Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 2}}},
                                {{"y", DType::kFloat32, {}}},
                                {MakeNode("dead", "Exp", {"x"}, {"unused"}),
                                 MakeNode("live", "Neg", {"x"}, {"y"})});
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->nodes[0].name, "live");
}

TEST(BindTest, ReshapeCopiesZeroAndInfersMinusOne) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 4, 6}}},
                          {{"y", DType::kFloat32, {}}},
                          {MakeNode("r", "Reshape", {"x", "shape"}, {"y"})});
  model.initializers["shape"] = Int64Tensor({3}, {0, -1, 3});
  absl::StatusOr<BoundGraph> graph = Bind(model, 5);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OutputValue(*graph).dims, ElementsAre(5, 8, 3));

  model.initializers["shape"] = Int64Tensor({2}, {0, 7});
  absl::StatusOr<BoundGraph> bad = Bind(model, 5);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("'r'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("[5,4,6]"));
}

// Every value the model names, the ones folded away and the ones nothing
// reads included, as BindModel would type them: what the precision pass reads.
TEST(InferValueDTypesTest, TypesEveryNamedValueFoldedOrDead) {
  Model model = MakeModel(
      kOpset, {{"x", DType::kFloat32, {-1, 4}}}, {{"y", DType::kFloat32, {-1, 4}}},
      {MakeNode("shape", "Shape", {"x"}, {"shape"}),
       MakeNode("shape_f", "Cast", {"shape"}, {"shape_f"},
                {{"to", static_cast<int64_t>(DType::kFloat32)}}),
       MakeNode("is_nan", "IsNaN", {"x"}, {"is_nan"}),
       MakeNode("y", "Relu", {"x"}, {"y"})});
  model.initializers["unused"] = Int64Tensor({1}, {3});
  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(model, {});
  ASSERT_TRUE(dtypes.ok()) << dtypes.status();
  EXPECT_EQ(*dtypes, (std::map<std::string, DType>{{"x", DType::kFloat32},
                                                   {"shape", DType::kInt64},
                                                   {"shape_f", DType::kFloat32},
                                                   {"is_nan", DType::kBool},
                                                   {"y", DType::kFloat32},
                                                   {"unused", DType::kInt64}}));
}

TEST(InferValueDTypesTest, FailsAsBindingDoes) {
  Model model = MakeModel(kOpset, {{"x", DType::kFloat32, {-1, 4}}},
                          {{"y", DType::kFloat32, {-1, 4}}},
                          {MakeNode("y", "Relu", {"missing"}, {"y"})});
  const absl::Status status = InferValueDTypes(model, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("'missing' is not defined"));
}

}  // namespace
}  // namespace graphserve
