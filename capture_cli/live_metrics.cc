#include "capture_cli/live_metrics.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/metric_names.h"
#include "common/status.h"

namespace graphserve {
namespace {

// "1" < "2" < "10"; versions that are not numbers after those, by string.
bool VersionBefore(const std::string& a, const std::string& b) {
  int64_t x = 0, y = 0;
  const bool a_number = absl::SimpleAtoi(a, &x);
  const bool b_number = absl::SimpleAtoi(b, &y);
  if (a_number && b_number) return x < y;
  if (a_number != b_number) return a_number;
  return a < b;
}

std::string Quoted(const std::string& text) { return absl::StrCat("'", text, "'"); }

// model -> version -> the cumulative buckets of histogram samples `name`.
using HistogramBuckets =
    std::map<std::string, std::map<std::string, std::vector<CumulativeBucket>>>;

absl::StatusOr<HistogramBuckets> BucketsOfHistogram(const std::vector<MetricSample>& samples,
                                                    const char* name) {
  HistogramBuckets histograms;
  for (const MetricSample& sample : samples) {
    if (sample.name != name) continue;
    const std::string* m = sample.Label("model");
    const std::string* v = sample.Label("version");
    const std::string* le = sample.Label("le");
    if (m == nullptr || v == nullptr || le == nullptr) continue;
    double bound = 0;
    if (*le == "+Inf" || *le == "Inf") {
      bound = std::numeric_limits<double>::infinity();
    } else if (!absl::SimpleAtod(*le, &bound)) {
      return absl::InvalidArgumentError(absl::StrCat(name, " of model ", Quoted(*m),
                                                     " has a bucket le=\"", *le,
                                                     "\" that is not a number"));
    }
    histograms[*m][*v].push_back({bound, sample.value});
  }
  return histograms;
}

// Histogram `metric` (its bucket samples named `bucket_sample`) of `model`
// version `version`, when the page has it.
absl::StatusOr<std::optional<RowHistogram>> OptionalHistogram(
    const std::vector<MetricSample>& samples, const char* metric, const char* bucket_sample,
    const std::string& model, const std::string& version) {
  ASSIGN_OR_RETURN(const HistogramBuckets histograms, BucketsOfHistogram(samples, bucket_sample));
  const auto found = histograms.find(model);
  if (found == histograms.end()) return std::nullopt;
  const auto buckets = found->second.find(version);
  if (buckets == found->second.end()) return std::nullopt;
  absl::StatusOr<RowHistogram> histogram = RowHistogramFromBuckets(buckets->second);
  if (!histogram.ok()) {
    return absl::Status(histogram.status().code(),
                        absl::StrCat(metric, " of model ", Quoted(model), " version ", version,
                                     ": ", histogram.status().message()));
  }
  return *std::move(histogram);
}

}  // namespace

absl::StatusOr<LiveBatchSizes> ReadLiveBatchSizes(const std::vector<MetricSample>& samples,
                                                  const std::string& model,
                                                  const std::string& version) {
  ASSIGN_OR_RETURN(const HistogramBuckets histograms,
                   BucketsOfHistogram(samples, kRequestRowsBucketSample));
  if (histograms.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no graphserve_request_rows histogram there: is it GraphServe's metrics port (8002 "
        "unless --metrics-port moved it), and is a model loaded?"));
  }
  const auto found = histograms.find(model);
  if (found == histograms.end()) {
    std::vector<std::string> present;
    for (const auto& [name, versions] : histograms) {
      std::vector<std::string> numbers;
      for (const auto& [number, buckets] : versions) numbers.push_back(number);
      std::sort(numbers.begin(), numbers.end(), VersionBefore);
      present.push_back(
          absl::StrCat(Quoted(name), " (version ", absl::StrJoin(numbers, ", "), ")"));
    }
    return absl::NotFoundError(
        absl::StrCat("model ", Quoted(model),
                     " is not in the metrics; the models there: ", absl::StrJoin(present, ", ")));
  }
  std::vector<std::string> versions;
  for (const auto& [number, buckets] : found->second) versions.push_back(number);
  std::sort(versions.begin(), versions.end(), VersionBefore);
  const std::string chosen = version.empty() ? versions.back() : version;
  const auto buckets = found->second.find(chosen);
  if (buckets == found->second.end()) {
    return absl::NotFoundError(
        absl::StrCat("model ", Quoted(model), " has no version ", Quoted(chosen),
                     " in the metrics; its versions: ", absl::StrJoin(versions, ", ")));
  }
  LiveBatchSizes live;
  live.model = model;
  live.version = chosen;
  absl::StatusOr<RowHistogram> rows = RowHistogramFromBuckets(buckets->second);
  if (!rows.ok()) {
    return absl::Status(rows.status().code(), absl::StrCat("model ", Quoted(model), " version ",
                                                           chosen, ": ", rows.status().message()));
  }
  live.rows = *std::move(rows);
  ASSIGN_OR_RETURN(live.chunk_demand,
                   OptionalHistogram(samples, kChunkDemandRowsMetric, kChunkDemandRowsBucketSample,
                                     model, chosen));
  ASSIGN_OR_RETURN(live.lengths, OptionalHistogram(samples, kRequestLengthMetric,
                                                   kRequestLengthBucketSample, model, chosen));
  std::set<int64_t> sizes, extents;
  for (const MetricSample& sample : samples) {
    if (sample.name != kGraphLaunchesMetric) continue;
    const std::string* m = sample.Label("model");
    const std::string* v = sample.Label("version");
    const std::string* size = sample.Label("batch_size");
    int64_t parsed = 0;
    if (m == nullptr || v == nullptr || size == nullptr || *m != model || *v != chosen) continue;
    if (absl::SimpleAtoi(*size, &parsed) && parsed > 0) sizes.insert(parsed);
    // A bucket of one extent, "128"; one of two ("224x224") is no length.
    const std::string* bucket = sample.Label("bucket");
    if (bucket != nullptr && absl::SimpleAtoi(*bucket, &parsed) && parsed > 0) {
      extents.insert(parsed);
    }
  }
  live.captured_sizes.assign(sizes.begin(), sizes.end());
  live.captured_buckets.assign(extents.begin(), extents.end());
  return live;
}

