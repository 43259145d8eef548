#include "proto/model_config.pb.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "proto/wire_fields.h"

namespace graphserve {
namespace {

using ::inference::ModelConfig;
using ::testing::ElementsAre;

// A config.pbtxt as a user writes it for a batching MLP: Triton's fields, in
// both list styles the text format allows, and our capture section.
constexpr char kMlpConfig[] = R"pb(
  name: "mlp"
  backend: "graphserve"
  max_batch_size: 64
  version_policy: { latest { num_versions: 2 } } input
  [ {
    name: "features"
    data_type: TYPE_FP32
    dims: [ 128 ]
  }
    , {
      name: "mask"
      data_type: TYPE_BOOL
      dims: [ -1 ]
      optional: true
    }]
  output {
    name: "scores"
    data_type: TYPE_FP32
    dims: [ 10 ]
    label_filename: "labels.txt"
  } instance_group
  [ {
    kind: KIND_GPU
    count: 1
    gpus: [ 0, 1 ]
  }]
  dynamic_batching {
    preferred_batch_size: [ 8, 32 ]
    max_queue_delay_microseconds: 200
  }
  parameters {
    key: "allow_tf32"
    value: { string_value: "false" }
  }
  capture {
    batch_sizes: [ 1, 2, 4, 8, 16, 32, 64 ]
    streams: 2
    cost { batch_size: 1 eager_us: 48.5 graph_us: 11.25 }
    cost { batch_size: 64 eager_us: 95 graph_us: 60.5 }
  }
)pb";

ModelConfig ParseOrDie(const std::string& text) {
  ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

TEST(ModelConfigTest, ParsesAUserWrittenConfig) {
  const ModelConfig config = ParseOrDie(kMlpConfig);

  EXPECT_EQ(config.name(), "mlp");
  EXPECT_EQ(config.backend(), "graphserve");
  EXPECT_EQ(config.max_batch_size(), 64);
  ASSERT_TRUE(config.version_policy().has_latest());
  EXPECT_EQ(config.version_policy().latest().num_versions(), 2u);

  ASSERT_EQ(config.input_size(), 2);
  EXPECT_EQ(config.input(0).name(), "features");
  EXPECT_EQ(config.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(config.input(0).dims(), ElementsAre(128));
  EXPECT_FALSE(config.input(0).optional());
  EXPECT_EQ(config.input(1).data_type(), inference::TYPE_BOOL);
  EXPECT_THAT(config.input(1).dims(), ElementsAre(-1));
  EXPECT_TRUE(config.input(1).optional());

  ASSERT_EQ(config.output_size(), 1);
  EXPECT_EQ(config.output(0).name(), "scores");
  EXPECT_THAT(config.output(0).dims(), ElementsAre(10));
  EXPECT_EQ(config.output(0).label_filename(), "labels.txt");

  ASSERT_EQ(config.instance_group_size(), 1);
  EXPECT_EQ(config.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_GPU);
  EXPECT_THAT(config.instance_group(0).gpus(), ElementsAre(0, 1));
  EXPECT_THAT(config.dynamic_batching().preferred_batch_size(), ElementsAre(8, 32));
  EXPECT_EQ(config.dynamic_batching().max_queue_delay_microseconds(), 200u);
  EXPECT_EQ(config.parameters().at("allow_tf32").string_value(), "false");

  ASSERT_TRUE(config.has_capture());
  const inference::ModelCapture& capture = config.capture();
  EXPECT_THAT(capture.batch_sizes(), ElementsAre(1, 2, 4, 8, 16, 32, 64));
  EXPECT_EQ(capture.streams(), 2);
  EXPECT_FALSE(capture.graphs_disabled());
  ASSERT_EQ(capture.cost_size(), 2);
  EXPECT_EQ(capture.cost(0).batch_size(), 1);
  EXPECT_EQ(capture.cost(0).eager_us(), 48.5);
  EXPECT_EQ(capture.cost(0).graph_us(), 11.25);
  EXPECT_EQ(capture.cost(1).batch_size(), 64);
  EXPECT_EQ(capture.cost(1).eager_us(), 95.0);
}

TEST(ModelConfigTest, GraphsAreOnUnlessDisabled) {
  // No capture section at all, an empty one, and an explicit opt-out.
  EXPECT_FALSE(ParseOrDie(R"pb(name: "a")pb").capture().graphs_disabled());
  EXPECT_FALSE(ParseOrDie(R"pb(name: "a"
                               capture {})pb")
                   .capture()
                   .graphs_disabled());
  EXPECT_TRUE(ParseOrDie(R"pb(name: "a"
                              capture { graphs_disabled: true })pb")
                  .capture()
                  .graphs_disabled());
}

// A config written for Triton's onnxruntime backend, with a field of every
// kind Triton's schema has, parses unchanged.
TEST(ModelConfigTest, ParsesATritonConfigWithEveryField) {
  const ModelConfig config = ParseOrDie(R"pb(
    name: "resnet"
    platform: "onnxruntime_onnx"
    backend: "onnxruntime"
    runtime: "libtriton_onnxruntime.so"
    max_batch_size: 8
    version_policy { specific { versions: [1, 3] } }
    input {
      name: "x"
      data_type: TYPE_FP32
      format: FORMAT_NCHW
      dims: [3, 224, 224]
      reshape { shape: [3, 224, 224] }
      is_non_linear_format_io: false
    }
    output { name: "y" data_type: TYPE_FP32 dims: [1000] reshape { shape: [1000] } }
    batch_input { kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_INT32 source_input: "x" }
    batch_output { target_name: "y" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "x" }
    instance_group {
      count: 2
      kind: KIND_GPU
      gpus: [0]
      profile: "0"
      passive: false
      host_policy: "gpu_0"
      rate_limiter { resources { name: "r" global: true count: 1 } priority: 2 }
      secondary_devices { kind: KIND_NVDLA device_id: 0 }
    }
    dynamic_batching {
      preferred_batch_size: [4, 8]
      max_queue_delay_microseconds: 100
      priority_levels: 2
      default_priority_level: 1
      default_queue_policy { timeout_action: REJECT default_timeout_microseconds: 1000 max_queue_size: 64 }
      priority_queue_policy { key: 1 value { timeout_action: DELAY allow_timeout_override: true } }
    }
    optimization {
      graph { level: 1 }
      priority: PRIORITY_MAX
      cuda {
        graphs: true
        busy_wait_events: true
        output_copy_stream: true
        graph_spec { batch_size: 1 input { key: "x" value { dim: [3, 224, 224] } } }
        graph_spec { batch_size: 4 graph_lower_bound { batch_size: 2 } }
      }
      execution_accelerators { gpu_execution_accelerator { name: "tensorrt" parameters { key: "precision_mode" value: "FP16" } } }
      input_pinned_memory { enable: true }
      output_pinned_memory { enable: false }
      gather_kernel_buffer_threshold: 2
      eager_batching: true
    }
    default_model_filename: "model.onnx"
    cc_model_filenames { key: "9.0" value: "model_sm90.onnx" }
    metric_tags { key: "team" value: "search" }
    parameters { key: "k" value { string_value: "v" } }
    model_warmup { name: "w" batch_size: 1 count: 2 inputs { key: "x" value { data_type: TYPE_FP32 dims: [3, 224, 224] zero_data: true } } }
    model_operations { op_library_filename: "libops.so" }
    model_transaction_policy { decoupled: false }
    model_repository_agents { agents { name: "checksum" parameters { key: "a" value: "b" } } }
    response_cache { enable: true }
    model_metrics { metric_control { metric_identifier { family: "nv_inference_first_response_histogram_ms" } histogram_options { buckets: [1, 10] } } }
  )pb");
  EXPECT_EQ(config.platform(), "onnxruntime_onnx");
  EXPECT_TRUE(config.optimization().cuda().has_graphs());
  EXPECT_TRUE(config.optimization().cuda().graphs());
  ASSERT_EQ(config.optimization().cuda().graph_spec_size(), 2);
  EXPECT_EQ(config.optimization().cuda().graph_spec(1).batch_size(), 4);
  EXPECT_EQ(config.dynamic_batching().default_queue_policy().max_queue_size(), 64u);
  EXPECT_EQ(config.scheduling_choice_case(), ModelConfig::kDynamicBatching);
  EXPECT_EQ(config.instance_group(0).rate_limiter().priority(), 2u);
  EXPECT_EQ(config.model_metrics().metric_control(0).histogram_options().buckets_size(), 2);

  // The other scheduling choices are members of the same oneof.
  const ModelConfig sequence =
      ParseOrDie(R"pb(sequence_batching { oldest { max_candidate_sequences: 4 } })pb");
  EXPECT_EQ(sequence.scheduling_choice_case(), ModelConfig::kSequenceBatching);
  const ModelConfig ensemble =
      ParseOrDie(R"pb(ensemble_scheduling { step { model_name: "a" model_version: -1 } })pb");
  EXPECT_EQ(ensemble.scheduling_choice_case(), ModelConfig::kEnsembleScheduling);
  // `graphs` remembers whether it was written, which proto3 otherwise cannot.
  EXPECT_FALSE(ParseOrDie(R"pb(optimization { cuda {} })pb").optimization().cuda().has_graphs());
  EXPECT_TRUE(ParseOrDie(R"pb(optimization { cuda { graphs: false } })pb")
                  .optimization()
                  .cuda()
                  .has_graphs());
}

// The fields Triton added beyond the ones GraphServe uses travel under
// Triton's numbers too.
TEST(ModelConfigTest, TritonsOtherFieldsUseItsNumbersOnTheWire) {
  ModelConfig config;
  (*config.mutable_cc_model_filenames())["9.0"] = "a";                       // 9
  (*config.mutable_metric_tags())["k"] = "v";                               // 10
  config.mutable_optimization()->mutable_cuda()->set_graphs(false);         // 12
  config.add_model_warmup()->set_name("w");                                 // 16
  config.mutable_model_operations()->add_op_library_filename("x.so");       // 18
  config.add_batch_input()->add_target_name("n");                           // 20
  config.add_batch_output()->add_target_name("y");                          // 21
  config.mutable_model_repository_agents()->add_agents()->set_name("a");    // 23
  config.mutable_response_cache()->set_enable(true);                        // 24
  config.set_runtime("lib.so");                                             // 25
  config.mutable_model_metrics()->add_metric_control();                     // 26
  std::string bytes;
  ASSERT_TRUE(config.SerializeToString(&bytes));
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(9, 10, 12, 16, 18, 20, 21, 23, 24, 25, 26));
  // optimization.cuda (3) holds graphs (1), written although false.
  absl::StatusOr<std::vector<WireField>> optimization = DecodeWireFields((*fields)[2].payload);
  ASSERT_TRUE(optimization.ok()) << optimization.status();
  EXPECT_THAT(FieldNumbers(*optimization), ElementsAre(3));
  absl::StatusOr<std::vector<WireField>> cuda = DecodeWireFields((*optimization)[0].payload);
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_THAT(FieldNumbers(*cuda), ElementsAre(1));
  EXPECT_EQ((*cuda)[0].value, 0u);

  for (const auto& [message, number] :
       std::vector<std::pair<const google::protobuf::Descriptor*, int>>{
           {inference::ModelInput::descriptor(), 9},
           {inference::ModelOutput::descriptor(), 7},
           {inference::ModelInstanceGroup::descriptor(), 9},
           {inference::ModelDynamicBatching::descriptor(), 7}}) {
    EXPECT_NE(message->FindFieldByNumber(number), nullptr)
        << message->name() << " field " << number;
  }
}

TEST(ModelConfigTest, RejectsMisspeltFields) {
  // "stream" for "streams": a typo must fail the load, not be ignored.
  ModelConfig config;
  EXPECT_FALSE(
      google::protobuf::TextFormat::ParseFromString(R"pb(capture { stream: 2 })pb", &config));
  EXPECT_FALSE(
      google::protobuf::TextFormat::ParseFromString(R"pb(input { data_type: FP32 })pb", &config));
}

// Triton's DataType numbers (model_config.proto); clients decode the enum by
// number in ModelConfig answers, and users write the names in config.pbtxt.
TEST(ModelConfigTest, DataTypesHaveTritonsNumbers) {
  const std::vector<std::pair<std::string, int>> triton = {
      {"TYPE_INVALID", 0}, {"TYPE_BOOL", 1},    {"TYPE_UINT8", 2}, {"TYPE_UINT16", 3},
      {"TYPE_UINT32", 4},  {"TYPE_UINT64", 5},  {"TYPE_INT8", 6},  {"TYPE_INT16", 7},
      {"TYPE_INT32", 8},   {"TYPE_INT64", 9},   {"TYPE_FP16", 10}, {"TYPE_FP32", 11},
      {"TYPE_FP64", 12},   {"TYPE_STRING", 13}, {"TYPE_BF16", 14},
  };
  for (const auto& [name, number] : triton) {
    inference::DataType parsed = inference::TYPE_INVALID;
    ASSERT_TRUE(inference::DataType_Parse(name, &parsed)) << name;
    EXPECT_EQ(static_cast<int>(parsed), number) << name;
  }
  // No values beyond Triton's: a value only we had would reach clients as an
  // unknown number.
  EXPECT_EQ(inference::DataType_descriptor()->value_count(), static_cast<int>(triton.size()));
}

// Field numbers of Triton's ModelConfig, ModelInput and ModelOutput, checked
// on the wire so that Triton's clients decode our ModelConfig answers.
TEST(ModelConfigTest, UsesTritonsFieldNumbersOnTheWire) {
  ModelConfig config;
  config.set_name("mlp");                                          // 1
  config.set_platform("graphserve_onnx");                          // 2
  config.mutable_version_policy()->mutable_all();                  // 3
  config.set_max_batch_size(8);                                    // 4
  config.add_input()->set_name("x");                               // 5
  config.add_output()->set_name("y");                              // 6
  config.add_instance_group()->set_count(2);                       // 7
  config.set_default_model_filename("model.onnx");                 // 8
  config.mutable_dynamic_batching()->set_preserve_ordering(true);  // 11
  (*config.mutable_parameters())["k"].set_string_value("v");       // 14
  config.set_backend("graphserve");                                // 17
  config.mutable_model_transaction_policy()->set_decoupled(true);  // 19
  config.mutable_capture()->set_streams(2);                        // ours: 1000

  std::string bytes;
  ASSERT_TRUE(config.SerializeToString(&bytes));
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 11, 14, 17, 19, 1000));
  EXPECT_EQ((*fields)[3].wire_type, WireType::kVarint);
  EXPECT_EQ((*fields)[3].value, 8u);

