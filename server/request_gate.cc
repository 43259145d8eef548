#include "server/request_gate.h"

namespace graphserve {

bool RequestGate::Enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return false;
  ++in_flight_;
  return true;
}

void RequestGate::Leave() {
  bool now_idle = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    now_idle = --in_flight_ == 0;
  }
  if (now_idle) idle_.notify_all();
}

void RequestGate::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

bool RequestGate::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

bool RequestGate::WaitIdle(std::chrono::steady_clock::duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout,
                        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; });
}

int64_t RequestGate::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace graphserve
