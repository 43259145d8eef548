#include "runtime/passes/input_defaults.h"

#include <memory>

#include "common/tensor.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// Triton's qa/L0_initializer_as_input model: OUTPUT = INPUT + INITIALIZER,
// INITIALIZER an input with a default.
Model AddWithDefault() {
  Model model;
  model.name = "add_with_initializer";
  model.opset = 13;
  model.inputs = {{"INPUT", DType::kFloat32, {5, 5}}, {"INITIALIZER", DType::kFloat32, {5, 5}}};
  model.inputs[1].default_value =
      std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, {5, 5}, 31));
  model.outputs = {{"OUTPUT", DType::kFloat32, {5, 5}}};
  model.nodes = {Node{"add", "Add", {"INPUT", "INITIALIZER"}, {"OUTPUT"}, {}}};
  return model;
}

// Undeclared, it is the weight it was: the same tensor, no longer an input.
TEST(FoldInputDefaultsTest, AnUndeclaredInputBecomesItsDefault) {
  Model model = AddWithDefault();
  const std::shared_ptr<const HostTensor> value = model.inputs[1].default_value;
  FoldInputDefaults(model, {"INPUT"});
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].name, "INPUT");
  ASSERT_EQ(model.initializers.count("INITIALIZER"), 1u);
  EXPECT_EQ(model.initializers.at("INITIALIZER"), value);
}

// Declared, it stays an input with its default, and plain inputs stay
// whether declared or not (a config that leaves one out is refused later,
// naming it).
TEST(FoldInputDefaultsTest, ADeclaredInputStaysAnInputWithItsDefault) {
  Model model = AddWithDefault();
  FoldInputDefaults(model, {"INITIALIZER"});
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].name, "INPUT");
  EXPECT_EQ(model.inputs[1].name, "INITIALIZER");
  EXPECT_NE(model.inputs[1].default_value, nullptr);
  EXPECT_TRUE(model.initializers.empty());
}

}  // namespace
}  // namespace graphserve
