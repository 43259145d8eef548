#include "runtime/passes/autocast.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/executor.h"
#include "runtime/host/host_executor.h"
#include "runtime/ir.h"
#include "runtime/passes/precision.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kOpset = 17;
constexpr int64_t kWidth = 8;
// Past float16's largest finite value (65504): the weight rule's case.
constexpr float kHugeWeight = 7e4f;

std::shared_ptr<const HostTensor> Weights(Dims dims, uint64_t seed, float scale) {
  HostTensor tensor = RandomTensor(DType::kFloat32, std::move(dims), seed);
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] *= scale;
  return std::make_shared<const HostTensor>(std::move(tensor));
}

std::shared_ptr<const HostTensor> Filled(Dims dims, float value) {
  HostTensor tensor(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.data<float>()[i] = value;
  return std::make_shared<const HostTensor>(std::move(tensor));
}

Node Constant(const std::string& output, float value) {
  return Node{output, "Constant", {}, {output}, {{"value_float", value}}};
}

// One node of each kind auto tells apart, on x [batch, 8]:
//   small  MatMul by weights near 0.3: outputs near 1, converted;
//   big    MatMul of small by weights near 1000: outputs in the thousands,
//          kept for its output;
//   shrink big times 1e-3: outputs near 1, kept for reading big;
//   biased x plus a bias holding 7e4: kept for the weight (and its output);
//   unbias biased times 1e-4: kept for reading biased;
//   p      Softmax of shrink: kept for its op;
//   y      p plus unbias: kept as autocast promotes, reading float32 values.
// In fp16 the 7e4 bias is infinite and so is y; auto keeps y finite.
Model RangesModel() {
  Model model;
  model.name = "ranges";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, kWidth}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kWidth}}};
  model.initializers["w_small"] = Weights({kWidth, kWidth}, 1, 0.3f);
  model.initializers["w_big"] = Weights({kWidth, kWidth}, 2, 1000.0f);
  HostTensor bias(DType::kFloat32, {kWidth});
  bias.data<float>()[3] = kHugeWeight;
  model.initializers["w_huge"] = std::make_shared<const HostTensor>(std::move(bias));
  model.nodes = {
      Node{"small", "MatMul", {"x", "w_small"}, {"small"}, {}},
      Node{"big", "MatMul", {"small", "w_big"}, {"big"}, {}},
      Constant("milli", 1e-3f),
      Node{"shrink", "Mul", {"big", "milli"}, {"shrink"}, {}},
      Node{"biased", "Add", {"x", "w_huge"}, {"biased"}, {}},
      Constant("tiny", 1e-4f),
      Node{"unbias", "Mul", {"biased", "tiny"}, {"unbias"}, {}},
      Node{"p", "Softmax", {"shrink"}, {"p"}, {{"axis", int64_t{-1}}}},
      Node{"y", "Add", {"p", "unbias"}, {"y"}, {}},
  };
  return model;
}

std::vector<HostTensor> RunOnHost(const Model& model, const std::vector<HostTensor>& inputs) {
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = inputs[0].dims()[0]});
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return {};
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run(inputs);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? *std::move(outputs) : std::vector<HostTensor>{};
}

// Node name -> reason.
std::map<std::string, std::string> Reasons(const std::vector<Float32Node>& nodes) {
  std::map<std::string, std::string> reasons;
  for (const Float32Node& node : nodes) reasons[node.name] = node.reason;
  return reasons;
}

TEST(ChooseFloat32NodesTest, KeepsNodesPastTheRangesAndTheListsOps) {
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(RangesModel());
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::map<std::string, std::string> reasons = Reasons(*kept);
  EXPECT_EQ(reasons.size(), 6u) << testing::PrintToString(reasons);
  EXPECT_THAT(reasons.at("big"), HasSubstr("output max |x| "));
  EXPECT_THAT(reasons.at("big"), HasSubstr(" > 512"));
  EXPECT_THAT(reasons.at("shrink"), HasSubstr("input 'big' max |x| "));
  EXPECT_THAT(reasons.at("biased"), HasSubstr("weight 'w_huge' max |w| 7.0e4 > 65504"));
  EXPECT_THAT(reasons.at("unbias"), HasSubstr("input 'biased' max |x| 7.0e4 > 512"));
  EXPECT_EQ(reasons.at("p"), "op Softmax kept in float32");
  EXPECT_EQ(reasons.at("y"), "reads float32 'p'");
  // Near 1 in and out, and lowered: float16 computes it.
  EXPECT_EQ(reasons.count("small"), 0u);
  // Constants take their readers' type: not judged, whatever their value.
  EXPECT_EQ(reasons.count("milli"), 0u);
  // In model order, with the op for reports.
  ASSERT_EQ(kept->front().name, "big");
  EXPECT_EQ(kept->front().op_type, "MatMul");
  EXPECT_EQ(kept->front().rule, Float32Rule::kValues);
  EXPECT_EQ(kept->back().rule, Float32Rule::kPromoted);
}

