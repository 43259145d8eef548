#include "capture_cli/metrics_text.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// As server/metrics.cc writes it (prometheus-cpp's serializer), one family of
// each kind the select command reads.
constexpr char kServerText[] =
    "# HELP graphserve_request_rows Rows (batch size) of each successful request\n"
    "# TYPE graphserve_request_rows histogram\n"
    "graphserve_request_rows_count{model=\"mlp\",version=\"1\"} 3\n"
    "graphserve_request_rows_sum{model=\"mlp\",version=\"1\"} 5\n"
    "graphserve_request_rows_bucket{model=\"mlp\",version=\"1\",le=\"1\"} 2\n"
    "graphserve_request_rows_bucket{model=\"mlp\",version=\"1\",le=\"+Inf\"} 3\n"
    "\n"
    "# TYPE graphserve_graph_launches_total counter\n"
    "graphserve_graph_launches_total{model=\"mlp\",version=\"1\",batch_size=\"4\"} 1\n";

TEST(ParseMetricsText, ReadsSamplesAndSkipsComments) {
  absl::StatusOr<std::vector<MetricSample>> samples = ParseMetricsText(kServerText);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 5u);
  const MetricSample& bucket = (*samples)[3];
  EXPECT_EQ(bucket.name, "graphserve_request_rows_bucket");
  EXPECT_THAT(bucket.labels,
              ElementsAre(Pair("model", "mlp"), Pair("version", "1"), Pair("le", "+Inf")));
  EXPECT_EQ(bucket.value, 3);
  ASSERT_NE(bucket.Label("le"), nullptr);
  EXPECT_EQ(*bucket.Label("le"), "+Inf");
  EXPECT_EQ(bucket.Label("batch_size"), nullptr);
  EXPECT_EQ(*(*samples)[4].Label("batch_size"), "4");
}

TEST(ParseMetricsText, UnescapesLabelValues) {
  // A model name holding a quote, a backslash, a newline and a comma with
  // braces: the three escapes of the format, and separators inside quotes.
  absl::StatusOr<std::vector<MetricSample>> samples =
      ParseMetricsText("m{model=\"a\\\"b\\\\c\\nd,{e}\"} 1\n");
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_EQ(*(*samples)[0].Label("model"), "a\"b\\c\nd,{e}");
}

TEST(ParseMetricsText, ReadsValueForms) {
  absl::StatusOr<std::vector<MetricSample>> samples = ParseMetricsText(
      "a 1.5e3\n"
      "b{} -Inf\n"
      "c +Inf\n"
      "d NaN\n"
      "e{x=\"1\",} 7 1712345678901\n"         // trailing comma, timestamp
      "  f { x = \"2\" , y=\"3\" }\t0\r\n");  // blanks between tokens, CRLF
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 6u);
  EXPECT_EQ((*samples)[0].value, 1500);
  EXPECT_TRUE(std::isinf((*samples)[1].value) && (*samples)[1].value < 0);
  EXPECT_TRUE(std::isinf((*samples)[2].value) && (*samples)[2].value > 0);
  EXPECT_TRUE(std::isnan((*samples)[3].value));
  EXPECT_EQ((*samples)[4].value, 7);
  EXPECT_THAT((*samples)[4].labels, ElementsAre(Pair("x", "1")));
  EXPECT_EQ((*samples)[5].name, "f");
  EXPECT_THAT((*samples)[5].labels, ElementsAre(Pair("x", "2"), Pair("y", "3")));
}

TEST(ParseMetricsText, EmptyTextHasNoSamples) {
  absl::StatusOr<std::vector<MetricSample>> samples = ParseMetricsText("# only a comment\n\n");
  ASSERT_TRUE(samples.ok());
  EXPECT_TRUE(samples->empty());
}

TEST(ParseMetricsText, ErrorsNameTheLineAndTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ok 1\n9bad 1\n", "line 2: expected a metric name"},
      {"m{model=\"x} 1\n", "line 1: label model's value is not closed"},
      {"m{model=\"a\\tb\"} 1\n", "unknown escape '\\t'"},
      {"m{model=\"a\" version=\"1\"} 1\n", "expected ',' or '}'"},
      {"m{model} 1\n", "expected '=' after label model"},
      {"m{model=x} 1\n", "expected '\"' to open label model's value"},
      {"m{1=\"x\"} 1\n", "expected a label name or '}'"},
      {"m\n", "line 1: expected a value, got ''"},
      {"m one\n", "expected a value, got 'one'"},
      {"m 1 noon\n", "expected an integer timestamp"},
      {"m 1 2 3\n", "unexpected '3' after the timestamp"},
  };
  for (const auto& [text, message] : cases) {
    absl::StatusOr<std::vector<MetricSample>> samples = ParseMetricsText(text);
    ASSERT_FALSE(samples.ok()) << text;
    EXPECT_EQ(samples.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(samples.status().message()), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace graphserve
