#include "examples/example_models.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

// Opset and IR version of the written files: what PyTorch 1.13-2.x exports by
// default, and what libonnx 1.12 and every ONNX Runtime since 1.8 read.
constexpr int64_t kOpset = 13;
constexpr int64_t kIrVersion = 8;

constexpr char kBatch[] = "batch";

// Uniform weights from splitmix64: unlike std::uniform_real_distribution, whose
// algorithm the standard leaves to the library, it gives the same numbers with
// every compiler, so the model files are reproducible everywhere.
class WeightGenerator {
 public:
  explicit WeightGenerator(uint64_t seed) : state_(seed) {}

  // Uniform in [-bound, bound).
  float Uniform(double bound) {
    const double unit = static_cast<double>(Next() >> 11) * 0x1.0p-53;  // [0, 1)
    return static_cast<float>((2.0 * unit - 1.0) * bound);
  }

 private:
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t state_;
};

// Appends nodes, initializers and typed values to one GraphProto. A dim of -1
// in a declared value is the symbolic batch.
class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* graph, uint64_t seed) : graph_(graph), weights_(seed) {}

  void AddInput(const std::string& name, const std::vector<int64_t>& dims,
                int32_t elem_type = onnx::TensorProto::FLOAT) {
    DeclareValue(graph_->add_input(), name, dims, elem_type);
  }
  void AddOutput(const std::string& name, const std::vector<int64_t>& dims) {
    DeclareValue(graph_->add_output(), name, dims);
  }

  onnx::NodeProto* AddNode(const std::string& op_type, const std::string& name,
                           const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs) {
    onnx::NodeProto* node = graph_->add_node();
    node->set_op_type(op_type);
    node->set_name(name);
    for (const std::string& input : inputs) node->add_input(input);
    for (const std::string& output : outputs) node->add_output(output);
    return node;
  }

  // One-output node whose output is named after the node.
  std::string Apply(const std::string& op_type, const std::string& name,
                    const std::vector<std::string>& inputs) {
    AddNode(op_type, name, inputs, {name});
    return name;
  }

  void AddInt64Initializer(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& values) {
    onnx::TensorProto* tensor = NewInitializer(name, onnx::TensorProto::INT64, dims);
    tensor->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                     values.size() * sizeof(int64_t)));
  }

  // y = x W^T + b with W [out, in] and b [out], initialised like PyTorch's
  // nn.Linear (uniform in +-1/sqrt(in)), so activations keep their scale
  // through the layers and the final Sigmoid is not saturated.
  std::string Linear(const std::string& name, const std::string& x, int64_t in, int64_t out) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    const std::string weight = name + ".weight";
    const std::string bias = name + ".bias";
    AddUniformInitializer(weight, {out, in}, bound);
    AddUniformInitializer(bias, {out}, bound);
    onnx::NodeProto* gemm = AddNode("Gemm", name, {x, weight, bias}, {name});
    SetInt(gemm, "transB", 1);
    return name;
  }

  // Linear layers of `sizes` (input size first) with Relu after each layer
  // but the last; `relu_last` adds one after the last as well.
  std::string Mlp(const std::string& prefix, std::string x, const std::vector<int64_t>& sizes,
                  bool relu_last) {
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      x = Linear(absl::StrCat(prefix, ".fc", i), x, sizes[i], sizes[i + 1]);
      if (i + 2 < sizes.size() || relu_last) {
        x = Apply("Relu", absl::StrCat(prefix, ".relu", i), {x});
      }
    }
    return x;
  }

  static void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }

  static void SetInts(onnx::NodeProto* node, const std::string& name,
                      const std::vector<int64_t>& values) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t value : values) attr->add_ints(value);
  }

  // A float32 scalar.
  void AddFloatScalar(const std::string& name, float value) {
    NewInitializer(name, onnx::TensorProto::FLOAT, {})
        ->set_raw_data(std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
  }

  // float32 weights drawn uniformly in +-bound.
  void AddUniformInitializer(const std::string& name, const std::vector<int64_t>& dims,
                             double bound) {
    int64_t count = 1;
    for (int64_t dim : dims) count *= dim;
    std::vector<float> values(static_cast<size_t>(count));
    for (float& value : values) value = weights_.Uniform(bound);
    onnx::TensorProto* tensor = NewInitializer(name, onnx::TensorProto::FLOAT, dims);
    // raw_data is little-endian, as on every host this tool runs on.
    tensor->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                                     values.size() * sizeof(float)));
  }

 private:
  static void DeclareValue(onnx::ValueInfoProto* value, const std::string& name,
                           const std::vector<int64_t>& dims,
                           int32_t elem_type = onnx::TensorProto::FLOAT) {
    value->set_name(name);
    onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(elem_type);
    onnx::TensorShapeProto* shape = tensor->mutable_shape();
    for (int64_t dim : dims) {
      if (dim == kSequenceDim) {
        shape->add_dim()->set_dim_param("sequence");
      } else if (dim < 0) {
        shape->add_dim()->set_dim_param(kBatch);
      } else {
        shape->add_dim()->set_dim_value(dim);
      }
    }
  }

  onnx::TensorProto* NewInitializer(const std::string& name, int32_t data_type,
                                    const std::vector<int64_t>& dims) {
    onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(data_type);
    for (int64_t dim : dims) tensor->add_dims(dim);
    return tensor;
  }

  onnx::GraphProto* graph_;
  WeightGenerator weights_;
};

