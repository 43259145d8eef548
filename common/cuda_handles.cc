#include "common/cuda_handles.h"

#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/capture_exclusion.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {

namespace internal {
namespace {

// Note [Pooled cuDNN handles]: released handles by device.
struct CudnnPool {
  absl::Mutex mu;
  std::map<int, std::vector<cudnnHandle_t>> free ABSL_GUARDED_BY(mu);
};

CudnnPool& Pool() {
  static CudnnPool* const pool = new CudnnPool;  // never destroyed
  return *pool;
}

}  // namespace

// Destroying a stream, graph, library handle or memory may synchronise the
// device: each holds other threads' captures off (Note [Captures and
// device-wide synchronisation]).
namespace {
void WarnOnFailure(cudaError_t error, const char* call) {
  if (error != cudaSuccess) {
    spdlog::warn("{} failed during teardown: {}", call, cudaGetErrorString(error));
  }
}
}  // namespace

void StreamDeleter::operator()(cudaStream_t stream) const {
  const CapturesHeldOff captures_held_off;
  WarnOnFailure(cudaStreamDestroy(stream), "cudaStreamDestroy");
}
void EventDeleter::operator()(cudaEvent_t event) const {
  WarnOnFailure(cudaEventDestroy(event), "cudaEventDestroy");
}
void GraphDeleter::operator()(cudaGraph_t graph) const {
  WarnOnFailure(cudaGraphDestroy(graph), "cudaGraphDestroy");
}
void GraphExecDeleter::operator()(cudaGraphExec_t exec) const {
  const CapturesHeldOff captures_held_off;
  WarnOnFailure(cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
}
void CublasLtDeleter::operator()(cublasLtHandle_t handle) const {
  const CapturesHeldOff captures_held_off;
  if (cublasLtDestroy(handle) != CUBLAS_STATUS_SUCCESS) {
    spdlog::warn("cublasLtDestroy failed during teardown");
  }
}
void CudnnDeleter::operator()(cudnnHandle_t handle) const {
  // Note [Pooled cuDNN handles]: back to the pool, bound to no stream. No
  // call here synchronises: captures need not be held off.
  const cudnnStatus_t status = cudnnSetStream(handle, nullptr);
  if (status != CUDNN_STATUS_SUCCESS) {
    spdlog::warn("cudnnSetStream(nullptr) of a released cuDNN handle failed: {}; the handle "
                 "is dropped",
                 cudnnGetErrorString(status));
    return;
  }
  CudnnPool& pool = Pool();
  absl::MutexLock lock(&pool.mu);
  pool.free[device].push_back(handle);
}
void DeviceMemoryDeleter::operator()(void* ptr) const {
  const CapturesHeldOff captures_held_off;
  WarnOnFailure(cudaFree(ptr), "cudaFree");
}
void PinnedMemoryDeleter::operator()(void* ptr) const {
  const CapturesHeldOff captures_held_off;
  WarnOnFailure(cudaFreeHost(ptr), "cudaFreeHost");
}
}  // namespace internal

absl::StatusOr<CudaStream> CudaStream::Create() {
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return CudaStream(stream, device);
}

absl::Status CudaStream::Record(const CudaEvent& event) const {
  CUDA_RETURN_IF_ERROR(cudaEventRecord(event.get(), get()));
  return absl::OkStatus();
}

absl::Status CudaStream::Wait(const CudaEvent& event) const {
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(get(), event.get(), 0));
  return absl::OkStatus();
}

absl::StatusOr<CudaEvent> CudaEvent::Create(bool timing) {
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return CudaEvent(event);
}

absl::StatusOr<CudaEvent> CudaEvent::CreateForSleepingWait() {
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync));
  return CudaEvent(event);
}

absl::StatusOr<CublasLtHandle> CublasLtHandle::Create() {
  cublasLtHandle_t handle = nullptr;
  CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&handle));
  return CublasLtHandle(handle);
}

