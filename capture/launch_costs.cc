#include "capture/launch_costs.h"

#include <algorithm>
#include <chrono>

#include "common/cuda_status.h"
#include "common/statistics.h"
#include "common/status.h"
#include "common/tensor.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// Median wall time of Launch + wait for `chunk`.
absl::StatusOr<double> MeasureLaunch(const GraphSet& set, const LaunchChunk& chunk,
                                     const std::vector<const void*>& inputs,
                                     const LaunchCostOptions& options) {
  std::vector<double> micros;
  for (int64_t i = 0; i < options.warmup + options.iters; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(set.Launch(chunk, inputs));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set.done_event(chunk.slot)));
    if (i >= options.warmup) {
      micros.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
  }
  return Median(std::move(micros));
}

}  // namespace

absl::StatusOr<std::vector<CaptureCostEntry>> MeasureLaunchCosts(const GraphSet& set,
                                                                 const BoundGraph& any_size,
                                                                 const LaunchCostOptions& options) {
  if (options.iters < 1) return absl::InvalidArgumentError("cost measurement needs iters >= 1");
  std::vector<CaptureCostEntry> costs;
  for (int64_t batch : set.batch_sizes()) {
    std::vector<HostTensor> inputs;
    std::vector<const void*> pointers;
    for (size_t i = 0; i < any_size.inputs.size(); ++i) {
      const BoundValue& value = any_size.value(any_size.inputs[i]);
      Dims dims = value.dims;
      dims[0] = batch;
      inputs.push_back(RandomTensor(value.dtype, dims, 1000 + i));
    }
    for (const HostTensor& input : inputs) pointers.push_back(input.raw());
    CaptureCostEntry entry;
    entry.batch_size = batch;
    ASSIGN_OR_RETURN(entry.eager_us,
                     MeasureLaunch(set, {options.slot, batch, batch, LaunchMode::kEager},
                                   pointers, options));
    ASSIGN_OR_RETURN(entry.graph_us,
                     MeasureLaunch(set, {options.slot, batch, batch, LaunchMode::kGraph},
                                   pointers, options));
    costs.push_back(entry);
  }
  return costs;
}

}  // namespace graphserve
