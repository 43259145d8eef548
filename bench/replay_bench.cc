// The serving benchmarks' baseline: what the GPU work of a request costs with
// no gRPC, no validation and no queue in front of it.
//
//   replay_bench --model mlp.onnx --batch-sizes 1,16,256 --streams 1,2,4 [--seconds 2]
//                [--json FILE]
//
// For each stream count M it captures a GraphSet (M slots x the sizes) and
// measures, per size:
//   bare_us     median cudaGraphLaunch + stream sync on inputs already on the
//               device: the graph alone;
//   chunk_us    median GraphSet::Launch + event sync + copy of the rows out:
//               everything a served chunk does on its worker (staging copy,
//               H2D, replay, D2H);
//   and, for throughput, M threads each driving its own slot in a closed loop
//   for --seconds, graphs on and graphs off (the same plans launched eagerly),
//   and graphs on with the next chunk launched through the slot's second
//   staging buffer before the previous one is waited for: replay-only
//   inferences/s, the ceiling a server on M streams can reach.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_text.h"
#include "capture/graph_set.h"
#include "common/command_line.h"
#include "common/cuda_status.h"
#include "common/statistics.h"
#include "common/status.h"
#include "runtime/bind.h"
#include "runtime/executor.h"
#include "runtime/onnx_import.h"

namespace graphserve {
namespace {

using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Inputs {
  std::vector<HostTensor> tensors;
  std::vector<const void*> pointers;
};

absl::StatusOr<Inputs> MakeInputs(const Model& model, int64_t batch) {
  BindOptions bind;
  bind.batch_size = batch;
  ASSIGN_OR_RETURN(const BoundGraph graph, BindModel(model, bind));
  Inputs inputs;
  inputs.tensors = RandomInputs(graph, 7);
  for (const HostTensor& tensor : inputs.tensors) inputs.pointers.push_back(tensor.raw());
  return inputs;
}

// The second half of a served chunk: wait for it, copy its rows out.
absl::Status FinishChunk(const GraphSet& set, const LaunchChunk& chunk,
                         std::vector<std::vector<std::byte>>& outputs) {
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set.done_event(chunk.slot, chunk.staging)));
  for (size_t o = 0; o < set.num_outputs(); ++o) {
    std::memcpy(outputs[o].data(), set.output_rows(chunk.slot, o, chunk.staging),
                set.output_bytes_per_row(o, chunk.key) * static_cast<size_t>(chunk.rows));
  }
  return absl::OkStatus();
}

// One launch of `chunk` as a served chunk does it: Launch, wait, rows out.
absl::Status RunChunk(const GraphSet& set, const LaunchChunk& chunk, const Inputs& inputs,
                      std::vector<std::vector<std::byte>>& outputs) {
  RETURN_IF_ERROR(set.Launch(chunk, inputs.pointers));
  return FinishChunk(set, chunk, outputs);
}

std::vector<std::vector<std::byte>> OutputBuffers(const GraphSet& set, int64_t rows) {
  std::vector<std::vector<std::byte>> outputs;
  for (size_t o = 0; o < set.num_outputs(); ++o) {
    // Rows of one bucket: every key of a set without shape dims has them.
    outputs.emplace_back(set.output_bytes_per_row(o, set.keys().front()) * static_cast<size_t>(rows));
  }
  return outputs;
}

struct Latency {
  double bare_us = 0;
  double chunk_us = 0;
};

absl::StatusOr<Latency> MeasureLatency(const GraphSet& set, int64_t batch, const Inputs& inputs,
                                       int iters) {
  Latency latency;
  std::vector<double> bare, chunk;
  cudaStream_t stream = set.stream(0);
  cudaGraphExec_t exec = set.graph_exec(0, {batch});
  for (int i = 0; i < iters + 20; ++i) {
    const Clock::time_point start = Clock::now();
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    if (i >= 20) bare.push_back(MicrosSince(start));
  }
  auto outputs = OutputBuffers(set, batch);
  for (int i = 0; i < iters + 20; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(RunChunk(set, {0, {batch}, batch, LaunchMode::kGraph}, inputs, outputs));
    if (i >= 20) chunk.push_back(MicrosSince(start));
  }
  latency.bare_us = Median(bare);
  latency.chunk_us = Median(chunk);
  return latency;
}

