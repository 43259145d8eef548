#include "server/config_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// A config Triton and GraphServe accept: every case below breaks one rule of
// it, so the refusal can only come from that rule.
constexpr char kValid[] = R"pb(
  name: "m"
  platform: "onnxruntime_onnx"
  max_batch_size: 8
  input { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] }
  output { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] }
)pb";

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// kValid with `change` merged in (repeated fields append, others replace).
inference::ModelConfig ValidWith(const std::string& change) {
  inference::ModelConfig config = Parse(kValid);
  EXPECT_TRUE(google::protobuf::TextFormat::MergeFromString(change, &config)) << change;
  return config;
}

// The message of an InvalidArgument refusal (empty, failing the test, when
// the config is accepted or refused otherwise).
std::string Refusal(const inference::ModelConfig& config,
                    const ConfigValidationOptions& options = {}) {
  const absl::Status status = ValidateModelConfig(config, options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  return std::string(status.message());
}

TEST(ConfigValidationTest, TheBaseConfigAndTritonsAllowedFormsAreAccepted) {
  EXPECT_TRUE(ValidateModelConfig(Parse(kValid)).ok());
  // Variable dims, reshapes keeping each run's element count, a scalar row.
  EXPECT_TRUE(ValidateModelConfig(ValidWith(R"pb(
                input {
                  name: "V"
                  data_type: TYPE_INT32
                  dims: [ 2, 4, -1, 6 ]
                  reshape { shape: [ 8, -1, 1, 6 ] }
                }
                input { name: "S" data_type: TYPE_INT32 dims: [ 1 ] reshape {} }
                output { name: "R" data_type: TYPE_FP32 dims: [ 6 ] reshape { shape: [ 2, 3 ] } }
                instance_group { kind: KIND_GPU gpus: [ 0 ] }
                instance_group { kind: KIND_CPU count: 2 }
                dynamic_batching {
                  preferred_batch_size: [ 4, 8 ]
                  preserve_ordering: true
                  priority_levels: 1
                  default_priority_level: 1
                }
              )pb"))
                  .ok());
}

TEST(ConfigValidationTest, NegativeMaxBatchSize) {
  EXPECT_THAT(Refusal(ValidWith("max_batch_size: -2")),
              HasSubstr("'max_batch_size' must be non-negative value for m"));
}

TEST(ConfigValidationTest, InputWithoutName) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_input(0)->clear_name();
  EXPECT_THAT(Refusal(config), HasSubstr("model input must specify 'name' for m"));
}

TEST(ConfigValidationTest, InputWithoutDataType) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_input(0)->clear_data_type();
  EXPECT_THAT(Refusal(config), HasSubstr("model input 'INPUT0' must specify 'data_type' for m"));
}

TEST(ConfigValidationTest, OutputWithoutDims) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_output(0)->clear_dims();
  const std::string message = Refusal(config);
  EXPECT_THAT(message, HasSubstr("model output 'OUTPUT0' must specify 'dims' for m"));
  EXPECT_THAT(message, HasSubstr("dims: [ 1 ] with reshape"));  // what to write instead
}

TEST(ConfigValidationTest, ZeroDim) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_input(0)->add_dims(0);
  const std::string message = Refusal(config);
  EXPECT_THAT(message, HasSubstr("model input 'INPUT0' dimension must be integer >= 1, or -1"));
  EXPECT_THAT(message, HasSubstr("dims [16,0]"));
}

TEST(ConfigValidationTest, ZeroReshapeDim) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(output {
                                       name: "O"
                                       data_type: TYPE_FP32
                                       dims: [ 2, 2 ]
                                       reshape { shape: [ 0 ] }
                                     })pb")),
              HasSubstr("model output 'O' reshape dimensions must be integer >= 1"));
}

TEST(ConfigValidationTest, ReshapeWithAnotherElementCount) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(input {
                                       name: "I"
                                       data_type: TYPE_FP32
                                       dims: [ 1, 3, 2 ]
                                       reshape { shape: [ 5 ] }
                                     })pb")),
              HasSubstr("model input 'I' has different size for dims and reshape for m"));
}

TEST(ConfigValidationTest, ReshapeMovingElementsAcrossAVariableDim) {
  // 2 elements before the -1 become 1, and 1 after it becomes 2.
  EXPECT_THAT(Refusal(ValidWith(R"pb(output {
                                       name: "O"
                                       data_type: TYPE_FP32
                                       dims: [ 2, -1 ]
                                       reshape { shape: [ 1, -1, 2 ] }
                                     })pb")),
              HasSubstr("model output 'O' has different size for dims and reshape"));
}

