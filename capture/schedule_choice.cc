#include "capture/schedule_choice.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "capture/graph_set.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/fusion.h"

namespace graphserve {

namespace {

constexpr SchedulePolicy kPolicies[] = {SchedulePolicy::kSingle, SchedulePolicy::kWavefront,
                                        SchedulePolicy::kAsap};

// Two schedules that issue the same steps on the same lanes capture the same
// graph: time only the first.
bool SameSchedule(const Schedule& a, const Schedule& b) {
  if (a.steps.size() != b.steps.size()) return false;
  for (size_t i = 0; i < a.steps.size(); ++i) {
    if (a.steps[i].step != b.steps[i].step || a.steps[i].lane != b.steps[i].lane) return false;
  }
  return true;
}

struct Candidate {
  SchedulePolicy policy;
  int lanes;
  std::unique_ptr<GraphSet> set;
  int launches = 1;  // per round
  double warmup_us = 0;  // per replay, over the warm-up replays
  std::vector<double> round_us;
};

// Milliseconds from `start` to `stop`, once `stop` is reached.
absl::StatusOr<float> ElapsedMs(const CudaEvent& start, const CudaEvent& stop) {
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

// Mean time of one replay over `launches` back-to-back replays.
absl::StatusOr<double> TimeReplays(const GraphSet& set, const GraphKey& key, int launches,
                                   const CudaEvent& start, const CudaEvent& stop) {
  const cudaStream_t stream = set.stream(0);
  const cudaGraphExec_t exec = set.graph_exec(0, key);
  CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < launches; ++i) CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec, stream));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream));
  ASSIGN_OR_RETURN(const float ms, ElapsedMs(start, stop));
  return 1000.0 * ms / launches;
}

