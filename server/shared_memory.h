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
// A client that shrinks the object (ftruncate) while the server maps it
// would turn the server's next access past the new end into SIGBUS, as in
// Triton; Note [Truncated shared memory] says how the server survives it.
//
// Note [Shared memory region limit]
// Every system region is a mapping and a descriptor the server keeps, and
// the kernel allows a process about 65k mappings (vm.max_map_count): one
// client that registered ~65k tiny regions made the next thread the server
// created (a model load) abort it (issue 30, finding 4). The registry holds
// at most --shared-memory-max-regions regions, system and CUDA together;
// one more is refused with ResourceExhausted saying the limit and its flag,
// and registers again once regions are unregistered. Regions a request
// still holds after Unregister (Note [Shared memory lifetime]) count no
// more: requests in flight are bounded on their own.
//
// Note [CUDA shared memory]
// Triton's CUDA shared-memory extension: the client allocates device memory,
// sends its cudaIpcMemHandle_t, and the server opens it with
// cudaIpcOpenMemHandle (the same GPU machine; IPC needs both processes to
// see the device). The opened allocation's true size is read back
// (cuMemGetAddressRange through the runtime's driver entry point) so a
// byte_size larger than the allocation is refused at registration: a device
// access past it would be a sticky CUDA error for every model of the server.
// On the CUDA executor a CUDA-region input on the model's GPU stays where it
// is: the request carries the region's device pointer (RowMemory::kDevice
// in its RowView, server/row_view.h), and the device copies its rows into
// the graph's input at their row, device to device, whether the chunk holds
// that request's rows alone or merges them with others' (whose rows come
// from staging first): no round trip over the link. A row shorter than its
// bucket's is placed by a pitched copy (Note [Pitched row copies] in
// capture/graph_set.h). BOOL inputs, whose bytes are checked, a region on
// another GPU than the model's (any region, for a model placed on several
// GPUs: GraphSetRunner::DeviceMemoryGpu), every input of a model whose
// padded rows the device cannot place (shape_buckets.h DevicePadsRows), a
// request run eagerly, and every input on the host executor are copied to
// the host at validation instead; each case is checked against the host
// executor on two GPUs by bench/multi_gpu_probe.sh. An output in a CUDA
// region on the model's GPU is written in place, device to device from the
// graph's output, its rows' leading blocks. Outputs in other CUDA regions
// (another GPU, the host executor, a model the device cannot slice) are
// written into the response's string and copied into their region when the
// request ends (FinishOutputs).
//
// Note [Pinned shared memory]
// A large input in a system region was first copied by the CPU into the
// slot's pinned staging, then by the GPU to the device: for 1 MiB on the H100
// machine the server spent 81 of its 197 us in that memcpy (bench/results/
// 2026-11-26_588bfa6_transport_probe_h100). A server that serves on GPUs therefore
// pins each system region when it is registered (cudaHostRegister, portable
// to every device), and the device copies an input in a pinned region
// straight to its rows of the graph's input, and an output straight into
// its region, with no staging and no CPU copy, in a chunk of that request's
// rows alone or merged with others' (GraphSetRunner; padded rows by a
// pitched copy where Note [Pitched row copies] in capture/graph_set.h
// allows, through staging otherwise). Pinning costs time at registration, which
// clients do once per region, and locks the region's pages in memory until
// it is unregistered. When CUDA refuses (too little lockable memory), the
// region is served unpinned through staging, as before, and the server says
// so in its log. What pinning costs: cudaHostRegister faults in and locks
// every page of the registered range, so a client that registers a large,
// mostly unused object makes the host allocate all of it; and it takes time
// in the registration call (milliseconds per GiB), and cudaHostUnregister
// in whichever thread drops the region last. --pin-shared-memory=false
// turns it off. The pinning goes through the context of the server's first
// GPU, never a GPU it does not serve on, and the unpinning comes before the
// unmap: after it, CUDA would hold a range that no longer exists.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/shared_memory_guard.h"

namespace graphserve {

// Where a region's bytes are: a POSIX shared memory object mapped into the
// server (kSystem), or a client's device allocation opened through CUDA IPC
// (kCuda; data() is then a device pointer).
enum class RegionKind { kSystem, kCuda };

// One registered range of shared memory: byte_size() bytes at data(). Not
// copyable: it owns the mapping (or the opened IPC handle), which the
// destructor releases.
class SharedMemoryRegion {
 public:
  // shm_open(key) read-write, checks that [offset, offset + byte_size) lies
  // within the object, and maps that range. `name` is only recorded.
  // InvalidArgument for a zero byte_size or a range past the object's end;
  // NotFound when no object is called `key`, InvalidArgument for any other
  // shm_open or mmap failure; each message names the region and, for a
  // failed call, the errno text. `pin_device`: page-lock the mapping for
  // the GPUs, through GPU `*pin_device`'s context (Note [Pinned shared
  // memory]); a refusal leaves it unpinned, no error.
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> MapSystem(
      std::string name, std::string key, uint64_t offset, uint64_t byte_size,
      std::optional<int> pin_device = std::nullopt);

