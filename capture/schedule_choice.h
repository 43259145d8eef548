#pragma once
// `schedule: "auto"`: the multi-stream schedule of each captured size, chosen
// by measurement. For each size, the policies whose schedules differ (a model
// that is one chain gives every policy one lane, and needs no timing) are
// captured into one-slot graph sets side by side and replayed in interleaved
// rounds; the fastest wins, unless it beats "single" by no more than
// `min_gain`, in which case "single" keeps the simpler graph and the smaller
// arena. Run on the GPU that will serve; takes a few captures per size.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/graph_set.h"
#include "runtime/cuda/algorithm_choices.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/ir.h"
#include "runtime/schedule.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

struct ScheduleChoiceOptions {
  // Device, TF32 and fusion of the plans; schedule.max_lanes bounds every
  // candidate's lanes.
  CudaExecutorOptions executor;
  // Shared with the final graph set, so that candidates and the set run the
  // same kernels and each algorithm is timed once. Null: a fresh set.
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
  // The device's weights, shared by every candidate set (and the final set),
  // so they are uploaded once, not once per candidate. Null: a fresh store.
  std::shared_ptr<WeightStore> weights;
  // The model bound at each key, shared by the candidates (and the final
  // set): Note [Binding once per key] in runtime/bind.h. Null: fresh ones.
  std::shared_ptr<BoundGraphs> bound_graphs;
  // Timing: `rounds` rounds, each replaying every candidate `launches` times
  // back to back after `warmup` untimed replays; a candidate's time is the
  // median over rounds of its per-launch mean. 30 replays per candidate: on
  // the H100, Inception-v3 at 4 sizes took 24 s to choose with 161.
  // A round replays a candidate fewer times when `launches` of its replays
  // would take longer than `round_budget_us` (by the pace of its warmup,
  // which runs once; at least once), and replays of 10 ms or more are timed
  // by their warm-up replays alone: events resolve a replay of milliseconds
  // alone, and BERT-base's 32 rows of 512 tokens (110 ms a replay) spent
  // most of a load here.
  int rounds = 5;
  int launches = 5;
  int warmup = 1;
  double round_budget_us = 2000;
  // A multi-lane candidate must be faster than single by more than this
  // fraction to be chosen.
  double min_gain = 0.02;
};

// Choices for every key of `keys` (any order), calling `time_one` only for
// the keys Note [Schedules between timed sizes] needs: ordered by work, the
// least and the most, and the middle of every range whose ends disagree or
// span more than kUntimedWorkRatio. The others copy their neighbours'
// policy, with same_as_below/above set. In `keys` order.
absl::StatusOr<std::vector<ScheduleChoice>> ChooseAcrossKeys(
    const std::vector<GraphKey>& keys,
    const std::function<absl::StatusOr<ScheduleChoice>(const GraphKey&)>& time_one);

// Note [Schedules between timed sizes]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Timing a key's schedules costs a capture per candidate (tens of ms each):
// an encoder with 32 sizes spent 3.5 s of its 7.7 s prepare on it, with the
// same answer at every size. Whether extra streams pay depends on how much
// of the GPU one branch leaves idle, which changes slowly with a run's work:
// its rows times the positions of its bucket (the product of the bucket's
// extents; 1 without shape dims). Keys ordered by work: if keys a and b, b's
// work at most kUntimedWorkRatio times a's, chose the same policy, the keys
// between them are given it untimed. Ranges wider than that, or whose ends
// disagree, are split at their middle key, which is timed; ends that
// disagree are split down to neighbouring keys, so where the policy changes
// is found exactly. What goes unlooked-for is a policy that changes and
// changes back within two doublings of work. Over a bucket grid the cheap
// keys are timed most: BERT-base's grid timed only at its 512-token bucket
// spent 18 of a 41 s load there, and gave a 32-token request the schedule of
// 512. With one doubling as the ratio its 30 keys timed 12-13 (2.9 s of an
// 11 s load), with 4x 10-11 (2.3 s of 10.5 s; H200).
inline constexpr int64_t kUntimedWorkRatio = 4;

// "auto" (or empty): nullopt, choose by measurement; otherwise the policy
// ParseSchedulePolicy names. InvalidArgument lists the choices.
absl::StatusOr<std::optional<SchedulePolicy>> ParseScheduleRequest(const std::string& name);

// One choice per key, in `keys` order (events left 0: the plan that runs
// the choice counts them), timed at the keys ChooseAcrossKeys picks. Errors name the key and the policy whose capture
// failed.
absl::StatusOr<std::vector<ScheduleChoice>> ChooseSchedules(
    const Model& model, const std::vector<GraphKey>& keys, const ScheduleChoiceOptions& options);

// Applies a schedule request to `set_options` (whose executor options give
// the device, TF32, fusion and, in schedule.max_lanes, the lane limit)
// before GraphSet::Create: a given policy for every size, or, for auto
// (nullopt), each size's measured choice, timed with `timing` (its executor
// options are replaced by set_options'). The sets share set_options'
// algorithm choices, weight store and bound graphs, created here when null.
// Returns one choice per key of set_options.graphs; RecordPlannedSchedules
// completes them.
absl::StatusOr<std::vector<ScheduleChoice>> ApplyScheduleRequest(
    const Model& model, std::optional<SchedulePolicy> request, GraphSetOptions& set_options,
    ScheduleChoiceOptions timing = {});

// Each choice's lanes, events, width and critical path as slot 0's plan of
// its key has them.
void RecordPlannedSchedules(const GraphSet& set, std::vector<ScheduleChoice>& choices);

}  // namespace graphserve
