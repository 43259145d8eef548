#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/capture_exclusion.h"
#include "common/cuda_device_guard.h"
#include "common/status.h"
#include "cuda.h"
#include "cudaTypedefs.h"
#include "cuda_runtime_api.h"
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

// Closes a descriptor when it goes out of scope, unless a region took it.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  // The descriptor, no longer closed here.
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// The size of the device allocation `pointer` starts, from the driver's
// cuMemGetAddressRange (reached through the runtime, so the server links no
// driver library).
absl::StatusOr<uint64_t> AllocationBytes(void* pointer) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &function, 12000,
                                       cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || function == nullptr) {
    cudaGetLastError();
    return absl::InternalError("the driver's cuMemGetAddressRange is not available");
  }
  CUdeviceptr base = 0;
  size_t bytes = 0;
  const CUresult result = reinterpret_cast<PFN_cuMemGetAddressRange_v3020>(function)(
      &base, &bytes, reinterpret_cast<CUdeviceptr>(pointer));
  if (result != CUDA_SUCCESS) {
    return absl::InternalError(absl::StrCat("cuMemGetAddressRange failed with CUresult ",
                                            static_cast<int>(result)));
  }
  // The opened pointer is the allocation's start; bytes before it are not
  // the region's.
  return bytes - (reinterpret_cast<CUdeviceptr>(pointer) - base);
}

// A copy between host memory and a CUDA region on the calling thread's
// per-thread default stream, waited for.
absl::Status CopyOnDevice(const SharedMemoryRegion& region, void* to, const void* from,
                          size_t bytes, cudaMemcpyKind direction) {
  const CudaDeviceGuard on_device(static_cast<int>(region.device_id()));
  RETURN_IF_ERROR(on_device.status());
  cudaError_t error = cudaMemcpyAsync(to, from, bytes, direction, cudaStreamPerThread);
  if (error == cudaSuccess) error = cudaStreamSynchronize(cudaStreamPerThread);
  if (error != cudaSuccess) {
    return absl::InternalError(absl::StrCat("copy ",
                                            direction == cudaMemcpyDeviceToHost ? "from" : "into",
                                            " CUDA shared memory region ",
                                            QuoteClientText(region.name()), " failed: ",
                                            cudaGetErrorString(error)));
  }
  return absl::OkStatus();
}

