#pragma once
// Runs chunks on the slots of a GraphSet: one CUDA graph replay per chunk
// (or, graphs off, the same plan launched op by op on the same stream), so
// the server's per-chunk work is the staging copy, the mapped copies, one
// launch, a wait on the slot's event and the copy of the real rows out.

#include <memory>
#include <string>

#include "capture/graph_set.h"
#include "server/chunk_runner.h"

namespace graphserve {

class GraphSetRunner : public ChunkRunner {
 public:
  // `device`: the set's CUDA device. `mode`: graphs (kGraph) or the eager
  // run of the same plans (kEager), for side-by-side measurement.
  GraphSetRunner(std::shared_ptr<const GraphSet> set, int device, LaunchMode mode);

  [[nodiscard]] int num_slots() const override;
  absl::Status PrepareWorkerThread(int slot) override;
  absl::Status Run(int slot, const ChunkJob& job, ChunkTiming* timing) override;
  [[nodiscard]] std::string description() const override;

  // Implementation details follow.
 private:
  const std::shared_ptr<const GraphSet> set_;
  const int device_;
  const LaunchMode mode_;
};

}  // namespace graphserve
