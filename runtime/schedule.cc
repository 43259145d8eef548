#include "runtime/schedule.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_text.h"

namespace graphserve {

absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(const std::string& name) {
  if (name == "single") return SchedulePolicy::kSingle;
  if (name == "wavefront") return SchedulePolicy::kWavefront;
  if (name == "asap") return SchedulePolicy::kAsap;
  return absl::InvalidArgumentError(absl::StrCat("schedule policy '", name.substr(0, 32),
                                                 "' should be single, wavefront or asap"));
}

const char* SchedulePolicyName(SchedulePolicy policy) {
  switch (policy) {
    case SchedulePolicy::kSingle:
      return "single";
    case SchedulePolicy::kWavefront:
      return "wavefront";
    case SchedulePolicy::kAsap:
      return "asap";
  }
  return "single";
}

std::vector<std::vector<int>> StepPredecessors(const BoundGraph& graph, const FusionPlan& plan) {
  std::vector<int> writer(graph.values.size(), -1);
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
    for (ValueId out : plan.steps[s].outputs) writer[plan.alias_root[out]] = s;
  }
  std::vector<std::vector<int>> predecessors(plan.steps.size());
  for (int s = 0; s < static_cast<int>(plan.steps.size()); ++s) {
    std::set<int> unique;
    for (ValueId in : plan.steps[s].inputs) {
      const int w = writer[plan.alias_root[in]];
      if (w >= 0 && w != s) unique.insert(w);
    }
    predecessors[s].assign(unique.begin(), unique.end());
  }
  return predecessors;
}

namespace {

// Longest chain (in steps) ending at each step; the plan's order is
// topological, so one forward pass computes it.
std::vector<int> Depths(const std::vector<std::vector<int>>& predecessors) {
  std::vector<int> depth(predecessors.size(), 1);
  for (size_t s = 0; s < predecessors.size(); ++s) {
    for (int p : predecessors[s]) depth[s] = std::max(depth[s], depth[p] + 1);
  }
  return depth;
}

// Lanes by wave: each wave (steps of equal depth) spread round-robin.
std::vector<int> WavefrontLanes(const std::vector<int>& depth, int max_lanes) {
  std::vector<int> lane(depth.size(), 0);
  std::map<int, int> next_in_wave;
  for (size_t s = 0; s < depth.size(); ++s) lane[s] = next_in_wave[depth[s]]++ % max_lanes;
  return lane;
}

// Heavy chains: repeatedly the longest path through unassigned steps.
std::vector<int> HeavyChainLanes(const std::vector<std::vector<int>>& predecessors, int max_lanes) {
  const int n = static_cast<int>(predecessors.size());
  std::vector<std::vector<int>> successors(n);
  for (int s = 0; s < n; ++s) {
    for (int p : predecessors[s]) successors[p].push_back(s);
  }
  std::vector<int> lane(n, -1);
  std::vector<int> load;  // steps per lane
  int assigned = 0;
  while (assigned < n) {
    // Longest path over unassigned steps, by dynamic programming in reverse
    // topological order.
    std::vector<int> length(n, 0), next(n, -1);
    for (int s = n - 1; s >= 0; --s) {
      if (lane[s] >= 0) continue;
      length[s] = 1;
      for (int t : successors[s]) {
        if (lane[t] < 0 && length[t] + 1 > length[s]) {
          length[s] = length[t] + 1;
          next[s] = t;
        }
      }
    }
    int start = -1;
    for (int s = 0; s < n; ++s) {
      if (lane[s] < 0 && (start < 0 || length[s] > length[start])) start = s;
    }
    int chain_lane = static_cast<int>(load.size());
    if (chain_lane >= max_lanes) {
      chain_lane = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    } else {
      load.push_back(0);
    }
    for (int s = start; s >= 0; s = next[s]) {
      lane[s] = chain_lane;
      ++load[chain_lane];
      ++assigned;
    }
  }
  return lane;
}

}  // namespace

Schedule MakeSchedule(const BoundGraph& graph, const FusionPlan& plan,
                      const ScheduleOptions& options) {
  const std::vector<std::vector<int>> predecessors = StepPredecessors(graph, plan);
  const std::vector<int> depth = Depths(predecessors);
  Schedule schedule;
  schedule.policy = options.policy;
  std::map<int, int> wave_size;
  for (int d : depth) schedule.max_width = std::max(schedule.max_width, ++wave_size[d]);
  for (int d : depth) schedule.critical_path = std::max(schedule.critical_path, d);

  const int max_lanes = std::max(1, options.max_lanes);
  std::vector<int> lane(plan.steps.size(), 0);
  if (options.policy == SchedulePolicy::kWavefront) lane = WavefrontLanes(depth, max_lanes);
  if (options.policy == SchedulePolicy::kAsap) lane = HeavyChainLanes(predecessors, max_lanes);

  // Issue order: the plan's (topological) order, or wave by wave for the
  // wavefront policy.
  std::vector<int> order(plan.steps.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
  if (options.policy == SchedulePolicy::kWavefront) {
    std::stable_sort(order.begin(), order.end(),
                     [&depth](int a, int b) { return depth[a] < depth[b]; });
  }
  std::vector<int> issue_index(plan.steps.size());
  for (size_t i = 0; i < order.size(); ++i) issue_index[order[i]] = static_cast<int>(i);

  // Lanes numbered by first use, so that lanes 0..L-1 are all used and the
  // first step issues on lane 0 (the slot's own stream).
  std::map<int, int> renumbered;
  for (int s : order) renumbered.emplace(lane[s], static_cast<int>(renumbered.size()));
  for (int& l : lane) l = renumbered[l];

  for (int s : order) {
    ScheduledStep scheduled;
    scheduled.step = s;
    scheduled.lane = lane[s];
    // The last predecessor on each other lane is enough: stream order covers
    // the earlier ones.
    std::map<int, int> last_on_lane;
    for (int p : predecessors[s]) {
      if (lane[p] == lane[s]) continue;
      int& last = last_on_lane[lane[p]];
      last = std::max(last, issue_index[p]);
    }
    for (const auto& [other_lane, index] : last_on_lane) scheduled.after.push_back(index);
    std::sort(scheduled.after.begin(), scheduled.after.end());
    schedule.steps.push_back(std::move(scheduled));
  }
  schedule.lanes = std::max(1, static_cast<int>(renumbered.size()));
  return schedule;
}

std::string ScheduleToJson(const BoundGraph& graph, const FusionPlan& plan,
                           const Schedule& schedule) {
  std::string json =
      absl::StrCat("{\"policy\": \"", SchedulePolicyName(schedule.policy),
                   "\", \"lanes\": ", schedule.lanes, ", \"max_width\": ", schedule.max_width,
                   ", \"critical_path\": ", schedule.critical_path, ", \"steps\": [");
  for (size_t i = 0; i < schedule.steps.size(); ++i) {
    const ScheduledStep& s = schedule.steps[i];
    std::vector<std::string> names;
    for (int n : plan.steps[s.step].nodes) {
      names.push_back(JsonString(graph.nodes[n].name));
    }
    absl::StrAppend(&json, i == 0 ? "" : ", ", "{\"nodes\": [", absl::StrJoin(names, ", "),
                    "], \"lane\": ", s.lane, ", \"after\": [", absl::StrJoin(s.after, ", "), "]}");
  }
  absl::StrAppend(&json, "]}\n");
  return json;
}

}  // namespace graphserve
