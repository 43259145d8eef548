#include "server/sequence_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Control = inference::ModelSequenceBatching::Control;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

std::string ConfigText(const std::string& batcher, int max_batch_size) {
  return "name: \"seq\" max_batch_size: " + std::to_string(max_batch_size) +
         " input { name: \"INPUT\" data_type: TYPE_INT32 dims: [ 1 ] }"
         " output { name: \"OUTPUT\" data_type: TYPE_INT32 dims: [ 1 ] }"
         " sequence_batching { " +
         batcher + " }";
}

// A sequence model of Triton's QA (gen_qa_sequence_models.py's controls) with
// `batcher` as its sequence_batching body.
inference::ModelConfig Model(const std::string& batcher, int max_batch_size = 8) {
  return Parse(ConfigText(batcher, max_batch_size));
}

constexpr char kControls[] = R"pb(
  control_input { name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } }
  control_input { name: "END" control { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] } }
  control_input { name: "READY" control { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } }
  control_input { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
)pb";

template <typename T>
T As(const std::vector<std::byte>& bytes) {
  T value{};
  EXPECT_EQ(bytes.size(), sizeof(T));
  std::memcpy(&value, bytes.data(), sizeof(T));
  return value;
}

TEST(PlanSequenceBatchingTest, ControlsWithTheirValues) {
  inference::ModelConfig config = Model(kControls);
  NormalizeSequenceBatching(&config);
  EXPECT_EQ(config.sequence_batching().max_sequence_idle_microseconds(), 1000000u);
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, SequenceStrategy::kDirect);
  EXPECT_EQ(plan->slots_per_instance, 8);  // max_batch_size
  EXPECT_EQ(plan->max_idle, std::chrono::seconds(1));
  const SequenceControl* start = plan->Find(Control::CONTROL_SEQUENCE_START);
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->dtype, DType::kInt32);
  EXPECT_EQ(As<int32_t>(start->true_value), 1);
  EXPECT_EQ(As<int32_t>(start->false_value), 0);
  const SequenceControl* end = plan->Find(Control::CONTROL_SEQUENCE_END);
  EXPECT_EQ(end->dtype, DType::kFloat32);
  EXPECT_EQ(As<float>(end->true_value), 1.0f);
  const SequenceControl* ready = plan->Find(Control::CONTROL_SEQUENCE_READY);
  EXPECT_EQ(ready->dtype, DType::kBool);
  EXPECT_EQ(As<uint8_t>(ready->true_value), 1);
  EXPECT_EQ(plan->Find(Control::CONTROL_SEQUENCE_CORRID)->dtype, DType::kUInt64);
  EXPECT_TRUE(plan->IsBatcherInput("CORRID"));
  EXPECT_FALSE(plan->IsBatcherInput("INPUT"));
}

TEST(PlanSequenceBatchingTest, OldestHoldsItsCandidates) {
  inference::ModelConfig config =
      Model(std::string(kControls) + "oldest { max_candidate_sequences: 32 }");
  NormalizeSequenceBatching(&config);
  EXPECT_THAT(config.sequence_batching().oldest().preferred_batch_size(), ElementsAre(8));
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->strategy, SequenceStrategy::kOldest);
  EXPECT_EQ(plan->slots_per_instance, 32);
}

TEST(PlanSequenceBatchingTest, AModelThatDoesNotBatchHasOneSlot) {
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(Model(kControls, 0), "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->slots_per_instance, 1);
  EXPECT_FALSE(plan->batching);
}

TEST(PlanSequenceBatchingTest, StatesStartAtZerosOrTheirInitialState) {
  const std::filesystem::path model =
      std::filesystem::path(testing::TempDir()) / "seq_initial_state";
  std::filesystem::create_directories(model / "initial_state");
  const std::vector<int32_t> data = {7, -3};
  {
    std::ofstream file(model / "initial_state" / "two", std::ios::binary);
    file.write(reinterpret_cast<const char*>(data.data()), sizeof(int32_t) * data.size());
  }
  const inference::ModelConfig config = Model(std::string(kControls) + R"pb(
    state { input_name: "A_IN" output_name: "A_OUT" data_type: TYPE_INT32 dims: [ 2 ] }
    state {
      input_name: "B_IN" output_name: "B_OUT" data_type: TYPE_INT32 dims: [ 2 ]
      initial_state { data_type: TYPE_INT32 dims: [ 2 ] data_file: "two" name: "b" }
    }
    state {
      input_name: "C_IN" output_name: "C_OUT" data_type: TYPE_FP32 dims: [ 3 ]
      initial_state { data_type: TYPE_FP32 dims: [ 3 ] zero_data: true name: "c" }
    })pb");
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, model.string());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->states.size(), 3u);
  EXPECT_EQ(plan->states[0].initial, std::vector<std::byte>(8));
  std::vector<int32_t> b(2);
  std::memcpy(b.data(), plan->states[1].initial.data(), 8);
  EXPECT_THAT(b, ElementsAre(7, -3));
  EXPECT_EQ(plan->states[2].bytes_per_row(), 12u);
  EXPECT_EQ(plan->states[2].initial, std::vector<std::byte>(12));
}

