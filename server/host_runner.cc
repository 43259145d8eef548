#include "server/host_runner.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/bind.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::StatusOr<std::unique_ptr<HostRunner>> HostRunner::Create(const Model& model,
                                                               const HostRunnerOptions& options) {
  if (options.num_slots < 1) return absl::InvalidArgumentError("HostRunner needs num_slots >= 1");
  if (options.batch_sizes.empty()) {
    return absl::InvalidArgumentError("HostRunner needs at least one batch size");
  }
  std::map<int64_t, std::unique_ptr<HostExecutor>> executors;
  size_t weight_bytes = 0;
  for (int64_t batch : options.batch_sizes) {
    BindOptions bind;
    bind.batch_size = batch;
    absl::StatusOr<BoundGraph> graph = BindModel(model, bind);
    if (!graph.ok()) {
      return absl::Status(graph.status().code(), absl::StrCat("binding for batch size ", batch,
                                                              ": ", graph.status().message()));
    }
    if (weight_bytes == 0) {
      for (const BoundValue& value : graph->values) {
        if (value.is_constant()) weight_bytes += value.bytes();
      }
    }
    ASSIGN_OR_RETURN(executors[batch], HostExecutor::Create(*std::move(graph)));
  }
  return std::unique_ptr<HostRunner>(
      new HostRunner(options.num_slots, std::move(executors), weight_bytes));
}

HostRunner::HostRunner(int num_slots, std::map<int64_t, std::unique_ptr<HostExecutor>> executors,
                       size_t weight_bytes)
    : num_slots_(num_slots), executors_(std::move(executors)), weight_bytes_(weight_bytes) {}

absl::Status HostRunner::PrepareWorkerThread(int /*slot*/) { return absl::OkStatus(); }

absl::Status HostRunner::Run(int /*slot*/, const ChunkJob& job, ChunkTiming* timing) {
  const auto found = executors_.find(job.chunk.batch_size);
  if (found == executors_.end()) {
    return absl::InternalError(
        absl::StrCat("no host plan for batch size ", job.chunk.batch_size));
  }
  const BoundGraph& graph = found->second->graph();
  const int64_t rows = job.chunk.rows;

  Clock::time_point start = Clock::now();
  // Real rows first, zeros after: the padding a graph replay would see.
  std::vector<HostTensor> inputs;
  inputs.reserve(graph.inputs.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.inputs[i]);
    HostTensor tensor(value.dtype, value.dims);
    const size_t row_bytes = tensor.bytes() / static_cast<size_t>(job.chunk.batch_size);
    std::memcpy(tensor.raw(), job.inputs[i], row_bytes * static_cast<size_t>(rows));
    inputs.push_back(std::move(tensor));
  }
  timing->input_ns = NanosSince(start);

  start = Clock::now();
  ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, found->second->Run(inputs));
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (job.outputs[o] == nullptr) continue;
    const size_t row_bytes = outputs[o].bytes() / static_cast<size_t>(job.chunk.batch_size);
    std::memcpy(job.outputs[o], outputs[o].raw(), row_bytes * static_cast<size_t>(rows));
  }
  timing->output_ns = NanosSince(start);
  return absl::OkStatus();
}

std::string HostRunner::description() const { return "host executor (no GPU)"; }

}  // namespace graphserve
