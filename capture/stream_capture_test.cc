// GPU tests of capture and memcpy-node post-processing; they skip without a
// GPU.
#include "capture/stream_capture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "capture/graph_post_processing.h"
#include "common/capture_exclusion.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kBatch = 8;
constexpr size_t kRowBytes = 4 * sizeof(float);  // four float32 features per row
constexpr size_t kBytes = kBatch * kRowBytes;

class StreamCaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
    stream_ = *CudaStream::Create();
    other_stream_ = *CudaStream::Create();
    input_staging_ = *PinnedHostBuffer::Allocate(kBytes);
    output_staging_ = *PinnedHostBuffer::Allocate(kBytes);
    stray_host_ = *PinnedHostBuffer::Allocate(kBytes);
    device_in_ = *DeviceBuffer::Allocate(kBytes);
    device_out_ = *DeviceBuffer::Allocate(kBytes);
  }

  TransferRegistry Registry() const {
    TransferRegistry registry;
    registry.input_staging = {{"x", input_staging_.get(), kBytes}};
    registry.output_staging = {{"y", output_staging_.get(), kBytes}};
    registry.batch_size = kBatch;
    return registry;
  }

  // A model run in miniature: input copy, device work (a device-to-device
  // copy), output copy.
  absl::Status ModelRun(cudaStream_t stream) const {
    if (cudaMemcpyAsync(device_in_.get(), input_staging_.get(), kBytes, cudaMemcpyHostToDevice,
                        stream) != cudaSuccess ||
        cudaMemcpyAsync(device_out_.get(), device_in_.get(), kBytes, cudaMemcpyDeviceToDevice,
                        stream) != cudaSuccess ||
        cudaMemcpyAsync(output_staging_.get(), device_out_.get(), kBytes, cudaMemcpyDeviceToHost,
                        stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync failed");
    }
    return absl::OkStatus();
  }

  CudaStream stream_;
  CudaStream other_stream_;
  PinnedHostBuffer input_staging_;
  PinnedHostBuffer output_staging_;
  PinnedHostBuffer stray_host_;
  DeviceBuffer device_in_;
  DeviceBuffer device_out_;
};

TEST_F(StreamCaptureTest, RefusesTheDefaultStream) {
  absl::StatusOr<StreamCapture> capture = StreamCapture::Begin(nullptr, "slot 0, batch 8");
  ASSERT_FALSE(capture.ok());
  EXPECT_THAT(std::string(capture.status().message()), HasSubstr("default stream"));
  EXPECT_THAT(std::string(capture.status().message()), HasSubstr("slot 0, batch 8"));
}

TEST_F(StreamCaptureTest, MustEndOnTheStreamItBeganOn) {
  absl::StatusOr<StreamCapture> capture = StreamCapture::Begin(stream_.get(), "test");
  ASSERT_TRUE(capture.ok()) << capture.status();
  absl::StatusOr<CudaGraph> wrong = capture->End(other_stream_.get());
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(capture->capturing());
  ASSERT_TRUE(ModelRun(stream_.get()).ok());
  absl::StatusOr<CudaGraph> graph = capture->End(stream_.get());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(*GraphNodeCount(graph->get()), 3u);
}

// Note [Captures and device-wide synchronisation]: from Begin() to its end,
// ended or discarded, a capture holds its device's lock; a capture on
// another thread shares it.
TEST_F(StreamCaptureTest, HoldsItsDevicesCaptureLockUntilItEnds) {
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  {
    absl::StatusOr<StreamCapture> capture = StreamCapture::Begin(stream_.get(), "test");
    ASSERT_TRUE(capture.ok()) << capture.status();
    EXPECT_EQ(CapturesInProgress(device), 1);
    absl::Status beside_status = absl::UnknownError("not run");
    std::thread beside([&] {
      beside_status = CudaErrorToStatus(cudaSetDevice(device), "cudaSetDevice");
      if (!beside_status.ok()) return;
      absl::StatusOr<StreamCapture> other = StreamCapture::Begin(other_stream_.get(), "beside");
      beside_status = other.ok() ? ModelRun(other_stream_.get()) : other.status();
      if (beside_status.ok() && CapturesInProgress(device) != 2) {
        beside_status = absl::InternalError("the two captures do not share the lock");
      }
      if (beside_status.ok()) beside_status = other->End(other_stream_.get()).status();
    });
    beside.join();
    EXPECT_TRUE(beside_status.ok()) << beside_status;
    ASSERT_TRUE(ModelRun(stream_.get()).ok());
    ASSERT_TRUE(capture->End(stream_.get()).ok());
    EXPECT_EQ(CapturesInProgress(device), 0);
    // Discarded, not ended: released all the same.
    absl::StatusOr<StreamCapture> discarded = StreamCapture::Begin(stream_.get(), "discarded");
    ASSERT_TRUE(discarded.ok()) << discarded.status();
    EXPECT_EQ(CapturesInProgress(device), 1);
  }
  EXPECT_EQ(CapturesInProgress(device), 0);
}

