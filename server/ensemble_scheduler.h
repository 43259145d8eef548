#pragma once
// Serving an ensemble: a request to the ensemble runs its steps, each a
// request to a composing model, and is answered with the ensemble outputs the
// steps wrote. See Note [Ensembles].

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "capture/pipeline_graphs.h"
#include "common/gpu_wait.h"
#include "server/device_tensor_pool.h"
#include "server/ensemble_config.h"
#include "server/model_counters.h"
#include "server/model_interface.h"
#include "server/model_repository.h"
#include "server/served_model.h"

namespace graphserve {

// The served model a step calls: (name, version; "" for the latest ready),
// as the registry's Find answers, with its errors.
using ModelFinder = std::function<absl::StatusOr<std::shared_ptr<ServedModel>>(
    absl::string_view name, absl::string_view version)>;

// Loads the ensemble `entry` at `version`: Triton's config rules
// (ValidateModelConfig, ValidateEnsembleScheduling), then its steps against
// the composing models `composing` answers for (PlanEnsemble), then its
// interface as config.pbtxt declares it (InterfaceFromConfig: GraphServe's
// limits on dims and types apply). Requests find each step's model through
// `find` when they run it, so a reloaded composing model serves the next
// request, and an unloaded one fails it naming the model. `gpu_wait`: the
// server's --gpu-wait, which the one-graph pipeline's waits follow (Note
// [Pipelines sleep under --gpu-wait block] in capture/pipeline_graphs.h).
absl::StatusOr<std::unique_ptr<ServedModel>> LoadEnsemble(const RepositoryModel& entry,
                                                          const ModelVersionEntry& version,
                                                          const ComposingConfigLookup& composing,
                                                          ModelFinder find,
                                                          GpuWait gpu_wait = GpuWait::kAuto);

struct EnsembleSchedulerOptions {
  // The pipelines it builds sleep while they replay
  // (PipelineOptions::sleeping_wait).
  bool sleeping_pipeline_wait = false;
  // Tensors between steps stay on the device where they can (Note [Ensemble
  // tensors on the device]); false: through the host (capture.
  // host_step_tensors).
  bool device_step_tensors = true;
};

// Runs an ensemble's requests (a ModelPipeline of a ServedModel).
// Thread-safe.
class EnsembleScheduler final : public ModelPipeline {
 public:
  // `interface`: the ensemble's; `counters` are its ServedModel's, which
  // outlive the scheduler.
  EnsembleScheduler(ModelInterface interface, std::string version_text, EnsemblePlan plan,
                    ModelFinder find, ModelCounters* counters,
                    EnsembleSchedulerOptions options = {});

  // Validates the request against the ensemble's interface (Triton's
  // errors, request_validation.h), then runs every step once its inputs are
  // written, independent steps at the same time; `done` once all have
  // ended, with the ensemble outputs in the response (or in the shared
  // memory the request named). A step's error fails the request, prefixed
  // with the ensemble and the step's model; the steps already running end
  // first, no later step starts.
  void Infer(const inference::ModelInferRequest* request, inference::ModelInferResponse* response,
             std::function<void(const absl::Status&)> done,
             const SharedMemoryRegistry* shared_memory) override;
  // Refuses new requests and waits until those running end or `deadline`
  // passes (their steps are answered by the composing models, which drain
  // beside it).
  void Drain(std::optional<std::chrono::steady_clock::time_point> deadline) override;

  [[nodiscard]] const EnsemblePlan& plan() const { return plan_; }

  // Builds the ensemble's pipeline over the composing models `find`
  // answers for now, checks one batch through it against the same batch run
  // step by step, and from then on serves with it (Note [Ensembles as one
  // graph]). An error says why the ensemble stays step by step; a pipeline
  // built before stays until a request finds its models changed. Called at
  // load, before the ensemble serves, and by ComposingModelLoaded while it
  // serves.
  absl::Status BuildPipeline();
  // A step's model was loaded again: the pipeline, when the ensemble has
  // asked for one (BuildPipeline was called), is built again over the new
  // model, and the log says how the ensemble runs now.
  void ComposingModelLoaded(const std::string& name) override;
  // How requests run, for the load summary: "one CUDA graph at batch sizes
  // 1,8 on 2 slots", or "step by step, tensors between steps on the device".
  [[nodiscard]] std::string ExecutionText() const;

  // Implementation details follow.
  struct Request;
  struct Pipeline;

