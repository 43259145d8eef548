#include "capture_cli/live_metrics.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planning/row_histogram_testing.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// Two models as the server lists them: mlp at versions 1 and 2 (2 with sizes
// 2, 8), dlrm_dense at 1.
std::vector<MetricSample> ServerSamples() {
  std::vector<MetricSample> samples;
  auto add_histogram = [&](const std::string& model, const std::string& version,
                           const std::vector<int64_t>& requests) {
    for (const CumulativeBucket& bucket : CumulativeBucketsOf(ServerRowBounds(8), requests)) {
      const std::string le =
          std::isinf(bucket.upper_bound) ? "+Inf" : absl::StrCat(bucket.upper_bound);
      samples.push_back({"graphserve_request_rows_bucket",
                         {{"model", model}, {"version", version}, {"le", le}},
                         bucket.cumulative_count});
    }
    samples.push_back({"graphserve_request_rows_count",
                       {{"model", model}, {"version", version}},
                       static_cast<double>(requests.size())});
  };
  add_histogram("mlp", "1", {1, 1});
  add_histogram("mlp", "2", {3, 3, 7});
  add_histogram("dlrm_dense", "1", {});
  for (const auto& [version, size] :
       std::vector<std::pair<std::string, std::string>>{{"1", "4"}, {"2", "8"}, {"2", "2"}}) {
    samples.push_back({"graphserve_graph_launches_total",
                       {{"model", "mlp"}, {"version", version}, {"batch_size", size}},
                       0});
  }
  return samples;
}

TEST(ReadLiveBatchSizes, TakesTheLatestVersionByDefault) {
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(ServerSamples(), "mlp", "");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(live->version, "2");
  EXPECT_THAT(live->rows.histogram, ElementsAre(Pair(3, 2), Pair(7, 1)));
  EXPECT_THAT(live->captured_sizes, ElementsAre(2, 8));  // version 2's, ascending
}

TEST(ReadLiveBatchSizes, ReadsTheVersionAskedFor) {
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(ServerSamples(), "mlp", "1");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_THAT(live->rows.histogram, ElementsAre(Pair(1, 2)));
  EXPECT_THAT(live->captured_sizes, ElementsAre(4));
}

TEST(ReadLiveBatchSizes, ReadsTheLengthsAndBucketsOfAModelWithASequence) {
  std::vector<MetricSample> samples = ServerSamples();
  // bert version 1: lengths 5, 5, 24 on bounds 8, 16, 24, 32; served at
  // sizes 1, 8 x buckets 8, 32 (one sample per size, bucket and stream).
  for (const CumulativeBucket& bucket : CumulativeBucketsOf(
           {8, 16, 24, 32, std::numeric_limits<double>::infinity()}, {5, 5, 24})) {
    const std::string le =
        std::isinf(bucket.upper_bound) ? "+Inf" : absl::StrCat(bucket.upper_bound);
    samples.push_back({"graphserve_request_length_bucket",
                       {{"model", "bert"}, {"version", "1"}, {"le", le}},
                       bucket.cumulative_count});
  }
  for (const CumulativeBucket& bucket : CumulativeBucketsOf(ServerRowBounds(8), {1, 1, 2})) {
    const std::string le =
        std::isinf(bucket.upper_bound) ? "+Inf" : absl::StrCat(bucket.upper_bound);
    samples.push_back({"graphserve_request_rows_bucket",
                       {{"model", "bert"}, {"version", "1"}, {"le", le}},
                       bucket.cumulative_count});
  }
  for (const char* size : {"1", "8"}) {
    for (const char* bucket : {"32", "8"}) {
      samples.push_back({"graphserve_graph_launches_total",
                         {{"model", "bert"}, {"version", "1"}, {"batch_size", size},
                          {"bucket", bucket}, {"stream", "0"}},
                         0});
    }
  }
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(samples, "bert", "");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(live->lengths.has_value());
  EXPECT_THAT(live->lengths->histogram, ElementsAre(Pair(8, 2), Pair(24, 1)));
  EXPECT_THAT(live->captured_sizes, ElementsAre(1, 8));
  EXPECT_THAT(live->captured_buckets, ElementsAre(8, 32));
  // A model without a sequence has neither.
  absl::StatusOr<LiveBatchSizes> mlp = ReadLiveBatchSizes(samples, "mlp", "2");
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  EXPECT_FALSE(mlp->lengths.has_value());
  EXPECT_TRUE(mlp->captured_buckets.empty());
}

// Note [Demand rows]: a model under dynamic batching has its chunks' demand
// histogram, read beside the requests' rows (a model without dynamic
// batching exports it empty).
TEST(ReadLiveBatchSizes, ReadsTheChunksDemandBesideTheRequestsRows) {
  std::vector<MetricSample> samples = ServerSamples();
  const auto add_demand = [&](const std::string& version, const std::vector<int64_t>& chunks) {
    for (const CumulativeBucket& bucket : CumulativeBucketsOf(ServerRowBounds(8), chunks)) {
      const std::string le =
          std::isinf(bucket.upper_bound) ? "+Inf" : absl::StrCat(bucket.upper_bound);
      samples.push_back({"graphserve_chunk_demand_rows_bucket",
                         {{"model", "mlp"}, {"version", version}, {"le", le}},
                         bucket.cumulative_count});
    }
  };
  add_demand("2", {8, 8, 6});
  add_demand("1", {});
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(samples, "mlp", "2");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(live->chunk_demand.has_value());
  EXPECT_THAT(live->chunk_demand->histogram, ElementsAre(Pair(6, 1), Pair(8, 2)));
  EXPECT_THAT(live->rows.histogram, ElementsAre(Pair(3, 2), Pair(7, 1)));  // the requests'
  EXPECT_FALSE(live->rows_are_demand);
  live = ReadLiveBatchSizes(samples, "mlp", "1");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE(live->chunk_demand.has_value());
  EXPECT_EQ(live->chunk_demand->requests, 0);
  live = ReadLiveBatchSizes(samples, "dlrm_dense", "1");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_FALSE(live->chunk_demand.has_value());
}

