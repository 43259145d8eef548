// The data movement family's bind rules for Tile, Trilu, the scatters,
// DepthToSpace, SpaceToDepth, OneHot and TopK: output dims, canonical
// attributes, ONNX's differences between opsets, refusals that name the
// node, and (for the ops binding rewrites) the host executor computing what
// ONNX defines.

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/data_movement_params.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Node MakeNode(std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{"n", std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

std::shared_ptr<const HostTensor> Int64s(Dims dims, const std::vector<int64_t>& values) {
  auto tensor = std::make_shared<HostTensor>(DType::kInt64, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) tensor->data<int64_t>()[i] = values[i];
  return tensor;
}

template <typename T>
std::shared_ptr<const HostTensor> Scalar(DType dtype, T value) {
  auto tensor = std::make_shared<HostTensor>(dtype, Dims{});
  *tensor->data<T>() = value;
  return tensor;
}

// One node reading graph input "x" (and the initializers given) at `opset`;
// its outputs are the graph's outputs.
Model OneNodeModel(int64_t opset, ValueInfo x, Node node,
                   std::map<std::string, std::shared_ptr<const HostTensor>> initializers = {},
                   std::vector<ValueInfo> extra_inputs = {}) {
  Model model;
  model.name = "data_movement";
  model.opset = opset;
  model.inputs = {std::move(x)};
  for (ValueInfo& input : extra_inputs) model.inputs.push_back(std::move(input));
  for (const std::string& output : node.outputs) model.outputs.push_back({output, DType::kFloat32, {}});
  model.initializers = std::move(initializers);
  model.nodes = {std::move(node)};
  return model;
}

absl::StatusOr<BoundGraph> Bind(const Model& model) {
  BindOptions options;
  options.batch_size = 1;
  return BindModel(model, options);
}

const BoundValue& Output(const BoundGraph& graph, size_t k = 0) {
  return graph.value(graph.outputs[k]);
}

// ---------------------------------------------------------------------------
// Tile and Trilu
// ---------------------------------------------------------------------------

TEST(TileBindTest, OutputDimsAreTheInputsTimesTheRepeats) {
  absl::StatusOr<BoundGraph> graph =
      Bind(OneNodeModel(13, {"x", DType::kFloat16, {2, 3, 1}},
                        MakeNode("Tile", {"x", "repeats"}, {"y"}),
                        {{"repeats", Int64s({3}, {2, 1, 4})}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);
  EXPECT_EQ(graph->nodes[0].op_type, "Tile");
  EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);  // the repeats are consumed
  EXPECT_EQ(Output(*graph).dtype, DType::kFloat16);
  EXPECT_THAT(Output(*graph).dims, ElementsAre(4, 3, 4));
}

TEST(TileBindTest, RepeatsOfTheWrongLengthOrSignAreRefused) {
  for (const auto& repeats : {Int64s({2}, {2, 2}), Int64s({1}, {-1})}) {
    absl::StatusOr<BoundGraph> graph =
        Bind(OneNodeModel(13, {"x", DType::kFloat32, {3}},
                          MakeNode("Tile", {"x", "repeats"}, {"y"}), {{"repeats", repeats}}));
    ASSERT_FALSE(graph.ok());
    EXPECT_THAT(graph.status().message(), HasSubstr("(Tile): repeats"));
  }
}

// Found by fuzz/onnx_model_fuzz: a Reshape whose shape's dims multiply past
// int64 overflowed (UBSan: signed integer overflow) instead of being refused.
TEST(ReshapeBindTest, AShapeBeyondInt64IsRefused) {
  constexpr int64_t kHuge = int64_t{1} << 62;  // times 3 overflows
  absl::StatusOr<BoundGraph> graph =
      Bind(OneNodeModel(13, {"x", DType::kFloat32, {3}}, MakeNode("Reshape", {"x", "shape"}, {"y"}),
                        {{"shape", Int64s({3}, {3, kHuge, -1})}}));
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(graph.status().message(), HasSubstr("more elements than an int64 counts"));
}

TEST(TriluBindTest, OffsetIsClampedToTheMatrix) {
  // [5, 3]: k beyond [-5, 3] changes nothing more, so binding clamps it.
  for (const auto& [k, canonical] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {100, 3}, {-100, -5}, {INT64_MIN, -5}}) {
    absl::StatusOr<BoundGraph> graph =
        Bind(OneNodeModel(14, {"x", DType::kInt64, {2, 5, 3}},
                          MakeNode("Trilu", {"x", "k"}, {"y"}, {{"upper", int64_t{0}}}),
                          {{"k", Scalar<int64_t>(DType::kInt64, k)}}));
    ASSERT_TRUE(graph.ok()) << graph.status();
    EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "k"), canonical) << "k " << k;
    EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "upper"), 0);
  }
}