onnx::ModelProto NewModel(const std::string& graph_name) {
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("graphserve.make_example_models");
  model.set_producer_version("1");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  model.mutable_graph()->set_name(graph_name);
  return model;
}

absl::Status WriteModel(const onnx::ModelProto& model, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::PermissionDeniedError(absl::StrCat("cannot create '", path, "'"));
  if (!model.SerializeToOstream(&file)) {
    return absl::InternalError(absl::StrCat("cannot serialize the model into '", path, "'"));
  }
  file.close();
  if (!file) return absl::InternalError(absl::StrCat("cannot finish writing '", path, "'"));
  return absl::OkStatus();
}

}  // namespace

std::vector<int64_t> LowerTriangleIndices(int64_t n) {
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(n * (n - 1) / 2));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < i; ++j) indices.push_back(i * n + j);
  }
  return indices;
}

onnx::ModelProto MakeMlpModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("mlp");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, 512});
  std::string h = builder.Mlp("mlp", "x", {512, 1024, 512, 256, 1}, /*relu_last=*/false);
  builder.AddNode("Sigmoid", "sigmoid", {h}, {"y"});
  builder.AddOutput("y", {-1, 1});
  return model;
}

onnx::ModelProto MakeFeatureNormalizeModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("feature_normalize");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, 512});
  builder.AddUniformInitializer("mean", {512}, 0.5);
  builder.AddUniformInitializer("scale", {512}, 2.0);
  const std::string centred = builder.Apply("Sub", "centre", {"x", "mean"});
  const std::string scaled = builder.Apply("Mul", "scale_features", {centred, "scale"});
  builder.AddNode("Relu", "relu", {scaled}, {"x_normalized"});
  builder.AddOutput("x_normalized", {-1, 512});
  return model;
}

onnx::ModelProto MakeSequenceSoftmaxModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("sequence_softmax");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, kSequenceDim, 16});
  builder.AddUniformInitializer("w", {16, 16}, 0.25);
  const std::string h = builder.Apply("MatMul", "matmul", {"x", "w"});
  onnx::NodeProto* softmax = builder.AddNode("Softmax", "softmax", {h}, {"y"});
  GraphBuilder::SetInt(softmax, "axis", 1);  // over the sequence
  builder.AddOutput("y", {-1, kSequenceDim, 16});
  return model;
}

