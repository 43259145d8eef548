#pragma once
// One served model version: its interface, batch planner and stream pool,
// and the request path that ties them together (see the data flow in
// ../shared/ARCHITECTURE.md):
//
//   validate names, dtypes, shapes, byte counts (request_validation.h)
//   -> size the response (outputs go out as raw_output_contents)
//   -> queue its rows whole on the stream pool (stream_pool.h)
//   -> free slots pull chunks: the request split, padded up, or merged with
//      others (request_queue.h, Note [Row segments])
//   -> each chunk's worker runs it and copies each segment's rows into its
//      response
//   -> the segment that completes the rows ends the RPC (in acceptance
//      order with dynamic_batching's preserve_ordering).
//
// Loading captures and checks every graph (GPU) or binds every size (host)
// before the model is reported ready.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/gpu_wait.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"
#include "runtime/passes/autocast.h"
#include "runtime/schedule.h"
#include "server/model_counters.h"
#include "server/model_interface.h"
#include "server/model_pipeline.h"
#include "server/model_repository.h"
#include "server/response_order.h"
#include "server/shared_memory.h"
#include "server/stream_pool.h"

namespace graphserve {

class EagerFallback;      // server/eager_fallback.h
struct ValidatedRequest;  // server/request_validation.h
class GraphSet;        // capture/graph_set.h
struct CaptureProgress;  // capture/graph_set.h
class GraphSetRunner;  // server/graph_set_runner.h

// Where models run.
enum class ExecutorKind {
  kCuda,  // CUDA graphs (or eager, graphs off) on a GraphSet's streams
  kHost,  // the host reference executor
};

// Note [How threads wait for the GPU] (ServedModelOptions::gpu_wait): the
// smallest chunk's cost from which auto gives a model sleeping done events.
inline constexpr double kSleepingWaitFromUs = 150;

// Whether a model's stream workers sleep while its chunks run under `wait`,
// its chunks costing `costs_us` (one per graph; empty when unknown).
bool SleepsWhileWaiting(GpuWait wait, const std::vector<double>& costs_us);

struct ServedModelOptions {
  ExecutorKind executor = ExecutorKind::kCuda;
  // CUDA devices (kCuda) of models whose config lists no GPUs: each gets
  // the model's stream slots and its own graphs; requests spread over all.
  std::vector<int> devices = {0};
  // False serves every model eagerly on the same streams and plans, for
  // side-by-side measurement; a config's capture.graphs_disabled does the
  // same for one model.
  bool graphs = true;
  // TF32 GEMMs (kCuda) for every model: faster, relative error near 3e-4.
  // Off: exact float32, except in models whose config asks for
  // capture.precision "tf32" (runtime/passes/precision.h).
  bool allow_tf32 = false;
  // Back-pressure: queued rows beyond this many chunks of the largest
  // captured size are refused with RESOURCE_EXHAUSTED.
  size_t max_queued_chunks = 1024;
  // Timed launches per size when a config carries no cost table (kCuda).
  int64_t cost_iters = 30;
  // How stream workers wait for their chunks on the GPU (kCuda). The
  // server sets spin, yield and block as CUDA's scheduling flag of the GPUs
  // in `devices` before the models load (on other GPUs a model's config
  // places it on, the flag stays CUDA's); block and auto also choose, per
  // model, the done events a worker waits on, on every GPU.
  //
  // Note [How threads wait for the GPU]
  // A stream worker (or an RPC thread running a chunk) waits for each chunk
  // in cudaEventSynchronize. With CUDA's default flags and more cores than
  // GPUs that wait spins: a core per busy slot, for the whole replay. For
  // the demo MLP a replay is 20-60 us, but the encoder's is 0.2-0.7 ms, so
  // at saturation its four slots keep four cores spinning beside gRPC's
  // threads, which set the served throughput (bench/README.md, serving
  // benchmark). --gpu-wait yield spins but gives the core to any thread
  // that can run; --gpu-wait block sleeps until the GPU signals: CUDA's
  // blocking-sync device flag, and done events made with
  // cudaEventBlockingSync (the flag alone does not reach
  // cudaEventSynchronize, which spun on events made without it: a first
  // "block" measured like spinning). Side by side on H100s, saturated with
  // batching, two runs (bench/results/2026-11-26_f1ac1e0_settings_tests_h100
  // and 2026-11-26_338f70b_final_h100): the encoder served 47.1k and 44.4k
  // a second sleeping, 39.5k and 41.4k spinning (40.8k and 48.0k yielding:
  // no order between yielding and sleeping holds); mlp 59.8k and 62.5k
  // sleeping, 64.5k and 66.6k spinning, and at concurrency 1 its overhead
  // was 44 us sleeping against 27 spinning in the first run: the wake-up
  // costs some 15 us, which a 30 us chunk feels and a 300 us one does not.
  // So auto, the default, keeps CUDA's flags but gives a model sleeping done
  // events when even its smallest chunk takes kSleepingWaitFromUs or more
  // (the cost table's first size, graph or eager as the model is served;
  // SleepsWhileWaiting).
  GpuWait gpu_wait = GpuWait::kAuto;
  // How long an idle stream worker polls its queue before it sleeps
  // (StreamPoolOptions::idle_spin): longer spins trade idle CPU for the
  // wake-up of a sleeping worker on a quiet server.
  //
  // Note [Idle polling off by default]
  // Workers and responders used to poll for 50 us after each chunk. Against
  // no polling, side by side in serve_bench's settings table of three runs on
  // the H200 machine (bench/results/2026-11-26_{ae1378d_serve_final,
  // cdeed68_serve_mutex,a89a5d0_serve_final}_h200), no polling vs 50 us:
  // - saturated: 50.1k vs 46.0k/s, 80.8k vs 72.4k, 75.3k vs 77.1k;
  // - p99 at half that rate (the last run only): 313 vs 657 us;
  // - concurrency 1, mixed and within the runs' spread: mlp b1 overhead 15
  //   vs 0, 22 vs 37, 35 vs 38 us; dlrm_dense b16 44 vs 69, 51 vs 58, 60
  //   vs 15.
  // A CPU profile of the saturated server put 10% of its samples in the
  // polling loops' clock reads (2026-11-26_cdeed68_profile_h200): under load
  // polling takes cores gRPC's threads need, for a gain at concurrency 1
  // the runs do not show (there the request runs on its RPC thread and
  // wakes no worker). Polling still pays on the hand-off path
  // (--run-on-rpc-thread=false), which README's low-latency setting pairs
  // with --idle-spin-us 1000.
  std::chrono::microseconds idle_spin{0};
  // An RPC thread runs its request's chunk itself when a slot is idle
  // (StreamPoolOptions::run_on_caller).
  bool run_on_rpc_thread = true;
  // kCuda: costs measured at load time eager runs too, beside the mode the
  // model is served in (`graphserve-capture prepare` reports the two).
  bool measure_both_modes = false;
  // kCuda: called after each graph is captured and checked.
  std::function<void(const CaptureProgress&)> on_capture_progress;
};

// What loading did, for the startup table.
struct ModelLoadSummary {
  std::string executor;             // e.g. "CUDA graphs, GPU 0"
  std::string precision;            // capture.precision as served: "fp32", "fp16", ...
  std::vector<int64_t> batch_sizes; // ascending
  // The shape buckets requests choose from and whether shorter requests are
  // padded into them, e.g. "sequence 32,64,128 (padded)"; empty without.
  std::string buckets;
  int num_streams = 0;               // slots over all GPUs
  size_t weight_bytes = 0;           // over all GPUs
  size_t slot_bytes = 0;            // device arena + I/O + staging + workspace, all slots
  size_t pinned_bytes = 0;          // of slot_bytes, the pinned host staging
  std::vector<int> devices;          // the GPUs it lives on, ascending; none on the host
  double load_ms = 0;
  // Where load_ms went, phase by phase, e.g. "import 0.9 s, padding check
  // 2.0 s, graphs 30.1 s (...), launch costs 1.8 s".
  std::string load_phases;
  std::string costs;                // "config", "measured at load" or "none (pad up)"
  // Each size's multi-stream schedule and where it came from, e.g. "1:asap
  // on 4 streams, 8:single (measured at load)"; empty on the host executor.
  std::string schedules;
  // What the load-time check compared the replays with (Note [An
  // independent reference] in capture/reference_plans.h) and the worst
  // error found; empty on the host executor.
  std::string reference;
  // What `graphserve-capture prepare` reports beyond the table: each graph's
  // schedule as chosen, with the candidates timed (kCuda, key order); the
  // nodes precision auto keeps in float32 and why; and the notice of a
  // 16-bit model that computes in float32 as written (Float32GemmsOfHalfModel).
  std::vector<ScheduleChoice> schedule_choices;
  std::vector<Float32Node> float32_nodes;
  std::string float32_gemms_notice;
};

class ServedModel {
 public:
  // Imports `version`'s model file, checks it against the config's
  // interface, then captures and checks its graphs (kCuda) or binds it at
  // every size (kHost). Errors say which step failed and why.
  static absl::StatusOr<std::unique_ptr<ServedModel>> Load(const RepositoryModel& entry,
                                                           const ModelVersionEntry& version,
                                                           const ServedModelOptions& options);
  // A model served by `pipeline` (an ensemble), which records into
  // `counters`: the model owns both, the pipeline destroyed first.
  static std::unique_ptr<ServedModel> FromPipeline(ModelInterface interface, int64_t version,
                                                   inference::ModelConfig config,
                                                   std::unique_ptr<ModelCounters> counters,
                                                   std::unique_ptr<ModelPipeline> pipeline,
                                                   ModelLoadSummary summary);

