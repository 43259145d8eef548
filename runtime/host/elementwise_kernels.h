#pragma once
// Host reference kernels, elementwise family: Elementwise ops: broadcasting
// arithmetic, comparisons, Where, unary math, Cast. Each computes one canonical
// bound node (Note [Canonical bound nodes]); the op registry
// (runtime/ops/elementwise.cc) names them.

#include "absl/status/status.h"
#include "runtime/activation_defaults.h"

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
absl::Status HostFloor(const HostKernelArgs& args);
absl::Status HostCeil(const HostKernelArgs& args);
absl::Status HostRound(const HostKernelArgs& args);
absl::Status HostSign(const HostKernelArgs& args);
absl::Status HostSin(const HostKernelArgs& args);
absl::Status HostCos(const HostKernelArgs& args);
absl::Status HostSoftplus(const HostKernelArgs& args);
absl::Status HostSoftsign(const HostKernelArgs& args);
absl::Status HostMish(const HostKernelArgs& args);
absl::Status HostElu(const HostKernelArgs& args);
absl::Status HostSelu(const HostKernelArgs& args);
absl::Status HostCelu(const HostKernelArgs& args);
absl::Status HostThresholdedRelu(const HostKernelArgs& args);
absl::Status HostPRelu(const HostKernelArgs& args);
absl::Status HostCast(const HostKernelArgs& args);

}  // namespace graphserve
