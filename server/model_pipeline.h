#pragma once
// What serves a model that runs no model file of its own on a stream pool:
// an ensemble's steps (Note [Ensembles] in server/ensemble_scheduler.h), a
// sequence model's batcher, a model that only hands strings back (Note
// [Strings at the model's edges] in runtime/ir.h). ServedModel counts its
// pending requests; the pipeline answers and records everything else in the
// counters it was made with.

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "proto/grpc_service.pb.h"
#include "server/shared_memory.h"

namespace graphserve {

class ModelPipeline {
 public:
  virtual ~ModelPipeline() = default;
  // ServedModel::Infer's contract.
  virtual void Infer(const inference::ModelInferRequest* request,
                     inference::ModelInferResponse* response,
                     std::function<void(const absl::Status&)> done,
                     const SharedMemoryRegistry* shared_memory) = 0;
  // ServedModel::Drain's contract.
  virtual void Drain(std::optional<std::chrono::steady_clock::time_point> deadline) = 0;
  // Sets in `statistics`, which the model's counters filled, what the
  // pipeline's own executions counted instead (a sequence model reports its
  // execution's batches, as Triton's does). Nothing by default.
  virtual void AddExecutionStatistics(inference::ModelStatistics* /*statistics*/) const {}
  // Model `name` was loaded again (a new version, a new config): what the
  // pipeline built over the old one can be built over the new. Called on the
  // registry's control thread, while the pipeline serves. Nothing by default.
  virtual void ComposingModelLoaded(const std::string& /*name*/) {}
};

}  // namespace graphserve
