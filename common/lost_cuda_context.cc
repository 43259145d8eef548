#include "common/lost_cuda_context.h"

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/logging.h"

namespace graphserve {
namespace {

struct LostContextState {
  absl::Mutex mu;
  std::string reason ABSL_GUARDED_BY(mu);
  void (*handler)() ABSL_GUARDED_BY(mu) = nullptr;
  // Read by every readiness check without the lock.
  std::atomic<bool> lost{false};
};

LostContextState& State() {
  static LostContextState* const state = new LostContextState();  // never destroyed
  return *state;
}

}  // namespace

void ReportLostCudaContext(int device, const absl::Status& cause) {
  LostContextState& state = State();
  void (*handler)() = nullptr;
  {
    absl::MutexLock lock(&state.mu);
    if (state.lost.load(std::memory_order_relaxed)) return;
    state.reason = absl::StrCat("GPU ", device, ": ", cause.message());
    state.lost.store(true, std::memory_order_release);
    handler = state.handler;
  }
  spdlog::error(
      "the CUDA context of GPU {} is lost (a sticky error: CUDA fails every later call on it "
      "until the process restarts): {}. Failing what is in flight, reporting NOT_SERVING, and "
      "exiting non-zero so that the process is restarted",
      device, std::string(cause.message()));
  if (handler != nullptr) handler();
}

bool CudaContextLost() { return State().lost.load(std::memory_order_acquire); }

std::string LostCudaContextReason() {
  LostContextState& state = State();
  absl::MutexLock lock(&state.mu);
  return state.reason;
}

void SetLostCudaContextHandler(void (*handler)()) {
  LostContextState& state = State();
  absl::MutexLock lock(&state.mu);
  state.handler = handler;
}

void ResetLostCudaContextForTest() {
  LostContextState& state = State();
  absl::MutexLock lock(&state.mu);
  state.reason.clear();
  state.handler = nullptr;
  state.lost.store(false, std::memory_order_release);
}

}  // namespace graphserve
