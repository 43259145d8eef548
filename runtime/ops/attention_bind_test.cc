// The attention family's bind rules: RotaryEmbedding's canonical form (Note
// [Rotary embedding] in runtime/host/attention_kernels.h) and Attention's
// lowering into primitive ops (Note [Attention lowering] in
// runtime/ops/attention.cc), with their refusals.

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

}  // namespace
}  // namespace graphserve
