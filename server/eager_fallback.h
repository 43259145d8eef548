#pragma once
// Requests no shape bucket takes, run eagerly at their own extents.

#include <cstddef>
#include <list>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/graph_key.h"
#include "runtime/executor.h"
#include "runtime/ir.h"
#include "server/chunk_runner.h"
#include "server/model_interface.h"
#include "server/request_validation.h"

namespace graphserve {

// Note [Eager fallback]
// ~~~~~~~~~~~~~~~~~~~~~
// A CUDA graph replays fixed shapes, so a model with shape dims serves the
// extents its buckets take (Note [Shape buckets] in server/shape_buckets.h):
// a request longer than the largest bucket, or for a model that sees its
// padding one between buckets, is refused naming the buckets. Triton's ONNX
// Runtime backend runs any shape. config.pbtxt's capture.eager_extents says
// how far a model may follow it: a request that no bucket takes, each
// extent at most the config's, runs at its own extents, kernel by kernel
// without a graph. Its rows are bound at {rows, extents} and planned on the
// model's first GPU with the graphs' weights and algorithm choices (the
// executors of the load's padding check), and run on the plan's own stream,
// on the thread that received the request, one such request at a time: the
// queue, dynamic batching and the stream slots never see it, and the
// graphs' requests go on beside it. The first request at a key pays for
// binding and planning (milliseconds for an encoder, more when a GEMM shape
// is new to the algorithm choices); the last kPlansKept plans stay, each
// with its own activation memory, so that a few recurring shapes plan once.
// Planning allocates device memory, which waits for the GPU: the model's
// graphs stall briefly behind a new key's first request.
// A plan that cannot be made (out of GPU memory for a huge extent, an index
// past a position table) fails that request only.
class EagerFallback {
 public:
  static constexpr size_t kPlansKept = 4;

  // `model` arranged as the interface declares it (ArrangeModelAsDeclared);
  // `make_executor` plans a bound graph (the load's check executors).
  EagerFallback(std::shared_ptr<const Model> model, ExecutorFactory make_executor);

  // Runs `request`, validated against `interface` at extents no bucket
  // takes, and writes each returned output's rows where `outputs` (one per
  // interface output, PrepareInferResponse's) points; `timing` gets the
  // copies in and out and the run. Errors: binding's or planning's, naming
  // the extents, and the executor's.
  absl::Status Run(const ModelInterface& interface, const ValidatedRequest& request,
                   const std::vector<std::byte*>& outputs, ChunkTiming* timing);

 private:
  struct Plan {
    GraphKey key;
    BoundGraph graph;
    std::unique_ptr<Executor> executor;
  };
  // The plan of `key`, made on first use and moved to the front.
  absl::StatusOr<Plan*> PlanAt(const GraphKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<const Model> model_;
  const ExecutorFactory make_executor_;
  absl::Mutex mu_;  // one eager request at a time: a plan runs on one stream
  std::list<Plan> plans_ ABSL_GUARDED_BY(mu_);  // most recently used first
};

}  // namespace graphserve
