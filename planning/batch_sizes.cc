#include "planning/batch_sizes.h"

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace graphserve {
namespace {

// A needed size: the rows one graph launch must hold for some requests,
// before padding, and how many requests need it.
struct NeededSize {
  int64_t size = 0;
  int64_t count = 0;
};

// The needed sizes of `h` when `top` is the largest size (and the chunk
// size), ascending; `top` itself is always included, with count 0 when no
// request needs exactly it.
std::vector<NeededSize> NeededSizes(const BatchHistogram& h, int64_t top) {
  std::map<int64_t, int64_t> needed;
  needed[top] += 0;
  for (const auto& [size, count] : h) {
    if (count <= 0) continue;
    const int64_t rows = size <= top ? size : size % top;
    if (rows > 0) needed[rows] += count;
  }
  std::vector<NeededSize> result;
  result.reserve(needed.size());
  for (const auto& [size, count] : needed) result.push_back({size, count});
  return result;
}

int64_t TotalRequests(const BatchHistogram& h) {
  int64_t total = 0;
  for (const auto& [size, count] : h) {
    if (count > 0) total += count;
  }
  return total;
}

// Total padded rows over all requests of `h` served by `sorted_sizes`
// (ascending, non-empty); see the serving model in the header.
int64_t TotalPaddedRows(const BatchHistogram& h, const std::vector<int64_t>& sorted_sizes) {
  int64_t total = 0;
  for (const auto& [size, count] : h) {
    if (count > 0) total += count * PaddedRows(size, sorted_sizes);
  }
  return total;
}

absl::Status ValidateHistogram(const BatchHistogram& h) {
  int64_t total = 0;
  for (const auto& [size, count] : h) {
    if (size < 1 || size > kMaxHistoryBatchSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          "batch size ", size, " in the history is outside [1, ", kMaxHistoryBatchSize, "]"));
    }
    if (count < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch size ", size, " has a negative count ", count));
    }
    if (count > kMaxHistoryRequests - total) {
      return absl::InvalidArgumentError(
          absl::StrCat("the history holds more than ", kMaxHistoryRequests, " requests"));
    }
    total += count;
  }
  if (total == 0) return absl::InvalidArgumentError("the batch-size history has no requests");
  return absl::OkStatus();
}

absl::Status LineError(const std::string& source, int line, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", message));
}

}  // namespace

absl::Status ParseHistoryLines(const std::string& text, const std::string& source,
                               absl::string_view form, absl::string_view what,
                               const std::function<absl::Status(absl::string_view key,
                                                                int64_t count)>& add) {
  int64_t total = 0;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() > 2) {
      return LineError(source, line_number,
                       absl::StrCat("expected ", form, ", got '", line.substr(0, 64), "'"));
    }
    int64_t count = 1;
    if (fields.size() == 2) {
      const absl::string_view count_text = absl::StripAsciiWhitespace(fields[1]);
      if (!absl::SimpleAtoi(count_text, &count)) {
        return LineError(source, line_number,
                         absl::StrCat("count '", count_text, "' is not an integer"));
      }
      if (count < 0) {
        return LineError(source, line_number, absl::StrCat("count ", count, " is negative"));
      }
    }
    if (absl::Status added = add(absl::StripAsciiWhitespace(fields[0]), count); !added.ok()) {
      return LineError(source, line_number, added.message());
    }
    if (count > kMaxHistoryRequests - total) {
      return LineError(source, line_number,
                       absl::StrCat("the history holds more than ", kMaxHistoryRequests,
                                    " requests"));
    }
    total += count;
  }
  if (total == 0) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", what, " has no requests"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadHistoryText(const std::string& path, absl::string_view what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", what, " '", path, "'"));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read ", what, " '", path, "'"));
  return text.str();
}

absl::StatusOr<BatchHistogram> ParseBatchHistory(const std::string& text,
                                                 const std::string& source) {
  BatchHistogram h;
  RETURN_IF_ERROR(ParseHistoryLines(
      text, source, "`size` or `size,count`", "the batch-size history",
      [&h](absl::string_view size_text, int64_t count) -> absl::Status {
        int64_t size = 0;
        if (!absl::SimpleAtoi(size_text, &size)) {
          return absl::InvalidArgumentError(
              absl::StrCat("batch size '", size_text, "' is not an integer"));
        }
        if (size < 1) {
          return absl::InvalidArgumentError(absl::StrCat("batch size ", size, " is not positive"));
        }
        if (size > kMaxHistoryBatchSize) {
          return absl::InvalidArgumentError(
              absl::StrCat("batch size ", size, " is above ", kMaxHistoryBatchSize));
        }
        if (count > 0) h[size] += count;
        return absl::OkStatus();
      }));
  return h;
}

absl::StatusOr<BatchHistogram> ReadBatchHistory(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadHistoryText(path, "batch-size history"));
  return ParseBatchHistory(text, path);
}

int64_t PaddedRows(int64_t rows, const std::vector<int64_t>& sorted_sizes) {
  const int64_t chunk = sorted_sizes.back();
  const int64_t remainder = rows <= chunk ? rows : rows % chunk;
  if (remainder == 0) return 0;
  return *std::lower_bound(sorted_sizes.begin(), sorted_sizes.end(), remainder) - remainder;
}

double ExpectedPaddedRows(const BatchHistogram& h, const std::vector<int64_t>& sizes) {
  const int64_t requests = TotalRequests(h);
  if (requests == 0) return 0.0;
  if (sizes.empty()) return std::numeric_limits<double>::infinity();
  std::vector<int64_t> sorted = sizes;
  std::sort(sorted.begin(), sorted.end());
  return static_cast<double>(TotalPaddedRows(h, sorted)) / static_cast<double>(requests);
}

