#pragma once
// Test helpers: rows histograms shaped as the server exports them, for the
// tests of their readers (planning/row_histogram, capture_cli/live_metrics).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "planning/row_histogram.h"

namespace graphserve {

// The bucket bounds ModelCounters gives a model of max_batch_size
// `max_batch`: one per row up to 64, then powers of two, then max_batch
// itself, then +Inf.
inline std::vector<double> ServerRowBounds(int64_t max_batch) {
  std::vector<double> bounds;
  for (int64_t rows = 1; rows <= std::min<int64_t>(max_batch, 64); ++rows) bounds.push_back(rows);
  for (int64_t rows = 128; rows < max_batch; rows *= 2) bounds.push_back(rows);
  if (max_batch > 64) bounds.push_back(max_batch);
  bounds.push_back(std::numeric_limits<double>::infinity());
  return bounds;
}

// The cumulative buckets of `requests` (one row count each) over `bounds`.
inline std::vector<CumulativeBucket> CumulativeBucketsOf(const std::vector<double>& bounds,
                                                         const std::vector<int64_t>& requests) {
  std::vector<CumulativeBucket> buckets;
  for (double bound : bounds) {
    double count = 0;
    for (int64_t rows : requests) count += rows <= bound ? 1 : 0;
    buckets.push_back({bound, count});
  }
  return buckets;
}

}  // namespace graphserve
