#include "server/shared_memory_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {

namespace {

// One guarded range, read by the SIGBUS handler without a lock (Note
// [Truncated shared memory]): `sequence` is odd while a writer changes the
// range, and a reader that sees it change reads again.
struct Slot {
  std::atomic<uint32_t> sequence{0};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};  // 0 when the slot is free
  std::atomic<bool> truncated{false};
};

// Static storage, zero-initialised before any code runs: the handler may
// look at it from the first SIGBUS on.
Slot slots[GuardedMapping::kCapacity];
// Slots at or past it have never been used; the handler scans below it.
std::atomic<int> slots_used{0};
// The page size, read once before the handler is installed (sysconf is not
// async-signal-safe).
std::atomic<uintptr_t> page_bytes{4096};
struct sigaction previous_sigbus;

absl::Mutex slots_mu;
bool slot_taken[GuardedMapping::kCapacity] ABSL_GUARDED_BY(slots_mu) = {};

void WriteSlot(Slot& slot, uintptr_t begin, uintptr_t end) {
  const uint32_t sequence = slot.sequence.load(std::memory_order_relaxed);
  slot.sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.begin.store(begin, std::memory_order_relaxed);
  slot.end.store(end, std::memory_order_relaxed);
  slot.truncated.store(false, std::memory_order_relaxed);
  slot.sequence.store(sequence + 2, std::memory_order_release);
}

// The slot whose range holds `address`, or null. Async-signal-safe.
Slot* FindSlot(uintptr_t address) {
  const int used = slots_used.load(std::memory_order_acquire);
  for (int i = 0; i < used; ++i) {
    Slot& slot = slots[i];
    const uint32_t before = slot.sequence.load(std::memory_order_acquire);
    // A slot being written is not the faulting access's: that one's region
    // is held, so its slot is stable.
    if (before % 2 != 0) continue;
    const uintptr_t begin = slot.begin.load(std::memory_order_relaxed);
    const uintptr_t end = slot.end.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.sequence.load(std::memory_order_relaxed) != before) continue;
    if (address >= begin && address < end) return &slot;
  }
  return nullptr;
}

void OnSigbus(int signal_number, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  if (Slot* slot = FindSlot(address); slot != nullptr) {
    const uintptr_t page = address & ~(page_bytes.load(std::memory_order_relaxed) - 1);
    void* zero = mmap(reinterpret_cast<void*>(page), page_bytes.load(std::memory_order_relaxed),
                      PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zero != MAP_FAILED) {
      slot->truncated.store(true, std::memory_order_relaxed);
      errno = saved_errno;
      return;  // the access runs again, on the zero page
    }
  }
  // Not a guarded mapping (or no page to put there): the fault repeats under
  // the handler that was there before.
  sigaction(SIGBUS, &previous_sigbus, nullptr);
  errno = saved_errno;
}

void InstallHandler() {
  page_bytes.store(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)), std::memory_order_relaxed);
  struct sigaction action {};
  action.sa_sigaction = OnSigbus;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, &previous_sigbus);
}

}  // namespace

absl::StatusOr<GuardedMapping> GuardedMapping::Guard(void* begin, size_t bytes) {
  static std::once_flag installed;
  std::call_once(installed, InstallHandler);
  absl::MutexLock lock(&slots_mu);
  for (int i = 0; i < kCapacity; ++i) {
    if (slot_taken[i]) continue;
    slot_taken[i] = true;
    const auto start = reinterpret_cast<uintptr_t>(begin);
    WriteSlot(slots[i], start, start + bytes);
    if (slots_used.load(std::memory_order_relaxed) <= i) {
      slots_used.store(i + 1, std::memory_order_release);
    }
    return GuardedMapping(i);
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("the server guards ", kCapacity, " shared memory mappings already"));
}

GuardedMapping::~GuardedMapping() {
  if (slot_ < 0) return;
  absl::MutexLock lock(&slots_mu);
  WriteSlot(slots[slot_], 0, 0);
  slot_taken[slot_] = false;
}

bool GuardedMapping::truncated() const {
  return slot_ >= 0 && slots[slot_].truncated.load(std::memory_order_relaxed);
}

}  // namespace graphserve