// The underflow rule: x times 1e-7 is all below float16's smallest normal,
// so the Mul that makes it and the MatMul that reads it stay float32; the
// MatMul's weights near 1e4 bring its output back near 1e-3, and the Relu
// after, reading the MatMul's float32 result, computes in float32 as
// autocast promotes. In fp16 the product is subnormal, steps of 6e-8 on
// values near 1e-7: the answer is far off.
TEST(ChooseFloat32NodesTest, KeepsValuesBelowFloat16sNormals) {
  Model model;
  model.name = "underflow";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, kWidth}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kWidth}}};
  model.initializers["w_grow"] = Weights({kWidth, kWidth}, 3, 1e4f);
  model.nodes = {
      Constant("micro", 1e-7f),
      Node{"shrink", "Mul", {"x", "micro"}, {"shrink"}, {}},
      Node{"grow", "MatMul", {"shrink", "w_grow"}, {"grow"}, {}},
      Node{"y", "Relu", {"grow"}, {"y"}, {}},
  };
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model);
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::map<std::string, std::string> reasons = Reasons(*kept);
  EXPECT_EQ(reasons.size(), 3u) << testing::PrintToString(reasons);
  EXPECT_THAT(reasons.at("shrink"), HasSubstr("output max |x| "));
  EXPECT_THAT(reasons.at("shrink"), HasSubstr(" < 6.1e-5"));
  EXPECT_THAT(reasons.at("grow"), HasSubstr("input 'shrink' max |x| "));
  EXPECT_EQ(reasons.at("y"), "reads float32 'grow'");

  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {4, kWidth}, 7)};
  const std::vector<HostTensor> want = RunOnHost(model, inputs);
  Model automatic = model;
  ASSERT_TRUE(ConvertPrecision(automatic, ModelPrecision::kAuto, NodeNames(*kept)).ok());
  Model fp16 = model;
  ASSERT_TRUE(ConvertPrecision(fp16, ModelPrecision::kFp16).ok());
  const std::vector<HostTensor> automatic_out = RunOnHost(automatic, inputs);
  const std::vector<HostTensor> fp16_out = RunOnHost(fp16, inputs);
  ASSERT_EQ(automatic_out.size(), 1u);
  ASSERT_EQ(fp16_out.size(), 1u);
  EXPECT_LT(RelativeError(automatic_out[0], want[0]), 2e-3);
  EXPECT_GT(RelativeError(fp16_out[0], want[0]), 1e-2);
}

