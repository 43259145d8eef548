#include "capture/launch_costs.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/statistics.h"
#include "common/status.h"
#include "common/tensor.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// Timed launches of one key and mode stop after this long, once 3 are timed
// or the timed ones alone took this long: a small model's keys all get their
// iterations, while BERT-base's 1-row chunks at 512 tokens (3.5 ms) are timed
// three times after one warm-up. A warm-up launch longer than this is the
// sample itself: what a first launch adds (microseconds) is lost in it, and
// a chunk that long is GPU-bound and varies little (BERT-base's 32 rows of
// 512 tokens take 110 ms). Every key of every bucket is timed (Note [Planning
// by total cost]), 30 for BERT-base's six sizes at five buckets, within the
// load time its four streams are allowed.
constexpr double kMeasureBudgetUs = 10'000;

// Median wall time of Launch + wait for `chunk`.
absl::StatusOr<double> MeasureLaunch(const GraphSet& set, const LaunchChunk& chunk,
                                     const std::vector<const void*>& inputs,
                                     const LaunchCostOptions& options) {
  std::vector<double> micros;
  double spent_us = 0;
  double timed_us = 0;
  int64_t warmup = options.warmup;
  for (int64_t i = 0; i < warmup + options.iters; ++i) {
    const Clock::time_point start = Clock::now();
    RETURN_IF_ERROR(set.Launch(chunk, inputs));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set.done_event(chunk.slot, chunk.staging)));
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    spent_us += us;
    const bool timed = i >= warmup;
    if (!timed && us > kMeasureBudgetUs) {  // its own warm-up
      micros.push_back(us);
      break;
    }
    if (timed) {
      micros.push_back(us);
      timed_us += us;
    }
    if (spent_us > kMeasureBudgetUs) {
      if (!timed) warmup = i + 1;  // warm enough: timing starts with the next launch
      if (timed && (micros.size() >= 3 || timed_us > kMeasureBudgetUs)) break;
    }
  }
  return Median(std::move(micros));
}

// Random inputs of `key`'s full batch with `any_size`'s dtypes, each row
// as many elements as a row at the key's bucket holds.
std::vector<HostTensor> FullBatchInputs(const GraphSet& set, const BoundGraph& any_size,
                                        const GraphKey& key) {
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < any_size.inputs.size(); ++i) {
    const DType dtype = any_size.value(any_size.inputs[i]).dtype;
    const auto row_elements = static_cast<int64_t>(set.input_bytes_per_row(i, key) / DTypeSize(dtype));
    inputs.push_back(RandomTensor(dtype, {key.batch_size, row_elements}, 1000 + i));
  }
  return inputs;
}

// The keys whose staging is timed: those of the set's largest bucket, one
// per batch size (a slot's staging buffers are sized for it). Keys sort by
// batch, then bucket, and buckets each hold the one before
// (server/shape_buckets.h), so the last key's is the largest.
std::vector<GraphKey> LargestBucketKeys(const GraphSet& set) {
  std::vector<GraphKey> keys;
  for (const GraphKey& key : set.keys()) {
    if (key.bucket == set.keys().back().bucket) keys.push_back(key);
  }
  return keys;
}

std::vector<const void*> Pointers(const std::vector<HostTensor>& tensors) {
  std::vector<const void*> pointers;
  for (const HostTensor& tensor : tensors) pointers.push_back(tensor.raw());
  return pointers;
}