onnx::ModelProto MakeMaskedSequenceModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("masked_sequence");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, kSequenceDim, 16});
  builder.AddInput("mask", {-1, kSequenceDim}, onnx::TensorProto::INT64);
  builder.AddUniformInitializer("w", {16, 16}, 0.25);
  builder.AddFloatScalar("one", 1.0f);
  builder.AddFloatScalar("scale", 10000.0f);
  builder.AddInt64Initializer("feature_axis", {1}, {2});
  onnx::NodeProto* cast = builder.AddNode("Cast", "mask_cast", {"mask"}, {"mask_float"});
  GraphBuilder::SetInt(cast, "to", onnx::TensorProto::FLOAT);
  const std::string open = builder.Apply("Sub", "mask_open", {"mask_float", "one"});
  const std::string bias = builder.Apply("Mul", "mask_bias", {open, "scale"});
  const std::string column = builder.Apply("Unsqueeze", "mask_column", {bias, "feature_axis"});
  const std::string h = builder.Apply("MatMul", "matmul", {"x", "w"});
  const std::string masked = builder.Apply("Add", "masked", {h, column});
  onnx::NodeProto* softmax = builder.AddNode("Softmax", "softmax", {masked}, {"y"});
  GraphBuilder::SetInt(softmax, "axis", 1);  // over the sequence
  builder.AddOutput("y", {-1, kSequenceDim, 16});
  return model;
}

onnx::ModelProto MakeInputWithDefaultModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("input_with_default");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, 16});
  builder.AddInput("bias", {-1, 16});
  builder.AddUniformInitializer("w", {16, 16}, 0.25);
  builder.AddUniformInitializer("bias", {1, 16}, 1.0);
  const std::string h = builder.Apply("MatMul", "matmul", {"x", "w"});
  builder.AddNode("Add", "add", {h, "bias"}, {"y"});
  builder.AddOutput("y", {-1, 16});
  return model;
}

onnx::ModelProto MakeMultiTowerModel(uint64_t seed) {
  onnx::ModelProto model = NewModel("multi_tower");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("x", {-1, 256});
  std::vector<std::string> towers;
  for (int t = 0; t < 4; ++t) {
    towers.push_back(
        builder.Mlp(absl::StrCat("tower", t), "x", {256, 512, 256, 64}, /*relu_last=*/true));
  }
  onnx::NodeProto* concat = builder.AddNode("Concat", "concat", towers, {"towers"});
  GraphBuilder::SetInt(concat, "axis", 1);
  const std::string logit = builder.Mlp("head", "towers", {256, 1}, /*relu_last=*/false);
  builder.AddNode("Sigmoid", "sigmoid", {logit}, {"y"});
  builder.AddOutput("y", {-1, 1});
  return model;
}

