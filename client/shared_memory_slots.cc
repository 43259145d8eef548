#include "client/shared_memory_slots.h"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cuda_shared_memory.h"
#include "client/datatype.h"
#include "client/system_shared_memory.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {

// The memory behind one slot and how the server is told about it.
class SlotMemory {
 public:
  virtual ~SlotMemory() = default;
  virtual absl::Status Write(int64_t offset, absl::string_view bytes) = 0;
  virtual absl::StatusOr<std::string> Read(int64_t offset, int64_t byte_size) const = 0;
  virtual absl::Status Register(InferenceClient& client, const std::string& region) const = 0;
  virtual absl::Status Unregister(InferenceClient& client, const std::string& region) const = 0;
};

namespace {

class SystemSlotMemory final : public SlotMemory {
 public:
  explicit SystemSlotMemory(std::unique_ptr<SystemSharedMemory> memory)
      : memory_(std::move(memory)) {}

  // Offsets come from the slot's layout, which PlanSharedMemory sized the
  // object for: they are in range by construction.
  absl::Status Write(int64_t offset, absl::string_view bytes) override {
    std::memcpy(memory_->data() + offset, bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> Read(int64_t offset, int64_t byte_size) const override {
    return std::string(memory_->data() + offset, static_cast<size_t>(byte_size));
  }
  absl::Status Register(InferenceClient& client, const std::string& region) const override {
    return client.SystemSharedMemoryRegister(region, memory_->key(), /*offset=*/0,
                                             memory_->byte_size());
  }
  absl::Status Unregister(InferenceClient& client, const std::string& region) const override {
    return client.SystemSharedMemoryUnregister(region);
  }

 private:
  const std::unique_ptr<SystemSharedMemory> memory_;
};

class CudaSlotMemory final : public SlotMemory {
 public:
  explicit CudaSlotMemory(std::unique_ptr<CudaSharedMemory> memory) : memory_(std::move(memory)) {}

  absl::Status Write(int64_t offset, absl::string_view bytes) override {
    return memory_->CopyIn(static_cast<uint64_t>(offset), bytes);
  }
  absl::StatusOr<std::string> Read(int64_t offset, int64_t byte_size) const override {
    return memory_->CopyOut(static_cast<uint64_t>(offset), static_cast<uint64_t>(byte_size));
  }
  absl::Status Register(InferenceClient& client, const std::string& region) const override {
    return client.CudaSharedMemoryRegister(region, memory_->ipc_handle(), memory_->device(),
                                           memory_->byte_size());
  }
  absl::Status Unregister(InferenceClient& client, const std::string& region) const override {
    return client.CudaSharedMemoryUnregister(region);
  }

 private:
  const std::unique_ptr<CudaSharedMemory> memory_;
};

// graphserve_client_<pid>_<random>_<n>: unique on the host, so that clients
// never collide in /dev/shm or in a server's registry. The random part keeps
// a client whose pid repeats (a container's) clear of regions an earlier,
// killed client left registered.
std::string NextRegionName() {
  static const std::string prefix =
      absl::StrFormat("graphserve_client_%d_%08x", getpid(), std::random_device()());
  static std::atomic<uint64_t> next{0};
  return absl::StrCat(prefix, "_", next.fetch_add(1, std::memory_order_relaxed));
}

absl::StatusOr<std::unique_ptr<SlotMemory>> AllocateSlotMemory(const std::string& region,
                                                               int64_t byte_size,
                                                               const SharedMemoryOptions& options) {
  const auto bytes = static_cast<uint64_t>(byte_size);
  switch (options.kind) {
    case SharedMemoryKind::kSystem: {
      ASSIGN_OR_RETURN(std::unique_ptr<SystemSharedMemory> memory,
                       SystemSharedMemory::Create(absl::StrCat("/", region), bytes));
      return std::unique_ptr<SlotMemory>(new SystemSlotMemory(std::move(memory)));
    }
    case SharedMemoryKind::kCuda: {
      ASSIGN_OR_RETURN(std::unique_ptr<CudaSharedMemory> memory,
                       CudaSharedMemory::Create(options.cuda_device, bytes));
      return std::unique_ptr<SlotMemory>(new CudaSlotMemory(std::move(memory)));
    }
    case SharedMemoryKind::kNone:
      break;
  }
  return absl::InvalidArgumentError("no shared memory kind to allocate");
}

}  // namespace

absl::StatusOr<SharedMemoryKind> ParseSharedMemoryKind(absl::string_view text) {
  if (text == "none") return SharedMemoryKind::kNone;
  if (text == "system") return SharedMemoryKind::kSystem;
  if (text == "cuda") return SharedMemoryKind::kCuda;
  return absl::InvalidArgumentError(
      absl::StrCat("--shared-memory is none, system or cuda, got '", text, "'"));
}

absl::string_view SharedMemoryKindName(SharedMemoryKind kind) {
  switch (kind) {
    case SharedMemoryKind::kNone:
      return "none";
    case SharedMemoryKind::kSystem:
      return "system";
    case SharedMemoryKind::kCuda:
      return "cuda";
  }
  return "unknown";
}

SharedMemorySlot::SharedMemorySlot(InferenceClient* client, std::string region,
                                   std::unique_ptr<SlotMemory> memory,
                                   const SharedMemoryLayout& layout, InferRequest request)
    : client_(client),
      region_(std::move(region)),
      memory_(std::move(memory)),
      layout_(layout),
      request_(std::move(request)) {}

SharedMemorySlot::~SharedMemorySlot() {
  // The server lets go of the region before its memory goes (memory_ is
  // destroyed after this body).
  if (absl::Status unregistered = memory_->Unregister(*client_, region_); !unregistered.ok()) {
    spdlog::warn("unregistering shared memory region {}: {}", region_, unregistered.ToString());
  }
}

absl::StatusOr<std::string> SharedMemorySlot::ReadOutput(const InferOutput& output) const {
  const TensorPlacement* placement = nullptr;
  for (const TensorPlacement& candidate : layout_.outputs) {
    if (candidate.name == output.name) placement = &candidate;
  }
  if (placement == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("output ", output.name, " has no room in shared memory region ", region_));
  }
  absl::StatusOr<int64_t> bytes = TensorByteSize(output.datatype, output.shape);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output ", output.name, " cannot be read from shared memory: ", bytes.status().message()));
  }
  if (*bytes > placement->byte_size) {
    return absl::InvalidArgumentError(absl::StrCat("output ", output.name, " (", output.datatype,
                                                   " ", FormatShape(output.shape), ") has ", *bytes,
                                                   " bytes but its room in shared memory region ",
                                                   region_, " is ", placement->byte_size));
  }
  return memory_->Read(placement->offset, *bytes);
}