// Page-locks `bytes` at `mapping` for every CUDA device, through `device`'s
// context (Note [Pinned shared memory]); false, logged, when CUDA refuses.
// Pinning, unpinning, opening, closing, setting and freeing memory in this
// file may synchronise the device while a load captures on another thread:
// each such call holds captures off (Note [Captures and device-wide
// synchronisation] in common/capture_exclusion.h).
bool PinForDevices(void* mapping, size_t bytes, int device, const std::string& name) {
  const CudaDeviceGuard on_device(device);
  cudaError_t error = on_device.status().ok() ? cudaSuccess : cudaErrorInvalidDevice;
  if (error == cudaSuccess) {
    error = WithCapturesHeldOff(
        [&] { return cudaHostRegister(mapping, bytes, cudaHostRegisterPortable); });
  }
  if (error == cudaSuccess) return true;
  cudaGetLastError();  // not sticky; leave nothing for the next call to see
  spdlog::warn("cannot pin shared memory region {} for the GPU ({}): it is served through "
               "staging, with an extra copy",
               QuoteClientText(name), cudaGetErrorString(error));
  return false;
}

}  // namespace

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::MapSystem(
    std::string name, std::string key, uint64_t offset, uint64_t byte_size,
    std::optional<int> pin_device) {
  if (byte_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot register ", RegionDescription(name, key), ": byte_size is 0"));
  }
  // shm_open reads the key up to its first NUL: "/a\0b" would open "/a"
  // while status reported "/a\0b" (issue 30, finding 8).
  if (key.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("cannot register ", RegionDescription(name, key),
                                                   ": a key may not contain a NUL byte"));
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
  FdCloser closer(fd);
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
  // Note [Truncated shared memory]: guarded before any request can reach it.
  absl::StatusOr<GuardedMapping> guard = GuardedMapping::Guard(mapping, mapping_bytes);
  if (!guard.ok()) {
    munmap(mapping, mapping_bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot register ", RegionDescription(name, key), ": ", guard.status().message()));
  }
  std::byte* data = static_cast<std::byte*>(mapping) + lead;
  const bool pinned =
      pin_device.has_value() && PinForDevices(mapping, mapping_bytes, *pin_device, name);
  auto release = [mapping, mapping_bytes, name, pinned, pin_device] {
    if (pinned) {
      const CudaDeviceGuard on_device(*pin_device);
      if (const cudaError_t error = WithCapturesHeldOff([&] { return cudaHostUnregister(mapping); });
          error != cudaSuccess) {
        spdlog::warn("cudaHostUnregister of shared memory region {} failed: {}",
                     QuoteClientText(name), cudaGetErrorString(error));
      }
    }
    if (munmap(mapping, mapping_bytes) != 0) {
      spdlog::warn("munmap of shared memory region {} failed: {}", QuoteClientText(name),
                   ErrnoText(errno));
    }
  };
  return std::shared_ptr<SharedMemoryRegion>(new SharedMemoryRegion(
      {.kind = RegionKind::kSystem,
       .name = std::move(name),
       .key = std::move(key),
       .offset = offset,
       .byte_size = byte_size,
       .data = data,
       .pinned = pinned,
       .fd = closer.Release()},
      std::move(release), *std::move(guard)));
}

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::OpenCuda(
    std::string name, const std::string& raw_handle, int64_t device_id, uint64_t byte_size) {
  const std::string what = absl::StrCat("cannot register CUDA shared memory region ",
                                        QuoteClientText(name), " on GPU ", device_id);
  if (byte_size == 0) return absl::InvalidArgumentError(absl::StrCat(what, ": byte_size is 0"));
  cudaIpcMemHandle_t handle;
  if (raw_handle.size() != sizeof(handle)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": raw_handle has ", raw_handle.size(),
                                                   " bytes, a cudaIpcMemHandle_t has ",
                                                   sizeof(handle)));
  }
  std::memcpy(&handle, raw_handle.data(), sizeof(handle));
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();  // not sticky; leave nothing for the next call to see
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": this server has no CUDA device (CUDA shared memory needs the "
                           "server's GPU); use system shared memory"));
  }
  if (device_id < 0 || device_id >= devices) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the server sees ", devices, " GPUs (device_id 0..", devices - 1, ")"));
  }
  // The RPC threads that register regions may serve other GPUs.
  const CudaDeviceGuard on_device(static_cast<int>(device_id));
  if (!on_device.status().ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", on_device.status().message()));
  }
  void* opened = nullptr;
  const cudaError_t error = WithCapturesHeldOff(
      [&] { return cudaIpcOpenMemHandle(&opened, handle, cudaIpcMemLazyEnablePeerAccess); });
  if (error != cudaSuccess) {
    cudaGetLastError();
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": cudaIpcOpenMemHandle failed: ", cudaGetErrorString(error),
        " (the handle must come from cudaIpcGetMemHandle in another process on this machine)"));
  }
  auto release = [opened, device_id, name] {
    const CudaDeviceGuard on_device(static_cast<int>(device_id));
    if (const cudaError_t error = WithCapturesHeldOff([&] { return cudaIpcCloseMemHandle(opened); });
        error != cudaSuccess) {
      spdlog::warn("cudaIpcCloseMemHandle of CUDA shared memory region {} failed: {}",
                   QuoteClientText(name), cudaGetErrorString(error));
    }
  };
  absl::StatusOr<uint64_t> allocation = AllocationBytes(opened);
  if (!allocation.ok() || byte_size > *allocation) {
    release();
    if (!allocation.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", allocation.status().message()));
    }
    return absl::InvalidArgumentError(absl::StrCat(what, ": byte_size ", byte_size,
                                                   " runs past the allocation's ", *allocation,
                                                   " bytes"));
  }
  return std::shared_ptr<SharedMemoryRegion>(
      new SharedMemoryRegion({.kind = RegionKind::kCuda,
                              .name = std::move(name),
                              .device_id = device_id,
                              .byte_size = byte_size,
                              .data = static_cast<std::byte*>(opened)},
                             std::move(release)));
}

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::AllocateCuda(
    std::string name, int device_id, uint64_t byte_size) {
  const std::string what =
      absl::StrCat("cannot allocate device memory '", name, "' on GPU ", device_id);
  if (byte_size == 0) return absl::InvalidArgumentError(absl::StrCat(what, ": byte_size is 0"));
  const CudaDeviceGuard on_device(device_id);
  if (!on_device.status().ok()) {
    return absl::FailedPreconditionError(absl::StrCat(what, ": ", on_device.status().message()));
  }
  void* allocated = nullptr;
  if (const cudaError_t error = cudaMalloc(&allocated, byte_size); error != cudaSuccess) {
    cudaGetLastError();
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": cudaMalloc of ", byte_size, " bytes failed: ", cudaGetErrorString(error)));
  }
  auto release = [allocated, device_id, name] {
    const CudaDeviceGuard on_device(device_id);
    if (const cudaError_t error = WithCapturesHeldOff([&] { return cudaFree(allocated); });
        error != cudaSuccess) {
      spdlog::warn("cudaFree of device memory '{}' failed: {}", name, cudaGetErrorString(error));
    }
  };
  const cudaError_t zeroed =  // a synchronous memset
      WithCapturesHeldOff([&] { return cudaMemset(allocated, 0, byte_size); });
  if (zeroed != cudaSuccess) {
    cudaGetLastError();
    release();
    return absl::InternalError(
        absl::StrCat(what, ": cudaMemset failed: ", cudaGetErrorString(zeroed)));
  }
  return std::shared_ptr<SharedMemoryRegion>(
      new SharedMemoryRegion({.kind = RegionKind::kCuda,
                              .name = std::move(name),
                              .device_id = device_id,
                              .byte_size = byte_size,
                              .data = static_cast<std::byte*>(allocated)},
                             std::move(release)));
}

