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
// first ran on a thread beside the captures (H200). So code that captures
// holds its device's CaptureExclusion shared from the capture's begin to its
// end, and code that works on another thread beside captures holds it
// exclusively around anything that may synchronise the device. Waiting on
// its own stream or event does not, and may be done with the lock released.

#include "absl/synchronization/mutex.h"

namespace graphserve {

// The lock of `device`'s captures (Note [Captures and device-wide
// synchronisation]); one per device, for the life of the process.
absl::Mutex& CaptureExclusion(int device);

}  // namespace graphserve