TEST(ConfigValidationTest, ReshapeWithAnotherNumberOfVariableDims) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(input {
                                       name: "I"
                                       data_type: TYPE_FP32
                                       dims: [ 2, -1 ]
                                       reshape { shape: [ 2, -1, -1 ] }
                                     })pb")),
              HasSubstr("model input 'I' has different number of variable-size dimensions for "
                        "dims and reshape"));
}

TEST(ConfigValidationTest, EmptyReshapeWithoutBatching) {
  inference::ModelConfig config = ValidWith(R"pb(max_batch_size: 0)pb");
  config.mutable_input(0)->clear_dims();
  config.mutable_input(0)->add_dims(1);
  config.mutable_input(0)->mutable_reshape();
  EXPECT_THAT(Refusal(config), HasSubstr("model input 'INPUT0' cannot have empty reshape for "
                                         "non-batching model as scalar tensors are not supported"));
}

TEST(ConfigValidationTest, ImageFormatWithoutThreeDims) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_input(0)->set_format(inference::ModelInput::FORMAT_NCHW);
  EXPECT_THAT(Refusal(config), HasSubstr("model input NHWC/NCHW require 3 dims"));
}

TEST(ConfigValidationTest, ShapeTensorsAreTensorRTs) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_output(0)->set_is_shape_tensor(true);
  EXPECT_THAT(Refusal(config),
              HasSubstr("shape tensors are only supported for TensorRT platform"));
}

TEST(ConfigValidationTest, NonLinearFormatIsTensorRTs) {
  inference::ModelConfig config = Parse(kValid);
  config.mutable_input(0)->set_is_non_linear_format_io(true);
  EXPECT_THAT(Refusal(config), HasSubstr("Non-linear IO format is only supported for the TensorRT "
                                         "platform"));
}

TEST(ConfigValidationTest, PreferredBatchSizeAboveMaxBatchSize) {
  EXPECT_THAT(Refusal(ValidWith("dynamic_batching { preferred_batch_size: [ 16 ] }")),
              HasSubstr("dynamic batching preferred size must be <= max batch size for m"));
}

TEST(ConfigValidationTest, PreferredBatchSizeNotPositive) {
  EXPECT_THAT(Refusal(ValidWith("dynamic_batching { preferred_batch_size: [ 0 ] }")),
              HasSubstr("dynamic batching preferred size must be positive for m"));
}

TEST(ConfigValidationTest, DefaultPriorityLevelUnsetWithLevels) {
  EXPECT_THAT(Refusal(ValidWith("dynamic_batching { priority_levels: 3 }")),
              HasSubstr("default priority level must be in range [1, 3] for m"));
}

TEST(ConfigValidationTest, PriorityQueuePolicyBeyondTheLevels) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(dynamic_batching {
                                       priority_levels: 3
                                       default_priority_level: 2
                                       priority_queue_policy {
                                         key: 4
                                         value {}
                                       }
                                     })pb")),
              HasSubstr("priority queue policy must have priority level in range [1, 3] for m"));
}

TEST(ConfigValidationTest, PreserveOrderingWithPriorities) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(dynamic_batching {
                                       preserve_ordering: true
                                       priority_levels: 2
                                       default_priority_level: 1
                                     })pb")),
              HasSubstr("Only one priority level is allowed when 'preserve_ordering' is true"));
}

TEST(ConfigValidationTest, PreserveOrderingWithDelayedRequests) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(dynamic_batching {
                                       preserve_ordering: true
                                       default_queue_policy {
                                         timeout_action: DELAY
                                         default_timeout_microseconds: 1000
                                       }
                                     })pb")),
              HasSubstr("Queue policy can not have DELAY as timeout action when "
                        "'preserve_ordering' is true for m (dynamic_batching.default_queue_policy)"));
}

TEST(ConfigValidationTest, SequenceControlKindOnTwoTensors) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(sequence_batching {
                                       control_input {
                                         name: "END0"
                                         control { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] }
                                       }
                                       control_input {
                                         name: "END1"
                                         control { kind: CONTROL_SEQUENCE_END int32_false_true: [ 0, 1 ] }
                                       }
                                     })pb")),
              HasSubstr("sequence batching specifies multiple CONTROL_SEQUENCE_END tensors for m"));
}

