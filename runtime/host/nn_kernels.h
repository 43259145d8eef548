#pragma once
// Host reference kernels, nn family.
#include "absl/status/status.h"
namespace graphserve {
struct HostKernelArgs;
}  // namespace graphserve
