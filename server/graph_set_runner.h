#pragma once
// Runs chunks on the slots of one or more GraphSets (one per GPU the model
// is placed on): one CUDA graph replay per chunk (or, graphs off, the same
// plan launched op by op on the same stream), so the server's per-chunk work
// is the staging copy, the mapped copies, one launch, a wait on the slot's
// event and the copy of the real rows out; a chunk of one request's rows in
// pinned or CUDA shared memory skips the staging copies (Notes [Pinned
// shared memory] and [CUDA shared memory] in server/shared_memory.h). Two
// chunks may be in flight on a slot, one per staging buffer (Note
// [Double-buffered staging]).
//
// Note [Runner slots alternate GPUs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The runner's slots take the sets in turn: slot 0 is the first set's slot
// 0, slot 1 the second set's slot 0, and so on. A request that finds a slot
// idle takes the first idle one (StreamPool), so with the sets one after the
// other a few requests in flight all ran on the first GPU's streams, sharing
// it, while the other GPU idled; taken in turn, each runs on a GPU of its own
// until every GPU has a chunk. For a model whose chunks fill a GPU that halves
// the wait; the encoder's batch-1 graphs do not fill an H100, and on two
// H100s 2 and 4 requests in flight took 573 and 567 us p50 against 571 and
// 593 us on one GPU's streams: within the noise
// (bench/results/2026-11-26_c00833a_multi_gpu_h100x2).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/graph_set.h"
#include "server/chunk_runner.h"

namespace graphserve {

class GraphSetRunner : public ChunkRunner {
 public:
  // A graph set and the CUDA device it was captured on.
  struct Placement {
    std::shared_ptr<const GraphSet> set;
    int device = 0;
  };
  // `placements`: at least one; all sets of one model. `mode`: graphs
  // (kGraph) or the eager run of the same plans (kEager), for side-by-side
  // measurement. `double_buffered_sizes`: the captured sizes whose chunks
  // start behind a running one (SizesFasterDoubleBuffered).
  GraphSetRunner(std::vector<Placement> placements, LaunchMode mode,
                 std::vector<int64_t> double_buffered_sizes = {});

  [[nodiscard]] int num_slots() const override;
  // The GPU runner slot `slot` runs on.
  [[nodiscard]] int device(int slot) const;
  absl::Status PrepareWorkerThread(int slot) override;
  [[nodiscard]] int depth() const override { return kStagingBuffers; }
  [[nodiscard]] bool StartsBehindRunning(int64_t batch_size) const override;
  absl::Status Start(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) override;
  absl::Status Finish(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) override;
  // The sets' GPU when they all share one: a CUDA region on it is copied
  // device to device (Note [CUDA shared memory]); across GPUs, none.
  [[nodiscard]] std::optional<int> DeviceMemoryGpu() const override {
    return device_memory_gpu_;
  }
  [[nodiscard]] std::string description() const override;

  // Implementation details follow.
 private:
  // Runner slot -> (placement, the set's own slot).
  struct SlotRef {
    size_t placement;
    int slot;
  };

  // The placements' GPU when they all share one (DeviceMemoryGpu).
  static std::optional<int> SharedGpu(const std::vector<Placement>& placements);

  const std::vector<Placement> placements_;
  const std::optional<int> device_memory_gpu_;
  const LaunchMode mode_;
  const std::vector<int64_t> double_buffered_sizes_;  // ascending
  std::vector<SlotRef> slots_;
};

}  // namespace graphserve
