#pragma once
// `schedule: "auto"`: the multi-stream schedule of each captured size, chosen
// by measurement. For each size, the policies whose schedules differ (a model
// that is one chain gives every policy one lane, and needs no timing) are
// captured into one-slot graph sets side by side and replayed in interleaved
// rounds; the fastest wins, unless it beats "single" by no more than
// `min_gain`, in which case "single" keeps the simpler graph and the smaller
// arena. Run on the GPU that will serve; takes a few captures per size.

#include <cstdint>
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
  // Timing: `rounds` rounds, each replaying every candidate `launches` times
  // back to back after `warmup` untimed replays; a candidate's time is the
  // median over rounds of its per-launch mean. 30 replays per candidate: on
  // the H100, Inception-v3 at 4 sizes took 24 s to choose with 161.
  int rounds = 5;
  int launches = 5;
  int warmup = 1;
  // A multi-lane candidate must be faster than single by more than this
  // fraction to be chosen.
  double min_gain = 0.02;
};

// "auto" (or empty): nullopt, choose by measurement; otherwise the policy
// ParseSchedulePolicy names. InvalidArgument lists the choices.
absl::StatusOr<std::optional<SchedulePolicy>> ParseScheduleRequest(const std::string& name);

// One choice per size, in `batch_sizes` order (events left 0: the plan
// that runs the choice counts them). Errors name the size and the
// policy whose capture failed.
absl::StatusOr<std::vector<ScheduleChoice>> ChooseSchedules(
    const Model& model, const std::vector<int64_t>& batch_sizes,
    const ScheduleChoiceOptions& options);

// Applies a schedule request to `set_options` (whose executor options give
// the device, TF32, fusion and, in schedule.max_lanes, the lane limit)
// before GraphSet::Create: a given policy for every size, or, for auto
// (nullopt), each size's measured choice, timed with `timing` (its executor
// options are replaced by set_options'). The sets share set_options'
// algorithm choices and weight store, created here when null. Returns one choice per size of
// set_options.batch_sizes; RecordPlannedSchedules completes them.
absl::StatusOr<std::vector<ScheduleChoice>> ApplyScheduleRequest(
    const Model& model, std::optional<SchedulePolicy> request, GraphSetOptions& set_options,
    ScheduleChoiceOptions timing = {});

// Each choice's lanes, events, width and critical path as slot 0's plan of
// its size has them.
void RecordPlannedSchedules(const GraphSet& set, std::vector<ScheduleChoice>& choices);

}  // namespace graphserve
