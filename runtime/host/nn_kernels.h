#pragma once
// Host reference kernels, nn family: Conv, BatchNormalization (as a
// per-channel affine), MaxPool/AveragePool, global pools, Pad, and the
// activations Clip, HardSigmoid, HardSwish. Each reads the node's canonical
// parameters (runtime/nn_node_params.h) and calls runtime/host/nn_reference.h.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostConv(const HostKernelArgs& args);
absl::Status HostBatchNormalization(const HostKernelArgs& args);
absl::Status HostPool(const HostKernelArgs& args);
absl::Status HostGlobalPool(const HostKernelArgs& args);
absl::Status HostPad(const HostKernelArgs& args);
absl::Status HostActivation(const HostKernelArgs& args);

}  // namespace graphserve
