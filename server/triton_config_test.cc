#include "server/triton_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "examples/example_models.h"
#include "google/protobuf/text_format.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// The issue's repository, as a Triton user writes it for onnxruntime.
constexpr char kTritonConfig[] = R"pb(
  name: "mlp"
  platform: "onnxruntime_onnx"
  max_batch_size: 64
  input {
    name: "x"
    data_type: TYPE_FP32
    dims: [ 512 ]
  }
  output {
    name: "y"
    data_type: TYPE_FP32
    dims: [ 10 ]
    label_filename: "labels.txt"
  }
  instance_group {
    count: 2
    kind: KIND_GPU
    gpus: [ 0 ]
    host_policy: "gpu_0"
  }
  dynamic_batching {
    preferred_batch_size: [ 8 ]
    max_queue_delay_microseconds: 100
  }
  optimization {
    cuda {
      graphs: true
      busy_wait_events: true
      graph_spec {
        batch_size: 4
        input { key: "x" }
      }
    }
    input_pinned_memory { enable: true }
  }
  model_warmup { name: "w" batch_size: 1 }
  response_cache { enable: true }
)pb";

TEST(TritonConfigTest, NamesEachIgnoredFieldOnceAndNoHonouredOne) {
  EXPECT_THAT(
      IgnoredConfigFields(Parse(kTritonConfig)),
      ElementsAre("instance_group.host_policy",
                  "optimization.cuda.busy_wait_events", "optimization.cuda.graph_spec.input",
                  "optimization.input_pinned_memory", "model_warmup", "response_cache"));
}

TEST(TritonConfigTest, DynamicBatchingBecomesTheQueuePolicy) {
  absl::StatusOr<QueuePolicy> policy = QueuePolicyFromConfig(Parse(R"pb(
    max_batch_size: 16
    dynamic_batching {
      preferred_batch_size: [ 4, 8 ]
      max_queue_delay_microseconds: 300
      priority_levels: 3
      default_priority_level: 2
      default_queue_policy { max_queue_size: 10 default_timeout_microseconds: 500 }
      priority_queue_policy {
        key: 1
        value { timeout_action: DELAY allow_timeout_override: true }
      }
    }
  )pb"));
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_TRUE(policy->merge);
  EXPECT_EQ(policy->max_queue_delay, std::chrono::microseconds(300));
  EXPECT_THAT(policy->preferred_batch_sizes, ElementsAre(4, 8));
  ASSERT_EQ(policy->levels.size(), 3u);
  EXPECT_EQ(policy->default_level, 2);
  EXPECT_EQ(policy->levels[0].timeout_action, LevelPolicy::TimeoutAction::kDelay);
  EXPECT_TRUE(policy->levels[0].allow_timeout_override);
  EXPECT_EQ(policy->levels[0].max_queue_size, 0u);
  EXPECT_EQ(policy->levels[1].max_queue_size, 10u);
  EXPECT_EQ(policy->levels[2].default_timeout, std::chrono::microseconds(500));

  EXPECT_FALSE(QueuePolicyFromConfig(Parse("max_batch_size: 4"))->merge);
  for (const char* bad : {"max_batch_size: 4 dynamic_batching { preferred_batch_size: 8 }",
                          "max_batch_size: 4 dynamic_batching { priority_levels: 2 "
                          "default_priority_level: 3 }",
                          "max_batch_size: 4 dynamic_batching { priority_levels: 2 "
                          "priority_queue_policy { key: 5 value {} } }"}) {
    EXPECT_EQ(QueuePolicyFromConfig(Parse(bad)).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(TritonConfigTest, PreferredBatchSizesAreCapturedWhenNothingElseIsNamed) {
  EXPECT_THAT(RequestedCaptureSizes(Parse(
                  "max_batch_size: 16 dynamic_batching { preferred_batch_size: [ 4, 16 ] }")),
              ElementsAre(4, 16));
}

TEST(TritonConfigTest, AConfigOfHonouredFieldsIgnoresNothing) {
  EXPECT_THAT(IgnoredConfigFields(Parse(R"pb(
                name: "m"
                backend: "graphserve"
                max_batch_size: 8
                version_policy { latest { num_versions: 1 } }
                input {
                  name: "x"
                  data_type: TYPE_FP32
                  format: FORMAT_NCHW
                  dims: [ 3, 8, 8 ]
                  reshape { shape: [ 192 ] }
                }
                input {
                  name: "bias"
                  data_type: TYPE_FP32
                  dims: [ 4 ]
                  optional: true
                }
                output {
                  name: "y"
                  data_type: TYPE_FP32
                  dims: [ 4 ]
                  reshape { shape: [ 2, 2 ] }
                }
                instance_group {
                  count: 1
                  kind: KIND_GPU
                  gpus: [ 0, 1 ]
                }
                default_model_filename: "model.onnx"
                optimization {
                  cuda {
                    graphs: true
                    graph_spec { batch_size: 8 }
                  }
                }
                capture {
                  batch_sizes: [ 1, 8 ]
                  streams: 2
                  schedule: "auto"
                }
              )pb")),
              IsEmpty());
}

TEST(TritonConfigTest, WholeSectionsGraphServeDoesNotRunAreNamedOnce) {
  // Repeated entries and deep subtrees give one line each.
  EXPECT_THAT(IgnoredConfigFields(Parse(R"pb(
                model_warmup { name: "a" }
                model_warmup { name: "b" }
                response_cache { enable: true }
                input {
                  name: "x"
                  reshape { shape: [ 2, 2 ] }
                }
                input {
                  name: "z"
                  reshape { shape: [ 4 ] }
                  allow_ragged_batch: true
                }
              )pb")),
              ElementsAre("input.allow_ragged_batch", "model_warmup", "response_cache"));
}

TEST(TritonConfigTest, SectionsRefusedAtLoadAreNotReportedAsIgnored) {
  // RefuseUnservedFeatures (config_validation.h) refuses these; a log line
  // calling them ignored just before the refusal would contradict it.
  EXPECT_THAT(IgnoredConfigFields(Parse(R"pb(
                sequence_batching { oldest { max_candidate_sequences: 4 } }
                model_transaction_policy { decoupled: true }
                batch_input { target_name: "a" }
                batch_output { target_name: "b" }
              )pb")),
              IsEmpty());
  EXPECT_THAT(IgnoredConfigFields(Parse(R"pb(ensemble_scheduling { step { model_name: "m" } })pb")),
              IsEmpty());
}

TEST(TritonConfigTest, GraphsAreOnUnlessAConfigTurnsThemOff) {
  EXPECT_FALSE(GraphsDisabledByConfig(Parse(R"pb(name: "m")pb")));
  // Triton's default for `graphs` is false; unwritten, GraphServe keeps its
  // own default.
  EXPECT_FALSE(
      GraphsDisabledByConfig(Parse(R"pb(optimization { cuda { busy_wait_events: true } })pb")));
  EXPECT_FALSE(GraphsDisabledByConfig(Parse(R"pb(optimization { cuda { graphs: true } })pb")));
  EXPECT_TRUE(GraphsDisabledByConfig(Parse(R"pb(optimization { cuda { graphs: false } })pb")));
  EXPECT_TRUE(GraphsDisabledByConfig(Parse(R"pb(capture { graphs_disabled: true })pb")));
}

TEST(TritonConfigTest, GraphSpecsNameTheCapturedSizesUnlessTheCaptureSectionDoes) {
  EXPECT_THAT(RequestedCaptureSizes(Parse(R"pb(name: "m")pb")), IsEmpty());
  EXPECT_THAT(RequestedCaptureSizes(Parse(R"pb(
                optimization {
                  cuda {
                    graph_spec { batch_size: 16 }
                    graph_spec { batch_size: 2 }
                  }
                }
              )pb")),
              ElementsAre(16, 2));
  EXPECT_THAT(RequestedCaptureSizes(Parse(R"pb(
                optimization { cuda { graph_spec { batch_size: 16 } } }
                capture { batch_sizes: [ 1, 4 ] }
              )pb")),
              ElementsAre(1, 4));
}

Model ImportMlp() {
  absl::StatusOr<Model> model = ImportOnnxBytes(MakeMlpModel().SerializeAsString(), "mlp");
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

TEST(TritonConfigTest, AConfigWithoutTensorsIsCompletedFromTheModel) {
  Model model = ImportMlp();
  inference::ModelConfig config;
  config.set_name("mlp");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &config).ok());
  EXPECT_EQ(config.max_batch_size(), kAutoCompleteMaxBatchSize);
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), model.inputs[0].name);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  // The model's [-1, 512] without its batch dimension.
  EXPECT_THAT(config.input(0).dims(), ElementsAre(model.inputs[0].dims[1]));
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_EQ(config.output(0).name(), model.outputs[0].name);
  EXPECT_EQ(config.output(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(config.output(0).dims_size(), 1);
  EXPECT_GT(config.output(0).dims(0), 0);

  // A max_batch_size the config sets is kept; declared tensors are not touched.
  inference::ModelConfig sized = Parse(R"pb(name: "mlp" max_batch_size: 32)pb");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &sized).ok());
  EXPECT_EQ(sized.max_batch_size(), 32);
  inference::ModelConfig declared = Parse(R"pb(name: "mlp"
                                               input { name: "other" }
                                               output { name: "y" })pb");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &declared).ok());
  ASSERT_EQ(declared.input_size(), 1);
  EXPECT_EQ(declared.input(0).name(), "other");
  EXPECT_EQ(declared.output_size(), 1);
  EXPECT_EQ(declared.output(0).dims_size(), 0);
}

// A sequence dim is written -1 wherever it reaches (Note [Shape buckets]):
// the inputs that have it, and the output dims that follow it.
TEST(TritonConfigTest, ShapeDimsAreCompletedAsMinusOne) {
  absl::StatusOr<Model> model =
      ImportOnnxBytes(MakeMaskedSequenceModel().SerializeAsString(), "masked");
  ASSERT_TRUE(model.ok()) << model.status();
  inference::ModelConfig config;
  config.set_name("masked");
  ASSERT_TRUE(CompleteConfigFromModel(&*model, &config).ok());
  ASSERT_EQ(config.input_size(), 2);
  EXPECT_THAT(config.input(0).dims(), ElementsAre(-1, 16));
  EXPECT_THAT(config.input(1).dims(), ElementsAre(-1));
  EXPECT_EQ(config.input(1).data_type(), inference::TYPE_INT64);
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_THAT(config.output(0).dims(), ElementsAre(-1, 16));
}

TEST(TritonConfigTest, AConfigDeclaringOnlyItsInputsGetsTheModelsOutputs) {
  // As Triton's ONNX Runtime backend completes each side it is not given.
  Model model = ImportMlp();
  inference::ModelConfig config = Parse(R"pb(name: "mlp" max_batch_size: 16
                                             input { name: "declared" })pb");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &config).ok());
  EXPECT_EQ(config.max_batch_size(), 16);
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), "declared");
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_EQ(config.output(0).name(), model.outputs[0].name);
  EXPECT_THAT(config.output(0).dims(), ElementsAre(1));  // [batch,1] without the batch
}

TEST(TritonConfigTest, BatchingAModelWithAFixedFirstDimIsRefusedInTritonsWords) {
  Model model = ImportMlp();
  model.inputs[0].dims[0] = 8;
  inference::ModelConfig config = Parse(R"pb(name: "mlp" max_batch_size: 1
                                             input { name: "x" })pb");
  const absl::Status status = CompleteConfigFromModel(&model, &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("autofill failed for model 'mlp': model does not support "
                                   "batching while non-zero max_batch_size is specified"));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("input '" + model.inputs[0].name + "' has shape [8,"));
}

TEST(TritonConfigTest, AScalarRowIsCompletedAsTritonWritesIt) {
  // Triton refuses empty dims: a [batch] tensor is dims [1] with an empty
  // reshape, as Triton's auto-complete writes it.
  onnx::ModelProto proto = MakeMlpModel();
  onnx::GraphProto* graph = proto.mutable_graph();
  const std::string y = graph->output(0).name();
  onnx::NodeProto* argmax = graph->add_node();  // [batch,1] -> [batch]
  argmax->set_op_type("ArgMax");
  argmax->add_input(y);
  argmax->add_output("score");
  onnx::AttributeProto* axis = argmax->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  onnx::AttributeProto* keepdims = argmax->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(0);
  onnx::ValueInfoProto* score = graph->mutable_output(0);
  score->set_name("score");
  score->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  score->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()->RemoveLast();
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), "scalar_rows");
  ASSERT_TRUE(model.ok()) << model.status();
  inference::ModelConfig config;
  config.set_name("scalar_rows");
  ASSERT_TRUE(CompleteConfigFromModel(&*model, &config).ok());
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_THAT(config.output(0).dims(), ElementsAre(1));
  ASSERT_TRUE(config.output(0).has_reshape());
  EXPECT_THAT(config.output(0).reshape().shape(), IsEmpty());
}

// Note [Strings at the model's edges]: the file's STRING tensors are
// TYPE_STRING in the completed config, whatever numbers the runtime sees.
TEST(TritonConfigTest, StringTensorsAreCompletedAsTypeString) {
  Model text;
  text.name = "text";
  text.opset = 13;
  text.inputs = {{"s", DType::kInt32, {-1, 4}, {"", ""}, /*text=*/true},
                 {"x", DType::kInt32, {-1, 4}, {"", ""}}};
  text.nodes = {{"parse", "Identity", {"s"}, {"t"}, {}}, {"copy", "Identity", {"x"}, {"y"}, {}}};
  text.outputs = {{"t", DType::kInt32, {-1, 4}, {}, /*text=*/true},
                  {"y", DType::kInt32, {-1, 4}, {}}};
  inference::ModelConfig config;
  config.set_name("text");
  ASSERT_TRUE(CompleteConfigFromModel(&text, &config).ok());
  ASSERT_EQ(config.input_size(), 2);
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_STRING);
  EXPECT_THAT(config.input(0).dims(), ElementsAre(4));
  EXPECT_EQ(config.input(1).data_type(), inference::TYPE_INT32);
  EXPECT_EQ(config.output(0).data_type(), inference::TYPE_STRING);
  EXPECT_EQ(config.output(1).data_type(), inference::TYPE_INT32);

  Model passed;
  passed.name = "passed";
  passed.passed_strings = {{"p", {-1, -1, 3}, "q", {-1, -1, 3}}, {"p", {-1, -1, 3}, "r", {}}};
  inference::ModelConfig passed_config;
  passed_config.set_name("passed");
  ASSERT_TRUE(CompleteConfigFromModel(&passed, &passed_config).ok());
  EXPECT_GT(passed_config.max_batch_size(), 0);
  ASSERT_EQ(passed_config.input_size(), 1);
  EXPECT_EQ(passed_config.input(0).data_type(), inference::TYPE_STRING);
  EXPECT_THAT(passed_config.input(0).dims(), ElementsAre(-1, 3));
  ASSERT_EQ(passed_config.output_size(), 2);
  EXPECT_THAT(passed_config.output(1).dims(), ElementsAre(-1, 3));  // the file gives none: p's
}

