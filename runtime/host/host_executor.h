#pragma once
// Runs a BoundGraph with the host reference kernels: the oracle in tests and
// the executor used when no GPU is present.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/executor.h"

namespace graphserve {

class HostExecutor : public Executor {
 public:
  static absl::StatusOr<std::unique_ptr<HostExecutor>> Create(BoundGraph graph);

  // Thread-safe: each call keeps its intermediate tensors to itself.
  absl::StatusOr<std::vector<HostTensor>> Run(absl::Span<const HostTensor> inputs) override;

  [[nodiscard]] const BoundGraph& graph() const { return graph_; }

 private:
  explicit HostExecutor(BoundGraph graph);

  const BoundGraph graph_;
  // Per node (by index), the intermediate values it reads last; Run frees them
  // after the node. Graph outputs are never listed.
  const std::vector<std::vector<ValueId>> release_after_;
};

// Makes a HostExecutor for each graph: the ExecutorFactory of callers that
// run on the host.
ExecutorFactory HostExecutorFactory();

}  // namespace graphserve
