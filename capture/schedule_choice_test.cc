// GPU test (skips without a device): `schedule: "auto"` times the schedules
// that differ and keeps single for a model that is one chain.
#include "capture/schedule_choice.h"

#include <gtest/gtest.h>

#include "common/cuda_handles.h"
#include "examples/example_models.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

Model Import(const onnx::ModelProto& proto, const std::string& name) {
  absl::StatusOr<Model> model = ImportOnnxBytes(proto.SerializeAsString(), name);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

class ScheduleChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  }
};

TEST_F(ScheduleChoiceTest, BranchyModelTimesEachDistinctSchedule) {
  const Model model = Import(MakeMultiTowerModel(), "multi_tower");
  ScheduleChoiceOptions options;
  options.rounds = 3;
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, {1, 64}, options);
  ASSERT_TRUE(choices.ok()) << choices.status();
  ASSERT_EQ(choices->size(), 2u);
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.max_width, 4);  // the four towers
    // Wavefront (wave by wave) and asap (tower by tower) issue differently.
    ASSERT_EQ(choice.candidates.size(), 3u) << "batch " << choice.batch_size;
    EXPECT_EQ(choice.candidates[0].policy, SchedulePolicy::kSingle);
    EXPECT_EQ(choice.candidates[0].lanes, 1);
    const ScheduleCandidateTime* chosen = nullptr;
    for (const ScheduleCandidateTime& candidate : choice.candidates) {
      EXPECT_GT(candidate.replay_us, 0) << SchedulePolicyName(candidate.policy);
      if (candidate.policy == choice.policy) chosen = &candidate;
    }
    ASSERT_NE(chosen, nullptr);
    EXPECT_EQ(choice.lanes, chosen->lanes);
    // Never slower than single (its own measurement).
    EXPECT_LE(chosen->replay_us, choice.candidates[0].replay_us);
  }
}

TEST_F(ScheduleChoiceTest, NoGainKeepsSingle) {
  const Model model = Import(MakeMultiTowerModel(), "multi_tower");
  ScheduleChoiceOptions options;
  options.rounds = 1;
  options.min_gain = 1.0;  // no candidate can be faster than single by 100%
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, {8}, options);
  ASSERT_TRUE(choices.ok()) << choices.status();
  EXPECT_EQ((*choices)[0].policy, SchedulePolicy::kSingle);
  EXPECT_EQ((*choices)[0].lanes, 1);
  EXPECT_EQ((*choices)[0].candidates.size(), 3u);
}

// Candidates and the final set share one weight store: the weights go up
// once, however many schedules are timed.
TEST_F(ScheduleChoiceTest, CandidatesAndTheFinalSetShareTheWeights) {
  const Model model = Import(MakeMultiTowerModel(), "multi_tower");
  GraphSetOptions set_options;
  set_options.batch_sizes = {1, 8};
  ScheduleChoiceOptions timing;
  timing.rounds = 1;
  absl::StatusOr<std::vector<ScheduleChoice>> choices =
      ApplyScheduleRequest(model, std::nullopt, set_options, timing);
  ASSERT_TRUE(choices.ok()) << choices.status();
  ASSERT_NE(set_options.weights, nullptr);
  const size_t uploaded = set_options.weights->bytes();
  EXPECT_GT(uploaded, 0u);  // the candidates uploaded them
  absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, set_options);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set_options.weights->bytes(), uploaded);  // nothing uploaded again
  EXPECT_EQ((*set)->weight_bytes(), uploaded);
}

TEST_F(ScheduleChoiceTest, ChainNeedsNoTiming) {
  const Model model = Import(MakeMlpModel(), "mlp");
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, {4}, {});
  ASSERT_TRUE(choices.ok()) << choices.status();
  EXPECT_EQ((*choices)[0].policy, SchedulePolicy::kSingle);
  EXPECT_EQ((*choices)[0].max_width, 1);
  EXPECT_TRUE((*choices)[0].candidates.empty());
}

TEST_F(ScheduleChoiceTest, BadTimingOptionsAreRefused) {
  const Model model = Import(MakeMlpModel(), "mlp");
  ScheduleChoiceOptions options;
  options.rounds = 0;
  EXPECT_EQ(ChooseSchedules(model, {4}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseScheduleRequestTest, AutoIsNoPolicyAndTheRestAreNamed) {
  EXPECT_EQ(*ParseScheduleRequest("auto"), std::nullopt);
  EXPECT_EQ(*ParseScheduleRequest(""), std::nullopt);
  EXPECT_EQ(*ParseScheduleRequest("asap"), SchedulePolicy::kAsap);
  EXPECT_EQ(*ParseScheduleRequest("single"), SchedulePolicy::kSingle);
  const absl::Status bad = ParseScheduleRequest("fastest").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("auto, single, wavefront or asap"), std::string::npos) << bad;
}

}  // namespace
}  // namespace graphserve