// Triton's qa/L0_model_config autofill_noplatform_success/onnx/no_config_no_batch:
// a config without tensors (only an instance group) beside a model whose
// inputs have a fixed first dimension.
TEST(TritonConfigTest, AModelWithoutABatchDimensionIsCompletedWithoutBatching) {
  Model model = ImportMlp();
  model.inputs[0].dims[0] = 8;  // a fixed first dimension
  inference::ModelConfig config = Parse(R"pb(name: "mlp" instance_group { kind: KIND_CPU })pb");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &config).ok());
  EXPECT_EQ(config.max_batch_size(), 0);
  ASSERT_EQ(config.input_size(), 1);
  EXPECT_EQ(config.input(0).name(), model.inputs[0].name);
  // The model's whole shape, its first dimension included.
  EXPECT_THAT(config.input(0).dims(), ElementsAre(8, model.inputs[0].dims[1]));
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_EQ(config.output(0).name(), model.outputs[0].name);
  EXPECT_THAT(config.output(0).dims(), ElementsAre(8, 1));
}

// Note [Models without a batch dim]: with max_batch_size 0 the model's
// dynamic dim 0 is one a request chooses, so a completed output has it as
// -1; the model is marked to bind it as a shape dim, not as a batch of 1.
TEST(TritonConfigTest, ADynamicFirstDimWithoutBatchingIsCompletedAsMinusOne) {
  Model model = ImportMlp();  // x [-1, 512] -> [-1, 1]
  ASSERT_TRUE(model.batches);
  inference::ModelConfig config = Parse(R"pb(name: "mlp" max_batch_size: 0
                                             input { name: "x" })pb");
  ASSERT_TRUE(CompleteConfigFromModel(&model, &config).ok());
  EXPECT_FALSE(model.batches);
  EXPECT_EQ(ShapeDimNames(model).size(), 1u);
  ASSERT_EQ(config.output_size(), 1);
  EXPECT_THAT(config.output(0).dims(), ElementsAre(-1, 1));

  // A config declaring both sides only says whether the model batches.
  Model batching = ImportMlp();
  inference::ModelConfig declared = Parse(R"pb(name: "mlp" max_batch_size: 8
                                               input { name: "x" } output { name: "y" })pb");
  ASSERT_TRUE(CompleteConfigFromModel(&batching, &declared).ok());
  EXPECT_TRUE(batching.batches);
  EXPECT_TRUE(ShapeDimNames(batching).empty());
}

TEST(TritonConfigTest, BatchingAModelWithoutABatchDimensionIsRefusedInTritonsWords) {
  Model model = ImportMlp();
  model.inputs[0].dims[0] = 8;
  inference::ModelConfig config = Parse(R"pb(name: "mlp" max_batch_size: 4)pb");
  const absl::Status status = CompleteConfigFromModel(&model, &config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("model does not support batching while non-zero "
                                   "max_batch_size is specified"));
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("input '" + model.inputs[0].name + "' has shape [8,"));
}

}  // namespace
}  // namespace graphserve