 private:
  // Infer; `counted` false leaves the request out of the ensemble's
  // statistics.
  void Run(const inference::ModelInferRequest* request, inference::ModelInferResponse* response,
           std::function<void(const absl::Status&)> done,
           const SharedMemoryRegistry* shared_memory, bool counted);
  // Runs one batch of random rows of `graphs`' largest size step by step
  // and through `graphs`; an error names the output that differs.
  absl::Status CheckPipeline(const PipelineGraphs& graphs);
  // Runs `request` through the pipeline if it can take it now; false (and
  // nothing done) when there is none, its largest batch is too small, every
  // slot is busy, or a composing model was reloaded since it was built.
  bool TryRunPipeline(const std::shared_ptr<Request>& request);
  // Answers `request`: its outputs finished, the ensemble's statistics
  // recorded (`run`: its execution), `done` called.
  void Answer(const std::shared_ptr<Request>& request, absl::Status status, uint64_t queue_ns,
              const ChunkTiming& compute, const ChunkRun& run);
  // Starts every step of `request` whose inputs are written; called with
  // none running yet, and after each step ends.
  void StartReadySteps(const std::shared_ptr<Request>& request, std::vector<size_t> ready);
  void StartStep(const std::shared_ptr<Request>& request, size_t step);
  [[nodiscard]] bool IsEnsembleOutput(const std::string& tensor) const;
  // The spec of `model`'s output `model_output`, which it writes as ensemble
  // tensor `tensor`, when that tensor stays on the device; null when it goes
  // through the host (Note [Ensemble tensors on the device]).
  [[nodiscard]] const TensorSpec* DeviceTensorSpec(const ServedModel& model,
                                                   const std::string& model_output,
                                                   const std::string& tensor) const;
  // A device buffer for that tensor for a request of `rows` rows, and its
  // bytes; nullopt when it goes through the host (DeviceTensorSpec, or the
  // pool's limits).
  std::optional<DeviceTensorPool::Buffer> DeviceBufferFor(const ServedModel& model,
                                                          const std::string& model_output,
                                                          const std::string& tensor, int64_t rows,
                                                          uint64_t* bytes);
  void StepEnded(const std::shared_ptr<Request>& request, size_t step, const absl::Status& status);
  // "tensors between steps on the device", "... through the host", or "1 of
  // 2 tensors ...", as the composing models `find_` answers for now serve.
  [[nodiscard]] std::string StepTensorsText() const;
  // ExecutionText of the pipeline pipeline_.
  [[nodiscard]] std::string PipelineText() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pipeline_mu_);
  // Copies the outputs into the response and answers.
  void Finish(const std::shared_ptr<Request>& request);
  void Left();

  const ModelInterface interface_;
  const std::string version_text_;
  const EnsemblePlan plan_;
  // For each step, the steps that wait for it.
  std::vector<std::vector<size_t>> dependents_;
  const ModelFinder find_;
  ModelCounters* const counters_;
  const bool sleeping_pipeline_wait_;
  // Null when tensors between steps go through the host.
  const std::unique_ptr<DeviceTensorPool> device_tensors_;

  mutable absl::Mutex pipeline_mu_;
  std::shared_ptr<const Pipeline> pipeline_ ABSL_GUARDED_BY(pipeline_mu_);
  bool pipeline_wanted_ ABSL_GUARDED_BY(pipeline_mu_) = false;  // BuildPipeline was called
  std::vector<bool> pipeline_slot_busy_ ABSL_GUARDED_BY(pipeline_mu_);

  absl::Mutex mu_;
  absl::CondVar drained_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;  // requests accepted, not answered
};

