#pragma once
// A model whose every output hands a STRING input back unchanged, as
// Triton's QA identity models of "object" tensors do: served without a
// runtime, since it computes nothing (Note [Strings at the model's edges] in
// runtime/ir.h).

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"
#include "runtime/ir.h"
#include "server/model_counters.h"
#include "server/model_interface.h"
#include "server/model_pipeline.h"
#include "server/shared_memory.h"

namespace graphserve {

// The interface config.pbtxt declares for a model whose tensors are all
// passed strings (Model::passed_strings), checked against the file:
// Unimplemented naming the tensors when the file also computes (inputs,
// outputs or nodes besides), FailedPrecondition naming the tensor for a
// config input the file lacks or a file input the config leaves out, an
// output that is not one the file passes, a tensor declared other than
// TYPE_STRING, dims whose rank or fixed extents differ from the file's, or an
// output whose dims could hold other than its input's elements: fixed dims
// need an input of fixed dims with as many elements a row, a -1 the input's
// very dims.
absl::StatusOr<ModelInterface> PassThroughInterface(const inference::ModelConfig& config,
                                                    const Model& model);

// Answers each request on the thread that brings it: validated, its outputs
// its inputs' elements (in a response, or in the client's shared memory),
// recorded in the counters. Nothing is queued and nothing runs on a device.
class PassThroughPipeline final : public ModelPipeline {
 public:
  // `interface` from PassThroughInterface; `counters` must outlive the
  // pipeline (ServedModel owns both).
  PassThroughPipeline(ModelInterface interface, std::string version_text, ModelCounters* counters)
      : interface_(std::move(interface)),
        version_text_(std::move(version_text)),
        counters_(counters) {}

  // Answers before it returns.
  void Infer(const inference::ModelInferRequest* request, inference::ModelInferResponse* response,
             std::function<void(const absl::Status&)> done,
             const SharedMemoryRegistry* shared_memory) override;
  // Nothing is ever waiting; requests from now on are refused.
  void Drain(std::optional<std::chrono::steady_clock::time_point> deadline) override;

 private:
  const ModelInterface interface_;
  const std::string version_text_;
  ModelCounters* const counters_;
  std::atomic<bool> draining_{false};
};

}  // namespace graphserve
