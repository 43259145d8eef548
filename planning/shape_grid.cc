#include "planning/shape_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace graphserve {
namespace {

constexpr int kMaxRounds = 16;

// A positive integer field of a history line, at most kMaxHistoryBatchSize.
absl::StatusOr<int64_t> PositiveField(absl::string_view text, absl::string_view what) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", text, "' is not an integer"));
  }
  if (value < 1 || value > kMaxHistoryBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", value, " is outside [1, ", kMaxHistoryBatchSize, "]"));
  }
  return value;
}

// `h` with every weight scaled down, when their total is above
// kMaxHistoryRequests, so that ChooseBatchSizes takes it; a nonzero weight
// stays at least 1.
BatchHistogram WithinBounds(std::map<int64_t, double> weights) {
  double total = 0;
  for (const auto& [size, weight] : weights) total += weight;
  // Headroom for the at-least-1 rounding of every entry.
  const double limit = static_cast<double>(kMaxHistoryRequests) / 2;
  const double scale = total > limit ? limit / total : 1.0;
  BatchHistogram h;
  for (const auto& [size, weight] : weights) {
    if (weight > 0) h[size] = std::max<int64_t>(1, std::llround(weight * scale));
  }
  return h;
}

// Each request's rows as executed: b + PaddedRows(b) (batch_sizes.h).
int64_t ExecutedRows(int64_t rows, const std::vector<int64_t>& sorted_sizes) {
  return rows + PaddedRows(rows, sorted_sizes);
}

// The smallest of `sorted_buckets` that holds `length`; 0 when none does.
int64_t BucketOf(int64_t length, const std::vector<int64_t>& sorted_buckets) {
  const auto it = std::lower_bound(sorted_buckets.begin(), sorted_buckets.end(), length);
  return it == sorted_buckets.end() ? 0 : *it;
}

BatchHistogram RowsMarginal(const ShapeHistogram& h) {
  BatchHistogram rows;
  for (const auto& [shape, count] : h) rows[shape.first] += count;
  return rows;
}

BatchHistogram LengthsMarginal(const ShapeHistogram& h) {
  BatchHistogram lengths;
  for (const auto& [shape, count] : h) lengths[shape.second] += count;
  return lengths;
}

// The best sizes for fixed buckets: rows weighted by their bucket's length.
absl::StatusOr<std::vector<int64_t>> SizesFor(const ShapeHistogram& h,
                                              const std::vector<int64_t>& buckets,
                                              int num_sizes,
                                              std::optional<int64_t> max_batch_size) {
  std::map<int64_t, double> weights;
  for (const auto& [shape, count] : h) {
    weights[shape.first] +=
        static_cast<double>(count) * static_cast<double>(BucketOf(shape.second, buckets));
  }
  ASSIGN_OR_RETURN(SizeChoice choice,
                   ChooseBatchSizes(WithinBounds(std::move(weights)), num_sizes, max_batch_size));
  return choice.sizes;
}

// The best buckets for fixed sizes: lengths weighted by their executed rows.
absl::StatusOr<std::vector<int64_t>> BucketsFor(const ShapeHistogram& h,
                                                const std::vector<int64_t>& sizes,
                                                int num_buckets) {
  std::map<int64_t, double> weights;
  for (const auto& [shape, count] : h) {
    weights[shape.second] +=
        static_cast<double>(count) * static_cast<double>(ExecutedRows(shape.first, sizes));
  }
  // No maximum: the top is the longest length, which no request exceeds.
  ASSIGN_OR_RETURN(SizeChoice choice,
                   ChooseBatchSizes(WithinBounds(std::move(weights)), num_buckets, std::nullopt));
  return choice.sizes;
}

// Coordinate descent for one split of the budget (Note [Choosing sizes and
// buckets together]).
absl::StatusOr<GridChoice> DescendFrom(const ShapeHistogram& h, int num_sizes, int num_buckets,
                                       std::optional<int64_t> max_batch_size) {
  GridChoice choice;
  ASSIGN_OR_RETURN(SizeChoice sizes, ChooseBatchSizes(RowsMarginal(h), num_sizes, max_batch_size));
  ASSIGN_OR_RETURN(SizeChoice buckets,
                   ChooseBatchSizes(LengthsMarginal(h), num_buckets, std::nullopt));
  choice.sizes = sizes.sizes;
  choice.buckets = buckets.sizes;
  choice.expected_padded_positions = ExpectedPaddedPositions(h, choice.sizes, choice.buckets);
  for (int round = 0; round < kMaxRounds; ++round) {
    ASSIGN_OR_RETURN(std::vector<int64_t> next_sizes,
                     SizesFor(h, choice.buckets, num_sizes, max_batch_size));
    ASSIGN_OR_RETURN(std::vector<int64_t> next_buckets, BucketsFor(h, next_sizes, num_buckets));
    const double cost = ExpectedPaddedPositions(h, next_sizes, next_buckets);
    // Only a strict improvement moves: the weights' rounding could otherwise
    // cycle between choices of one cost.
    if (!(cost < choice.expected_padded_positions)) break;
    choice = {std::move(next_sizes), std::move(next_buckets), cost};
  }
  return choice;
}

int64_t TotalRequests(const ShapeHistogram& h) {
  int64_t total = 0;
  for (const auto& [shape, count] : h) total += count;
  return total;
}

}  // namespace

absl::StatusOr<ShapeHistogram> ParseShapeHistory(const std::string& text,
                                                 const std::string& source) {
  ShapeHistogram h;
  RETURN_IF_ERROR(ParseHistoryLines(
      text, source, "`ROWSxLENGTH` or `ROWSxLENGTH,COUNT`", "the history",
      [&h](absl::string_view key, int64_t count) -> absl::Status {
        const std::vector<absl::string_view> shape = absl::StrSplit(key, 'x');
        if (shape.size() != 2) {
          return absl::InvalidArgumentError(absl::StrCat(
              "expected `ROWSxLENGTH` or `ROWSxLENGTH,COUNT`, got '", key.substr(0, 64), "'"));
        }
        ASSIGN_OR_RETURN(const int64_t rows, PositiveField(shape[0], "rows"));
        ASSIGN_OR_RETURN(const int64_t length, PositiveField(shape[1], "length"));
        if (count > 0) h[{rows, length}] += count;
        return absl::OkStatus();
      }));
  return h;
}

absl::StatusOr<ShapeHistogram> ReadShapeHistory(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadHistoryText(path, "the history"));
  return ParseShapeHistory(text, path);
}

ShapeHistogram IndependentShapes(const BatchHistogram& rows, const BatchHistogram& lengths) {
  double rows_total = 0, lengths_total = 0;
  for (const auto& [size, count] : rows) rows_total += static_cast<double>(count);
  for (const auto& [length, count] : lengths) lengths_total += static_cast<double>(count);
  ShapeHistogram joint;
  if (rows_total == 0 || lengths_total == 0) return joint;
  // requests(rows) x requests(length) / total, within the bounds.
  const double total = std::min(rows_total, static_cast<double>(kMaxHistoryRequests) / 2);
  const double scale = total / (rows_total * lengths_total);
  for (const auto& [size, row_count] : rows) {
    for (const auto& [length, length_count] : lengths) {
      if (row_count <= 0 || length_count <= 0) continue;
      joint[{size, length}] = std::max<int64_t>(
          1, std::llround(static_cast<double>(row_count) * static_cast<double>(length_count) *
                          scale));
    }
  }
  return joint;
}

double ExpectedPaddedPositions(const ShapeHistogram& h, const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& buckets) {
  const int64_t requests = TotalRequests(h);
  if (requests == 0) return 0.0;
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (sizes.empty() || buckets.empty()) return kInfinity;
  std::vector<int64_t> sorted_sizes = sizes, sorted_buckets = buckets;
  std::sort(sorted_sizes.begin(), sorted_sizes.end());
  std::sort(sorted_buckets.begin(), sorted_buckets.end());
  double padded = 0;
  for (const auto& [shape, count] : h) {
    const auto [rows, length] = shape;
    const int64_t bucket = BucketOf(length, sorted_buckets);
    if (bucket == 0) return kInfinity;
    const double executed = static_cast<double>(ExecutedRows(rows, sorted_sizes)) *
                            static_cast<double>(bucket);
    padded += static_cast<double>(count) *
              (executed - static_cast<double>(rows) * static_cast<double>(length));
  }
  return padded / static_cast<double>(requests);
}

