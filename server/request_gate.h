#pragma once
// Admission for requests during shutdown. Every request enters the gate and
// leaves it when its RPC is finished; once the gate is closed, Enter fails
// (the RPC gets UNAVAILABLE) and Wait blocks until the requests already in
// have left, so nothing accepted is lost when the server drains on SIGTERM.
// WaitQuiet keeps refusing until refusals stop.

#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {

class RequestGate {
 public:
  // False once Close has been called: refuse the request.
  [[nodiscard]] bool Enter();
  // An entered request has reached its model's queue (or been refused
  // before it): from now on the model's drain answers it. Once per Enter.
  void Handed();
  // Ends a request that entered.
  void Leave();
  // Refuses every later Enter. Idempotent.
  void Close();
  [[nodiscard]] bool closed() const;
  // Waits until no request is in (true) or `timeout` passes (false).
  bool WaitIdle(std::chrono::steady_clock::duration timeout);
  // After Close: waits until every request that entered has been handed to
  // its model (or `timeout` passes), so that draining the models cannot
  // refuse a request the gate already accepted.
  bool WaitHanded(std::chrono::steady_clock::duration timeout);
  // After Close: waits until no request has been refused for `quiet`, or
  // `limit` passes. Requests still in transit when the port closes would be
  // cancelled by gRPC; refusing them first answers them UNAVAILABLE, and the
  // NOT_SERVING period lets load balancers see the server go.
  void WaitQuiet(std::chrono::steady_clock::duration quiet,
                 std::chrono::steady_clock::duration limit);
  [[nodiscard]] int64_t in_flight() const;

  // Implementation details follow.
 private:
  mutable absl::Mutex mu_;
  absl::CondVar idle_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t entering_ ABSL_GUARDED_BY(mu_) = 0;  // entered, not yet handed
  std::chrono::steady_clock::time_point closed_at_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_refused_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphserve
