#pragma once
// A reader of Prometheus' text exposition format (version 0.0.4), just what
// `graphserve-capture select --from-metrics` needs from a /metrics page: the
// samples, each a name, its labels and a value. Comment lines (# HELP,
// # TYPE and any other) are skipped; families and types are not kept.
//
//   graphserve_request_rows_bucket{model="mlp",version="1",le="4"} 17
//
// Label values may hold the format's three escapes (\\, \" and \n); a value
// may be a float, +Inf, -Inf or NaN; a trailing integer timestamp is read and
// dropped.

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphserve {

struct MetricSample {
  std::string name;
  // In the order written, values unescaped.
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;

  // The value of label `key`, or null when the sample has none.
  [[nodiscard]] const std::string* Label(absl::string_view key) const;
};

// Every sample of `text`, in order. InvalidArgument naming the 1-based line
// and what is wrong there: a malformed name, label or value, an unknown
// escape, an unterminated label value, trailing text.
absl::StatusOr<std::vector<MetricSample>> ParseMetricsText(absl::string_view text);

}  // namespace graphserve
