#include "server/ensemble_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int64_t kWidth = 4;  // every tensor's row: fp32 [4]

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config)) << text;
  return config;
}

// The diamond of ensemble_config_test: add (SUM = a + b, DIFF = a - b), then
// scale (2 x) and negate (-x), independent of each other, then mul (their
// product).
constexpr char kDiamond[] = R"pb(
  name: "diamond"
  platform: "ensemble"
  max_batch_size: 8
  input { name: "IN0" data_type: TYPE_FP32 dims: [ 4 ] }
  input { name: "IN1" data_type: TYPE_FP32 dims: [ 4 ] }
  output { name: "OUT" data_type: TYPE_FP32 dims: [ 4 ] }
  ensemble_scheduling {
    step {
      model_name: "mul"
      model_version: -1
      input_map { key: "A" value: "SCALED" }
      input_map { key: "B" value: "NEG" }
      output_map { key: "Y" value: "OUT" }
    }
    step {
      model_name: "scale"
      model_version: -1
      input_map { key: "X" value: "SUM" }
      output_map { key: "Y" value: "SCALED" }
    }
    step {
      model_name: "negate"
      model_version: -1
      input_map { key: "X" value: "DIFF" }
      output_map { key: "Y" value: "NEG" }
    }
    step {
      model_name: "add"
      model_version: -1
      input_map { key: "A" value: "IN0" }
      input_map { key: "B" value: "IN1" }
      output_map { key: "SUM" value: "SUM" }
      output_map { key: "DIFF" value: "DIFF" }
    }
  }
)pb";

// Element-wise: the outputs' values from the inputs' (the request's order).
using Compute =
    std::function<std::vector<std::vector<float>>(const std::vector<std::vector<float>>&)>;

// A composing model whose requests wait until the test ends them: so the
// test sees which steps have started, in what order, and chooses the order
// they end in.
class HeldSteps {
 public:
  struct Call {
    const inference::ModelInferRequest* request;
    inference::ModelInferResponse* response;
    std::function<void(const absl::Status&)> done;
  };

  // A ServedModel named `name` whose pipeline holds its requests here.
  std::shared_ptr<ServedModel> Model(const std::string& name, const std::string& inputs,
                                     const std::string& outputs, Compute compute) {
    std::string text = absl::StrCat("name: \"", name, "\" max_batch_size: 8\n");
    for (absl::string_view input : absl::StrSplit(inputs, ',')) {
      absl::StrAppend(&text, "input { name: \"", input, "\" data_type: TYPE_FP32 dims: [ 4 ] }\n");
    }
    for (absl::string_view output : absl::StrSplit(outputs, ',')) {
      absl::StrAppend(&text, "output { name: \"", output,
                      "\" data_type: TYPE_FP32 dims: [ 4 ] }\n");
    }
    const inference::ModelConfig config = Parse(text);
    absl::StatusOr<ModelInterface> interface = InterfaceFromConfig(config);
    EXPECT_TRUE(interface.ok()) << interface.status();
    interface->name = name;
    compute_[name] = std::move(compute);
    auto counters = std::make_unique<ModelCounters>(std::vector<int64_t>{8}, 8, 1);
    return ServedModel::FromPipeline(*interface, 1, config, std::move(counters),
                                     std::make_unique<Pipeline>(this, name), ModelLoadSummary{});
  }

  // The models started and not ended, by name.
  std::vector<std::string> Running() const {
    std::vector<std::string> names;
    for (const auto& [name, call] : calls_) names.push_back(name);
    return names;
  }
  const std::vector<std::string>& started() const { return started_; }
  // The request `name` is running.
  const inference::ModelInferRequest& RequestOf(const std::string& name) const {
    return *calls_.at(name).request;
  }

