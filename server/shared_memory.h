#pragma once
// Triton's system shared-memory extension: a client registers a range of a
// POSIX shared memory object under a name, then names the region in a
// request, and the server reads the input's bytes from it, or writes the
// output's rows into it, instead of carrying them in the message. Region
// names are the client's (Note [Quoting client text] applies to every
// message that names one).
//
// Note [Shared memory lifetime]
// A region's mapping belongs to a shared_ptr. The registry holds one; a
// request that reads an input from the region or writes an output into it
// holds another from validation until it is answered
// (ValidatedRequest::regions, which the served model's request state keeps).
// Unregister drops only the registry's, so a request in flight keeps
// reading and writing mapped memory, and the mapping goes when the last
// request that uses it ends; the name is free for a new registration at once.
// What no reference count can help: a client that shrinks the object
// (ftruncate) while the server maps it turns the server's next access past
// the new end into SIGBUS, as in Triton. Register objects whose size stays
// put.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {

// One registered range of a POSIX shared memory object, mapped read-write:
// byte_size() bytes at data(). Not copyable: it owns the mapping, which the
// destructor unmaps.
class SharedMemoryRegion {
 public:
  // shm_open(key) read-write, checks that [offset, offset + byte_size) lies
  // within the object, and maps that range. `name` is only recorded.
  // InvalidArgument for a zero byte_size or a range past the object's end;
  // NotFound when no object is called `key`, InvalidArgument for any other
  // shm_open or mmap failure; each message names the region and, for a
  // failed call, the errno text.
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> MapSystem(std::string name,
                                                                       std::string key,
                                                                       uint64_t offset,
                                                                       uint64_t byte_size);

  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;
  // Unmaps; a failing munmap is logged, never thrown.
  ~SharedMemoryRegion();

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] uint64_t offset() const { return offset_; }
  [[nodiscard]] uint64_t byte_size() const { return byte_size_; }
  // The first byte of the registered range (the object's byte `offset`).
  [[nodiscard]] std::byte* data() const { return data_; }

  // Implementation details follow.
 private:
  SharedMemoryRegion(std::string name, std::string key, uint64_t offset, uint64_t byte_size,
                     void* mapping, size_t mapping_bytes, std::byte* data)
      : name_(std::move(name)),
        key_(std::move(key)),
        offset_(offset),
        byte_size_(byte_size),
        mapping_(mapping),
        mapping_bytes_(mapping_bytes),
        data_(data) {}

  const std::string name_;
  const std::string key_;
  const uint64_t offset_;
  const uint64_t byte_size_;
  // mmap maps from a page boundary: the mapping starts at or before `offset`.
  void* const mapping_;
  const size_t mapping_bytes_;
  std::byte* const data_;
};

// A tensor's bytes inside a region, and the region they keep mapped (Note
// [Shared memory lifetime]).
struct SharedMemorySlice {
  std::shared_ptr<const SharedMemoryRegion> region;
  std::byte* data = nullptr;
  uint64_t byte_size = 0;
};

// The registered regions by name. Thread-safe: the gRPC and HTTP threads
// register, unregister and look up at once.
class SharedMemoryRegistry {
 public:
  // Maps and records a region (SharedMemoryRegion::MapSystem's errors);
  // AlreadyExists when `name` is registered already.
  absl::Status Register(const std::string& name, const std::string& key, uint64_t offset,
                        uint64_t byte_size) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets region `name`; a name not registered is no error (as in Triton).
  // Requests holding the region keep it mapped until they end.
  void Unregister(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);
  void UnregisterAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Every region, by name; only `name` unless it is empty (NotFound naming
  // it when it is not registered).
  absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> Status(
      const std::string& name) const ABSL_LOCKS_EXCLUDED(mu_);
  // `byte_size` bytes at `offset` within region `name`. InvalidArgument
  // naming the region when it is not registered or the range runs past its
  // end.
  absl::StatusOr<SharedMemorySlice> Slice(const std::string& name, uint64_t offset,
                                          uint64_t byte_size) const ABSL_LOCKS_EXCLUDED(mu_);

  // Implementation details follow.
 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<const SharedMemoryRegion>> regions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphserve
