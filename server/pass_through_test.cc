#include "server/pass_through.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "google/protobuf/text_format.h"
#include "server/bytes_tensor.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

inference::ModelConfig ParseConfig(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// Triton's QA onnx_zero_3_object, as import leaves it: three STRING inputs
// handed back through Identity, every dim open.
Model ZeroThreeObject() {
  Model model;
  for (const char* i : {"0", "1", "2"}) {
    model.passed_strings.push_back({std::string("INPUT") + i, {-1, -1, -1},
                                    std::string("OUTPUT") + i, {-1, -1, -1}});
  }
  return model;
}

constexpr char kZeroThreeObject[] = R"pb(
  name: "onnx_zero_3_object"
  max_batch_size: 8
  input { name: "INPUT0" data_type: TYPE_STRING dims: [ -1, -1 ] }
  input { name: "INPUT1" data_type: TYPE_STRING dims: [ -1, -1 ] }
  input { name: "INPUT2" data_type: TYPE_STRING dims: [ -1, -1 ] }
  output { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1, -1 ] }
  output { name: "OUTPUT1" data_type: TYPE_STRING dims: [ -1, -1 ] }
  output { name: "OUTPUT2" data_type: TYPE_STRING dims: [ -1, -1 ] }
)pb";

std::string Message(const absl::Status& status) { return std::string(status.message()); }

TEST(PassThroughInterfaceTest, TritonsIdentityModelsOfObjects) {
  absl::StatusOr<ModelInterface> interface =
      PassThroughInterface(ParseConfig(kZeroThreeObject), ZeroThreeObject());
  ASSERT_TRUE(interface.ok()) << interface.status();
  ASSERT_EQ(interface->outputs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(interface->inputs[k].wire, TensorWire::kPassed);
    EXPECT_EQ(interface->outputs[k].wire, TensorWire::kPassed);
    EXPECT_EQ(interface->outputs[k].passed_from, k);
  }
  // onnx_zero_1_object: a scalar a row in the file, dims [1] reshaped to [].
  Model one;
  one.passed_strings = {{"INPUT0", {-1}, "OUTPUT0", {-1}}};
  interface = PassThroughInterface(ParseConfig(R"pb(
    name: "onnx_zero_1_object"
    max_batch_size: 8
    input { name: "INPUT0" data_type: TYPE_STRING dims: [ 1 ] reshape { shape: [] } }
    output { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] reshape { shape: [] } }
  )pb"), one);
  ASSERT_TRUE(interface.ok()) << interface.status();
}

TEST(PassThroughInterfaceTest, RefusalsNameTheTensor) {
  const auto refused = [](const std::string& config, const Model& model) {
    return Message(PassThroughInterface(ParseConfig(config), model).status());
  };
  Model computing = ZeroThreeObject();
  computing.outputs = {{"sum", DType::kFloat32, {-1}}};
  computing.inputs = {{"x", DType::kFloat32, {-1}}};
  EXPECT_THAT(refused(kZeroThreeObject, computing),
              HasSubstr("hands STRING input 'INPUT0' back as output 'OUTPUT0' and also computes "
                        "(outputs sum)"));
  Model model;
  model.passed_strings = {{"a", {-1, 4}, "b", {-1, 4}}};
  constexpr char kHead[] = R"pb(name: "m" max_batch_size: 8 )pb";
  EXPECT_THAT(refused(std::string(kHead) + R"pb(
                input { name: "a" data_type: TYPE_STRING dims: [ 5 ] }
                output { name: "b" data_type: TYPE_STRING dims: [ 5 ] })pb",
                      model),
              HasSubstr("declares input 'a' with dims [5] but the model file has [-1,4]"));
  EXPECT_THAT(refused(std::string(kHead) + R"pb(
                input { name: "a" data_type: TYPE_STRING dims: [ 4 ] }
                output { name: "b" data_type: TYPE_STRING dims: [ 4 ] }
                output { name: "c" data_type: TYPE_STRING dims: [ 4 ] })pb",
                      model),
              HasSubstr("declares output 'c', which the model file lacks (its outputs: b)"));
  EXPECT_THAT(refused(std::string(kHead) + R"pb(
                input { name: "z" data_type: TYPE_STRING dims: [ 4 ] }
                output { name: "b" data_type: TYPE_STRING dims: [ 4 ] })pb",
                      model),
              HasSubstr("does not declare the model's input 'a'"));
  EXPECT_THAT(refused(std::string(kHead) + R"pb(
                input { name: "a" data_type: TYPE_FP32 dims: [ 4 ] }
                output { name: "b" data_type: TYPE_STRING dims: [ 4 ] })pb",
                      model),
              HasSubstr("declares input 'a' as FP32 but the model file has STRING"));
  Model open;
  open.passed_strings = {{"a", {-1, -1}, "b", {-1, -1}}};
  EXPECT_THAT(refused(std::string(kHead) + R"pb(
                input { name: "a" data_type: TYPE_STRING dims: [ -1 ] }
                output { name: "b" data_type: TYPE_STRING dims: [ 4 ] })pb",
                      open),
              HasSubstr("declares output 'b' with dims [4], which cannot hold the elements of "
                        "input 'a' (dims [-1]) it hands back"));
}

TEST(PassThroughPipelineTest, AnswersAndCountsOnTheCallingThread) {
  absl::StatusOr<ModelInterface> interface =
      PassThroughInterface(ParseConfig(kZeroThreeObject), ZeroThreeObject());
  ASSERT_TRUE(interface.ok()) << interface.status();
  ModelCounters counters(StatisticsSizes(8), 8, 1);
  PassThroughPipeline pipeline(*interface, "1", &counters);
  inference::ModelInferRequest request;
  for (const char* name : {"INPUT0", "INPUT1", "INPUT2"}) {
    auto* input = request.add_inputs();
    input->set_name(name);
    input->set_datatype("BYTES");
    for (int64_t dim : {2, 1, 3}) input->add_shape(dim);
    for (const char* text : {"a", "bb", "", "7", "-1", "x y"}) {
      input->mutable_contents()->add_bytes_contents(text);
    }
  }
  inference::ModelInferResponse response;
  absl::Status answer = absl::UnknownError("not answered");
  pipeline.Infer(&request, &response, [&answer](const absl::Status& s) { answer = s; }, nullptr);
  ASSERT_TRUE(answer.ok()) << answer;  // answered before Infer returned
  ASSERT_EQ(response.outputs_size(), 3);
  EXPECT_EQ(response.model_version(), "1");
  EXPECT_THAT(response.outputs(2).shape(), ElementsAre(2, 1, 3));
  std::string expected;
  for (const char* text : {"a", "bb", "", "7", "-1", "x y"}) AppendBytesElement(text, &expected);
  EXPECT_EQ(response.raw_output_contents(2), expected);
  inference::ModelStatistics statistics;
  counters.Fill(&statistics);
  EXPECT_EQ(statistics.inference_stats().success().count(), 1u);
  EXPECT_EQ(statistics.inference_count(), 2u);  // rows

  request.mutable_inputs(0)->set_datatype("INT32");
  pipeline.Infer(&request, &response, [&answer](const absl::Status& s) { answer = s; }, nullptr);
  EXPECT_EQ(answer.code(), absl::StatusCode::kInvalidArgument);
  pipeline.Drain(std::nullopt);
  pipeline.Infer(&request, &response, [&answer](const absl::Status& s) { answer = s; }, nullptr);
  EXPECT_EQ(answer.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace graphserve
