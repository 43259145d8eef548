// GPU tests of a bucketed model served by CUDA graphs whose requests name
// device memory as a CUDA shared-memory region (the server's own,
// SharedMemoryRegion::AllocateCuda): at a length a bucket takes, the runner
// reads the inputs and writes the output on the device in place (Note [CUDA
// shared memory] in server/shared_memory.h); at a length only the eager
// fallback takes, the request is validated again, reading the region
// through the host (Note [Eager fallback] in server/eager_fallback.h). Each
// answer against the host executor at the request's exact shape. They skip
// without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/cuda_handles.h"
#include "common/tensor.h"
#include "examples/example_models.h"
#include "server/masked_model_testing.h"
#include "server/served_model.h"
#include "server/shared_memory.h"

namespace graphserve {
namespace {

constexpr double kTolerance = 1e-5;  // float32 GPU against the float64-accumulating host
constexpr int64_t kWidth = 16;       // the masked model's feature width
constexpr uint64_t kRegionBytes = uint64_t{1} << 20;

constexpr char kCapture[] = R"pb(
  capture {
    batch_sizes: [ 1, 4 ]
    shape_dims: "sequence"
    buckets { extents: 8 }
    buckets { extents: 32 }
    eager_extents: 48
  }
)pb";

// Names bytes [offset, offset + bytes) of region "tensors" in `tensor`'s
// parameters.
template <typename Tensor>
void InRegion(uint64_t offset, uint64_t bytes, Tensor* tensor) {
  auto& parameters = *tensor->mutable_parameters();
  parameters["shared_memory_region"].set_string_param("tensors");
  parameters["shared_memory_offset"].set_int64_param(static_cast<int64_t>(offset));
  parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(bytes));
}

TEST(ServedModelCudaTest, CudaRegionTensorsServeBucketedAndEagerLengths) {
  if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path directory =
      std::filesystem::path(::testing::TempDir()) / "served_model_cuda" / "masked";
  std::filesystem::create_directories(directory / "1");
  const std::string path = (directory / "1" / "model.onnx").string();
  std::ofstream(path, std::ios::binary) << MakeMaskedSequenceModel().SerializeAsString();
  RepositoryModel entry;
  entry.name = "masked";
  entry.directory = directory.string();
  entry.config = MaskedModelConfig(kCapture);
  absl::StatusOr<std::unique_ptr<ServedModel>> model =
      ServedModel::Load(entry, {.version = 1, .model_path = path}, ServedModelOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->device_memory_gpu(), std::optional<int>(0));

  SharedMemoryRegistry registry;
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::AllocateCuda("tensors", 0, kRegionBytes);
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_TRUE(registry.Add(*region).ok());

  // 20 positions: bucket 32, read and written on the device. 40: past the
  // largest bucket, run eagerly, the region read through the host.
  for (const auto& [rows, length] : std::vector<std::pair<int64_t, int64_t>>{{1, 20}, {2, 40}}) {
    const HostTensor random = RandomTensor(DType::kFloat32, {rows, length, kWidth}, 90 + length);
    std::vector<float> x(random.data<float>(), random.data<float>() + random.num_elements());
    const std::vector<int64_t> mask(static_cast<size_t>(rows * length), 1);
    const uint64_t x_bytes = x.size() * sizeof(float);
    const uint64_t mask_bytes = mask.size() * sizeof(int64_t);
    const uint64_t mask_at = 256 * ((x_bytes + 255) / 256);
    const uint64_t y_at = mask_at + 256 * ((mask_bytes + 255) / 256);
    absl::StatusOr<SharedMemorySlice> x_slice = registry.Slice("tensors", 0, x_bytes);
    absl::StatusOr<SharedMemorySlice> mask_slice = registry.Slice("tensors", mask_at, mask_bytes);
    absl::StatusOr<SharedMemorySlice> y_slice = registry.Slice("tensors", y_at, x_bytes);
    ASSERT_TRUE(x_slice.ok() && mask_slice.ok() && y_slice.ok());
    ASSERT_TRUE(
        CopyIntoSlice(*x_slice, reinterpret_cast<const std::byte*>(x.data()), x_bytes).ok());
    ASSERT_TRUE(
        CopyIntoSlice(*mask_slice, reinterpret_cast<const std::byte*>(mask.data()), mask_bytes)
            .ok());

    inference::ModelInferRequest request;
    request.set_model_name("masked");
    auto* x_input = request.add_inputs();
    x_input->set_name("x");
    x_input->set_datatype("FP32");
    for (int64_t dim : {rows, length, kWidth}) x_input->add_shape(dim);
    InRegion(0, x_bytes, x_input);
    auto* mask_input = request.add_inputs();
    mask_input->set_name("mask");
    mask_input->set_datatype("INT64");
    for (int64_t dim : {rows, length}) mask_input->add_shape(dim);
    InRegion(mask_at, mask_bytes, mask_input);
    auto* y_output = request.add_outputs();
    y_output->set_name("y");
    InRegion(y_at, x_bytes, y_output);
    inference::ModelInferResponse response;
    absl::Notification answered;
    absl::Status status;
    (*model)->Infer(
        &request, &response,
        [&](const absl::Status& answer) {
          status = answer;
          answered.Notify();
        },
        &registry);
    answered.WaitForNotification();
    ASSERT_TRUE(status.ok()) << length << ": " << status;

    std::vector<float> got(x.size());
    ASSERT_TRUE(CopyFromSlice(*y_slice, reinterpret_cast<std::byte*>(got.data())).ok());
    HostTensor got_tensor(DType::kFloat32, {rows, length, kWidth});
    std::memcpy(got_tensor.raw(), got.data(), x_bytes);
    HostTensor want_tensor(DType::kFloat32, {rows, length, kWidth});
    const std::vector<float> want =
        MaskedReference(*LoadMaskedModel(kCapture).model, rows, length, x, mask);
    std::memcpy(want_tensor.raw(), want.data(), x_bytes);
    EXPECT_LT(RelativeError(got_tensor, want_tensor), kTolerance) << rows << " x " << length;
  }
}

}  // namespace
}  // namespace graphserve