TEST(ConfigValidationTest, SequenceControlTensorForTwoKinds) {
  EXPECT_THAT(
      Refusal(ValidWith(R"pb(sequence_batching {
                               control_input {
                                 name: "START"
                                 control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }
                               }
                               control_input {
                                 name: "START"
                                 control { kind: CONTROL_SEQUENCE_READY int32_false_true: [ 0, 1 ] }
                               }
                             })pb")),
      HasSubstr("sequence batching control tensor 'START' is specified for multiple control kinds"));
}

TEST(ConfigValidationTest, SequenceBooleanControlWithoutValues) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(sequence_batching {
                                       control_input {
                                         name: "READY"
                                         control { kind: CONTROL_SEQUENCE_READY }
                                       }
                                     })pb")),
              HasSubstr("sequence batching must specify either 'int32_false_true', "
                        "'fp32_false_true' or 'bool_false_true' for CONTROL_SEQUENCE_READY"));
}

TEST(ConfigValidationTest, SequenceBooleanControlWithOneValue) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(sequence_batching {
                                       control_input {
                                         name: "START"
                                         control { kind: CONTROL_SEQUENCE_START fp32_false_true: [ 1 ] }
                                       }
                                     })pb")),
              HasSubstr("sequence batching control 'fp32_false_true' must have exactly 2 entries "
                        "for CONTROL_SEQUENCE_START"));
}

TEST(ConfigValidationTest, SequenceCorrelationIdOfAFloatType) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(sequence_batching {
                                       control_input {
                                         name: "CORRID"
                                         control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 }
                                       }
                                     })pb")),
              HasSubstr("unexpected data type for control CONTROL_SEQUENCE_CORRID for m"));
}

TEST(ConfigValidationTest, SequenceOldestPreferredSizeAboveMaxBatchSize) {
  EXPECT_THAT(Refusal(ValidWith("sequence_batching { oldest { preferred_batch_size: [ 9 ] } }")),
              HasSubstr("sequence batching preferred batch size must be <= max batch size"));
}

TEST(ConfigValidationTest, SequenceDirectSlotUtilizationAboveOne) {
  EXPECT_THAT(
      Refusal(ValidWith("sequence_batching { direct { minimum_slot_utilization: 1.5 } }")),
      HasSubstr("sequence batching minimum slot utilization must be in range (0.0, 1.0]"));
}

TEST(ConfigValidationTest, SequenceBatchingWithTheResponseCache) {
  EXPECT_THAT(Refusal(ValidWith("sequence_batching {} response_cache { enable: true }")),
              HasSubstr("Response Cache does not currently support model m with sequence "
                        "batching scheduler"));
}

TEST(ConfigValidationTest, EnsembleSchedulingOnAnOnnxModel) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(ensemble_scheduling { step { model_name: "a" } })pb")),
              HasSubstr("ensemble scheduling cannot be set for model 'm' whose platform is not "
                        "ensemble"));
}

TEST(ConfigValidationTest, DecoupledWithTheResponseCache) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(model_transaction_policy { decoupled: true }
                                     response_cache { enable: true })pb")),
              HasSubstr("with 'decoupled' transaction policy. Please disable the response cache"));
}

TEST(ConfigValidationTest, MetricControlWithoutBuckets) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(model_metrics {
                                       metric_control {
                                         metric_identifier { family: "nv_inference_first_response_histogram_ms" }
                                         histogram_options {}
                                       }
                                     })pb")),
              HasSubstr("histogram options must specify non-empty 'buckets'"));
}

TEST(ConfigValidationTest, BatchInputWithTwoSources) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(batch_input {
                                       kind: BATCH_ELEMENT_COUNT
                                       target_name: "B"
                                       data_type: TYPE_FP32
                                       source_input: [ "INPUT0", "INPUT0" ]
                                     })pb")),
              HasSubstr("batch input kind 'BATCH_ELEMENT_COUNT' expects 1 source input, got 2"));
}

TEST(ConfigValidationTest, BatchInputOfAnotherType) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(batch_input {
                                       kind: BATCH_ELEMENT_COUNT
                                       target_name: "B"
                                       data_type: TYPE_INT64
                                       source_input: "INPUT0"
                                     })pb")),
              HasSubstr("batch input data type must be TYPE_INT32 or TYPE_FP32"));
}

TEST(ConfigValidationTest, BatchInputFromAnUnknownInput) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(batch_input {
                                       kind: BATCH_ELEMENT_COUNT
                                       target_name: "B"
                                       data_type: TYPE_FP32
                                       source_input: "UNKNOWN_INPUT"
                                     })pb")),
              HasSubstr("unknown source input name 'UNKNOWN_INPUT'"));
}

