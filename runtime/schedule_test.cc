#include "runtime/schedule.h"

#include <memory>
#include <string>
#include <vector>

#include "common/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/bind.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<const HostTensor> Weights(Dims dims, uint64_t seed) {
  return std::make_shared<const HostTensor>(RandomTensor(DType::kFloat32, std::move(dims), seed));
}

// Inception in small: x feeds a two-Conv branch and a one-Conv branch, and a
// MaxPool branch; Concat joins them.
Model Branches() {
  Model model;
  model.name = "branches";
  model.opset = 17;
  model.inputs = {{"x", DType::kFloat32, {-1, 4, 5, 5}}};
  model.outputs = {{"y", DType::kFloat32, {-1, 12, 5, 5}}};
  model.initializers["wa1"] = Weights({4, 4, 1, 1}, 1);
  model.initializers["wa2"] = Weights({4, 4, 3, 3}, 2);
  model.initializers["wb"] = Weights({4, 4, 1, 1}, 3);
  const Attributes pad1 = {{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  model.nodes = {
      {"a1", "Conv", {"x", "wa1"}, {"a"}, {}},
      {"b1", "Conv", {"x", "wb"}, {"b"}, {}},
      {"a2", "Conv", {"a", "wa2"}, {"a_out"}, pad1},
      {"pool",
       "MaxPool",
       {"x"},
       {"p"},
       {{"kernel_shape", std::vector<int64_t>{3, 3}},
        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
        {"strides", std::vector<int64_t>{1, 1}}}},
      {"cat", "Concat", {"a_out", "b", "p"}, {"y"}, {{"axis", int64_t{1}}}},
  };
  return model;
}

struct Planned {
  BoundGraph graph;
  FusionPlan plan;
};

Planned Plan(const Model& model) {
  absl::StatusOr<BoundGraph> graph = BindModel(model, {.batch_size = 1});
  EXPECT_TRUE(graph.ok()) << graph.status();
  FusionPlan plan = PlanFusion(*graph, {});
  return {*std::move(graph), std::move(plan)};
}

// Every read-after-write edge is honoured: the writer is issued earlier and,
// on another lane, the reader waits for it or for a later step of its lane.
void ExpectHonoursEveryEdge(const Planned& p, const Schedule& s) {
  const std::vector<std::vector<int>> predecessors = StepPredecessors(p.graph, p.plan);
  std::vector<int> issue(s.steps.size()), lane_of(s.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i) {
    issue[s.steps[i].step] = static_cast<int>(i);
    lane_of[s.steps[i].step] = s.steps[i].lane;
  }
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const ScheduledStep& step = s.steps[i];
    for (int pred : predecessors[step.step]) {
      EXPECT_LT(issue[pred], static_cast<int>(i));
      if (lane_of[pred] == step.lane) continue;
      bool waited = false;
      for (int a : step.after) {
        waited |= s.steps[a].lane == lane_of[pred] && a >= issue[pred];
      }
      EXPECT_TRUE(waited) << "step " << i << " does not wait for its predecessor " << issue[pred];
    }
  }
}

TEST(ScheduleTest, SingleIsOneLaneInThePlansOrder) {
  const Planned p = Plan(Branches());
  const Schedule s = MakeSchedule(p.graph, p.plan, {.policy = SchedulePolicy::kSingle});
  ExpectHonoursEveryEdge(p, s);
  EXPECT_EQ(s.lanes, 1);
  EXPECT_EQ(s.max_width, 3);      // a1, b1 and pool are independent
  EXPECT_EQ(s.critical_path, 3);  // a1, a2, cat
  for (size_t i = 0; i < s.steps.size(); ++i) {
    EXPECT_EQ(s.steps[i].step, static_cast<int>(i));
    EXPECT_TRUE(s.steps[i].after.empty());
  }
}

TEST(ScheduleTest, WavefrontSpreadsEachWave) {
  const Planned p = Plan(Branches());
  const Schedule s = MakeSchedule(p.graph, p.plan, {.policy = SchedulePolicy::kWavefront});
  ExpectHonoursEveryEdge(p, s);
  EXPECT_EQ(s.lanes, 3);
  // Wave 1: a1, b1, pool on lanes 0, 1, 2; wave 2: a2; wave 3: cat.
  ASSERT_EQ(s.steps.size(), 5u);
  EXPECT_EQ(s.steps[0].lane, 0);
  EXPECT_EQ(s.steps[1].lane, 1);
  EXPECT_EQ(s.steps[2].lane, 2);
  EXPECT_THAT(s.steps[4].after, ElementsAre(1, 2));  // cat waits for b1 and pool
}

TEST(ScheduleTest, AsapPutsTheHeaviestChainOnOneLane) {
  const Planned p = Plan(Branches());
  const Schedule s = MakeSchedule(p.graph, p.plan, {.policy = SchedulePolicy::kAsap});
  ExpectHonoursEveryEdge(p, s);
  EXPECT_EQ(s.lanes, 3);
  // a1 -> a2 -> cat is the heavy chain, lane 0; b1 and pool get lanes of
  // their own, and cat waits for both.
  for (const ScheduledStep& step : s.steps) {
    const std::string& name = p.graph.nodes[p.plan.steps[step.step].anchor].name;
    if (name == "a1" || name == "a2" || name == "cat") {
      EXPECT_EQ(step.lane, 0) << name;
    }
    if (name == "cat") {
      EXPECT_EQ(step.after.size(), 2u);
    }
  }
}

TEST(ScheduleTest, LanesBeyondTheLimitFold) {
  const Planned p = Plan(Branches());
  for (SchedulePolicy policy : {SchedulePolicy::kWavefront, SchedulePolicy::kAsap}) {
    const Schedule s = MakeSchedule(p.graph, p.plan, {.policy = policy, .max_lanes = 2});
    ExpectHonoursEveryEdge(p, s);
    EXPECT_EQ(s.lanes, 2) << SchedulePolicyName(policy);
  }
}

TEST(ScheduleTest, JsonNamesTheNodesOfEachStep) {
  const Planned p = Plan(Branches());
  const Schedule s = MakeSchedule(p.graph, p.plan, {.policy = SchedulePolicy::kAsap});
  const std::string json = ScheduleToJson(p.graph, p.plan, s);
  EXPECT_THAT(json, HasSubstr("\"policy\": \"asap\""));
  EXPECT_THAT(json, HasSubstr("\"lanes\": 3"));
  EXPECT_THAT(json, HasSubstr("{\"nodes\": [\"cat\"], \"lane\": 0, \"after\": ["));
}

TEST(ScheduleTest, PolicyNamesRoundTrip) {
  for (const char* name : {"single", "wavefront", "asap"}) {
    absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(name);
    ASSERT_TRUE(policy.ok());
    EXPECT_STREQ(SchedulePolicyName(*policy), name);
  }
  EXPECT_FALSE(ParseSchedulePolicy("fastest").ok());
}

}  // namespace
}  // namespace graphserve
