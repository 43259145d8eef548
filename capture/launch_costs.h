#pragma once
// The cost table: each captured size's measured latency, eager and graph, as
// the server sees one chunk (staging copy, H2D copies, launch, D2H copies,
// completion). The batch planner reads it to choose between padding a
// request up and splitting it (planning/batch_planner.h). Measured by
// `graphserve-capture prepare` into config.pbtxt, and by the server at load
// when a config carries none.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/graph_set.h"
#include "capture/model_config_writer.h"
#include "runtime/bound_graph.h"

namespace graphserve {

struct LaunchCostOptions {
  // The slot that is timed; it must be idle.
  int slot = 0;
  // Untimed launches per key and mode, then timed ones (the median is kept);
  // a warm-up launch over the measuring budget is timed, and the only one.
  int64_t warmup = 10;
  int64_t iters = 100;
  // The launches timed: both (what `prepare` records in the config), or
  // only the one a server serves, at load, where each costs load time; the
  // other's field stays 0, "not measured" to the cost table.
  std::vector<LaunchMode> modes = {LaunchMode::kEager, LaunchMode::kGraph};
};

// Times full-batch launches of every key of `set` (each batch size at each
// shape bucket), in each of `options.modes`, on random inputs with
// `any_size`'s dtypes (the model bound at any key): one entry per key, in
// set.keys() order, what the planner plans each bucket with. Blocks on the
// GPU: a load-time tool, never a serving path. Call with the set's device
// current.
absl::StatusOr<std::vector<CaptureCostEntry>> MeasureLaunchCosts(const GraphSet& set,
                                                                 const BoundGraph& any_size,
                                                                 const LaunchCostOptions& options);

// The captured sizes whose chunks run faster back to back through the
// slot's two staging buffers (the next launched before the previous is
// waited for, Note [Double-buffered staging]) than one at a time: each size
// is timed both ways over a closed loop of full chunks in `mode`, and is
// kept when double-buffered chunks take under 0.97 of the single-buffered
// time. Measured, not assumed: on the H200 a 27 us replay ran 10-15% slower
// double-buffered (its graph relaunched while still queued), while 16-row
// chunks ran up to 10% faster. Same contract as MeasureLaunchCosts, whose
// launches, run just before at load, warm the sizes up: one chunk here
// paces the loops, not `options.warmup`. Sizes are timed at the set's
// largest bucket. `single_buffered_us`, one per key of set.keys() when
// MeasureLaunchCosts just timed the same chunks in `mode` (the
// single-buffered time), spares timing them again; empty: timed here.
absl::StatusOr<std::vector<int64_t>> SizesFasterDoubleBuffered(
    const GraphSet& set, const BoundGraph& any_size, LaunchMode mode,
    const LaunchCostOptions& options, const std::vector<double>& single_buffered_us = {});

}  // namespace graphserve
