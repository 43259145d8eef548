#include "client/system_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {
namespace {

std::string ErrnoText(int error) {
  return absl::StrCat(std::strerror(error), " (errno ", error, ")");
}

absl::Status CheckKey(const std::string& key) {
  if (key.size() < 2 || key.front() != '/' || key.size() > NAME_MAX ||
      absl::string_view(key).substr(1).find('/') != absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("shared memory key '", key,
                                                   "' must be '/' and 1 to ", NAME_MAX - 1,
                                                   " more characters without another '/'"));
  }
  return absl::OkStatus();
}

// ftruncate and mmap fail with these when /dev/shm (or memory) is full.
bool OutOfMemory(int error) { return error == ENOSPC || error == ENOMEM || error == EFBIG; }

}  // namespace

absl::StatusOr<std::unique_ptr<SystemSharedMemory>> SystemSharedMemory::Create(std::string key,
                                                                               uint64_t byte_size) {
  RETURN_IF_ERROR(CheckKey(key));
  if (byte_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory object ", key, " needs a size of at least 1 byte"));
  }
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, S_IRUSR | S_IWUSR);
  if (fd < 0) {
    const int error = errno;
    const std::string message =
        absl::StrCat("shm_open(", key, ", O_CREAT | O_EXCL | O_RDWR) failed: ", ErrnoText(error));
    return error == EEXIST ? absl::AlreadyExistsError(message)
                           : absl::InvalidArgumentError(message);
  }
  // From here on every failure removes the object again.
  auto fail = [&key, fd](absl::string_view call, uint64_t bytes) {
    const int error = errno;
    close(fd);
    shm_unlink(key.c_str());
    const std::string message = absl::StrCat(call, " of shared memory object ", key, " (", bytes,
                                             " bytes) failed: ", ErrnoText(error));
    return OutOfMemory(error) ? absl::ResourceExhaustedError(message)
                              : absl::InvalidArgumentError(message);
  };
  if (ftruncate(fd, static_cast<off_t>(byte_size)) != 0) return fail("ftruncate", byte_size);
  void* mapping = mmap(nullptr, byte_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) return fail("mmap", byte_size);
  // The mapping keeps the object open; the descriptor is no longer needed.
  close(fd);
  return std::unique_ptr<SystemSharedMemory>(
      new SystemSharedMemory(std::move(key), byte_size, static_cast<char*>(mapping)));
}

SystemSharedMemory::~SystemSharedMemory() {
  if (munmap(data_, byte_size_) != 0) {
    spdlog::warn("munmap of shared memory object {} ({} bytes) failed: {}", key_, byte_size_,
                 ErrnoText(errno));
  }
  if (shm_unlink(key_.c_str()) != 0) {
    spdlog::warn("shm_unlink({}) failed: {}", key_, ErrnoText(errno));
  }
}

}  // namespace graphserve