TEST(TriluBindTest, WithoutKTheDiagonalIsKeptAndRankOneIsRefused) {
  absl::StatusOr<BoundGraph> graph =
      Bind(OneNodeModel(14, {"x", DType::kBool, {4, 4}}, MakeNode("Trilu", {"x"}, {"y"})));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "k"), 0);
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "upper"), 1);
  EXPECT_FALSE(
      Bind(OneNodeModel(14, {"x", DType::kFloat32, {4}}, MakeNode("Trilu", {"x"}, {"y"}))).ok());
}

// ---------------------------------------------------------------------------
// ScatterND and ScatterElements
// ---------------------------------------------------------------------------

Model ScatterNDModel(int64_t opset, DType dtype, Attributes attributes,
                     std::shared_ptr<const HostTensor> indices = nullptr) {
  std::vector<ValueInfo> extra = {{"updates", dtype, {2, 4}}};
  std::map<std::string, std::shared_ptr<const HostTensor>> initializers;
  if (indices != nullptr) {
    initializers["indices"] = std::move(indices);
  } else {
    extra.push_back({"indices", DType::kInt64, {2, 1}});
  }
  return OneNodeModel(opset, {"x", dtype, {3, 4}},
                      MakeNode("ScatterND", {"x", "indices", "updates"}, {"y"}, attributes),
                      std::move(initializers), std::move(extra));
}

TEST(ScatterBindTest, ReductionsFollowTheirOpsets) {
  const Attributes mul = {{"reduction", std::string("mul")}};
  const Attributes max = {{"reduction", std::string("max")}};
  absl::StatusOr<BoundGraph> graph = Bind(ScatterNDModel(16, DType::kFloat32, mul));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "reduction"),
            static_cast<int64_t>(ScatterReduction::kMul));
  EXPECT_THAT(Output(*graph).dims, ElementsAre(3, 4));
  graph = Bind(ScatterNDModel(18, DType::kInt32, max));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "reduction"),
            static_cast<int64_t>(ScatterReduction::kMax));
  // max is opset 18's, mul opset 16's; none is every opset's.
  EXPECT_THAT(Bind(ScatterNDModel(17, DType::kFloat32, max)).status().message(),
              HasSubstr("needs opset 18"));
  EXPECT_THAT(Bind(ScatterNDModel(13, DType::kFloat32, mul)).status().message(),
              HasSubstr("needs opset 16"));
  EXPECT_TRUE(Bind(ScatterNDModel(11, DType::kFloat32, {})).ok());
  EXPECT_FALSE(Bind(ScatterNDModel(18, DType::kFloat32, {{"reduction", std::string("sub")}})).ok());
}

TEST(ScatterBindTest, ArithmeticOnBoolIsUnsupported) {
  absl::StatusOr<BoundGraph> graph =
      Bind(ScatterNDModel(16, DType::kBool, {{"reduction", std::string("add")}}));
  EXPECT_TRUE(absl::IsUnimplemented(graph.status())) << graph.status();
  EXPECT_TRUE(Bind(ScatterNDModel(16, DType::kBool, {})).ok());
}

