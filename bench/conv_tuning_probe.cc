// Where a convolution's plan time goes (bench/results: the CNNs' load time),
// and what the tuning budget (Note [Convolution tuning budget],
// runtime/cuda/cudnn_conv.h) saves and costs. For convolutions of the shapes
// MobileNetV2, EfficientNet-B0 and ResNet-50 run, at the sizes a graph set
// plans them in (32, 16, 8, 1: largest first), prints
//  1. the budget as a model's set-up runs it (one shape's timings shared by
//     its sizes): time in heuristics, builds, screening and timing, how many
//     candidates ran, were skipped or ruled out, the choice and its speed;
//  2. the reference (every one of the first candidates timed, as before the
//     budget): its time, its choice and that choice's speed, measured the
//     same way right after;
//  3. each candidate's runs under the budget.
// Runs on a GPU machine; no arguments. Exits 1 when a tuning fails.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/cuda_handles.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

struct Shape {
  const char* name;
  int64_t channels_in, channels_out, groups, size, kernel, stride;
};

// A graph set plans its sizes largest first (capture/graph_set.cc).
constexpr int64_t kBatches[] = {32, 16, 8, 1};

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

// Operands of one size (zeros: only the time matters, not the values).
struct Operands {
  DeviceBuffer x, w, y;
};

absl::StatusOr<Operands> MakeOperands(const ConvParams& p, cudaStream_t stream) {
  Operands o;
  const int64_t x_count = p.batch * p.in_channels * p.in_h * p.in_w;
  const int64_t w_count = p.out_channels * (p.in_channels / p.groups) * p.kernel_h * p.kernel_w;
  const int64_t y_count = p.batch * p.out_channels * p.out_h * p.out_w;
  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(x_count * sizeof(float));
  if (!x.ok()) return x.status();
  absl::StatusOr<DeviceBuffer> w = DeviceBuffer::Allocate(w_count * sizeof(float));
  if (!w.ok()) return w.status();
  absl::StatusOr<DeviceBuffer> y = DeviceBuffer::Allocate(y_count * sizeof(float));
  if (!y.ok()) return y.status();
  o.x = *std::move(x);
  o.w = *std::move(w);
  o.y = *std::move(y);
  cudaMemsetAsync(o.x.get(), 0, o.x.bytes(), stream);
  cudaMemsetAsync(o.w.get(), 0, o.w.bytes(), stream);
  if (cudaStreamSynchronize(stream) != cudaSuccess) {
    return absl::InternalError("zeroing the operands failed");
  }
  return o;
}

// Mean microseconds of the chosen plan's Enqueue over kRuns back-to-back
// runs after a warm-up, as a captured graph would run it (own workspace).
absl::StatusOr<double> ChosenUs(const CudnnConv& conv, const Operands& o, cudaStream_t stream) {
  constexpr int kWarmup = 3;
  constexpr int kRuns = 20;
  absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate(conv.workspace_bytes());
  if (!workspace.ok()) return workspace.status();
  absl::StatusOr<CudaEvent> start = CudaEvent::Create(/*timing=*/true);
  absl::StatusOr<CudaEvent> stop = CudaEvent::Create(/*timing=*/true);
  if (!start.ok() || !stop.ok()) return absl::InternalError("no timing events");
  const auto run = [&]() {
    return conv.Enqueue(static_cast<const float*>(o.x.get()), static_cast<const float*>(o.w.get()),
                        static_cast<float*>(o.y.get()), workspace->get(), stream);
  };
  for (int i = 0; i < kWarmup; ++i) {
    if (absl::Status s = run(); !s.ok()) return s;
  }
  cudaEventRecord(start->get(), stream);
  for (int i = 0; i < kRuns; ++i) {
    if (absl::Status s = run(); !s.ok()) return s;
  }
  cudaEventRecord(stop->get(), stream);
  if (cudaEventSynchronize(stop->get()) != cudaSuccess) return absl::InternalError("sync");
  float ms = 0;
  cudaEventElapsedTime(&ms, start->get(), stop->get());
  return 1000.0 * ms / kRuns;
}

// One tuning: its stats, choice and the choice's speed.
struct Tuned {
  CudnnConv::TuningStats stats;
  std::string choice;
  double chosen_us = 0;
  double total_ms() const {
    return stats.heuristics_ms + stats.build_ms + stats.screening_ms + stats.timing_ms;
  }
};

absl::StatusOr<Tuned> Tune(cudnnHandle_t handle, const ConvParams& p, const Operands& o,
                           cudaStream_t stream, bool budget, ConvSlowdowns* slowdowns) {
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
      CudnnConv::CreateUnplanned(handle, p, /*allow_tf32=*/false);
  if (!conv.ok()) return conv.status();
  Tuned tuned;
  CudnnConv::TuningOptions options;
  options.budget = budget;
  options.slowdowns = slowdowns;
  options.stats = &tuned.stats;
  absl::Status status = (*conv)->ChooseFastestAlgorithm(
      static_cast<const float*>(o.x.get()), static_cast<const float*>(o.w.get()),
      static_cast<float*>(o.y.get()), stream, options);
  if (!status.ok()) return status;
  tuned.choice = (*conv)->choice();
  absl::StatusOr<double> us = ChosenUs(**conv, o, stream);
  if (!us.ok()) return us.status();
  tuned.chosen_us = *us;
  return tuned;
}