TEST(ChooseFloat32NodesTest, TheConvertedModelRunsCloseToFloat32WhereFp16Overflows) {
  const Model original = RangesModel();
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(original);
  ASSERT_TRUE(kept.ok()) << kept.status();
  Model automatic = original;
  ASSERT_TRUE(ConvertPrecision(automatic, ModelPrecision::kAuto, NodeNames(*kept)).ok());

  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(automatic, {});
  ASSERT_TRUE(dtypes.ok()) << dtypes.status();
  EXPECT_EQ(dtypes->at("small"), DType::kFloat16);
  for (const char* kept_value : {"big", "shrink", "biased", "unbias", "p", "y"}) {
    EXPECT_EQ(dtypes->at(kept_value), DType::kFloat32) << kept_value;
  }
  EXPECT_EQ(automatic.initializers.at("w_small")->dtype(), DType::kFloat16);
  EXPECT_EQ(automatic.initializers.at("w_huge")->dtype(), DType::kFloat32);

  const std::vector<HostTensor> inputs = {RandomTensor(DType::kFloat32, {3, kWidth}, 42)};
  const std::vector<HostTensor> want = RunOnHost(original, inputs);
  const std::vector<HostTensor> got = RunOnHost(automatic, inputs);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(got[0].dtype(), DType::kFloat32);
  // float16 rounding of small, 11 significant bits.
  EXPECT_LT(RelativeError(got[0], want[0]), 1e-2);
  EXPECT_GT(RelativeError(got[0], want[0]), 0.0);  // it did compute in float16

  // The fixed list alone lets the 7e4 bias through, as infinity.
  Model fp16 = original;
  ASSERT_TRUE(ConvertPrecision(fp16, ModelPrecision::kFp16).ok());
  const std::vector<HostTensor> overflowed = RunOnHost(fp16, inputs);
  ASSERT_EQ(overflowed.size(), 1u);
  EXPECT_FALSE(RelativeError(overflowed[0], want[0]) < 1e-2);
}

// Nothing past a threshold: auto is fp16, node for node.
TEST(ChooseFloat32NodesTest, AModelInRangeKeepsOnlyTheListsOps) {
  Model model;
  model.name = "in_range";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, kWidth}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kWidth}}};
  model.initializers["w"] = Weights({kWidth, kWidth}, 3, 0.3f);
  model.initializers["gamma"] = Weights({kWidth}, 4, 1.0f);
  model.nodes = {
      Node{"mm", "MatMul", {"x", "w"}, {"mm"}, {}},
      Node{"ln", "LayerNormalization", {"mm", "gamma"}, {"ln", "mean"}, {{"axis", int64_t{-1}}}},
      Node{"y", "Tanh", {"ln"}, {"y"}, {}},
  };
  std::vector<std::string> observed;
  CalibrationOptions options;
  options.make_executor = [&](BoundGraph graph) {
    for (ValueId id : graph.outputs) observed.push_back(graph.value(id).name);
    return HostExecutorFactory()(std::move(graph));
  };
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model, options);
  ASSERT_TRUE(kept.ok()) << kept.status();
  // LayerNorm's Mean, which nothing reads, is not asked of the executors.
  EXPECT_EQ(observed, (std::vector<std::string>{"mm", "ln", "y"}));
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ(kept->front().name, "ln");
  EXPECT_EQ(kept->front().reason, "op LayerNormalization kept in float32");

  Model automatic = model;
  Model fp16 = model;
  ASSERT_TRUE(ConvertPrecision(automatic, ModelPrecision::kAuto, NodeNames(*kept)).ok());
  ASSERT_TRUE(ConvertPrecision(fp16, ModelPrecision::kFp16).ok());
  ASSERT_EQ(automatic.nodes.size(), fp16.nodes.size());
  for (size_t i = 0; i < fp16.nodes.size(); ++i) {
    EXPECT_EQ(automatic.nodes[i].name, fp16.nodes[i].name);
    EXPECT_EQ(automatic.nodes[i].inputs, fp16.nodes[i].inputs);
  }
}

// A Div by zero makes infinities from finite values: kept. An Add of a -inf
// mask only passes them on, and float16 carries infinities as float32
// does: not kept for its values, and the -inf bias is no weight past
// float16's range (it is a parameter, which autocast's promotion keeps).
TEST(ChooseFloat32NodesTest, KeepsNodesThatMakeInfinitiesNotThoseThatPassThemOn) {
  Model model;
  model.name = "non_finite";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, kWidth}}};
  model.outputs = {{"quotient", DType::kFloat32, {-1, kWidth}},
                   {"masked", DType::kFloat32, {-1, kWidth}}};
  model.initializers["zero"] = Filled({kWidth}, 0.0f);
  HostTensor mask(DType::kFloat32, {kWidth});
  mask.data<float>()[0] = -std::numeric_limits<float>::infinity();
  model.initializers["mask"] = std::make_shared<const HostTensor>(std::move(mask));
  model.nodes = {
      Node{"quotient", "Div", {"x", "zero"}, {"quotient"}, {}},
      Node{"masked", "Add", {"x", "mask"}, {"masked"}, {}},
  };
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 2u) << testing::PrintToString(Reasons(*kept));
  EXPECT_EQ(kept->front().name, "quotient");
  EXPECT_EQ(kept->front().reason, "output inf from finite inputs");
  EXPECT_EQ(kept->back().name, "masked");
  EXPECT_EQ(kept->back().reason, "reads float32 weight 'mask'");
}

