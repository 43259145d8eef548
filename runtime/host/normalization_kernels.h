#pragma once
// Host reference kernels, normalization family: Softmax, LayerNormalization and
// ReduceMean. Each computes one canonical bound node (Note [Canonical bound
// nodes]); the op registry (runtime/ops/normalization.cc) names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostSoftmax(const HostKernelArgs& args);
absl::Status HostLayerNormalization(const HostKernelArgs& args);
absl::Status HostReduceMean(const HostKernelArgs& args);
absl::Status HostCumSum(const HostKernelArgs& args);

}  // namespace graphserve
