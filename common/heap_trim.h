#pragma once
// Gives the host heap's freed memory back to the operating system after a
// large release (a retired model version). See Note [Trimming the heap].

#include <cstdint>

namespace graphserve {

// Returns the heap's free pages to the operating system (glibc's
// malloc_trim(0), which walks every arena). Returns how far the process's
// resident set shrank, in bytes: 0 when it did not, where /proc cannot be
// read, and where the allocator is not glibc's (a sanitizer's), where
// nothing is done. Takes each arena's lock in turn: call it off the request
// path, after a release, not per request.
int64_t TrimHeap();

// False where malloc is not glibc's (a sanitizer's allocator replaces it):
// TrimHeap then does nothing.
bool CanTrimHeap();

// The calling process's resident set in bytes (/proc/self/statm); 0 where it
// cannot be read.
int64_t ResidentBytes();

// Note [Trimming the heap]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// glibc's malloc gives threads their own arenas (up to eight per core), and
// an arena returns memory to the system only from its top: chunks freed in
// its middle stay resident, to be reused by later allocations from the same
// arena. A model version's load and retire free hundreds of MB (the imported
// ONNX file, the host plans, the weights' staging) across the arenas of the
// loading and serving threads. In the soak on the H200 (bench/results of
// 2026-11-30, call 29) malloc's bytes in use were flat from minute three
// while the free bytes its arenas kept grew from 22 to 53 MB and RSS rose
// 1.57 MiB a minute. malloc_trim(0) gives back every free page of every
// arena, middle included (madvise), so the retirer calls it after each
// retire: RSS then follows what the server holds. Two soaks side by side on
// the H200 (call 31 there), ten minutes and nine reloads each: from minute
// two the server that trims stayed at 593-601 MiB, the one that does not at
// 606-622 MiB. It is not called per request: it locks each arena while it
// walks it.

}  // namespace graphserve