// Hugging Face's attention mask, `(1 - mask) * finfo(float32).min` added to
// the scores: -3.4e38 stands for -inf (kFloat32InfinityStandIn), so neither
// the mask's Mul nor its Add is kept for its magnitude, and the Softmax
// between them and the context MatMul is no longer next to a float32 value.
// A genuinely large value (the scores times 1e3) is still kept.
TEST(ChooseFloat32NodesTest, TheAttentionMasksFloat32MinStandsForMinusInfinity) {
  Model model;
  model.name = "masked_attention";
  model.opset = kOpset;
  model.inputs = {{"scores", DType::kFloat32, {-1, kWidth}},
                  {"mask", DType::kFloat32, {-1, kWidth}}};
  model.outputs = {{"loud", DType::kFloat32, {-1, kWidth}},
                   {"context", DType::kFloat32, {-1, kWidth}}};
  model.initializers["w"] = Weights({kWidth, kWidth}, 3, 0.3f);
  model.nodes = {
      Constant("one", 1.0f),
      Node{"inverted", "Sub", {"one", "mask"}, {"inverted"}, {}},
      Constant("min", std::numeric_limits<float>::lowest()),
      Node{"bias", "Mul", {"inverted", "min"}, {"bias"}, {}},
      Node{"biased", "Add", {"scores", "bias"}, {"biased"}, {}},
      Node{"probs", "Softmax", {"biased"}, {"probs"}, {{"axis", int64_t{-1}}}},
      Node{"context", "MatMul", {"probs", "w"}, {"context"}, {}},
      Constant("thousand", 1e3f),
      Node{"loud", "Mul", {"scores", "thousand"}, {"loud"}, {}},
  };
  CalibrationOptions options;
  options.inputs = {RandomTensor(DType::kFloat32, {1, kWidth}, 5),
                    HostTensor(DType::kFloat32, {1, kWidth})};
  for (int i = 0; i < kWidth; ++i) options.inputs[1].data<float>()[i] = i < kWidth / 2 ? 1 : 0;
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model, options);
  ASSERT_TRUE(kept.ok()) << kept.status();
  std::set<std::string> names;
  for (const Float32Node& node : *kept) names.insert(node.name);
  EXPECT_EQ(names, (std::set<std::string>{"probs", "loud"}))
      << testing::PrintToString(Reasons(*kept));
  EXPECT_EQ(kept->front().reason, "op Softmax kept in float32");

  // Converted: the Softmax reads the float16 Add and feeds the float16
  // MatMul directly, as under fp16; only `loud` is named to stay float32.
  EXPECT_EQ(NodeNames(*kept), (std::set<std::string>{"loud"}));
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kAuto, NodeNames(*kept)).ok());
  for (const Node& node : model.nodes) {
    if (node.name == "probs") {
      EXPECT_EQ(node.inputs[0], "biased");
    } else if (node.name == "context") {
      EXPECT_EQ(node.inputs[0], "probs");
    }
  }
}

