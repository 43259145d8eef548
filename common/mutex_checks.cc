#include "common/mutex_checks.h"

#include <cstdlib>
#include <string_view>

#include "absl/synchronization/mutex.h"

namespace graphserve {

void TurnOffMutexDeadlockDetection() {
  const char* keep = std::getenv("GRAPHSERVE_MUTEX_DEADLOCK_DETECTION");
  if (keep != nullptr && std::string_view(keep) == "1") return;
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace graphserve