TEST(ReadLiveBatchSizes, VersionsCompareAsNumbers) {
  std::vector<MetricSample> samples;
  for (const char* version : {"9", "10"}) {
    samples.push_back({"graphserve_request_rows_bucket",
                       {{"model", "m"}, {"version", version}, {"le", "+Inf"}},
                       0});
  }
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(samples, "m", "");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(live->version, "10");
  EXPECT_EQ(live->rows.requests, 0);
  EXPECT_TRUE(live->captured_sizes.empty());
}

TEST(ReadLiveBatchSizes, AbsentModelOrVersionListsWhatIsThere) {
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(ServerSamples(), "resnet", "");
  EXPECT_EQ(live.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(live.status().message()),
              HasSubstr("model 'resnet' is not in the metrics; the models there: 'dlrm_dense' "
                        "(version 1), 'mlp' (version 1, 2)"));

  live = ReadLiveBatchSizes(ServerSamples(), "mlp", "3");
  EXPECT_EQ(live.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(live.status().message()),
              HasSubstr("model 'mlp' has no version '3' in the metrics; its versions: 1, 2"));

  live = ReadLiveBatchSizes({{"nv_inference_count", {{"model", "mlp"}}, 1}}, "mlp", "");
  EXPECT_EQ(live.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(live.status().message()), HasSubstr("metrics port"));
}

TEST(ReadLiveBatchSizes, AMalformedHistogramNamesTheModel) {
  std::vector<MetricSample> samples = {
      {"graphserve_request_rows_bucket", {{"model", "m"}, {"version", "1"}, {"le", "1"}}, 1}};
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizes(samples, "m", "");
  EXPECT_THAT(std::string(live.status().message()),
              HasSubstr("model 'm' version 1: the histogram has no le=\"+Inf\" bucket"));
}

// A metrics page served on a free loopback port for the test's lifetime.
class MetricsPage : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/metrics", [](const httplib::Request&, httplib::Response& response) {
      response.set_content(
          "graphserve_request_rows_bucket{model=\"m\",version=\"1\",le=\"+Inf\"} 0\n",
          "text/plain; version=0.0.4");
    });
    server_.Get("/garbage", [](const httplib::Request&, httplib::Response& response) {
      response.set_content("<html>not metrics</html>\n", "text/html");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    // The socket listens once bound: connections wait for the thread.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::string Url(const std::string& path) {
    return absl::StrCat("http://127.0.0.1:", port_, path);
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(MetricsPage, FetchesTheBodyAndDefaultsToSlashMetrics) {
  for (const std::string& url : {Url("/metrics"), Url("")}) {
    absl::StatusOr<std::string> text = FetchMetricsText(url);
    ASSERT_TRUE(text.ok()) << url << ": " << text.status();
    EXPECT_THAT(*text, HasSubstr("graphserve_request_rows_bucket")) << url;
  }
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizesFromUrl(Url("/metrics"), "m", "");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(live->rows.requests, 0);
}

TEST_F(MetricsPage, AnotherStatusOrTextNamesTheUrl) {
  absl::StatusOr<std::string> text = FetchMetricsText(Url("/nothing"));
  EXPECT_EQ(text.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(text.status().message()),
              HasSubstr(absl::StrCat("cannot read ", Url("/nothing"), ": HTTP status 404")));
  absl::StatusOr<LiveBatchSizes> live = ReadLiveBatchSizesFromUrl(Url("/garbage"), "m", "");
  EXPECT_THAT(std::string(live.status().message()),
              HasSubstr(absl::StrCat(Url("/garbage"), " is not Prometheus text: line 1")));
}

TEST(FetchMetricsText, AClosedPortNamesTheUrlAndWhy) {
  // A port that was free a moment ago: bound, read, closed.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);
  const std::string url = absl::StrCat("http://127.0.0.1:", ntohs(address.sin_port), "/metrics");
  absl::StatusOr<std::string> text = FetchMetricsText(url);
  EXPECT_EQ(text.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(text.status().message()),
              HasSubstr(absl::StrCat("cannot read ", url, ": cannot connect")));
}

TEST(FetchMetricsText, OnlyHttpUrls) {
  for (const char* url : {"localhost:8002/metrics", "ftp://host/metrics", "http:///metrics"}) {
    absl::StatusOr<std::string> text = FetchMetricsText(url);
    EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(std::string(text.status().message()), HasSubstr(url));
  }
  // No TLS in this build: refused by name, before any connection.
  const absl::StatusOr<std::string> https = FetchMetricsText("https://127.0.0.1:1/metrics");
  EXPECT_EQ(https.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(https.status().message()), HasSubstr("https is not supported"));
}

}  // namespace
}  // namespace graphserve
