// The serving core at saturation without the RPC transport: a model of a
// repository loaded as the server loads it (ServedModel: validation, the row
// queue and dynamic batching, stream slots, graph replays, responses built)
// and driven in-process by submitter threads that keep a fixed number of
// batch-1 requests outstanding, as perf's concurrency does over gRPC.
//
//   core_bench --model-repository DIR --model mlp [--graphs on|off]
//              [--outstanding 64] [--threads 8] [--milliseconds 2000]
//
// Prints the measured window, then, last, the summary line: requests/s,
// executions/s and rows per execution (from the model's statistics), latency
// p50/p99. serve_bench.sh runs it beside the gRPC saturation runs on the same
// repositories: where the two differ, the RPC path is the ceiling, not the
// serving core. The window line, "measured window (steady clock us): START
// END", gives steady_clock's microseconds since its epoch (CLOCK_MONOTONIC
// under libstdc++ on Linux), so that bench/nvml_sampler.py can take the GPU's
// busy time over the measured seconds alone, without the model loading and
// warm-up before them.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "common/command_line.h"
#include "common/mutex_checks.h"
#include "common/statistics.h"
#include "common/status.h"
#include "proto/grpc_service.pb.h"
#include "server/model_repository.h"
#include "server/served_model.h"

namespace graphserve {
namespace {

using Clock = std::chrono::steady_clock;

// A batch-1 request for every input of `model` (FP32 only: the demo models).
absl::StatusOr<inference::ModelInferRequest> BatchOneRequest(const ServedModel& model) {
  inference::ModelInferRequest request;
  request.set_model_name(model.name());
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const TensorSpec& spec : model.interface().inputs) {
    if (spec.dtype != DType::kFloat32) {
      return absl::UnimplementedError(
          absl::StrCat("core_bench feeds FP32 inputs only; input ", spec.name, " is not"));
    }
    inference::ModelInferRequest::InferInputTensor* input = request.add_inputs();
    input->set_name(spec.name);
    input->set_datatype("FP32");
    input->add_shape(1);
    int64_t elements = 1;
    for (int64_t dim : spec.dims) {
      input->add_shape(dim);
      elements *= dim;
    }
    std::vector<float> values(static_cast<size_t>(elements));
    for (float& value : values) value = uniform(random);
    request.add_raw_input_contents(values.data(), values.size() * sizeof(float));
  }
  return request;
}

// One outstanding request of a submitter thread.
struct InFlight {
  inference::ModelInferResponse response;
  Clock::time_point sent;
  std::atomic<bool> done{true};
  std::atomic<bool> failed{false};
};

int Run(int argc, char** argv) {
  std::string repository, model_name, graphs = "on", executor = "cuda";
  int64_t outstanding = 64, threads = 8, milliseconds = 2000;
  CommandLine flags(
      "core_bench --model-repository DIR --model NAME [--graphs on|off] [--outstanding 64]\n"
      "           [--threads 8] [--milliseconds 2000]\n\n"
      "The serving core (ServedModel) at saturation with batch-1 requests, no gRPC.");
  flags.AddString("model-repository", &repository, "The model repository (required).");
  flags.AddString("model", &model_name, "The model to load and drive (required).");
  flags.AddString("graphs", &graphs, "on: CUDA graph replays; off: the same plans eagerly.");
  flags.AddString("executor", &executor, "cuda, or host (the reference executor; a smoke test).");
  flags.AddInt("outstanding", &outstanding, "Requests kept in flight.");
  flags.AddInt("threads", &threads, "Submitter threads; the outstanding requests split over them.");
  flags.AddInt("milliseconds", &milliseconds, "Measured time, after 0.5 s of warm-up.");
  const auto fail = [](const absl::Status& status) {
    std::cerr << "core_bench: " << status << "\n";
    return 1;
  };
  if (absl::Status status = flags.Parse(argc, argv); !status.ok()) return fail(status);
  if (flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (repository.empty() || model_name.empty() || threads < 1 || outstanding < threads ||
      milliseconds < 1) {
    return fail(absl::InvalidArgumentError(
        "--model-repository and --model are required, --outstanding >= --threads >= 1 and "
        "--milliseconds >= 1"));
  }

  absl::StatusOr<std::vector<RepositoryModel>> scanned = ScanModelRepository(repository);
  if (!scanned.ok()) return fail(scanned.status());
  const auto entry = std::find_if(scanned->begin(), scanned->end(),
                                  [&](const RepositoryModel& m) { return m.name == model_name; });
  if (entry == scanned->end() || entry->versions.empty()) {
    return fail(absl::NotFoundError(absl::StrCat("no model ", model_name, " in ", repository)));
  }
  ServedModelOptions options;
  options.graphs = graphs == "on";
  options.executor = executor == "host" ? ExecutorKind::kHost : ExecutorKind::kCuda;
  // Submitters stand for many RPC threads; one that ran a chunk itself would
  // stop sending its other requests meanwhile. At saturation the slots are
  // busy and the workers run every chunk anyway.
  options.run_on_rpc_thread = false;
  absl::StatusOr<std::unique_ptr<ServedModel>> model =
      ServedModel::Load(*entry, entry->versions.back(), options);
  if (!model.ok()) return fail(model.status());
  absl::StatusOr<inference::ModelInferRequest> request = BatchOneRequest(**model);
  if (!request.ok()) return fail(request.status());

  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<int64_t> completed{0}, failures{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::vector<std::thread> submitters;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t mine = outstanding / threads + (t < outstanding % threads ? 1 : 0);
    submitters.emplace_back([&, t, mine] {
      std::vector<std::unique_ptr<InFlight>> slots;
      for (int64_t i = 0; i < mine; ++i) slots.push_back(std::make_unique<InFlight>());
      while (!stop.load(std::memory_order_relaxed)) {
        for (const std::unique_ptr<InFlight>& slot : slots) {
          if (!slot->done.load(std::memory_order_acquire)) continue;
          if (slot->sent != Clock::time_point{}) {
            if (slot->failed.load()) failures.fetch_add(1);
            if (measuring.load(std::memory_order_relaxed)) {
              completed.fetch_add(1, std::memory_order_relaxed);
              latencies[static_cast<size_t>(t)].push_back(
                  std::chrono::duration<double, std::micro>(Clock::now() - slot->sent).count());
            }
          }
          slot->done.store(false, std::memory_order_relaxed);
          slot->sent = Clock::now();
          InFlight* in_flight = slot.get();
          (*model)->Infer(&*request, &in_flight->response,
                          [in_flight](const absl::Status& status) {
                            in_flight->failed.store(!status.ok());
                            in_flight->done.store(true, std::memory_order_release);
                          });
        }
        std::this_thread::yield();
      }
      // Let every request this thread sent finish before its slots go.
      for (const std::unique_ptr<InFlight>& slot : slots) {
        while (!slot->done.load(std::memory_order_acquire)) std::this_thread::yield();
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  inference::ModelStatistics before;
  (*model)->FillStatistics(&before);
  measuring = true;
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
  measuring = false;
  const Clock::time_point end = Clock::now();
  const double elapsed = std::chrono::duration<double>(end - start).count();
  inference::ModelStatistics after;
  (*model)->FillStatistics(&after);
  stop = true;
  for (std::thread& submitter : submitters) submitter.join();

  std::vector<double> all;
  for (const std::vector<double>& mine : latencies) all.insert(all.end(), mine.begin(), mine.end());
  std::sort(all.begin(), all.end());
  const auto percentile = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  const double executions =
      static_cast<double>(after.execution_count() - before.execution_count());
  const double inferences =
      static_cast<double>(after.inference_count() - before.inference_count());
  const auto since_epoch_us = [](Clock::time_point t) -> int64_t {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  };
  std::cout << absl::StrFormat("measured window (steady clock us): %d %d\n",
                               since_epoch_us(start), since_epoch_us(end));
  std::cout << absl::StrFormat(
      "core_bench %s graphs %s, %d outstanding on %d threads: %.0f infer/s, %.0f executions/s "
      "(%.2f rows per execution), latency p50 %.0f us p99 %.0f us, %d failed\n",
      model_name, graphs, outstanding, threads, static_cast<double>(completed.load()) / elapsed,
      executions / elapsed, executions > 0 ? inferences / executions : 0.0, percentile(0.5),
      percentile(0.99), failures.load());
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) {
  graphserve::TurnOffMutexDeadlockDetection();  // Note [Abseil's deadlock detection]
  return graphserve::Run(argc, argv);
}
