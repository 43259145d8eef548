#pragma once
// graphserve-capture prepare: a model file in, a model repository entry out.
// Imports the model, captures and checks its M x N graphs (GraphSet),
// measures each size's eager and graph latency (the cost table the server
// plans pad-or-split with), writes config.pbtxt and the model into
// <repo>/<model>/, and reports latency, memory and capture time.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "capture/graph_set.h"
#include "capture/model_config_writer.h"
#include "planning/batch_sizes.h"
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
  // Largest batch one graph holds (history choice), and the config's
  // max_batch_size (the server splits above the largest captured size).
  // 0: the largest captured size.
  int64_t max_batch_size = 0;
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
  // Cost table: untimed and timed launches per size and mode. The planner
  // compares sizes' medians; 30 launches hold them within a few percent, as
  // the server's own measurement at load (ServedModelOptions::cost_iters).
  // 100 made the table the largest part of a 32-size prepare (2.8 s of the
  // H200 encoder's 6.3 s).
  int64_t cost_warmup = 3;
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
  // Set when the sizes came from a history.
  std::optional<SizeChoice> choice;
  std::optional<SizeChoice> pow2_ladder;
  std::vector<CaptureCostEntry> costs;  // one per graph, in key order
  std::vector<size_t> graph_nodes;      // per size, slot 0
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
};

// Errors: FailedPrecondition when no GPU is visible; the importer's error for
// an unreadable or unsupported model (naming every unsupported op);
// ResourceExhausted naming the bytes that did not fit; a capture, post-
// processing or check failure naming the slot and batch size.
absl::StatusOr<PrepareReport> Prepare(const PrepareOptions& options, std::ostream& progress);

// The human-readable report (also written to <out_dir>/capture_report.txt).
std::string FormatPrepareReport(const PrepareReport& report);

}  // namespace graphserve
