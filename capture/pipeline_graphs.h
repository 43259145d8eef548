#pragma once
// A pipeline of models replayed as one CUDA graph: each step's captured graph
// a child graph, the tensors between steps copied device to device inside
// the graph, so a request crosses the host once on the way in and once on
// the way out. What serves an ensemble whose steps are all captured (Note
// [Ensembles as one graph] in server/ensemble_scheduler.h).
//
// Note [Pipelines share slots]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A pipeline's slot s replays slot s of every step's graph set: the same
// graphs, arenas and device I/O buffers that serve the step's model on its
// own. It holds no copy of them, so a pipeline costs a parent graph, a
// stream and pinned staging, not one more set of arenas per step. The price
// is that the model's own chunks and the pipeline's replays must never
// overlap on the GPU, and they are enqueued from different threads on
// different streams. Stream order keeps them apart: Run, holding every step
// slot's enqueue mutex (GraphSet::enqueue_mutex, which Launch holds while it
// enqueues a chunk's copies, replay and done event, so a chunk is never
// enqueued half before and half after), records an event on each step's
// stream and makes its own stream wait for it, enqueues the pipeline, and
// makes each step's stream wait for the pipeline's done event before the
// mutexes are released. Whatever a step's slot ran before is finished
// before the pipeline touches its buffers, and whatever it runs after waits
// for the pipeline. The mutexes are taken in address order, so two
// pipelines over the same models cannot deadlock. No host thread waits for
// another model's GPU work: the waits are on the device.
//
// The tensors between steps are copied, not shared: each step's graph reads
// its inputs from its own set's device buffers at the addresses captured
// into it. A copy of a ResNet input (600 KB in float32) takes about a
// microsecond of device bandwidth, against the host round trip of the
// step-by-step path.
//
// Note [Pipelines sleep under --gpu-wait block]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Run's thread waits for the replay in cudaEventSynchronize on the slot's
// done event, as a stream worker waits for a chunk (Note [How threads wait
// for the GPU] in server/served_model.h). Under the server's default, auto,
// a pipeline spins even where its steps' workers sleep: done events that
// sleep whenever a step's did (6ae8e40, reverted) raised the one-graph p50
// of preprocessing + ResNet-18 by about 140 us at batch 1 and at batch 8
// (bench/results/2026-11-29_91ebf4b_load_h200, call 14), ten times the
// wake-up auto budgets. Under --gpu-wait block the operator has chosen
// cores over that latency, for every wait: the pipeline's done events then
// sleep too (PipelineOptions::sleeping_wait), and an ensemble no longer
// keeps a core spinning for each replay.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "capture/graph_set.h"
#include "common/cuda_handles.h"

namespace graphserve {

// One step: a graph set and the pipeline tensors its inputs and outputs are.
struct PipelineStep {
  std::shared_ptr<const GraphSet> set;
  // Per set input (GraphSet order): the tensor it reads.
  std::vector<std::string> inputs;
  // Per set output: the tensor it writes, or "" when nothing reads it.
  std::vector<std::string> outputs;
};

// A tensor the pipeline takes or gives: its name and the bytes of one row.
struct PipelineTensor {
  std::string name;
  size_t bytes_per_row = 0;
};

// Where one Run's time went, nanoseconds.
struct PipelineTiming {
  int64_t input_ns = 0;   // inputs into staging and the copies enqueued
  int64_t infer_ns = 0;   // the replay and copies, until the GPU is done
  int64_t output_ns = 0;  // outputs out of staging
};

struct PipelineOptions {
  // In an order where each tensor is written before a step reads it; no
  // set twice (its graphs share one arena).
  std::vector<PipelineStep> steps;
  std::vector<PipelineTensor> inputs;
  std::vector<PipelineTensor> outputs;
  // Batch sizes to build, each captured (as a batch-only key) by every step.
  std::vector<int64_t> batch_sizes;
  // Pipeline slots: slot s replays every step's slot s (Note [Pipelines
  // share slots]); at most each set's slot count.
  int num_slots = 1;
  // Run's thread sleeps while the replay runs instead of spinning (Note
  // [Pipelines sleep under --gpu-wait block]).
  bool sleeping_wait = false;
};

class PipelineGraphs {
 public:
  // Builds one parent graph per slot and batch size, instantiated and
  // uploaded, on the device of the steps' sets (all on one). Errors name
  // what does not fit: a tensor read before it is written, a row size that
  // differs between writer and reader, a batch size a step lacks.
  static absl::StatusOr<std::unique_ptr<PipelineGraphs>> Create(PipelineOptions options);

  // Runs `rows` rows (1 .. batch_size) through slot `slot`'s pipeline at
  // `batch_size`: copies each input's rows from `inputs` (host memory, in
  // PipelineOptions::inputs order) to the steps that read it, fills the
  // padding rows from row 0, replays, copies each output's real rows to
  // `outputs`, and waits. One call per slot at a time (the caller's
  // choice of slot). `timing`, when given, gets where the time went.
  absl::Status Run(int slot, int64_t batch_size, int64_t rows,
                   absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                   PipelineTiming* timing = nullptr) const;

  [[nodiscard]] int num_slots() const { return static_cast<int>(slots_.size()); }
  // Ascending.
  [[nodiscard]] const std::vector<int64_t>& batch_sizes() const { return batch_sizes_; }
  [[nodiscard]] int device() const { return device_; }
  // Nodes of one parent graph: a child per step, a copy per tensor read
  // from another step.
  [[nodiscard]] size_t parent_nodes() const { return parent_nodes_; }

  ~PipelineGraphs();

  // Implementation details follow.
  struct Slot;

 private:
  PipelineGraphs() = default;
  int device_ = 0;
  std::vector<PipelineStep> steps_;
  std::vector<PipelineTensor> inputs_;
  std::vector<PipelineTensor> outputs_;
  std::vector<int64_t> batch_sizes_;
  size_t parent_nodes_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace graphserve
