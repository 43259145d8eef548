// The serving core at saturation without the RPC transport: a model of a
// repository loaded as the server loads it (ServedModel: validation, the row
// queue and dynamic batching, stream slots, graph replays, responses built)
// and driven in-process by submitter threads that keep a fixed number of
// batch-1 requests outstanding, as perf's concurrency does over gRPC.
//
//   core_bench --model-repository DIR --model mlp [--graphs on|off]
//              [--outstanding 64] [--threads 8] [--milliseconds 2000]
//              [--lengths lognormal:MEDIAN,SIGMA,MAX[,MULTIPLE]] [--dump DIR]
//
// With --lengths, a model with one shape dim (Note [Shape buckets] in
// server/shape_buckets.h: a sequence length) gets requests of lengths drawn
// from a log-normal mix, as text traffic brings them (most short, a long
// tail), and the summary adds tokens/s and the padded positions of the
// model's buckets against one bucket at the largest length and against the
// best grid of as many buckets for these lengths. --dump writes the first
// requests' inputs and answers as .npy files, for a reference to check.
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
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <optional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/command_line.h"
#include "common/mutex_checks.h"
#include "common/statistics.h"
#include "common/dtype.h"
#include "common/dtype_table.h"
#include "common/status.h"
#include "bench/npy.h"
#include "capture/model_config_writer.h"
#include "proto/grpc_service.pb.h"
#include "server/model_repository.h"
#include "server/served_model.h"

namespace graphserve {
namespace {

using Clock = std::chrono::steady_clock;

// How long each request is (--lengths): log-normal around `median`, at most
// `max`, rounded up to a multiple of `multiple` (tokenizers' pad_to_multiple_of).
struct LengthMix {
  double median = 0;
  double sigma = 0;
  int64_t max = 0;
  int64_t multiple = 1;

