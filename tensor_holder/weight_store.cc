#include "tensor_holder/weight_store.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/dtype.h"
#include "common/status.h"

namespace graphserve {
namespace {

// The dummy behind zero-byte tensors: one cudaMalloc granule.
constexpr size_t kDummyBytes = 256;

}  // namespace

absl::StatusOr<std::shared_ptr<WeightStore>> WeightStore::Create(int device) {
  RETURN_IF_ERROR(AnnotateStatus(ValidateCudaDevice(device), "creating a weight store"));
  CudaDeviceGuard guard(device);
  RETURN_IF_ERROR(guard.status());
  // The stream belongs to the device that is current when it is created.
  ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  return std::shared_ptr<WeightStore>(new WeightStore(device, std::move(stream)));
}

absl::StatusOr<const void*> WeightStore::GetOrUpload(
    const std::shared_ptr<const HostTensor>& tensor) {
  if (tensor == nullptr) return absl::InvalidArgumentError("GetOrUpload: null tensor");
  absl::MutexLock lock(&mu_);
  if (auto it = entries_.find(tensor.get()); it != entries_.end()) {
    if (it->second.buffer.get() != nullptr) return it->second.buffer.get();
    return empty_tensor_dummy_.get();
  }

  CudaDeviceGuard guard(device_);
  RETURN_IF_ERROR(guard.status());
  const size_t bytes = tensor->bytes();
  const std::string context =
      absl::StrCat("uploading a ", std::string(DTypeName(tensor->dtype())),
                   DimsToString(tensor->dims()), " weight (", bytes, " bytes) to device ", device_);
  if (bytes == 0) {
    if (empty_tensor_dummy_.get() == nullptr) {
      absl::StatusOr<DeviceBuffer> dummy = DeviceBuffer::Allocate(kDummyBytes);
      if (!dummy.ok()) return AnnotateStatus(dummy.status(), context);
      empty_tensor_dummy_ = *std::move(dummy);
    }
    entries_.emplace(tensor.get(), Entry{tensor, DeviceBuffer()});
    return empty_tensor_dummy_.get();
  }

  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(bytes);
  if (!buffer.ok()) return AnnotateStatus(buffer.status(), context);
  // See Note [Weight upload ordering].
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaMemcpyAsync(buffer->get(), tensor->raw(), bytes, cudaMemcpyHostToDevice,
                                        upload_stream_.get()),
                        "cudaMemcpyAsync"),
      context));
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaStreamSynchronize(upload_stream_.get()), "cudaStreamSynchronize"),
      context));
  const void* device_ptr = buffer->get();
  entries_.emplace(tensor.get(), Entry{tensor, *std::move(buffer)});
  bytes_ += bytes;
  return device_ptr;
}

size_t WeightStore::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

size_t WeightStore::count() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

WeightStore::~WeightStore() {
  // Free with the store's device current (see StreamArena::~StreamArena).
  CudaDeviceGuard guard(device_);
  absl::MutexLock lock(&mu_);  // uncontended; keeps the ABSL_GUARDED_BY contract
  entries_.clear();
  empty_tensor_dummy_ = DeviceBuffer();
}

}  // namespace graphserve
