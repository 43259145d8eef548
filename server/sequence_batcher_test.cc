#include "server/sequence_batcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/cuda_handles.h"
#include "google/protobuf/text_format.h"
#include "server/shared_memory.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMaxBatch = 2;  // two sequences per instance (direct)

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// Triton's QA accumulator (gen_qa_implicit_models.py), with every control:
// OUTPUT = INPUT + (START ? 0 : STATE), the new STATE the same.
constexpr char kAccumulator[] = R"pb(
  name: "acc"
  max_batch_size: 2
  input { name: "INPUT" data_type: TYPE_INT32 dims: [ 1 ] }
  output { name: "OUTPUT" data_type: TYPE_INT32 dims: [ 1 ] }
  sequence_batching {
    max_sequence_idle_microseconds: 5000000
    control_input { name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } }
    control_input { name: "END" control { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] } }
    control_input { name: "READY" control { kind: CONTROL_SEQUENCE_READY bool_false_true: [ false, true ] } }
    control_input { name: "CORRID" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } }
    state { input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_INT32 dims: [ 1 ] }
  }
)pb";

// What one execution request carried, as the model read it.
struct Seen {
  int32_t input = 0;
  int32_t start = 0;
  float end = 0;
  uint8_t ready = 0;
  uint64_t corrid = 0;
  int32_t state = 0;
};

// Input `name` carried in the message; T{} for a control the plan does not
// have or an input in shared memory. raw_input_contents holds the inputs in
// the message only, in order (as request validation reads them).
template <typename T>
T Read(const inference::ModelInferRequest& request, const std::string& name) {
  int raw = 0;
  for (const auto& input : request.inputs()) {
    if (input.parameters().contains("shared_memory_region")) continue;
    const std::string& bytes = request.raw_input_contents(raw++);
    if (input.name() != name) continue;
    T value{};
    EXPECT_EQ(bytes.size(), sizeof(T)) << name;
    std::memcpy(&value, bytes.data(), sizeof(T));
    return value;
  }
  return T{};
}

void AddOutput(inference::ModelInferResponse* response, const std::string& name, int32_t value) {
  inference::ModelInferResponse::InferOutputTensor* output = response->add_outputs();
  output->set_name(name);
  output->set_datatype("INT32");
  output->add_shape(1);
  output->add_shape(1);
  response->add_raw_output_contents(std::string(reinterpret_cast<const char*>(&value), 4));
}

// The row a tensor's shared-memory parameters name, as the execution's
// validation finds it; nullopt for a tensor carried in the message.
std::optional<SharedMemorySlice> SliceOf(
    const google::protobuf::Map<std::string, inference::InferParameter>& parameters,
    const SharedMemoryRegistry* shared_memory) {
  const auto region = parameters.find("shared_memory_region");
  if (region == parameters.end()) return std::nullopt;
  EXPECT_NE(shared_memory, nullptr);
  absl::StatusOr<SharedMemorySlice> slice =
      shared_memory->Slice(region->second.string_param(),
                           parameters.at("shared_memory_offset").int64_param(),
                           parameters.at("shared_memory_byte_size").int64_param());
  EXPECT_TRUE(slice.ok()) << slice.status();
  return slice.ok() ? std::optional<SharedMemorySlice>(*slice) : std::nullopt;
}

