#pragma once
// What runs one planned chunk of a request on one stream slot: the seam
// between the server's dispatch (server/stream_pool.h) and an executor.
// GraphSetRunner runs chunks as CUDA graph replays (or eagerly, graphs off)
// on the slots of a GraphSet; HostRunner runs them on the host reference
// executor, for machines without a GPU.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/batch_planner.h"

namespace graphserve {

// One chunk and where its rows live. Pointers are borrowed: the request and
// its response outlive the job.
struct ChunkJob {
  PlannedChunk chunk;
  // Per model input (interface order): the chunk's first row; chunk.rows
  // rows of the input's bytes_per_row bytes follow. `const void*`, the type
  // GraphSet::Launch takes, so a chunk is launched without conversion.
  std::vector<const void*> inputs;
  // Per model output (interface order): where the chunk's rows go, or
  // nullptr for an output the request did not ask for.
  std::vector<std::byte*> outputs;
};

// Nanoseconds from `start` to now: how runners fill ChunkTiming.
inline int64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

// Where a chunk's time went, for ModelStatistics (nanoseconds).
struct ChunkTiming {
  int64_t input_ns = 0;   // rows into staging, copies and launch enqueued
  int64_t infer_ns = 0;   // waiting for the device (or the host run)
  int64_t output_ns = 0;  // real rows out of staging into the response
};

class ChunkRunner {
 public:
  virtual ~ChunkRunner() = default;
  // Slots run one chunk each at a time; the pool gives each its own thread.
  [[nodiscard]] virtual int num_slots() const = 0;
  // Called once on a slot's worker thread before its first Run: thread-local
  // set-up such as the current CUDA device.
  virtual absl::Status PrepareWorkerThread(int slot) = 0;
  // Runs `job` on `slot` and waits for it to finish. Called only from that
  // slot's worker thread, never from a gRPC thread.
  virtual absl::Status Run(int slot, const ChunkJob& job, ChunkTiming* timing) = 0;
  // For the startup table and logs, e.g. "CUDA graphs, GPU 0".
  [[nodiscard]] virtual std::string description() const = 0;
};

}  // namespace graphserve
