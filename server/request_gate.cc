#include "server/request_gate.h"

#include <algorithm>
#include <thread>

namespace graphserve {

bool RequestGate::Enter() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) {
    last_refused_ = std::chrono::steady_clock::now();
    return false;
  }
  ++in_flight_;
  ++entering_;
  return true;
}

void RequestGate::Handed() {
  bool all_handed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all_handed = --entering_ == 0;
  }
  if (all_handed) idle_.notify_all();
}

bool RequestGate::WaitHanded(std::chrono::steady_clock::duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_.wait_for(lock, timeout,
                        [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entering_ == 0; });
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
  if (!closed_) closed_at_ = std::chrono::steady_clock::now();
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

void RequestGate::WaitQuiet(std::chrono::steady_clock::duration quiet,
                            std::chrono::steady_clock::duration limit) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point end = Clock::now() + limit;
  while (true) {
    Clock::time_point quiet_until;
    {
      std::lock_guard<std::mutex> lock(mu_);
      quiet_until = std::max(last_refused_, closed_at_) + quiet;
    }
    const Clock::time_point now = Clock::now();
    if (now >= quiet_until || now >= end) return;
    std::this_thread::sleep_until(std::min(quiet_until, end));
  }
}

int64_t RequestGate::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_;
}

}  // namespace graphserve