// The accumulator as the execution: runs each request at once, or holds it
// until the test releases it (`hold`). A state named in a shared-memory
// region is read from and written to it, as the runner does for a CUDA
// region.
class FakeModel {
 public:
  SequenceExecute Execute() {
    return [this](const inference::ModelInferRequest* request,
                  inference::ModelInferResponse* response,
                  std::function<void(const absl::Status&)> done,
                  const SharedMemoryRegistry* shared_memory, ChunkTiming*) {
      Seen seen{Read<int32_t>(*request, "INPUT"), Read<int32_t>(*request, "START"),
                Read<float>(*request, "END"),     Read<uint8_t>(*request, "READY"),
                Read<uint64_t>(*request, "CORRID"), Read<int32_t>(*request, "STATE_IN")};
      std::optional<SharedMemorySlice> state_out;
      for (const auto& input : request->inputs()) {
        if (input.name() != "STATE_IN") continue;
        if (std::optional<SharedMemorySlice> row = SliceOf(input.parameters(), shared_memory)) {
          EXPECT_TRUE(CopyFromSlice(*row, reinterpret_cast<std::byte*>(&seen.state)).ok());
        }
      }
      for (const auto& output : request->outputs()) {
        if (output.name() == "STATE_OUT") state_out = SliceOf(output.parameters(), shared_memory);
      }
      auto run = [seen, state_out, response, done = std::move(done)] {
        const int32_t sum = seen.input + (seen.start != 0 ? 0 : seen.state);
        AddOutput(response, "OUTPUT", sum);
        if (state_out.has_value()) {
          EXPECT_TRUE(
              CopyIntoSlice(*state_out, reinterpret_cast<const std::byte*>(&sum), sizeof(sum)).ok());
        } else {
          AddOutput(response, "STATE_OUT", sum);
        }
        done(absl::OkStatus());
      };
      bool now = false;
      {
        absl::MutexLock lock(&mu_);
        seen_.push_back(seen);
        now = !hold_;
        if (!now) held_.push_back(std::move(run));
      }
      if (now) run();
    };
  }
  void Hold(bool hold) {
    absl::MutexLock lock(&mu_);
    hold_ = hold;
  }
  // Runs the oldest held execution; false when none is held.
  bool ReleaseOne() {
    std::function<void()> run;
    {
      absl::MutexLock lock(&mu_);
      if (held_.empty()) return false;
      run = std::move(held_.front());
      held_.pop_front();
    }
    run();
    return true;
  }
  size_t held() {
    absl::MutexLock lock(&mu_);
    return held_.size();
  }
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  absl::Mutex mu_;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> held_ ABSL_GUARDED_BY(mu_);
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
};

ModelInterface ClientInterface() {
  ModelInterface interface;
  interface.name = "acc";
  interface.max_batch_size = kMaxBatch;
  interface.inputs.push_back({.name = "INPUT", .dtype = DType::kInt32, .dims = {1}});
  interface.outputs.push_back({.name = "OUTPUT", .dtype = DType::kInt32, .dims = {1}});
  return interface;
}

// One client request and its answer.
struct Call {
  inference::ModelInferRequest request;
  inference::ModelInferResponse response;
  std::optional<absl::Status> status;
  // Set after `status`: a request answered on another thread (the reaper's)
  // is read once this is seen.
  std::atomic<bool> answered{false};

  int32_t output() const {
    int32_t value = 0;
    EXPECT_EQ(response.raw_output_contents_size(), 1);
    if (response.raw_output_contents_size() == 1) {
      std::memcpy(&value, response.raw_output_contents(0).data(), 4);
    }
    return value;
  }
};

class SequenceBatcherTest : public ::testing::Test {
 protected:
  void Make(const inference::ModelConfig& config = Parse(kAccumulator),
            std::chrono::milliseconds reaper = std::chrono::milliseconds(5),
            std::optional<DeviceStates> device_states = std::nullopt) {
    absl::StatusOr<SequencePlan> plan = PlanSequenceBatching(config, "");
    ASSERT_TRUE(plan.ok()) << plan.status();
    SequenceBatcherOptions options;
    options.interface = ClientInterface();
    options.version_text = "1";
    options.plan = *plan;
    options.instances = 1;
    options.execute = model_.Execute();
    options.counters = &counters_;
    options.reaper_period = reaper;
    options.device_states = std::move(device_states);
    batcher_ = std::make_unique<SequenceBatcher>(std::move(options));
  }

  // Sequences 1 (100, 10, -1) and 2 (1, 2) interleaved: each sums its own.
  void SendInterleavedSequences() {
    Send(uint64_t{1}, 100, true, false);
    Send(uint64_t{2}, 1, true, false);
    Call* a = Send(uint64_t{1}, 10, false, false);
    Call* b = Send(uint64_t{2}, 2, false, true);
    Call* c = Send(uint64_t{1}, -1, false, true);
    EXPECT_EQ(a->output(), 110);
    EXPECT_EQ(b->output(), 3);
    EXPECT_EQ(c->output(), 109);
  }

