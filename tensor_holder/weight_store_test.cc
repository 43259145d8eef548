#include "tensor_holder/weight_store.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "common/cuda_handles.h"
#include "common/tensor.h"

namespace graphserve {
namespace {

std::shared_ptr<const HostTensor> FloatTensor(Dims dims, float first) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, std::move(dims));
  float* data = tensor->data<float>();
  for (int64_t i = 0; i < tensor->num_elements(); ++i) {
    data[i] = first + 0.25f * static_cast<float>(i % 4096) - static_cast<float>(i / 4096);
  }
  return tensor;
}

// The device bytes at `device`, read back with a blocking copy.
std::vector<std::byte> ReadBack(const void* device, size_t bytes) {
  std::vector<std::byte> host(bytes);
  EXPECT_EQ(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

bool SameBytes(const std::vector<std::byte>& device_copy, const HostTensor& tensor) {
  return device_copy.size() == tensor.bytes() &&
         std::memcmp(device_copy.data(), tensor.raw(), tensor.bytes()) == 0;
}

// Runs everywhere: without a GPU every ordinal is missing.
TEST(WeightStoreCreateTest, RejectsMissingDevice) {
  EXPECT_EQ(WeightStore::Create(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WeightStore::Create(CudaDeviceCount()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class WeightStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<std::shared_ptr<WeightStore>> store = WeightStore::Create(0);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
  }
  std::shared_ptr<WeightStore> store_;
};

class WeightStoreSizeTest : public WeightStoreTest,
                            public ::testing::WithParamInterface<int64_t> {};

TEST_P(WeightStoreSizeTest, UploadsTheTensorBytes) {
  const std::shared_ptr<const HostTensor> tensor = FloatTensor({GetParam()}, -3.0f);
  absl::StatusOr<const void*> device = store_->GetOrUpload(tensor);
  ASSERT_TRUE(device.ok()) << device.status();
  ASSERT_NE(*device, nullptr);
  EXPECT_TRUE(SameBytes(ReadBack(*device, tensor->bytes()), *tensor));
  EXPECT_EQ(store_->count(), 1u);
  EXPECT_EQ(store_->bytes(), tensor->bytes());
}

INSTANTIATE_TEST_SUITE_P(Elements, WeightStoreSizeTest,
                         ::testing::Values(int64_t{1}, int64_t{1000},
                                           int64_t{1 << 20} + 3,  // 4 MiB and a bit
                                           int64_t{64} << 20));   // 256 MiB, an LLM layer

TEST_F(WeightStoreTest, UploadsInt64AndBoolTensors) {
  auto ids = std::make_shared<HostTensor>(DType::kInt64, Dims{3, 7});
  for (int64_t i = 0; i < ids->num_elements(); ++i) ids->data<int64_t>()[i] = (i << 40) - i;
  auto mask = std::make_shared<HostTensor>(DType::kBool, Dims{5});
  for (int64_t i = 0; i < mask->num_elements(); ++i) mask->data<bool>()[i] = i % 2 == 1;

  absl::StatusOr<const void*> ids_device = store_->GetOrUpload(ids);
  absl::StatusOr<const void*> mask_device = store_->GetOrUpload(mask);
  ASSERT_TRUE(ids_device.ok()) << ids_device.status();
  ASSERT_TRUE(mask_device.ok()) << mask_device.status();
  EXPECT_TRUE(SameBytes(ReadBack(*ids_device, ids->bytes()), *ids));
  EXPECT_TRUE(SameBytes(ReadBack(*mask_device, mask->bytes()), *mask));
  EXPECT_EQ(store_->count(), 2u);
  EXPECT_EQ(store_->bytes(), ids->bytes() + mask->bytes());
}

TEST_F(WeightStoreTest, SecondRequestReturnsTheSameCopyWithoutUploading) {
  const std::shared_ptr<const HostTensor> tensor = FloatTensor({64, 64}, 1.0f);
  absl::StatusOr<const void*> first = store_->GetOrUpload(tensor);
  ASSERT_TRUE(first.ok()) << first.status();
  // Clobber the device copy: a second upload would restore it.
  ASSERT_EQ(cudaMemset(const_cast<void*>(*first), 0, tensor->bytes()), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  absl::StatusOr<const void*> second = store_->GetOrUpload(tensor);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, *first);
  const std::vector<std::byte> copy = ReadBack(*second, tensor->bytes());
  EXPECT_EQ(copy, std::vector<std::byte>(tensor->bytes(), std::byte{0}));
  EXPECT_EQ(store_->count(), 1u);
  EXPECT_EQ(store_->bytes(), tensor->bytes());
}

TEST_F(WeightStoreTest, EqualContentsInDistinctTensorsAreStoredTwice) {
  // Identity, not contents, is the key: two tensors may be mutated apart
  // before they are uploaded.
  const std::shared_ptr<const HostTensor> a = FloatTensor({256}, 2.0f);
  const std::shared_ptr<const HostTensor> b = FloatTensor({256}, 2.0f);
  absl::StatusOr<const void*> a_device = store_->GetOrUpload(a);
  absl::StatusOr<const void*> b_device = store_->GetOrUpload(b);
  ASSERT_TRUE(a_device.ok() && b_device.ok());
  EXPECT_NE(*a_device, *b_device);
  EXPECT_EQ(store_->count(), 2u);
  EXPECT_EQ(store_->bytes(), 2 * a->bytes());
}

TEST_F(WeightStoreTest, KeepsTheTensorAlive) {
  std::shared_ptr<const HostTensor> tensor = FloatTensor({10}, 0.0f);
  const std::weak_ptr<const HostTensor> watch = tensor;
  ASSERT_TRUE(store_->GetOrUpload(tensor).ok());
  tensor.reset();
  EXPECT_FALSE(watch.expired());
  store_.reset();
  EXPECT_TRUE(watch.expired());
}

TEST_F(WeightStoreTest, ZeroByteTensorsShareANonNullDummy) {
  auto empty = std::make_shared<const HostTensor>(DType::kFloat32, Dims{0, 16});
  auto also_empty = std::make_shared<const HostTensor>(DType::kInt64, Dims{4, 0});
  absl::StatusOr<const void*> first = store_->GetOrUpload(empty);
  absl::StatusOr<const void*> second = store_->GetOrUpload(also_empty);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*first, nullptr);
  EXPECT_EQ(*second, *first);
  absl::StatusOr<const void*> again = store_->GetOrUpload(empty);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  EXPECT_EQ(store_->count(), 2u);
  EXPECT_EQ(store_->bytes(), 0u);
}

TEST_F(WeightStoreTest, TransposedLayoutIsASecondCopyOfTheTranspose) {
  const std::shared_ptr<const HostTensor> tensor = FloatTensor({3, 5}, 1.0f);
  absl::StatusOr<const void*> as_stored = store_->GetOrUpload(tensor);
  absl::StatusOr<const void*> transposed = store_->GetOrUpload(tensor, WeightLayout::kTransposed);
  ASSERT_TRUE(as_stored.ok()) << as_stored.status();
  ASSERT_TRUE(transposed.ok()) << transposed.status();
  EXPECT_NE(*transposed, *as_stored);
  const std::vector<std::byte> bytes = ReadBack(*transposed, tensor->bytes());
  std::vector<float> got(15);
  std::memcpy(got.data(), bytes.data(), bytes.size());
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(got[c * 3 + r], tensor->data<float>()[r * 5 + c]) << r << "," << c;
    }
  }
  absl::StatusOr<const void*> again = store_->GetOrUpload(tensor, WeightLayout::kTransposed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *transposed);
  EXPECT_EQ(store_->count(), 2u);
  EXPECT_EQ(store_->bytes(), 2 * tensor->bytes());
}

TEST_F(WeightStoreTest, TransposedLayoutTakes2DTensorsOnly) {
  EXPECT_EQ(store_->GetOrUpload(FloatTensor({4, 2, 2}, 0.0f), WeightLayout::kTransposed)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->count(), 0u);
}

TEST_F(WeightStoreTest, ChannelsLastLayoutMovesTheSecondDimLast) {
  const std::shared_ptr<const HostTensor> tensor = FloatTensor({2, 3, 2, 2}, 1.0f);
  absl::StatusOr<const void*> channels_last =
      store_->GetOrUpload(tensor, WeightLayout::kChannelsLast);
  ASSERT_TRUE(channels_last.ok()) << channels_last.status();
  const std::vector<std::byte> bytes = ReadBack(*channels_last, tensor->bytes());
  std::vector<float> got(24);
  std::memcpy(got.data(), bytes.data(), bytes.size());
  for (int64_t k = 0; k < 2; ++k) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t rs = 0; rs < 4; ++rs) {
        EXPECT_EQ(got[(k * 4 + rs) * 3 + c], tensor->data<float>()[(k * 3 + c) * 4 + rs])
            << k << "," << c << "," << rs;
      }
    }
  }
  EXPECT_EQ(
      store_->GetOrUpload(FloatTensor({4, 2}, 0.0f), WeightLayout::kChannelsLast).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(WeightStoreTest, NullTensorIsInvalidArgument) {
  EXPECT_EQ(store_->GetOrUpload(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->count(), 0u);
}

// See Note [Weight upload ordering]: a kernel or copy on a non-blocking stream
// issued right after GetOrUpload returns must see the uploaded bytes.
TEST_F(WeightStoreTest, UploadIsCompleteForNonBlockingStreams) {
  constexpr int64_t kElements = int64_t{32} << 20;  // 128 MiB: the DMA takes a while
  const std::shared_ptr<const HostTensor> tensor = FloatTensor({kElements}, 5.0f);
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<PinnedHostBuffer> readback = PinnedHostBuffer::Allocate(tensor->bytes());
  ASSERT_TRUE(readback.ok()) << readback.status();

  absl::StatusOr<const void*> device = store_->GetOrUpload(tensor);
  ASSERT_TRUE(device.ok()) << device.status();
  ASSERT_EQ(cudaMemcpyAsync(readback->get(), *device, tensor->bytes(), cudaMemcpyDeviceToHost,
                            stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  EXPECT_EQ(std::memcmp(readback->get(), tensor->raw(), tensor->bytes()), 0);
}

TEST_F(WeightStoreTest, ConcurrentRequestsUploadEachTensorOnce) {
  constexpr int kThreads = 8;   // more than the uploads in flight on any device
  constexpr int kTensors = 16;  // each thread asks for all of them, in its own order
  std::vector<std::shared_ptr<const HostTensor>> tensors;
  size_t total_bytes = 0;
  for (int t = 0; t < kTensors; ++t) {
    tensors.push_back(FloatTensor({1024 * (t + 1)}, static_cast<float>(t)));
    total_bytes += tensors.back()->bytes();
  }
  std::vector<std::vector<const void*>> seen(kThreads, std::vector<const void*>(kTensors));
  std::vector<std::thread> threads;
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&, thread] {
      for (int k = 0; k < kTensors; ++k) {
        const int t = (k + 5 * thread) % kTensors;
        absl::StatusOr<const void*> device = store_->GetOrUpload(tensors[t]);
        seen[thread][t] = device.ok() ? *device : nullptr;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(store_->count(), static_cast<size_t>(kTensors));
  EXPECT_EQ(store_->bytes(), total_bytes);
  for (int t = 0; t < kTensors; ++t) {
    ASSERT_NE(seen[0][t], nullptr) << "tensor " << t;
    for (int thread = 1; thread < kThreads; ++thread) {
      EXPECT_EQ(seen[thread][t], seen[0][t]) << "tensor " << t << ", thread " << thread;
    }
    EXPECT_TRUE(SameBytes(ReadBack(seen[0][t], tensors[t]->bytes()), *tensors[t]))
        << "tensor " << t;
  }
}

}  // namespace
}  // namespace graphserve
