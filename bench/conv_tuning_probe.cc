// Where a convolution's plan time goes (bench/results: the CNNs' load time).
// For convolutions of the shapes MobileNetV2, EfficientNet-B0 and ResNet-50
// run, prints how long CudnnConv::ChooseFastestAlgorithm spent in the
// heuristics query, in building the candidates' plans and in timing them, and
// which configuration won. Runs on a GPU machine; no arguments.

#include <cstdio>
#include <string>
#include <vector>

#include "common/cuda_handles.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

struct Shape {
  const char* name;
  int64_t channels_in, channels_out, groups, size, kernel, stride;
};

ConvParams ParamsOf(const Shape& s, int64_t batch) {
  ConvParams p;
  p.batch = batch;
  p.in_channels = s.channels_in;
  p.out_channels = s.channels_out;
  p.groups = s.groups;
  p.in_h = p.in_w = s.size;
  p.kernel_h = p.kernel_w = s.kernel;
  p.stride_h = p.stride_w = s.stride;
  p.pad_h = p.pad_w = s.kernel / 2;
  p.out_h = p.out_w = (s.size + 2 * p.pad_h - s.kernel) / s.stride + 1;
  return p;
}

int Run() {
  if (CudaDeviceCount() == 0) {
    std::fprintf(stderr, "conv_tuning_probe: no CUDA device\n");
    return 1;
  }
  const std::vector<Shape> shapes = {
      {"mobilenet dw 3x3 s1 32@112", 32, 32, 32, 112, 3, 1},
      {"mobilenet dw 3x3 s2 96@112", 96, 96, 96, 112, 3, 2},
      {"mobilenet dw 3x3 s1 576@14", 576, 576, 576, 14, 3, 1},
      {"efficientnet dw 5x5 s2 240@28", 240, 240, 240, 28, 5, 2},
      {"mobilenet pw 1x1 96->24@56", 96, 24, 1, 56, 1, 1},
      {"resnet 3x3 64@56", 64, 64, 1, 56, 3, 1},
      {"resnet 3x3 s2 256@14", 256, 256, 1, 28, 3, 2},
  };
  absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!handle.ok() || !stream.ok()) {
    std::fprintf(stderr, "conv_tuning_probe: no cuDNN handle or stream\n");
    return 1;
  }
  std::printf("| shape | batch | proposed | built | heuristics ms | build ms | timing ms | chosen |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  int failures = 0;
  for (const Shape& shape : shapes) {
    for (const int64_t batch : {1, 8}) {
      const ConvParams p = ParamsOf(shape, batch);
      const int64_t x_count = p.batch * p.in_channels * p.in_h * p.in_w;
      const int64_t w_count = p.out_channels * (p.in_channels / p.groups) * p.kernel_h * p.kernel_w;
      const int64_t y_count = p.batch * p.out_channels * p.out_h * p.out_w;
      absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(x_count * sizeof(float));
      absl::StatusOr<DeviceBuffer> w = DeviceBuffer::Allocate(w_count * sizeof(float));
      absl::StatusOr<DeviceBuffer> y = DeviceBuffer::Allocate(y_count * sizeof(float));
      absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
          CudnnConv::Create(handle->get(), p, /*allow_tf32=*/false);
      CudnnConv::TuningStats stats;
      absl::Status status = conv.ok() ? absl::OkStatus() : conv.status();
      if (status.ok() && (!x.ok() || !w.ok() || !y.ok())) status = absl::ResourceExhaustedError("buffers");
      if (status.ok()) {
        // Zeros are fine here: only the time matters, not the values.
        cudaMemsetAsync(x->get(), 0, x->bytes(), stream->get());
        cudaMemsetAsync(w->get(), 0, w->bytes(), stream->get());
        status = (*conv)->ChooseFastestAlgorithm(static_cast<const float*>(x->get()),
                                                 static_cast<const float*>(w->get()),
                                                 static_cast<float*>(y->get()), stream->get(),
                                                 &stats);
      }
      if (!status.ok()) {
        ++failures;
        std::printf("| %s | %lld | error: %s |\n", shape.name, static_cast<long long>(batch),
                    std::string(status.message()).c_str());
        continue;
      }
      std::printf("| %s | %lld | %d | %d | %.1f | %.1f | %.1f | %s |\n", shape.name,
                  static_cast<long long>(batch), stats.proposed, stats.built, stats.heuristics_ms,
                  stats.build_ms, stats.timing_ms, (*conv)->choice().c_str());
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphserve

int main() { return graphserve::Run(); }