  // Inside the version policy: `all` is member 2 of the oneof.
  absl::StatusOr<std::vector<WireField>> policy = DecodeWireFields((*fields)[2].payload);
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_THAT(FieldNumbers(*policy), ElementsAre(2));
}

TEST(ModelConfigTest, TensorsUseTritonsFieldNumbersOnTheWire) {
  inference::ModelInput input;
  input.set_name("x");                                   // 1
  input.set_data_type(inference::TYPE_INT64);            // 2
  input.set_format(inference::ModelInput::FORMAT_NCHW);  // 3
  input.add_dims(3);                                     // 4, packed
  input.add_dims(-1);
  input.set_is_shape_tensor(true);     // 6
  input.set_allow_ragged_batch(true);  // 7
  input.set_optional(true);            // 8
  std::string bytes;
  ASSERT_TRUE(input.SerializeToString(&bytes));
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(1, 2, 3, 4, 6, 7, 8));
  EXPECT_EQ((*fields)[1].value, 9u);                  // TYPE_INT64
  EXPECT_EQ((*fields)[2].value, 2u);                  // FORMAT_NCHW
  EXPECT_EQ((*fields)[3].wire_type, WireType::kLen);  // proto3 packs repeated scalars

  inference::ModelOutput output;
  output.set_name("y");                        // 1
  output.set_data_type(inference::TYPE_FP16);  // 2
  output.add_dims(4);                          // 3
  output.set_label_filename("labels.txt");     // 4
  output.set_is_shape_tensor(true);            // 6
  ASSERT_TRUE(output.SerializeToString(&bytes));
  fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(1, 2, 3, 4, 6));
  EXPECT_EQ((*fields)[1].value, 10u);  // TYPE_FP16
}