  // cudaIpcOpenMemHandle of `raw_handle` (a cudaIpcMemHandle_t's bytes) on
  // GPU `device_id`; byte_size bytes from the allocation's start (Note [CUDA
  // shared memory]). InvalidArgument naming the region for a handle of the
  // wrong size, a GPU that is not visible, a handle CUDA cannot open or a
  // byte_size of 0 or past the allocation's end; FailedPrecondition when the
  // server has no GPU.
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> OpenCuda(std::string name,
                                                                      const std::string& raw_handle,
                                                                      int64_t device_id,
                                                                      uint64_t byte_size);

  // The server's own device memory as a CUDA region: byte_size bytes
  // allocated on GPU `device_id`, zeroed, freed with the region. Requests
  // name it as a client's CUDA region, so a served model reads and writes it
  // device to device (the sequence batcher's implicit state, Note [Sequence
  // batching] in server/sequence_batcher.h). InvalidArgument for a byte_size
  // of 0; FailedPrecondition when the GPU is not there; ResourceExhausted
  // when CUDA cannot allocate.
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> AllocateCuda(std::string name,
                                                                          int device_id,
                                                                          uint64_t byte_size);
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;
  // Unmaps (or closes the IPC handle); a failure is logged, never thrown.
  ~SharedMemoryRegion();

  [[nodiscard]] RegionKind kind() const { return kind_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& key() const { return key_; }  // kSystem
  [[nodiscard]] int64_t device_id() const { return device_id_; }  // kCuda
  [[nodiscard]] uint64_t offset() const { return offset_; }
  [[nodiscard]] uint64_t byte_size() const { return byte_size_; }
  // kSystem: page-locked with CUDA, so the GPU copies to and from it
  // directly (Note [Pinned shared memory]).
  [[nodiscard]] bool pinned() const { return pinned_; }
  // The first byte of the registered range (the object's byte `offset`);
  // for kCuda a device pointer.
  [[nodiscard]] std::byte* data() const { return data_; }
  // OK while the registered range is all still the object's: InvalidArgument
  // naming the region once the client shrank the object below offset +
  // byte_size, or an access found it shrunk (Note [Truncated shared
  // memory]). Always OK for kCuda.
  [[nodiscard]] absl::Status CheckNotTruncated() const;

  // Implementation details follow.
 private:
  struct Fields {
    RegionKind kind = RegionKind::kSystem;
    std::string name;
    std::string key;
    int64_t device_id = 0;
    uint64_t offset = 0;
    uint64_t byte_size = 0;
    std::byte* data = nullptr;
    bool pinned = false;
    int fd = -1;  // kSystem: the object's, kept for CheckNotTruncated
  };
  SharedMemoryRegion(Fields fields, std::function<void()> release,
                     std::optional<GuardedMapping> guard = std::nullopt)
      : kind_(fields.kind),
        name_(std::move(fields.name)),
        key_(std::move(fields.key)),
        device_id_(fields.device_id),
        offset_(fields.offset),
        byte_size_(fields.byte_size),
        data_(fields.data),
        pinned_(fields.pinned),
        fd_(fields.fd),
        release_(std::move(release)),
        guard_(std::move(guard)) {}

  const RegionKind kind_;
  const std::string name_;
  const std::string key_;
  const int64_t device_id_;
  const uint64_t offset_;
  const uint64_t byte_size_;
  std::byte* const data_;
  const bool pinned_;
  const int fd_;
  // cudaHostUnregister (when pinned), then munmap of the mapping (which starts at the page boundary at or before
  // `offset`), or cudaIpcCloseMemHandle.
  const std::function<void()> release_;
  // kSystem: the mapping's SIGBUS guard, dropped before release_ unmaps it.
  std::optional<GuardedMapping> guard_;
};

// A tensor's bytes inside a region, and the region they keep mapped (Note
// [Shared memory lifetime]).
struct SharedMemorySlice {
  std::shared_ptr<const SharedMemoryRegion> region;
  std::byte* data = nullptr;
  uint64_t byte_size = 0;
};

// Copies the slice's byte_size bytes to `host`, or `bytes` (<= byte_size)
// bytes from `host` into the slice: memcpy for system regions; for CUDA ones
// a copy on the calling thread's per-thread stream, waited for (it orders
// after no serving stream).
absl::Status CopyFromSlice(const SharedMemorySlice& slice, std::byte* host);
absl::Status CopyIntoSlice(const SharedMemorySlice& slice, const std::byte* host, size_t bytes);

// The header (gRPC metadata key) that names a client's shared-memory
// owner (Note [Shared memory owners]).
inline constexpr char kSharedMemoryOwnerHeader[] = "graphserve-shared-memory-owner";

// Note [Shared memory owners]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Triton's extension has one namespace of regions: any client that reaches
// the port sees every region, names it in its requests (reading another
// client's inputs, overwriting its outputs) and unregisters it, one client's
// "unregister all" every client's (issue 30's findings). A client that
// sends kSharedMemoryOwnerHeader with a value on its shared-memory calls and
// its inference requests has a namespace of its own: the regions it
// registers are listed, named in requests and unregistered only by calls
// that send the same value, and a name it uses never clashes with another
// client's. Calls without the header share one namespace, Triton's, so
// Triton's clients work unchanged, and one of them gets isolation by adding
// a header (tritonclient's `headers=` argument). The value is a secret the
// client picks, a random token say: the server never logs or echoes it, and
// a region of another owner answers exactly as a name never registered
// does, so a guess learns nothing. The objects themselves (a POSIX key, a
// CUDA IPC handle) stay guarded as before, by the file system's permissions
// and by IPC's same-machine rule. --shared-memory-max-regions counts the
// regions of every owner together. An operator who wants every client kept
// apart starts the server with --shared-memory-owner-required: registering
// without the header is then refused with PERMISSION_DENIED saying what to
// send, so the shared namespace stays empty.
//
// The registered regions by owner and name, system and CUDA ones in one
// namespace per owner (as in Triton: a name is registered once, whatever
// its kind). A registry is a view, for one owner, of regions it shares with
// the registries ForOwner makes from it; copies are cheap and see the same
// regions. Thread-safe: the gRPC and HTTP threads register, unregister and
// look up at once.
struct SharedMemoryRegistryOptions {
  // Pin each system region at registration, through this GPU's context
  // (Note [Pinned shared memory]); for a server on GPUs. None: no pinning.
  std::optional<int> pin_device;
  // Regions registered at once, system and CUDA together, every owner's
  // (Note [Shared memory region limit]); at most GuardedMapping::kCapacity.
  int max_regions = 1024;
  // Registrations without an owner refused with PermissionDenied, so that
  // every client's regions are its own (Note [Shared memory owners]).
  bool owner_required = false;
};

class SharedMemoryRegistry {
 public:
  // A registry of no regions yet, seen by calls without an owner.
  explicit SharedMemoryRegistry(SharedMemoryRegistryOptions options = {});
  // A registry that pins through `pin_device`, with the default limit.
  explicit SharedMemoryRegistry(std::optional<int> pin_device)
      : SharedMemoryRegistry(SharedMemoryRegistryOptions{.pin_device = pin_device}) {}

