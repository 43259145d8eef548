// The attention family's bind rules: RotaryEmbedding's canonical form (Note
// [Rotary embedding] in runtime/host/attention_kernels.h) and Attention's
// lowering into primitive ops (Note [Attention lowering] in
// runtime/ops/attention.cc), with their refusals.

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{std::move(name), std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

absl::StatusOr<BoundGraph> Bind(const Model& model) { return BindModel(model, BindOptions{}); }

// x, cos, sin[, ids] as model inputs -> RotaryEmbedding -> y.
Model RotaryModel(Dims x, Dims cache, bool ids, Attributes attributes) {
  Model model;
  model.name = "rotary";
  model.opset = 23;
  model.inputs = {{"x", DType::kFloat16, x}, {"cos", DType::kFloat16, cache},
                  {"sin", DType::kFloat16, cache}};
  std::vector<std::string> inputs = {"x", "cos", "sin"};
  if (ids) {
    model.inputs.push_back({"ids", DType::kInt64, {x[0], x.size() == 4 ? x[2] : x[1]}});
    inputs.push_back("ids");
  }
  model.outputs = {{"y", DType::kFloat16, {}}};
  model.nodes = {MakeNode("rope", "RotaryEmbedding", inputs, {"y"}, std::move(attributes))};
  return model;
}

TEST(AttentionBindTest, RotaryEmbeddingLayouts) {
  const struct {
    Dims x;
    Dims cache;
    bool ids;
    Attributes attributes;
    int64_t heads, head_size, rotary_dim, heads_outer;
  } cases[] = {
      {{2, 4, 3, 8}, {50, 4}, true, {}, 4, 8, 8, 1},
      {{2, 3, 32}, {50, 4}, true, {{"num_heads", int64_t{4}}}, 4, 8, 8, 0},
      {{2, 4, 3, 8}, {2, 3, 2}, false, {{"rotary_embedding_dim", int64_t{4}}}, 4, 8, 4, 1},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph = Bind(RotaryModel(c.x, c.cache, c.ids, c.attributes));
    ASSERT_TRUE(graph.ok()) << DimsToString(c.x) << ": " << graph.status();
    ASSERT_EQ(graph->nodes.size(), 1u);
    const BoundNode& node = graph->nodes[0];
    EXPECT_EQ(node.inputs.size(), c.ids ? 4u : 3u);
    EXPECT_EQ(IntAttr(node.attributes, "batch"), 2);
    EXPECT_EQ(IntAttr(node.attributes, "seq"), 3);
    EXPECT_EQ(IntAttr(node.attributes, "heads"), c.heads);
    EXPECT_EQ(IntAttr(node.attributes, "head_size"), c.head_size);
    EXPECT_EQ(IntAttr(node.attributes, "rotary_dim"), c.rotary_dim);
    EXPECT_EQ(IntAttr(node.attributes, "heads_outer"), c.heads_outer);
    EXPECT_EQ(IntAttr(node.attributes, "interleaved"), 0);
    EXPECT_EQ(graph->value(graph->outputs[0]).dims, c.x);
  }
}

TEST(AttentionBindTest, RotaryEmbeddingRefusals) {
  const struct {
    Dims x;
    Dims cache;
    bool ids;
    Attributes attributes;
    const char* message;
  } cases[] = {
      {{2, 3, 32}, {50, 4}, true, {}, "needs num_heads"},
      {{2, 4, 3, 8}, {50, 4}, true, {{"rotary_embedding_dim", int64_t{5}}}, "should be even"},
      {{2, 4, 3, 8}, {50, 3}, true, {}, "[max_position,4]"},
      {{2, 4, 3, 8}, {50, 4}, false, {}, "without position_ids"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph = Bind(RotaryModel(c.x, c.cache, c.ids, c.attributes));
    ASSERT_FALSE(graph.ok()) << c.message;
    EXPECT_THAT(graph.status().message(), HasSubstr("'rope'"));
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

// Q, K, V (and attn_mask when `mask_dtype` is given) as model inputs ->
// Attention -> outputs `outputs` (Y first; "" skips one).
Model AttentionModel(Dims q, Dims k, Dims v, Attributes attributes,
                     std::optional<DType> mask_dtype = std::nullopt, Dims mask = {},
                     std::vector<std::string> outputs = {"y"}, int64_t opset = 23) {
  Model model;
  model.name = "attention";
  model.opset = opset;
  model.inputs = {{"q", DType::kFloat32, q}, {"k", DType::kFloat32, k},
                  {"v", DType::kFloat32, v}};
  std::vector<std::string> inputs = {"q", "k", "v"};
  if (mask_dtype) {
    model.inputs.push_back({"mask", *mask_dtype, mask});
    inputs.push_back("mask");
  }
  for (const std::string& output : outputs) {
    if (!output.empty()) model.outputs.push_back({output, DType::kFloat32, {}});
  }
  model.nodes = {MakeNode("attn", "Attention", inputs, outputs, std::move(attributes))};
  return model;
}

std::vector<std::string> OpTypes(const BoundGraph& graph) {
  std::vector<std::string> ops;
  for (const BoundNode& node : graph.nodes) ops.push_back(node.op_type);
  return ops;
}

const BoundNode* FindNode(const BoundGraph& graph, const std::string& name) {
  for (const BoundNode& node : graph.nodes) {
    if (node.name == name) return &node;
  }
  return nullptr;
}

// Note [Attention lowering]: 4-D multi-head attention without a mask is
// the two MatMuls around a Softmax, K transposed, Q and K scaled by
// sqrt(scale); no bias, no row guard.
TEST(AttentionBindTest, FourDimensionalIsMatMulSoftmaxMatMul) {
  absl::StatusOr<BoundGraph> graph =
      Bind(AttentionModel({2, 3, 4, 8}, {2, 3, 6, 8}, {2, 3, 6, 10}, {}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_THAT(OpTypes(*graph), ElementsAre("Mul", "Mul", "Transpose", "MatMul", "Softmax",
                                           "MatMul", "Identity"));
  const BoundNode* softmax = FindNode(*graph, "attn/softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(IntAttr(softmax->attributes, "outer"), 2 * 3 * 4);
  EXPECT_EQ(IntAttr(softmax->attributes, "axis_size"), 6);
  const BoundNode* q_scaled = FindNode(*graph, "attn/q_scaled");
  ASSERT_NE(q_scaled, nullptr);
  const BoundValue& root_scale = graph->value(q_scaled->inputs[1]);
  ASSERT_TRUE(root_scale.is_constant());
  EXPECT_FLOAT_EQ(root_scale.constant->data<float>()[0], std::sqrt(1.0f / std::sqrt(8.0f)));
  EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 3, 4, 10));
}

// 3-D GQA: 4 query heads over 2 KV heads multiply K as it is, with Q viewed
// as [B, 2, 2 * Sq, D]; K's reshape and two transposes are one Transpose.
TEST(AttentionBindTest, ThreeDimensionalGroupedQueryViewsQInsteadOfRepeatingK) {
  absl::StatusOr<BoundGraph> graph =
      Bind(AttentionModel({2, 5, 4 * 8}, {2, 7, 2 * 8}, {2, 7, 2 * 6},
                          {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  const BoundNode* k = FindNode(*graph, "attn/k_transposed");
  ASSERT_NE(k, nullptr);
  EXPECT_THAT(IntsAttr(k->attributes, "perm"), ElementsAre(0, 2, 3, 1));
  EXPECT_THAT(graph->value(k->outputs[0]).dims, ElementsAre(2, 2, 8, 7));
  const BoundNode* qk = FindNode(*graph, "attn/qk");
  ASSERT_NE(qk, nullptr);
  EXPECT_THAT(graph->value(qk->inputs[0]).dims, ElementsAre(2, 2, 2 * 5, 8));
  EXPECT_THAT(graph->value(qk->outputs[0]).dims, ElementsAre(2, 2, 2 * 5, 7));
  EXPECT_THAT(graph->value(graph->outputs[0]).dims, ElementsAre(2, 5, 4 * 6));
  EXPECT_EQ(graph->nodes.back().op_type, "Reshape");
}

// A causal bias is a folded constant; with Sq <= Skv no row is fully masked,
// so no guard. A boolean mask known at run time becomes Where(mask, 0, -inf)
// and brings the guard that zeroes fully masked rows.
TEST(AttentionBindTest, BiasAndFullyMaskedRowGuard) {
  absl::StatusOr<BoundGraph> causal = Bind(AttentionModel(
      {1, 2, 4, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}, {{"is_causal", int64_t{1}}}));
  ASSERT_TRUE(causal.ok()) << causal.status();
  const BoundNode* biased = FindNode(*causal, "attn/biased");
  ASSERT_NE(biased, nullptr);
  const BoundValue& bias = causal->value(biased->inputs[1]);
  ASSERT_TRUE(bias.is_constant());
  EXPECT_THAT(bias.dims, ElementsAre(4, 6));
  EXPECT_EQ(bias.constant->data<float>()[0 * 6 + 0], 0.0f);
  EXPECT_EQ(bias.constant->data<float>()[0 * 6 + 1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(bias.constant->data<float>()[3 * 6 + 3], 0.0f);
  EXPECT_EQ(FindNode(*causal, "attn/masked_rows_zero"), nullptr);

  absl::StatusOr<BoundGraph> masked = Bind(
      AttentionModel({1, 2, 4, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}, {}, DType::kBool, {4, 6}));
  ASSERT_TRUE(masked.ok()) << masked.status();
  const BoundNode* mask_bias = FindNode(*masked, "attn/mask_bias");
  ASSERT_NE(mask_bias, nullptr);
  EXPECT_EQ(mask_bias->op_type, "Where");
  const BoundNode* guard = FindNode(*masked, "attn/masked_rows_zero");
  ASSERT_NE(guard, nullptr);
  EXPECT_EQ(guard->op_type, "Where");
  EXPECT_EQ(masked->value(guard->inputs[0]).dtype, DType::kBool);
}

// The guard's values: Q, K zero, V [1, 2] and [3, 4]; query row 0 sees both
// keys (scores equal: the mean of V), row 1 none (0, not NaN).
TEST(AttentionBindTest, FullyMaskedRowIsZeroOnTheHost) {
  absl::StatusOr<BoundGraph> graph = Bind(
      AttentionModel({1, 1, 2, 2}, {1, 1, 2, 2}, {1, 1, 2, 2}, {}, DType::kBool, {2, 2}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  ASSERT_TRUE(executor.ok()) << executor.status();
  HostTensor zeros(DType::kFloat32, {1, 1, 2, 2});
  HostTensor v(DType::kFloat32, {1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) {
    zeros.data<float>()[i] = 0.0f;
    v.data<float>()[i] = static_cast<float>(i + 1);
  }
  HostTensor mask(DType::kBool, {2, 2});
  const bool mask_values[] = {true, true, false, false};
  for (int i = 0; i < 4; ++i) mask.data<bool>()[i] = mask_values[i];
  absl::StatusOr<std::vector<HostTensor>> outputs = (*executor)->Run({zeros, zeros, v, mask});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const float* y = (*outputs)[0].data<float>();
  EXPECT_FLOAT_EQ(y[0], 2.0f);
  EXPECT_FLOAT_EQ(y[1], 3.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
}

// qk_matmul_output is an Identity of the intermediate its mode names.
TEST(AttentionBindTest, QkMatmulOutputByMode) {
  const char* const sources[] = {"attn/qk", "attn/softcap_mul", "attn/biased",
                                 "attn/masked_rows_zero"};
  for (int64_t mode = 0; mode < 4; ++mode) {
    absl::StatusOr<BoundGraph> graph = Bind(AttentionModel(
        {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4},
        {{"qk_matmul_output_mode", mode}, {"softcap", 2.0f}}, DType::kBool, {3, 3},
        {"y", "", "", "qk"}));
    ASSERT_TRUE(graph.ok()) << "mode " << mode << ": " << graph.status();
    const BoundNode* identity = FindNode(*graph, "attn/3");
    ASSERT_NE(identity, nullptr) << "mode " << mode;
    EXPECT_EQ(identity->op_type, "Identity");
    const BoundNode* source = FindNode(*graph, sources[mode]);
    ASSERT_NE(source, nullptr) << sources[mode];
    EXPECT_EQ(identity->inputs[0], source->outputs[0]) << "mode " << mode;
    EXPECT_THAT(graph->value(identity->outputs[0]).dims, ElementsAre(1, 2, 3, 3));
  }
}

TEST(AttentionBindTest, Refusals) {
  const Dims q = {1, 2, 3, 4};
  const struct {
    Model model;
    absl::StatusCode code;
    const char* message;
  } cases[] = {
      {AttentionModel(q, q, q, {}, DType::kInt64, {3, 3}), absl::StatusCode::kUnimplemented,
       "attn_mask of type int64"},
      {AttentionModel(q, q, q, {}, DType::kFloat32, {3, 2}), absl::StatusCode::kUnimplemented,
       "shorter than the 3 keys"},
      {AttentionModel(q, q, q, {{"softmax_precision", int64_t{10}}}),
       absl::StatusCode::kUnimplemented, "softmax_precision 10: only Q's type (float32)"},
      {AttentionModel(q, q, q, {}, std::nullopt, {}, {"y", "present_key"}),
       absl::StatusCode::kUnimplemented, "output 1 'present_key'"},
      {AttentionModel({1, 3, 8}, {1, 3, 8}, {1, 3, 8}, {}), absl::StatusCode::kInvalidArgument,
       "need q_num_heads and kv_num_heads"},
      {AttentionModel({1, 3, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, {}),
       absl::StatusCode::kInvalidArgument, "2 KV heads should divide the 3 query heads"},
      {AttentionModel(q, q, q, {{"qk_matmul_output_mode", int64_t{4}}}),
       absl::StatusCode::kInvalidArgument, "qk_matmul_output_mode"},
      // A causal bias of 2^15 x 2^15 positions, 8 GiB in double on the host.
      {AttentionModel({1, 2, 1 << 15, 4}, {1, 2, 1 << 15, 4}, {1, 2, 1 << 15, 4},
                      {{"is_causal", int64_t{1}}}),
       absl::StatusCode::kInvalidArgument, "past binding's bound"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<BoundGraph> graph = Bind(c.model);
    ASSERT_FALSE(graph.ok()) << c.message;
    EXPECT_EQ(graph.status().code(), c.code) << graph.status();
    EXPECT_THAT(graph.status().message(), HasSubstr("'attn'"));
    EXPECT_THAT(graph.status().message(), HasSubstr(c.message));
  }
}

// past_key after an omitted attn_mask reaches the rule (every input from
// attn_mask on may be omitted) and is refused naming it.
TEST(AttentionBindTest, KvCacheInputsAreUnimplementedByName) {
  Model model = AttentionModel({1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, {});
  model.inputs.push_back({"past", DType::kFloat32, {1, 2, 5, 4}});
  model.nodes[0].inputs = {"q", "k", "v", "", "past", "past"};
  absl::StatusOr<BoundGraph> graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented) << graph.status();
  EXPECT_THAT(graph.status().message(), HasSubstr("input 4 'past_key'"));

  model.opset = 24;
  model.inputs.push_back({"lengths", DType::kInt64, {1}});
  model.nodes[0].inputs = {"q", "k", "v", "", "", "", "lengths"};
  graph = Bind(model);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), absl::StatusCode::kUnimplemented) << graph.status();
  EXPECT_THAT(graph.status().message(), HasSubstr("input 6 'nonpad_kv_seqlen'"));
}

}  // namespace
}  // namespace graphserve
