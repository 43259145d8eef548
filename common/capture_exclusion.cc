#include "common/capture_exclusion.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {
namespace {

// One device's lock: counts of each kind of holder, and the synchronising
// work waiting, which new captures wait behind.
struct DeviceLock {
  absl::Mutex mu;
  int captures ABSL_GUARDED_BY(mu) = 0;
  int synchronising ABSL_GUARDED_BY(mu) = 0;
  int synchronising_waiting ABSL_GUARDED_BY(mu) = 0;
};

// Devices beyond the array share a lock: more exclusion, never less.
constexpr int kLocks = 64;

DeviceLock& LockOf(int device) {
  static auto* const locks = new std::array<DeviceLock, kLocks>();  // never destroyed
  return (*locks)[device % kLocks];
}

// Capture locks this thread holds, of any device and either kind.
thread_local int held_by_this_thread = 0;

// The number of locks CapturesHeldOff takes: one per device this process
// sees, none where it sees no GPU (then nothing can capture).
int DeviceLocks() {
  static const int count = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      cudaGetLastError();  // not sticky; leave nothing for the next call to see
      return 0;
    }
    return std::min(devices, kLocks);
  }();
  return count;
}

}  // namespace

CaptureLock::CaptureLock(int device, Kind kind) : device_(std::max(device, 0)), kind_(kind) {
  Lock();
}

CaptureLock::CaptureLock(CaptureLock&& other) noexcept
    : device_(std::exchange(other.device_, -1)), kind_(other.kind_) {}

CaptureLock::~CaptureLock() { Release(); }

void CaptureLock::Release() {
  if (device_ < 0) return;
  Unlock();
  device_ = -1;
}

void CaptureLock::Lock() {
  DeviceLock& lock = LockOf(device_);
  absl::MutexLock hold(&lock.mu);
  if (kind_ == kCapture) {
    auto free_of_synchronising = [&lock]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock.mu) {
      return lock.synchronising == 0 && lock.synchronising_waiting == 0;
    };
    lock.mu.Await(absl::Condition(&free_of_synchronising));
    ++lock.captures;
  } else {
    auto free_of_captures = [&lock]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock.mu) {
      return lock.captures == 0;
    };
    ++lock.synchronising_waiting;
    lock.mu.Await(absl::Condition(&free_of_captures));
    --lock.synchronising_waiting;
    ++lock.synchronising;
  }
  ++held_by_this_thread;
}

void CaptureLock::Unlock() {
  DeviceLock& lock = LockOf(device_);
  absl::MutexLock hold(&lock.mu);
  --(kind_ == kCapture ? lock.captures : lock.synchronising);
  --held_by_this_thread;
}

int CapturesInProgress(int device) {
  DeviceLock& lock = LockOf(std::max(device, 0));
  absl::MutexLock hold(&lock.mu);
  return lock.captures;
}

CapturesHeldOff::CapturesHeldOff() {
  if (held_by_this_thread > 0) return;
  const int devices = DeviceLocks();
  locks_.reserve(devices);
  for (int device = 0; device < devices; ++device) {
    locks_.emplace_back(device, CaptureLock::kSynchronising);
  }
}

}  // namespace graphserve
