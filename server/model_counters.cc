#include "server/model_counters.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

namespace graphserve {

std::vector<int64_t> StatisticsSizes(int64_t max_batch_size) {
  constexpr int64_t kEverySizeUpTo = 64;
  std::vector<int64_t> sizes;
  const int64_t largest = std::max<int64_t>(max_batch_size, 1);
  for (int64_t size = 1; size <= std::min(largest, kEverySizeUpTo); ++size) sizes.push_back(size);
  for (int64_t size = 2 * kEverySizeUpTo; size < largest; size *= 2) sizes.push_back(size);
  if (largest > kEverySizeUpTo) sizes.push_back(largest);
  return sizes;
}

namespace {

uint64_t NowMillisSinceEpoch() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// One bucket per row count up to 64 (small requests are where the captured
// sizes matter most), then powers of two, then max_batch_size itself.
std::vector<uint64_t> RowBounds(int64_t max_batch_size) {
  constexpr int64_t kEveryRowUpTo = 64;
  std::vector<uint64_t> bounds;
  for (int64_t rows = 1; rows <= std::min(max_batch_size, kEveryRowUpTo); ++rows) {
    bounds.push_back(static_cast<uint64_t>(rows));
  }
  for (int64_t rows = 2 * kEveryRowUpTo; rows < max_batch_size; rows *= 2) {
    bounds.push_back(static_cast<uint64_t>(rows));
  }
  if (max_batch_size > kEveryRowUpTo) bounds.push_back(static_cast<uint64_t>(max_batch_size));
  return bounds;
}

// From a graph replay's tens of microseconds to a second.
std::vector<uint64_t> DurationBoundsUs() {
  return {50,    100,   250,   500,    1000,   2500,   5000,
          10000, 25000, 50000, 100000, 250000, 500000, 1000000};
}

}  // namespace

std::vector<int64_t> OneDimExtents(const std::vector<std::vector<int64_t>>& buckets) {
  std::vector<int64_t> extents;
  for (const std::vector<int64_t>& bucket : buckets) extents.push_back(bucket.front());
  return extents;
}

std::vector<uint64_t> LengthBounds(const std::vector<int64_t>& bucket_extents) {
  // Note [Live length histogram]: multiples of 8, at most 128 of them.
  constexpr int64_t kGranule = 8;
  constexpr int64_t kMaxSteps = 128;
  std::vector<uint64_t> bounds;
  if (bucket_extents.empty()) return bounds;
  const int64_t largest = *std::max_element(bucket_extents.begin(), bucket_extents.end());
  const int64_t granules_per_step =
      std::max<int64_t>(1, (largest + kGranule * kMaxSteps - 1) / (kGranule * kMaxSteps));
  const int64_t step = kGranule * granules_per_step;
  for (int64_t length = step; length <= largest; length += step) {
    bounds.push_back(static_cast<uint64_t>(length));
  }
  for (int64_t extent : bucket_extents) {
    if (extent > 0) bounds.push_back(static_cast<uint64_t>(extent));
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  return bounds;
}

const char* FailureReasonLabel(FailureReason reason) {
  switch (reason) {
    case FailureReason::kRejected:
      return "REJECTED";
    case FailureReason::kCanceled:
      return "CANCELED";
    case FailureReason::kBackend:
      return "BACKEND";
    case FailureReason::kOther:
      break;
  }
  return "OTHER";
}

ModelCounters::AtomicHistogram::AtomicHistogram(std::vector<uint64_t> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<uint64_t>[upper_bounds_.size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) counts_[i].store(0);
}

void ModelCounters::AtomicHistogram::Observe(uint64_t value) {
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

ModelCounters::Histogram ModelCounters::AtomicHistogram::Read() const {
  Histogram histogram;
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= upper_bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    histogram.upper_bounds.push_back(i < upper_bounds_.size()
                                         ? static_cast<double>(upper_bounds_[i])
                                         : std::numeric_limits<double>::infinity());
    histogram.cumulative_counts.push_back(cumulative);
  }
  histogram.sum = sum_.load(std::memory_order_relaxed);
  return histogram;
}

void ModelCounters::Duration::Add(uint64_t nanos) {
  count.fetch_add(1, std::memory_order_relaxed);
  ns.fetch_add(nanos, std::memory_order_relaxed);
}

void ModelCounters::Duration::Fill(inference::StatisticDuration* duration) const {
  duration->set_count(count.load(std::memory_order_relaxed));
  duration->set_ns(ns.load(std::memory_order_relaxed));
}

ModelCounters::ModelCounters(std::vector<int64_t> batch_sizes, int64_t max_batch_size,
                             int num_streams, std::vector<std::vector<int64_t>> buckets)
    : batch_sizes_(std::move(batch_sizes)),
      max_batch_size_(max_batch_size),
      num_streams_(std::max(num_streams, 1)),
      buckets_(buckets.empty() ? std::vector<std::vector<int64_t>>{{}} : std::move(buckets)),
      request_rows_(RowBounds(max_batch_size)),
      chunk_demand_rows_(RowBounds(max_batch_size)),
      request_duration_us_(DurationBoundsUs()),
      launches_(new std::atomic<uint64_t>[LaunchCounters()]) {
  for (size_t i = 0; i < batch_sizes_.size(); ++i) {
    size_counters_.push_back(std::make_unique<SizeCounters>());
  }
  for (size_t i = 0; i < LaunchCounters(); ++i) launches_[i].store(0);
  // Note [Live length histogram]: one shape dim, one histogram.
  if (buckets_.front().size() == 1) request_length_.emplace(LengthBounds(OneDimExtents(buckets_)));
}

size_t ModelCounters::LaunchCounters() const {
  return batch_sizes_.size() * buckets_.size() * static_cast<size_t>(num_streams_);
}

size_t ModelCounters::LaunchIndex(size_t size, size_t bucket, int stream) const {
  return (size * buckets_.size() + bucket) * static_cast<size_t>(num_streams_) +
         static_cast<size_t>(stream);
}

size_t ModelCounters::SizeIndex(int64_t batch_size) const {
  const size_t index =
      static_cast<size_t>(std::lower_bound(batch_sizes_.begin(), batch_sizes_.end(), batch_size) -
                          batch_sizes_.begin());
  return std::min(index, batch_sizes_.size() - 1);
}

void ModelCounters::RecordChunk(const ChunkRun& run, const ChunkTiming& timing) {
  const size_t size = SizeIndex(run.batch_size);
  SizeCounters& counters = *size_counters_[size];
  counters.input.Add(static_cast<uint64_t>(timing.input_ns));
  counters.infer.Add(static_cast<uint64_t>(timing.infer_ns));
  counters.output.Add(static_cast<uint64_t>(timing.output_ns));
  // A slot outside the count (a runner with more slots than the counters
  // were told of) is counted under the last rather than lost.
  const int stream = std::clamp(run.stream, 0, num_streams_ - 1);
  const size_t bucket = std::min(run.bucket, buckets_.size() - 1);
  launches_[LaunchIndex(size, bucket, stream)].fetch_add(1, std::memory_order_relaxed);
  if (run.launched_positions > run.real_positions) {
    padded_positions_.fetch_add(static_cast<uint64_t>(run.launched_positions - run.real_positions),
                                std::memory_order_relaxed);
  }
  execution_count_.fetch_add(1, std::memory_order_relaxed);
  if (run.batch_size > run.rows) {
    padded_rows_.fetch_add(static_cast<uint64_t>(run.batch_size - run.rows),
                           std::memory_order_relaxed);
  }
  if (run.requests > 1) merged_executions_.fetch_add(1, std::memory_order_relaxed);
  if (run.demand_rows > 0) chunk_demand_rows_.Observe(static_cast<uint64_t>(run.demand_rows));
}

void ModelCounters::RecordSuccess(int64_t rows, int64_t length, uint64_t elapsed_ns,
                                  uint64_t queue_ns, const ChunkTiming& compute, bool split) {
  queue_.Add(queue_ns);
  compute_input_.Add(static_cast<uint64_t>(compute.input_ns));
  compute_infer_.Add(static_cast<uint64_t>(compute.infer_ns));
  compute_output_.Add(static_cast<uint64_t>(compute.output_ns));
  success_.Add(elapsed_ns);
  inference_count_.fetch_add(static_cast<uint64_t>(rows), std::memory_order_relaxed);
  last_inference_ms_.store(NowMillisSinceEpoch(), std::memory_order_relaxed);
  request_rows_.Observe(static_cast<uint64_t>(rows));
  if (request_length_.has_value() && length > 0) {
    request_length_->Observe(static_cast<uint64_t>(length));
  }
  request_duration_us_.Observe(elapsed_ns / 1000);
  if (split) split_requests_.fetch_add(1, std::memory_order_relaxed);
}

void ModelCounters::RecordFailure(uint64_t elapsed_ns, FailureReason reason) {
  fail_.Add(elapsed_ns);
  failures_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::array<uint64_t, kNumFailureReasons> ModelCounters::FailuresByReason() const {
  std::array<uint64_t, kNumFailureReasons> failures{};
  for (size_t i = 0; i < kNumFailureReasons; ++i) {
    failures[i] = failures_[i].load(std::memory_order_relaxed);
  }
  return failures;
}

ModelCounters::Histogram ModelCounters::RequestRows() const { return request_rows_.Read(); }
ModelCounters::Histogram ModelCounters::ChunkDemandRows() const {
  return chunk_demand_rows_.Read();
}

std::optional<ModelCounters::Histogram> ModelCounters::RequestLength() const {
  if (!request_length_.has_value()) return std::nullopt;
  return request_length_->Read();
}

ModelCounters::Histogram ModelCounters::RequestDurationUs() const {
  return request_duration_us_.Read();
}

std::vector<ModelCounters::Launches> ModelCounters::LaunchesPerKeyAndStream() const {
  std::vector<Launches> launches;
  for (size_t size = 0; size < batch_sizes_.size(); ++size) {
    for (size_t bucket = 0; bucket < buckets_.size(); ++bucket) {
      for (int stream = 0; stream < num_streams_; ++stream) {
        launches.push_back(
            {.key = {batch_sizes_[size], buckets_[bucket]},
             .stream = stream,
             .count = launches_[LaunchIndex(size, bucket, stream)].load(std::memory_order_relaxed)});
      }
    }
  }
  return launches;
}

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
