#include "common/mutex_checks.h"

#include <cstdlib>

#include "absl/base/config.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// Takes two mutexes in one order, then in the other: a lock-order inversion,
// which Abseil's deadlock detection reports when it is on.
void InvertLockOrder() {
  absl::Mutex a;
  absl::Mutex b;
  {
    absl::MutexLock first(&a);
    absl::MutexLock second(&b);
  }
  {
    absl::MutexLock first(&b);
    absl::MutexLock second(&a);
  }
}

// The premise of Note [Abseil's deadlock detection]: the Abseil this builds
// with checks lock order (and aborts on an inversion) unless told not to.
// Kept on through the environment variable, as serve_bench's A/B run does.
TEST(MutexChecksDeathTest, KeptOnTheInversionAborts) {
  EXPECT_DEATH(
      {
        setenv("GRAPHSERVE_MUTEX_DEADLOCK_DETECTION", "1", 1);
        TurnOffMutexDeadlockDetection();
        InvertLockOrder();
      },
      "[Pp]otential (Mutex )?deadlock");
}

TEST(MutexChecksTest, TurnedOffTheInversionPasses) {
#ifdef ABSL_HAVE_THREAD_SANITIZER
  // ThreadSanitizer checks lock order itself, Abseil's detection or not.
  GTEST_SKIP() << "ThreadSanitizer reports the inversion (Note [Abseil's mutexes under "
                  "ThreadSanitizer] in common/tsan_absl_mutex.cc)";
#endif
  unsetenv("GRAPHSERVE_MUTEX_DEADLOCK_DETECTION");
  TurnOffMutexDeadlockDetection();
  InvertLockOrder();
}

}  // namespace
}  // namespace graphserve
