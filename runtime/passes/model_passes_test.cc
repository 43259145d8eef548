#include "runtime/passes/model_passes.h"

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// `model`'s outputs on the host at batch 2 for input `x`; empty (with the
// failure recorded) where it does not bind or run.
std::vector<HostTensor> RunOnHost(const Model& model, const HostTensor& x) {
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = 2});
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return {};
  absl::StatusOr<std::vector<HostTensor>> run = (*executor)->Run({x});
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *std::move(run) : std::vector<HostTensor>{};
}

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

// The passes in their order: BatchNorm folds into the Conv in float32, then
// the precision pass rounds the folded weights once; a small CNN (Conv,
// BatchNorm, Relu, global pool, Gemm, Softmax) then runs on the host in
// float16 with float32 in and out, close to its float32 run.
TEST(ModelPassesTest, FoldsThenConvertsToTheModelsPrecision) {
  Model model;
  model.name = "cnn";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 3, 6, 6}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 5}}};
  auto random = [](Dims dims, uint64_t seed, float scale, float shift) {
    HostTensor t = RandomTensor(DType::kFloat32, std::move(dims), seed);
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      t.data<float>()[i] = t.data<float>()[i] * scale + shift;
    }
    return std::make_shared<const HostTensor>(std::move(t));
  };
  model.initializers["w"] = random({4, 3, 3, 3}, 1, 0.3f, 0.0f);
  model.initializers["gamma"] = random({4}, 2, 0.1f, 1.0f);
  model.initializers["beta"] = random({4}, 3, 0.1f, 0.0f);
  model.initializers["mean"] = random({4}, 4, 0.1f, 0.0f);
  model.initializers["var"] = random({4}, 5, 0.1f, 1.0f);
  model.initializers["fc"] = random({4, 5}, 6, 0.5f, 0.0f);
  model.initializers["fc_bias"] = random({5}, 7, 0.1f, 0.0f);
  model.nodes = {
      Node{"conv", "Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      Node{"bn", "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"b"}, {}},
      Node{"relu", "Relu", {"b"}, {"r"}, {}},
      Node{"pool", "GlobalAveragePool", {"r"}, {"p"}, {}},
      Node{"flat", "Flatten", {"p"}, {"f"}, {}},
      Node{"fc", "Gemm", {"f", "fc", "fc_bias"}, {"logits"}, {}},
      Node{"softmax", "Softmax", {"logits"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  Model exact = model;
  ASSERT_TRUE(RunModelPasses(exact).ok());
  ModelPassOptions options;
  options.precision = ModelPrecision::kFp16;
  ASSERT_TRUE(RunModelPasses(model, options).ok());

  const Node& conv = model.nodes[1];  // after x's Cast
  ASSERT_EQ(conv.op_type, "Conv");
  EXPECT_EQ(conv.inputs[1], "bn/folded_weights");
  EXPECT_EQ(model.initializers.at("bn/folded_weights")->dtype(), DType::kFloat16);
  EXPECT_EQ(model.initializers.at("bn/folded_bias")->dtype(), DType::kFloat16);

  const HostTensor x = RandomTensor(DType::kFloat32, {2, 3, 6, 6}, 9);
  const std::vector<HostTensor> outputs[2] = {RunOnHost(exact, x), RunOnHost(model, x)};
  ASSERT_FALSE(outputs[0].empty());
  ASSERT_FALSE(outputs[1].empty());
  ASSERT_EQ(outputs[1][0].dtype(), DType::kFloat32);
  const double error = RelativeError(outputs[1][0], outputs[0][0]);
  EXPECT_LT(error, 1e-2);
  EXPECT_GT(error, 0.0);  // it did run in float16
}

// auto calibrates the folded model (no "bn" left to judge) and reports what
// it keeps: a Conv whose outputs reach the thousands, the nodes that read
// them or their pooled hundreds, the Softmax for its op; the model then runs
// close to float32.
TEST(ModelPassesTest, AutoCalibratesTheFoldedModelAndReportsWhatItKeeps) {
  Model model;
  model.name = "loud_cnn";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 3, 6, 6}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 5}}};
  HostTensor w = RandomTensor(DType::kFloat32, {4, 3, 3, 3}, 1);
  // Weights near 300: 27 products of standard normal inputs sum to
  // thousands, past auto's 512.
  for (int64_t i = 0; i < w.num_elements(); ++i) w.data<float>()[i] *= 300.0f;
  model.initializers["w"] = std::make_shared<const HostTensor>(std::move(w));
  for (const char* name : {"gamma", "var"}) model.initializers[name] = Filled({4}, 1.0f);
  for (const char* name : {"beta", "mean"}) model.initializers[name] = Filled({4}, 0.0f);
  // 1e-3 brings the pooled thousands back near 1 for the Softmax.
  model.initializers["fc"] = Filled({4, 5}, 1e-3f);
  model.nodes = {
      Node{"conv", "Conv", {"x", "w"}, {"c"}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      Node{"bn", "BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"b"}, {}},
      Node{"relu", "Relu", {"b"}, {"r"}, {}},
      Node{"pool", "GlobalAveragePool", {"r"}, {"p"}, {}},
      Node{"flat", "Flatten", {"p"}, {"f"}, {}},
      Node{"fc", "MatMul", {"f", "fc"}, {"logits"}, {}},
      Node{"softmax", "Softmax", {"logits"}, {"y"}, {{"axis", int64_t{-1}}}},
  };
  Model exact = model;
  ASSERT_TRUE(RunModelPasses(exact).ok());
  std::vector<Float32Node> kept;
  ModelPassOptions options;
  options.precision = ModelPrecision::kAuto;
  options.float32_nodes = &kept;
  const absl::Status status = RunModelPasses(model, options);
  ASSERT_TRUE(status.ok()) << status;

  std::map<std::string, std::string> reasons;
  for (const Float32Node& node : kept) reasons[node.name] = node.reason;
  std::set<std::string> names;
  for (const auto& [name, reason] : reasons) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"conv", "relu", "pool", "flat", "fc", "softmax"}))
      << testing::PrintToString(reasons);
  ASSERT_EQ(reasons.count("conv"), 1u);
  EXPECT_NE(reasons.at("conv").find("output max |x| "), std::string::npos) << reasons.at("conv");
  EXPECT_EQ(reasons.at("softmax"), "op Softmax kept in float32");
  EXPECT_EQ(model.initializers.at("fc")->dtype(), DType::kFloat32);  // fc reads thousands

  const HostTensor x = RandomTensor(DType::kFloat32, {2, 3, 6, 6}, 9);
  const std::vector<HostTensor> outputs[2] = {RunOnHost(exact, x), RunOnHost(model, x)};
  ASSERT_FALSE(outputs[0].empty());
  ASSERT_FALSE(outputs[1].empty());
  EXPECT_LT(RelativeError(outputs[1][0], outputs[0][0]), 1e-2);
}

// A calibration batch that cannot run fails the passes naming precision
// auto and the batch.
TEST(ModelPassesTest, AutoNamesTheCalibrationBatchInItsErrors) {
  Model model;
  model.name = "embedding";
  model.opset = 17;
  model.inputs = {{"ids", DType::kInt64, {-1, 8}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 8, 4}}};
  model.initializers["table"] = Filled({1, 4}, 1.0f);  // one row: id 1 is out of range
  model.nodes = {Node{"y", "Gather", {"table", "ids"}, {"y"}, {}}};
  ModelPassOptions options;
  options.precision = ModelPrecision::kAuto;
  const absl::Status status = RunModelPasses(model, options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("precision auto: calibration batch (batch 1): "),
            std::string::npos)
      << status;
}

}  // namespace
}  // namespace graphserve
