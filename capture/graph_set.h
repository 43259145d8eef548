#pragma once
// The M x N CUDA graphs of one model: for each of M stream slots, one graph
// per captured key (a batch size and a shape bucket, Note [Graph keys] in
// common/graph_key.h), every one checked against an eager run before the set
// is returned. The heart of GraphServe: the server launches a request
// chunk as one replay on a free slot.
//
// Loading (Create): for each slot m, bind and plan the model for every key K
//   in the slot's shared arena (library workspaces included) and I/O buffers,
//   all before any capture, so nothing grows after the first capture and the
//   addresses every graph holds stay valid; then for each K, largest first,
//   and each slot: capture the eager run (capture/stream_capture.h);
//   post-process its memcpy nodes into input/output mappings (Note [Memcpy
//   node post-processing]); instantiate, upload; check it (Note [Checking a
//   captured graph] in graph_set.cc): slot 0's replay once on fresh random
//   input against the eager run and part-filled batches with two different
//   paddings, which must leave the real rows identical; a later slot's replay
//   against slot 0's on the same input.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "capture/reference_plans.h"
#include "capture/transfer_mappings.h"
#include "common/cuda_handles.h"
#include "common/graph_key.h"
#include "common/tensor_rows.h"
#include "runtime/bind.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/ir.h"
#include "tensor_holder/io_buffers.h"
#include "tensor_holder/stream_arena.h"
#include "tensor_holder/weight_store.h"

