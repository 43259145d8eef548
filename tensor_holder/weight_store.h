#pragma once
// Model weights on one device, uploaded once and shared by every plan (batch
// size, stream slot) that uses them.

#include <cstddef>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/cuda_handles.h"
#include "common/tensor.h"

namespace graphserve {

// How a weight is laid out on the device.
enum class WeightLayout {
  kAsStored,
  // A 2-D tensor's transpose: [r, c] stored as [c, r]. Hopper's TF32
  // tensor-core GEMMs read both operands K-major, so a float32 MatMul weight
  // [K, N] is kept as [N, K] (Note [K-major weights] in runtime/fusion.h).
  kTransposed,
  // A convolution's 4-D weight [k, c, r, s] stored as [k, r, s, c]: what
  // cuDNN's tensor-core engines read beside channels-last data (Note
  // [Channels-last convolutions] in runtime/fusion.h).
  kChannelsLast,
};

// Thread-safe.
class WeightStore {
 public:
  // An empty store on `device`; InvalidArgument if the device does not exist.
  static absl::StatusOr<std::shared_ptr<WeightStore>> Create(int device);

  // The device copy of `tensor` in `layout`, uploaded on the first request
  // for this tensor object and layout. Tensors are keyed by identity (the
  // HostTensor's address), not by contents; the store keeps `tensor` alive, so the address cannot
  // be reused by another tensor while the store lives. The store owns the device memory; the
  // pointer stays valid for the store's lifetime.
  //
  // A zero-byte tensor maps to a valid, non-null pointer to a small dummy
  // allocation shared by all such tensors (nothing may be read through it),
  // so a null pointer never stands for "no weight".
  //
  // Plan-time only: the upload allocates and copies synchronously, so it must
  // not run while this thread captures a graph, nor while another thread
  // captures in cudaStreamCaptureModeGlobal. Concurrent first requests for the
  // same tensor upload it once; uploads are serialised.
  //
  // kTransposed takes 2-D tensors only, kChannelsLast 4-D ones
  // (InvalidArgument otherwise).
  absl::StatusOr<const void*> GetOrUpload(const std::shared_ptr<const HostTensor>& tensor,
                                          WeightLayout layout = WeightLayout::kAsStored);

  // Bytes of the stored copies (the dummy is not counted), and how many.
  [[nodiscard]] size_t bytes() const;
  [[nodiscard]] size_t count() const;
  [[nodiscard]] int device() const { return device_; }

  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Implementation details follow.
 private:
  struct Entry {
    std::shared_ptr<const HostTensor> tensor;  // keeps the key's address unique
    DeviceBuffer buffer;
  };

  WeightStore(int device, CudaStream upload_stream)
      : device_(device), upload_stream_(std::move(upload_stream)) {}

  const int device_;
  // Note [Weight upload ordering]: a plain cudaMemcpy from pageable memory
  // may return before the DMA reaches the device, and it is ordered only on
  // the legacy default stream, which our non-blocking streams do not wait
  // for. Uploads therefore go through this stream and synchronise it, so the
  // weights are in place for any stream once GetOrUpload returns.
  const CudaStream upload_stream_;

  mutable absl::Mutex mu_;
  // Held across an upload, so each tensor is uploaded once.
  std::map<std::pair<const HostTensor*, WeightLayout>, Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  DeviceBuffer empty_tensor_dummy_ ABSL_GUARDED_BY(mu_);  // allocated on first use
};

}  // namespace graphserve
