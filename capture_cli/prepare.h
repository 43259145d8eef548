#pragma once
// graphserve-capture prepare: a model file in, a model repository entry out.
// Writes the model's config (its interface, declared from the file, and the
// capture section the flags give), loads it exactly as the server does
// (ServedModel::Load: import, padding check, schedules, M x N graphs captured
// and checked, launch costs), and writes the config as loaded, with its
// measured costs and schedules, and the model into <repo>/<model>/, and
// reports latency, memory and capture time.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/graph_set.h"
#include "capture/model_config_writer.h"
#include "planning/batch_sizes.h"
#include "planning/shape_grid.h"
#include "proto/model_config.pb.h"
#include "runtime/ir.h"
#include "runtime/passes/autocast.h"
#include "runtime/passes/precision.h"
#include "runtime/schedule.h"

namespace graphserve {

struct PrepareOptions {
  // The ONNX model file.
  std::string model_path;
  // <repo>/<model>: written (created if needed); its last component names
  // the model.
  std::string out_dir;
  // M: stream slots.
  int num_streams = 2;
  // The sizes to capture; when empty they are chosen from `history_path`
  // (num_sizes of them, see planning/batch_sizes.h).
  std::vector<int64_t> batch_sizes;
  std::string history_path;
  int num_sizes = 0;
  // Instead of num_sizes, for a model with one shape dim (a sequence
  // length): the history is a (rows x length) one (planning/shape_grid.h)
  // and the buckets are chosen from it too, at most max_graphs graphs a
  // slot: with the sizes (ChooseSizesAndBuckets), or for the batch_sizes
  // given (ChooseBucketsForSizes; what a model under dynamic batching wants,
  // since the history's requests are merged into larger executions).
  int max_graphs = 0;
  // The config's max_batch_size, the largest request the server accepts
  // (it splits above the largest captured size), and with a history the
  // largest size chosen. Unset: the largest captured size. 0: the model
  // does not batch (Triton's max_batch_size 0): no sizes are given, its
  // dynamic dim 0 is a shape dim like the others, and each request runs
  // alone (Note [Models without a batch dim] in runtime/ir.h).
  std::optional<int64_t> max_batch_size;
  // Shape buckets to capture every size at, each with one extent per shape
  // dim of the model (a sequence length, an image's height and width; the
  // order ShapeDimNames gives). Empty: the server's default buckets (Note
  // [Shape buckets] in server/shape_buckets.h). Refused for a model without
  // shape dims.
  std::vector<std::vector<int64_t>> buckets;
  // capture.eager_extents: the largest extents, one per shape dim (the
  // buckets' order), a request no bucket takes may bring to run eagerly at
  // its own extents (Note [Eager fallback] in server/eager_fallback.h).
  // Empty: such requests are refused.
  std::vector<int64_t> eager_extents;
  // What an input's padded positions hold (capture.padding), by input name.
  std::vector<std::pair<std::string, double>> padding;
  // capture.shape_padding: "checked" (empty, the default) or "exact".
  std::string shape_padding;
  int device = 0;
  bool allow_tf32 = false;
  // What the model computes in (runtime/passes/precision.h): imported with
  // it, and written into the config's capture.precision for the server to
  // import it the same way. tf32 also allows TF32 as allow_tf32 does; auto
  // runs its calibration batch on `device` (runtime/passes/autocast.h), and
  // the server runs its own at load.
  ModelPrecision precision = ModelPrecision::kFp32;
  // How each graph spreads independent branches over streams: "auto"
  // (measured per size), "single", "wavefront" or "asap"; at most max_lanes
  // streams per graph.
  std::string schedule = "auto";
  int max_lanes = 4;
  // Cost table: timed launches per graph and mode. The planner compares
  // sizes' medians; 30 launches hold them within a few percent, as the
  // server's own measurement at load (ServedModelOptions::cost_iters). 100
  // made the table the largest part of a 32-size prepare (2.8 s of the H200
  // encoder's 6.3 s).
  int64_t cost_iters = 30;
  // Progress bar with carriage returns (a terminal) or one line per graph.
  bool interactive_progress = false;
};

struct PrepareReport {
  std::string model_name;
  ModelPrecision precision = ModelPrecision::kFp32;
  // precision auto: the nodes its calibration batch keeps in float32 and
  // why, in model order.
  std::vector<Float32Node> float32_nodes;
  // fp32 and tf32: set when the model holds 16-bit floats but computes GEMMs
  // in float32 as written (Float32GemmsOfHalfModel, runtime/passes/precision.h).
  std::string float32_gemms_notice;
  std::string model_path;
  std::string out_dir;
  int num_streams = 0;
  std::vector<int64_t> batch_sizes;  // ascending
  int64_t max_batch_size = 0;        // as written into the config
  // The shape dims and buckets captured (empty for a model without shape
  // dims), and what the server made of them, e.g. "sequence 16,...,512
  // (padded)" (ModelLoadSummary::buckets).
  std::vector<std::string> shape_dims;
  std::vector<std::vector<int64_t>> buckets;
  std::string buckets_served;
  // Set when the sizes came from a history.
  std::optional<SizeChoice> choice;
  std::optional<SizeChoice> pow2_ladder;
  // Set when the buckets came from a history (max_graphs); pow2_grid too
  // when the sizes did.
  std::optional<GridChoice> grid;
  std::optional<GridChoice> pow2_grid;
  std::vector<CaptureCostEntry> costs;  // one per graph, in key order
  std::vector<size_t> graph_nodes;      // per key, slot 0
  // The schedule requested, and what each size runs (ascending size).
  std::string schedule_request;
  int max_lanes = 0;
  std::vector<ScheduleChoice> schedules;
  double schedule_choice_ms = 0;  // timing the candidates (auto only)
  std::vector<SlotMemory> slots;
  size_t weight_bytes = 0;
  SetupTimes setup;  // GraphSet::Create: bind, plan, capture, check
  double worst_check_rel_err = 0;
  // Slot 0's graphs against the independent reference (Note [An independent
  // reference] in capture/reference_plans.h), and the tolerance they met.
  double worst_reference_rel_err = 0;
  double reference_tolerance = 0;
  // The whole load, and where it went (ModelLoadSummary::load_phases).
  double load_ms = 0;
  std::string load_phases;
};

// Errors: FailedPrecondition when no GPU is visible; the importer's error for
// an unreadable or unsupported model (naming every unsupported op);
// ResourceExhausted naming the bytes that did not fit; the server's load
// error otherwise (a capture, post-processing or check failure naming the
// slot and graph).
absl::StatusOr<PrepareReport> Prepare(const PrepareOptions& options, std::ostream& progress);

// The config `options` ask for, before the load measures anything: the
// model's interface declared from `model` (imported as written, without a
// precision pass; DeclareConfigFromModel in server/triton_config.h),
// max_batch_size, and the capture section's sizes, streams, schedule,
// precision, buckets (options.buckets, or those chosen from the history)
// and padding. InvalidArgument naming the option that does not fit the
// model (a bucket without one extent per shape dim, buckets chosen for a
// model without exactly one shape dim, sizes above max_batch_size, sizes
// for a model that does not batch).
absl::StatusOr<inference::ModelConfig> PrepareConfig(
    const PrepareOptions& options, const std::vector<int64_t>& batch_sizes,
    const std::vector<std::vector<int64_t>>& buckets, Model* model);

// The human-readable report (also written to <out_dir>/capture_report.txt).
std::string FormatPrepareReport(const PrepareReport& report);

}  // namespace graphserve