absl::StatusOr<CudnnHandle> CudnnHandle::Create() {
  int device = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  {
    internal::CudnnPool& pool = internal::Pool();
    absl::MutexLock lock(&pool.mu);
    std::vector<cudnnHandle_t>& free = pool.free[device];
    if (!free.empty()) {
      const cudnnHandle_t handle = free.back();
      free.pop_back();
      return CudnnHandle(handle, device);
    }
  }
  cudnnHandle_t handle = nullptr;
  RETURN_IF_ERROR(CudnnErrorToStatus(cudnnCreate(&handle), "cudnnCreate"));
  return CudnnHandle(handle, device);
}

size_t CudnnHandle::PooledOnCurrentDevice() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  internal::CudnnPool& pool = internal::Pool();
  absl::MutexLock lock(&pool.mu);
  const auto found = pool.free.find(device);
  return found == pool.free.end() ? 0 : found->second.size();
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t bytes) {
  if (bytes == 0) return DeviceBuffer();
  void* ptr = nullptr;
  const cudaError_t error = cudaMalloc(&ptr, bytes);
  if (error != cudaSuccess) {
    cudaGetLastError();  // An allocation failure is not sticky; clear it.
    return AnnotateStatus(CudaErrorToStatus(error, "cudaMalloc"),
                          absl::StrCat("allocating ", bytes, " device bytes"));
  }
  return DeviceBuffer(ptr, bytes);
}

absl::StatusOr<PinnedHostBuffer> PinnedHostBuffer::Allocate(size_t bytes) {
  if (bytes == 0) return PinnedHostBuffer();
  void* ptr = nullptr;
  const cudaError_t error = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return AnnotateStatus(CudaErrorToStatus(error, "cudaHostAlloc"),
                          absl::StrCat("allocating ", bytes, " pinned host bytes"));
  }
  return PinnedHostBuffer(ptr, bytes);
}

absl::StatusOr<int> CudaDeviceCountOrError() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaSuccess) return count;
  cudaGetLastError();  // not sticky; leave no error behind for the next call
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) return 0;
  return CudaErrorToStatus(error, "cudaGetDeviceCount");
}

namespace {

// The scheduling flags of `device`'s primary context: the other device
// flags as they were, the scheduling bits `schedule`.
absl::Status SetSchedulingFlag(int device, unsigned int schedule) {
  const CudaDeviceGuard on_device(device);
  RETURN_IF_ERROR(on_device.status());
  unsigned int flags = 0;
  CUDA_RETURN_IF_ERROR(cudaGetDeviceFlags(&flags));
  CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags((flags & ~cudaDeviceScheduleMask) | schedule));
  return absl::OkStatus();
}

}  // namespace

absl::Status SetGpuWait(GpuWait wait, const std::vector<int>& devices) {
  unsigned int schedule = cudaDeviceScheduleAuto;
  switch (wait) {
    case GpuWait::kAuto: schedule = cudaDeviceScheduleAuto; break;
    case GpuWait::kSpin: schedule = cudaDeviceScheduleSpin; break;
    case GpuWait::kYield: schedule = cudaDeviceScheduleYield; break;
    case GpuWait::kBlock: schedule = cudaDeviceScheduleBlockingSync; break;
  }
  for (const int device : devices) {
    RETURN_IF_ERROR(AnnotateStatus(SetSchedulingFlag(device, schedule),
                                   absl::StrCat("setting how threads wait for GPU ", device)));
  }
  return absl::OkStatus();
}

int CudaDeviceCount() {
  const absl::StatusOr<int> count = CudaDeviceCountOrError();
  if (!count.ok()) {
    spdlog::error("{}; treating this machine as having no CUDA device",
                  std::string(count.status().message()));
    return 0;
  }
  return *count;
}

absl::Status ValidateCudaDevice(int device) {
  const int count = CudaDeviceCount();
  if (device < 0 || device >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", device, " does not exist: the driver sees ", count, " device(s)"));
  }
  return absl::OkStatus();
}

}  // namespace graphserve