absl::StatusOr<std::string> FetchMetricsText(const std::string& url, absl::Duration timeout) {
  // GraphServe serves its metrics over plain HTTP, and this build of the
  // HTTP library has no TLS: an https:// URL is refused here, by name,
  // rather than failing later with a generic error.
  if (absl::StartsWith(url, "https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics URL '", url, "': https is not supported (GraphServe serves /metrics over plain http://)"));
  }
  if (!absl::StartsWith(url, "http://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics URL '", url, "' must start with http://"));
  }
  const size_t authority = url.find("://") + 3;
  const size_t slash = url.find('/', authority);
  const std::string origin = url.substr(0, slash);
  const std::string path = slash == std::string::npos ? "/metrics" : url.substr(slash);
  if (origin.size() == authority) {
    return absl::InvalidArgumentError(absl::StrCat("metrics URL '", url, "' names no host"));
  }
  httplib::Client client(origin);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("metrics URL '", url, "' is not a valid URL"));
  }
  const auto micros = std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  client.set_connection_timeout(micros);
  client.set_read_timeout(micros);
  const httplib::Result result = client.Get(path);
  if (!result) {
    std::string why;
    switch (result.error()) {
      case httplib::Error::Connection:
        why = "cannot connect (nothing listens there, or the host is unknown or unreachable)";
        break;
      case httplib::Error::ConnectionTimeout:
        why = absl::StrCat("connecting timed out after ", absl::FormatDuration(timeout));
        break;
      case httplib::Error::Read:
        why = absl::StrCat("no complete answer (the connection closed, or ",
                           absl::FormatDuration(timeout), " passed)");
        break;
      default:
        why = absl::StrCat("the request failed (", httplib::to_string(result.error()), ")");
    }
    return absl::UnavailableError(absl::StrCat("cannot read ", url, ": ", why));
  }
  if (result->status != 200) {
    return absl::UnavailableError(absl::StrCat("cannot read ", url, ": HTTP status ",
                                               result->status,
                                               result->status == 404 ? " (no such path)" : ""));
  }
  return result->body;
}

absl::StatusOr<LiveBatchSizes> ReadLiveBatchSizesFromUrl(const std::string& url,
                                                         const std::string& model,
                                                         const std::string& version) {
  ASSIGN_OR_RETURN(const std::string text, FetchMetricsText(url));
  absl::StatusOr<std::vector<MetricSample>> samples = ParseMetricsText(text);
  if (!samples.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(url, " is not Prometheus text: ", samples.status().message()));
  }
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(*samples, model, version);
  if (!live.ok()) {
    return absl::Status(live.status().code(), absl::StrCat(url, ": ", live.status().message()));
  }
  return live;
}

}  // namespace graphserve