// M threads, one per slot, closed loop for `seconds`: inferences per second.
// depth 1: each chunk launched, waited for and copied out before the next;
// depth 2: the next chunk launched through the other staging buffer before
// the previous one is waited for (Note [Double-buffered staging]), as a busy
// stream worker does.
absl::StatusOr<double> MeasureThroughput(const GraphSet& set, int64_t batch, const Inputs& inputs,
                                         LaunchMode mode, double seconds, int device,
                                         int depth) {
  std::atomic<int64_t> launches{0};
  std::atomic<bool> failed{false};
  const Clock::time_point end =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  std::vector<std::thread> threads;
  for (int slot = 0; slot < set.num_slots(); ++slot) {
    threads.emplace_back([&, slot] {
      if (cudaSetDevice(device) != cudaSuccess) {
        failed = true;
        return;
      }
      auto outputs = OutputBuffers(set, batch);
      std::optional<LaunchChunk> previous;  // launched, not yet finished
      int staging = 0;
      while (Clock::now() < end) {
        const LaunchChunk chunk{slot, {batch}, batch, mode, staging};
        absl::Status status = set.Launch(chunk, inputs.pointers);
        if (status.ok() && depth == 1) status = FinishChunk(set, chunk, outputs);
        if (status.ok() && depth > 1 && previous) status = FinishChunk(set, *previous, outputs);
        if (!status.ok()) {
          failed = true;
          return;
        }
        if (depth > 1) previous = chunk;
        staging = (staging + 1) % depth;
        ++launches;
      }
      if (previous && !FinishChunk(set, *previous, outputs).ok()) failed = true;
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (failed) return absl::InternalError("a replay failed during the throughput run");
  return static_cast<double>(launches.load()) * static_cast<double>(batch) / seconds;
}

int Run(int argc, char** argv) {
  std::string model_path, sizes_text = "1,16,256", streams_text = "1,2,4", json_path;
  std::string throughput_sizes_text = "1";
  int64_t iters = 300, device = 0;
  std::string seconds_text = "2";
  CommandLine flags(
      "replay_bench --model FILE [--batch-sizes 1,16,256] [--streams 1,2,4] [--json FILE]\n"
      "\n"
      "Bare graph replay and full-chunk latency per size, and replay-only throughput\n"
      "on M streams with graphs on and off: the baseline the served numbers are read\n"
      "against (see bench/serve_bench.sh).");
  flags.AddString("model", &model_path, "ONNX model file (required).");
  flags.AddString("batch-sizes", &sizes_text, "Captured sizes; latency is measured at each.");
  flags.AddString("throughput-batch-sizes", &throughput_sizes_text,
                  "Sizes whose replay-only throughput is measured.");
  flags.AddString("streams", &streams_text, "Stream counts M to measure.");
  flags.AddString("seconds", &seconds_text, "Length of each throughput run.");
  flags.AddInt("iters", &iters, "Timed launches per latency median.");
  flags.AddInt("device", &device, "CUDA device ordinal.");
  flags.AddString("json", &json_path, "Also write the records to this JSON file.");
  auto fail = [](const absl::Status& status) {
    std::cerr << "replay_bench: " << status << "\n";
    return 1;
  };
  if (absl::Status status = flags.Parse(argc, argv); !status.ok()) return fail(status);
  if (flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (model_path.empty()) return fail(absl::InvalidArgumentError("--model is required"));
  absl::StatusOr<std::vector<int64_t>> sizes = ParseIntList(sizes_text, 1);
  absl::StatusOr<std::vector<int64_t>> streams = ParseIntList(streams_text, 1);
  absl::StatusOr<std::vector<int64_t>> throughput_sizes = ParseIntList(throughput_sizes_text, 1);
  if (!sizes.ok()) return fail(sizes.status());
  if (!streams.ok()) return fail(streams.status());
  if (!throughput_sizes.ok()) return fail(throughput_sizes.status());
  const double seconds = std::stod(seconds_text);
  absl::StatusOr<Model> model = ImportOnnxFile(model_path);
  if (!model.ok()) return fail(model.status());
  if (cudaSetDevice(static_cast<int>(device)) != cudaSuccess) {
    return fail(absl::FailedPreconditionError("no CUDA device"));
  }

  std::vector<std::string> records;
  for (int64_t m : *streams) {
    GraphSetOptions options;
    options.num_streams = static_cast<int>(m);
    options.graphs = BatchOnlyKeys(*sizes);
    options.executor.device = static_cast<int>(device);
    absl::StatusOr<std::unique_ptr<GraphSet>> set = GraphSet::Create(*model, options);
    if (!set.ok()) return fail(set.status());
    for (int64_t batch : *sizes) {
      absl::StatusOr<Inputs> inputs = MakeInputs(*model, batch);
      if (!inputs.ok()) return fail(inputs.status());
      std::string record = absl::StrCat("{\"model\":", JsonString(model_path),
                                        ",\"streams\":", m, ",\"batch\":", batch);
      if (m == streams->front()) {
        absl::StatusOr<Latency> latency =
            MeasureLatency(**set, batch, *inputs, static_cast<int>(iters));
        if (!latency.ok()) return fail(latency.status());
        std::cout << absl::StrFormat("%s B=%d: bare replay %.1f us, full chunk %.1f us\n",
                                     model_path, batch, latency->bare_us, latency->chunk_us);
        absl::StrAppend(&record, ",\"bare_us\":", JsonNumber(latency->bare_us),
                        ",\"chunk_us\":", JsonNumber(latency->chunk_us));
      }
      if (std::find(throughput_sizes->begin(), throughput_sizes->end(), batch) !=
          throughput_sizes->end()) {
        const auto measure = [&](LaunchMode mode, int depth) {
          return MeasureThroughput(**set, batch, *inputs, mode, seconds, static_cast<int>(device),
                                   depth);
        };
        absl::StatusOr<double> graphs = measure(LaunchMode::kGraph, 1);
        absl::StatusOr<double> eager = measure(LaunchMode::kEager, 1);
        absl::StatusOr<double> pipelined = measure(LaunchMode::kGraph, kStagingBuffers);
        if (!graphs.ok()) return fail(graphs.status());
        if (!eager.ok()) return fail(eager.status());
        if (!pipelined.ok()) return fail(pipelined.status());
        std::cout << absl::StrFormat(
            "%s B=%d M=%d: replay-only %.0f infer/s graphs on, %.0f graphs off (%.2fx); "
            "double-buffered staging %.0f infer/s graphs on (%.2fx single-buffered)\n",
            model_path, batch, m, *graphs, *eager, *graphs / *eager, *pipelined,
            *pipelined / *graphs);
        absl::StrAppend(&record, ",\"replay_infer_per_s_graphs\":", JsonNumber(*graphs),
                        ",\"replay_infer_per_s_eager\":", JsonNumber(*eager),
                        ",\"replay_infer_per_s_graphs_double_buffered\":",
                        JsonNumber(*pipelined));
      }
      records.push_back(record + "}");
    }
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "[\n";
    for (size_t i = 0; i < records.size(); ++i) {
      out << "  " << records[i] << (i + 1 < records.size() ? ",\n" : "\n");
    }
    out << "]\n";
  }
  return 0;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) { return graphserve::Run(argc, argv); }
