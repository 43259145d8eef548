#include "server/eager_fallback.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "runtime/bind.h"

namespace graphserve {

using Clock = std::chrono::steady_clock;

EagerFallback::EagerFallback(std::shared_ptr<const Model> model, ExecutorFactory make_executor)
    : model_(std::move(model)), make_executor_(std::move(make_executor)) {
  worker_ = std::thread([this] { Work(); });
}

EagerFallback::~EagerFallback() {
  Drain();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  worker_.join();
}

absl::Status EagerFallback::Submit(const ModelInterface& interface,
                                   std::shared_ptr<const ValidatedRequest> request,
                                   std::vector<std::byte*> outputs, Done done) {
  absl::MutexLock lock(&mu_);
  if (draining_) return absl::UnavailableError("the server is shutting down");
  queue_.push_back({.interface = &interface,
                    .request = std::move(request),
                    .outputs = std::move(outputs),
                    .done = std::move(done)});
  return absl::OkStatus();
}

void EagerFallback::Drain(std::optional<Clock::time_point> deadline) {
  std::deque<Queued> abandoned;
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return queue_.empty() && !running_;
    };
    if (deadline.has_value()) {
      mu_.AwaitWithTimeout(absl::Condition(&idle), absl::FromChrono(*deadline - Clock::now()));
    } else {
      mu_.Await(absl::Condition(&idle));
    }
    abandoned.swap(queue_);
  }
  for (Queued& queued : abandoned) {
    queued.done(absl::UnavailableError("the server is shutting down and its exit timeout passed "
                                       "before this request ran"),
                ChunkTiming{});
  }
  // Past the deadline the worker may still run one request.
  absl::MutexLock lock(&mu_);
  const auto worker_idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !running_; };
  mu_.Await(absl::Condition(&worker_idle));
}

void EagerFallback::Work() {
  for (;;) {
    Queued next;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, and every request is answered
      next = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    ChunkTiming timing;
    const absl::Status status = Run(*next.interface, *next.request, next.outputs, &timing);
    next.done(status, timing);
    next = Queued{};  // the request's hold on its regions ends with its answer
    absl::MutexLock lock(&mu_);
    running_ = false;
  }
}

absl::StatusOr<EagerFallback::Plan*> EagerFallback::PlanAt(const GraphKey& key) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    if (it->key == key) {
      plans_.splice(plans_.begin(), plans_, it);
      return &plans_.front();
    }
  }
  const auto context = [&](const absl::Status& status) {
    return absl::Status(status.code(), absl::StrCat("running batch ", GraphKeyString(key),
                                                    " eagerly (no bucket takes it): ",
                                                    status.message()));
  };
  absl::StatusOr<BindOptions> options = BindOptionsAt(*model_, key);
  if (!options.ok()) return context(options.status());
  absl::StatusOr<BoundGraph> graph = BindModel(*model_, *options);
  if (!graph.ok()) return context(graph.status());
  absl::StatusOr<std::unique_ptr<Executor>> executor = make_executor_(*graph);
  if (!executor.ok()) return context(executor.status());
  if (plans_.size() == kPlansKept) plans_.pop_back();
  plans_.push_front({.key = key, .graph = *std::move(graph), .executor = *std::move(executor)});
  return &plans_.front();
}

absl::Status EagerFallback::Run(const ModelInterface& interface, const ValidatedRequest& request,
                                const std::vector<std::byte*>& outputs, ChunkTiming* timing) {
  if (request.view.Uses(RowMemory::kDevice)) {
    return absl::UnimplementedError(
        "a request that no shape bucket takes runs eagerly from host memory: send its tensors "
        "in the request or in system shared memory, not in CUDA shared memory");
  }
  const Clock::time_point start = Clock::now();
  const GraphKey key{model_->batches ? request.view.rows : 1, request.extents};
  ASSIGN_OR_RETURN(Plan * plan, PlanAt(key));
  std::vector<HostTensor> inputs;
  inputs.reserve(plan->graph.inputs.size());
  for (size_t i = 0; i < plan->graph.inputs.size(); ++i) {
    const BoundValue& value = plan->graph.value(plan->graph.inputs[i]);
    HostTensor& tensor = inputs.emplace_back(value.dtype, value.dims);
    if (i >= request.view.inputs.size() || request.view.inputs[i].data == nullptr) {
      return absl::InternalError(absl::StrCat("input '", value.name, "' has no rows to run"));
    }
    std::memcpy(tensor.raw(), request.view.inputs[i].data, tensor.bytes());
  }
  timing->input_ns = NanosSince(start);
  const Clock::time_point run_start = Clock::now();
  ASSIGN_OR_RETURN(const std::vector<HostTensor> results, plan->executor->Run(inputs));
  timing->infer_ns = NanosSince(run_start);
  const Clock::time_point output_start = Clock::now();
  const ModelInterface at = interface.At(request.extents);
  for (size_t k = 0; k < results.size() && k < outputs.size(); ++k) {
    if (outputs[k] == nullptr) continue;
    Dims expected = at.outputs[k].dims;
    if (interface.batching) expected.insert(expected.begin(), request.view.rows);
    // Elements, not dims: a config's reshape gives the model other dims.
    if (NumElements(results[k].dims()) != NumElements(expected)) {
      return absl::InternalError(absl::StrCat(
          "output '", at.outputs[k].name, "' ran eagerly as [", absl::StrJoin(results[k].dims(), ","),
          "], but the request's extents give [", absl::StrJoin(expected, ","), "]"));
    }
    std::memcpy(outputs[k], results[k].raw(), results[k].bytes());
  }
  timing->output_ns = NanosSince(output_start);
  return absl::OkStatus();
}

}  // namespace graphserve
