#include "common/cuda_handles.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "common/gpu_wait_testing.h"

namespace graphserve {
namespace {

class CudaHandlesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_F(CudaHandlesTest, RoundTripThroughDeviceAndPinnedBuffers) {
  constexpr size_t kCount = 1000;  // not a multiple of any page or warp size
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<DeviceBuffer> device = DeviceBuffer::Allocate(kCount * sizeof(float));
  ASSERT_TRUE(device.ok()) << device.status();
  absl::StatusOr<PinnedHostBuffer> pinned = PinnedHostBuffer::Allocate(kCount * sizeof(float));
  ASSERT_TRUE(pinned.ok()) << pinned.status();

  std::vector<float> values(kCount);
  for (size_t i = 0; i < kCount; ++i) values[i] = 0.5f * static_cast<float>(i) - 7.0f;
  std::memcpy(pinned->get(), values.data(), kCount * sizeof(float));
  ASSERT_EQ(cudaMemcpyAsync(device->get(), pinned->get(), kCount * sizeof(float),
                            cudaMemcpyHostToDevice, stream->get()),
            cudaSuccess);
  std::memset(pinned->get(), 0xFF, kCount * sizeof(float));
  ASSERT_EQ(cudaMemcpyAsync(pinned->get(), device->get(), kCount * sizeof(float),
                            cudaMemcpyDeviceToHost, stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  EXPECT_EQ(std::memcmp(pinned->get(), values.data(), kCount * sizeof(float)), 0);
}

TEST_F(CudaHandlesTest, StreamKnowsItsDeviceAndWaitsOnAnotherStreamsEvent) {
  absl::StatusOr<CudaStream> first = CudaStream::Create();
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<CudaStream> second = CudaStream::Create();
  ASSERT_TRUE(second.ok()) << second.status();
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(first->device(), device);
  absl::StatusOr<CudaEvent> event = CudaEvent::Create();
  ASSERT_TRUE(event.ok()) << event.status();
  absl::StatusOr<DeviceBuffer> device_value = DeviceBuffer::Allocate(sizeof(int));
  ASSERT_TRUE(device_value.ok()) << device_value.status();

  // The first stream writes, the second copies out after waiting on it.
  ASSERT_EQ(cudaMemsetAsync(device_value->get(), 0x2A, sizeof(int), first->get()), cudaSuccess);
  ASSERT_TRUE(first->Record(*event).ok());
  ASSERT_TRUE(second->Wait(*event).ok());
  int host_value = 0;
  ASSERT_EQ(cudaMemcpyAsync(&host_value, device_value->get(), sizeof(int), cudaMemcpyDeviceToHost,
                            second->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(second->get()), cudaSuccess);
  EXPECT_EQ(host_value, 0x2A2A2A2A);
}

TEST_F(CudaHandlesTest, CudnnHandleIsCreatedAndTakesAStream) {
  absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
  ASSERT_TRUE(handle.ok()) << handle.status();
  ASSERT_NE(handle->get(), nullptr);
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_EQ(cudnnSetStream(handle->get(), stream->get()), CUDNN_STATUS_SUCCESS);
  cudaStream_t bound = nullptr;
  ASSERT_EQ(cudnnGetStream(handle->get(), &bound), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bound, stream->get());

  // Moving transfers ownership: exactly one owner destroys the handle.
  const cudnnHandle_t raw = handle->get();
  CudnnHandle moved = std::move(*handle);
  EXPECT_EQ(moved.get(), raw);
  EXPECT_EQ(handle->get(), nullptr);  // NOLINT(bugprone-use-after-move): checked on purpose
}

// Note [Pooled cuDNN handles]: a released handle is the next one Create
// gives on its device, bound to the default stream again; two handles
// alive at once are never the same.
TEST_F(CudaHandlesTest, AReleasedCudnnHandleIsReusedOnTheDefaultStream) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  cudnnHandle_t released = nullptr;
  {
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
    ASSERT_TRUE(handle.ok()) << handle.status();
    ASSERT_EQ(cudnnSetStream(handle->get(), stream->get()), CUDNN_STATUS_SUCCESS);
    released = handle->get();
  }  // the handle goes back to the pool, then its stream is destroyed
  const size_t pooled = CudnnHandle::PooledOnCurrentDevice();
  ASSERT_GE(pooled, 1u);
  absl::StatusOr<CudnnHandle> again = CudnnHandle::Create();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->get(), released);
  EXPECT_EQ(CudnnHandle::PooledOnCurrentDevice(), pooled - 1);
  cudaStream_t bound = reinterpret_cast<cudaStream_t>(1);
  ASSERT_EQ(cudnnGetStream(again->get(), &bound), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bound, nullptr);
  absl::StatusOr<CudnnHandle> other = CudnnHandle::Create();
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->get(), again->get());
}

TEST_F(CudaHandlesTest, ImpossibleAllocationIsResourceExhausted) {
  absl::StatusOr<DeviceBuffer> huge = DeviceBuffer::Allocate(size_t{1} << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  // The process stays usable afterwards.
  EXPECT_TRUE(DeviceBuffer::Allocate(256).ok());
}

// The wait is set on the devices asked for, their other flags kept, and the
// calling thread keeps its current device (the last one made current first,
// so that on a machine of several GPUs the restore is seen).
TEST_F(CudaHandlesTest, SetGpuWaitSetsTheSchedulingFlagOfEachDevice) {
  std::vector<int> devices;
  for (int device = 0; device < CudaDeviceCount(); ++device) devices.push_back(device);
  ASSERT_EQ(cudaSetDevice(devices.back()), cudaSuccess);
  unsigned int before_flags = 0;
  ASSERT_EQ(cudaGetDeviceFlags(&before_flags), cudaSuccess);
  for (const auto& [wait, flag] : std::vector<std::pair<GpuWait, unsigned int>>{
           {GpuWait::kYield, cudaDeviceScheduleYield},
           {GpuWait::kBlock, cudaDeviceScheduleBlockingSync},
           {GpuWait::kSpin, cudaDeviceScheduleSpin},
           {GpuWait::kAuto, cudaDeviceScheduleAuto}}) {
    ASSERT_TRUE(SetGpuWait(wait, devices).ok());
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, devices.back());
    for (const int device : devices) {
      ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
      unsigned int flags = 0;
      ASSERT_EQ(cudaGetDeviceFlags(&flags), cudaSuccess);
      EXPECT_EQ(flags & cudaDeviceScheduleMask, flag) << "device " << device;
      if (device == devices.back()) {
        EXPECT_EQ(flags & ~cudaDeviceScheduleMask, before_flags & ~cudaDeviceScheduleMask);
      }
    }
    ASSERT_EQ(cudaSetDevice(devices.back()), cudaSuccess);
  }
  const absl::Status missing = SetGpuWait(GpuWait::kYield, {CudaDeviceCount()});
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("setting how threads wait for GPU"), absl::string_view::npos)
      << missing;
}

constexpr std::chrono::milliseconds kWait(100);

// A host thread waiting kWait for an event made by CreateForSleepingWait
// sleeps, even on a device whose threads spin; waiting for a plain event
// there, it holds its core the whole time (the control that shows the
// measurement can tell the two apart).
TEST_F(CudaHandlesTest, ASleepingWaitUsesNoCpuWhereASpinningOneHoldsTheCore) {
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const SpinningDevice0 spinning;
  ASSERT_TRUE(spinning.status().ok()) << spinning.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  for (const bool sleeping : {false, true}) {
    absl::StatusOr<CudaEvent> done =
        sleeping ? CudaEvent::CreateForSleepingWait() : CudaEvent::Create();
    ASSERT_TRUE(done.ok()) << done.status();
    // The stream holds the event back for kWait: a host function that sleeps.
    ASSERT_EQ(cudaLaunchHostFunc(
                  stream->get(), [](void*) { std::this_thread::sleep_for(kWait); }, nullptr),
              cudaSuccess);
    ASSERT_TRUE(stream->Record(*done).ok());
    const std::chrono::nanoseconds cpu_before = ThreadCpuTime();
    ASSERT_EQ(cudaEventSynchronize(done->get()), cudaSuccess);
    const std::chrono::nanoseconds cpu = ThreadCpuTime() - cpu_before;
    if (sleeping) {
      EXPECT_LT(cpu, kWait / 4) << "a sleeping wait used the CPU";
    } else {
      EXPECT_GT(cpu, kWait / 2) << "a spinning wait slept: the measurement cannot tell";
    }
  }
}

// Runs with or without a device: the count is either a number both functions
// agree on, or an error that names the call while CudaDeviceCount falls back
// to 0.
TEST(CudaDeviceCountTest, ErrorIsReportedOrAgreesWithCount) {
  const absl::StatusOr<int> count = CudaDeviceCountOrError();
  if (count.ok()) {
    EXPECT_GE(*count, 0);
    EXPECT_EQ(CudaDeviceCount(), *count);
  } else {
    EXPECT_NE(count.status().message().find("cudaGetDeviceCount"), absl::string_view::npos)
        << count.status();
    EXPECT_EQ(CudaDeviceCount(), 0);
  }
}

// Runs everywhere: without a GPU every ordinal is missing.
TEST(ValidateCudaDeviceTest, RejectsNegativeAndMissingOrdinals) {
  EXPECT_EQ(ValidateCudaDevice(-1).code(), absl::StatusCode::kInvalidArgument);
  const absl::Status missing = ValidateCudaDevice(CudaDeviceCount());
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.message().find("the driver sees"), absl::string_view::npos) << missing;
}

TEST_F(CudaHandlesTest, ValidOrdinalsPass) {
  EXPECT_TRUE(ValidateCudaDevice(0).ok());
  EXPECT_TRUE(ValidateCudaDevice(CudaDeviceCount() - 1).ok());
}

}  // namespace
}  // namespace graphserve
