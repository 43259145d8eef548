#pragma once
// Keeping device-wide synchronisation out of stream captures.
//
// Note [Captures and device-wide synchronisation]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A capture's thread-local mode (capture/stream_capture.h) only stops the
// capturing thread from unsafe calls. A call on another thread that
// synchronises the whole device (cudaFree, cudaFreeHost, a synchronous
// cudaMemcpy, destroying a library handle, loading a module) still
// invalidates every capture in progress on that device: BERT-base's load
// failed with cudaErrorStreamCaptureInvalidated when the load-time reference
// first ran on a thread beside the captures (H200). So each device has a
// lock of two kinds of holder: captures (CaptureLock::kCapture, from a
// capture's begin to its end) and work that may synchronise the device
// (CaptureLock::kSynchronising). Holders of one kind share the lock; the two
// kinds never hold it together. Synchronising work waiting for captures to
// end keeps new captures from beginning, so it is not starved by a load that
// captures back to back.
//
// Captures run on a load's thread, one model at a time, and the reference
// beside them takes its device's lock itself (its wait on its own stream
// lets the lock go). Everything else that may synchronise a device happens
// on threads that know nothing of captures: a retired model freeing its
// arena and graphs while the next model loads, a client registering or
// unregistering shared memory during a live re-capture, a slot's stream
// destroyed at unload. Those calls go through a few doors (the deleters of
// common/cuda_handles.cc, server/shared_memory.cc), and each door opens a
// CapturesHeldOff: every device's lock, synchronising, for the one call. A
// thread that already holds a capture lock skips it: it is either capturing,
// where such a call is an error CUDA reports on its own capture, or already
// holding captures off. Synchronising holders share the lock, so the load's
// own frees between captures do not wait for the reference beside them. No
// thread captures on two devices at once, so taking every device's lock in
// turn cannot wait on a capture that waits on it.

#include <utility>
#include <vector>

namespace graphserve {

// This thread's hold on one device's capture lock (Note [Captures and
// device-wide synchronisation]). Moves; released when destroyed.
class CaptureLock {
 public:
  enum Kind {
    kCapture,         // a capture in progress
    kSynchronising,   // work beside captures that may synchronise the device
  };
  CaptureLock(int device, Kind kind);
  CaptureLock(CaptureLock&& other) noexcept;
  CaptureLock& operator=(CaptureLock&&) = delete;
  CaptureLock(const CaptureLock&) = delete;
  CaptureLock& operator=(const CaptureLock&) = delete;
  ~CaptureLock();

  // Let go early (a capture that ended); the destructor then does nothing.
  void Release();

  // Runs `wait` with the lock let go, and takes it back: for waiting on this
  // thread's own stream or event, which synchronises nothing else, while
  // the other kind goes on.
  template <typename Wait>
  auto WhileReleased(Wait wait) {
    Unlock();
    auto result = wait();
    Lock();
    return result;
  }

  // Implementation details follow.
 private:
  void Lock();
  void Unlock();

  int device_;  // -1 once released or moved from
  Kind kind_;
};

// Captures holding `device`'s lock now: for tests.
int CapturesInProgress(int device);

// A scope in which this thread may synchronise any device while other
// threads capture (Note [Captures and device-wide synchronisation]): it
// holds every device's lock as synchronising work, so it waits for captures
// in progress to end and keeps new ones from beginning. Unless this thread
// already holds a capture lock: then it takes nothing.
class CapturesHeldOff {
 public:
  CapturesHeldOff();
  CapturesHeldOff(const CapturesHeldOff&) = delete;
  CapturesHeldOff& operator=(const CapturesHeldOff&) = delete;

 private:
  std::vector<CaptureLock> locks_;  // device order; empty when skipped
};

// What `call()` returns, called inside a CapturesHeldOff scope: for one
// CUDA call that may synchronise the device.
template <typename Call>
auto WithCapturesHeldOff(Call&& call) {
  const CapturesHeldOff captures_held_off;
  return std::forward<Call>(call)();
}

}  // namespace graphserve
