#pragma once
// Note [Abseil's deadlock detection]
// Debian builds Abseil without NDEBUG, so absl::Mutex keeps its debug-build
// deadlock detection on in every program that links it: each Lock and Unlock
// records lock order in one process-wide graph under one global spinlock.
// gRPC's own locks are absl::Mutex, so every step of every RPC takes that
// spinlock, and at saturation the threads queue on it: in CPU profiles of
// the saturated server and load generator (bench/serve_profile.sh), Mutex
// Lock and Unlock held 22% of the server's samples and 42% of the load
// generator's, most of it spinning in SpinLock::SlowLock under the check
// (bench/results/2026-11-26_d653244_profile_h200). Serving binaries turn it
// off first thing in main; the tests keep it, where it finds lock-order
// inversions (mutex_checks_test shows it on). Setting
// GRAPHSERVE_MUTEX_DEADLOCK_DETECTION=1 keeps it in a serving binary too, so
// that serve_bench can measure both side by side.

namespace graphserve {

// Stops absl::Mutex's lock-order bookkeeping for this process, unless
// GRAPHSERVE_MUTEX_DEADLOCK_DETECTION is 1. Call it first thing in main.
void TurnOffMutexDeadlockDetection();

}  // namespace graphserve
