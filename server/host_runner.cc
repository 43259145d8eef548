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
  if (options.graphs.empty()) {
    return absl::InvalidArgumentError("HostRunner needs at least one batch size");
  }
  std::map<GraphKey, std::unique_ptr<HostExecutor>> executors;
  size_t weight_bytes = 0;
  for (const GraphKey& key : options.graphs) {
    ASSIGN_OR_RETURN(const BindOptions bind, BindOptionsAt(model, key));
    absl::StatusOr<BoundGraph> graph = BindModel(model, bind);
    if (!graph.ok()) {
      return absl::Status(graph.status().code(),
                          absl::StrCat("binding for batch size ", GraphKeyString(key), ": ",
                                       graph.status().message()));
    }
    if (weight_bytes == 0) {
      for (const BoundValue& value : graph->values) {
        if (value.is_constant()) weight_bytes += value.bytes();
      }
    }
    ASSIGN_OR_RETURN(executors[key], HostExecutor::Create(*std::move(graph)));
  }
  return std::unique_ptr<HostRunner>(
      new HostRunner(options.num_slots, std::move(executors), weight_bytes));
}

HostRunner::HostRunner(int num_slots, std::map<GraphKey, std::unique_ptr<HostExecutor>> executors,
                       size_t weight_bytes)
    : num_slots_(num_slots), executors_(std::move(executors)), weight_bytes_(weight_bytes) {}

absl::Status HostRunner::PrepareWorkerThread(int /*slot*/) { return absl::OkStatus(); }

absl::Status HostRunner::Start(int /*slot*/, int /*staging*/, const ChunkJob& job,
                               ChunkTiming* timing) {
  const auto found = executors_.find(job.key);
  if (found == executors_.end()) {
    return absl::InternalError(
        absl::StrCat("no host plan for batch size ", GraphKeyString(job.key)));
  }
  const BoundGraph& graph = found->second->graph();
  const auto batch = static_cast<size_t>(job.key.batch_size);

  Clock::time_point start = Clock::now();
  // Real rows first, then copies of row 0: the padding a graph replay sees
  // (Note [Padding rows from a valid row] in capture/padding_rows.h).
  std::vector<HostTensor> inputs;
  inputs.reserve(graph.inputs.size());
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.inputs[i]);
    inputs.emplace_back(value.dtype, value.dims);
  }
  const auto row_bytes = [&](size_t i) { return inputs[i].bytes() / batch; };
  for (const RowView& segment : job.segments) {
    if (segment.Uses(RowMemory::kDevice)) {
      return absl::InternalError("the host executor was given tensors in device memory");
    }
  }
  GatherInputRows(
      job, inputs.size(), [&](size_t i) { return static_cast<std::byte*>(inputs[i].raw()); },
      AllStaged);
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto* base = static_cast<std::byte*>(inputs[i].raw());
    for (size_t row = static_cast<size_t>(job.rows); row < batch; ++row) {
      std::memcpy(base + row * row_bytes(i), base, row_bytes(i));
    }
  }
  timing->input_ns = NanosSince(start);

  start = Clock::now();
  ASSIGN_OR_RETURN(std::vector<HostTensor> outputs, found->second->Run(inputs));
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  ScatterOutputRows(
      job, outputs.size(),
      [&](size_t o) { return static_cast<const std::byte*>(outputs[o].raw()); }, AllStaged);
  timing->output_ns = NanosSince(start);
  return absl::OkStatus();
}

std::string HostRunner::description() const { return "host executor (no GPU)"; }

}  // namespace graphserve