// Note [DLRM dense interaction]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// DLRM's "dot" interaction as PyTorch exports it, with the embedding lookups
// left to the caller (sparse_emb holds the 26 looked-up 16-wide rows):
//   x = bottom_mlp(dense)                    [B,16]   13-512-256-16, Relu after each
//   T = concat(unsqueeze(x, 1), sparse_emb)  [B,27,16]
//   Z = T @ transpose(T, (0,2,1))            [B,27,27]
//   flat = reshape(Z, [B, 729])              via Shape/Gather/Unsqueeze/Concat, as
//                                            torch.onnx writes Z.view(B, -1): the
//                                            batch stays symbolic and binding folds
//                                            the chain into a constant shape
//   pairs = gather(flat, tril_indices, axis=1) [B,351]  the 27*26/2 pairs i > j
//   R = concat(x, pairs)                     [B,367]
//   prob = sigmoid(top_mlp(R))               [B,1]    367-512-256-1
onnx::ModelProto MakeDlrmDenseModel(uint64_t seed) {
  constexpr int64_t kDenseFeatures = 13;
  constexpr int64_t kSparseFeatures = 26;
  constexpr int64_t kEmbeddingDim = 16;
  constexpr int64_t kVectors = kSparseFeatures + 1;  // the bottom MLP's output joins them
  constexpr int64_t kPairs = kVectors * (kVectors - 1) / 2;

  onnx::ModelProto model = NewModel("dlrm_dense");
  GraphBuilder builder(model.mutable_graph(), seed);
  builder.AddInput("dense", {-1, kDenseFeatures});
  builder.AddInput("sparse_emb", {-1, kSparseFeatures, kEmbeddingDim});

  const std::string x = builder.Mlp("bottom_mlp", "dense", {kDenseFeatures, 512, 256, kEmbeddingDim},
                                    /*relu_last=*/true);
  builder.AddInt64Initializer("axes_1", {1}, {1});
  builder.AddInt64Initializer("axes_0", {1}, {0});
  const std::string x3 = builder.Apply("Unsqueeze", "interaction.unsqueeze", {x, "axes_1"});
  onnx::NodeProto* concat_t =
      builder.AddNode("Concat", "interaction.concat_t", {x3, "sparse_emb"}, {"interaction.t"});
  GraphBuilder::SetInt(concat_t, "axis", 1);
  onnx::NodeProto* transpose = builder.AddNode("Transpose", "interaction.transpose",
                                               {"interaction.t"}, {"interaction.t_transposed"});
  GraphBuilder::SetInts(transpose, "perm", {0, 2, 1});
  const std::string z = builder.Apply("MatMul", "interaction.bmm",
                                      {"interaction.t", "interaction.t_transposed"});

  // Z.view(B, -1) as torch.onnx exports it.
  const std::string shape = builder.Apply("Shape", "interaction.shape", {z});
  builder.AddInt64Initializer("index_0", {}, {0});
  onnx::NodeProto* batch = builder.AddNode("Gather", "interaction.batch", {shape, "index_0"},
                                           {"interaction.batch"});
  GraphBuilder::SetInt(batch, "axis", 0);
  const std::string batch_1d =
      builder.Apply("Unsqueeze", "interaction.batch_1d", {"interaction.batch", "axes_0"});
  builder.AddInt64Initializer("flat_width", {1}, {kVectors * kVectors});
  onnx::NodeProto* flat_shape = builder.AddNode(
      "Concat", "interaction.flat_shape", {batch_1d, "flat_width"}, {"interaction.flat_shape"});
  GraphBuilder::SetInt(flat_shape, "axis", 0);
  const std::string flat =
      builder.Apply("Reshape", "interaction.flatten", {z, "interaction.flat_shape"});

  builder.AddInt64Initializer("tril_indices", {kPairs}, LowerTriangleIndices(kVectors));
  onnx::NodeProto* pairs = builder.AddNode("Gather", "interaction.tril", {flat, "tril_indices"},
                                           {"interaction.pairs"});
  GraphBuilder::SetInt(pairs, "axis", 1);
  onnx::NodeProto* concat_r = builder.AddNode("Concat", "interaction.concat_r",
                                              {x, "interaction.pairs"}, {"interaction.r"});
  GraphBuilder::SetInt(concat_r, "axis", 1);

  const std::string logit = builder.Mlp("top_mlp", "interaction.r",
                                        {kEmbeddingDim + kPairs, 512, 256, 1}, /*relu_last=*/false);
  builder.AddNode("Sigmoid", "sigmoid", {logit}, {"prob"});
  builder.AddOutput("prob", {-1, 1});
  return model;
}

absl::Status WriteExampleModels(const std::string& dir, std::vector<std::string>* written) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create directory '", dir, "': ", error.message()));
  }
  const std::pair<const char*, onnx::ModelProto> models[] = {
      {"mlp.onnx", MakeMlpModel()},
      {"dlrm_dense.onnx", MakeDlrmDenseModel()},
  };
  for (const auto& [file_name, model] : models) {
    const std::string path = (std::filesystem::path(dir) / file_name).string();
    absl::Status status = WriteModel(model, path);
    if (!status.ok()) return status;
    if (written != nullptr) written->push_back(path);
  }
  return absl::OkStatus();
}

}  // namespace graphserve
