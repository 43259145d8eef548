#include "capture_cli/prepare.h"

#include <string>

#include "examples/example_models.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "runtime/onnx_import.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/precision.h"

namespace graphserve {
namespace {

PrepareReport AutoReport() {
  PrepareReport report;
  report.model_name = "bert";
  report.precision = ModelPrecision::kAuto;
  report.model_path = "bert.onnx";
  report.out_dir = "repo/bert";
  report.float32_nodes = {
      {"/embeddings/Add", "Add", Float32Rule::kValues, "output max |x| 1.3e3 > 512"},
      {"/attention/Softmax", "Softmax", Float32Rule::kOp, "op Softmax kept in float32"},
      {"/mask/Mul", "Mul", Float32Rule::kValues,
       "weight 'min' max |w| 3.4e38 > 65504; output max |x| 3.4e38 > 512"},
      {"/encoder/Add", "Add", Float32Rule::kPromoted, "reads float32 '/ln'"},
  };
  return report;
}

// capture_report.txt says which nodes precision auto kept in float32 and
// why, one line each, after the line naming the precision.
TEST(FormatPrepareReportTest, ListsEachNodeAutoKeepsAndWhy) {
  const std::string text = FormatPrepareReport(AutoReport());
  EXPECT_NE(text.find("precision auto\n"), std::string::npos) << text;
  EXPECT_NE(text.find("precision auto: 4 nodes kept in float32 (1 for their op, as fp16; 1 as "
                      "autocast promotes; 2 for their values on the calibration batch), the rest "
                      "computes in float16:\n"
                      "  '/embeddings/Add' (Add): output max |x| 1.3e3 > 512\n"
                      "  '/attention/Softmax' (Softmax): op Softmax kept in float32\n"
                      "  '/mask/Mul' (Mul): weight 'min' max |w| 3.4e38 > 65504; output max |x| "
                      "3.4e38 > 512\n"
                      "  '/encoder/Add' (Add): reads float32 '/ln'\n"),
            std::string::npos)
      << text;
}

TEST(FormatPrepareReportTest, OtherPrecisionsHaveNoSuchSection) {
  PrepareReport report = AutoReport();
  report.precision = ModelPrecision::kFp16;
  report.float32_nodes.clear();
  EXPECT_EQ(FormatPrepareReport(report).find("kept in float32"), std::string::npos);
}

Model Import(const onnx::ModelProto& proto) {
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), "m");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

std::string Text(const google::protobuf::Message& message) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(message, &text);
  return text;
}

// The config prepare loads: the file's interface, the largest size as
// max_batch_size, and the capture section from the options.
TEST(PrepareConfigTest, DeclaresTheInterfaceAndTheCaptureSection) {
  Model model = Import(MakeMlpModel());
  PrepareOptions options;
  options.out_dir = "repo/mlp/";
  options.num_streams = 3;
  options.precision = ModelPrecision::kFp16;
  absl::StatusOr<inference::ModelConfig> config =
      PrepareConfig(options, {8, 1, 64}, options.buckets, &model);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(Text(*config), Text(Parse(R"pb(
              name: "mlp"
              platform: "graphserve_onnx"
              max_batch_size: 64
              input { name: "x" data_type: TYPE_FP32 dims: 512 }
              output { name: "y" data_type: TYPE_FP32 dims: 1 }
              default_model_filename: "model.onnx"
              backend: "graphserve"
              capture {
                batch_sizes: [ 1, 8, 64 ]
                streams: 3
                schedule: "auto"
                max_lanes: 4
                precision: "fp16"
              })pb")));
}

// A sequence model's buckets, named by its shape dim, and its pad values.
TEST(PrepareConfigTest, WritesBucketsAndPadding) {
  Model model = Import(MakeMaskedSequenceModel());
  PrepareOptions options;
  options.out_dir = "repo/masked";
  options.buckets = {{32}, {128}};
  options.padding = {{"mask", 0}, {"x", 0.5}};
  options.shape_padding = "exact";
  options.eager_extents = {600};
  absl::StatusOr<inference::ModelConfig> config =
      PrepareConfig(options, {1, 4}, options.buckets, &model);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->input(0).dims(0), -1);
  EXPECT_EQ(Text(config->capture()), Text(Parse(R"pb(
                                            capture {
                                              batch_sizes: [ 1, 4 ]
                                              streams: 2
                                              schedule: "auto"
                                              max_lanes: 4
                                              shape_dims: "sequence"
                                              buckets { extents: 32 }
                                              buckets { extents: 128 }
                                              padding { input: "mask" value: 0 }
                                              padding { input: "x" value: 0.5 }
                                              shape_padding: "exact"
                                              eager_extents: 600
                                            })pb")
                                              .capture()));
}

// max_batch_size 0, which Triton's auto-complete would read as unset: the
// model is declared without a batch, its dim 0 a shape dim of its own.
TEST(PrepareConfigTest, MaxBatchSizeZeroServesWithoutABatch) {
  Model model = Import(MakeMaskedSequenceModel());
  PrepareOptions options;
  options.out_dir = "repo/masked";
  options.max_batch_size = 0;
  options.buckets = {{1, 32}, {4, 128}};
  absl::StatusOr<inference::ModelConfig> config =
      PrepareConfig(options, {1}, options.buckets, &model);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->max_batch_size(), 0);
  EXPECT_FALSE(model.batches);
  ASSERT_EQ(config->input(0).dims_size(), 3);
  EXPECT_EQ(config->input(0).dims(0), -1);
  EXPECT_EQ(config->capture().shape_dims_size(), 2);
  EXPECT_EQ(config->capture().shape_dims(1), "sequence");
}