namespace graphserve {

// Reported after each graph is accepted, for progress output.
struct CaptureProgress {
  int slot = 0;
  GraphKey key;
  int graphs_done = 0;   // including this one
  int graphs_total = 0;  // M x N
  double capture_ms = 0;  // this graph: capture + post-processing + instantiate + upload
  double check_ms = 0;    // this graph: the replay checks
};

struct GraphSetOptions {
  // M: stream slots, each able to run one chunk at a time.
  int num_streams = 1;
  // N: captured keys (any order, no duplicates, each batch >= 1, each
  // bucket one extent >= 1 per shape dim of the model; BatchOnlyKeys for a
  // model without shape dims).
  std::vector<GraphKey> graphs = BatchOnlyKeys({1});
  // Device, TF32, fusion and schedule settings of every plan.
  CudaExecutorOptions executor;
  // Schedules of particular keys (capture/schedule_choice.h chooses them);
  // the keys not listed use executor.schedule.
  std::map<GraphKey, ScheduleOptions> schedules;
  // Check every graph: one replay against the eager run on fresh random input
  // (relative error at most `tolerance`), and padding independence.
  bool check_replays = true;
  // Largest accepted ||replay - eager|| / ||eager||. Both run the same
  // kernels, so anything above float32 rounding means a broken capture.
  double tolerance = 1e-6;
  // An independent reference (Note [An independent reference] in
  // capture/reference_plans.h): when set, slot 0's replay of every key is
  // also compared with it on the check's input, float outputs within
  // `reference_tolerance` (relative error); empty (the default): not.
  ReferenceRunner reference;
  double reference_tolerance = 1e-4;
  // Whether the reference's integer and bool outputs must equal the
  // replay's (a float32 model), or only its float outputs are compared.
  bool reference_compares_exact_outputs = true;
  // Seed of the random check inputs.
  uint64_t seed = 20261121;
  // Whether every key's work already ran on this device in this process (a
  // schedule candidate after the first of its key): slot 0 then captures
  // without a warm-up run too, as later slots always do (WarmUp in
  // capture/stream_capture.h).
  bool warmed_up = false;
  // Algorithm choices (GEMMs, convolutions) to reuse and extend; null: a
  // fresh set, timed by slot 0's plans. Sharing one between sets makes them
  // run the same kernels (their outputs bit-identical) and times each
  // choice once.
  std::shared_ptr<AlgorithmChoices> algorithm_choices;
  // The device's weight store, to share with other sets on the same device
  // (one upload per GPU); null: the set's own.
  std::shared_ptr<WeightStore> weights;
  // The model bound at each key, to share with other sets and schedule
  // candidates of the same model (Note [Binding once per key] in
  // runtime/bind.h); null: the set's own.
  std::shared_ptr<BoundGraphs> bound_graphs;
  // Called after each accepted graph; may be empty.
  std::function<void(const CaptureProgress&)> on_progress;
};

// Device and host memory of one slot, in bytes.
struct SlotMemory {
  size_t arena = 0;               // shared by the slot's N graphs
  size_t arena_unshared = 0;      // what N private arenas would take: sum of arena(K)
  // What the arena would be with every plan on one lane: arena minus this is
  // what the schedule's concurrency costs (0 for single-lane plans).
  size_t arena_single_lane = 0;
  size_t io_device = 0;           // device input/output buffers
  size_t staging_pinned = 0;      // pinned host staging, both buffers
  // The largest cuBLASLt or cuDNN workspace of one step, of any of the
  // slot's plans: inside the arena (Note [Step workspaces]), not beside it.
  size_t workspace = 0;
  int lanes = 1;                  // streams the slot's plans use, its own included
  size_t graph_execs = 0;         // device memory the driver took for the N graph execs
};

// One accepted graph.
struct CapturedGraphInfo {
  GraphKey key;
  size_t nodes = 0;               // after post-processing
  TransferPlan transfers;         // the mappings the replay issues
  // Planning this graph's executor (CudaExecutor::PlanTimes), milliseconds.
  double plan_kernels_ms = 0;
  double plan_memory_ms = 0;
  double plan_autotune_ms = 0;
  double capture_ms = 0;
  double check_ms = 0;
  double check_rel_err = 0;       // replay vs eager, on the check's input
  // Replay vs the independent reference, on the same input; negative where
  // there is none (GraphSetOptions::reference empty, or a slot > 0).
  double reference_rel_err = -1;
  // The reference's plan and run, on a thread beside the later captures
  // (Note [The reference beside the captures]): not in check_ms.
  double reference_ms = 0;
  // The plan's schedule (runtime/schedule.h): lanes, the events one run
  // records, the graph's width and its critical path in steps.
  int lanes = 1;
  int events = 0;
  int max_width = 1;
  int critical_path = 0;
};

// Where GraphSet::Create's wall time went, milliseconds: the sums over its
// graphs of CapturedGraphInfo's parts, and the rest (binding every key,
// each slot's streams, handles and buffers).
struct SetupTimes {
  double total_ms = 0;
  double plan_kernels_ms = 0;
  double plan_memory_ms = 0;
  double plan_autotune_ms = 0;  // timing GEMM and convolution algorithms
  double capture_ms = 0;        // capture, post-process, instantiate, upload
  double check_ms = 0;          // the load-time replay checks
  [[nodiscard]] double plan_ms() const { return plan_kernels_ms + plan_memory_ms + plan_autotune_ms; }
  [[nodiscard]] double rest_ms() const { return total_ms - plan_ms() - capture_ms - check_ms; }
  // Adds another set's times (a model's sets over its GPUs).
  SetupTimes& operator+=(const SetupTimes& other) {
    total_ms += other.total_ms;
    plan_kernels_ms += other.plan_kernels_ms;
    plan_memory_ms += other.plan_memory_ms;
    plan_autotune_ms += other.plan_autotune_ms;
    capture_ms += other.capture_ms;
    check_ms += other.check_ms;
    return *this;
  }
};

// Which run a Launch issues.
enum class LaunchMode {
  kGraph,  // the captured graph, with the real rows copied by its mappings
  kEager,  // the same plan launched op by op (graphs off), the same copies
};

// Pinned host staging buffers per slot (Note [Double-buffered staging]).
inline constexpr int kStagingBuffers = 2;
static_assert(kStagingBuffers <= IoBuffers::kMaxHostBuffers);

// Rows of a chunk that the device copies itself, straight from and into a
// request's pinned host or device memory (Note [Pitched row copies]): `rows`
// rows from the chunk's row `first_row`. Per graph input, where they are
// (each row `pitch` bytes, at most the bucket's; data null where that
// input's rows went through staging like the others); per graph output,
// where they go (data null likewise).
struct DirectRows {
  int64_t first_row = 0;
  int64_t rows = 0;
  absl::Span<const InputRows> inputs;
  absl::Span<const OutputRows> outputs;
};

// One chunk of a request: `rows` real rows run through the plan for `key`
// (a captured key whose batch is >= rows) on slot `slot`, its rows moved
// through the slot's staging buffer `staging` (0 .. kStagingBuffers - 1),
// each row the bytes of a row at the key's bucket, except those `direct`
// names.
struct LaunchChunk {
  int slot = 0;
  GraphKey key;
  int64_t rows = 0;
  LaunchMode mode = LaunchMode::kGraph;
  int staging = 0;
  // Rows copied by the device from and to the requests' own memory, in
  // place of staging's. Pageable memory here would make the copy
  // synchronous (Notes [Pinned shared memory] and [CUDA shared memory] in
  // server/shared_memory.h).
  absl::Span<const DirectRows> direct;
  // Per graph input: the byte a direct row shorter than the bucket's is
  // padded with. Needed only when `direct` holds such a row.
  absl::Span<const uint8_t> pad_bytes;
};

// Note [Pitched row copies]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A request's rows lie contiguous in its memory, each `pitch` bytes: the
// row at its own extents. A graph's input buffer holds the rows of its
// bucket, each bytes_per_row. When a request's row is a leading block of
// the bucket's row (input_ids [12] in a bucket of [64]; hidden states [12,
// 768] in [64, 768]: every dim but the first row dim equal) and the pad
// value one repeated byte, the device places it with one 2-D copy, pitch to
// bytes_per_row, and fills the rest of each row with the pad by a 2-D
// memset: the host never reshuffles a row. Rows in pinned or device memory
// are copied from where they are; pageable rows are first copied by the
// host into staging as they are, packed from their segment's place there
// (GatherInputRows' RowRoute::kPacked), and placed from staging the same
// way. Outputs come back by the reverse copy, the leading block of each
// row. Rows padded elsewhere (an image's height and width) or with a pad of
// several byte values (GPT-2's pad token 50256) are padded by the host as it
// copies them into staging (PadRows, server/row_shape.h), and their outputs
// sliced by the host (kStaged). Rows at the bucket's extents need neither:
// consecutive ones move in one copy.

// Note [Double-buffered staging]
// A slot's graphs read their inputs from, and write their outputs to, device
// buffers at fixed addresses, but the host side of each copy is chosen per
// launch: the mapped copies (Note [Memcpy node post-processing]) are issued
// by Launch, not recorded in the graph. So each slot has two pinned staging
// buffers per input and output, each with its own done event, and a serving
// thread can fill buffer 1 and launch the next chunk while the chunk of
// buffer 0 still runs: the launches queue on the slot's stream, whose order
// keeps the device buffers safe (the second chunk's input copy runs after
// the first chunk's graph, its graph after the first's output copy). Rows
// that come from or go to device memory (Note [CUDA shared memory] in
// server/shared_memory.h) are copied on the same stream, so they too queue
// behind the running chunk. The
// host copies of one chunk then overlap the GPU work of the other, so a
// busy slot never idles while its thread gathers rows or writes responses.
// The device side is not doubled: no extra arena, graphs or capture time.


// Note [Graphs own their device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A graph set records the GPU it was captured on and makes it current
// itself, with a CudaDeviceGuard (common/cuda_device_guard.h), for capture,
// every launch, every wait and teardown, as PyTorch's CUDAGraph records
// capture_dev_ and replays under a device guard. Callers never call
// cudaSetDevice for it: a caller on the wrong device cannot launch on it,
// and a fault on one GPU stays on that GPU's sets. On a thread already on
// the device the guard costs one cudaGetDevice, which reads thread-local
// state; a serving thread that runs one set's chunks makes the device
// current once (MakeDeviceCurrentOnThisThread) so no launch switches.

class GraphSet {
 public:
  // Captures and checks all M x N graphs; see the file comment. Errors name
  // the slot, the batch size and what failed: binding (unsupported model or
  // shape), ResourceExhausted with the bytes needed when the device is full,
  // a capture or post-processing rejection, a failed check.
  static absl::StatusOr<std::unique_ptr<GraphSet>> Create(const Model& model,
                                                          const GraphSetOptions& options);

