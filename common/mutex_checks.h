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
//
// Note [Checked locking]
// ~~~~~~~~~~~~~~~~~~~~~~
// What a mutex guards is written down (ABSL_GUARDED_BY, and
// ABSL_EXCLUSIVE_LOCKS_REQUIRED on functions and lambdas that expect it
// held) and clang checks it: every clang build (.bazelrc's clang config,
// so CI's asan_ubsan, fuzz and tsan stages, and asan and ubsan by hand)
// compiles with -Wthread-safety, and -Werror makes each finding an error.
// gcc ignores the annotations: the plain `bazel test` checks nothing. The
// analysis knows only mutexes annotated as capabilities, so the mutexes are
// absl::Mutex, with absl::MutexLock and absl::CondVar (libstdc++'s
// std::mutex is not one; runtime/cuda's two carry no annotations).
//
// To see it fail, read a guarded member without its lock, say in
// server/request_gate.cc:
//   bool RequestGate::closed() const { return closed_; }
// `bazel build --config=tsan //server:request_gate` then stops with
//   server/request_gate.cc:62:43: error: reading variable 'closed_' requires
//   holding mutex 'mu_' [-Werror,-Wthread-safety-analysis]
//
// The analysis is per function: a lambda that reads guarded members under
// its caller's lock says ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_), and a wait
// loops on its predicate explicitly (`while (!ready_) cv_.Wait(&mu_);`)
// rather than handing it to a function the analysis cannot see into.
// ThreadSanitizer sees the same mutexes through Note [Abseil's mutexes under
// ThreadSanitizer] in common/tsan_absl_mutex.cc.

namespace graphserve {

// Stops absl::Mutex's lock-order bookkeeping for this process, unless
// GRAPHSERVE_MUTEX_DEADLOCK_DETECTION is 1. Call it first thing in main.
void TurnOffMutexDeadlockDetection();

}  // namespace graphserve