// The hazard itself: memory freed on another thread while this one captures.
// cudaFree synchronises the device and, unheld, invalidates the capture;
// through DeviceBuffer it waits for the capture to end, and both succeed.
TEST_F(StreamCaptureTest, AFreeOnAnotherThreadWaitsForTheCaptureToEnd) {
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  absl::StatusOr<DeviceBuffer> doomed = DeviceBuffer::Allocate(1 << 20);
  ASSERT_TRUE(doomed.ok()) << doomed.status();
  absl::StatusOr<StreamCapture> capture = StreamCapture::Begin(stream_.get(), "test");
  ASSERT_TRUE(capture.ok()) << capture.status();
  absl::Notification started;
  absl::Notification freed;
  std::thread beside([&] {
    if (cudaSetDevice(device) != cudaSuccess) return;
    started.Notify();
    *doomed = DeviceBuffer();  // cudaFree
    freed.Notify();
  });
  started.WaitForNotification();
  // The free waits as long as the capture lasts.
  EXPECT_FALSE(freed.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  ASSERT_TRUE(ModelRun(stream_.get()).ok());
  absl::StatusOr<CudaGraph> graph = capture->End(stream_.get());
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(*GraphNodeCount(graph->get()), 3u);
  beside.join();
  EXPECT_TRUE(freed.HasBeenNotified());
  EXPECT_EQ(doomed->get(), nullptr);
}

// A thread that holds captures off may free its own memory: the deleter's
// hold is skipped rather than taken twice.
TEST_F(StreamCaptureTest, AFreeInsideHeldOffCapturesDoesNotWaitForItself) {
  const CapturesHeldOff held_off;
  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(1 << 20);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  *buffer = DeviceBuffer();
  EXPECT_EQ(buffer->get(), nullptr);
}

TEST_F(StreamCaptureTest, FailedCaptureNamesTheCallAndLeavesTheProcessUsable) {
  // cudaMalloc is not allowed while this thread captures: it invalidates the
  // capture.
  const Workload allocating = [](cudaStream_t) -> absl::Status {
    void* ptr = nullptr;
    const cudaError_t error = cudaMalloc(&ptr, 1024);
    if (error == cudaSuccess) {
      cudaFree(ptr);
      return absl::OkStatus();
    }
    return absl::InternalError(absl::StrCat("cudaMalloc failed: ", cudaGetErrorName(error)));
  };
  // The warm-up run allocates fine; the captured one does not.
  absl::StatusOr<CudaGraph> graph = CaptureWorkload(stream_.get(), "slot 3, batch 64", allocating);
  ASSERT_FALSE(graph.ok());
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("slot 3, batch 64"));
  EXPECT_THAT(std::string(graph.status().message()), HasSubstr("cudaMalloc"));

  // No capture left open, no error left behind: the next capture works.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(stream_.get(), &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  absl::StatusOr<CudaGraph> next = CaptureWorkload(
      stream_.get(), "after", [this](cudaStream_t stream) { return ModelRun(stream); });
  ASSERT_TRUE(next.ok()) << next.status();
}

