#pragma once
// Test-only CUDA faults, injected into one runner slot of one served model
// (Note [Injected CUDA faults]).

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

// Note [Injected CUDA faults]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// For tests only, and off unless asked for: the environment variable
//   GRAPHSERVE_TEST_INJECT_CUDA_FAULT=<model>:<slot>:<kind>[:<after>][,...]
// makes runner slot <slot> of model <model> fail one chunk, the one after
// <after> good chunks on that slot (default 0: the first); a list gives
// faults to several models (one each). <kind>:
//   launch           the chunk's launch fails as a refused launch does
//                    (cudaErrorLaunchOutOfResources, not sticky): only that
//                    chunk's requests fail, INTERNAL, and the slot serves on;
//   illegal-address  a kernel that writes through an unmapped address runs
//                    on the slot's stream before the chunk's graph: a real
//                    cudaErrorIllegalAddress, which loses the context (Note
//                    [Sticky CUDA errors] in common/cuda_error.h), so the
//                    server fails what is in flight, reports NOT_SERVING
//                    and exits non-zero.
// It is compiled into the server binary, so that the binary an orchestrator
// runs is the one whose fault handling the tests see; nothing but a
// runner's creation reads the variable, once per model load.
inline constexpr char kInjectCudaFaultVariable[] = "GRAPHSERVE_TEST_INJECT_CUDA_FAULT";

struct InjectedCudaFault {
  enum class Kind {
    kNone,            // no fault: production
    kFailedLaunch,    // "launch"
    kIllegalAddress,  // "illegal-address"
  };
  Kind kind = Kind::kNone;
  // The runner slot that fails.
  int slot = 0;
  // Good chunks the slot runs first.
  int64_t after_chunks = 0;
};

// The fault `text` (the variable's value) asks of `model`: kNone when `text`
// is empty or names only other models; InvalidArgument, naming the variable
// and the expected form, when any entry is malformed or `model` is named
// twice.
absl::StatusOr<InjectedCudaFault> ParseInjectedCudaFault(absl::string_view text,
                                                         absl::string_view model);

// ParseInjectedCudaFault of the variable's value in this process.
absl::StatusOr<InjectedCudaFault> InjectedCudaFaultFromEnvironment(absl::string_view model);

// The "launch" fault's error: what a refused cudaGraphLaunch returns.
absl::Status InjectedLaunchFailure();

}  // namespace graphserve