// The launches a round of `set`'s replays takes: `options.launches`, or as
// many as fill `round_budget_us` at the pace of its warmup replays, at least
// one. Its warmup replays run here, once.
absl::StatusOr<int> LaunchesPerRound(const GraphSet& set, const GraphKey& key,
                                     const ScheduleChoiceOptions& options, const CudaEvent& start,
                                     const CudaEvent& stop, double* replay_us) {
  if (options.warmup == 0) return options.launches;
  ASSIGN_OR_RETURN(*replay_us, TimeReplays(set, key, options.warmup, start, stop));
  return std::clamp(static_cast<int>(options.round_budget_us / std::max(*replay_us, 1.0)), 1,
                    options.launches);
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

absl::StatusOr<ScheduleChoice> ChooseForKey(const Model& model, const GraphKey& key,
                                            const ScheduleChoiceOptions& options) {
  ScheduleChoice choice;
  choice.key = key;
  ASSIGN_OR_RETURN(const BoundGraph graph, options.bound_graphs->At(key));
  // The executor's own fusion options, so that the schedules name its steps.
  const FusionPlan fusion = PlanFusion(graph, FusionOptionsOf(options.executor));

  std::vector<Candidate> candidates;
  std::vector<Schedule> schedules;
  for (SchedulePolicy policy : kPolicies) {
    const Schedule schedule = MakeSchedule(
        graph, fusion, {.policy = policy, .max_lanes = options.executor.schedule.max_lanes});
    choice.max_width = schedule.max_width;
    choice.critical_path = schedule.critical_path;
    const bool duplicate = std::any_of(schedules.begin(), schedules.end(),
                                       [&](const Schedule& s) { return SameSchedule(s, schedule); });
    if (duplicate) continue;
    schedules.push_back(schedule);
    candidates.push_back({policy, schedule.lanes, nullptr, 1, 0, {}});
  }
  if (candidates.size() == 1) return choice;  // one chain: single it is

  const auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  const auto capture_start = std::chrono::steady_clock::now();
  for (Candidate& candidate : candidates) {
    GraphSetOptions set_options;
    set_options.graphs = {key};
    set_options.executor = options.executor;
    set_options.executor.schedule.policy = candidate.policy;
    set_options.check_replays = false;  // the final set checks what is kept
    // The first candidate's warm-up ran the key's kernels and algorithms.
    set_options.warmed_up = &candidate != &candidates.front();
    set_options.algorithm_choices = options.algorithm_choices;
    set_options.weights = options.weights;
    set_options.bound_graphs = options.bound_graphs;
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(model, set_options);
    if (!set.ok()) {
      return AnnotateStatus(set.status(), absl::StrCat("schedule '",
                                                       SchedulePolicyName(candidate.policy),
                                                       "' at batch ", GraphKeyString(key)));
    }
    candidate.set = *std::move(set);
  }
  choice.capture_ms = since(capture_start);
  const auto replay_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(const CudaEvent start, CudaEvent::Create(/*timing=*/true));
  ASSIGN_OR_RETURN(const CudaEvent stop, CudaEvent::Create(/*timing=*/true));
  double longest_us = 0;
  for (Candidate& candidate : candidates) {
    double warmup_us = 0;
    ASSIGN_OR_RETURN(candidate.launches,
                     LaunchesPerRound(*candidate.set, key, options, start, stop, &warmup_us));
    candidate.warmup_us = warmup_us;
    longest_us = std::max(longest_us, warmup_us);
  }
  // Interleaved rounds, so that clock and thermal drift reach every
  // candidate alike. Replays of 10 ms or more (of graphs uploaded when
  // captured) vary far less than the `min_gain` a candidate must win by:
  // their warm-up replays, themselves a round, tell them apart (3 rounds more
  // took 0.8 s of BERT-base's load at 32 rows of 512 tokens, a 110 ms
  // replay).
  const bool long_replays = longest_us >= 10'000 && options.warmup > 0;
  if (long_replays) {
    for (Candidate& candidate : candidates) candidate.round_us.push_back(candidate.warmup_us);
  }
  const int rounds = long_replays ? 0 : options.rounds;
  for (int round = 0; round < rounds; ++round) {
    for (Candidate& candidate : candidates) {
      ASSIGN_OR_RETURN(const double us,
                       TimeReplays(*candidate.set, key, candidate.launches, start, stop));
      candidate.round_us.push_back(us);
    }
  }
  choice.replay_ms = since(replay_start);
  for (const Candidate& candidate : candidates) {
    choice.candidates.push_back({candidate.policy, candidate.lanes, Median(candidate.round_us)});
  }
  const ScheduleCandidateTime& single = choice.candidates.front();
  const ScheduleCandidateTime* best = &single;
  for (const ScheduleCandidateTime& candidate : choice.candidates) {
    if (candidate.replay_us < best->replay_us) best = &candidate;
  }
  if (best->replay_us < (1.0 - options.min_gain) * single.replay_us) {
    choice.policy = best->policy;
    choice.lanes = best->lanes;
  }
  return choice;
}

}  // namespace

absl::StatusOr<std::optional<SchedulePolicy>> ParseScheduleRequest(const std::string& name) {
  if (name.empty() || name == "auto") return std::nullopt;
  absl::StatusOr<SchedulePolicy> policy = ParseSchedulePolicy(name);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "schedule '", name.substr(0, 32), "' should be auto, single, wavefront or asap"));
  }
  return *policy;
}

absl::StatusOr<std::vector<ScheduleChoice>> ChooseSchedules(
    const Model& model, const std::vector<GraphKey>& keys, const ScheduleChoiceOptions& options) {
  if (options.rounds < 1 || options.launches < 1 || options.warmup < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule timing needs rounds >= 1, launches >= 1 and warmup >= 0; got ",
                     options.rounds, ", ", options.launches, ", ", options.warmup));
  }
  ScheduleChoiceOptions shared = options;
  if (!shared.bound_graphs) shared.bound_graphs = std::make_shared<BoundGraphs>(model);
  if (&shared.bound_graphs->model() != &model) {
    return absl::InvalidArgumentError("the schedule timing's bound graphs bind another model");
  }
  return ChooseAcrossKeys(keys, [&](const GraphKey& key) {
    return ChooseForKey(model, key, shared);
  });
}