  // Ends `name`'s request: its outputs computed from its inputs, or `error`.
  void End(const std::string& name, absl::Status error = absl::OkStatus()) {
    auto found = calls_.find(name);
    ASSERT_NE(found, calls_.end()) << name << " is not running";
    Call call = std::move(found->second);
    calls_.erase(found);
    if (error.ok()) {
      std::vector<std::vector<float>> inputs;
      for (int i = 0; i < call.request->inputs_size(); ++i) {
        const std::string& bytes = call.request->raw_input_contents(i);
        std::vector<float> values(bytes.size() / sizeof(float));
        std::memcpy(values.data(), bytes.data(), bytes.size());
        inputs.push_back(std::move(values));
      }
      const std::vector<std::vector<float>> outputs = compute_.at(name)(inputs);
      for (int k = 0; k < call.request->outputs_size(); ++k) {
        auto* output = call.response->add_outputs();
        output->set_name(call.request->outputs(k).name());
        output->set_datatype("FP32");
        *output->mutable_shape() = call.request->inputs(0).shape();
        const std::vector<float>& values = outputs.at(static_cast<size_t>(k));
        call.response->add_raw_output_contents(
            std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
      }
    }
    call.done(error);
  }

 private:
  class Pipeline final : public ModelPipeline {
   public:
    Pipeline(HeldSteps* steps, std::string name) : steps_(steps), name_(std::move(name)) {}
    void Infer(const inference::ModelInferRequest* request,
               inference::ModelInferResponse* response,
               std::function<void(const absl::Status&)> done,
               const SharedMemoryRegistry* /*shared_memory*/) override {
      steps_->started_.push_back(name_);
      steps_->calls_[name_] = {request, response, std::move(done)};
    }
    void Drain(std::optional<std::chrono::steady_clock::time_point> /*deadline*/) override {}

   private:
    HeldSteps* const steps_;
    const std::string name_;
  };

  std::map<std::string, Compute> compute_;
  std::map<std::string, Call> calls_;
  std::vector<std::string> started_;
};

std::vector<float> Apply(const std::vector<float>& a, const std::vector<float>& b,
                         float (*op)(float, float)) {
  std::vector<float> out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = op(a[i], b[i]);
  return out;
}

class EnsembleSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    using Values = std::vector<std::vector<float>>;
    models_["add"] = steps_.Model("add", "A,B", "SUM,DIFF", [](const Values& in) {
      return Values{Apply(in[0], in[1], [](float a, float b) { return a + b; }),
                    Apply(in[0], in[1], [](float a, float b) { return a - b; })};
    });
    models_["scale"] = steps_.Model("scale", "X", "Y", [](const Values& in) {
      return Values{Apply(in[0], in[0], [](float a, float) { return 2 * a; })};
    });
    models_["negate"] = steps_.Model("negate", "X", "Y", [](const Values& in) {
      return Values{Apply(in[0], in[0], [](float a, float) { return -a; })};
    });
    models_["mul"] = steps_.Model("mul", "A,B", "Y", [](const Values& in) {
      return Values{Apply(in[0], in[1], [](float a, float b) { return a * b; })};
    });
    RepositoryModel entry;
    entry.name = "diamond";
    entry.config = Parse(kDiamond);
    absl::StatusOr<std::unique_ptr<ServedModel>> ensemble = LoadEnsemble(
        entry, {.version = 1, .model_path = ""},
        [this](const inference::ModelEnsembling::Step& step)
            -> absl::StatusOr<inference::ModelConfig> {
          return models_.at(step.model_name())->config();
        },
        [this](absl::string_view name, absl::string_view /*version*/)
            -> absl::StatusOr<std::shared_ptr<ServedModel>> {
          const auto found = models_.find(std::string(name));
          if (found == models_.end()) {
            return absl::NotFoundError(absl::StrCat("Request for unknown model: '", name, "'"));
          }
          return found->second;
        });
    ASSERT_TRUE(ensemble.ok()) << ensemble.status();
    ensemble_ = *std::move(ensemble);
  }

  // Starts a request of `rows` rows: IN0 row r = r + {0,1,2,3}, IN1 = 1.
  void Start(int64_t rows) {
    request_.Clear();
    request_.set_model_name("diamond");
    request_.set_id("r7");
    (*request_.mutable_parameters())["priority"].set_uint64_param(2);
    in0_.clear();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < kWidth; ++c) in0_.push_back(static_cast<float>(r + c));
    }
    in1_.assign(in0_.size(), 1.0f);
    for (const auto& [name, values] : {std::pair{"IN0", &in0_}, std::pair{"IN1", &in1_}}) {
      auto* input = request_.add_inputs();
      input->set_name(name);
      input->set_datatype("FP32");
      input->add_shape(rows);
      input->add_shape(kWidth);
      request_.add_raw_input_contents(std::string(reinterpret_cast<const char*>(values->data()),
                                                  values->size() * sizeof(float)));
    }
    ensemble_->Infer(&request_, &response_, [this](const absl::Status& status) {
      ASSERT_FALSE(answer_.has_value()) << "answered twice";
      answer_ = status;
    });
  }

  HeldSteps steps_;
  std::map<std::string, std::shared_ptr<ServedModel>> models_;
  std::unique_ptr<ServedModel> ensemble_;
  inference::ModelInferRequest request_;
  inference::ModelInferResponse response_;
  std::vector<float> in0_, in1_;
  std::optional<absl::Status> answer_;
};

