#pragma once
// Host reference kernels, elementwise family: Elementwise ops: broadcasting
// arithmetic, comparisons, Where, unary math, Cast. Each computes one canonical
// bound node (Note [Canonical bound nodes]); the op registry
// (runtime/ops/elementwise.cc) names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostAdd(const HostKernelArgs& args);
absl::Status HostSub(const HostKernelArgs& args);
absl::Status HostMul(const HostKernelArgs& args);
absl::Status HostDiv(const HostKernelArgs& args);
absl::Status HostPow(const HostKernelArgs& args);
absl::Status HostMax(const HostKernelArgs& args);
absl::Status HostMin(const HostKernelArgs& args);
absl::Status HostMod(const HostKernelArgs& args);
absl::Status HostEqual(const HostKernelArgs& args);
absl::Status HostLess(const HostKernelArgs& args);
absl::Status HostGreater(const HostKernelArgs& args);
absl::Status HostLessOrEqual(const HostKernelArgs& args);
absl::Status HostGreaterOrEqual(const HostKernelArgs& args);
absl::Status HostAnd(const HostKernelArgs& args);
absl::Status HostOr(const HostKernelArgs& args);
absl::Status HostXor(const HostKernelArgs& args);
absl::Status HostNot(const HostKernelArgs& args);
absl::Status HostIsNaN(const HostKernelArgs& args);
absl::Status HostIsInf(const HostKernelArgs& args);
absl::Status HostWhere(const HostKernelArgs& args);
absl::Status HostSqrt(const HostKernelArgs& args);
absl::Status HostExp(const HostKernelArgs& args);
absl::Status HostLog(const HostKernelArgs& args);
absl::Status HostSigmoid(const HostKernelArgs& args);
absl::Status HostTanh(const HostKernelArgs& args);
absl::Status HostErf(const HostKernelArgs& args);
absl::Status HostReciprocal(const HostKernelArgs& args);
absl::Status HostGelu(const HostKernelArgs& args);
absl::Status HostRelu(const HostKernelArgs& args);
absl::Status HostAbs(const HostKernelArgs& args);
absl::Status HostNeg(const HostKernelArgs& args);
absl::Status HostLeakyRelu(const HostKernelArgs& args);
absl::Status HostCast(const HostKernelArgs& args);

}  // namespace graphserve
