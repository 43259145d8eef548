#include "common/gpu_wait.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<GpuWait> ParseGpuWait(std::string_view text) {
  if (text == "auto") return GpuWait::kAuto;
  if (text == "spin") return GpuWait::kSpin;
  if (text == "yield") return GpuWait::kYield;
  if (text == "block") return GpuWait::kBlock;
  return absl::InvalidArgumentError(absl::StrCat(
      "the GPU wait is auto, spin, yield or block, got '", std::string(text.substr(0, 32)), "'"));
}

}  // namespace graphserve