TEST_F(EnsembleSchedulerTest, StepsStartWhenWhatTheyReadIsWrittenAndIndependentOnesOverlap) {
  // Its models serve on no GPU (Note [Ensemble tensors on the device]).
  EXPECT_THAT(ensemble_->summary().executor,
              HasSubstr("step by step, tensors between steps through the host"));
  Start(2);
  EXPECT_THAT(steps_.Running(), ElementsAre("add"));
  // A step is a request to its model in its model's names, with the
  // ensemble request's id and parameters (Triton passes them on).
  const inference::ModelInferRequest& add = steps_.RequestOf("add");
  EXPECT_EQ(add.model_name(), "add");
  EXPECT_EQ(add.id(), "r7");
  EXPECT_EQ(add.parameters().at("priority").uint64_param(), 2u);
  ASSERT_EQ(add.inputs_size(), 2);
  EXPECT_EQ(add.inputs(0).name(), "A");
  EXPECT_THAT(add.inputs(1).shape(), ElementsAre(2, kWidth));
  ASSERT_EQ(add.outputs_size(), 2);
  EXPECT_EQ(add.outputs(1).name(), "DIFF");
  steps_.End("add");
  // scale and negate read only add's outputs: both run at once.
  EXPECT_THAT(steps_.Running(), UnorderedElementsAre("negate", "scale"));
  steps_.End("negate");
  EXPECT_THAT(steps_.Running(), ElementsAre("scale"));  // mul still waits for scale
  EXPECT_FALSE(answer_.has_value());
  steps_.End("scale");
  EXPECT_THAT(steps_.Running(), ElementsAre("mul"));
  steps_.End("mul");
  ASSERT_TRUE(answer_.has_value());
  ASSERT_TRUE(answer_->ok()) << *answer_;
  EXPECT_THAT(steps_.Running(), IsEmpty());

  // OUT = 2 (a + b) * -(a - b), against the inputs computed here.
  ASSERT_EQ(response_.outputs_size(), 1);
  EXPECT_EQ(response_.model_name(), "diamond");
  EXPECT_THAT(response_.outputs(0).shape(), ElementsAre(2, kWidth));
  const std::string& bytes = response_.raw_output_contents(0);
  ASSERT_EQ(bytes.size(), in0_.size() * sizeof(float));
  std::vector<float> out(in0_.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_FLOAT_EQ(out[i], 2 * (in0_[i] + in1_[i]) * -(in0_[i] - in1_[i])) << i;
  }
  // Each step was a request with the step model's tensor names.
  EXPECT_EQ(steps_.started().front(), "add");
}

TEST_F(EnsembleSchedulerTest, AFailedStepFailsTheRequestNamingItsModelAndStartsNoLaterStep) {
  Start(1);
  steps_.End("add");
  steps_.End("scale", absl::ResourceExhaustedError("the queue is full"));
  EXPECT_FALSE(answer_.has_value());  // negate is still running
  steps_.End("negate");
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(answer_->message(), HasSubstr("in ensemble 'diamond', step 1 (model 'scale'): "
                                            "the queue is full"));
  EXPECT_THAT(steps_.started(), ::testing::Not(::testing::Contains("mul")));
  inference::ModelStatistics statistics;
  ensemble_->FillStatistics(&statistics);
  EXPECT_EQ(statistics.inference_stats().fail().count(), 1u);
  EXPECT_EQ(statistics.inference_stats().success().count(), 0u);
}

TEST_F(EnsembleSchedulerTest, AComposingModelThatIsGoneFailsTheRequestNamingIt) {
  models_.erase("negate");
  Start(1);
  steps_.End("add");
  steps_.End("scale");
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(answer_->message(), HasSubstr("(model 'negate'): Request for unknown model"));
}

TEST_F(EnsembleSchedulerTest, TheEnsembleCountsOneExecutionOfItsBatchPerRequest) {
  for (int64_t rows : {3, 1}) {
    Start(rows);
    for (const char* step : {"add", "scale", "negate", "mul"}) steps_.End(step);
    ASSERT_TRUE(answer_.has_value() && answer_->ok());
    answer_.reset();
  }
  inference::ModelStatistics statistics;
  ensemble_->FillStatistics(&statistics);
  EXPECT_EQ(statistics.name(), "diamond");
  EXPECT_EQ(statistics.inference_count(), 4u);
  EXPECT_EQ(statistics.execution_count(), 2u);
  EXPECT_EQ(statistics.inference_stats().success().count(), 2u);
  std::vector<uint64_t> sizes;
  for (const auto& batch : statistics.batch_stats()) sizes.push_back(batch.batch_size());
  EXPECT_THAT(sizes, ElementsAre(1, 3));
  EXPECT_EQ(ensemble_->pending_requests(), 0);
}

TEST_F(EnsembleSchedulerTest, TheEnsemblesOwnChecksComeFirst) {
  request_.set_model_name("diamond");
  auto* input = request_.add_inputs();
  input->set_name("IN0");
  input->set_datatype("FP32");
  input->add_shape(1);
  input->add_shape(kWidth);
  request_.add_raw_input_contents(std::string(kWidth * sizeof(float), '\0'));
  ensemble_->Infer(&request_, &response_,
                   [this](const absl::Status& status) { answer_ = status; });
  ASSERT_TRUE(answer_.has_value());
  EXPECT_EQ(answer_->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(answer_->message(), HasSubstr("model 'diamond'"));
  EXPECT_THAT(steps_.started(), IsEmpty());
}

}  // namespace
}  // namespace graphserve