// Lazily created state (here one cudaMalloc on the first run, which a
// capture refuses): without a warm-up the capture fails, is retried after
// one, and succeeds; work already warm is captured without running it.
TEST_F(StreamCaptureTest, WarmsUpOnlyWhenACaptureWithoutOneFails) {
  int eager_runs = 0;
  bool initialized = false;
  const Workload lazy = [&](cudaStream_t stream) -> absl::Status {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    CUDA_RETURN_IF_ERROR(cudaStreamIsCapturing(stream, &capturing));
    if (capturing == cudaStreamCaptureStatusNone) ++eager_runs;
    if (!initialized) {
      void* ptr = nullptr;
      CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, 1024));
      CUDA_RETURN_IF_ERROR(cudaFree(ptr));
      initialized = true;
    }
    return ModelRun(stream);
  };
  absl::StatusOr<CudaGraph> graph =
      CaptureWorkload(stream_.get(), "cold", lazy, WarmUp::kIfCaptureFails);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(eager_runs, 1);
  EXPECT_EQ(*GraphNodeCount(graph->get()), 3u);

  absl::StatusOr<CudaGraph> warm =
      CaptureWorkload(stream_.get(), "warm", lazy, WarmUp::kIfCaptureFails);
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_EQ(eager_runs, 1);  // captured without a run
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(StreamCaptureTest, PostProcessingTurnsCopiesIntoMappingsAndReplays) {
  absl::StatusOr<CudaGraph> graph = CaptureWorkload(
      stream_.get(), "test", [this](cudaStream_t stream) { return ModelRun(stream); });
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<TransferPlan> plan = PostProcessMemcpyNodes(graph->get(), Registry());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->inputs.size(), 1u);
  ASSERT_EQ(plan->outputs.size(), 1u);
  EXPECT_EQ(plan->inputs[0].device_dst, device_in_.get());
  EXPECT_EQ(plan->inputs[0].bytes_per_row, kRowBytes);
  EXPECT_EQ(plan->outputs[0].device_src, device_out_.get());
  EXPECT_EQ(plan->device_copies, 1);
  EXPECT_EQ(*GraphNodeCount(graph->get()), 1u);  // only the device work stays

  // Replay 3 of 8 rows through the mappings: exactly those rows come back.
  constexpr int64_t kRows = 3;
  auto* in = static_cast<float*>(input_staging_.get());
  auto* out = static_cast<float*>(output_staging_.get());
  std::iota(in, in + kBatch * 4, 1.0f);
  std::fill(out, out + kBatch * 4, -1.0f);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph->get(), 0), cudaSuccess);
  CudaGraphExec owned(exec);
  ASSERT_EQ(cudaMemcpyAsync(plan->inputs[0].device_dst, plan->inputs[0].host_src,
                            kRows * kRowBytes, cudaMemcpyHostToDevice, stream_.get()),
            cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream_.get()), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(plan->outputs[0].host_dst, plan->outputs[0].device_src,
                            kRows * kRowBytes, cudaMemcpyDeviceToHost, stream_.get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
  for (int64_t i = 0; i < kRows * 4; ++i) EXPECT_EQ(out[i], in[i]) << i;
  for (int64_t i = kRows * 4; i < kBatch * 4; ++i) EXPECT_EQ(out[i], -1.0f) << i;
}

TEST_F(StreamCaptureTest, PlantedStrayHostToDeviceCopyIsRejected) {
  const Workload stray = [this](cudaStream_t stream) -> absl::Status {
    RETURN_IF_ERROR(ModelRun(stream));
    // Reads host memory nobody registered.
    if (cudaMemcpyAsync(device_in_.get(), stray_host_.get(), kBytes, cudaMemcpyHostToDevice,
                        stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync failed");
    }
    return absl::OkStatus();
  };
  absl::StatusOr<CudaGraph> graph = CaptureWorkload(stream_.get(), "stray", stray);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const size_t nodes = *GraphNodeCount(graph->get());
  absl::StatusOr<TransferPlan> plan = PostProcessMemcpyNodes(graph->get(), Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("(memcpy host-to-device"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("neither a registered input"));
  EXPECT_EQ(*GraphNodeCount(graph->get()), nodes);  // a rejected graph is left as it was
}

TEST_F(StreamCaptureTest, PlantedStrayDeviceToHostCopyIsRejected) {
  const Workload stray = [this](cudaStream_t stream) -> absl::Status {
    RETURN_IF_ERROR(ModelRun(stream));
    if (cudaMemcpyAsync(stray_host_.get(), device_out_.get(), kBytes, cudaMemcpyDeviceToHost,
                        stream) != cudaSuccess) {
      return absl::InternalError("cudaMemcpyAsync failed");
    }
    return absl::OkStatus();
  };
  absl::StatusOr<CudaGraph> graph = CaptureWorkload(stream_.get(), "stray", stray);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<TransferPlan> plan = PostProcessMemcpyNodes(graph->get(), Registry());
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("memcpy device-to-host"));
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr("not a registered output"));
}

}  // namespace
}  // namespace graphserve
