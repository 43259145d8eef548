#pragma once
// The interface every executor offers tests, tools and the host fallback: run
// a bound graph on host tensors and return its outputs.
//
// The CUDA executor also offers the capturable, stream-level API (see
// runtime/cuda/cuda_executor.h); this interface is the synchronous convenience
// on top, used for correctness checks and on machines without a GPU.

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/bound_graph.h"
#include "common/tensor.h"

namespace graphserve {

class Executor {
 public:
  virtual ~Executor() = default;

  // Runs the graph on `inputs` (one per BoundGraph::inputs, in order, with
  // matching dtype and dims) and returns one tensor per BoundGraph::outputs.
  // Wrong inputs are an InvalidArgument error that says what was expected.
  virtual absl::StatusOr<std::vector<HostTensor>> Run(
      absl::Span<const HostTensor> inputs) = 0;
};

// Makes an executor for one bound graph, which the executor then owns: the
// host reference, the CUDA executor on some device, or whatever a test puts
// under test. Who runs a model's graphs without naming an executor (load
// checks, calibration, conformance) takes one.
using ExecutorFactory = std::function<absl::StatusOr<std::unique_ptr<Executor>>(BoundGraph)>;

// Checks `inputs` against the graph's input values: count, dtype, dims.
absl::Status ValidateInputs(const BoundGraph& graph, absl::Span<const HostTensor> inputs);

// One RandomTensor (tensor.h) per graph input, with the input's dtype and
// dims; input i is drawn with seed + i.
std::vector<HostTensor> RandomInputs(const BoundGraph& graph, uint64_t seed);

}  // namespace graphserve
