#pragma once
// A POSIX shared memory object this process creates and owns: the client's
// half of Triton's system shared-memory extension. The server maps the same
// object by its key (SystemSharedMemoryRegister), so the two must share a
// host (and its /dev/shm).

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace graphserve {

// Created with shm_open(O_CREAT | O_EXCL | O_RDWR), sized with ftruncate and
// mapped read-write whole. Not copyable; the destructor unmaps and unlinks
// the object (a failure is logged, never thrown). The size never changes:
// a server refuses a region whose object shrank (graphserve's Note
// [Truncated shared memory]; Triton's dies of SIGBUS).
class SystemSharedMemory {
 public:
  // `key` is shm_open's name, "/" and at most NAME_MAX - 1 more characters
  // without another "/". InvalidArgument for a malformed key or a zero
  // size; AlreadyExists when an object `key` exists (it is never reused:
  // it may be another process's); ResourceExhausted when ftruncate or mmap
  // cannot get the memory (a full /dev/shm). Each message names the key, the
  // size and, for a failed call, the errno text.
  static absl::StatusOr<std::unique_ptr<SystemSharedMemory>> Create(std::string key,
                                                                    uint64_t byte_size);

  SystemSharedMemory(const SystemSharedMemory&) = delete;
  SystemSharedMemory& operator=(const SystemSharedMemory&) = delete;
  ~SystemSharedMemory();

  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] uint64_t byte_size() const { return byte_size_; }
  // The object's first byte; byte_size() bytes, zero-filled at creation.
  [[nodiscard]] char* data() const { return data_; }

  // Implementation details follow.
 private:
  SystemSharedMemory(std::string key, uint64_t byte_size, char* data)
      : key_(std::move(key)), byte_size_(byte_size), data_(data) {}

  const std::string key_;
  const uint64_t byte_size_;
  char* const data_;
};

}  // namespace graphserve
