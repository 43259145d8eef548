#include "planning/row_histogram.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace graphserve {
namespace {

// Counts above this are not whole numbers a double holds exactly.
constexpr double kLargestCount = static_cast<double>(int64_t{1} << 52);

std::string BoundText(double bound) {
  return std::isinf(bound) ? (bound > 0 ? "+Inf" : "-Inf") : absl::StrCat(bound);
}

absl::Status BucketError(double bound, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("histogram bucket le=\"", BoundText(bound), "\": ", message));
}

// Note [Rows of a wide bucket]
//
// GraphServe's rows histogram has a bucket per row count up to 64, so there
// every request's rows are known exactly. Above 64 its buckets are powers of
// two (65..128, 129..256, ...) and then max_batch_size: a request there is
// known only to lie in its bucket. We count it at the bucket's upper bound,
// the one row count of the bucket that the chosen sizes must cover for none
// of its requests to be split. The expected padding printed for such requests
// is then approximate: for sizes on bucket bounds (the chosen sizes and the
// power-of-two ladder are) each such request really pads up to (bucket width
// - 1) rows more than shown, and for a captured size inside a bucket it can
// show more padding than real. So the output says how many requests were
// counted this way and in which buckets.

// Scales `counts` down so that their total fits kMaxHistoryRequests with
// room for keeping every nonzero count at least 1; returns the factor.
double FitRequestBound(double total, std::map<int64_t, double>& counts) {
  if (total <= static_cast<double>(kMaxHistoryRequests)) return 1;
  const double scale = static_cast<double>(kMaxHistoryRequests / 2) / total;
  for (auto& [rows, count] : counts) count = std::max(1.0, std::round(count * scale));
  return scale;
}

}  // namespace

absl::StatusOr<RowHistogram> RowHistogramFromBuckets(std::vector<CumulativeBucket> buckets) {
  for (const CumulativeBucket& bucket : buckets) {
    if (std::isnan(bucket.upper_bound)) {
      return absl::InvalidArgumentError("histogram bucket le=\"NaN\"");
    }
  }
  std::sort(buckets.begin(), buckets.end(),
            [](const CumulativeBucket& a, const CumulativeBucket& b) {
              return a.upper_bound < b.upper_bound;
            });
  if (buckets.empty() || !std::isinf(buckets.back().upper_bound) ||
      buckets.back().upper_bound < 0) {
    return absl::InvalidArgumentError("the histogram has no le=\"+Inf\" bucket");
  }
  std::map<int64_t, double> counts;
  std::vector<WideBucket> wide;
  double previous_bound = 0;  // rows are positive: the first bucket starts at 1
  double previous_count = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const CumulativeBucket& bucket = buckets[i];
    const double cumulative = bucket.cumulative_count;
    if (!(cumulative >= 0 && cumulative <= kLargestCount) || std::floor(cumulative) != cumulative) {
      return BucketError(bucket.upper_bound,
                         absl::StrCat("count ", cumulative, " is not a whole number of requests"));
    }
    if (i > 0 && bucket.upper_bound == buckets[i - 1].upper_bound) {
      return BucketError(bucket.upper_bound, "appears twice");
    }
    if (cumulative < previous_count) {
      return BucketError(bucket.upper_bound,
                         absl::StrCat("count ", cumulative, " is below the previous bucket's ",
                                      previous_count, " (buckets are cumulative)"));
    }
    const double count = cumulative - previous_count;
    previous_count = cumulative;
    if (std::isinf(bucket.upper_bound)) {
      if (count > 0) {
        return BucketError(
            bucket.upper_bound,
            absl::StrCat(count, " requests lie above the largest finite bound ",
                         BoundText(previous_bound),
                         ", so their rows are unknown (a model without a batch dimension has no "
                         "batch sizes to choose)"));
      }
      continue;
    }
    const double first = std::max(std::floor(previous_bound) + 1, 1.0);
    const double last = std::floor(bucket.upper_bound);
    previous_bound = std::max(previous_bound, bucket.upper_bound);
    if (count == 0) continue;
    if (last < first) {
      return BucketError(bucket.upper_bound,
                         absl::StrCat("holds ", count, " requests but no positive row count"));
    }
    if (last > static_cast<double>(kMaxHistoryBatchSize)) {
      return BucketError(bucket.upper_bound,
                         absl::StrCat("is above the largest batch size, ", kMaxHistoryBatchSize));
    }
    counts[static_cast<int64_t>(last)] += count;
    if (last > first) {
      wide.push_back(
          {static_cast<int64_t>(first), static_cast<int64_t>(last), static_cast<int64_t>(count)});
    }
  }
  RowHistogram result;
  result.requests = static_cast<int64_t>(previous_count);
  result.wide_buckets = std::move(wide);
  result.scale = FitRequestBound(previous_count, counts);
  for (const auto& [rows, count] : counts) result.histogram[rows] = static_cast<int64_t>(count);
  return result;
}

}  // namespace graphserve
