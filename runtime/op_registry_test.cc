#include "runtime/op_registry.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(OpRegistryTest, EveryOpIsComplete) {
  ASSERT_FALSE(AllOps().empty());
  for (const OpDef& op : AllOps()) {
    SCOPED_TRACE(op.name);
    EXPECT_NE(op.bind, nullptr);
    EXPECT_FALSE(op.family.empty());
    EXPECT_FALSE(op.summary.empty());
    EXPECT_FALSE(op.arity.empty());
    EXPECT_EQ(op.arity.front().since_opset, 1);
    EXPECT_EQ(FindOp(op.name), &op);
  }
  EXPECT_EQ(FindOp("NoSuchOp"), nullptr);
  EXPECT_TRUE(IsSupportedOp("Gemm"));
  EXPECT_FALSE(IsSupportedOp("gemm"));  // op types are case-sensitive
}

TEST(OpRegistryTest, ArityFollowsTheOpset) {
  const OpDef* unsqueeze = FindOp("Unsqueeze");
  ASSERT_NE(unsqueeze, nullptr);
  EXPECT_EQ(unsqueeze->ArityAt(11).max, 1u);  // axes an attribute
  EXPECT_EQ(unsqueeze->ArityAt(13).min, 2u);  // axes an input
  EXPECT_TRUE(unsqueeze->IsShapeOperand(1));
  EXPECT_FALSE(unsqueeze->IsShapeOperand(0));
}

// The README's op table is generated from the registry; this keeps the two
// from drifting (regenerate with //runtime:print_op_table).
TEST(OpRegistryTest, ReadmeTableMatchesTheRegistry) {
  std::ifstream file("README.md");
  ASSERT_TRUE(file) << "README.md not found in the test's runfiles";
  std::stringstream readme;
  readme << file.rdbuf();
  EXPECT_NE(readme.str().find(OpTableMarkdown()), std::string::npos)
      << "README.md's op table is stale; replace it with the output of\n"
      << "  bazel run //runtime:print_op_table\n"
      << OpTableMarkdown();
}

}  // namespace
}  // namespace graphserve