absl::StatusOr<GridChoice> ChooseSizesAndBuckets(const ShapeHistogram& h, int max_graphs,
                                                 std::optional<int64_t> max_batch_size) {
  if (max_graphs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of graphs must be at least 1, got ", max_graphs));
  }
  if (h.empty()) return absl::InvalidArgumentError("the history has no requests");
  const int distinct_lengths = static_cast<int>(LengthsMarginal(h).size());
  const auto graphs = [](const GridChoice& c) { return c.sizes.size() * c.buckets.size(); };
  std::optional<GridChoice> best;
  // Each split of the budget: N sizes by as many buckets as fit (no more
  // than there are lengths), N ascending.
  for (int num_sizes = 1; num_sizes <= max_graphs; ++num_sizes) {
    const int num_buckets = std::min(max_graphs / num_sizes, distinct_lengths);
    ASSIGN_OR_RETURN(GridChoice choice, DescendFrom(h, num_sizes, num_buckets, max_batch_size));
    const bool saturated = choice.sizes.size() < static_cast<size_t>(num_sizes);
    if (!best.has_value() ||
        std::make_tuple(choice.expected_padded_positions, graphs(choice)) <
            std::make_tuple(best->expected_padded_positions, graphs(*best))) {
      best = std::move(choice);
    }
    // Every size a request needs is in: more sizes would only take buckets.
    if (saturated) break;
  }
  return *std::move(best);
}

absl::StatusOr<GridChoice> ChooseBucketsForSizes(const ShapeHistogram& h,
                                                 std::vector<int64_t> sizes, int max_graphs) {
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  if (sizes.empty() || sizes.front() < 1) {
    return absl::InvalidArgumentError("the batch sizes must be given, each at least 1");
  }
  const int num_buckets = max_graphs / static_cast<int>(sizes.size());
  if (num_buckets < 1) {
    return absl::InvalidArgumentError(absl::StrCat(max_graphs, " graphs do not hold one bucket at ",
                                                   sizes.size(), " batch sizes"));
  }
  if (h.empty()) return absl::InvalidArgumentError("the history has no requests");
  ASSIGN_OR_RETURN(std::vector<int64_t> buckets, BucketsFor(h, sizes, num_buckets));
  const double cost = ExpectedPaddedPositions(h, sizes, buckets);
  return GridChoice{std::move(sizes), std::move(buckets), cost};
}

GridChoice PowerOfTwoGrid(const ShapeHistogram& h, int max_graphs,
                          std::optional<int64_t> max_batch_size) {
  GridChoice best;
  best.expected_padded_positions = std::numeric_limits<double>::infinity();
  if (h.empty() || max_graphs < 1) return best;
  const BatchHistogram rows = RowsMarginal(h);
  const BatchHistogram lengths = LengthsMarginal(h);
  for (int num_sizes = 1; num_sizes <= max_graphs; ++num_sizes) {
    const std::vector<int64_t> sizes = PowerOfTwoLadder(rows, num_sizes, max_batch_size).sizes;
    std::vector<int64_t> buckets =
        PowerOfTwoLadder(lengths, max_graphs / num_sizes, std::nullopt).sizes;
    // A bucket shorter than every length holds no request (a sequence is
    // never split, as rows are): the ladder starts at the shortest's rung.
    const int64_t shortest = lengths.begin()->first;
    buckets.erase(buckets.begin(), std::lower_bound(buckets.begin(), buckets.end(), shortest));
    const double cost = ExpectedPaddedPositions(h, sizes, buckets);
    if (cost < best.expected_padded_positions) best = {sizes, buckets, cost};
  }
  return best;
}

}  // namespace graphserve
