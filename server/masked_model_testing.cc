#include "server/masked_model_testing.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "examples/example_models.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"
#include "runtime/host/host_executor.h"
#include "runtime/onnx_import.h"
#include "server/shape_buckets.h"

namespace graphserve {

inference::ModelConfig MaskedModelConfig(const std::string& capture) {
  inference::ModelConfig config;
  const std::string text = absl::StrCat(R"pb(
                                          name: "masked"
                                          max_batch_size: 4
                                          input {
                                            name: "x"
                                            data_type: TYPE_FP32
                                            dims: [ -1, 16 ]
                                          }
                                          input {
                                            name: "mask"
                                            data_type: TYPE_INT64
                                            dims: [ -1 ]
                                          }
                                          output {
                                            name: "y"
                                            data_type: TYPE_FP32
                                            dims: [ -1, 16 ]
                                          }
                                        )pb",
                                        capture);
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

MaskedModel LoadMaskedModel(const std::string& capture) {
  const inference::ModelConfig config = MaskedModelConfig(capture);
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeMaskedSequenceModel().SerializeAsString(), "masked");
  EXPECT_TRUE(model.ok()) << model.status();
  absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(config);
  EXPECT_TRUE(interface.ok()) << interface.status();
  EXPECT_TRUE(ArrangeModelAsDeclared(*interface, &*model).ok());
  EXPECT_TRUE(AttachShapeBuckets(*model, config.capture(), &*interface).ok());
  return {std::make_shared<const Model>(*std::move(model)), *std::move(interface)};
}

std::vector<float> MaskedReference(const Model& model, int64_t rows, int64_t length,
                                   const std::vector<float>& x, const std::vector<int64_t>& mask) {
  absl::StatusOr<BindOptions> options = BindOptionsAt(model, GraphKey{rows, {length}});
  EXPECT_TRUE(options.ok()) << options.status();
  absl::StatusOr<BoundGraph> graph = BindModel(model, *options);
  EXPECT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> reference = HostExecutor::Create(*graph);
  EXPECT_TRUE(reference.ok()) << reference.status();
  std::vector<HostTensor> inputs;
  inputs.emplace_back(DType::kFloat32, Dims{rows, length, 16});
  std::memcpy(inputs.back().raw(), x.data(), x.size() * sizeof(float));
  inputs.emplace_back(DType::kInt64, Dims{rows, length});
  std::memcpy(inputs.back().raw(), mask.data(), mask.size() * sizeof(int64_t));
  absl::StatusOr<std::vector<HostTensor>> results = (*reference)->Run(inputs);
  EXPECT_TRUE(results.ok()) << results.status();
  const HostTensor& y = results->front();
  return std::vector<float>(y.data<float>(), y.data<float>() + y.num_elements());
}

}  // namespace graphserve
