#pragma once
// Move-only owners for every CUDA handle GraphServe holds. Each is created by a
// factory that reports failure as a Status; destruction never throws and logs a
// warning when the driver refuses to release a handle.

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "common/gpu_wait.h"

namespace graphserve {

namespace internal {
struct StreamDeleter { void operator()(cudaStream_t stream) const; };
struct EventDeleter { void operator()(cudaEvent_t event) const; };
struct GraphDeleter { void operator()(cudaGraph_t graph) const; };
struct GraphExecDeleter { void operator()(cudaGraphExec_t exec) const; };
struct CublasLtDeleter { void operator()(cublasLtHandle_t handle) const; };
// Returns the handle to its device's pool (Note [Pooled cuDNN handles]).
struct CudnnDeleter {
  int device = 0;
  void operator()(cudnnHandle_t handle) const;
};
struct DeviceMemoryDeleter { void operator()(void* ptr) const; };
struct PinnedMemoryDeleter { void operator()(void* ptr) const; };
}  // namespace internal

class CudaEvent;

// A non-blocking stream: it never synchronises with the legacy default stream,
// which graph capture requires. It knows its device, and orders work against
// other streams through events (the lanes of a multi-stream schedule).
class CudaStream {
 public:
  CudaStream() = default;  // holds no stream until assigned from Create()
  // A stream on the current device.
  static absl::StatusOr<CudaStream> Create();
  [[nodiscard]] cudaStream_t get() const { return stream_.get(); }
  [[nodiscard]] int device() const { return device_; }
  // Records `event` at the current end of the stream (a fork or join point
  // when captured).
  absl::Status Record(const CudaEvent& event) const;
  // Work enqueued after this waits until `event`'s last record completes.
  absl::Status Wait(const CudaEvent& event) const;

 private:
  CudaStream(cudaStream_t stream, int device) : stream_(stream), device_(device) {}
  std::unique_ptr<std::remove_pointer_t<cudaStream_t>, internal::StreamDeleter> stream_;
  int device_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() = default;  // holds no event until assigned from Create()
  // `timing` events can measure elapsed time; others are cheaper to record.
  static absl::StatusOr<CudaEvent> Create(bool timing = false);
  // An event whose cudaEventSynchronize sleeps until the GPU signals it
  // (cudaEventBlockingSync) instead of spinning, whatever the device's
  // scheduling flag; no timing.
  static absl::StatusOr<CudaEvent> CreateForSleepingWait();
  [[nodiscard]] cudaEvent_t get() const { return event_.get(); }

 private:
  explicit CudaEvent(cudaEvent_t event) : event_(event) {}
  std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, internal::EventDeleter> event_;
};

// Owns a captured graph (cudaStreamEndCapture's result).
class CudaGraph {
 public:
  CudaGraph() = default;
  explicit CudaGraph(cudaGraph_t graph) : graph_(graph) {}
  [[nodiscard]] cudaGraph_t get() const { return graph_.get(); }

 private:
  std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, internal::GraphDeleter> graph_;
};

class CudaGraphExec {
 public:
  CudaGraphExec() = default;
  explicit CudaGraphExec(cudaGraphExec_t exec) : exec_(exec) {}
  [[nodiscard]] cudaGraphExec_t get() const { return exec_.get(); }

 private:
  std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, internal::GraphExecDeleter> exec_;
};

class CublasLtHandle {
 public:
  static absl::StatusOr<CublasLtHandle> Create();
  [[nodiscard]] cublasLtHandle_t get() const { return handle_.get(); }

 private:
  explicit CublasLtHandle(cublasLtHandle_t handle) : handle_(handle) {}
  std::unique_ptr<std::remove_pointer_t<cublasLtHandle_t>, internal::CublasLtDeleter> handle_;
};

// A cuDNN handle bound to the device current at Create(). cuDNN handles are
// not thread safe: one thread at a time may use it (cudnnSetStream included).
// Handles are pooled per device, never destroyed:
//
// Note [Pooled cuDNN handles]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// cuDNN 9.19 keeps about 39 KB of host memory for good after each
// cudnnCreate / cudnnDestroy pair, where every other CUDA object the server
// makes and destroys (streams, events, graphs and their execs, device and
// pinned memory, cuBLASLt handles, threads that use CUDA) keeps none: call
// 27 of bench/results/2026-11-30_cbc9333_owners_h200 counted malloc's bytes
// in use over 200 rounds of each. Every load makes cuDNN handles (each
// slot's plans, the load's checks), so a server grew by about 140 KiB of
// RSS per reload of the demo MLP, without end (calls 24-26 there; the host
// executor, which makes none, stayed flat). A released handle therefore
// goes back to a pool of its device with the default stream set (the stream
// its user set may be destroyed next), and Create takes one from the pool
// before it makes one: the pool holds at most as many handles as were ever
// alive at once. The pool and its handles are never destroyed: cudnnDestroy
// at exit would race CUDA's own teardown.
class CudnnHandle {
 public:
  CudnnHandle() = default;  // holds no handle until assigned from Create()
  static absl::StatusOr<CudnnHandle> Create();
  [[nodiscard]] cudnnHandle_t get() const { return handle_.get(); }

  // Handles in the pool of the current device now: for tests.
  static size_t PooledOnCurrentDevice();

 private:
  CudnnHandle(cudnnHandle_t handle, int device)
      : handle_(handle, internal::CudnnDeleter{device}) {}
  std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, internal::CudnnDeleter> handle_;
};

// cudaMalloc'd bytes. A zero-byte buffer holds no allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  static absl::StatusOr<DeviceBuffer> Allocate(size_t bytes);
  [[nodiscard]] void* get() const { return ptr_.get(); }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer(void* ptr, size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  std::unique_ptr<void, internal::DeviceMemoryDeleter> ptr_;
  size_t bytes_ = 0;
};

// Page-locked host memory (cudaHostAlloc), so copies to and from the device
// are asynchronous and can be recorded as graph memcpy nodes.
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  static absl::StatusOr<PinnedHostBuffer> Allocate(size_t bytes);
  [[nodiscard]] void* get() const { return ptr_.get(); }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  PinnedHostBuffer(void* ptr, size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  std::unique_ptr<void, internal::PinnedMemoryDeleter> ptr_;
  size_t bytes_ = 0;
};

// Number of CUDA devices the driver sees; 0 (not an error) when there is no
// device (cudaErrorNoDevice) or no usable driver (cudaErrorInsufficientDriver),
// so callers can fall back to the host executor. Any other failure of
// cudaGetDeviceCount (a driver that fails to initialise, a stub library, a
// device lost) is returned as an error naming the call.
absl::StatusOr<int> CudaDeviceCountOrError();

// CudaDeviceCountOrError() for callers that only choose between the CUDA and
// the host executor: an unexpected error is logged (spdlog error, with the
// CUDA error) and counts as 0 devices.
int CudaDeviceCount();

// OK if `device` names a device the driver sees; InvalidArgument otherwise,
// with the number of devices (0 without a driver or GPU).
absl::Status ValidateCudaDevice(int device);

// Sets `wait` as the scheduling flag of each of `devices` (the other device
// flags are kept), making their primary contexts current on the way; the
// calling thread's current device is left as it was.
absl::Status SetGpuWait(GpuWait wait, const std::vector<int>& devices);

}  // namespace graphserve
