#include "server/classification.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using RequestedOutput = inference::ModelInferRequest::InferRequestedOutputTensor;

template <typename T>
std::vector<std::string> Top(const std::vector<T>& row, DType dtype, int64_t k,
                             const std::vector<std::string>& labels = {}) {
  return TopClasses(reinterpret_cast<const std::byte*>(row.data()), row.size(), dtype, k, labels);
}

// The extension document's example: [1.1, 3.3, 0.5, 2.4], top 2.
TEST(ClassificationTest, LargestFirstAsTritonPrintsThem) {
  const std::vector<float> row = {1.1f, 3.3f, 0.5f, 2.4f};
  EXPECT_THAT(Top(row, DType::kFloat32, 2), ElementsAre("3.300000:1", "2.400000:3"));
  EXPECT_THAT(Top(row, DType::kFloat32, 2, {"a", "b", "c", "d"}),
              ElementsAre("3.300000:1:b", "2.400000:3:d"));
  EXPECT_THAT(Top(std::vector<double>{0.25, -1}, DType::kFloat64, 1), ElementsAre("0.250000:0"));
}

// Triton's std::to_string: integers in decimal, int8 and uint8 as numbers,
// never as characters.
TEST(ClassificationTest, IntegersPrintInDecimal) {
  EXPECT_THAT(Top(std::vector<int8_t>{-3, 5, 65}, DType::kInt8, 3),
              ElementsAre("65:2", "5:1", "-3:0"));
  EXPECT_THAT(Top(std::vector<uint8_t>{200, 7}, DType::kUInt8, 1), ElementsAre("200:0"));
  constexpr uint64_t kLarge = std::numeric_limits<uint64_t>::max();  // no int64 holds it
  EXPECT_THAT(Top(std::vector<uint64_t>{1, kLarge}, DType::kUInt64, 1),
              ElementsAre(absl::StrCat(kLarge, ":1")));
  EXPECT_THAT(Top(std::vector<int64_t>{-5, -2}, DType::kInt64, 2), ElementsAre("-2:1", "-5:0"));
}

// Half types, which Triton refuses, order by their float value.
TEST(ClassificationTest, HalfTypesOrderByTheirFloatValue) {
  const std::vector<Half> row = {Half(0.5f), Half(-2.0f), Half(1.5f)};
  EXPECT_THAT(Top(row, DType::kFloat16, 2), ElementsAre("1.500000:2", "0.500000:0"));
  const std::vector<BFloat16> brow = {BFloat16(-1.0f), BFloat16(3.0f)};
  EXPECT_THAT(Top(brow, DType::kBFloat16, 1), ElementsAre("3.000000:1"));
}

// k past the classes is no error: every class, as Triton answers it.
TEST(ClassificationTest, MoreClassesThanTheRowHasGivesEveryClass) {
  EXPECT_THAT(Top(std::vector<int32_t>{2, 9}, DType::kInt32, 1000), ElementsAre("9:1", "2:0"));
}

TEST(ClassificationTest, TiesComeLowerIndexFirstAndNanLast) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(Top(std::vector<float>{1, nan, 2, 1}, DType::kFloat32, 4),
              ElementsAre("2.000000:2", "1.000000:0", "1.000000:3", HasSubstr("nan:1")));
}

// An empty line labels nothing, and classes past the file have no label.
TEST(ClassificationTest, EmptyOrMissingLabelsAreLeftOut) {
  EXPECT_THAT(Top(std::vector<int16_t>{3, 2, 1}, DType::kInt16, 3, {"", "two"}),
              ElementsAre("3:0", "2:1:two", "1:2"));
}

std::string ScratchDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(root != nullptr ? root : "/tmp") / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ClassificationTest, LabelFileIsReadLineByLine) {
  const std::string path = ScratchDir("label_lines") + "/labels.txt";
  std::ofstream(path) << "cat\ndog house\n\nbird";  // no newline after the last
  absl::StatusOr<std::vector<std::string>> labels = ReadLabelFile(path);
  ASSERT_TRUE(labels.ok()) << labels.status();
  EXPECT_THAT(*labels, ElementsAre("cat", "dog house", "", "bird"));

  absl::StatusOr<std::vector<std::string>> missing = ReadLabelFile(path + ".absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("labels.txt.absent"));
}

inference::ModelConfig ConfigWithLabels(const std::string& label_filename) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      absl::StrCat(R"pb(output { name: "y" data_type: TYPE_FP32 dims: [ 3 ] label_filename: ")pb",
                   label_filename, R"pb(" } output { name: "z" data_type: TYPE_FP32 dims: [ 3 ] })pb"),
      &config));
  return config;
}