TEST(ScatterBindTest, ConstantIndicesAreCheckedAndUpdatesShaped) {
  EXPECT_TRUE(Bind(ScatterNDModel(16, DType::kFloat32, {}, Int64s({2, 1}, {-3, 2}))).ok());
  absl::StatusOr<BoundGraph> graph =
      Bind(ScatterNDModel(16, DType::kFloat32, {}, Int64s({2, 1}, {0, 3})));
  EXPECT_THAT(graph.status().message(), HasSubstr("index 3 is out of range"));
  // updates [2, 4] do not fit index tuples of length 2 (which address
  // single elements: updates [2]).
  graph = Bind(ScatterNDModel(16, DType::kFloat32, {}, Int64s({2, 2}, {0, 0, 1, 1})));
  EXPECT_THAT(graph.status().message(), HasSubstr("updates [2,4] should be [2]"));
}

TEST(ScatterBindTest, ElementsCastInt32IndicesAndNormaliseTheAxis) {
  absl::StatusOr<BoundGraph> graph = Bind(OneNodeModel(
      18, {"x", DType::kFloat32, {3, 4}},
      MakeNode("ScatterElements", {"x", "indices", "updates"}, {"y"},
               {{"axis", int64_t{-1}}, {"reduction", std::string("min")}}),
      {}, {{"indices", DType::kInt32, {3, 2}}, {"updates", DType::kFloat32, {3, 2}}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].op_type, "Cast");
  const BoundNode& scatter = graph->nodes[1];
  EXPECT_EQ(scatter.op_type, "ScatterElements");
  EXPECT_EQ(graph->value(scatter.inputs[1]).dtype, DType::kInt64);
  EXPECT_EQ(IntAttr(scatter.attributes, "axis"), 1);
  EXPECT_EQ(IntAttr(scatter.attributes, "reduction"), static_cast<int64_t>(ScatterReduction::kMin));
}

// ---------------------------------------------------------------------------
// DepthToSpace and SpaceToDepth: Transposes of 6-D views
// ---------------------------------------------------------------------------

// Runs a one-node model on x with the host executor.
HostTensor RunHost(const Model& model, const HostTensor& x) {
  absl::StatusOr<BoundGraph> graph = Bind(model);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*executor)->Run({x});
  EXPECT_TRUE(out.ok()) << out.status();
  return (*out)[0];
}

HostTensor Iota(Dims dims) {
  HostTensor x(DType::kInt32, std::move(dims));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<int32_t>()[i] = static_cast<int32_t>(i);
  return x;
}

TEST(BlockShuffleBindTest, DepthToSpaceMovesChannelBlocksAsOnnxSays) {
  constexpr int64_t kN = 2, kC = 8, kH = 2, kW = 3, kB = 2, kDepth = kC / (kB * kB);
  const HostTensor x = Iota({kN, kC, kH, kW});
  for (const std::string mode : {"DCR", "CRD"}) {
    const Model model = OneNodeModel(
        13, {"x", DType::kInt32, {kN, kC, kH, kW}},
        MakeNode("DepthToSpace", {"x"}, {"y"}, {{"blocksize", kB}, {"mode", mode}}));
    absl::StatusOr<BoundGraph> graph = Bind(model);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::vector<std::string> ops;
    for (const BoundNode& node : graph->nodes) ops.push_back(node.op_type);
    EXPECT_THAT(ops, ElementsAre("Reshape", "Transpose", "Reshape"));
    const HostTensor y = RunHost(model, x);
    ASSERT_EQ(y.dims(), (Dims{kN, kDepth, kH * kB, kW * kB}));
    // ONNX: y[n, c, h*B + i, w*B + j] = x[n, channel, h, w] where the
    // channel is (i*B + j)*depth + c (DCR) or (c*B + i)*B + j (CRD).
    for (int64_t n = 0; n < kN; ++n) {
      for (int64_t c = 0; c < kDepth; ++c) {
        for (int64_t h = 0; h < kH * kB; ++h) {
          for (int64_t w = 0; w < kW * kB; ++w) {
            const int64_t i = h % kB, j = w % kB;
            const int64_t channel = mode == "DCR" ? (i * kB + j) * kDepth + c : (c * kB + i) * kB + j;
            const int64_t want = ((n * kC + channel) * kH + h / kB) * kW + w / kB;
            const int64_t at = ((n * kDepth + c) * kH * kB + h) * kW * kB + w;
            ASSERT_EQ(y.data<int32_t>()[at], want) << mode << " at " << at;
          }
        }
      }
    }
  }
}