// Triton's words (core's GenerateInitialStateData).
TEST(PlanSequenceBatchingTest, TritonsInitialStateErrors) {
  const auto refusal = [](const std::string& state) {
    return std::string(PlanSequenceBatching(Model(state), "").status().message());
  };
  EXPECT_EQ(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ]
                             initial_state { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true
                                             name: "s" } })pb"),
            "The data type used for 'initial_state' field of state 'S' does not match the state "
            "data type.");
  EXPECT_EQ(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ]
                             initial_state { data_type: TYPE_INT32 dims: [ 2 ] zero_data: true } })pb"),
            "Field 'name' must be set when using initial_state for state input 'S'.");
  EXPECT_EQ(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ]
                             initial_state { data_type: TYPE_INT32 dims: [ 3 ] zero_data: true
                                             name: "s" } })pb"),
            "'initial_state' dim for input name 'S' doesn't match 'state' dim description. 3 != "
            "2");
  EXPECT_EQ(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32 dims: [ 2 ] }
                         state { input_name: "S" output_name: "U" data_type: TYPE_INT32 dims: [ 2 ] })pb"),
            "State input name 'S' specified more than once.");
}

TEST(PlanSequenceBatchingTest, WhatIsNotServedIsRefusedSayingWhy) {
  const auto refusal = [](const std::string& batcher) {
    const absl::Status status = PlanSequenceBatching(Model(batcher), "").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented) << batcher;
    return std::string(status.message());
  };
  EXPECT_THAT(refusal("iterative_sequence: true"), HasSubstr("iterative_sequence"));
  EXPECT_THAT(refusal("direct { minimum_slot_utilization: 0.5 }"),
              HasSubstr("minimum_slot_utilization 0.5"));
  EXPECT_THAT(refusal(R"pb(control_input { name: "C" control {
                             kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } })pb"),
              HasSubstr("CORRID control 'C' of TYPE_STRING"));
  EXPECT_THAT(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32
                                   dims: [ -1 ] })pb"),
              HasSubstr("state 'S' has dims [-1]"));
  EXPECT_THAT(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_INT32
                                   dims: [ 1 ] use_growable_memory: true })pb"),
              HasSubstr("use_growable_memory"));
  EXPECT_THAT(refusal(R"pb(state { input_name: "S" output_name: "T" data_type: TYPE_STRING
                                   dims: [ 1 ] })pb"),
              HasSubstr("TYPE_STRING"));
}

TEST(ExecutionConfigTest, ControlsAndStatesBecomeTensors) {
  inference::ModelConfig config = Model(std::string(kControls) + R"pb(
    direct { max_queue_delay_microseconds: 300 }
    state { input_name: "S_IN" output_name: "S_OUT" data_type: TYPE_FP32 dims: [ 4 ] })pb");
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const inference::ModelConfig execution = ExecutionConfig(config, *plan);
  EXPECT_FALSE(execution.has_sequence_batching());
  std::vector<std::string> inputs;
  for (const inference::ModelInput& input : execution.input()) inputs.push_back(input.name());
  EXPECT_THAT(inputs, ElementsAre("INPUT", "START", "END", "READY", "CORRID", "S_IN"));
  EXPECT_EQ(execution.input(4).data_type(), inference::TYPE_UINT64);
  EXPECT_THAT(execution.input(4).dims(), ElementsAre(1));
  EXPECT_EQ(execution.input(2).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(execution.input(3).data_type(), inference::TYPE_BOOL);
  EXPECT_THAT(execution.input(5).dims(), ElementsAre(4));
  ASSERT_EQ(execution.output_size(), 2);
  EXPECT_EQ(execution.output(1).name(), "S_OUT");
  // Direct waits for nothing (minimum_slot_utilization 0).
  EXPECT_EQ(execution.dynamic_batching().max_queue_delay_microseconds(), 0u);
}

TEST(ExecutionConfigTest, OldestWaitsItsDelayForItsPreferredSizes) {
  inference::ModelConfig config = Model(std::string(kControls) + R"pb(
    oldest { max_candidate_sequences: 4 max_queue_delay_microseconds: 250
             preferred_batch_size: [ 2, 4 ] })pb");
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const inference::ModelConfig execution = ExecutionConfig(config, *plan);
  EXPECT_EQ(execution.dynamic_batching().max_queue_delay_microseconds(), 250u);
  EXPECT_THAT(execution.dynamic_batching().preferred_batch_size(), ElementsAre(2, 4));
}

TEST(ExecutionConfigTest, ADeclaredStateOutputIsKeptOnce) {
  inference::ModelConfig config = Model(R"pb(
    state { input_name: "S_IN" output_name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] })pb");
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(ExecutionConfig(config, *plan).output_size(), 1);
}

TEST(ExecutionConfigTest, AModelThatDoesNotBatchGetsNoQueueDelay) {
  inference::ModelConfig config = Model(kControls, 0);
  absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(ExecutionConfig(config, *plan).has_dynamic_batching());
}

}  // namespace
}  // namespace graphserve
