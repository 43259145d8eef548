#pragma once
// Keeps a shared-memory mapping whose object a client shrinks from killing
// the server with SIGBUS (Note [Truncated shared memory]).
//
// Note [Truncated shared memory]
// A registered region maps a client's POSIX shared memory object. The client
// may ftruncate the object afterwards; the kernel then drops the pages past
// the new end from every mapping, and the server's next access to them is
// SIGBUS (issue 30, finding 4: register, truncate, infer, and the server
// died). Nothing done before an access can make it safe, since the client can
// shrink the object between any check and the access; MAP_POPULATE only
// faults the pages in at mmap time, and the kernel still takes them away at
// the truncation. Sealing (F_SEAL_SHRINK) is for memfd objects, not
// shm_open's. So two pieces:
//  - Each use of a system region (SharedMemoryRegistry::Slice) compares the
//    object's size, through the descriptor the region keeps, with the
//    registered range, and refuses a shrunk region with InvalidArgument naming
//    it: the usual case (register, truncate, infer) gets a clear error.
//  - For the race left (the object shrinks while a request reads or writes the
//    region), every region's mapping is guarded: a process-wide SIGBUS handler
//    that finds the faulting address in a guarded mapping puts a private zero
//    page there (mmap MAP_FIXED, anonymous) and lets the access go on. That
//    request reads zeros or writes into memory nobody reads, the region is
//    marked truncated, and every later use of it is refused. A SIGBUS anywhere
//    else puts back the handler that was there before and returns, so the
//    fault repeats under it (the default: a core dump; a sanitizer: its
//    report).
// The handler is async-signal-safe: it scans a fixed table of slots, each
// read under its own sequence counter (a writer makes the counter odd while it
// changes the slot), and calls only mmap and sigaction. A slot is cleared
// before its mapping is unmapped, and a request holds its region (Note
// [Shared memory lifetime]) for as long as it touches the mapping, so a
// faulting access always finds its slot. A pinned region (Note [Pinned shared
// memory]) whose pages were replaced keeps the GPU's view of the old pages
// until it is unregistered; cudaHostUnregister may then warn.

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace graphserve {

// A guarded range [begin, begin + bytes) while the object lives. Move-only.
class GuardedMapping {
 public:
  // Mappings guarded at once, process-wide: above any server's
  // --shared-memory-max-regions.
  static constexpr int kCapacity = 1 << 14;

  // Installs the SIGBUS handler (once per process) and guards the range.
  // ResourceExhausted when kCapacity ranges are guarded already.
  static absl::StatusOr<GuardedMapping> Guard(void* begin, size_t bytes);

  GuardedMapping(GuardedMapping&& other) noexcept : slot_(other.slot_) { other.slot_ = -1; }
  GuardedMapping& operator=(GuardedMapping&&) = delete;
  GuardedMapping(const GuardedMapping&) = delete;
  GuardedMapping& operator=(const GuardedMapping&) = delete;
  // Stops guarding; call it (by destroying the object) before the range is
  // unmapped.
  ~GuardedMapping();

  // A page of the range faulted past the object's end and was replaced.
  [[nodiscard]] bool truncated() const;

  // Implementation details follow.
 private:
  explicit GuardedMapping(int slot) : slot_(slot) {}
  int slot_;
};

}  // namespace graphserve