  // Sends INPUT `value` for sequence `id` (a uint64 or a string).
  Call* Send(const CorrelationId& id, int32_t value, bool start, bool end, int64_t rows = 1,
             uint64_t timeout_us = 0) {
    calls_.push_back(std::make_unique<Call>());
    Call* call = calls_.back().get();
    inference::ModelInferRequest& request = call->request;
    request.set_model_name("acc");
    auto* input = request.add_inputs();
    input->set_name("INPUT");
    input->set_datatype("INT32");
    input->add_shape(rows);
    input->add_shape(1);
    std::string bytes;
    for (int64_t r = 0; r < rows; ++r) bytes.append(reinterpret_cast<const char*>(&value), 4);
    request.add_raw_input_contents(bytes);
    auto& parameters = *request.mutable_parameters();
    if (const uint64_t* number = std::get_if<uint64_t>(&id)) {
      if (*number != 0) parameters["sequence_id"].set_uint64_param(*number);
    } else {
      parameters["sequence_id"].set_string_param(std::get<std::string>(id));
    }
    if (start) parameters["sequence_start"].set_bool_param(true);
    if (end) parameters["sequence_end"].set_bool_param(true);
    if (timeout_us > 0) parameters["timeout"].set_uint64_param(timeout_us);
    batcher_->Infer(&call->request, &call->response,
                    [call](const absl::Status& status) {
                      call->status = status;
                      call->answered.store(true, std::memory_order_release);
                    },
                    nullptr);
    return call;
  }

  FakeModel model_;
  ModelCounters counters_{{1}, kMaxBatch, 1};
  std::vector<std::unique_ptr<Call>> calls_;
  std::unique_ptr<SequenceBatcher> batcher_;  // destroyed first
};

TEST_F(SequenceBatcherTest, ControlsAndStateFollowTheSequence) {
  Make();
  constexpr uint64_t kId = 0x1'0000'0007;  // above 32 bits: CORRID carries all 64
  const std::vector<int32_t> values = {5, 3, 2};
  std::vector<int32_t> outputs;
  for (size_t i = 0; i < values.size(); ++i) {
    Call* call = Send(kId, values[i], i == 0, i + 1 == values.size());
    ASSERT_TRUE(call->status.has_value());
    ASSERT_TRUE(call->status->ok()) << *call->status;
    outputs.push_back(call->output());
  }
  EXPECT_THAT(outputs, ElementsAre(5, 8, 10));  // running sums
  const std::vector<Seen> seen = model_.seen();
  ASSERT_EQ(seen.size(), 3u);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].start, i == 0 ? 1 : 0) << i;
    EXPECT_EQ(seen[i].end, i == 2 ? 1.0f : 0.0f) << i;
    EXPECT_EQ(seen[i].ready, 1) << i;
    EXPECT_EQ(seen[i].corrid, kId) << i;
  }
  EXPECT_EQ(seen[1].state, 5);  // the first request's state output
  EXPECT_EQ(batcher_->active_sequences(), 0);  // END freed the slot
}

TEST_F(SequenceBatcherTest, InterleavedSequencesKeepTheirOwnState) {
  Make();
  SendInterleavedSequences();
}

TEST_F(SequenceBatcherTest, AStartResetsTheState) {
  Make();
  Send(uint64_t{9}, 7, true, false);
  Send(uint64_t{9}, 7, false, false);
  Call* restarted = Send(uint64_t{9}, 1, true, false);  // Triton: a conflict, continued anew
  EXPECT_EQ(restarted->output(), 1);
}