// Note [Autocast's promotion] on an embedding and one residual block:
//   emb       Gather of a table by token ids: promoted by the table;
//   pos       emb plus position embeddings: promoted (reads emb);
//   ln        LayerNorm of pos: float32, its input being float32;
//   q, k      MatMuls of ln: lowered, float16 whatever they read;
//   q_bias    q plus its bias: the GEMM's own bias, float16;
//   scores    q_bias times k transposed, scaled by a scalar: float16;
//   probs     Softmax between float16 GEMMs: float16, as under fp16;
//   context   probs times k: lowered;
//   residual  pos plus context: promoted (reads pos);
//   y         LayerNorm of residual: float32.
// The residual stream stays float32 and only the GEMMs' operands are
// rounded: closer to float32 than fp16, which rounds the stream too.
TEST(ChooseFloat32NodesTest, PromotesAsAutocastDoesKeepingTheResidualStreamInFloat32) {
  constexpr int64_t kTokens = 4;
  Model model;
  model.name = "promotion";
  model.opset = kOpset;
  model.inputs = {{"ids", DType::kInt64, {-1, kTokens}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kTokens, kWidth}}};
  model.initializers["table"] = Weights({8, kWidth}, 11, 1.0f);
  model.initializers["positions"] = Weights({kTokens, kWidth}, 12, 1.0f);
  model.initializers["wq"] = Weights({kWidth, kWidth}, 13, 0.3f);
  model.initializers["bq"] = Weights({kWidth}, 14, 0.1f);
  model.initializers["wk"] = Weights({kWidth, kWidth}, 15, 0.3f);
  model.initializers["gamma"] = Filled({kWidth}, 1.0f);
  model.nodes = {
      Node{"emb", "Gather", {"table", "ids"}, {"emb"}, {}},
      Node{"pos", "Add", {"emb", "positions"}, {"pos"}, {}},
      Node{"ln", "LayerNormalization", {"pos", "gamma"}, {"ln"}, {{"axis", int64_t{-1}}}},
      Node{"q", "MatMul", {"ln", "wq"}, {"q"}, {}},
      Node{"q_bias", "Add", {"q", "bq"}, {"q_bias"}, {}},
      Node{"k", "MatMul", {"ln", "wk"}, {"k"}, {}},
      Node{"kt", "Transpose", {"k"}, {"kt"}, {{"perm", std::vector<int64_t>{0, 2, 1}}}},
      Node{"dot", "MatMul", {"q_bias", "kt"}, {"dot"}, {}},
      Constant("scale", 0.35f),
      Node{"scores", "Mul", {"dot", "scale"}, {"scores"}, {}},
      Node{"probs", "Softmax", {"scores"}, {"probs"}, {{"axis", int64_t{-1}}}},
      Node{"context", "MatMul", {"probs", "k"}, {"context"}, {}},
      Node{"residual", "Add", {"pos", "context"}, {"residual"}, {}},
      Node{"y", "LayerNormalization", {"residual", "gamma"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model);
  ASSERT_TRUE(kept.ok()) << kept.status();
  const std::map<std::string, std::string> reasons = Reasons(*kept);
  EXPECT_EQ(reasons, (std::map<std::string, std::string>{
                         {"emb", "reads float32 weight 'table'"},
                         {"pos", "reads float32 'emb'"},
                         {"ln", "op LayerNormalization kept in float32"},
                         {"probs", "op Softmax kept in float32"},
                         {"residual", "reads float32 'pos'"},
                         {"y", "op LayerNormalization kept in float32"},
                     }));
  EXPECT_EQ(NodeNames(*kept), (std::set<std::string>{"emb", "pos", "residual"}));
  EXPECT_EQ(Float32NodesSummary(*kept),
            "precision auto keeps 6 nodes in float32: 3 for their op (as fp16), 3 as autocast "
            "promotes and 0 for their values on the calibration batch");

  Model automatic = model;
  ASSERT_TRUE(ConvertPrecision(automatic, ModelPrecision::kAuto, NodeNames(*kept)).ok());
  absl::StatusOr<std::map<std::string, DType>> dtypes = InferValueDTypes(automatic, {});
  ASSERT_TRUE(dtypes.ok()) << dtypes.status();
  for (const char* float32 : {"emb", "pos", "ln", "residual", "y"}) {
    EXPECT_EQ(dtypes->at(float32), DType::kFloat32) << float32;
  }
  for (const char* float16 : {"q", "q_bias", "scores", "probs", "context"}) {
    EXPECT_EQ(dtypes->at(float16), DType::kFloat16) << float16;
  }
  EXPECT_EQ(automatic.initializers.at("bq")->dtype(), DType::kFloat16);
  EXPECT_EQ(automatic.initializers.at("positions")->dtype(), DType::kFloat32);

  HostTensor ids(DType::kInt64, {3, kTokens});
  for (int64_t i = 0; i < ids.num_elements(); ++i) ids.data<int64_t>()[i] = (i * 5) % 8;
  const std::vector<HostTensor> want = RunOnHost(model, {ids});
  Model fp16 = model;
  ASSERT_TRUE(ConvertPrecision(fp16, ModelPrecision::kFp16).ok());
  const std::vector<HostTensor> automatic_out = RunOnHost(automatic, {ids});
  const std::vector<HostTensor> fp16_out = RunOnHost(fp16, {ids});
  ASSERT_EQ(automatic_out.size(), 1u);
  ASSERT_EQ(fp16_out.size(), 1u);
  const double automatic_error = RelativeError(automatic_out[0], want[0]);
  const double fp16_error = RelativeError(fp16_out[0], want[0]);
  EXPECT_GT(automatic_error, 0.0);  // the GEMMs did compute in float16
  EXPECT_LT(automatic_error, fp16_error);
}

// A shape dim takes the extent given (else kCalibrationExtent), and given
// inputs replace the drawn ones: x of 10 scaled by 100 is past 512, which
// standard normal draws would not reach.
TEST(ChooseFloat32NodesTest, TakesTheGivenInputsAndExtents) {
  Model model;
  model.name = "sequence";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, -1}, {"", "sequence"}}};
  model.outputs = {{"y", DType::kFloat32, {-1, -1}}};
  model.nodes = {Constant("hundred", 100.0f), Node{"y", "Mul", {"x", "hundred"}, {"y"}, {}}};

  absl::StatusOr<std::vector<Float32Node>> drawn = ChooseFloat32Nodes(model);
  ASSERT_TRUE(drawn.ok()) << drawn.status();
  EXPECT_TRUE(drawn->empty()) << testing::PrintToString(Reasons(*drawn));

  CalibrationOptions options;
  options.dim_values = {{"sequence", 3}};
  options.inputs = {HostTensor(DType::kFloat32, {1, 3})};
  for (int i = 0; i < 3; ++i) options.inputs[0].data<float>()[i] = 10.0f;
  absl::StatusOr<std::vector<Float32Node>> given = ChooseFloat32Nodes(model, options);
  ASSERT_TRUE(given.ok()) << given.status();
  ASSERT_EQ(given->size(), 1u);
  EXPECT_EQ(given->front().reason, "output max |x| 1.0e3 > 512");

  // The converted model binds at any extent.
  ASSERT_TRUE(ConvertPrecision(model, ModelPrecision::kAuto, NodeNames(*given)).ok());
  EXPECT_TRUE(BindModel(model, {.batch_size = 2, .dim_values = {{"sequence", 5}}}).ok());
}