absl::StatusOr<std::unique_ptr<SharedMemorySlots>> SharedMemorySlots::Create(
    InferenceClient* client, const InferRequest& request, absl::Span<const ExpectedOutput> outputs,
    const SharedMemoryOptions& options) {
  if (client == nullptr) return absl::InvalidArgumentError("no client");
  if (options.kind == SharedMemoryKind::kNone) {
    return absl::InvalidArgumentError("shared-memory slots need --shared-memory system or cuda");
  }
  if (options.kind == SharedMemoryKind::kCuda) {
    RETURN_IF_ERROR(CheckCudaDevice(options.cuda_device));
  }
  RETURN_IF_ERROR(CheckInferRequest(request));
  ASSIGN_OR_RETURN(SharedMemoryLayout layout,
                   PlanSharedMemory(request, outputs, options.output_byte_size));
  auto slots = std::unique_ptr<SharedMemorySlots>(
      new SharedMemorySlots(client, request, std::move(layout), options));
  RETURN_IF_ERROR(slots->Reserve(1));
  return slots;
}

absl::StatusOr<std::unique_ptr<SharedMemorySlot>> SharedMemorySlots::MakeSlot() const {
  const std::string region = NextRegionName();
  InferRequest placed = PlaceInRegion(request_, layout_, region);
  // Checked once here, as the load generator checks its request (Note [No
  // inline failures] in client/load_generator.cc): a slot's request never
  // changes.
  RETURN_IF_ERROR(CheckInferRequest(placed));
  ASSIGN_OR_RETURN(std::unique_ptr<SlotMemory> memory,
                   AllocateSlotMemory(region, layout_.byte_size, options_));
  for (size_t i = 0; i < request_.inputs.size(); ++i) {
    RETURN_IF_ERROR(memory->Write(layout_.inputs[i].offset, request_.inputs[i].data));
  }
  if (absl::Status registered = memory->Register(*client_, region); !registered.ok()) {
    // A registration that timed out may still have reached the server: ask
    // it to forget the region before the memory goes (best effort).
    memory->Unregister(*client_, region).IgnoreError();
    return absl::Status(
        registered.code(),
        absl::StrCat("registering ", SharedMemoryKindName(options_.kind), " shared memory region ",
                     region, " (", layout_.byte_size, " bytes): ", registered.message()));
  }
  return std::unique_ptr<SharedMemorySlot>(
      new SharedMemorySlot(client_, region, std::move(memory), layout_, std::move(placed)));
}

absl::Status SharedMemorySlots::Reserve(size_t count) {
  while (size() < count) {
    // Made outside the lock: registering is an RPC, and Release must not
    // wait for it.
    ASSIGN_OR_RETURN(std::unique_ptr<SharedMemorySlot> made, MakeSlot());
    absl::MutexLock lock(&mu_);
    free_.push_back(made.get());
    slots_.push_back(std::move(made));
  }
  return absl::OkStatus();
}

SharedMemorySlot* SharedMemorySlots::slot(size_t index) {
  absl::MutexLock lock(&mu_);
  return slots_.at(index).get();
}

size_t SharedMemorySlots::size() const {
  absl::MutexLock lock(&mu_);
  return slots_.size();
}

absl::StatusOr<SharedMemorySlot*> SharedMemorySlots::Acquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!free_.empty()) {
      SharedMemorySlot* slot = free_.back();
      free_.pop_back();
      return slot;
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SharedMemorySlot> made, MakeSlot());
  absl::MutexLock lock(&mu_);
  slots_.push_back(std::move(made));
  return slots_.back().get();
}

void SharedMemorySlots::Release(SharedMemorySlot* slot) {
  absl::MutexLock lock(&mu_);
  free_.push_back(slot);
}

}  // namespace graphserve