std::string Ms(float ms) { return ms < 0 ? "-" : absl::StrFormat("%.3f", ms); }

int Run() {
  if (CudaDeviceCount() == 0) {
    std::fprintf(stderr, "conv_tuning_probe: no CUDA device\n");
    return 1;
  }
  const std::vector<Shape> shapes = {
      {"mobilenet dw 3x3 s1 32@112", 32, 32, 32, 112, 3, 1},
      {"mobilenet dw 3x3 s2 96@112", 96, 96, 96, 112, 3, 2},
      {"mobilenet dw 3x3 s1 576@14", 576, 576, 576, 14, 3, 1},
      {"mobilenet dw 3x3 s1 960@7", 960, 960, 960, 7, 3, 1},
      {"efficientnet dw 5x5 s2 240@28", 240, 240, 240, 28, 5, 2},
      {"efficientnet dw 5x5 s1 672@14", 672, 672, 672, 14, 5, 1},
      {"efficientnet se 1x1 96->4@1", 96, 4, 1, 1, 1, 1},
      {"mobilenet pw 1x1 96->24@56", 96, 24, 1, 56, 1, 1},
      {"resnet 3x3 64@56", 64, 64, 1, 56, 3, 1},
      {"resnet 3x3 s2 256@28", 256, 256, 1, 28, 3, 2},
  };
  absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!handle.ok() || !stream.ok()) {
    std::fprintf(stderr, "conv_tuning_probe: no cuDNN handle or stream\n");
    return 1;
  }
  std::printf(
      "Budget: a shape's sizes tuned in turn, sharing their timings (as a model's set-up does); "
      "reference: every one of the first %d candidates run twice, two rounds (as before the "
      "budget), right after. chosen us: the choice's mean Enqueue time over 20 runs. ms: "
      "heuristics + builds + screening + timing.\n\n",
      kMaxTimedCandidates);
  std::printf(
      "| shape | batch | screened at | built | skipped | first-run outs | retimed | heuristics ms "
      "| "
      "build ms | screening ms | timing ms | budget ms | chosen | chosen us | reference ms | "
      "reference chosen | reference chosen us | chosen us / reference |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | "
      "---: | ---: | --- | ---: | ---: |\n");
  int failures = 0;
  double budget_total = 0, reference_total = 0, worst_ratio = 0;
  std::string details;
  for (const Shape& shape : shapes) {
    ConvSlowdowns slowdowns;  // the shape's timings, shared by its sizes
    for (const int64_t batch : kBatches) {
      const ConvParams p = ParamsOf(shape, batch);
      absl::StatusOr<Operands> operands = MakeOperands(p, stream->get());
      absl::StatusOr<Tuned> budget =
          operands.ok()
              ? Tune(handle->get(), p, *operands, stream->get(), /*budget=*/true, &slowdowns)
              : absl::StatusOr<Tuned>(operands.status());
      absl::StatusOr<Tuned> reference =
          budget.ok() ? Tune(handle->get(), p, *operands, stream->get(), /*budget=*/false, nullptr)
                      : budget;
      if (!reference.ok()) {
        ++failures;
        std::printf("| %s | %lld | error: %s |\n", shape.name, static_cast<long long>(batch),
                    std::string(reference.status().message()).c_str());
        continue;
      }
      const CudnnConv::TuningStats& s = budget->stats;
      const double ratio = budget->chosen_us / std::max(reference->chosen_us, 1e-3);
      worst_ratio = std::max(worst_ratio, ratio);
      budget_total += budget->total_ms();
      reference_total += reference->total_ms();
      std::printf(
          "| %s | %lld | %lld | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %.1f | "
          "%.1f | %s | %.1f | %.2f |\n",
          shape.name, static_cast<long long>(batch), static_cast<long long>(s.screening_batch),
          s.built, s.skipped, s.first_run_outs, s.retimed, s.heuristics_ms, s.build_ms,
          s.screening_ms, s.timing_ms, budget->total_ms(), budget->choice.c_str(),
          budget->chosen_us, reference->total_ms(), reference->choice.c_str(), reference->chosen_us,
          ratio);
      std::fflush(stdout);  // rows survive a time limit that kills the probe
      for (const CudnnConv::CandidateTiming& c : s.candidates) {
        absl::StrAppend(&details, "| ", shape.name, " | ", batch, " | ", c.batch, " | ", c.name,
                        " | ", Ms(c.first_run_ms), " | ", Ms(c.run_ms), " | ", Ms(c.retimed_ms),
                        " | ", c.failed ? "failed" : "", " |\n");
      }
    }
  }
  std::printf(
      "\nconv_tuning_probe: budget %.1f ms, reference %.1f ms over %zu shapes x %zu sizes; chosen "
      "plans' speed, budget / reference: worst %.2f\n",
      budget_total, reference_total, shapes.size(), std::size(kBatches), worst_ratio);
  std::printf(
      "\nCandidates under the budget (ms; run: round one's timed run, - = ruled out by its first "
      "run; retimed: round two's mean):\n\n"
      "| shape | batch | ran at batch | configuration | first run | run | retimed | |\n"
      "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |\n%s",
      details.c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphserve

int main() { return graphserve::Run(); }
