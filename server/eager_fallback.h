#pragma once
// Requests no shape bucket takes, run eagerly at their own extents.

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <thread>
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
// executors of the load's padding check), and run on the plan's own stream
// by the fallback's worker thread, one such request at a time in arrival
// order: the thread that received the request returns at once, as it does
// for the graphs' requests, and the queue, dynamic batching and the stream
// slots never see it, so the graphs' requests go on beside it. The first
// request at a key pays for binding and planning (milliseconds for an
// encoder, more when a GEMM shape is new to the algorithm choices); the last
// kPlansKept plans stay, each with its own activation memory, so that a few
// recurring shapes plan once. Planning allocates device memory, which waits
// for the GPU: the model's graphs stall briefly behind a new key's first
// request.
// A plan that cannot be made (out of GPU memory for a huge extent, an index
// past a position table) fails that request only.
// Draining (an unload, the server's exit) refuses new such requests and runs
// the queued ones until the deadline, as StreamPool::Drain does.
class EagerFallback {
 public:
  static constexpr size_t kPlansKept = 4;
  using Clock = std::chrono::steady_clock;
  // Run's status, and the copies in and out and the run's times.
  using Done = std::function<void(const absl::Status&, const ChunkTiming&)>;

  // `model` arranged as the interface declares it (ArrangeModelAsDeclared);
  // `make_executor` plans a bound graph (the load's check executors).
  // Starts the worker thread.
  EagerFallback(std::shared_ptr<const Model> model, ExecutorFactory make_executor);
  // Drains without a deadline and joins the worker.
  ~EagerFallback();

  // Queues `request`, validated against `interface` at extents no bucket
  // takes, for the worker, which writes each returned output's rows where
  // `outputs` (one per interface output, PrepareInferResponse's) points and
  // then calls `done` with the status (binding's or planning's error naming
  // the extents, or the executor's). `interface`, the request's tensors and
  // `outputs` must stay valid until `done`. Unavailable once Drain has
  // begun, and `done` is then never called.
  absl::Status Submit(const ModelInterface& interface,
                      std::shared_ptr<const ValidatedRequest> request,
                      std::vector<std::byte*> outputs, Done done);

  // Stops accepting and runs the queued requests until `deadline`; those
  // still queued then are answered Unavailable. Returns once the worker has
  // finished the one it runs. Idempotent.
  void Drain(std::optional<Clock::time_point> deadline = std::nullopt);

 private:
  struct Queued {
    const ModelInterface* interface = nullptr;
    std::shared_ptr<const ValidatedRequest> request;
    std::vector<std::byte*> outputs;
    Done done;
  };
  struct Plan {
    GraphKey key;
    BoundGraph graph;
    std::unique_ptr<Executor> executor;
  };
  // The worker thread: runs the queue until it is empty and stopping_.
  void Work();
  absl::Status Run(const ModelInterface& interface, const ValidatedRequest& request,
                   const std::vector<std::byte*>& outputs, ChunkTiming* timing);
  // The plan of `key`, made on first use and moved to the front. Only the
  // worker thread plans and runs, so the plans need no lock.
  absl::StatusOr<Plan*> PlanAt(const GraphKey& key);

  const std::shared_ptr<const Model> model_;
  const ExecutorFactory make_executor_;
  std::list<Plan> plans_;  // most recently used first; the worker's

  absl::Mutex mu_;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;   // the worker holds a request
  bool draining_ ABSL_GUARDED_BY(mu_) = false;  // Submit refuses
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // the worker returns once idle
  std::thread worker_;
};

}  // namespace graphserve