TEST(BlockShuffleBindTest, SpaceToDepthUndoesDepthToSpaceDcr) {
  const HostTensor x = Iota({1, 3, 4, 6});
  const HostTensor packed = RunHost(
      OneNodeModel(13, {"x", DType::kInt32, {1, 3, 4, 6}},
                   MakeNode("SpaceToDepth", {"x"}, {"y"}, {{"blocksize", int64_t{2}}})),
      x);
  ASSERT_EQ(packed.dims(), (Dims{1, 12, 2, 3}));
  const HostTensor back = RunHost(
      OneNodeModel(13, {"x", DType::kInt32, {1, 12, 2, 3}},
                   MakeNode("DepthToSpace", {"x"}, {"y"}, {{"blocksize", int64_t{2}}})),
      packed);
  ASSERT_EQ(back.dims(), x.dims());
  EXPECT_EQ(std::memcmp(back.raw(), x.raw(), x.bytes()), 0);
}

// Opset 28's SpaceToDepth takes DepthToSpace's modes: in each, the inverse of
// DepthToSpace in the same mode. CRD before opset 28 is refused.
TEST(BlockShuffleBindTest, SpaceToDepthUndoesDepthToSpaceInEitherModeAtOpset28) {
  const HostTensor x = Iota({2, 3, 4, 6});
  for (const std::string mode : {"DCR", "CRD"}) {
    const HostTensor packed =
        RunHost(OneNodeModel(28, {"x", DType::kInt32, {2, 3, 4, 6}},
                             MakeNode("SpaceToDepth", {"x"}, {"y"},
                                      {{"blocksize", int64_t{2}}, {"mode", mode}})),
                x);
    ASSERT_EQ(packed.dims(), (Dims{2, 12, 2, 3}));
    const HostTensor back =
        RunHost(OneNodeModel(28, {"x", DType::kInt32, {2, 12, 2, 3}},
                             MakeNode("DepthToSpace", {"x"}, {"y"},
                                      {{"blocksize", int64_t{2}}, {"mode", mode}})),
                packed);
    ASSERT_EQ(back.dims(), x.dims());
    EXPECT_EQ(std::memcmp(back.raw(), x.raw(), x.bytes()), 0) << mode;
  }
  absl::StatusOr<BoundGraph> graph =
      Bind(OneNodeModel(25, {"x", DType::kInt32, {1, 1, 2, 2}},
                        MakeNode("SpaceToDepth", {"x"}, {"y"},
                                 {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}})));
  EXPECT_THAT(graph.status().message(), HasSubstr("'mode' needs opset 28"));
}

TEST(BlockShuffleBindTest, RefusesIndivisibleDimsAndModeBeforeOpset11) {
  EXPECT_FALSE(Bind(OneNodeModel(13, {"x", DType::kFloat32, {1, 6, 2, 2}},
                                 MakeNode("DepthToSpace", {"x"}, {"y"},
                                          {{"blocksize", int64_t{2}}})))
                   .ok());
  EXPECT_FALSE(Bind(OneNodeModel(13, {"x", DType::kFloat32, {1, 1, 3, 4}},
                                 MakeNode("SpaceToDepth", {"x"}, {"y"},
                                          {{"blocksize", int64_t{2}}})))
                   .ok());
  absl::StatusOr<BoundGraph> graph = Bind(OneNodeModel(
      10, {"x", DType::kFloat32, {1, 4, 2, 2}},
      MakeNode("DepthToSpace", {"x"}, {"y"},
               {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}})));
  EXPECT_THAT(graph.status().message(), HasSubstr("'mode' needs opset 11"));
}

// ---------------------------------------------------------------------------
// OneHot and TopK
// ---------------------------------------------------------------------------