  int64_t Draw(std::mt19937& random) const {
    std::normal_distribution<double> normal(0, 1);
    auto length = static_cast<int64_t>(std::ceil(median * std::exp(sigma * normal(random))));
    length = std::clamp<int64_t>(length, 1, max);
    length = (length + multiple - 1) / multiple * multiple;
    return std::min(length, max);
  }
};

absl::StatusOr<LengthMix> ParseLengthMix(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, absl::ByAnyChar(":,"));
  LengthMix mix;
  if (parts.size() < 4 || parts.size() > 5 || parts[0] != "lognormal" ||
      !absl::SimpleAtod(parts[1], &mix.median) || !absl::SimpleAtod(parts[2], &mix.sigma) ||
      !absl::SimpleAtoi(parts[3], &mix.max) ||
      (parts.size() == 5 && !absl::SimpleAtoi(parts[4], &mix.multiple)) || mix.median <= 0 ||
      mix.sigma < 0 || mix.max < 1 || mix.multiple < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lengths '", text, "' should be lognormal:MEDIAN,SIGMA,MAX[,MULTIPLE]"));
  }
  return mix;
}

// A batch-1 request for every input of `model`, each shape dim at `length`
// (an image's height and width alike):
// floats uniform in +-1, integer inputs named like an attention mask 1, like
// token types 0, others (token ids) uniform in [1, 1000).
inference::ModelInferRequest RequestAt(const ServedModel& model, int64_t length,
                                       std::mt19937& random) {
  const ModelInterface& interface = model.interface();
  std::vector<int64_t> extents(interface.shape_dims.size(), length);
  if (!interface.batching) {
    // Note [Models without a batch dim]: dim 0 is a shape dim too, and a
    // request brings one row of it.
    for (const TensorSpec& spec : interface.inputs) {
      if (!spec.shape_dim_of.empty() && spec.shape_dim_of.front() >= 0) {
        extents[spec.shape_dim_of.front()] = 1;
      }
    }
  }
  const ModelInterface at = interface.shape_dims.empty() ? interface : interface.At(extents);
  inference::ModelInferRequest request;
  request.set_model_name(model.name());
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::uniform_int_distribution<int64_t> token(1, 999);
  for (const TensorSpec& spec : at.inputs) {
    inference::ModelInferRequest::InferInputTensor* input = request.add_inputs();
    input->set_name(spec.name);
    input->set_datatype(KServeDatatype(spec.dtype));
    if (interface.batching) input->add_shape(1);
    for (int64_t dim : spec.dims) input->add_shape(dim);
    HostTensor values(spec.dtype, spec.dims);
    VisitDType(spec.dtype, [&](auto tag) {
      using T = typename decltype(tag)::Host;
      T* data = values.data<T>();
      for (int64_t e = 0; e < values.num_elements(); ++e) {
        if constexpr (IsFloatingDType(decltype(tag)::value)) {
          data[e] = static_cast<T>(uniform(random));
        } else if (absl::StrContains(spec.name, "mask")) {
          data[e] = static_cast<T>(1);
        } else if (absl::StrContains(spec.name, "type")) {
          data[e] = static_cast<T>(0);
        } else {
          data[e] = static_cast<T>(token(random));
        }
      }
    });
    request.add_raw_input_contents(values.raw(), values.bytes());
  }
  return request;
}

// Padded positions over executed positions when each of `lengths` runs in
// the smallest of `buckets` (ascending) that holds it.
double PaddedShare(const std::vector<int64_t>& lengths, const std::vector<int64_t>& buckets) {
  double real = 0, executed = 0;
  for (int64_t length : lengths) {
    real += static_cast<double>(length);
    executed += static_cast<double>(*std::lower_bound(buckets.begin(), buckets.end(), length));
  }
  return executed > 0 ? 1 - real / executed : 0;
}

// The grid of `count` buckets, the largest at the longest length, with the
// fewest padded positions for `lengths` (dynamic programming over the sorted
// distinct lengths: each bucket ends at one of them).
std::vector<int64_t> BestGrid(std::vector<int64_t> lengths, size_t count) {
  std::sort(lengths.begin(), lengths.end());
  std::vector<int64_t> ends = lengths;
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  const size_t n = ends.size();
  count = std::min(count, n);
  // below[i]: how many lengths are <= ends[i].
  std::vector<double> below(n);
  for (size_t i = 0; i < n; ++i) {
    below[i] = static_cast<double>(std::upper_bound(lengths.begin(), lengths.end(), ends[i]) -
                                   lengths.begin());
  }
  // cost[k][i]: executed positions of the lengths <= ends[i] with k buckets, the last at ends[i].
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> cost(count + 1, std::vector<double>(n, kNone));
  std::vector<std::vector<size_t>> from(count + 1, std::vector<size_t>(n, 0));
  for (size_t i = 0; i < n; ++i) cost[1][i] = below[i] * static_cast<double>(ends[i]);
  for (size_t k = 2; k <= count; ++k) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < i; ++j) {
        const double c = cost[k - 1][j] + (below[i] - below[j]) * static_cast<double>(ends[i]);
        if (c < cost[k][i]) {
          cost[k][i] = c;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<int64_t> grid;
  for (size_t k = count, i = n - 1; k >= 1; --k) {
    grid.insert(grid.begin(), ends[i]);
    i = from[k][i];
  }
  return grid;
}

// Writes each input and the first output of `request` and `response` as
// DIR/<k>_<name>.npy, batch dim included.
absl::Status DumpExchange(const std::string& dir, int k, const inference::ModelInferRequest& request,
                          const inference::ModelInferResponse& response) {
  const auto write = [&](const std::string& name, const std::string& datatype,
                         const auto& shape, const std::string& bytes) -> absl::Status {
    ASSIGN_OR_RETURN(const DType dtype, DTypeFromKServe(datatype));
    HostTensor tensor(dtype, Dims(shape.begin(), shape.end()));
    if (tensor.bytes() != bytes.size()) {
      return absl::InternalError(absl::StrCat("tensor ", name, " has ", bytes.size(), " bytes"));
    }
    std::memcpy(tensor.raw(), bytes.data(), bytes.size());
    return WriteNpyFile(absl::StrCat(dir, "/", k, "_", name, ".npy"), tensor);
  };
  for (int i = 0; i < request.inputs_size(); ++i) {
    RETURN_IF_ERROR(write(request.inputs(i).name(), request.inputs(i).datatype(),
                          request.inputs(i).shape(), request.raw_input_contents(i)));
  }
  return write(response.outputs(0).name(), response.outputs(0).datatype(),
               response.outputs(0).shape(), response.raw_output_contents(0));
}

// One outstanding request of a submitter thread.
struct InFlight {
  const inference::ModelInferRequest* request = nullptr;
  int64_t length = 0;
  inference::ModelInferResponse response;
  Clock::time_point sent;
  std::atomic<bool> done{true};
  std::atomic<bool> failed{false};
};

int Run(int argc, char** argv) {
  std::string repository, model_name, graphs = "on", executor = "cuda", lengths_text, dump,
      write_config;
  int64_t outstanding = 64, threads = 8, milliseconds = 2000, dump_count = 8;
  CommandLine flags(
      "core_bench --model-repository DIR --model NAME [--graphs on|off] [--outstanding 64]\n"
      "           [--threads 8] [--milliseconds 2000]\n"
      "           [--lengths lognormal:MEDIAN,SIGMA,MAX[,MULTIPLE]] [--dump DIR]\n"
      "           [--write-config FILE]\n\n"
      "The serving core (ServedModel) at saturation with batch-1 requests, no gRPC.");
  flags.AddString("model-repository", &repository, "The model repository (required).");
  flags.AddString("model", &model_name, "The model to load and drive (required).");
  flags.AddString("graphs", &graphs, "on: CUDA graph replays; off: the same plans eagerly.");
  flags.AddString("executor", &executor, "cuda, or host (the reference executor; a smoke test).");
  flags.AddInt("outstanding", &outstanding, "Requests kept in flight.");
  flags.AddInt("threads", &threads, "Submitter threads; the outstanding requests split over them.");
  flags.AddInt("milliseconds", &milliseconds, "Measured time, after 0.5 s of warm-up.");
  flags.AddString("lengths", &lengths_text,
                  "Request lengths in the model's shape dim, e.g. lognormal:24,0.9,512,8 "
                  "(median, sigma, max, multiple); empty: the model has no shape dim.");
  flags.AddString("dump", &dump, "Write the first requests and answers here as .npy files.");
  flags.AddInt("dump-count", &dump_count, "How many requests --dump writes.");
  flags.AddString("write-config", &write_config,
                  "Write the served config (with the launch costs measured at load) here, "
                  "as config.pbtxt text: a repository for a run with those costs given.");
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
  const ModelLoadSummary& loaded = (*model)->summary();
  std::cout << absl::StrFormat(
      "loaded in %.0f ms: %d buckets x %d batch sizes on %d streams, weights %.1f MiB, "
      "slots %.1f MiB\nload phases: %s\n",
      loaded.load_ms, std::max<size_t>(1, (*model)->interface().buckets.size()),
      loaded.batch_sizes.size(), loaded.num_streams, loaded.weight_bytes / 1048576.0,
      loaded.slot_bytes / 1048576.0, loaded.load_phases);
  if (!write_config.empty()) {
    std::ofstream out(write_config);
    out << ModelConfigText((*model)->config());
    if (!out) return fail(absl::InternalError(absl::StrCat("cannot write ", write_config)));
  }
  // The requests submitters cycle through, each with its length.
  constexpr int kRequests = 4096;
  std::optional<LengthMix> mix;
  if (!lengths_text.empty()) {
    absl::StatusOr<LengthMix> parsed = ParseLengthMix(lengths_text);
    if (!parsed.ok()) return fail(parsed.status());
    if ((*model)->interface().shape_dims.empty()) {
      return fail(absl::InvalidArgumentError(
          "--lengths needs a model whose config gives a shape dim as -1"));
    }
    mix = *parsed;
  }
  std::mt19937 random(7);
  std::vector<int64_t> lengths;
  std::vector<inference::ModelInferRequest> requests;
  for (int r = 0; r < (mix ? kRequests : 1); ++r) {
    lengths.push_back(mix ? mix->Draw(random) : 1);
    requests.push_back(RequestAt(**model, lengths.back(), random));
  }
  for (int k = 0; !dump.empty() && k < std::min<int64_t>(dump_count, kRequests); ++k) {
    const inference::ModelInferRequest& request = requests[static_cast<size_t>(k) % requests.size()];
    inference::ModelInferResponse response;
    std::promise<absl::Status> answered;
    (*model)->Infer(&request, &response, [&](const absl::Status& s) { answered.set_value(s); });
    if (absl::Status status = answered.get_future().get(); !status.ok()) return fail(status);
    if (absl::Status status = DumpExchange(dump, k, request, response); !status.ok()) {
      return fail(status);
    }
  }

  std::atomic<bool> measuring{false}, stop{false};
  std::atomic<int64_t> completed{0}, failures{0}, tokens{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(threads));
  std::vector<std::thread> submitters;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t mine = outstanding / threads + (t < outstanding % threads ? 1 : 0);
    submitters.emplace_back([&, t, mine] {
      size_t next = static_cast<size_t>(t) * 997;  // threads start at different requests
      std::vector<std::unique_ptr<InFlight>> slots;
      for (int64_t i = 0; i < mine; ++i) slots.push_back(std::make_unique<InFlight>());
      while (!stop.load(std::memory_order_relaxed)) {
        for (const std::unique_ptr<InFlight>& slot : slots) {
          if (!slot->done.load(std::memory_order_acquire)) continue;
          if (slot->sent != Clock::time_point{}) {
            if (slot->failed.load()) failures.fetch_add(1);
            if (measuring.load(std::memory_order_relaxed)) {
              completed.fetch_add(1, std::memory_order_relaxed);
              tokens.fetch_add(slot->length, std::memory_order_relaxed);
              latencies[static_cast<size_t>(t)].push_back(
                  std::chrono::duration<double, std::micro>(Clock::now() - slot->sent).count());
            }
          }
          slot->done.store(false, std::memory_order_relaxed);
          slot->sent = Clock::now();
          const size_t pick = next++ % requests.size();
          slot->request = &requests[pick];
          slot->length = lengths[pick];
          InFlight* in_flight = slot.get();
          (*model)->Infer(in_flight->request, &in_flight->response,
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
  if (mix.has_value()) {
    const ModelInterface& interface = (*model)->interface();
    std::vector<int64_t> buckets;
    // The last shape dim: the length (after dim 0, for a model without a batch).
    for (const std::vector<int64_t>& bucket : interface.buckets) buckets.push_back(bucket.back());
    const std::vector<int64_t> best = BestGrid(lengths, buckets.size());
    std::cout << absl::StrFormat(
        "lengths %s: %.0f tokens/s; padded positions: buckets [%s] %.1f%% (pad to %d: %.1f%%; "
        "best %d buckets [%s]: %.1f%%), before padding chunks to a batch size\n",
        lengths_text, static_cast<double>(tokens.load()) / elapsed, absl::StrJoin(buckets, ","),
        100 * PaddedShare(lengths, buckets), buckets.back(),
        100 * PaddedShare(lengths, {buckets.back()}), best.size(), absl::StrJoin(best, ","),
        100 * PaddedShare(lengths, best));
  }
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) {
  graphserve::TurnOffMutexDeadlockDetection();  // Note [Abseil's deadlock detection]
  return graphserve::Run(argc, argv);
}
