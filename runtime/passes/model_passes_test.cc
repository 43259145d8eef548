#include "runtime/passes/model_passes.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

std::shared_ptr<const HostTensor> Filled(Dims dims, float value) {
  HostTensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = value;
  return std::make_shared<const HostTensor>(std::move(t));
}

// Import runs RunModelPasses, so whatever it leaves is what every batch size
// binds: a Conv + BatchNorm pair must come out as one Conv.
TEST(ModelPassesTest, FoldsBatchNormIntoTheConvBeforeIt) {
  Model model;
  model.name = "conv_bn";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 2, 5, 5}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 3, 5, 5}}};
  model.initializers["w"] = Filled({3, 2, 1, 1}, 1.0f);
  for (const char* name : {"gamma", "beta", "mean", "var"}) {
    model.initializers[name] = Filled({3}, 1.0f);
  }
  model.nodes = {Node{"conv", "Conv", {"x", "w"}, {"c"}, {}},
                 Node{"bn", "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"}, {}}};
  ASSERT_TRUE(RunModelPasses(model).ok());
  ASSERT_EQ(model.nodes.size(), 1u);
  EXPECT_EQ(model.nodes[0].op_type, "Conv");
  EXPECT_EQ(model.nodes[0].outputs[0], "y");
  // gamma / sqrt(var + 1e-5) with every statistic 1: the weights scale by
  // just under 1, and the bias is beta - mean * scale.
  const HostTensor& folded = *model.initializers.at(model.nodes[0].inputs[1]);
  EXPECT_NEAR(folded.data<float>()[0], 1.0 / std::sqrt(1.0 + 1e-5), 1e-7);
  const HostTensor& bias = *model.initializers.at(model.nodes[0].inputs[2]);
  EXPECT_NEAR(bias.data<float>()[0], 1.0 - 1.0 / std::sqrt(1.0 + 1e-5), 1e-7);
}

}  // namespace
}  // namespace graphserve
