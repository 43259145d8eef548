#pragma once
// Host reference kernels, linear algebra family: Gemm and MatMul, float64
// accumulation. Each computes one canonical bound node (Note [Canonical bound
// nodes]); the op registry (runtime/ops/linear_algebra.cc) names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostGemm(const HostKernelArgs& args);
absl::Status HostMatMul(const HostKernelArgs& args);

}  // namespace graphserve
