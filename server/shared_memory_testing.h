#pragma once
// For tests: a POSIX shared memory object that a test creates as a client
// would (shm_open, ftruncate, mmap), reads and writes through its own
// mapping, and removes (shm_unlink) when it goes out of scope.

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"

namespace graphserve {

class TestShmObject {
 public:
  // A fresh object of `bytes` zero bytes, under a key no other test uses.
  explicit TestShmObject(size_t bytes) : key_(NextKey()), bytes_(bytes) {
    const int fd = shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (mapping != MAP_FAILED) data_ = static_cast<std::byte*>(mapping);
    }
    if (fd >= 0) close(fd);
  }
  TestShmObject(const TestShmObject&) = delete;
  TestShmObject& operator=(const TestShmObject&) = delete;
  ~TestShmObject() {
    if (data_ != nullptr) munmap(data_, bytes_);
    shm_unlink(key_.c_str());
  }

  // Null when the object could not be made (the test should fail on it).
  [[nodiscard]] std::byte* data() const { return data_; }
  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  static std::string NextKey() {
    // Not the pid alone: Bazel's sandboxes give concurrent tests their own
    // pid namespaces (the same small pids) over one /dev/shm.
    static const unsigned int process = std::random_device{}();
    static std::atomic<int> next{0};
    return absl::StrCat("/graphserve_test_", getpid(), "_", process, "_", next.fetch_add(1));
  }

  const std::string key_;
  const size_t bytes_;
  std::byte* data_ = nullptr;
};

}  // namespace graphserve
