#include "server/request_gate.h"

#include <algorithm>
#include <thread>

#include "absl/time/time.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

bool RequestGate::Enter() {
  absl::MutexLock lock(&mu_);
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
    absl::MutexLock lock(&mu_);
    all_handed = --entering_ == 0;
  }
  if (all_handed) idle_.SignalAll();
}

bool RequestGate::WaitHanded(std::chrono::steady_clock::duration timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  absl::MutexLock lock(&mu_);
  while (entering_ != 0) {
    const Clock::duration left = deadline - Clock::now();
    if (left <= left.zero()) return false;
    idle_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
  return true;
}

void RequestGate::Leave() {
  bool now_idle = false;
  {
    absl::MutexLock lock(&mu_);
    now_idle = --in_flight_ == 0;
  }
  if (now_idle) idle_.SignalAll();
}

void RequestGate::Close() {
  absl::MutexLock lock(&mu_);
  if (!closed_) closed_at_ = std::chrono::steady_clock::now();
  closed_ = true;
}

bool RequestGate::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

bool RequestGate::WaitIdle(std::chrono::steady_clock::duration timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  absl::MutexLock lock(&mu_);
  while (in_flight_ != 0) {
    const Clock::duration left = deadline - Clock::now();
    if (left <= left.zero()) return false;
    idle_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
  return true;
}

void RequestGate::WaitQuiet(std::chrono::steady_clock::duration quiet,
                            std::chrono::steady_clock::duration limit) {
  const Clock::time_point end = Clock::now() + limit;
  while (true) {
    Clock::time_point quiet_until;
    {
      absl::MutexLock lock(&mu_);
      quiet_until = std::max(last_refused_, closed_at_) + quiet;
    }
    const Clock::time_point now = Clock::now();
    if (now >= quiet_until || now >= end) return;
    std::this_thread::sleep_until(std::min(quiet_until, end));
  }
}

int64_t RequestGate::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

}  // namespace graphserve