// Token ids drawn 0 or 1 are rows of any table of two rows or more
// (Note [Automatic precision]); a table of one row is the run's error,
// naming the calibration batch.
TEST(ChooseFloat32NodesTest, DrawsTokenIdsEveryTableHolds) {
  Model model;
  model.name = "embedding";
  model.opset = kOpset;
  model.inputs = {{"ids", DType::kInt64, {-1, kWidth}}};
  model.outputs = {{"y", DType::kFloat32, {-1, kWidth, 4}}};
  model.initializers["table"] = Weights({2, 4}, 5, 1.0f);
  model.nodes = {Node{"y", "Gather", {"table", "ids"}, {"y"}, {}}};
  absl::StatusOr<std::vector<Float32Node>> kept = ChooseFloat32Nodes(model);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);  // an Embedding's float32 rows, as autocast's
  EXPECT_EQ(kept->front().reason, "reads float32 weight 'table'");

  model.initializers["table"] = Weights({1, 4}, 5, 1.0f);
  const absl::Status status = ChooseFloat32Nodes(model).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("calibration batch (batch 1): "));
  EXPECT_THAT(status.message(), HasSubstr("out of range"));
}

TEST(ChooseFloat32NodesTest, RunsOnTheGivenExecutorsOnce) {
  int graphs = 0;
  size_t outputs = 0;
  CalibrationOptions options;
  options.make_executor = [&](BoundGraph graph) {
    ++graphs;
    outputs = graph.outputs.size();
    return HostExecutorFactory()(std::move(graph));
  };
  ASSERT_TRUE(ChooseFloat32Nodes(RangesModel(), options).ok());
  EXPECT_EQ(graphs, 1);
  // Every float32 node output observed: the seven nodes and two Constants.
  EXPECT_EQ(outputs, 9u);
}

}  // namespace
}  // namespace graphserve