ModelInterface ClassifierInterface(bool batching) {
  ModelInterface model;
  model.name = "classifier";
  model.batching = batching;
  model.outputs = {{"y", DType::kFloat32, {3}}, {"z", DType::kFloat32, {3}}};
  return model;
}

TEST(ClassificationTest, OutputLabelsComeFromTheModelDirectory) {
  const std::string dir = ScratchDir("label_model");
  std::ofstream(dir + "/labels.txt") << "zero\none\ntwo\n";
  ModelInterface model = ClassifierInterface(true);
  ASSERT_TRUE(ReadOutputLabels(ConfigWithLabels("labels.txt"), dir, &model).ok());
  EXPECT_THAT(model.outputs[0].labels, ElementsAre("zero", "one", "two"));
  EXPECT_TRUE(model.outputs[1].labels.empty());

  // Triton's text for a path out of the directory; a file that is not there.
  const absl::Status outside = ReadOutputLabels(ConfigWithLabels("../labels.txt"), dir, &model);
  EXPECT_EQ(outside.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(outside.message(),
              HasSubstr("for output 'y' in model 'classifier' is outside model directory"));
  EXPECT_FALSE(ReadOutputLabels(ConfigWithLabels("/etc/hostname"), dir, &model).ok());
  EXPECT_EQ(ReadOutputLabels(ConfigWithLabels("absent.txt"), dir, &model).code(),
            absl::StatusCode::kNotFound);
}

RequestedOutput Classify(const std::string& name, int64_t k) {
  RequestedOutput output;
  output.set_name(name);
  (*output.mutable_parameters())["classification"].set_int64_param(k);
  return output;
}

TEST(ClassificationTest, RequestedClassCountReadsTheParameter) {
  const ModelInterface model = ClassifierInterface(true);
  RequestedOutput plain;
  plain.set_name("y");
  EXPECT_EQ(*RequestedClassCount(plain, model.outputs[0], model), std::nullopt);
  EXPECT_EQ(*RequestedClassCount(Classify("y", 7), model.outputs[0], model), 7);

  RequestedOutput in_region = Classify("y", 2);
  (*in_region.mutable_parameters())["shared_memory_region"].set_string_param("out");
  const absl::Status both = RequestedClassCount(in_region, model.outputs[0], model).status();
  EXPECT_EQ(both.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(both.message(),
              HasSubstr("output can't set both 'shared_memory_region' and 'classification'"));
}

// Two rows of y [3] classified, z left as values: y becomes BYTES [rows, k]
// (or [k] for a model that does not batch), each element length-prefixed.
TEST(ClassificationTest, ClassifyOutputsRewritesOnlyTheClassifiedOutputs) {
  for (const bool batching : {true, false}) {
    const ModelInterface model = ClassifierInterface(batching);
    const int64_t rows = batching ? 2 : 1;
    inference::ModelInferRequest request;
    *request.add_outputs() = Classify("y", 2);
    request.add_outputs()->set_name("z");
    inference::ModelInferResponse response;
    const std::vector<float> y = {0.1f, 0.7f, 0.2f, 0.6f, 0.3f, 0.1f};
    for (const std::string name : {"y", "z"}) {
      auto* output = response.add_outputs();
      output->set_name(name);
      output->set_datatype("FP32");
      if (batching) output->add_shape(rows);
      output->add_shape(3);
      response.add_raw_output_contents(
          std::string(reinterpret_cast<const char*>(y.data()), rows * 3 * sizeof(float)));
    }
    const std::string z_before = response.raw_output_contents(1);

    ASSERT_TRUE(ClassifyOutputs(request, model, &response).ok());
    EXPECT_EQ(response.outputs(0).datatype(), "BYTES");
    if (batching) {
      EXPECT_THAT(response.outputs(0).shape(), ElementsAre(2, 2));
    } else {
      EXPECT_THAT(response.outputs(0).shape(), ElementsAre(2));
    }
    std::vector<std::string> classes;
    const std::string& bytes = response.raw_output_contents(0);
    for (size_t at = 0; at + 4 <= bytes.size();) {
      uint32_t length = 0;
      std::memcpy(&length, bytes.data() + at, 4);  // little-endian, as the host
      classes.push_back(bytes.substr(at + 4, length));
      at += 4 + length;
    }
    if (batching) {
      EXPECT_THAT(classes, ElementsAre("0.700000:1", "0.200000:2", "0.600000:0", "0.300000:1"));
    } else {
      EXPECT_THAT(classes, ElementsAre("0.700000:1", "0.200000:2"));
    }
    EXPECT_EQ(response.outputs(1).datatype(), "FP32");
    EXPECT_EQ(response.raw_output_contents(1), z_before);
  }
}

}  // namespace
}  // namespace graphserve