  ~ServedModel();

  // Runs one request. `done` is called exactly once with the status the RPC
  // ends with: inline when the request is refused (bad input, full queue),
  // otherwise on a stream worker after the request's last rows ran or were
  // refused (queue timeout, shutdown). Triton's request parameters
  // "priority" and "timeout" (microseconds) choose its queue level and
  // timeout. `request` and `response` must stay alive until then; when the
  // status is OK the response is complete. Inputs and outputs that name a
  // shared-memory region use `shared_memory`'s (none without it); the
  // request holds its regions until `done` (Note [Shared memory lifetime]).
  // `compute`, when given, gets the request's compute time summed over its
  // chunks before `done` is called (an ensemble's statistics add its steps').
  void Infer(const inference::ModelInferRequest* request, inference::ModelInferResponse* response,
             std::function<void(const absl::Status&)> done,
             const SharedMemoryRegistry* shared_memory = nullptr,
             ChunkTiming* compute = nullptr);

  [[nodiscard]] const std::string& name() const { return interface_.name; }
  [[nodiscard]] int64_t version() const { return version_; }
  [[nodiscard]] const ModelInterface& interface() const { return interface_; }
  // The config as served: the repository's, with the capture section set to
  // the sizes, streams and costs in use.
  [[nodiscard]] const inference::ModelConfig& config() const { return config_; }
  [[nodiscard]] const ModelLoadSummary& summary() const { return summary_; }
  // The GPU whose CUDA shared memory the model's requests may leave their
  // tensors in, read and written in place by the device (Note [CUDA shared
  // memory] in server/shared_memory.h); none: read through the host.
  [[nodiscard]] std::optional<int> device_memory_gpu() const { return device_memory_gpu_; }
  void FillStatistics(inference::ModelStatistics* statistics) const;
  // Requests accepted and not yet answered (Triton's pending request count).
  [[nodiscard]] int64_t pending_requests() const { return counters_->pending(); }
  // The counters FillStatistics reads, and GraphServe's own for /metrics.
  [[nodiscard]] const ModelCounters& counters() const { return *counters_; }
  // The graph sets its chunks replay (one per GPU), for a pipeline that
  // replays them as its steps (Note [Pipelines share slots] in
  // capture/pipeline_graphs.h); empty for a model served otherwise (the
  // host executor, eager runs, a pipeline of its own).
  [[nodiscard]] std::vector<std::shared_ptr<const GraphSet>> graph_sets() const;
  // The stream slot (its counters' index) that is `set`'s slot `slot`,
  // where `set` is one of graph_sets(); nullopt otherwise.
  [[nodiscard]] std::optional<int> RunnerSlot(const GraphSet* set, int slot) const;
  // Counts a request a pipeline ran through this model's graph of
  // `batch_size` on stream slot `stream` (RunnerSlot, resolved at the
  // pipeline's load), with `rows` real rows, as this model counts a chunk and
  // a request of its own (Note [Ensembles as one graph] in
  // server/ensemble_scheduler.h).
  void CountPipelineStep(int stream, int64_t batch_size, int64_t rows,
                         const ChunkTiming& compute) const;
  // Refuses new requests and runs the queued ones until `deadline`; those
  // still queued then are answered UNAVAILABLE (StreamPool::Drain).
  void Drain(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);
  // Model `name` was loaded again: tells the model's pipeline, if it has one
  // (ModelPipeline::ComposingModelLoaded).
  void ComposingModelLoaded(const std::string& name);