  // Enqueues `chunk` on its slot's stream: copies its `rows` real rows of
  // each graph input from the slot's pinned staging (input_staging(), filled
  // by the caller), or from the chunk's input source, to the device, fills
  // the padding rows from row 0 (Note [Padding rows from a valid row]),
  // launches the plan, copies the real output rows back into the slot's
  // output staging, or the chunk's output destination, and records the
  // slot's done event. If it fails partway, copies it enqueued may still
  // run: wait on stream() before reusing their memory. Does not wait for the GPU. The caller owns the slot until
  // done_event() completes and may then read output_rows(); one chunk per
  // staging buffer at a time (Note [Double-buffered staging]), launched in
  // the order the caller will wait for them. Sets the set's device itself
  // (Note [Graphs own their device]).
  absl::Status Launch(const LaunchChunk& chunk) const;
  // The same after copying `rows` contiguous rows of each graph input from
  // `inputs[i]` (host memory of any kind, in graph input order) into the
  // staging; the chunk names no input sources.
  absl::Status Launch(const LaunchChunk& chunk, absl::Span<const void* const> inputs) const;
  // Where a chunk's rows of `input` go before Launch: the slot's pinned
  // staging buffer `staging`, room for the largest captured key's rows,
  // input_bytes_per_row(input, chunk.key) a row.
  [[nodiscard]] std::byte* input_staging(int slot, size_t input, int staging = 0) const;