// Note [Ensembles]
// ~~~~~~~~~~~~~~~~
// An ensemble (Triton's `platform: "ensemble"`) is a ServedModel like any
// other: the registry lists it, Find returns it, ModelInfer, ModelMetadata,
// ModelConfig and ModelStatistics answer from it, so both transports and
// shared memory serve it with no code of their own. What differs is behind
// ServedModel::Infer: a ModelPipeline, this scheduler, instead of a stream
// pool.
//
// Loading (server/model_registry.cc): an ensemble's version directory is
// empty, as Triton wants it; the ensembles load after the models they
// compose (those first, at start and on an explicit load, Triton's
// behaviour), because PlanEnsemble checks each step against its model's
// served config. An ensemble over models that are gone is not ready:
// ModelReady, Find and the repository index look through its steps
// (ModelRegistry::Find), as Triton unloads an ensemble whose composing
// model is unloaded; it serves again once they are back.
//
// A request: the ensemble's request is validated against the ensemble's
// interface by the same code every model's is, and its response sized by
// PrepareInferResponse. Each step is then an ordinary ModelInferRequest to
// the composing model's ServedModel::Infer, the path a client's request
// takes: its validation, queue, dynamic batching (a step merges with other
// clients' requests to that model) and statistics apply unchanged. Step
// tensors travel as raw_input_contents and come back as
// raw_output_contents, moved into the request's tensor table, or stay on
// the device (Note [Ensemble tensors on the device]); a step starts
// from the completion of the last step it waits for (EnsemblePlan::after),
// so independent steps overlap. That completion runs where the composing
// model ends a request (a stream worker, or the thread that ran its chunk),
// and the next step is submitted there, as Triton's scheduler submits from
// its completion callback: with --run-on-rpc-thread an idle slot of the next
// model runs the step on that thread at once, no hand-off in between. When
// every step has ended, the ensemble outputs are copied where
// PrepareInferResponse pointed (the response or a shared-memory region) and
// the request is answered; InferenceProtocol moves the answer off that
// thread, as for any model.
//
// Statistics follow Triton's ensemble scheduler: the ensemble counts one
// execution per request (of its batch size), success or failure with the
// whole request's duration, a queue time that is its own (validation up to
// the first step, as Triton's is the scheduler's hand-off), and as compute
// the sum of its steps' compute times; each composing model counts its step
// as any request.
//
// Note [Ensemble tensors on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A request that runs step by step (an ensemble without its one-graph
// pipeline, or a request the pipeline cannot take) would carry each tensor
// between steps to the host and back: the writer's graph output copied
// device to host, into its response, then into the reader's request and
// host to device. Instead, a tensor one step writes and a later step reads
// lives in a device buffer of the ensemble's own (DeviceTensorPool, server/
// device_tensor_pool.h), which both step requests name as a client names a
// CUDA shared-memory region: the writer's runner copies its graph's output
// into the buffer device to device, and the reader's copies it from there
// into its graph's input, merged with other requests' rows like any CUDA
// region's (Note [CUDA shared memory] in server/shared_memory.h). The
// writer's request ends when its copies have (its stream waited for), so
// the reader, on another stream, reads whole rows.
//
// Where it applies: the writer is served on one GPU (ServedModel::
// device_memory_gpu: CUDA graphs, one GPU, rows the device can place), the
// tensor is not an ensemble output (those go to the client), and its dims
// are fixed and its type neither BOOL nor STRING, so its bytes are known
// before the step runs. A reader that cannot read device memory in place
// (the host executor, another GPU, a bucketed model whose rows the host
// pads) reads the buffer through the host at validation, as it would a
// client's region: the answer is the same, only slower. Buffers are kept
// and handed out again (rounded up to powers of two, per GPU), so a steady
// load allocates nothing; past 64 buffers or 1 GiB for one ensemble, a
// tensor goes through the host, and the log says so once. A buffer goes
// back when the request is answered, every step having ended.
// `capture { host_step_tensors: true }` in the ensemble's config sends every
// tensor through the host, as Triton does (bench/ensemble_bench.cc times
// both). The load summary says which way the tensors go with the models
// served then ("step by step, tensors between steps on the device", "...
// through the host", or "1 of 2 tensors ..."). Measured on an H200 (bench/
// results/2026-12-01_ef12d95_ensemble_device_tensors_depthwise_h200): a
// preprocessing model and ResNet-50, step by step, 0.69x of the time through
// the host at batch 8 (ResNet-18 0.55x), 0.86-0.94x at batch 1.
//
// Note [Ensembles as one graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// When every step's model is served by CUDA graphs on one GPU, with no
// shape buckets, and the steps share captured batch sizes, the ensemble
// also replays as one CUDA graph (capture/pipeline_graphs.h): each step's
// captured graph a child graph, the tensors between steps copied on the
// device, no host round trip and no hand-off between steps. It replays the
// composing models' own graphs on their own slots (Note [Pipelines share
// slots]), so it costs a parent graph, a stream and pinned staging per
// slot, and the models go on serving their own clients beside it.
//
// A request takes the pipeline when its rows fit the largest shared batch
// size and a pipeline slot is free; it runs on the RPC thread at the
// smallest shared size that holds it. Otherwise (more rows, every slot
// busy) it runs step by step as above, where it queues and merges with
// other requests: under load the composing models' dynamic batching does
// what one graph per request cannot.
//
// Built at load and checked: one batch of the largest shared size, random
// rows, runs step by step and through the pipeline, and their outputs must
// agree (float outputs within 1e-3 relative error, as the steps may split
// or merge the rows differently; others exactly). A pipeline that fails is
// not kept and the log says why. The composing models count that request
// as any ensemble's step; the ensemble does not.
//
// `capture { graphs_disabled: true }` in the ensemble's config turns the
// pipeline off, as it turns a model's graphs off.
//
// Each request checks that its steps' models are still the ones the
// pipeline was built over (Find answers the same ServedModel). When one was
// reloaded or unloaded, the pipeline is dropped and the ensemble runs step
// by step: the new model's graphs are not the ones the parent graph holds.
// A step's model loaded again (not one unloaded) gets the pipeline built
// again over it: the registry tells every model after a load
// (ServedModel::ComposingModelLoaded), on its control thread, which captures
// and checks the new pipeline while the ensemble serves, and swaps it in.
//
// Statistics: the ensemble counts a pipeline request as one execution on
// its slot at the size replayed, its compute the replay's; each composing
// model counts it as a chunk and a request of its own with the same compute
// (one graph has no per-step times).

}  // namespace graphserve