// Mean wall time per chunk of `count` full chunks launched back to back,
// each waited for before the next (depth 1) or after the next is launched
// (depth 2, alternating staging buffers).
absl::StatusOr<double> MeasureClosedLoop(const GraphSet& set, LaunchChunk chunk,
                                         const std::vector<const void*>& inputs, int depth,
                                         int64_t count) {
  const auto wait = [&](int64_t i) {
    return CudaErrorToStatus(
        cudaEventSynchronize(set.done_event(chunk.slot, static_cast<int>(i % depth))),
        "cudaEventSynchronize");
  };
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    chunk.staging = static_cast<int>(i % depth);
    RETURN_IF_ERROR(set.Launch(chunk, inputs));
    // Chunk i - depth + 1 is the oldest still in flight.
    if (i >= depth - 1) RETURN_IF_ERROR(wait(i - depth + 1));
  }
  for (int64_t i = std::max<int64_t>(0, count - depth + 1); i < count; ++i) {
    RETURN_IF_ERROR(wait(i));
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
         static_cast<double>(count);
}

// Chunks of `chunk_us` each in a closed loop of about 20 ms, at least 3 (a
// chunk of tens of ms is timed well enough by 3) and at most `iters`.
// BERT-base's six sizes at 512 tokens spent 2 s of a load here when each
// also ran six warm-up chunks.
int64_t ChunksPerLoop(double chunk_us, const LaunchCostOptions& options) {
  return std::clamp<int64_t>(static_cast<int64_t>(20'000 / std::max(chunk_us, 1.0)),
                             std::min<int64_t>(3, options.iters), options.iters);
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> SizesFasterDoubleBuffered(
    const GraphSet& set, const BoundGraph& any_size, LaunchMode mode,
    const LaunchCostOptions& options, const std::vector<double>& single_buffered_us) {
  if (options.iters < 1) return absl::InvalidArgumentError("cost measurement needs iters >= 1");
  if (!single_buffered_us.empty() && single_buffered_us.size() != set.keys().size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        single_buffered_us.size(), " single-buffered times for ", set.keys().size(), " graphs"));
  }
  std::vector<int64_t> faster;
  for (const GraphKey& key : LargestBucketKeys(set)) {
    const std::vector<HostTensor> inputs = FullBatchInputs(set, any_size, key);
    const std::vector<const void*> pointers = Pointers(inputs);
    const LaunchChunk chunk{options.slot, key, key.batch_size, mode};
    double single = 0;
    if (!single_buffered_us.empty()) {
      const auto at = std::find(set.keys().begin(), set.keys().end(), key);
      single = single_buffered_us[at - set.keys().begin()];
    }
    if (single == 0) {  // not timed yet: one chunk paces the loop that times it
      ASSIGN_OR_RETURN(const double pace, MeasureClosedLoop(set, chunk, pointers, 1, 1));
      ASSIGN_OR_RETURN(single,
                       MeasureClosedLoop(set, chunk, pointers, 1, ChunksPerLoop(pace, options)));
    }
    ASSIGN_OR_RETURN(const double doubled,
                     MeasureClosedLoop(set, chunk, pointers, kStagingBuffers,
                                       ChunksPerLoop(single, options)));
    if (doubled < 0.97 * single) faster.push_back(key.batch_size);
  }
  return faster;
}

absl::StatusOr<std::vector<CaptureCostEntry>> MeasureLaunchCosts(const GraphSet& set,
                                                                 const BoundGraph& any_size,
                                                                 const LaunchCostOptions& options) {
  if (options.iters < 1) return absl::InvalidArgumentError("cost measurement needs iters >= 1");
  std::vector<CaptureCostEntry> costs;
  for (const GraphKey& key : set.keys()) {
    const std::vector<HostTensor> inputs = FullBatchInputs(set, any_size, key);
    const std::vector<const void*> pointers = Pointers(inputs);
    CaptureCostEntry entry;
    entry.key = key;
    for (const LaunchMode mode : options.modes) {
      ASSIGN_OR_RETURN(const double us,
                       MeasureLaunch(set, {options.slot, key, key.batch_size, mode}, pointers,
                                     options));
      double& field = mode == LaunchMode::kGraph ? entry.graph_us : entry.eager_us;
      field = us;
    }
    costs.push_back(entry);
  }
  return costs;
}

}  // namespace graphserve
