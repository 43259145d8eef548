#pragma once
// How a host thread waits for its GPU work, apart from CUDA's headers so that
// the server's options can name it (common/cuda_handles.h sets it on devices:
// SetGpuWait).

#include <string_view>

#include "absl/status/statusor.h"

namespace graphserve {

// How a host thread waits for its GPU work (cudaEventSynchronize: a stream
// worker waiting for each chunk): CUDA's device scheduling flags, and the
// server's done events, Note [How threads wait for the GPU] in
// server/served_model.h.
enum class GpuWait {
  // CUDA's choice (spin while the process has no more contexts than cores);
  // the server gives models with long chunks sleeping done events.
  kAuto,
  kSpin,   // spin on the core: the soonest wake-up, a core per waiting thread
  kYield,  // spin, yielding the core whenever another thread can run
  // Sleep until the GPU signals: the blocking-sync device flag, and done
  // events made by CudaEvent::CreateForSleepingWait (the device flag alone
  // does not reach cudaEventSynchronize, which busy-waits on an event made
  // without cudaEventBlockingSync: the runtime's documentation).
  kBlock,
};

// "auto", "spin", "yield" or "block"; InvalidArgument otherwise.
absl::StatusOr<GpuWait> ParseGpuWait(std::string_view text);

}  // namespace graphserve
