// GPU test (skips without a device): `schedule: "auto"` times the schedules
// that differ and keeps single for a model that is one chain.
#include "capture/schedule_choice.h"

#include <algorithm>
#include <functional>

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
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, BatchOnlyKeys({1, 64}), options);
  ASSERT_TRUE(choices.ok()) << choices.status();
  ASSERT_EQ(choices->size(), 2u);
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.max_width, 4);  // the four towers
    // Wavefront (wave by wave) and asap (tower by tower) issue differently.
    ASSERT_EQ(choice.candidates.size(), 3u) << "batch " << choice.key.batch_size;
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
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, BatchOnlyKeys({8}), options);
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
  set_options.graphs = BatchOnlyKeys({1, 8});
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
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseSchedules(model, BatchOnlyKeys({4}), {});
  ASSERT_TRUE(choices.ok()) << choices.status();
  EXPECT_EQ((*choices)[0].policy, SchedulePolicy::kSingle);
  EXPECT_EQ((*choices)[0].max_width, 1);
  EXPECT_TRUE((*choices)[0].candidates.empty());
}

TEST_F(ScheduleChoiceTest, BadTimingOptionsAreRefused) {
  const Model model = Import(MakeMlpModel(), "mlp");
  ScheduleChoiceOptions options;
  options.rounds = 0;
  EXPECT_EQ(ChooseSchedules(model, BatchOnlyKeys({4}), options).status().code(),
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

// Host tests of which sizes get timed (Note [Schedules between timed sizes]).
struct FakeTiming {
  std::function<SchedulePolicy(int64_t)> policy_of;
  std::vector<int64_t> timed;
  absl::StatusOr<ScheduleChoice> operator()(int64_t batch) {
    timed.push_back(batch);
    return ScheduleChoice{.key = {batch}, .policy = policy_of(batch)};
  }
};

std::vector<int64_t> Range(int64_t first, int64_t last) {
  std::vector<int64_t> sizes;
  for (int64_t b = first; b <= last; ++b) sizes.push_back(b);
  return sizes;
}

TEST(ChooseAcrossSizes, DenseSizesThatAgreeAreTimedOncePerDoubling) {
  FakeTiming fake{[](int64_t) { return SchedulePolicy::kAsap; }, {}};
  absl::StatusOr<std::vector<ScheduleChoice>> choices =
      ChooseAcrossSizes(Range(1, 32), std::ref(fake));
  ASSERT_TRUE(choices.ok());
  std::sort(fake.timed.begin(), fake.timed.end());
  EXPECT_EQ(fake.timed, (std::vector<int64_t>{1, 2, 4, 8, 16, 32}));
  ASSERT_EQ(choices->size(), 32u);
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.policy, SchedulePolicy::kAsap);
    const bool timed = std::binary_search(fake.timed.begin(), fake.timed.end(), choice.key.batch_size);
    EXPECT_EQ(choice.same_as_below == 0, timed) << choice.key.batch_size;
  }
  EXPECT_EQ((*choices)[2].same_as_below, 2);  // batch 3, between 2 and 4
  EXPECT_EQ((*choices)[2].same_as_above, 4);
}

TEST(ChooseAcrossSizes, ASparseLadderIsTimedAtEverySize) {
  FakeTiming fake{[](int64_t) { return SchedulePolicy::kSingle; }, {}};
  ASSERT_TRUE(ChooseAcrossSizes({32, 1, 16, 8}, std::ref(fake)).ok());
  std::sort(fake.timed.begin(), fake.timed.end());
  EXPECT_EQ(fake.timed, (std::vector<int64_t>{1, 8, 16, 32}));
}

TEST(ChooseAcrossSizes, AChangeOfPolicyIsFoundAndNothingUntimedCrossesIt) {
  // Streams pay up to batch 11, not above: every choice must say so.
  const auto oracle = [](int64_t batch) {
    return batch <= 11 ? SchedulePolicy::kAsap : SchedulePolicy::kSingle;
  };
  FakeTiming fake{oracle, {}};
  absl::StatusOr<std::vector<ScheduleChoice>> choices =
      ChooseAcrossSizes(Range(1, 64), std::ref(fake));
  ASSERT_TRUE(choices.ok());
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.policy, oracle(choice.key.batch_size)) << choice.key.batch_size;
  }
  EXPECT_LT(fake.timed.size(), 20u);
}

TEST(ChooseAcrossSizes, ATimingErrorIsReturned) {
  const auto failing = [](int64_t batch) -> absl::StatusOr<ScheduleChoice> {
    return absl::InternalError(absl::StrCat("capture failed at ", batch));
  };
  EXPECT_EQ(ChooseAcrossSizes({1, 2}, failing).status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace graphserve