  // Remakes every slot's done events so that a thread waiting for one
  // sleeps until the GPU signals it, instead of spinning (Note [How threads
  // wait for the GPU] in server/served_model.h). Waits for the slots' work
  // first; call before the set serves, never while another thread launches.
  absl::Status UseSleepingDoneEvents();

  // Waits for the chunk the last Launch through `staging` on `slot` began
  // (its done event): the completion, after which output_rows() holds its
  // rows. A failure names the call; StickyError tells whether it lost the
  // device's context.
  absl::Status WaitForChunk(int slot, int staging) const;
  // Waits for everything enqueued on the slot's stream, e.g. the copies a
  // failed Launch enqueued before it failed, which may read or write a
  // request's memory.
  absl::Status SynchronizeSlot(int slot) const;
  // After a failed Launch or wait: the sticky error that lost the device's
  // context (the slot's stream reports it, as every call on the context
  // then does), or cudaSuccess when the context is intact and only the
  // failed call's chunk was touched (Note [Sticky CUDA errors] in
  // common/cuda_error.h).
  [[nodiscard]] cudaError_t StickyError(int slot) const;

  // The GPU the set was captured on (Note [Graphs own their device]).
  [[nodiscard]] int device() const { return device_; }
  // Makes the set's device current on the calling thread for good, so that
  // the guard of each Launch and wait finds it current and switches
  // nothing: for a serving thread that runs this set's chunks.
  absl::Status MakeDeviceCurrentOnThisThread() const;

  // NVTX range names of one slot's graph of one key (common/nvtx.h), made
  // once at capture: "<model> b<key> slot <slot> <phase>".
  struct ProfilerRanges {
    std::string stage;     // the chunk's rows into the pinned staging (the runner's)
    std::string h2d;       // enqueueing the copies to the device and the padding fill
    std::string launch;    // the replay (or the eager run)
    std::string d2h;       // enqueueing the copies of the real rows back
    std::string complete;  // waiting for the chunk and its rows into the responses
  };
  // Generic names for a slot or key the set lacks.
  [[nodiscard]] const ProfilerRanges& profiler_ranges(int slot, const GraphKey& key) const;

  // The slot's stream, and the event the last Launch through staging buffer
  // `staging` recorded.
  [[nodiscard]] cudaStream_t stream(int slot) const;
  [[nodiscard]] cudaEvent_t done_event(int slot, int staging = 0) const;
  // Output `output` of the slot's last completed Launch through `staging`
  // for the rows `direct` did not name: its real rows, row-major,
  // output_bytes_per_row(output, key) bytes each at the chunk's key. Owned by
  // the set. Writable: direct rows may name it, as the place the device
  // packs a segment's shorter rows into (Note [Pitched row copies]).
  [[nodiscard]] std::byte* output_rows(int slot, size_t output, int staging = 0) const;

