#include "server/shared_memory_guard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "server/shared_memory_testing.h"

namespace graphserve {
namespace {

constexpr size_t kObjectBytes = 2 * 4096;  // two pages: one kept, one cut off

// A second mapping of the object, as the server makes one, and the client's
// ftruncate of it.
std::byte* MapAgain(const TestShmObject& object) {
  const int fd = shm_open(object.key().c_str(), O_RDWR, 0);
  if (fd < 0) return nullptr;
  void* mapping = mmap(nullptr, object.bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return mapping == MAP_FAILED ? nullptr : static_cast<std::byte*>(mapping);
}

bool Truncate(const TestShmObject& object, off_t bytes) {
  const int fd = shm_open(object.key().c_str(), O_RDWR, 0);
  if (fd < 0) return false;
  const bool done = ftruncate(fd, bytes) == 0;
  close(fd);
  return done;
}

// The attack of issue 30's finding 4: the object shrinks under the server's
// mapping; the access past the new end reads zeros instead of killing the
// process, and the guard says so.
TEST(GuardedMappingTest, AccessPastAShrunkObjectReadsZerosAndIsReported) {
  TestShmObject object(kObjectBytes);
  ASSERT_NE(object.data(), nullptr);
  std::byte* mapping = MapAgain(object);
  ASSERT_NE(mapping, nullptr);
  mapping[4096 + 7] = std::byte{0x5A};
  {
    absl::StatusOr<GuardedMapping> guard = GuardedMapping::Guard(mapping, kObjectBytes);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_FALSE(guard->truncated());
    ASSERT_TRUE(Truncate(object, 4096));

    mapping[0] = std::byte{0x11};  // the page kept is still the object's
    EXPECT_EQ(object.data()[0], std::byte{0x11});
    EXPECT_FALSE(guard->truncated());
    const volatile std::byte* cut = mapping + 4096 + 7;
    const std::byte read = *cut;  // SIGBUS without the guard
    EXPECT_EQ(read, std::byte{0});
    mapping[4096 + 8] = std::byte{0x22};  // a write lands on the private page
    EXPECT_TRUE(guard->truncated());
  }
  munmap(mapping, kObjectBytes);
}

// A guard is released with its object: a later guard of another range
// starts clean, and guards of many ranges live side by side.
TEST(GuardedMappingTest, GuardsAreReleasedAndReused) {
  TestShmObject object(kObjectBytes);
  std::byte* mapping = MapAgain(object);
  ASSERT_NE(mapping, nullptr);
  for (int round = 0; round < 3; ++round) {
    std::vector<GuardedMapping> guards;
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<GuardedMapping> guard = GuardedMapping::Guard(mapping, kObjectBytes);
      ASSERT_TRUE(guard.ok()) << guard.status();
      EXPECT_FALSE(guard->truncated());
      guards.push_back(*std::move(guard));
    }
  }
  munmap(mapping, kObjectBytes);
}

// A SIGBUS outside every guarded range is not swallowed: the process dies of
// it as before (the handler puts the previous one back).
TEST(GuardedMappingDeathTest, UnguardedFaultStillKills) {
  TestShmObject object(kObjectBytes);
  std::byte* guarded = MapAgain(object);
  std::byte* unguarded = MapAgain(object);
  ASSERT_NE(guarded, nullptr);
  ASSERT_NE(unguarded, nullptr);
  absl::StatusOr<GuardedMapping> guard = GuardedMapping::Guard(guarded, kObjectBytes);
  ASSERT_TRUE(guard.ok()) << guard.status();
  EXPECT_DEATH(
      {
        Truncate(object, 0);
        const volatile std::byte* cut = unguarded + 4096;
        (void)*cut;
      },
      "");
  munmap(guarded, kObjectBytes);
  munmap(unguarded, kObjectBytes);
}

}  // namespace
}  // namespace graphserve
