#include "runtime/passes/fold_batch_norms.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/tensor.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"

namespace graphserve {
namespace {

constexpr int64_t kOpset = 17;  // what PyTorch 2.x's TorchScript exporter writes

Node MakeNode(std::string name, std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs, Attributes attributes = {}) {
  return Node{std::move(name), std::move(op_type), std::move(inputs), std::move(outputs),
              std::move(attributes)};
}

std::shared_ptr<const HostTensor> Random(Dims dims, uint64_t seed) {
  return std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, std::move(dims), seed));
}

// Positive values, as BatchNorm's variance must be.
std::shared_ptr<const HostTensor> Positive(Dims dims, uint64_t seed) {
  HostTensor t = RandomTensor(DType::kFloat32, std::move(dims), seed);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<float>()[i] = 0.5f + std::fabs(t.data<float>()[i]);
  return std::make_shared<const HostTensor>(std::move(t));
}

// x [-1, 3, 9, 9] -> Conv(4 out channels, 3x3, bias) -> c -> BatchNorm -> y.
Model ConvBatchNormModel(bool conv_output_also_returned) {
  Model model;
  model.name = "conv_bn";
  model.opset = kOpset;
  model.inputs = {{"x", DType::kFloat32, {-1, 3, 9, 9}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 4, 7, 7}}};
  model.initializers["w"] = Random({4, 3, 3, 3}, 1);
  model.initializers["b"] = Random({4}, 2);
  model.initializers["gamma"] = Random({4}, 3);
  model.initializers["beta"] = Random({4}, 4);
  model.initializers["mean"] = Random({4}, 5);
  model.initializers["var"] = Positive({4}, 6);
  model.nodes = {MakeNode("conv", "Conv", {"x", "w", "b"}, {"c"}),
                 MakeNode("bn", "BatchNormalization", {"c", "gamma", "beta", "mean", "var"},
                          {"y"}, {{"epsilon", 1e-3f}})};
  if (conv_output_also_returned) model.outputs.push_back({"c", DType::kFloat32, {-1, 4, 7, 7}});
  return model;
}

HostTensor RunHost(const Model& model, const HostTensor& x) {
  BindOptions options;
  options.batch_size = x.dims()[0];
  absl::StatusOr<BoundGraph> graph = BindModel(model, options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> executor = HostExecutor::Create(*graph);
  EXPECT_TRUE(executor.ok()) << executor.status();
  absl::StatusOr<std::vector<HostTensor>> out = (*executor)->Run({x});
  EXPECT_TRUE(out.ok()) << out.status();
  return (*out)[0];
}

TEST(FoldBatchNormsTest, BatchNormFoldsIntoTheConvAndComputesTheSame) {
  const Model unfolded = ConvBatchNormModel(false);
  Model folded = unfolded;
  FoldBatchNormsIntoConvs(folded);
  ASSERT_EQ(folded.nodes.size(), 1u);
  EXPECT_EQ(folded.nodes[0].op_type, "Conv");
  EXPECT_EQ(folded.nodes[0].outputs[0], "y");
  EXPECT_EQ(folded.nodes[0].inputs[1], "bn/folded_weights");
  EXPECT_EQ(folded.nodes[0].inputs[2], "bn/folded_bias");
  EXPECT_EQ(folded.initializers.count("w"), 1u) << "another node may still read the original";

  const HostTensor x = RandomTensor(DType::kFloat32, {3, 3, 9, 9}, 7);
  const HostTensor want = RunHost(unfolded, x);  // BatchNorm as a per-channel affine
  const HostTensor got = RunHost(folded, x);
  EXPECT_LT(RelativeError(got, want), 1e-6);
}

TEST(FoldBatchNormsTest, BatchNormIsNotFoldedWhenTheConvOutputHasOtherReaders) {
  Model model = ConvBatchNormModel(true);
  FoldBatchNormsIntoConvs(model);
  EXPECT_EQ(model.nodes.size(), 2u);
}

TEST(FoldBatchNormsTest, BatchNormWithStatisticsKnownOnlyAtRunTimeStays) {
  Model model = ConvBatchNormModel(false);
  model.initializers.erase("mean");
  model.inputs.push_back({"mean", DType::kFloat32, {4}});
  FoldBatchNormsIntoConvs(model);
  ASSERT_EQ(model.nodes.size(), 2u);
  EXPECT_EQ(model.nodes[1].op_type, "BatchNormalization");
  EXPECT_EQ(model.nodes[0].inputs[1], "w");
}

// A model exported in half precision folds too: in float32 from its
// weights, the folded ones rounded once to its type. It then computes what
// the unfolded model does (BatchNorm as a per-channel affine of that type)
// within a few roundings of float16.
TEST(FoldBatchNormsTest, HalfPrecisionBatchNormFoldsInItsOwnType) {
  Model unfolded = ConvBatchNormModel(false);
  for (auto& [name, tensor] : unfolded.initializers) {
    tensor = std::make_shared<const HostTensor>(ConvertFloats(*tensor, DType::kFloat16));
  }
  unfolded.inputs[0].dtype = DType::kFloat16;
  unfolded.outputs[0].dtype = DType::kFloat16;
  Model folded = unfolded;
  FoldBatchNormsIntoConvs(folded);
  ASSERT_EQ(folded.nodes.size(), 1u);
  EXPECT_EQ(folded.initializers.at("bn/folded_weights")->dtype(), DType::kFloat16);
  EXPECT_EQ(folded.initializers.at("bn/folded_bias")->dtype(), DType::kFloat16);

  const HostTensor x = RandomTensor(DType::kFloat16, {3, 3, 9, 9}, 7);
  const HostTensor want = RunHost(unfolded, x);
  const HostTensor got = RunHost(folded, x);
  EXPECT_LT(RelativeError(got, want), 4 * 0x1p-11);
}

}  // namespace
}  // namespace graphserve
