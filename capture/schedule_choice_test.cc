// GPU test (skips without a device): `schedule: "auto"` times the schedules
// that differ and keeps single for a model that is one chain.
#include "capture/schedule_choice.h"

#include <algorithm>
#include <functional>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// Host tests of which keys get timed (Note [Schedules between timed sizes]).
struct FakeTiming {
  std::function<SchedulePolicy(const GraphKey&)> policy_of;
  std::vector<GraphKey> timed;
  absl::StatusOr<ScheduleChoice> operator()(const GraphKey& key) {
    timed.push_back(key);
    return ScheduleChoice{.key = key, .policy = policy_of(key)};
  }
  std::vector<int64_t> TimedBatches() const {
    std::vector<int64_t> batches = BatchSizesOf(timed);
    std::sort(batches.begin(), batches.end());
    return batches;
  }
};

std::vector<GraphKey> Range(int64_t first, int64_t last) {
  std::vector<int64_t> sizes;
  for (int64_t b = first; b <= last; ++b) sizes.push_back(b);
  return BatchOnlyKeys(sizes);
}

TEST(ChooseAcrossKeys, DenseSizesThatAgreeAreTimedOncePerRatio) {
  FakeTiming fake{[](const GraphKey&) { return SchedulePolicy::kAsap; }, {}};
  absl::StatusOr<std::vector<ScheduleChoice>> choices =
      ChooseAcrossKeys(Range(1, 32), std::ref(fake));
  ASSERT_TRUE(choices.ok());
  // Each range split at its middle key until its ends are at most
  // kUntimedWorkRatio (4) apart: 1..32, then 1..16, then 1..8.
  EXPECT_EQ(fake.TimedBatches(), (std::vector<int64_t>{1, 4, 8, 16, 32}));
  ASSERT_EQ(choices->size(), 32u);
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.policy, SchedulePolicy::kAsap);
    const bool timed =
        std::find(fake.timed.begin(), fake.timed.end(), choice.key) != fake.timed.end();
    EXPECT_EQ(choice.same_as_below.has_value(), !timed) << choice.key.batch_size;
  }
  EXPECT_EQ((*choices)[2].same_as_below, GraphKey{1});  // batch 3, between 1 and 4
  EXPECT_EQ((*choices)[2].same_as_above, GraphKey{4});
}

TEST(ChooseAcrossKeys, ASparseLadderIsTimedWhereItsStepsExceedTheRatio) {
  FakeTiming fake{[](const GraphKey&) { return SchedulePolicy::kSingle; }, {}};
  ASSERT_TRUE(ChooseAcrossKeys(BatchOnlyKeys({32, 1, 16, 8}), std::ref(fake)).ok());
  // 1 and 8 are 8x apart, so both are timed; 16 lies within 4x of 8 and 32.
  EXPECT_EQ(fake.TimedBatches(), (std::vector<int64_t>{1, 8, 32}));
}

TEST(ChooseAcrossKeys, AChangeOfPolicyIsFoundAndNothingUntimedCrossesIt) {
  // Streams pay up to batch 11, not above: every choice must say so.
  const auto oracle = [](const GraphKey& key) {
    return key.batch_size <= 11 ? SchedulePolicy::kAsap : SchedulePolicy::kSingle;
  };
  FakeTiming fake{oracle, {}};
  absl::StatusOr<std::vector<ScheduleChoice>> choices =
      ChooseAcrossKeys(Range(1, 64), std::ref(fake));
  ASSERT_TRUE(choices.ok());
  for (const ScheduleChoice& choice : *choices) {
    EXPECT_EQ(choice.policy, oracle(choice.key)) << choice.key.batch_size;
  }
  EXPECT_LT(fake.timed.size(), 20u);
}

TEST(ChooseAcrossKeys, OverABucketGridTheChoiceFollowsWorkNotBatch) {
  // Streams pay while a run covers at most 1024 positions (rows x tokens):
  // batch 1 pays at 512 tokens, batch 32 only at 32.
  const auto oracle = [](const GraphKey& key) {
    return key.batch_size * key.bucket[0] <= 1024 ? SchedulePolicy::kAsap
                                                  : SchedulePolicy::kSingle;
  };
  std::vector<GraphKey> keys;
  for (int64_t tokens : {32, 64, 128, 256, 512}) {
    for (int64_t batch : {1, 2, 4, 8, 16, 32}) keys.push_back({batch, {tokens}});
  }
  FakeTiming fake{oracle, {}};
  absl::StatusOr<std::vector<ScheduleChoice>> choices = ChooseAcrossKeys(keys, std::ref(fake));
  ASSERT_TRUE(choices.ok());
  ASSERT_EQ(choices->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ((*choices)[i].key, keys[i]);
    EXPECT_EQ((*choices)[i].policy, oracle(keys[i])) << GraphKeyString(keys[i]);
  }
  // 12 of the 30 keys, 3 of them at 512 tokens (batches 4, 16 and 32).
  std::vector<std::string> timed;
  for (const GraphKey& key : fake.timed) timed.push_back(GraphKeyString(key));
  EXPECT_LE(fake.timed.size(), 12u) << absl::StrJoin(timed, " ");
}

TEST(ChooseAcrossKeys, ATimingErrorIsReturned) {
  const auto failing = [](const GraphKey& key) -> absl::StatusOr<ScheduleChoice> {
    return absl::InternalError(absl::StrCat("capture failed at ", GraphKeyString(key)));
  };
  EXPECT_EQ(ChooseAcrossKeys(BatchOnlyKeys({1, 2}), failing).status().code(),
            absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace graphserve