TEST(ConfigValidationTest, BatchOutputTargetNamedTwice) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(batch_output {
                                       kind: BATCH_SCATTER_WITH_INPUT_SHAPE
                                       target_name: [ "OUTPUT0", "OUTPUT0" ]
                                       source_input: "INPUT0"
                                     })pb")),
              HasSubstr("target output name 'OUTPUT0' can only be specified once"));
}

TEST(ConfigValidationTest, BatchOutputToAnUnknownOutput) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(batch_output {
                                       kind: BATCH_SCATTER_WITH_INPUT_SHAPE
                                       target_name: "UNKNOWN_OUTPUT"
                                       source_input: "INPUT0"
                                     })pb")),
              HasSubstr("unknown target output name 'UNKNOWN_OUTPUT'"));
}

TEST(ConfigValidationTest, CpuInstanceGroupListingGpus) {
  // An unnamed group is named as Triton names it: model, underscore, index.
  EXPECT_THAT(Refusal(ValidWith("instance_group { kind: KIND_CPU gpus: [ 0 ] }")),
              HasSubstr("instance group m_0 of model m has kind KIND_CPU but specifies one or "
                        "more GPUs"));
}

TEST(ConfigValidationTest, NegativeGpuIdOnEitherExecutor) {
  const inference::ModelConfig config = ValidWith(R"pb(
    instance_group { gpus: [ 0 ] }
    instance_group { kind: KIND_GPU gpus: [ -1 ] }
  )pb");
  EXPECT_THAT(Refusal(config),
              HasSubstr("instance group m_1 of model m specifies invalid or unsupported gpu id -1"));
  EXPECT_THAT(Refusal(config, {.visible_gpus = 2}), HasSubstr("gpu id -1"));
}

TEST(ConfigValidationTest, GpuIdBeyondTheVisibleGpusOnTheCudaExecutor) {
  const inference::ModelConfig config =
      ValidWith(R"pb(instance_group { name: "big" kind: KIND_GPU gpus: [ 42 ] })pb");
  EXPECT_THAT(Refusal(config, {.visible_gpus = 1}),
              HasSubstr("instance group big of model m specifies invalid or unsupported gpu id 42"));
  // The host executor serves a config written for GPUs (Note [Triton's
  // config rules]).
  EXPECT_TRUE(ValidateModelConfig(config).ok());
}

TEST(ConfigValidationTest, ProfilesAreTensorRTs) {
  EXPECT_THAT(Refusal(ValidWith(R"pb(instance_group { kind: KIND_GPU profile: "0" })pb")),
              HasSubstr("specifies profile field which is only supported for TensorRT models"));
}

// What GraphServe does not do is refused, naming the field and why.
absl::Status Unserved(const std::string& change) {
  const inference::ModelConfig config = ValidWith(change);
  EXPECT_TRUE(ValidateModelConfig(config).ok()) << "a valid config: " << change;
  return RefuseUnservedFeatures(config);
}

TEST(RefuseUnservedFeaturesTest, AValidConfigWithoutThemIsServed) {
  EXPECT_TRUE(RefuseUnservedFeatures(Parse(kValid)).ok());
  EXPECT_TRUE(Unserved("model_transaction_policy { decoupled: false }").ok());
}

TEST(RefuseUnservedFeaturesTest, DecoupledModels) {
  const absl::Status status = Unserved("model_transaction_policy { decoupled: true }");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("decoupled models are not supported: model 'm' sets "
                        "model_transaction_policy { decoupled: true }, but this runtime serves "
                        "ONNX models that answer each request once"));
}

// Served by LoadSequenceModel only (Note [Sequence batching] in
// server/sequence_batcher.h): ServedModel::Load alone would feed no controls.
TEST(RefuseUnservedFeaturesTest, SequenceBatchingOutsideTheSequenceBatcher) {
  const absl::Status status = Unserved(R"pb(sequence_batching {
                                              max_sequence_idle_microseconds: 5000000
                                              control_input {
                                                name: "START"
                                                control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] }
                                              }
                                            })pb");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("model 'm' sets sequence_batching, which only the sequence batcher "
                        "serves (LoadSequenceModel)"));
}

TEST(RefuseUnservedFeaturesTest, BatchInputs) {
  const absl::Status status = Unserved(R"pb(batch_input {
                                              kind: BATCH_ELEMENT_COUNT
                                              target_name: "B"
                                              data_type: TYPE_FP32
                                              source_input: "INPUT0"
                                            })pb");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("batch inputs and batch outputs are not supported: model 'm' sets "
                        "batch_input"));
}

}  // namespace
}  // namespace graphserve
