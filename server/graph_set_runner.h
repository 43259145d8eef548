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

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capture/graph_set.h"
#include "server/chunk_runner.h"
#include "server/injected_cuda_fault.h"

namespace graphserve {

// Note [CUDA faults in a served model]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A chunk whose Start or Finish fails is answered with the error, INTERNAL
// (or what the call's code maps to), naming the GPU, the slot and the batch
// size. The runner then asks the slot's set whether the error lost the
// device's context (GraphSet::StickyError, Note [Sticky CUDA errors] in
// common/cuda_error.h):
// - not sticky (a refused launch, a failed copy): only the requests of that
//   chunk fail, and the slot runs the next chunk as before;
// - sticky (an illegal address, a kernel exception): CUDA fails every later
//   call on that GPU, so the runner reports the loss
//   (common/lost_cuda_context.h): the chunks in flight fail as they finish,
//   the server and its models stop being ready, and main exits non-zero so
//   that the orchestrator restarts the process; the log says which GPU and
//   which error. Before, the error was cleared (cudaGetLastError) and every
//   later chunk failed while health said SERVING.
// Tests inject both kinds into one slot (Note [Injected CUDA faults] in
// server/injected_cuda_fault.h).

struct GraphSetRunnerOptions {
  // Graphs (kGraph) or the eager run of the same plans (kEager), for
  // side-by-side measurement.
  LaunchMode mode = LaunchMode::kGraph;
  // The captured sizes whose chunks start behind a running one
  // (SizesFasterDoubleBuffered); none by default.
  std::vector<int64_t> double_buffered_sizes;
  // Test only (Note [Injected CUDA faults]); none by default.
  InjectedCudaFault fault;
};

class GraphSetRunner : public ChunkRunner {
 public:
  // `sets`: at least one; all sets of one model, each on the GPU it was
  // captured on (GraphSet::device()).
  explicit GraphSetRunner(std::vector<std::shared_ptr<const GraphSet>> sets,
                          GraphSetRunnerOptions options = {});

  [[nodiscard]] int num_slots() const override;
  // The GPU runner slot `slot` runs on.
  [[nodiscard]] int device(int slot) const;
  // Makes the slot's GPU current on the thread (GraphSet::
  // MakeDeviceCurrentOnThisThread), so its launches switch no device.
  absl::Status PrepareWorkerThread(int slot) override;
  [[nodiscard]] int depth() const override { return kStagingBuffers; }
  [[nodiscard]] bool StartsBehindRunning(int64_t batch_size) const override;
  // Errors: Note [CUDA faults in a served model].
  absl::Status Start(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) override;
  absl::Status Finish(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) override;
  // The sets' GPU when they all share one: a CUDA region on it is copied
  // device to device (Note [CUDA shared memory]); across GPUs, none.
  [[nodiscard]] std::optional<int> DeviceMemoryGpu() const override {
    return device_memory_gpu_;
  }
  [[nodiscard]] std::string description() const override;

  // The sets, and whether their graphs or their eager runs serve.
  [[nodiscard]] const std::vector<std::shared_ptr<const GraphSet>>& sets() const { return sets_; }
  [[nodiscard]] LaunchMode mode() const { return mode_; }
  // The runner slot that is `set`'s slot `slot`; nullopt for a set or slot
  // the runner lacks.
  [[nodiscard]] std::optional<int> RunnerSlot(const GraphSet* set, int slot) const;

  // Implementation details follow.
 private:
  // Runner slot -> (set, the set's own slot).
  struct SlotRef {
    size_t set;
    int slot;
  };

  // The sets' GPU when they all share one (DeviceMemoryGpu).
  static std::optional<int> SharedGpu(const std::vector<std::shared_ptr<const GraphSet>>& sets);
  // What a failed Start or Finish of `job` on `slot` answers, and the
  // report of a lost context (Note [CUDA faults in a served model]).
  absl::Status ChunkFailed(int slot, const ChunkJob& job, const absl::Status& status) const;
  // The injected fault's effect on this chunk of `slot`, if it is the one
  // (Note [Injected CUDA faults]): the failed launch's error, or OK after
  // enqueueing the illegal-address kernel; OK without a fault.
  absl::Status InjectFault(int slot);

  const std::vector<std::shared_ptr<const GraphSet>> sets_;
  const std::optional<int> device_memory_gpu_;
  const LaunchMode mode_;
  const std::vector<int64_t> double_buffered_sizes_;  // ascending
  const InjectedCudaFault fault_;
  // Chunks the fault's slot starts before the fault fires: it fires on the
  // Start that takes this from 0 to -1, once. A slot runs on one thread at
  // a time, but not always the same one (StreamPool hands it between its
  // worker and callers).
  std::atomic<int64_t> chunks_before_fault_;
  std::vector<SlotRef> slots_;
};

}  // namespace graphserve
