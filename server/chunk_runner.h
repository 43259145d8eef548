#pragma once
// What runs one planned chunk of a request on one stream slot: the seam
// between the server's dispatch (server/stream_pool.h) and an executor.
// GraphSetRunner runs chunks as CUDA graph replays (or eagerly, graphs off)
// on the slots of a GraphSet; HostRunner runs them on the host reference
// executor, for machines without a GPU.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/graph_key.h"
#include "server/row_shape.h"
#include "server/row_view.h"

namespace graphserve {

// One chunk: its segments' rows, gathered in order, run through the graph of
// `key` (rows beyond `rows` are padding). See Note [Row segments] in
// server/request_queue.h.
struct ChunkJob {
  GraphKey key;
  // The rows of key.bucket, which the graph runs at: a segment of another
  // shape is padded into them and sliced out of them (Note [Shape buckets]).
  const RowShape* shape = nullptr;
  int64_t rows = 0;  // the segments' rows added up, 1 to key.batch_size
  // Consecutive rows of one request each, its shape the job's or one the
  // job's bucket holds. Pointers are borrowed: the request and its response
  // outlive the job.
  std::vector<RowView> segments;

  // Whether the segment's rows are the graph's rows as they are.
  [[nodiscard]] bool Unpadded(const RowView& segment) const {
    return segment.shape->SameAs(*shape);
  }
};

// Nanoseconds from `start` to now: how runners fill ChunkTiming.
inline int64_t NanosSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              start)
      .count();
}

// Where a chunk's time went, for ModelStatistics (nanoseconds).
struct ChunkTiming {
  int64_t input_ns = 0;   // rows into staging (if staged), copies and launch enqueued
  int64_t infer_ns = 0;   // waiting for the device (or the host run)
  int64_t output_ns = 0;  // real rows out of staging (if staged) into the response
};

// Copies each segment's rows of every input, one after the other, into
// `staging`(input): a chunk's rows as one batch of job.shape's rows, a
// shorter segment's padded, except those `direct`(segment index, input)
// says the device copies itself (Note [Pitched row copies] in
// capture/graph_set.h), whose place it skips.
template <typename Staging, typename Direct>
void GatherInputRows(const ChunkJob& job, size_t num_inputs, Staging staging, Direct direct) {
  for (size_t i = 0; i < num_inputs; ++i) {
    std::byte* to = staging(i);
    const TensorRow& row = job.shape->inputs[i];
    for (size_t s = 0; s < job.segments.size(); ++s) {
      const RowView& segment = job.segments[s];
      if (direct(s, i)) {
        // copied by the device
      } else if (job.Unpadded(segment)) {
        std::memcpy(to, segment.inputs[i].data, row.bytes * static_cast<size_t>(segment.rows));
      } else {
        PadRows(segment.inputs[i].data, segment.shape->inputs[i], to, row, job.shape->input_pad[i],
                segment.rows);
      }
      to += row.bytes * static_cast<size_t>(segment.rows);
    }
  }
}

// The reverse for outputs: the chunk's rows of `rows`(output) (a batch, row
// after row) back to each segment's requested outputs, sliced to the
// segment's shape, except those `direct`(segment index, output) says the
// device wrote.
template <typename Rows, typename Direct>
void ScatterOutputRows(const ChunkJob& job, size_t num_outputs, Rows rows, Direct direct) {
  for (size_t o = 0; o < num_outputs; ++o) {
    const std::byte* from = rows(o);
    const TensorRow& row = job.shape->outputs[o];
    for (size_t s = 0; s < job.segments.size(); ++s) {
      const RowView& segment = job.segments[s];
      if (segment.outputs[o].data == nullptr || direct(s, o)) {
        // not asked for, or written by the device
      } else if (job.Unpadded(segment)) {
        std::memcpy(segment.outputs[o].data, from, row.bytes * static_cast<size_t>(segment.rows));
      } else {
        SliceRows(from, row, segment.outputs[o].data, segment.shape->outputs[o], segment.rows);
      }
      from += row.bytes * static_cast<size_t>(segment.rows);
    }
  }
}

// For GatherInputRows and ScatterOutputRows in a runner that copies every
// row itself.
inline bool NoneDirect(size_t /*segment*/, size_t /*tensor*/) { return false; }

class ChunkRunner {
 public:
  virtual ~ChunkRunner() = default;
  // Slots run chunks one after the other; a slot is used by one thread at a
  // time (its worker, or an RPC thread holding it, server/stream_pool.h).
  [[nodiscard]] virtual int num_slots() const = 0;
  // Chunks a slot may have started and not yet finished, each through its
  // own staging buffer 0 .. depth() - 1: 1 runs each chunk to the end before
  // the next starts; GraphSetRunner's 2 queue the next chunk behind the
  // running one (Note [Double-buffered staging] in capture/graph_set.h).
  [[nodiscard]] virtual int depth() const { return 1; }
  // With depth 2: whether a chunk of `batch_size` rows should start while
  // another runs on its slot, or wait until it is done (measured per size
  // at load: capture/launch_costs.h SizesFasterDoubleBuffered).
  [[nodiscard]] virtual bool StartsBehindRunning(int64_t /*batch_size*/) const { return false; }
  // Called on a thread before it runs a slot's chunks (a worker once, an RPC
  // thread each time it holds a slot): thread-local set-up such as the
  // current CUDA device.
  virtual absl::Status PrepareWorkerThread(int slot) = 0;
  // Starts `job` on `slot` through staging buffer `staging` (< depth()),
  // without waiting for it. The job's rows and pointers stay valid until
  // Finish. On error nothing of the job touches its rows or pointers any
  // more, and Finish must not be called.
  virtual absl::Status Start(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) = 0;
  // Waits for the job Start began through `staging` and copies its rows
  // out. A slot's jobs finish in the order they started.
  virtual absl::Status Finish(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) = 0;
  // Start, then Finish, through staging buffer 0.
  absl::Status Run(int slot, const ChunkJob& job, ChunkTiming* timing) {
    if (absl::Status started = Start(slot, 0, job, timing); !started.ok()) return started;
    return Finish(slot, 0, job, timing);
  }
  // The GPU whose memory a segment's inputs and outputs may lie in
  // (RowMemory::kDevice), which this runner copies itself; none: host
  // memory only.
  [[nodiscard]] virtual std::optional<int> DeviceMemoryGpu() const { return std::nullopt; }
  // For the startup table and logs, e.g. "CUDA graphs, GPU 0".
  [[nodiscard]] virtual std::string description() const = 0;
};

}  // namespace graphserve
