#pragma once
// Process-wide record of a lost CUDA context (a sticky error: Note [Sticky
// CUDA errors] in common/cuda_error.h) and the process's reaction to it.
// Whoever finds a sticky error reports it here; health reads it (the server
// and its models are then not ready) and main exits non-zero so that the
// orchestrator restarts the process, the only way CUDA offers to recover.

#include <string>

#include "absl/status/status.h"

namespace graphserve {

// Records that `device`'s context was lost because of `cause` (the error as
// its finder saw it). The first report logs an error saying what happens
// next and calls the handler (SetLostCudaContextHandler) on this thread;
// later ones, from other slots' failing chunks, change nothing. Thread-safe.
void ReportLostCudaContext(int device, const absl::Status& cause);

// Whether any report was made: the server then stops being ready.
bool CudaContextLost();

// The first report, e.g. "GPU 0: cudaEventSynchronize failed:
// cudaErrorIllegalAddress (...)"; empty when there is none.
std::string LostCudaContextReason();

// What the process does on the first report, called once on the reporting
// thread (main wakes its own thread, which shuts the server down and exits
// non-zero); must not block. Set before serving; null (the default) does
// nothing beyond the record and the log.
void SetLostCudaContextHandler(void (*handler)());

// Forgets any report and handler: for tests only, which inject a loss and
// then go on in the same process.
void ResetLostCudaContextForTest();

}  // namespace graphserve