  // The model's interface as captured (graph input/output order).
  [[nodiscard]] size_t num_inputs() const;
  [[nodiscard]] size_t num_outputs() const;
  [[nodiscard]] const std::string& input_name(size_t input) const;
  [[nodiscard]] const std::string& output_name(size_t output) const;
  // The model's shape dims, the names of a bucket's extents (Note [Shape
  // dims] in runtime/ir.h); empty for a model without them.
  [[nodiscard]] const std::vector<std::string>& shape_dims() const;
  // Bytes of one row (one batch item) of a tensor at a captured key's
  // bucket (`key` must be one of keys()).
  [[nodiscard]] size_t input_bytes_per_row(size_t input, const GraphKey& key) const;
  [[nodiscard]] size_t output_bytes_per_row(size_t output, const GraphKey& key) const;
  // The dims of an output at a captured key.
  [[nodiscard]] const Dims& output_dims(size_t output, const GraphKey& key) const;

  [[nodiscard]] int num_slots() const;
  // Captured keys, ascending.
  [[nodiscard]] const std::vector<GraphKey>& keys() const;
  // The captured key that holds `shape` (GraphKey::Holds) with the fewest
  // rows x bucket elements, the smaller batch on a tie; nullopt when none
  // holds it.
  [[nodiscard]] std::optional<GraphKey> SmallestKeyHolding(const GraphKey& shape) const;

  [[nodiscard]] const CapturedGraphInfo& graph_info(int slot, const GraphKey& key) const;
  // The executable graph alone, without the mapped copies: for benchmarks
  // that time a bare replay on inputs already on the device.
  [[nodiscard]] cudaGraphExec_t graph_exec(int slot, const GraphKey& key) const;
  // The graph graph_exec was instantiated from, which a pipeline adds as a
  // child graph (capture/pipeline_graphs.h); owned by the set.
  [[nodiscard]] cudaGraph_t graph(int slot, const GraphKey& key) const;
  // Held by Launch while it enqueues a chunk on the slot's stream; a
  // pipeline holds it while it orders its replay against the slot's work
  // (Note [Pipelines share slots] in capture/pipeline_graphs.h).
  [[nodiscard]] absl::Mutex& enqueue_mutex(int slot) const;
  [[nodiscard]] SlotMemory slot_memory(int slot) const;
  // Weights, uploaded once for all slots and keys.
  [[nodiscard]] size_t weight_bytes() const;
  // Wall time of Create and its parts.
  [[nodiscard]] SetupTimes setup_times() const;

  ~GraphSet();

  // Implementation details follow.
  struct Slot;
  struct Graph;

 private:
  struct EagerRun;
  GraphSet() = default;
  // Create's steps. The model bound at every key of keys_, each key's row
  // sizes and the I/O names recorded.
  absl::StatusOr<std::vector<BoundGraph>> BindKeys(const Model& model,
                                                   const GraphSetOptions& options);
  // Slot `m`'s stream, buffers and handles, and its plan of every key, in
  // weights_.
  absl::StatusOr<std::unique_ptr<Slot>> PlanSlot(
      const Model& model, const GraphSetOptions& options, int m,
      const std::vector<BoundGraph>& bound,
      const std::shared_ptr<AlgorithmChoices>& algorithm_choices) const;
  // Slot `m`'s graph of key `n` (bound at `bound`): captured, post-processed,
  // instantiated and uploaded. Slot 0's warm-up run is the check's eager run.
  absl::StatusOr<EagerRun> Capture(const Model& model, const GraphSetOptions& options, int m,
                                   size_t n, const BoundGraph& bound);
  [[nodiscard]] const Graph& FindGraph(int slot, const GraphKey& key) const;
  // Index of a key in keys_; keys_.size() when it was not captured.
  [[nodiscard]] size_t KeyIndex(const GraphKey& key) const;
  // InvalidArgument unless the slot exists, the key was captured and the
  // rows fit it.
  absl::Status CheckChunk(const LaunchChunk& chunk) const;
  // Launch after CheckChunk.
  absl::Status Enqueue(const LaunchChunk& chunk) const;

  int device_ = 0;
  std::shared_ptr<WeightStore> weights_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<GraphKey> keys_;  // ascending
  std::vector<std::string> shape_dims_;
  std::vector<std::string> input_names_;
  std::vector<std::string> output_names_;
  // Per key (as keys_), per input or output: bytes of a row, output dims.
  std::vector<std::vector<size_t>> input_bytes_per_row_;
  std::vector<std::vector<size_t>> output_bytes_per_row_;
  std::vector<std::vector<Dims>> output_dims_;
  double total_setup_ms_ = 0;
};

}  // namespace graphserve
