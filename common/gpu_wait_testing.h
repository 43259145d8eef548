#pragma once
// For tests of how threads wait for the GPU (common/cuda_handles_test.cc,
// capture/graph_set_test.cc): the CPU time a thread has used, and device 0
// made to spin for the length of a test, so that only a sleeping event can
// let a waiting thread sleep.

#include <time.h>

#include <chrono>

#include "absl/status/status.h"
#include "common/cuda_handles.h"

namespace graphserve {

// CPU time the calling thread has used.
inline std::chrono::nanoseconds ThreadCpuTime() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

// Device 0's threads spin while they wait for it until this goes out of
// scope; then they wait as CUDA chooses again, however the test ends.
class SpinningDevice0 {
 public:
  SpinningDevice0() : status_(SetGpuWait(GpuWait::kSpin, {0})) {}
  ~SpinningDevice0() { SetGpuWait(GpuWait::kAuto, {0}).IgnoreError(); }
  SpinningDevice0(const SpinningDevice0&) = delete;
  SpinningDevice0& operator=(const SpinningDevice0&) = delete;

  // Whether device 0 spins.
  [[nodiscard]] const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

}  // namespace graphserve