SharedMemoryRegion::~SharedMemoryRegion() {
  guard_.reset();  // before the range is unmapped (Note [Truncated shared memory])
  release_();
  if (fd_ >= 0) close(fd_);
}

absl::Status SharedMemoryRegion::CheckNotTruncated() const {
  if (kind_ != RegionKind::kSystem) return absl::OkStatus();
  const auto refuse = [this](const std::string& how) {
    return absl::InvalidArgumentError(absl::StrCat(
        RegionDescription(name_, key_), " shrank after it was registered (", how,
        "); unregister it and register it again"));
  };
  if (guard_.has_value() && guard_->truncated()) {
    return refuse("a request touched its range past the object's end");
  }
  struct stat object {};
  if (fstat(fd_, &object) != 0) return refuse(absl::StrCat("fstat failed: ", ErrnoText(errno)));
  const auto object_bytes = static_cast<uint64_t>(object.st_size);
  if (object_bytes < offset_ || object_bytes - offset_ < byte_size_) {
    return refuse(absl::StrCat("the object has ", object_bytes, " bytes, offset ", offset_,
                               " + byte_size ", byte_size_, " were registered"));
  }
  return absl::OkStatus();
}

absl::Status CopyFromSlice(const SharedMemorySlice& slice, std::byte* host) {
  if (slice.region->kind() == RegionKind::kSystem) {
    std::memcpy(host, slice.data, slice.byte_size);
    return absl::OkStatus();
  }
  return CopyOnDevice(*slice.region, host, slice.data, slice.byte_size, cudaMemcpyDeviceToHost);
}

absl::Status CopyIntoSlice(const SharedMemorySlice& slice, const std::byte* host, size_t bytes) {
  if (slice.region->kind() == RegionKind::kSystem) {
    std::memcpy(slice.data, host, bytes);
    return absl::OkStatus();
  }
  return CopyOnDevice(*slice.region, slice.data, host, bytes, cudaMemcpyHostToDevice);
}

struct SharedMemoryRegistry::Regions {
  explicit Regions(const SharedMemoryRegistryOptions& options)
      : pin_device(options.pin_device),
        max_regions(options.max_regions),
        owner_required(options.owner_required) {}
  using Key = std::pair<std::string, std::string>;  // owner, name

  const std::optional<int> pin_device;
  const int max_regions;
  const bool owner_required;
  absl::Mutex mu;
  std::map<Key, std::shared_ptr<const SharedMemoryRegion>> by_key ABSL_GUARDED_BY(mu);
  // Registrations between their check of the limit and their insertion (Add
  // opens a region outside the lock); they count against max_regions.
  int opening ABSL_GUARDED_BY(mu) = 0;
};

SharedMemoryRegistry::SharedMemoryRegistry(SharedMemoryRegistryOptions options)
    : regions_(std::make_shared<Regions>(options)) {}

SharedMemoryRegistry SharedMemoryRegistry::ForOwner(std::string owner) const {
  return SharedMemoryRegistry(regions_, std::move(owner));
}

absl::Status SharedMemoryRegistry::Register(const std::string& name, const std::string& key,
                                            uint64_t offset, uint64_t byte_size) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot register a shared memory region without a name (key ", QuoteClientText(key), ")"));
  }
  return Add(name, [&] {
    return SharedMemoryRegion::MapSystem(name, key, offset, byte_size, regions_->pin_device);
  });
}

absl::Status SharedMemoryRegistry::RegisterCuda(const std::string& name,
                                                const std::string& raw_handle, int64_t device_id,
                                                uint64_t byte_size) {
  if (name.empty()) {
    return absl::InvalidArgumentError("cannot register a CUDA shared memory region without a name");
  }
  return Add(name,
             [&] { return SharedMemoryRegion::OpenCuda(name, raw_handle, device_id, byte_size); });
}

