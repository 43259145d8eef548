#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/client_text.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// strerror's text, without strerror's shared buffer (registrations run on
// many threads at once).
std::string ErrnoText(int error) {
  char buffer[256];
  return strerror_r(error, buffer, sizeof(buffer));  // GNU: returns the text
}

// "shared memory region 'in0' (key '/graphserve_in')": what every
// registration error starts with.
std::string RegionDescription(const std::string& name, const std::string& key) {
  return absl::StrCat("shared memory region ", QuoteClientText(name), " (key ",
                      QuoteClientText(key), ")");
}

// Closes a descriptor when it goes out of scope: the mapping outlives it.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { close(fd_); }

 private:
  const int fd_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::MapSystem(
    std::string name, std::string key, uint64_t offset, uint64_t byte_size) {
  if (byte_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot register ", RegionDescription(name, key), ": byte_size is 0"));
  }
  const int fd = shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int error = errno;
    // A missing object is the usual mistake (a key without its leading '/',
    // or a region the client has not created yet); anything else is a key
    // that cannot be opened read-write.
    const absl::StatusCode code =
        error == ENOENT ? absl::StatusCode::kNotFound : absl::StatusCode::kInvalidArgument;
    return absl::Status(code, absl::StrCat("cannot register ", RegionDescription(name, key),
                                           ": shm_open failed: ", ErrnoText(error)));
  }
  const FdCloser closer(fd);
  struct stat object {};
  if (fstat(fd, &object) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot register ", RegionDescription(name, key),
                                                   ": fstat failed: ", ErrnoText(errno)));
  }
  // Checked here, before anything is mapped: an access past the object's
  // end would be SIGBUS in the server, not an error for the client.
  const auto object_bytes = static_cast<uint64_t>(object.st_size);
  if (offset > object_bytes || byte_size > object_bytes - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot register ", RegionDescription(name, key), ": offset ", offset, " + byte_size ",
        byte_size, " runs past the object's ", object_bytes, " bytes"));
  }
  // mmap's offset must be a multiple of the page size; the client's need
  // not be.
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t lead = offset % page;
  const size_t mapping_bytes = static_cast<size_t>(byte_size + lead);
  void* mapping = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                       static_cast<off_t>(offset - lead));
  if (mapping == MAP_FAILED) {
    return absl::InvalidArgumentError(absl::StrCat("cannot register ", RegionDescription(name, key),
                                                   ": mmap of ", byte_size, " bytes at offset ",
                                                   offset, " failed: ", ErrnoText(errno)));
  }
  std::byte* data = static_cast<std::byte*>(mapping) + lead;
  return std::shared_ptr<SharedMemoryRegion>(new SharedMemoryRegion(
      std::move(name), std::move(key), offset, byte_size, mapping, mapping_bytes, data));
}

SharedMemoryRegion::~SharedMemoryRegion() {
  if (munmap(mapping_, mapping_bytes_) != 0) {
    spdlog::warn("munmap of shared memory region {} failed: {}", QuoteClientText(name_),
                 ErrnoText(errno));
  }
}

absl::Status SharedMemoryRegistry::Register(const std::string& name, const std::string& key,
                                            uint64_t offset, uint64_t byte_size) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot register a shared memory region without a name (key ", QuoteClientText(key), ")"));
  }
  const auto already = [&name] {
    return absl::AlreadyExistsError(absl::StrCat("shared memory region ", QuoteClientText(name),
                                                 " is already registered; unregister it first"));
  };
  {
    absl::MutexLock lock(&mu_);
    if (regions_.contains(name)) return already();
  }
  // Mapped outside the lock: lookups of other regions need not wait on
  // shm_open and mmap.
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::MapSystem(name, key, offset, byte_size);
  if (!region.ok()) return region.status();
  absl::MutexLock lock(&mu_);
  // A registration of the same name may have won the race meanwhile; the
  // mapping made here is then dropped.
  if (!regions_.emplace(name, *std::move(region)).second) return already();
  return absl::OkStatus();
}

void SharedMemoryRegistry::Unregister(const std::string& name) {
  std::shared_ptr<const SharedMemoryRegion> dropped;  // unmapped, if last, outside the lock
  absl::MutexLock lock(&mu_);
  const auto found = regions_.find(name);
  if (found == regions_.end()) return;
  dropped = std::move(found->second);
  regions_.erase(found);
}

void SharedMemoryRegistry::UnregisterAll() {
  std::map<std::string, std::shared_ptr<const SharedMemoryRegion>> dropped;
  absl::MutexLock lock(&mu_);
  dropped.swap(regions_);
}

absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> SharedMemoryRegistry::Status(
    const std::string& name) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const SharedMemoryRegion>> regions;
  if (name.empty()) {
    for (const auto& [_, region] : regions_) regions.push_back(region);
    return regions;
  }
  const auto found = regions_.find(name);
  if (found == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no shared memory region ", QuoteClientText(name), " is registered"));
  }
  regions.push_back(found->second);
  return regions;
}

absl::StatusOr<SharedMemorySlice> SharedMemoryRegistry::Slice(const std::string& name,
                                                              uint64_t offset,
                                                              uint64_t byte_size) const {
  std::shared_ptr<const SharedMemoryRegion> region;
  {
    absl::MutexLock lock(&mu_);
    const auto found = regions_.find(name);
    if (found != regions_.end()) region = found->second;
  }
  if (region == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory region ", QuoteClientText(name), " is not registered"));
  }
  if (offset > region->byte_size() || byte_size > region->byte_size() - offset) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared_memory_offset ", offset, " + shared_memory_byte_size ", byte_size,
                     " runs past the ", region->byte_size(), " bytes of shared memory region ",
                     QuoteClientText(name)));
  }
  SharedMemorySlice slice;
  slice.data = region->data() + offset;
  slice.byte_size = byte_size;
  slice.region = std::move(region);
  return slice;
}

}  // namespace graphserve
