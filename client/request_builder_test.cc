#include "client/request_builder.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// A batching model: x FP32 [-1,4], ids INT64 [-1,2], mask BOOL [-1,3].
inference::ModelMetadataResponse Metadata() {
  inference::ModelMetadataResponse metadata;
  metadata.set_name("m");
  auto add = [&](const std::string& name, const std::string& datatype, int64_t row) {
    auto* input = metadata.add_inputs();
    input->set_name(name);
    input->set_datatype(datatype);
    input->add_shape(-1);
    input->add_shape(row);
  };
  add("x", "FP32", 4);
  add("ids", "INT64", 2);
  add("mask", "BOOL", 3);
  return metadata;
}

inference::ModelConfig Config(int max_batch_size) {
  inference::ModelConfig config;
  config.set_max_batch_size(max_batch_size);
  return config;
}

TEST(RequestBuilderTest, SetsTheBatchDimensionAndFillsEveryInput) {
  const inference::ModelConfig config = Config(16);
  absl::StatusOr<InferRequest> request =
      BuildRequest(Metadata(), &config, {.model_version = "2", .batch_size = 5});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->model_name, "m");
  EXPECT_EQ(request->model_version, "2");
  ASSERT_EQ(request->inputs.size(), 3u);
  EXPECT_EQ(request->inputs[0].shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(request->inputs[0].data.size(), 5u * 4 * 4);
  EXPECT_EQ(request->inputs[1].shape, (std::vector<int64_t>{5, 2}));
  EXPECT_EQ(request->inputs[1].data.size(), 5u * 2 * 8);
  EXPECT_EQ(request->inputs[2].data.size(), 5u * 3);
  for (const char byte : request->inputs[2].data) EXPECT_TRUE(byte == 0 || byte == 1);
}

TEST(RequestBuilderTest, SameSeedSameBytes) {
  const inference::ModelConfig config = Config(8);
  const InferRequest a = *BuildRequest(Metadata(), &config, {.batch_size = 2, .seed = 7});
  const InferRequest b = *BuildRequest(Metadata(), &config, {.batch_size = 2, .seed = 7});
  const InferRequest c = *BuildRequest(Metadata(), &config, {.batch_size = 2, .seed = 8});
  EXPECT_EQ(a.inputs[0].data, b.inputs[0].data);
  EXPECT_NE(a.inputs[0].data, c.inputs[0].data);
}

TEST(RequestBuilderTest, UsesProvidedBytesAndChecksTheirSize) {
  const inference::ModelConfig config = Config(8);
  const std::string ids(2 * 2 * 8, '\x01');  // batch 2 x [2] INT64
  absl::StatusOr<InferRequest> request =
      BuildRequest(Metadata(), &config, {.batch_size = 2, .provided_inputs = {{"ids", ids}}});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->inputs[1].data, ids);

  const absl::Status short_input =
      BuildRequest(Metadata(), &config, {.batch_size = 3, .provided_inputs = {{"ids", ids}}})
          .status();
  EXPECT_EQ(short_input.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(short_input.message(), "INT64 [3,2] needs 48 bytes, got 32"))
      << short_input;

  const absl::Status unknown =
      BuildRequest(Metadata(), &config, {.provided_inputs = {{"y", "abcd"}}}).status();
  EXPECT_TRUE(absl::StrContains(unknown.message(), "no input 'y' (inputs: ids, mask, x)"))
      << unknown;
}

TEST(RequestBuilderTest, ChecksTheBatchSizeAgainstTheConfig) {
  const inference::ModelConfig config = Config(8);
  const absl::Status too_big = BuildRequest(Metadata(), &config, {.batch_size = 9}).status();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(too_big.message(), "max_batch_size 8")) << too_big;
  EXPECT_FALSE(BuildRequest(Metadata(), &config, {.batch_size = 0}).ok());

  // max_batch_size 0: no batch dimension, the shape is sent as it is.
  inference::ModelMetadataResponse fixed;
  fixed.set_name("fixed");
  auto* input = fixed.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(3);
  const inference::ModelConfig no_batching = Config(0);
  absl::StatusOr<InferRequest> request = BuildRequest(fixed, &no_batching, {});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->inputs[0].shape, (std::vector<int64_t>{3}));
  EXPECT_FALSE(BuildRequest(fixed, &no_batching, {.batch_size = 2}).ok());
}

TEST(RequestBuilderTest, WithoutAConfigALeadingMinusOneIsTheBatch) {
  absl::StatusOr<InferRequest> request = BuildRequest(Metadata(), nullptr, {.batch_size = 3});
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->inputs[0].shape, (std::vector<int64_t>{3, 4}));
}

TEST(RequestBuilderTest, RejectsVariableNonBatchDimensions) {
  inference::ModelMetadataResponse metadata = Metadata();
  metadata.mutable_inputs(0)->set_shape(1, -1);
  const inference::ModelConfig config = Config(8);
  const absl::Status status = BuildRequest(metadata, &config, {}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "input x (FP32 [-1,-1])")) << status;
}