Model OneHotModel(int64_t opset, DType index_type, std::shared_ptr<const HostTensor> depth,
                  Attributes attributes) {
  auto values = std::make_shared<HostTensor>(DType::kFloat16, Dims{2});
  return OneNodeModel(opset, {"x", index_type, {2, 3}},
                      MakeNode("OneHot", {"x", "depth", "values"}, {"y"}, std::move(attributes)),
                      {{"depth", std::move(depth)}, {"values", values}});
}

TEST(OneHotBindTest, FloatIndicesAreCastAndFloatDepthTruncated) {
  absl::StatusOr<BoundGraph> graph = Bind(
      OneHotModel(11, DType::kFloat32, Scalar<float>(DType::kFloat32, 4.7f), {{"axis", int64_t{-2}}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].op_type, "Cast");
  const BoundNode& one_hot = graph->nodes[1];
  EXPECT_EQ(IntAttr(one_hot.attributes, "axis"), 1);
  EXPECT_EQ(IntAttr(one_hot.attributes, "wrap_negative"), 1);
  EXPECT_EQ(Output(*graph).dtype, DType::kFloat16);
  EXPECT_THAT(Output(*graph).dims, ElementsAre(2, 4, 3));
}

TEST(OneHotBindTest, NegativeIndicesWrapOnlyFromOpset11) {
  absl::StatusOr<BoundGraph> graph =
      Bind(OneHotModel(9, DType::kInt64, Scalar<int64_t>(DType::kInt64, 5), {}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);  // int64 indices need no Cast
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "wrap_negative"), 0);
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "axis"), 2);
  EXPECT_FALSE(Bind(OneHotModel(11, DType::kInt64, Scalar<int64_t>(DType::kInt64, -1), {})).ok());
  EXPECT_FALSE(Bind(OneHotModel(11, DType::kBool, Scalar<int64_t>(DType::kInt64, 2), {})).ok());
}

Model TopKModel(int64_t opset, Attributes attributes, bool k_input) {
  Node node = MakeNode("TopK", {"x"}, {"values", "indices"}, std::move(attributes));
  std::map<std::string, std::shared_ptr<const HostTensor>> initializers;
  if (k_input) {
    node.inputs.push_back("k");
    initializers["k"] = Int64s({1}, {2});
  }
  return OneNodeModel(opset, {"x", DType::kUInt16, {3, 5}}, std::move(node),
                      std::move(initializers));
}

TEST(TopKBindTest, KFromTheAttributeOrTheInputByOpset) {
  absl::StatusOr<BoundGraph> graph =
      Bind(TopKModel(1, {{"k", int64_t{2}}, {"axis", int64_t{0}}}, false));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Output(*graph, 0).dims, ElementsAre(2, 5));
  EXPECT_EQ(Output(*graph, 0).dtype, DType::kUInt16);
  EXPECT_EQ(Output(*graph, 1).dtype, DType::kInt64);
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "largest"), 1);

  graph = Bind(TopKModel(11, {{"largest", int64_t{0}}, {"sorted", int64_t{0}}}, true));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(Output(*graph, 1).dims, ElementsAre(3, 2));
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "axis"), 1);
  EXPECT_EQ(IntAttr(graph->nodes[0].attributes, "largest"), 0);
  EXPECT_EQ(graph->nodes[0].inputs.size(), 1u);  // K is consumed

  EXPECT_THAT(Bind(TopKModel(10, {{"largest", int64_t{0}}}, true)).status().message(),
              HasSubstr("need opset 11"));
  EXPECT_FALSE(Bind(TopKModel(1, {}, false)).ok());  // k is required before opset 10
}

TEST(TopKBindTest, KLargerThanTheAxisIsRefused) {
  absl::StatusOr<BoundGraph> graph =
      Bind(TopKModel(1, {{"k", int64_t{4}}, {"axis", int64_t{0}}}, false));
  EXPECT_THAT(graph.status().message(), HasSubstr("k 4 is outside [0, 3]"));
}

}  // namespace
}  // namespace graphserve