  // Implementation details follow.
  struct RequestState;

 private:
  ServedModel(ModelInterface interface, int64_t version, inference::ModelConfig config,
              std::unique_ptr<ModelCounters> counters, std::unique_ptr<StreamPool> pool,
              ModelLoadSummary summary);
  // Queues a request no shape bucket takes for the eager fallback's worker
  // (Note [Eager fallback] in server/eager_fallback.h), which answers it.
  void InferEagerly(const inference::ModelInferRequest& request,
                    inference::ModelInferResponse* response, ValidatedRequest validated,
                    std::chrono::steady_clock::time_point start,
                    std::function<void(const absl::Status&)> done, ChunkTiming* compute);
  // One segment of the request's rows ended; the last one answers it.
  void FinishSegment(const std::shared_ptr<RequestState>& state, int64_t rows,
                     const absl::Status& status, StreamPool::Clock::duration queued,
                     const ChunkTiming& timing, SegmentEnd end);

  const ModelInterface interface_;
  const int64_t version_;
  const std::string version_text_;  // what responses and statistics carry
  const inference::ModelConfig config_;
  const bool preserve_ordering_;
  const ModelLoadSummary summary_;
  ResponseOrder ordering_;  // used with preserve_ordering_
  // What statistics and /metrics read; the pool's workers record into it, so
  // it is declared (and outlives) before the pool.
  const std::unique_ptr<ModelCounters> counters_;
  const std::unique_ptr<StreamPool> pool_;  // null for a pipeline
  // The GPU whose CUDA shared memory requests' tensors may stay in, read and
  // written by the runner in place; none: read through the host.
  const std::optional<int> device_memory_gpu_;
  // The runner of a model served by CUDA graphs; null otherwise.
  [[nodiscard]] const GraphSetRunner* graph_runner() const;
  // Declared after the counters it records into, so destroyed before them.
  std::unique_ptr<ModelPipeline> pipeline_;
  // Set when config.pbtxt's capture.eager_extents lets requests no bucket
  // takes run eagerly.
  std::unique_ptr<EagerFallback> eager_;
};

}  // namespace graphserve
