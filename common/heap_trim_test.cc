#include "common/heap_trim.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

TEST(ResidentBytesTest, IsTheProcesssResidentSet) {
  const int64_t resident = ResidentBytes();
  EXPECT_GT(resident, 1 << 20);        // a test binary holds more than 1 MiB
  EXPECT_LT(resident, int64_t{1} << 40);
}

// Freed blocks between live ones are the memory an arena keeps resident
// (Note [Trimming the heap]): 64 MiB in 64 KiB blocks (below glibc's mmap
// threshold, so they come from the arena), every other one freed.
TEST(TrimHeapTest, GivesBackTheFreedMiddleOfAnArena) {
  if (!CanTrimHeap()) GTEST_SKIP() << "malloc is not glibc's here";
  constexpr size_t kBlock = 64 << 10;
  std::vector<char*> blocks(1024);
  for (char*& block : blocks) {
    block = static_cast<char*>(std::malloc(kBlock));
    ASSERT_NE(block, nullptr);
    std::memset(block, 1, kBlock);  // resident
  }
  TrimHeap();  // what was free before this test is not its to count
  for (size_t i = 1; i < blocks.size(); i += 2) std::free(blocks[i]);
  const int64_t released = TrimHeap();
  for (size_t i = 0; i < blocks.size(); i += 2) std::free(blocks[i]);
  // 32 MiB freed in 512 holes; each gives back all its pages but the ones
  // malloc's chunk headers share.
  EXPECT_GT(released, 24 << 20);
  EXPECT_LT(released, 40 << 20);
}

}  // namespace
}  // namespace graphserve
