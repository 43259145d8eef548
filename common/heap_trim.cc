#include "common/heap_trim.h"

#include <unistd.h>

#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// A sanitizer's allocator replaces malloc: glibc's malloc_trim would walk
// arenas that hold nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GRAPHSERVE_SANITIZER_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GRAPHSERVE_SANITIZER_MALLOC 1
#endif
#endif

// glibc's malloc, which malloc_trim returns memory from.
#if defined(__GLIBC__) && !defined(GRAPHSERVE_SANITIZER_MALLOC)
#define GRAPHSERVE_CAN_TRIM_HEAP 1
#endif

namespace graphserve {

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0;
  int64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * sysconf(_SC_PAGESIZE);
}

bool CanTrimHeap() {
#if defined(GRAPHSERVE_CAN_TRIM_HEAP)
  return true;
#else
  return false;
#endif
}

int64_t TrimHeap() {
#if defined(GRAPHSERVE_CAN_TRIM_HEAP)
  const int64_t before = ResidentBytes();
  malloc_trim(0);
  const int64_t after = ResidentBytes();
  return before > after && after > 0 ? before - after : 0;
#else
  return 0;
#endif
}

}  // namespace graphserve
