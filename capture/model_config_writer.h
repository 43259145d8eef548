#pragma once
// The model repository entry graphserve-capture prepare writes (its config
// is the one the server's load completed, capture_cli/prepare.h), in the
// layout the server reads:
//   <repo>/<model>/config.pbtxt       the model config (proto/model_config.proto,
//                                     protobuf text format)
//   <repo>/<model>/<version>/model.onnx
// No GPU needed: unit-tested in CI.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/graph_key.h"
#include "proto/model_config.pb.h"
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

// The config as config.pbtxt text, under a comment saying who wrote it.
std::string ModelConfigText(const inference::ModelConfig& config);

// Writes <model_dir>/config.pbtxt and copies `model_file` to
// <model_dir>/<version>/model.onnx, creating directories as needed and
// replacing what was there. Errors name the path.
absl::Status WriteModelDirectory(const std::string& model_dir, const std::string& model_file,
                                 const inference::ModelConfig& config, int version = 1);

}  // namespace graphserve