TEST(PrepareConfigTest, RefusesBucketsThatDoNotFitTheModel) {
  PrepareOptions options;
  options.out_dir = "repo/m";
  options.buckets = {{32, 32}};
  Model masked = Import(MakeMaskedSequenceModel());
  absl::StatusOr<inference::ModelConfig> config =
      PrepareConfig(options, {1}, options.buckets, &masked);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("the model's shape dims are sequence: give each bucket "
                                           "as N"),
            std::string::npos)
      << config.status();
  Model mlp = Import(MakeMlpModel());
  config = PrepareConfig(options, {1}, options.buckets, &mlp);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("no dims a request chooses"), std::string::npos)
      << config.status();
}

// --max-graphs plans one shape dim: a model with none is refused by name.
TEST(PrepareConfigTest, RefusesBucketsFromAHistoryWithoutOneShapeDim) {
  PrepareOptions options;
  options.out_dir = "repo/mlp";
  options.max_graphs = 8;
  Model mlp = Import(MakeMlpModel());
  EXPECT_EQ(PrepareConfig(options, {1}, {{32}}, &mlp).status().message(),
            "--max-graphs chooses buckets of one dim a request chooses (a sequence length); the "
            "model has none: give --buckets, or --num-sizes to choose batch sizes only");
  Model masked = Import(MakeMaskedSequenceModel());
  absl::StatusOr<inference::ModelConfig> config = PrepareConfig(options, {1}, {{32}}, &masked);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->capture().buckets(0).extents(0), 32);
}

TEST(PrepareConfigTest, RefusesSizesAboveMaxBatchSize) {
  Model model = Import(MakeMlpModel());
  PrepareOptions options;
  options.out_dir = "repo/mlp";
  options.max_batch_size = 16;
  EXPECT_EQ(PrepareConfig(options, {1, 32}, options.buckets, &model).status().message(),
            "max_batch_size 16 is below the largest captured size 32");
}

TEST(FormatPrepareReportTest, NamesTheBucketsAndCountsTheirGraphs) {
  PrepareReport report;
  report.model_name = "bert";
  report.num_streams = 2;
  report.batch_sizes = {1, 8};
  report.max_batch_size = 8;
  report.shape_dims = {"sequence"};
  report.buckets = {{64}, {128}, {512}};
  report.buckets_served = "sequence 64,128,512 (padded)";
  const std::string text = FormatPrepareReport(report);
  EXPECT_NE(text.find("shape buckets: sequence 64,128,512 (padded)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("12 graphs (2 sizes x 3 buckets x 2 streams) captured"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("chosen from the history"), std::string::npos) << text;
}

// Buckets chosen from a (rows x length) history: the expected padding, and
// the power-of-two grid's when the sizes were chosen too.
TEST(FormatPrepareReportTest, SaysWhatTheHistoryChose) {
  PrepareReport report;
  report.model_name = "bert";
  report.grid = GridChoice{{1, 8}, {64, 512}, 12.5};
  EXPECT_NE(FormatPrepareReport(report).find(
                "buckets chosen from the history: expected padded positions per request 12.5\n"),
            std::string::npos)
      << FormatPrepareReport(report);
  report.pow2_grid = GridChoice{{1, 8}, {256, 512}, 90};
  EXPECT_NE(FormatPrepareReport(report).find(
                "sizes and buckets chosen from the history: expected padded positions per request "
                "12.5 (power-of-two grid, sizes [1, 8] x buckets [256, 512]: 90)\n"),
            std::string::npos)
      << FormatPrepareReport(report);
}

}  // namespace
}  // namespace graphserve
