#pragma once
// Note [Shared-memory slots]
// With --shared-memory system or cuda (perf_analyzer's option), a request's
// inputs and outputs travel through memory shared with the server instead
// of the gRPC messages (Triton's shared-memory extensions): the request only
// names a region, an offset and a byte size per tensor. A slot is one region
// that holds one request's inputs and outputs (PlanSharedMemory's layout):
// made, filled with the inputs once and registered with the server, then
// named by every request sent from it. Requests in flight at the same time
// never share a slot, so the server never writes two requests' outputs into
// the same bytes: the closed loop gives each of its N outstanding requests a
// slot of its own for the level; the open loop takes a free slot per send
// and gives it back with the answer, adding a slot when all are busy (so at
// most max_outstanding). Slots outlive levels, so a later level reuses them.
//
// System memory is a POSIX shared memory object
// /graphserve_client_<pid>_<random>_<n> that the server maps by its key, so
// the server must run on the same host. CUDA memory is a cudaMalloc on
// --cuda-device exported by cudaIpcGetMemHandle, so the server must run on
// the same machine and see that GPU. A slot unregisters its region and then
// frees the memory when it goes, on failure too.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "client/inference_client.h"
#include "client/request_builder.h"
#include "client/shared_memory_layout.h"

namespace graphserve {

enum class SharedMemoryKind {
  kNone,    // tensors in the messages
  kSystem,  // POSIX shared memory
  kCuda,    // device memory through CUDA IPC
};

// "none", "system" or "cuda"; InvalidArgument naming the choices otherwise.
absl::StatusOr<SharedMemoryKind> ParseSharedMemoryKind(absl::string_view text);
absl::string_view SharedMemoryKindName(SharedMemoryKind kind);

struct SharedMemoryOptions {
  // Where the tensors go.
  SharedMemoryKind kind = SharedMemoryKind::kNone;

  // The room an output may take, and what one whose size only the response
  // can tell gets (perf_analyzer's --output-shared-memory-size).
  int64_t output_byte_size = kDefaultOutputSharedMemoryBytes;

  // kCuda: the GPU the regions are allocated on (--cuda-device).
  int cuda_device = 0;
};

// Where a slot's bytes live: system or CUDA memory. Defined in the .cc.
class SlotMemory;

// One registered region holding one request's tensors.
class SharedMemorySlot {
 public:
  // Unregisters the region, then frees its memory; failures are logged.
  ~SharedMemorySlot();

  SharedMemorySlot(const SharedMemorySlot&) = delete;
  SharedMemorySlot& operator=(const SharedMemorySlot&) = delete;

  // The request to send: every input and output names this slot's region.
  const InferRequest& request() const { return request_; }
  const std::string& region() const { return region_; }

  // The bytes the server wrote for `output` (a result of request()): read
  // from the mapping (system) or copied back from the device (CUDA), as many
  // as the output's datatype and shape take. NotFound for an output the
  // slot has no room for, InvalidArgument for one larger than its room or
  // without a fixed-size datatype.
  absl::StatusOr<std::string> ReadOutput(const InferOutput& output) const;

  // Implementation details follow.
 private:
  friend class SharedMemorySlots;

  SharedMemorySlot(InferenceClient* client, std::string region, std::unique_ptr<SlotMemory> memory,
                   const SharedMemoryLayout& layout, InferRequest request);

  InferenceClient* const client_;  // registered the region; not owned
  const std::string region_;
  const std::unique_ptr<SlotMemory> memory_;
  const SharedMemoryLayout layout_;
  const InferRequest request_;
};

// The slots of one request (Note [Shared-memory slots]). Thread-safe.
class SharedMemorySlots {
 public:
  // Plans the layout of `request` (whose inputs carry their bytes) and
  // `outputs` (PlanSharedMemory's errors), and makes the first slot, so
  // that what cannot work fails here: CheckCudaDevice's FailedPrecondition
  // without a GPU, the memory's errors, and the server's answer to the
  // registration as it is (UNIMPLEMENTED from a server without the
  // extension). `client` is not owned, registers and unregisters every
  // slot, and must outlive the slots.
  static absl::StatusOr<std::unique_ptr<SharedMemorySlots>> Create(
      InferenceClient* client, const InferRequest& request,
      absl::Span<const ExpectedOutput> outputs, const SharedMemoryOptions& options);

  SharedMemorySlots(const SharedMemorySlots&) = delete;
  SharedMemorySlots& operator=(const SharedMemorySlots&) = delete;

  // Makes sure at least `count` slots exist. Registering is a blocking RPC:
  // call this from the thread that drives the load, never from a gRPC
  // callback.
  absl::Status Reserve(size_t count) ABSL_LOCKS_EXCLUDED(mu_);

  // Slot `index` < size(), valid as long as the pool.
  SharedMemorySlot* slot(size_t index) ABSL_LOCKS_EXCLUDED(mu_);
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  // A slot no request uses: a free one, or a new one (Reserve's rules) when
  // every slot is taken. Release gives it back and may be called from a
  // gRPC callback.
  absl::StatusOr<SharedMemorySlot*> Acquire() ABSL_LOCKS_EXCLUDED(mu_);
  void Release(SharedMemorySlot* slot) ABSL_LOCKS_EXCLUDED(mu_);

  const SharedMemoryLayout& layout() const { return layout_; }

  // Implementation details follow.
 private:
  SharedMemorySlots(InferenceClient* client, InferRequest request, SharedMemoryLayout layout,
                    const SharedMemoryOptions& options)
      : client_(client),
        request_(std::move(request)),
        layout_(std::move(layout)),
        options_(options) {}

  // Allocates, fills and registers one more slot (not yet in slots_).
  absl::StatusOr<std::unique_ptr<SharedMemorySlot>> MakeSlot() const;

  InferenceClient* const client_;
  const InferRequest request_;  // with the inputs' bytes
  const SharedMemoryLayout layout_;
  const SharedMemoryOptions options_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<SharedMemorySlot>> slots_ ABSL_GUARDED_BY(mu_);
  std::vector<SharedMemorySlot*> free_ ABSL_GUARDED_BY(mu_);  // for Acquire
};

}  // namespace graphserve
