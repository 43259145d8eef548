#pragma once
// The step-DAG scheduler: which lane (stream) each step of a fusion plan
// (runtime/fusion.h) is issued on, and which steps of other lanes it waits
// for. Captured into one CUDA graph, the lanes' independent branches run in
// parallel. Pure graph work, no CUDA: `graphserve-capture schedule` prints a
// schedule on any machine. See Note [Schedules].

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/graph_key.h"
#include "runtime/bound_graph.h"
#include "runtime/fusion.h"

namespace graphserve {

enum class SchedulePolicy {
  kSingle,     // one lane, the fusion plan's order: what every graph did so far
  kWavefront,  // waves of steps whose inputs are ready; a wave's steps on different lanes
  kAsap,       // heavy chains: the longest remaining chain of dependent steps per lane
};

absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(const std::string& name);
const char* SchedulePolicyName(SchedulePolicy policy);

struct ScheduledStep {
  int step = 0;  // index into FusionPlan::steps
  int lane = 0;
  // Issue indices (into Schedule::steps) of the steps on other lanes this one
  // waits for: the last of its predecessors on each other lane.
  std::vector<int> after;
};

struct Schedule {
  SchedulePolicy policy = SchedulePolicy::kSingle;
  int lanes = 1;
  // The most steps with no path between them found in one wave: how wide the
  // graph is.
  int max_width = 1;
  // Steps on the longest dependency chain (the lower bound of any schedule,
  // in steps).
  int critical_path = 0;
  std::vector<ScheduledStep> steps;  // issue order: a topological order
};

struct ScheduleOptions {
  SchedulePolicy policy = SchedulePolicy::kSingle;
  // The most lanes a schedule may use (each is a stream of the slot).
  int max_lanes = 4;
};

// One candidate schedule timed at one batch size (capture/schedule_choice.h).
struct ScheduleCandidateTime {
  SchedulePolicy policy = SchedulePolicy::kSingle;
  int lanes = 1;
  double replay_us = 0;  // median bare replay of its captured graph
};

// The schedule kept for one captured graph, and what chose it.
struct ScheduleChoice {
  GraphKey key;
  SchedulePolicy policy = SchedulePolicy::kSingle;
  int lanes = 1;
  int events = 0;  // recorded by one run: fork, joins, cross-lane waits
  int max_width = 1;
  int critical_path = 0;
  // Timed candidates, single first; empty when the policy was given, no
  // policy gives more than one lane, or the size was not timed (below).
  std::vector<ScheduleCandidateTime> candidates;
  // Where timing this key went, milliseconds: capturing its candidates
  // (planning, algorithm timing, capture) and replaying them.
  double capture_ms = 0;
  double replay_ms = 0;
  // Set when the choice was not timed but taken from the timed keys on both
  // sides by work, which agreed (Note [Schedules between timed sizes]).
  std::optional<GraphKey> same_as_below;
  std::optional<GraphKey> same_as_above;
};

Schedule MakeSchedule(const BoundGraph& graph, const FusionPlan& plan,
                      const ScheduleOptions& options);

// For each step of the plan, the plan steps it reads values from.
std::vector<std::vector<int>> StepPredecessors(const BoundGraph& graph, const FusionPlan& plan);

// {"policy": P, "lanes": L, "max_width": W, "critical_path": C, "steps":
// [{"nodes": [bound node names fused into the step], "lane": k, "after":
// [issue indices]}]}, steps in issue order.
std::string ScheduleToJson(const BoundGraph& graph, const FusionPlan& plan,
                           const Schedule& schedule);

// Note [Schedules]
// ~~~~~~~~~~~~~~~~
// A step reads values that earlier steps wrote (values are written once), so
// the only orderings to keep are read-after-write edges; memory reuse is the
// memory planner's business, which plans over the same DAG. A step waits for
// a predecessor on another lane through an event recorded after it; on its
// own lane, stream order suffices. The policies follow RAF's: wavefront
// issues the DAG level by level, spreading each level over the lanes;
// ASAP (heavy chains) repeatedly takes the longest chain of unassigned steps
// as a lane, so a branch runs on one stream from start to end. Lanes beyond
// max_lanes fold onto the least loaded one.

}  // namespace graphserve
