#pragma once
// The model repository entry graphserve-capture prepare writes, in the layout
// the server reads:
//   <repo>/<model>/config.pbtxt       the model config (proto/model_config.proto,
//                                     protobuf text format)
//   <repo>/<model>/<version>/model.onnx
// No GPU needed: unit-tested in CI.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/graph_key.h"
#include "proto/model_config.pb.h"
#include "runtime/bound_graph.h"
#include "runtime/passes/precision.h"
#include "runtime/schedule.h"

namespace graphserve {

// One captured graph's measured latency (a batch size at a shape bucket):
// what the server's batch planner reads to choose between padding a request
// up and splitting it.
struct CaptureCostEntry {
  GraphKey key;
  double eager_us = 0;  // median wall time of an eager run, all rows, copies included
  double graph_us = 0;  // median wall time of a replay, all rows, copies included
};

// What a capture decided and measured.
struct CaptureSummary {
  // Directory name of the model in the repository, and the name clients use.
  std::string model_name;
  int num_streams = 1;
  // Captured sizes (any order; written ascending).
  std::vector<int64_t> batch_sizes;
  // One entry per captured size, or empty when not measured.
  std::vector<CaptureCostEntry> costs;
  // The largest request the server accepts (it splits requests above the
  // largest captured size). 0: the largest captured size.
  int64_t max_batch_size = 0;
  // The schedule requested ("auto", "single", "wavefront", "asap") and the
  // lane limit, and what each size runs (one entry per size, or empty).
  std::string schedule = "auto";
  int max_lanes = 4;
  std::vector<ScheduleChoice> schedules;
  // What the model was imported and captured in: written as
  // capture.precision unless it is the default, fp32.
  ModelPrecision precision = ModelPrecision::kFp32;
  // The inputs and outputs the model file types STRING, which the graph
  // holds as numbers (Note [Strings at the model's edges] in runtime/ir.h):
  // written TYPE_STRING, what clients send and receive.
  std::set<std::string> string_tensors;
};

// Writes a tensor's row dims (the batch dimension left out) into a config
// input or output. Triton refuses empty dims, so a row that is a scalar (a
// [batch] tensor) is written as its auto-complete writes it: dims [1] with
// an empty reshape.
template <typename ConfigTensor>
void SetConfigRowDims(const std::vector<int64_t>& row_dims, ConfigTensor* tensor) {
  if (row_dims.empty()) {
    tensor->add_dims(1);
    tensor->mutable_reshape()->clear_shape();
    return;
  }
  for (int64_t dim : row_dims) tensor->add_dims(dim);
}

// The capture section's record of one size's schedule.
inference::CaptureSchedule ScheduleToProto(const ScheduleChoice& choice);

// `entry` as config.pbtxt's capture.cost holds it.
inference::CaptureCost CostToProto(const CaptureCostEntry& entry);

// The config for `graph` (bound at any batch size: the batch dimension is
// left out of the dims). InvalidArgument for a dtype the protocol cannot name
// or a max_batch_size below the largest captured size.
absl::StatusOr<inference::ModelConfig> MakeModelConfig(const BoundGraph& graph,
                                                       const CaptureSummary& summary);

// The config as config.pbtxt text, under a comment saying who wrote it.
std::string ModelConfigText(const inference::ModelConfig& config);

// Writes <model_dir>/config.pbtxt and copies `model_file` to
// <model_dir>/<version>/model.onnx, creating directories as needed and
// replacing what was there. Errors name the path.
absl::Status WriteModelDirectory(const std::string& model_dir, const std::string& model_file,
                                 const inference::ModelConfig& config, int version = 1);

}  // namespace graphserve
