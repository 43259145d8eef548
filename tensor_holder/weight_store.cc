#include "tensor_holder/weight_store.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_device_guard.h"
#include "common/cuda_status.h"
#include "common/dtype.h"
#include "common/status.h"

namespace graphserve {
namespace {

// The dummy behind zero-byte tensors: one cudaMalloc granule.
constexpr size_t kDummyBytes = 256;

// The bytes of a 2-D tensor [rows, cols] as [cols, rows].
std::vector<std::byte> TransposedBytes(const HostTensor& tensor) {
  const int64_t rows = tensor.dims()[0];
  const int64_t cols = tensor.dims()[1];
  const size_t element = DTypeSize(tensor.dtype());
  const auto* from = static_cast<const std::byte*>(tensor.raw());
  std::vector<std::byte> to(tensor.bytes());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      std::memcpy(&to[(c * rows + r) * element], &from[(r * cols + c) * element], element);
    }
  }
  return to;
}

// [k, c, r, s] as [k, r, s, c].
std::vector<std::byte> ChannelsLastBytes(const HostTensor& tensor) {
  const Dims& d = tensor.dims();
  const int64_t plane = d[2] * d[3];
  const size_t element = DTypeSize(tensor.dtype());
  const auto* from = static_cast<const std::byte*>(tensor.raw());
  std::vector<std::byte> to(tensor.bytes());
  for (int64_t k = 0; k < d[0]; ++k) {
    for (int64_t c = 0; c < d[1]; ++c) {
      for (int64_t rs = 0; rs < plane; ++rs) {
        std::memcpy(&to[((k * plane + rs) * d[1] + c) * element],
                    &from[((k * d[1] + c) * plane + rs) * element], element);
      }
    }
  }
  return to;
}

// `tensor`'s bytes in `layout`; empty for kAsStored (the tensor's own).
std::vector<std::byte> BytesIn(const HostTensor& tensor, WeightLayout layout) {
  switch (layout) {
    case WeightLayout::kAsStored:
      return {};
    case WeightLayout::kTransposed:
      return TransposedBytes(tensor);
    case WeightLayout::kChannelsLast:
      return ChannelsLastBytes(tensor);
  }
  return {};
}

const char* LayoutText(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::kAsStored:
      return "";
    case WeightLayout::kTransposed:
      return ", transposed";
    case WeightLayout::kChannelsLast:
      return ", channels last";
  }
  return "";
}

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
    const std::shared_ptr<const HostTensor>& tensor, WeightLayout layout) {
  if (tensor == nullptr) return absl::InvalidArgumentError("GetOrUpload: null tensor");
  if (layout == WeightLayout::kTransposed && tensor->dims().size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat("GetOrUpload: only a 2-D weight is transposed, not ",
                                                   DimsToString(tensor->dims())));
  }
  if (layout == WeightLayout::kChannelsLast && tensor->dims().size() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("GetOrUpload: only a 4-D weight is stored channels last, not ",
                     DimsToString(tensor->dims())));
  }
  const std::pair<const HostTensor*, WeightLayout> key(tensor.get(), layout);
  absl::MutexLock lock(&mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    if (it->second.buffer.get() != nullptr) return it->second.buffer.get();
    return empty_tensor_dummy_.get();
  }

  CudaDeviceGuard guard(device_);
  RETURN_IF_ERROR(guard.status());
  const size_t bytes = tensor->bytes();
  const std::string context = absl::StrCat("uploading a ", std::string(DTypeName(tensor->dtype())),
                                           DimsToString(tensor->dims()), " weight (", bytes,
                                           " bytes", LayoutText(layout), ") to device ", device_);
  if (bytes == 0) {
    if (empty_tensor_dummy_.get() == nullptr) {
      absl::StatusOr<DeviceBuffer> dummy = DeviceBuffer::Allocate(kDummyBytes);
      if (!dummy.ok()) return AnnotateStatus(dummy.status(), context);
      empty_tensor_dummy_ = *std::move(dummy);
    }
    entries_.emplace(key, Entry{tensor, DeviceBuffer()});
    return empty_tensor_dummy_.get();
  }

  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(bytes);
  if (!buffer.ok()) return AnnotateStatus(buffer.status(), context);
  const std::vector<std::byte> rearranged = BytesIn(*tensor, layout);
  const void* source = layout == WeightLayout::kAsStored ? tensor->raw() : rearranged.data();
  // See Note [Weight upload ordering]; the synchronisation also keeps
  // `rearranged` alive until its copy is done.
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaMemcpyAsync(buffer->get(), source, bytes, cudaMemcpyHostToDevice,
                                        upload_stream_.get()),
                        "cudaMemcpyAsync"),
      context));
  RETURN_IF_ERROR(AnnotateStatus(
      CudaErrorToStatus(cudaStreamSynchronize(upload_stream_.get()), "cudaStreamSynchronize"),
      context));
  const void* device_ptr = buffer->get();
  entries_.emplace(key, Entry{tensor, *std::move(buffer)});
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