absl::Status SharedMemoryRegistry::Add(std::shared_ptr<SharedMemoryRegion> region) {
  const std::string name = region->name();
  return Add(name, [&]() -> absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> {
    return std::move(region);
  });
}

absl::Status SharedMemoryRegistry::Add(const std::string& name, const Open& open) {
  const auto already = [&name] {
    return absl::AlreadyExistsError(absl::StrCat("shared memory region ", QuoteClientText(name),
                                                 " is already registered; unregister it first"));
  };
  Regions& regions = *regions_;
  if (regions.owner_required && owner_.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot register shared memory region ", QuoteClientText(name),
        ": this server keeps each client's regions apart (--shared-memory-owner-required); send "
        "the header '",
        kSharedMemoryOwnerHeader,
        "' with a secret value of your choosing on every shared-memory and inference call"));
  }
  const Regions::Key key(owner_, name);
  {
    absl::MutexLock lock(&regions.mu);
    if (regions.by_key.contains(key)) return already();
    // Note [Shared memory region limit]
    if (static_cast<int64_t>(regions.by_key.size()) + regions.opening >= regions.max_regions) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "cannot register shared memory region ", QuoteClientText(name), ": ", regions.max_regions,
          " regions are registered, the most "
          "--shared-memory-max-regions allows; unregister "
          "regions first"));
    }
    ++regions.opening;
  }
  // Opened outside the lock: lookups of other regions need not wait on
  // shm_open and mmap, or on CUDA.
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region = open();
  absl::MutexLock lock(&regions.mu);
  --regions.opening;
  if (!region.ok()) return region.status();
  // A registration of the same name may have won the race meanwhile; the
  // region opened here is then dropped.
  if (!regions.by_key.emplace(key, *std::move(region)).second) return already();
  return absl::OkStatus();
}

void SharedMemoryRegistry::Unregister(const std::string& name, RegionKind kind) {
  std::shared_ptr<const SharedMemoryRegion> dropped;  // released, if last, outside the lock
  Regions& regions = *regions_;
  absl::MutexLock lock(&regions.mu);
  const auto found = regions.by_key.find(Regions::Key(owner_, name));
  if (found == regions.by_key.end() || found->second->kind() != kind) return;
  dropped = std::move(found->second);
  regions.by_key.erase(found);
}

void SharedMemoryRegistry::UnregisterAll(RegionKind kind) {
  std::vector<std::shared_ptr<const SharedMemoryRegion>> dropped;
  Regions& regions = *regions_;
  absl::MutexLock lock(&regions.mu);
  // This owner's keys are adjacent: they sort by owner first.
  auto it = regions.by_key.lower_bound(Regions::Key(owner_, ""));
  while (it != regions.by_key.end() && it->first.first == owner_) {
    if (it->second->kind() == kind) {
      dropped.push_back(std::move(it->second));
      it = regions.by_key.erase(it);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> SharedMemoryRegistry::Status(
    const std::string& name, RegionKind kind) const {
  std::vector<std::shared_ptr<const SharedMemoryRegion>> listed;
  if (name.empty()) {
    Regions& regions = *regions_;
    absl::MutexLock lock(&regions.mu);
    for (auto it = regions.by_key.lower_bound(Regions::Key(owner_, ""));
         it != regions.by_key.end() && it->first.first == owner_; ++it) {
      if (it->second->kind() == kind) listed.push_back(it->second);
    }
    return listed;
  }
  std::shared_ptr<const SharedMemoryRegion> found = Find(name);
  if (found == nullptr || found->kind() != kind) {
    return absl::NotFoundError(absl::StrCat(kind == RegionKind::kCuda ? "no CUDA " : "no ",
                                            "shared memory region ", QuoteClientText(name),
                                            " is registered"));
  }
  listed.push_back(std::move(found));
  return listed;
}

std::shared_ptr<const SharedMemoryRegion> SharedMemoryRegistry::Find(
    const std::string& name) const {
  Regions& regions = *regions_;
  absl::MutexLock lock(&regions.mu);
  const auto found = regions.by_key.find(Regions::Key(owner_, name));
  return found == regions.by_key.end() ? nullptr : found->second;
}

absl::StatusOr<SharedMemorySlice> SharedMemoryRegistry::Slice(const std::string& name,
                                                              uint64_t offset,
                                                              uint64_t byte_size) const {
  std::shared_ptr<const SharedMemoryRegion> region = Find(name);
  if (region == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared memory region ", QuoteClientText(name), " is not registered"));
  }
  RETURN_IF_ERROR(region->CheckNotTruncated());
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