int64_t TopBatchSize(const BatchHistogram& h, std::optional<int64_t> max_batch_size) {
  int64_t largest = 0;
  for (const auto& [size, count] : h) {
    if (count > 0) largest = std::max(largest, size);
  }
  if (max_batch_size.has_value() && *max_batch_size >= 1) {
    largest = std::min(largest, *max_batch_size);
  }
  return largest;
}

// Why the dynamic program over the needed sizes is exact.
//
// Fix top T = TopBatchSize(). Every allowed set S has max(S) = T, so the chunk
// size is T whatever else S holds, and each request needs a fixed number of
// rows n (b itself when b <= T, else b mod T; nothing when that is 0). Let D
// be these needed sizes together with T. Take any s in S that is not in D
// (so s < T) and let p be the next smaller size in S (0 if none). The
// requests s serves are exactly those whose n lies in (p, s]. If there are
// some, let d be the largest such n: d is in D and p < d < s, and putting d
// in place of s serves the same requests with s - d fewer padded rows each and
// changes nothing for any other request. If there are none, dropping s changes
// nothing. Repeating this moves S into D without raising its cost, so some
// optimal set lies within D.
//
// Within D = {d_0 < ... < d_{m-1} = T} with counts w_i, a set of sizes splits
// the d_i into runs of consecutive elements, each served by its last element.
// f[k][j] = the fewest padded rows for d_0..d_j using k sizes, the largest
// d_j; f[1][j] = run(0, j); f[k][j] = min over i < j of f[k-1][i] +
// run(i+1, j), where run(a, j) = sum_{a<=t<=j} w_t (d_j - d_t). Since m > N
// when the program runs and an extra size never adds padding, f[N][m-1] is
// the optimum. O(N m^2) time for m distinct needed sizes.
absl::StatusOr<SizeChoice> ChooseBatchSizes(const BatchHistogram& h, int num_sizes,
                                            std::optional<int64_t> max_batch_size) {
  if (num_sizes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the number of batch sizes must be at least 1, got ", num_sizes));
  }
  if (max_batch_size.has_value() && *max_batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the maximum batch size must be at least 1, got ", *max_batch_size));
  }
  RETURN_IF_ERROR(ValidateHistogram(h));

  const int64_t top = TopBatchSize(h, max_batch_size);
  const std::vector<NeededSize> needed = NeededSizes(h, top);
  const size_t m = needed.size();
  SizeChoice choice;
  if (m <= static_cast<size_t>(num_sizes)) {
    for (const NeededSize& n : needed) choice.sizes.push_back(n.size);
    choice.expected_padded_rows = ExpectedPaddedRows(h, choice.sizes);
    return choice;
  }

  // Prefix sums: count_prefix[j] = sum_{t<j} w_t, rows_prefix[j] = sum_{t<j} w_t d_t.
  std::vector<int64_t> count_prefix(m + 1, 0);
  std::vector<int64_t> rows_prefix(m + 1, 0);
  for (size_t t = 0; t < m; ++t) {
    count_prefix[t + 1] = count_prefix[t] + needed[t].count;
    rows_prefix[t + 1] = rows_prefix[t] + needed[t].count * needed[t].size;
  }
  const auto run = [&](size_t a, size_t j) {  // d_a..d_j served by d_j
    return needed[j].size * (count_prefix[j + 1] - count_prefix[a]) -
           (rows_prefix[j + 1] - rows_prefix[a]);
  };

  constexpr int64_t kUnreachable = std::numeric_limits<int64_t>::max();
  const size_t n = static_cast<size_t>(num_sizes);
  std::vector<std::vector<int64_t>> best(n + 1, std::vector<int64_t>(m, kUnreachable));
  std::vector<std::vector<size_t>> previous(n + 1, std::vector<size_t>(m, 0));
  for (size_t j = 0; j < m; ++j) best[1][j] = run(0, j);
  for (size_t k = 2; k <= n; ++k) {
    for (size_t j = k - 1; j < m; ++j) {
      for (size_t i = k - 2; i < j; ++i) {
        if (best[k - 1][i] == kUnreachable) continue;
        const int64_t cost = best[k - 1][i] + run(i + 1, j);
        if (cost < best[k][j]) {
          best[k][j] = cost;
          previous[k][j] = i;
        }
      }
    }
  }

  size_t j = m - 1;
  for (size_t k = n; k >= 1; --k) {
    choice.sizes.push_back(needed[j].size);
    if (k > 1) j = previous[k][j];
  }
  std::reverse(choice.sizes.begin(), choice.sizes.end());
  choice.expected_padded_rows = ExpectedPaddedRows(h, choice.sizes);
  return choice;
}

SizeChoice PowerOfTwoLadder(const BatchHistogram& h, int num_sizes,
                            std::optional<int64_t> max_batch_size) {
  SizeChoice ladder;
  int64_t largest = 0;
  for (const auto& [size, count] : h) {
    if (count > 0) largest = std::max(largest, size);
  }
  if (largest == 0) return ladder;
  int64_t top = 1;
  while (top < largest) top *= 2;
  if (max_batch_size.has_value() && *max_batch_size >= 1) top = std::min(top, *max_batch_size);

  ladder.sizes.push_back(top);
  int64_t rung = 1;  // the largest power of two below top
  while (rung * 2 < top) rung *= 2;
  for (int i = 1; i < std::max(num_sizes, 1) && rung < top; ++i) {
    ladder.sizes.push_back(rung);
    if (rung == 1) break;
    rung /= 2;
  }
  std::reverse(ladder.sizes.begin(), ladder.sizes.end());
  ladder.expected_padded_rows = ExpectedPaddedRows(h, ladder.sizes);
  return ladder;
}

}  // namespace graphserve
