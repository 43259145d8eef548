#include "server/model_counters.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace graphserve {

namespace {

uint64_t NowMillisSinceEpoch() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

void ModelCounters::Duration::Add(uint64_t nanos) {
  count.fetch_add(1, std::memory_order_relaxed);
  ns.fetch_add(nanos, std::memory_order_relaxed);
}

void ModelCounters::Duration::Fill(inference::StatisticDuration* duration) const {
  duration->set_count(count.load(std::memory_order_relaxed));
  duration->set_ns(ns.load(std::memory_order_relaxed));
}

ModelCounters::ModelCounters(std::vector<int64_t> batch_sizes)
    : batch_sizes_(std::move(batch_sizes)) {
  for (size_t i = 0; i < batch_sizes_.size(); ++i) {
    size_counters_.push_back(std::make_unique<SizeCounters>());
  }
}

ModelCounters::SizeCounters& ModelCounters::CountersFor(int64_t batch_size) {
  const size_t index = static_cast<size_t>(
      std::lower_bound(batch_sizes_.begin(), batch_sizes_.end(), batch_size) -
      batch_sizes_.begin());
  return *size_counters_[std::min(index, batch_sizes_.size() - 1)];
}

void ModelCounters::RecordChunk(int64_t batch_size, const ChunkTiming& timing) {
  SizeCounters& counters = CountersFor(batch_size);
  counters.input.Add(static_cast<uint64_t>(timing.input_ns));
  counters.infer.Add(static_cast<uint64_t>(timing.infer_ns));
  counters.output.Add(static_cast<uint64_t>(timing.output_ns));
  execution_count_.fetch_add(1, std::memory_order_relaxed);
}

void ModelCounters::RecordSuccess(int64_t rows, uint64_t elapsed_ns, uint64_t queue_ns,
                                  const ChunkTiming& compute) {
  queue_.Add(queue_ns);
  compute_input_.Add(static_cast<uint64_t>(compute.input_ns));
  compute_infer_.Add(static_cast<uint64_t>(compute.infer_ns));
  compute_output_.Add(static_cast<uint64_t>(compute.output_ns));
  success_.Add(elapsed_ns);
  inference_count_.fetch_add(static_cast<uint64_t>(rows), std::memory_order_relaxed);
  last_inference_ms_.store(NowMillisSinceEpoch(), std::memory_order_relaxed);
}

void ModelCounters::RecordFailure(uint64_t elapsed_ns) { fail_.Add(elapsed_ns); }

void ModelCounters::Fill(inference::ModelStatistics* statistics) const {
  statistics->set_last_inference(last_inference_ms_.load(std::memory_order_relaxed));
  statistics->set_inference_count(inference_count_.load(std::memory_order_relaxed));
  statistics->set_execution_count(execution_count_.load(std::memory_order_relaxed));
  inference::InferStatistics* stats = statistics->mutable_inference_stats();
  success_.Fill(stats->mutable_success());
  fail_.Fill(stats->mutable_fail());
  queue_.Fill(stats->mutable_queue());
  compute_input_.Fill(stats->mutable_compute_input());
  compute_infer_.Fill(stats->mutable_compute_infer());
  compute_output_.Fill(stats->mutable_compute_output());
  for (size_t i = 0; i < batch_sizes_.size(); ++i) {
    const SizeCounters& counters = *size_counters_[i];
    if (counters.infer.count.load(std::memory_order_relaxed) == 0) continue;
    inference::InferBatchStatistics* batch = statistics->add_batch_stats();
    batch->set_batch_size(static_cast<uint64_t>(batch_sizes_[i]));
    counters.input.Fill(batch->mutable_compute_input());
    counters.infer.Fill(batch->mutable_compute_infer());
    counters.output.Fill(batch->mutable_compute_output());
  }
}

}  // namespace graphserve
