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

// How a segment's rows of one tensor travel between the request's memory and
// the graph's rows (Note [Pitched row copies] in capture/graph_set.h).
enum class RowRoute {
  // Through staging at the bucket's rows, padded (sliced) by the host.
  kStaged,
  // Through staging as they are, each row its own bytes, packed from the
  // segment's place in staging; the device pads (slices) them.
  kPacked,
  // The device copies them from (to) the request's own memory.
  kDirect,
};

// Copies each segment's rows of every input into `staging`(input) by its
// route(segment index, input): a kStaged segment's at its place among the
// chunk's rows at job.shape, padded when shorter; a kPacked segment's as
// they are, from the same place; a kDirect segment's not at all.
template <typename Staging, typename Route>
void GatherInputRows(const ChunkJob& job, size_t num_inputs, Staging staging, Route route) {
  for (size_t i = 0; i < num_inputs; ++i) {
    std::byte* to = staging(i);
    const TensorRow& row = job.shape->inputs[i];
    for (size_t s = 0; s < job.segments.size(); ++s) {
      const RowView& segment = job.segments[s];
      const RowRoute how = route(s, i);
      if (how == RowRoute::kPacked || (how == RowRoute::kStaged && job.Unpadded(segment))) {
        std::memcpy(to, segment.inputs[i].data,
                    segment.inputs[i].pitch * static_cast<size_t>(segment.rows));
      } else if (how == RowRoute::kStaged) {
        PadRows(segment.inputs[i].data, segment.shape->inputs[i], to, row, job.shape->input_pad[i],
                segment.rows);
      }
      to += row.bytes * static_cast<size_t>(segment.rows);
    }
  }
}

// The reverse for outputs: the chunk's rows of `rows`(output), by route, to
// each segment's requested outputs: a kStaged segment's from its place among
// the chunk's rows at job.shape, sliced when shorter; a kPacked segment's as
// the device packed them there; a kDirect segment's the device wrote.
template <typename Rows, typename Route>
void ScatterOutputRows(const ChunkJob& job, size_t num_outputs, Rows rows, Route route) {
  for (size_t o = 0; o < num_outputs; ++o) {
    const std::byte* from = rows(o);
    const TensorRow& row = job.shape->outputs[o];
    for (size_t s = 0; s < job.segments.size(); ++s) {
      const RowView& segment = job.segments[s];
      const RowRoute how = route(s, o);
      if (segment.outputs[o].data == nullptr || how == RowRoute::kDirect) {
        // not asked for, or written by the device
      } else if (how == RowRoute::kPacked || job.Unpadded(segment)) {
        std::memcpy(segment.outputs[o].data, from,
                    segment.outputs[o].pitch * static_cast<size_t>(segment.rows));
      } else {
        SliceRows(from, row, segment.outputs[o].data, segment.shape->outputs[o], segment.rows);
      }
      from += row.bytes * static_cast<size_t>(segment.rows);
    }
  }
}

// For GatherInputRows and ScatterOutputRows in a runner whose host copies
// every row.
inline RowRoute AllStaged(size_t /*segment*/, size_t /*tensor*/) { return RowRoute::kStaged; }

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