TEST(ModelConfigTest, CaptureCostRoundTripsThroughTheWire) {
  inference::ModelCapture capture;
  capture.add_batch_sizes(4);
  capture.set_streams(3);
  inference::CaptureCost* cost = capture.add_cost();
  cost->set_batch_size(4);
  cost->set_eager_us(30.0);
  cost->set_graph_us(7.5);
  capture.set_graphs_disabled(true);

  std::string bytes;
  ASSERT_TRUE(capture.SerializeToString(&bytes));
  absl::StatusOr<std::vector<WireField>> fields = DecodeWireFields(bytes);
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_THAT(FieldNumbers(*fields), ElementsAre(1, 2, 3, 4));

  absl::StatusOr<std::vector<WireField>> cost_fields = DecodeWireFields((*fields)[2].payload);
  ASSERT_TRUE(cost_fields.ok()) << cost_fields.status();
  ASSERT_THAT(FieldNumbers(*cost_fields), ElementsAre(1, 2, 3));
  EXPECT_EQ((*cost_fields)[1].wire_type, WireType::kI64);   // a double
  EXPECT_EQ((*cost_fields)[1].value, 0x403E000000000000u);  // 30.0 in IEEE 754

  inference::ModelCapture decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  EXPECT_EQ(decoded.cost(0).graph_us(), 7.5);
  EXPECT_TRUE(decoded.graphs_disabled());
}

}  // namespace
}  // namespace graphserve
