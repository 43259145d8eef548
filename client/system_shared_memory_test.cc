#include "client/system_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// A key of this test process alone: a killed earlier run may have left its
// objects behind under a repeated pid.
std::string TestKey(const std::string& name) {
  static const unsigned token = std::random_device()();
  return absl::StrFormat("/graphserve_client_test_%d_%08x_%s", getpid(), token, name);
}

bool ObjectExists(const std::string& key) {
  const int fd = shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST(SystemSharedMemoryTest, AnotherMappingOfTheKeySeesTheBytes) {
  const std::string key = TestKey("shared");
  constexpr uint64_t kBytes = 5000;  // more than a page, not a multiple of one
  absl::StatusOr<std::unique_ptr<SystemSharedMemory>> memory =
      SystemSharedMemory::Create(key, kBytes);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ((*memory)->key(), key);
  EXPECT_EQ((*memory)->byte_size(), kBytes);
  for (uint64_t i = 0; i < kBytes; ++i) EXPECT_EQ((*memory)->data()[i], 0) << i;
  std::memcpy((*memory)->data() + 4096, "abc", 3);

  // What a server does with the key: open it and map it on its own.
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  struct stat object;
  ASSERT_EQ(fstat(fd, &object), 0);
  EXPECT_EQ(static_cast<uint64_t>(object.st_size), kBytes);
  void* other = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(other, MAP_FAILED);
  EXPECT_EQ(std::string(static_cast<char*>(other) + 4096, 3), "abc");
  static_cast<char*>(other)[10] = 'z';  // the server's write
  EXPECT_EQ((*memory)->data()[10], 'z');
  munmap(other, kBytes);
}

TEST(SystemSharedMemoryTest, DestructionRemovesTheObject) {
  const std::string key = TestKey("removed");
  {
    absl::StatusOr<std::unique_ptr<SystemSharedMemory>> memory =
        SystemSharedMemory::Create(key, 64);
    ASSERT_TRUE(memory.ok()) << memory.status();
    EXPECT_TRUE(ObjectExists(key));
  }
  EXPECT_FALSE(ObjectExists(key));
}

TEST(SystemSharedMemoryTest, NeverTakesOverAnExistingObject) {
  const std::string key = TestKey("taken");
  absl::StatusOr<std::unique_ptr<SystemSharedMemory>> first = SystemSharedMemory::Create(key, 64);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<SystemSharedMemory>> second = SystemSharedMemory::Create(key, 64);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(absl::StrContains(second.status().message(), key)) << second.status();
  // The failed attempt left the first object alone.
  EXPECT_TRUE(ObjectExists(key));
}

TEST(SystemSharedMemoryTest, RejectsBadKeysAndSizes) {
  for (const std::string& key :
       std::vector<std::string>{"", "/", "no_slash", "/a/b", "/" + std::string(300, 'k')}) {
    EXPECT_EQ(SystemSharedMemory::Create(key, 64).status().code(),
              absl::StatusCode::kInvalidArgument)
        << key;
  }
  const std::string key = TestKey("empty");
  EXPECT_EQ(SystemSharedMemory::Create(key, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ObjectExists(key));
}

}  // namespace
}  // namespace graphserve
