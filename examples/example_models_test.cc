#include "examples/example_models.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;

// A batch size other than 1, so that a dim mixed up with the batch shows.
constexpr int64_t kBatch = 3;

absl::StatusOr<Model> ImportProto(const onnx::ModelProto& proto, const std::string& name) {
  return ImportOnnxBytes(proto.SerializeAsString(), name);
}

// Float64 reference of y = act(x W^T + b) for the Gemm layer `name`, reading
// the weights from the imported model.
std::vector<double> Linear(const Model& model, const std::string& name,
                           const std::vector<double>& x, bool relu) {
  const HostTensor& w = *model.initializers.at(name + ".weight");
  const HostTensor& b = *model.initializers.at(name + ".bias");
  const int64_t out = w.dims()[0];
  const int64_t in = w.dims()[1];
  EXPECT_EQ(static_cast<int64_t>(x.size()), in) << name;
  std::vector<double> y(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double sum = b.data<float>()[o];
    for (int64_t i = 0; i < in; ++i) sum += x[i] * w.data<float>()[o * in + i];
    y[o] = relu ? std::max(sum, 0.0) : sum;
  }
  return y;
}

double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Inputs like standardised features: uniform in [-1, 1), deterministic.
std::vector<double> Features(int64_t count, int64_t row) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[i] = std::sin(1.7 * i + 0.3 * row + 0.1);
  return values;
}

TEST(ExampleModelsTest, LowerTriangleIndices) {
  EXPECT_THAT(LowerTriangleIndices(3), ElementsAre(3, 6, 7));
  EXPECT_EQ(LowerTriangleIndices(27).size(), 351u);
}

TEST(ExampleModelsTest, ModelsAreDeterministic) {
  EXPECT_EQ(MakeMlpModel().SerializeAsString(), MakeMlpModel().SerializeAsString());
  EXPECT_EQ(MakeDlrmDenseModel().SerializeAsString(), MakeDlrmDenseModel().SerializeAsString());
  EXPECT_NE(MakeMlpModel(1).SerializeAsString(), MakeMlpModel(2).SerializeAsString());
}

