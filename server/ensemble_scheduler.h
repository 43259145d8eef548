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
// request, and an unloaded one fails it naming the model.
absl::StatusOr<std::unique_ptr<ServedModel>> LoadEnsemble(const RepositoryModel& entry,
                                                          const ModelVersionEntry& version,
                                                          const ComposingConfigLookup& composing,
                                                          ModelFinder find);

// Runs an ensemble's requests (a ModelPipeline of a ServedModel).
// Thread-safe.
class EnsembleScheduler final : public ModelPipeline {
 public:
  // `interface`: the ensemble's; `counters` are its ServedModel's, which
  // outlive the scheduler.
  EnsembleScheduler(ModelInterface interface, std::string version_text, EnsemblePlan plan,
                    ModelFinder find, ModelCounters* counters);

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

  // Implementation details follow.
  struct Request;

 private:
  // Starts every step of `request` whose inputs are written; called with
  // none running yet, and after each step ends.
  void StartReadySteps(const std::shared_ptr<Request>& request, std::vector<size_t> ready);
  void StartStep(const std::shared_ptr<Request>& request, size_t step);
  void StepEnded(const std::shared_ptr<Request>& request, size_t step, const absl::Status& status);
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
// raw_output_contents, moved into the request's tensor table; a step starts
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
// Not done here: tensors cross the host between steps, and the steps run as
// separate requests. Keeping them on the device, and replaying a captured
// pipeline as one CUDA graph of the steps' graphs, needs the GPU runner to
// take and give device buffers (issue 31, part 2).

}  // namespace graphserve