TEST_F(SequenceBatcherTest, TritonsErrors) {
  Make();
  Call* no_id = Send(uint64_t{0}, 1, true, false);
  ASSERT_TRUE(no_id->status.has_value());
  EXPECT_EQ(no_id->status->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(no_id->status->message(),
            "inference request to model 'acc' must specify a non-zero or non-empty correlation "
            "ID");
  Call* empty_id = Send(std::string(), 1, true, false);
  EXPECT_THAT(std::string(empty_id->status->message()), HasSubstr("non-zero or non-empty"));

  Call* not_started = Send(uint64_t{44}, 1, false, false);
  EXPECT_EQ(not_started->status->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(not_started->status->message(),
            "inference request for sequence 44 to model 'acc' must specify the START flag on the "
            "first request of the sequence");

  Call* two_rows = Send(uint64_t{45}, 1, true, false, /*rows=*/2);
  EXPECT_EQ(two_rows->status->message(),
            "inference request to model 'acc' must specify batch-size 1 due to requirements of "
            "sequence batcher");

  // After END the id is free: a request without START is refused again.
  Send(uint64_t{46}, 1, true, true);
  Call* after_end = Send(uint64_t{46}, 1, false, false);
  EXPECT_THAT(std::string(after_end->status->message()), HasSubstr("sequence 46"));
  EXPECT_TRUE(model_.seen().size() == 1u);  // only the START|END request ran
}

TEST_F(SequenceBatcherTest, AStringIdIsRefusedWhenTheModelTakesANumericCorrid) {
  Make();
  Call* call = Send(std::string("abc"), 1, true, false);
  ASSERT_TRUE(call->status.has_value());
  EXPECT_THAT(std::string(call->status->message()),
              HasSubstr("string sequence id 'abc' but the model's CORRID control 'CORRID' is "
                        "UINT64"));
}

// The accumulator without its CORRID control: a string id fits it too.
inference::ModelConfig WithoutCorrid() {
  inference::ModelConfig config = Parse(kAccumulator);
  auto* controls = config.mutable_sequence_batching()->mutable_control_input();
  controls->erase(std::remove_if(controls->begin(), controls->end(),
                                 [](const auto& control) { return control.name() == "CORRID"; }),
                  controls->end());
  return config;
}

TEST_F(SequenceBatcherTest, StringAndNumberIdsAreDifferentSequences) {
  Make(WithoutCorrid());
  Send(std::string("7"), 5, true, false);
  Send(uint64_t{7}, 100, true, false);
  Call* text = Send(std::string("7"), 1, false, true);
  Call* number = Send(uint64_t{7}, 1, false, true);
  EXPECT_EQ(text->output(), 6);
  EXPECT_EQ(number->output(), 101);
  EXPECT_EQ(model_.seen().back().corrid, 0u);  // no CORRID control: none written
}

TEST_F(SequenceBatcherTest, RequestsOfASequenceRunOneAtATimeInOrder) {
  Make();
  model_.Hold(true);
  Call* first = Send(uint64_t{3}, 1, true, false);
  Call* second = Send(uint64_t{3}, 2, false, false);
  Call* third = Send(uint64_t{3}, 4, false, true);
  EXPECT_EQ(model_.held(), 1u);  // the second waits for the first's state
  ASSERT_TRUE(model_.ReleaseOne());
  EXPECT_EQ(first->output(), 1);
  EXPECT_FALSE(second->status.has_value());
  EXPECT_EQ(model_.held(), 1u);
  ASSERT_TRUE(model_.ReleaseOne());
  ASSERT_TRUE(model_.ReleaseOne());
  EXPECT_EQ(second->output(), 3);
  EXPECT_EQ(third->output(), 7);
}

TEST_F(SequenceBatcherTest, SequencesBeyondTheSlotsWaitInTheBacklog) {
  Make();  // 2 slots: max_batch_size 2, one instance
  ASSERT_EQ(batcher_->total_slots(), kMaxBatch);
  model_.Hold(true);
  Send(uint64_t{1}, 1, true, false);
  Send(uint64_t{2}, 1, true, false);
  Call* third = Send(uint64_t{3}, 30, true, false);
  EXPECT_EQ(batcher_->backlog_sequences(), 1);
  EXPECT_EQ(model_.held(), 2u);  // two sequences run side by side, the third waits
  Call* ending = Send(uint64_t{1}, 1, false, true);
  while (model_.ReleaseOne()) {
  }
  // Sequence 1 ended, so 3 took its slot and ran with a fresh state.
  ASSERT_TRUE(third->status.has_value());
  EXPECT_EQ(third->output(), 30);
  EXPECT_EQ(ending->output(), 2);
  EXPECT_EQ(batcher_->backlog_sequences(), 0);
  EXPECT_EQ(batcher_->active_sequences(), 2);
}

TEST_F(SequenceBatcherTest, AnIdleSequenceLosesItsSlot) {
  inference::ModelConfig short_idle = Parse(kAccumulator);
  short_idle.set_max_batch_size(1);
  short_idle.mutable_sequence_batching()->set_max_sequence_idle_microseconds(20000);
  Make(short_idle);
  ASSERT_EQ(batcher_->total_slots(), 1);
  Send(uint64_t{5}, 1, true, false);
  Call* waiting = Send(uint64_t{6}, 60, true, false);  // the one slot is 5's
  EXPECT_FALSE(waiting->answered.load(std::memory_order_acquire));
  // 20 ms idle; the reaper looks every 5 ms: well within a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!waiting->answered.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(waiting->answered.load(std::memory_order_acquire));
  EXPECT_EQ(waiting->output(), 60);
  Call* late = Send(uint64_t{5}, 1, false, false);
  EXPECT_THAT(std::string(late->status->message()),
              HasSubstr("sequence 5 to model 'acc' must specify the START flag"));
}

TEST_F(SequenceBatcherTest, ABackloggedSequencePastItsTimeoutIsRefused) {
  Make();  // 2 slots
  model_.Hold(true);
  Send(uint64_t{1}, 1, true, false);
  Send(uint64_t{2}, 1, true, false);
  constexpr uint64_t kTimeoutUs = 10000;  // 10 ms; the reaper looks every 5 ms
  Call* late = Send(uint64_t{3}, 1, true, false, 1, kTimeoutUs);
  Call* follower = Send(uint64_t{3}, 1, false, false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!follower->answered.load(std::memory_order_acquire) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(late->answered.load(std::memory_order_acquire));
  ASSERT_TRUE(follower->answered.load(std::memory_order_acquire));
  for (Call* call : {late, follower}) {
    EXPECT_EQ(call->status->code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(call->status->message(), "timeout of the corresponding sequence has been expired");
  }
  EXPECT_EQ(batcher_->backlog_sequences(), 0);
  EXPECT_EQ(model_.held(), 2u);  // sequence 3 never ran
  // Its id is forgotten.
  Call* again = Send(uint64_t{3}, 1, false, false);
  EXPECT_THAT(std::string(again->status->message()), HasSubstr("must specify the START flag"));
  while (model_.ReleaseOne()) {
  }
}

TEST_F(SequenceBatcherTest, StatisticsCountEachRequest) {
  Make();
  Send(uint64_t{1}, 1, true, false);
  Send(uint64_t{1}, 1, false, true);
  Send(uint64_t{2}, 1, false, false);  // refused
  inference::ModelStatistics statistics;
  counters_.Fill(&statistics);
  EXPECT_EQ(statistics.inference_stats().success().count(), 2u);
  EXPECT_EQ(statistics.inference_stats().fail().count(), 1u);
  EXPECT_EQ(statistics.execution_count(), 2u);
}

TEST_F(SequenceBatcherTest, TheModelReportsItsExecutionsBatches) {
  Make();
  inference::ModelStatistics statistics;
  statistics.set_execution_count(5);  // one per request, from the counters
  batcher_->AddExecutionStatistics(&statistics);  // no execution statistics given: kept
  EXPECT_EQ(statistics.execution_count(), 5u);

  const inference::ModelConfig config = Parse(kAccumulator);
  SequenceBatcherOptions options;
  options.interface = ClientInterface();
  options.plan = *PlanSequenceBatching(config, "");
  options.execute = model_.Execute();
  options.counters = &counters_;
  options.execution_statistics = [](inference::ModelStatistics* execution) {
    execution->set_execution_count(3);  // five rows in three batches
    execution->add_batch_stats()->set_batch_size(2);
  };
  SequenceBatcher batcher(std::move(options));
  batcher.AddExecutionStatistics(&statistics);
  EXPECT_EQ(statistics.execution_count(), 3u);
  ASSERT_EQ(statistics.batch_stats_size(), 1);
  EXPECT_EQ(statistics.batch_stats(0).batch_size(), 2u);
}

TEST_F(SequenceBatcherTest, DrainRefusesNewSequencesAndServesRunningOnes) {
  Make();
  Send(uint64_t{1}, 4, true, false);
  batcher_->Drain(std::nullopt);
  Call* started = Send(uint64_t{2}, 1, true, false);
  ASSERT_TRUE(started->status.has_value());
  EXPECT_EQ(started->status->code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(started->status->message(),
            "Server is stopping, scheduler for model has stopped accepting new inference "
            "requests");
  Call* running = Send(uint64_t{1}, 1, false, true);
  ASSERT_TRUE(running->status.has_value());
  EXPECT_EQ(running->output(), 5);
}

// Note [Sequence batching]: on a GPU the states live in device memory, a
// region per state with a row per slot, which the execution reads and
// writes as a client's CUDA region.
TEST_F(SequenceBatcherTest, StatesOnTheDeviceStayInTheirSlotsRows) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  auto registry = std::make_shared<SharedMemoryRegistry>();
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::AllocateCuda("states", 0, kMaxBatch * sizeof(int32_t));
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_TRUE(registry->Add(*region).ok());
  Make(Parse(kAccumulator), std::chrono::milliseconds(5),
       DeviceStates{.registry = registry, .regions = {"states"}});
  SendInterleavedSequences();
  // Slot 0 was sequence 1's: its row holds its last state.
  int32_t row0 = 0;
  ASSERT_TRUE(CopyFromSlice(*registry->Slice("states", 0, 4),
                            reinterpret_cast<std::byte*>(&row0)).ok());
  EXPECT_EQ(row0, 109);
}

// Loading checks the config before the model file: Triton's rules, then
// what the batcher needs.
TEST(LoadSequenceModelTest, RefusesAConfigWithoutItsTensors) {
  RepositoryModel entry;
  entry.name = "acc";
  entry.config = Parse(R"pb(
    max_batch_size: 2
    sequence_batching {
      control_input { name: "START" control { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } }
    })pb");
  ModelVersionEntry version;
  version.version = 1;
  const absl::Status status = LoadSequenceModel(entry, version, ServedModelOptions{}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("model 'acc' sets sequence_batching but its config declares no inputs"));

  entry.config.mutable_sequence_batching()->add_control_input()->set_name("START");
  EXPECT_THAT(std::string(LoadSequenceModel(entry, version, ServedModelOptions{}).status().message()),
              HasSubstr("sequence batching control tensor 'START' is specified for multiple "
                        "control kinds"));
}

TEST(SequenceFlagsTest, IdsOfEveryType) {
  inference::ModelInferRequest request;
  (*request.mutable_parameters())["sequence_id"].set_int64_param(12);
  (*request.mutable_parameters())["sequence_start"].set_bool_param(true);
  absl::StatusOr<SequenceFlags> flags = SequenceFlagsFromRequest(request, "m");
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(std::get<uint64_t>(flags->id), 12u);
  EXPECT_TRUE(flags->start);
  EXPECT_FALSE(flags->end);
  (*request.mutable_parameters())["sequence_id"].set_string_param("x-1");
  flags = SequenceFlagsFromRequest(request, "m");
  ASSERT_TRUE(flags.ok());
  EXPECT_EQ(std::get<std::string>(flags->id), "x-1");
  (*request.mutable_parameters())["sequence_end"].set_int64_param(1);
  EXPECT_THAT(std::string(SequenceFlagsFromRequest(request, "m").status().message()),
              HasSubstr("'sequence_end' must be a bool_param"));
  (*request.mutable_parameters())["sequence_id"].set_double_param(1.5);
  EXPECT_FALSE(SequenceFlagsFromRequest(request, "m").ok());
}

}  // namespace
}  // namespace graphserve
