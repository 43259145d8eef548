#include "server/injected_cuda_fault.h"

#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/cuda_error.h"

namespace graphserve {

absl::StatusOr<InjectedCudaFault> ParseInjectedCudaFault(absl::string_view text,
                                                         absl::string_view model) {
  InjectedCudaFault found;
  if (text.empty()) return found;
  bool named = false;
  for (const absl::string_view entry : absl::StrSplit(text, ',')) {
    const auto malformed = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          kInjectCudaFaultVariable, "='", text, "': '", entry, "': ", why,
          "; expected <model>:<slot>:<launch|illegal-address>[:<good chunks first>][,...] (a "
          "test-only fault, Note [Injected CUDA faults])"));
    };
    const std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');
    if (parts.size() < 3 || parts.size() > 4) return malformed("not 3 or 4 fields");
    InjectedCudaFault fault;
    if (parts[2] == "launch") {
      fault.kind = InjectedCudaFault::Kind::kFailedLaunch;
    } else if (parts[2] == "illegal-address") {
      fault.kind = InjectedCudaFault::Kind::kIllegalAddress;
    } else {
      return malformed(absl::StrCat("unknown kind '", parts[2], "'"));
    }
    if (!absl::SimpleAtoi(parts[1], &fault.slot) || fault.slot < 0) {
      return malformed(absl::StrCat("slot '", parts[1], "' is not a number >= 0"));
    }
    if (parts.size() == 4 && (!absl::SimpleAtoi(parts[3], &fault.after_chunks) ||
                              fault.after_chunks < 0)) {
      return malformed(absl::StrCat("'", parts[3], "' good chunks is not a number >= 0"));
    }
    // Every entry is checked, whichever model reads the variable: a typo
    // must not pass silently as another model's fault.
    if (parts[0] != model) continue;
    if (named) return malformed(absl::StrCat("model '", model, "' is named twice"));
    named = true;
    found = fault;
  }
  return found;
}

absl::StatusOr<InjectedCudaFault> InjectedCudaFaultFromEnvironment(absl::string_view model) {
  const char* text = std::getenv(kInjectCudaFaultVariable);
  return ParseInjectedCudaFault(text == nullptr ? "" : text, model);
}

absl::Status InjectedLaunchFailure() {
  return CudaErrorToStatus(cudaErrorLaunchOutOfResources,
                           "cudaGraphLaunch (a fault injected for a test)");
}

}  // namespace graphserve