  // The same regions as calls that send `owner` see them (Note [Shared
  // memory owners]); "" is the namespace of calls without the header.
  [[nodiscard]] SharedMemoryRegistry ForOwner(std::string owner) const;

  // Maps and records a system region (SharedMemoryRegion::MapSystem's
  // errors); AlreadyExists when `name` is registered already,
  // ResourceExhausted when max_regions are, PermissionDenied without an
  // owner when one is required (this and RegisterCuda).
  absl::Status Register(const std::string& name, const std::string& key, uint64_t offset,
                        uint64_t byte_size);
  // Opens and records a CUDA region (SharedMemoryRegion::OpenCuda's errors);
  // AlreadyExists when `name` is registered already.
  absl::Status RegisterCuda(const std::string& name, const std::string& raw_handle,
                            int64_t device_id, uint64_t byte_size);
  // Records `region` under its name (AllocateCuda's, for a registry of the
  // server's own); AlreadyExists and ResourceExhausted as Register's.
  absl::Status Add(std::shared_ptr<SharedMemoryRegion> region);
  // Forgets region `name` if it is of `kind`; a name not registered is no
  // error (as in Triton). Requests holding the region keep it until they end.
  void Unregister(const std::string& name, RegionKind kind = RegionKind::kSystem);
  void UnregisterAll(RegionKind kind = RegionKind::kSystem);
  // Every region of `kind`, by name; only `name` unless it is empty
  // (NotFound naming it when no region of that kind has the name).
  absl::StatusOr<std::vector<std::shared_ptr<const SharedMemoryRegion>>> Status(
      const std::string& name, RegionKind kind = RegionKind::kSystem) const;
  // `byte_size` bytes at `offset` within region `name`. InvalidArgument
  // naming the region when it is not registered, the range runs past its
  // end, or the client shrank its object (CheckNotTruncated).
  absl::StatusOr<SharedMemorySlice> Slice(const std::string& name, uint64_t offset,
                                          uint64_t byte_size) const;

  // Implementation details follow.
  struct Regions;  // what every view of one registry shares

 private:
  using Open = std::function<absl::StatusOr<std::shared_ptr<SharedMemoryRegion>>()>;
  SharedMemoryRegistry(std::shared_ptr<Regions> regions, std::string owner)
      : regions_(std::move(regions)), owner_(std::move(owner)) {}
  // Records what `open` returns under `name` unless the name is taken.
  absl::Status Add(const std::string& name, const Open& open);
  // The region `name` of this view's owner, or null.
  [[nodiscard]] std::shared_ptr<const SharedMemoryRegion> Find(const std::string& name) const;

  std::shared_ptr<Regions> regions_;
  std::string owner_;
};

}  // namespace graphserve
