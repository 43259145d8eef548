#include "common/capture_exclusion.h"

#include <array>

namespace graphserve {

absl::Mutex& CaptureExclusion(int device) {
  // Devices beyond the array share a lock: more exclusion, never less.
  constexpr int kDevices = 64;
  static auto* const locks = new std::array<absl::Mutex, kDevices>();  // never destroyed
  const int index = device < 0 ? 0 : device % kDevices;
  return (*locks)[index];
}

}  // namespace graphserve