absl::StatusOr<std::vector<ScheduleChoice>> ChooseAcrossKeys(
    const std::vector<GraphKey>& keys,
    const std::function<absl::StatusOr<ScheduleChoice>(const GraphKey&)>& time_one) {
  // Note [Schedules between timed sizes]: rows x positions of the bucket.
  const auto work = [](const GraphKey& key) {
    int64_t positions = 1;
    for (int64_t extent : key.bucket) positions *= extent;
    return key.batch_size * positions;
  };
  std::vector<GraphKey> sorted = keys;
  std::sort(sorted.begin(), sorted.end(), [&](const GraphKey& a, const GraphKey& b) {
    return std::pair(work(a), a) < std::pair(work(b), b);
  });
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::map<GraphKey, ScheduleChoice> chosen;
  const auto time = [&](size_t k) -> absl::Status {
    if (chosen.contains(sorted[k])) return absl::OkStatus();
    ASSIGN_OR_RETURN(chosen[sorted[k]], time_one(sorted[k]));
    return absl::OkStatus();
  };
  // Ranges [lo, hi] of sorted keys with both ends timed, still to fill.
  std::vector<std::pair<size_t, size_t>> ranges;
  if (!sorted.empty()) {
    RETURN_IF_ERROR(time(0));
    RETURN_IF_ERROR(time(sorted.size() - 1));
    ranges.push_back({0, sorted.size() - 1});
  }
  while (!ranges.empty()) {
    const auto [lo, hi] = ranges.back();
    ranges.pop_back();
    if (hi - lo <= 1) continue;
    const ScheduleChoice& low = chosen.at(sorted[lo]);
    const ScheduleChoice& high = chosen.at(sorted[hi]);
    if (low.policy == high.policy && work(sorted[hi]) <= kUntimedWorkRatio * work(sorted[lo])) {
      for (size_t k = lo + 1; k < hi; ++k) {
        chosen[sorted[k]] = {.key = sorted[k], .policy = low.policy,
                             .same_as_below = sorted[lo], .same_as_above = sorted[hi]};
      }
      continue;
    }
    const size_t mid = (lo + hi) / 2;
    RETURN_IF_ERROR(time(mid));
    ranges.push_back({lo, mid});
    ranges.push_back({mid, hi});
  }
  std::vector<ScheduleChoice> choices;
  for (const GraphKey& key : keys) choices.push_back(chosen.at(key));
  return choices;
}

absl::StatusOr<std::vector<ScheduleChoice>> ApplyScheduleRequest(
    const Model& model, std::optional<SchedulePolicy> request, GraphSetOptions& set_options,
    ScheduleChoiceOptions timing) {
  if (!set_options.algorithm_choices) {
    set_options.algorithm_choices = std::make_shared<AlgorithmChoices>();
  }
  if (!set_options.weights) {
    ASSIGN_OR_RETURN(set_options.weights, WeightStore::Create(set_options.executor.device));
  }
  if (!set_options.bound_graphs) set_options.bound_graphs = std::make_shared<BoundGraphs>(model);
  std::vector<ScheduleChoice> choices;
  if (request.has_value()) {
    set_options.executor.schedule.policy = *request;
    for (const GraphKey& key : set_options.graphs) {
      choices.push_back({.key = key, .policy = *request});
    }
    return choices;
  }
  timing.executor = set_options.executor;
  timing.algorithm_choices = set_options.algorithm_choices;
  timing.weights = set_options.weights;
  timing.bound_graphs = set_options.bound_graphs;
  ASSIGN_OR_RETURN(choices, ChooseSchedules(model, set_options.graphs, timing));
  for (const ScheduleChoice& choice : choices) {
    ScheduleOptions& schedule = set_options.schedules[choice.key];
    schedule = set_options.executor.schedule;
    schedule.policy = choice.policy;
  }
  return choices;
}

void RecordPlannedSchedules(const GraphSet& set, std::vector<ScheduleChoice>& choices) {
  for (ScheduleChoice& choice : choices) {
    const CapturedGraphInfo& info = set.graph_info(0, choice.key);
    choice.lanes = info.lanes;
    choice.events = info.events;
    choice.max_width = info.max_width;
    choice.critical_path = info.critical_path;
  }
}

}  // namespace graphserve