TEST(ExampleModelsTest, MlpImportsWithSymbolicBatch) {
  absl::StatusOr<Model> model = ImportProto(MakeMlpModel(), "mlp.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 1u);
  EXPECT_EQ(model->inputs[0].name, "x");
  EXPECT_EQ(model->inputs[0].dtype, DType::kFloat32);
  EXPECT_THAT(model->inputs[0].dims, ElementsAre(-1, 512));
  ASSERT_EQ(model->outputs.size(), 1u);
  EXPECT_EQ(model->outputs[0].name, "y");
  EXPECT_THAT(model->outputs[0].dims, ElementsAre(-1, 1));
  EXPECT_THAT(model->initializers.at("mlp.fc0.weight")->dims(), ElementsAre(1024, 512));
  EXPECT_THAT(model->initializers.at("mlp.fc3.weight")->dims(), ElementsAre(1, 256));
  EXPECT_EQ(model->nodes.back().op_type, "Sigmoid");
}

TEST(ExampleModelsTest, DlrmDenseImportsWithSymbolicBatch) {
  absl::StatusOr<Model> model = ImportProto(MakeDlrmDenseModel(), "dlrm_dense.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->inputs.size(), 2u);
  EXPECT_EQ(model->inputs[0].name, "dense");
  EXPECT_THAT(model->inputs[0].dims, ElementsAre(-1, 13));
  EXPECT_EQ(model->inputs[1].name, "sparse_emb");
  EXPECT_THAT(model->inputs[1].dims, ElementsAre(-1, 26, 16));
  ASSERT_EQ(model->outputs.size(), 1u);
  EXPECT_EQ(model->outputs[0].name, "prob");
  EXPECT_THAT(model->outputs[0].dims, ElementsAre(-1, 1));
  EXPECT_THAT(model->initializers.at("top_mlp.fc0.weight")->dims(), ElementsAre(512, 367));
  EXPECT_THAT(model->initializers.at("tril_indices")->dims(), ElementsAre(351));
}

// Binding folds the Shape/Gather/Unsqueeze/Concat chain: the bound graph has
// concrete dims for the batch and no Shape node left.
TEST(ExampleModelsTest, ModelsBindAtABatchSize) {
  for (const onnx::ModelProto& proto : {MakeMlpModel(), MakeDlrmDenseModel()}) {
    absl::StatusOr<Model> model = ImportProto(proto, proto.graph().name());
    ASSERT_TRUE(model.ok()) << model.status();
    BindOptions options;
    options.batch_size = kBatch;
    absl::StatusOr<BoundGraph> bound = BindModel(*model, options);
    ASSERT_TRUE(bound.ok()) << proto.graph().name() << ": " << bound.status();
    ASSERT_EQ(bound->outputs.size(), 1u);
    EXPECT_THAT(bound->value(bound->outputs[0]).dims, ElementsAre(kBatch, 1));
    EXPECT_EQ(bound->value(bound->inputs[0]).dims[0], kBatch);
    for (const BoundNode& node : bound->nodes) {
      EXPECT_NE(node.op_type, "Shape") << proto.graph().name();
    }
  }
}

// PyTorch-style init keeps the outputs off the Sigmoid's flat ends: checked
// on a float64 forward pass of the stored weights, independent of the runtime.
double MlpReference(const Model& model, const std::vector<double>& x) {
  std::vector<double> h = x;
  for (int layer = 0; layer < 4; ++layer) {
    h = Linear(model, "mlp.fc" + std::to_string(layer), h, /*relu=*/layer < 3);
  }
  return Sigmoid(h[0]);
}

// Note [DLRM dense interaction] in example_models.cc, in float64.
double DlrmReference(const Model& model, const std::vector<double>& dense,
                     const std::vector<double>& sparse_emb) {
  std::vector<double> x = dense;
  for (int layer = 0; layer < 3; ++layer) {
    x = Linear(model, "bottom_mlp.fc" + std::to_string(layer), x, /*relu=*/true);
  }
  std::vector<std::vector<double>> t = {x};
  for (size_t f = 0; f < 26; ++f) {
    t.emplace_back(sparse_emb.begin() + f * 16, sparse_emb.begin() + (f + 1) * 16);
  }
  std::vector<double> r = x;
  for (size_t i = 0; i < t.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      double dot = 0;
      for (size_t k = 0; k < 16; ++k) dot += t[i][k] * t[j][k];
      r.push_back(dot);
    }
  }
  EXPECT_EQ(r.size(), 367u);
  for (int layer = 0; layer < 3; ++layer) {
    r = Linear(model, "top_mlp.fc" + std::to_string(layer), r, /*relu=*/layer < 2);
  }
  return Sigmoid(r[0]);
}

// Embedding rows of a trained table are small: uniform-ish in +-0.1.
std::vector<double> SparseEmbeddings(int64_t row) {
  std::vector<double> values = Features(26 * 16, row + 100);
  for (double& v : values) v *= 0.1;
  return values;
}

HostTensor ToTensor(const std::vector<std::vector<double>>& rows, Dims dims) {
  HostTensor tensor(DType::kFloat32, std::move(dims));
  float* data = tensor.data<float>();
  for (const std::vector<double>& row : rows) {
    for (double v : row) *data++ = static_cast<float>(v);
  }
  return tensor;
}

// PyTorch-style init keeps the outputs off the Sigmoid's flat ends: checked
// on a float64 forward pass of the stored weights, independent of the runtime.
TEST(ExampleModelsTest, OutputsAreNotSaturated) {
  absl::StatusOr<Model> mlp = ImportProto(MakeMlpModel(), "mlp.onnx");
  absl::StatusOr<Model> dlrm = ImportProto(MakeDlrmDenseModel(), "dlrm_dense.onnx");
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  ASSERT_TRUE(dlrm.ok()) << dlrm.status();
  for (int64_t row = 0; row < kBatch; ++row) {
    const double y = MlpReference(*mlp, Features(512, row));
    EXPECT_GT(y, 0.05) << "row " << row;
    EXPECT_LT(y, 0.95) << "row " << row;
    const double prob = DlrmReference(*dlrm, Features(13, row), SparseEmbeddings(row));
    EXPECT_GT(prob, 0.05) << "row " << row;
    EXPECT_LT(prob, 0.95) << "row " << row;
  }
}

// The whole path (import, bind with the Shape/Gather/Reshape fold, host
// kernels) against the float64 reference.
TEST(ExampleModelsTest, HostExecutorMatchesFloat64Reference) {
  // float32 accumulation over at most 1024 terms, then a Sigmoid (slope <= 1/4).
  constexpr double kTolerance = 1e-5;
  absl::StatusOr<Model> mlp = ImportProto(MakeMlpModel(), "mlp.onnx");
  absl::StatusOr<Model> dlrm = ImportProto(MakeDlrmDenseModel(), "dlrm_dense.onnx");
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  ASSERT_TRUE(dlrm.ok()) << dlrm.status();
  BindOptions options;
  options.batch_size = kBatch;

  std::vector<std::vector<double>> x, dense, sparse;
  for (int64_t row = 0; row < kBatch; ++row) {
    x.push_back(Features(512, row));
    dense.push_back(Features(13, row));
    sparse.push_back(SparseEmbeddings(row));
  }

  absl::StatusOr<BoundGraph> mlp_bound = BindModel(*mlp, options);
  ASSERT_TRUE(mlp_bound.ok()) << mlp_bound.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> mlp_exec =
      HostExecutor::Create(*std::move(mlp_bound));
  ASSERT_TRUE(mlp_exec.ok()) << mlp_exec.status();
  absl::StatusOr<std::vector<HostTensor>> y = (*mlp_exec)->Run({ToTensor(x, {kBatch, 512})});
  ASSERT_TRUE(y.ok()) << y.status();

  absl::StatusOr<BoundGraph> dlrm_bound = BindModel(*dlrm, options);
  ASSERT_TRUE(dlrm_bound.ok()) << dlrm_bound.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> dlrm_exec =
      HostExecutor::Create(*std::move(dlrm_bound));
  ASSERT_TRUE(dlrm_exec.ok()) << dlrm_exec.status();
  absl::StatusOr<std::vector<HostTensor>> prob = (*dlrm_exec)->Run(
      {ToTensor(dense, {kBatch, 13}), ToTensor(sparse, {kBatch, 26, 16})});
  ASSERT_TRUE(prob.ok()) << prob.status();

  for (int64_t row = 0; row < kBatch; ++row) {
    EXPECT_NEAR((*y)[0].data<float>()[row], MlpReference(*mlp, x[row]), kTolerance)
        << "mlp row " << row;
    EXPECT_NEAR((*prob)[0].data<float>()[row], DlrmReference(*dlrm, dense[row], sparse[row]),
                kTolerance)
        << "dlrm row " << row;
  }
}

TEST(ExampleModelsTest, WritesFilesThatImport) {
  const std::string dir =
      (std::filesystem::path(testing::TempDir()) / "example_models_test").string();
  std::vector<std::string> written;
  ASSERT_TRUE(WriteExampleModels(dir, &written).ok());
  ASSERT_EQ(written.size(), 2u);
  for (const std::string& path : written) {
    absl::StatusOr<Model> model = ImportOnnxFile(path);
    EXPECT_TRUE(model.ok()) << path << ": " << model.status();
  }
  EXPECT_EQ(std::filesystem::path(written[0]).filename(), "mlp.onnx");
  EXPECT_EQ(std::filesystem::path(written[1]).filename(), "dlrm_dense.onnx");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graphserve