// perf_analyzer's --shape: an input's dims past the batch dim, where the
// model takes any (input_ids [-1,-1] at 20 tokens); its fixed dims and rank
// kept, an unknown input refused.
TEST(RequestBuilderTest, InputShapesGiveTheDimsPastTheBatch) {
  inference::ModelMetadataResponse metadata;
  metadata.set_name("bert");
  auto* ids = metadata.add_inputs();
  ids->set_name("input_ids");
  ids->set_datatype("INT64");
  for (int64_t dim : {-1, -1}) ids->add_shape(dim);
  auto* x = metadata.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  for (int64_t dim : {-1, -1, 4}) x->add_shape(dim);
  const inference::ModelConfig config = Config(8);
  RequestBuilderOptions options{.batch_size = 3};
  options.input_shapes = {{"input_ids", {20}}, {"x", {20, 4}}};
  absl::StatusOr<InferRequest> request = BuildRequest(metadata, &config, options);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->inputs[0].shape, (std::vector<int64_t>{3, 20}));
  EXPECT_EQ(request->inputs[0].data.size(), 3u * 20 * 8);
  EXPECT_EQ(request->inputs[1].shape, (std::vector<int64_t>{3, 20, 4}));

  options.input_shapes = {{"input_ids", {20}}, {"x", {20, 5}}};  // x's 4 is fixed
  EXPECT_TRUE(absl::StrContains(BuildRequest(metadata, &config, options).status().message(),
                                "--shape x:20,5 does not fit input x [-1,-1,4]"))
      << BuildRequest(metadata, &config, options).status();
  options.input_shapes = {{"input_ids", {3, 20}}, {"x", {20, 4}}};  // the batch is not given
  EXPECT_FALSE(BuildRequest(metadata, &config, options).ok());
  options.input_shapes = {{"input_ids", {20}}, {"y", {20}}};
  EXPECT_TRUE(absl::StrContains(BuildRequest(metadata, &config, options).status().message(),
                                "has no input 'y'"));
  options.input_shapes = {{"input_ids", {20}}};  // x's sequence left open
  EXPECT_FALSE(BuildRequest(metadata, &config, options).ok());
}

TEST(RandomTensorDataTest, ValuesStayInTheirRanges) {
  std::mt19937_64 rng(1);
  const std::string floats = *RandomTensorData("FP32", 1000, rng);
  ASSERT_EQ(floats.size(), 4000u);
  std::vector<float> values(1000);
  std::memcpy(values.data(), floats.data(), floats.size());
  float low = 1, high = -1;
  for (const float value : values) {
    EXPECT_GE(value, -1.0f);
    EXPECT_LT(value, 1.0f);
    low = std::min(low, value);
    high = std::max(high, value);
  }
  EXPECT_LT(low, -0.9f);  // 1000 uniform draws reach both ends of [-1, 1)
  EXPECT_GT(high, 0.9f);

  const std::string ints = *RandomTensorData("INT64", 100, rng);
  std::vector<int64_t> ids(100);
  std::memcpy(ids.data(), ints.data(), ints.size());
  for (const int64_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 100);
  }
  EXPECT_EQ(RandomTensorData("FP16", 3, rng)->size(), 6u);
  EXPECT_EQ(RandomTensorData("BYTES", 3, rng).status().code(), absl::StatusCode::kInvalidArgument);
}

// Metadata() with outputs y FP32 [-1,10], tokens INT64 [-1,-1] (variable) and
// label BYTES [-1,1].
inference::ModelMetadataResponse MetadataWithOutputs() {
  inference::ModelMetadataResponse metadata = Metadata();
  auto add = [&](const std::string& name, const std::string& datatype, int64_t row) {
    auto* output = metadata.add_outputs();
    output->set_name(name);
    output->set_datatype(datatype);
    output->add_shape(-1);
    output->add_shape(row);
  };
  add("y", "FP32", 10);
  add("tokens", "INT64", -1);
  add("label", "BYTES", 1);
  return metadata;
}

TEST(ExpectedOutputsTest, SizesFixedOutputsAtTheBatchSize) {
  const inference::ModelConfig config = Config(16);
  absl::StatusOr<std::vector<ExpectedOutput>> outputs =
      ExpectedOutputs(MetadataWithOutputs(), &config, {.batch_size = 5});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 3u);
  EXPECT_EQ((*outputs)[0].name, "y");
  EXPECT_EQ((*outputs)[0].shape, (std::vector<int64_t>{5, 10}));
  EXPECT_EQ((*outputs)[0].byte_size, 5 * 10 * 4);
  EXPECT_EQ((*outputs)[1].shape, (std::vector<int64_t>{5, -1}));
  EXPECT_FALSE((*outputs)[1].byte_size.has_value());  // only the response can tell
  EXPECT_FALSE((*outputs)[2].byte_size.has_value());  // BYTES

  outputs = ExpectedOutputs(MetadataWithOutputs(), &config,
                            {.batch_size = 2, .requested_outputs = {"tokens", "y"}});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 2u);
  EXPECT_EQ((*outputs)[0].name, "tokens");
  EXPECT_EQ((*outputs)[1].byte_size, 2 * 10 * 4);

  const absl::Status unknown =
      ExpectedOutputs(MetadataWithOutputs(), &config, {.requested_outputs = {"logits"}}).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      absl::StrContains(unknown.message(), "no output 'logits' (outputs: y, tokens, label)"))
      << unknown;
  EXPECT_EQ(ExpectedOutputs(MetadataWithOutputs(), &config, {.batch_size = 17}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
