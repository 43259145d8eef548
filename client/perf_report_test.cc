#include "client/perf_report.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

TEST(PercentileTest, NearestRankOnTheNMinusOneSpacing) {
  std::vector<int64_t> hundred;
  for (int64_t i = 1; i <= 100; ++i) hundred.push_back(i);
  // Index round(p / 100 * 99): 49.5 -> 50, 89.1 -> 89, 94.05 -> 94, 98.01 -> 98.
  EXPECT_EQ(Percentile(hundred, 50), 51);
  EXPECT_EQ(Percentile(hundred, 90), 90);
  EXPECT_EQ(Percentile(hundred, 95), 95);
  EXPECT_EQ(Percentile(hundred, 99), 99);
  EXPECT_EQ(Percentile(hundred, 0), 1);
  EXPECT_EQ(Percentile(hundred, 100), 100);

  const std::vector<int64_t> four = {10, 20, 30, 40};
  EXPECT_EQ(Percentile(four, 50), 30);  // 1.5 rounds up to index 2
  EXPECT_EQ(Percentile(four, 99), 40);  // 2.97 -> 3
  EXPECT_EQ(Percentile(std::vector<int64_t>{7}, 99), 7);
}

TEST(PercentileTest, SummaryIsOrderedAndAveraged) {
  const LatencySummary summary = SummarizeLatencies({500, 100, 400, 200, 300, 1000});
  EXPECT_EQ(summary.count, 6);
  // Sorted 100 200 300 400 500 1000; p50 index round(2.5) = 3.
  EXPECT_EQ(summary.p50_ns, 400);
  EXPECT_EQ(summary.p90_ns, 1000);  // round(4.5) = 5
  EXPECT_EQ(summary.p99_ns, 1000);
  EXPECT_EQ(summary.avg_ns, 416);  // 2500 / 6, truncated
  EXPECT_LE(summary.p50_ns, summary.p90_ns);
  EXPECT_LE(summary.p90_ns, summary.p95_ns);
  EXPECT_LE(summary.p95_ns, summary.p99_ns);
  EXPECT_EQ(SummarizeLatencies({}).count, 0);
}

TEST(PerfCsvTest, HeaderIsPerfAnalyzers) {
  EXPECT_EQ(PerfCsvHeader(LoadMode::kConcurrency, {.server_stats = true}),
            "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
            "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
            "p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,"
            "response wait");
  EXPECT_EQ(PerfCsvHeader(LoadMode::kRequestRate, {}),
            "Request Rate,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,"
            "p95 latency,p99 latency,Avg latency,request/response,response wait");
}

LevelResult ExampleLevel() {
  LevelResult level;
  level.level = 4;
  level.batch_size = 2;
  level.completed = 1000;
  level.infer_per_sec = 1234.5678;
  level.latency = {.count = 1000,
                   .p50_ns = 700'900,
                   .p90_ns = 900'000,
                   .p95_ns = 950'000,
                   .p99_ns = 1'200'000,
                   .avg_ns = 750'000};
  level.avg_send_ns = 12'345;
  level.avg_receive_ns = 3'999;
  level.server = ServerAverages{.requests = 1000,
                                .queue_ns = 100'000,
                                .compute_input_ns = 20'000,
                                .compute_infer_ns = 400'000,
                                .compute_output_ns = 30'000};
  return level;
}

TEST(PerfCsvTest, RowInMicrosecondsUnderTheHeader) {
  const LevelResult level = ExampleLevel();
  const std::string row = PerfCsvRow(LoadMode::kConcurrency, level, {.server_stats = true});
  // Network+Server = 750000 - 12345 - 3999 - (100000 + 20000 + 400000 + 30000) = 183656 ns.
  // request/response = 12 + 3; response wait = 750 - 12 - 3.
  EXPECT_EQ(row, "4,1234.57,12,183,100,20,400,30,3,700,900,950,1200,750,15,735");
  const std::vector<std::string> header =
      absl::StrSplit(PerfCsvHeader(LoadMode::kConcurrency, {.server_stats = true}), ',');
  const std::vector<std::string> cells = absl::StrSplit(row, ',');
  EXPECT_EQ(header.size(), cells.size());
}

TEST(PerfCsvTest, RequestRateAndOverheadClampedAtZero) {
  LevelResult level = ExampleLevel();
  level.level = 250.5;
  level.server->compute_infer_ns = 2'000'000;  // the server claims more than the client saw
  EXPECT_EQ(PerfCsvRow(LoadMode::kRequestRate, level, {.server_stats = true}),
            "250.5,1234.57,12,0,100,20,2000,30,3,700,900,950,1200,750,15,735");
}

TEST(PerfCsvTest, ServerColumnsOnlyWhenEveryLevelHasThem) {
  LevelResult with = ExampleLevel();
  LevelResult without = ExampleLevel();
  without.level = 8;
  without.server.reset();
  const std::string both = FormatPerfCsv(LoadMode::kConcurrency, {with, with});
  EXPECT_TRUE(
      absl::StartsWith(both, PerfCsvHeader(LoadMode::kConcurrency, {.server_stats = true}) + "\n"));
  const std::string mixed = FormatPerfCsv(LoadMode::kConcurrency, {with, without});
  const std::vector<std::string> lines = absl::StrSplit(mixed, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], PerfCsvHeader(LoadMode::kConcurrency, {}));
  EXPECT_EQ(lines[2], "8,1234.57,12,3,700,900,950,1200,750,15,735");
}

// Note [The served floor]: served p50 700.9 us - floor p50 95 us - replay
// 41.5 us = 564.4 us.
LevelResult ExampleLevelWithFloor() {
  LevelResult level = ExampleLevel();
  level.floor =
      FloorResult{.latency = {.count = 900, .p50_ns = 95'000, .p99_ns = 180'000}, .completed = 900};
  level.replay = ReplayCost{.us = 41.5, .captured_size = 2};
  return level;
}

TEST(PerfCsvTest, FloorColumnsFollowPerfAnalyzers) {
  const PerfCsvColumns columns{.server_stats = true, .floor = true};
  EXPECT_TRUE(absl::EndsWith(PerfCsvHeader(LoadMode::kConcurrency, columns),
                             ",response wait,Floor p50 latency,Floor p99 latency,"
                             "Full-chunk replay,Served overhead"));
  const LevelResult level = ExampleLevelWithFloor();
  ASSERT_EQ(ServedOverheadNs(level), 700'900 - 95'000 - 41'500);
  EXPECT_EQ(PerfCsvRow(LoadMode::kConcurrency, level, columns),
            "4,1234.57,12,183,100,20,400,30,3,700,900,950,1200,750,15,735,95,180,41.5,564");
  // An unknown replay leaves both its cells and the overhead's empty.
  LevelResult unknown = level;
  unknown.replay = ReplayCost{.note = "no measured costs"};
  EXPECT_FALSE(ServedOverheadNs(unknown).has_value());
  EXPECT_TRUE(absl::EndsWith(PerfCsvRow(LoadMode::kConcurrency, unknown, columns), ",95,180,,"));
  // Floor columns only when every level has a floor.
  const std::string mixed = FormatPerfCsv(LoadMode::kConcurrency, {level, ExampleLevel()});
  EXPECT_TRUE(absl::StartsWith(
      mixed, PerfCsvHeader(LoadMode::kConcurrency, {.server_stats = true}) + "\n"));
}

TEST(PerfTableTest, FloorBesideTheServedNumbersAndTheReplaySaid) {
  LevelResult level = ExampleLevelWithFloor();
  level.replay.captured_size = 4;
  level.replay.note = "batch 2 is not captured: the cost of 4, the size it pads to";
  const std::string table = FormatPerfTable(LoadMode::kConcurrency, {level});
  EXPECT_THAT(table, HasSubstr("floor p50  floor p99 replay us overhead us"));
  EXPECT_THAT(table, HasSubstr("95.0      180.0      41.5       564.4"));
  EXPECT_THAT(table, HasSubstr("overhead = p50 - floor p50 - replay"));
  EXPECT_THAT(table,
              HasSubstr("full-chunk replay of batch 2: 41.5 us, the model's measured graph replay "
                        "of batch 4 (batch 2 is not captured: the cost of 4, the size it pads "
                        "to)"));
  EXPECT_THAT(FormatLevelLine(LoadMode::kConcurrency, level),
              HasSubstr(", floor p50 95 usec, p99 180 usec, served overhead 564 usec"));
  level.replay = ReplayCost{.note = "the served config carries no measured costs"};
  EXPECT_THAT(FormatPerfTable(LoadMode::kConcurrency, {level}),
              HasSubstr("full-chunk replay of batch 2: unknown (the served config carries no "
                        "measured costs); served overhead not computed"));
}

TEST(PerfCsvTest, WritesTheFile) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/perf_report_test.csv");
  const std::string csv = FormatPerfCsv(LoadMode::kConcurrency, {ExampleLevel()});
  ASSERT_TRUE(WriteTextFile(path, csv).ok());
  std::ifstream file(path);
  std::stringstream contents;
  contents << file.rdbuf();
  EXPECT_EQ(contents.str(), csv);
  std::remove(path.c_str());
  EXPECT_FALSE(WriteTextFile("/nonexistent-dir/x.csv", csv).ok());
}

TEST(TimelineCsvTest, OneRowPerRequestOfEveryLevel) {
  LevelResult first{.level = 1000};
  first.timeline = {{.sent_ns = -2500, .latency_ns = 180'999, .ok = true},
                    {.sent_ns = 12'000, .latency_ns = 95'000, .ok = false}};
  LevelResult second{.level = 2500.5};
  second.timeline = {{.sent_ns = 7'000, .latency_ns = 1'000'000, .ok = true}};
  EXPECT_EQ(FormatTimelineCsv(LoadMode::kRequestRate, {first, second}),
            "Request Rate,Sent us,Latency us,OK\n"
            "1000,-2,180,1\n"
            "1000,12,95,0\n"
            "2500.5,7,1000,1\n");
  EXPECT_EQ(FormatTimelineCsv(LoadMode::kConcurrency, {}), "Concurrency,Sent us,Latency us,OK\n");
}

TEST(PerfTableTest, ShowsLevelsAndNamesErrors) {
  LevelResult level = ExampleLevel();
  level.errors = 3;
  level.first_error = "INTERNAL: injected failure";
  const std::string table = FormatPerfTable(LoadMode::kConcurrency, {level});
  EXPECT_TRUE(absl::StrContains(table, "concurrency")) << table;
  EXPECT_TRUE(absl::StrContains(table, "1234.6")) << table;
  EXPECT_TRUE(absl::StrContains(table, "700.9")) << table;  // p50 in us, one decimal
  EXPECT_TRUE(absl::StrContains(
      table, "Concurrency 4: 3 of 1000 requests failed; first: INTERNAL: injected failure"))
      << table;
  EXPECT_EQ(FormatLevelLine(LoadMode::kConcurrency, level),
            "Concurrency: 4, throughput: 1234.57 infer/sec, latency p50 700 usec, p99 1200 "
            "usec, 3 errors");
}

TEST(PerfTableTest, SaysWhoFellBehindTheSchedule) {
  LevelResult level = ExampleLevel();
  level.level = 5000;
  level.late_sends = 7;
  // Late with no send held back by the cap: the load generator fell behind.
  std::string table = FormatPerfTable(LoadMode::kRequestRate, {level});
  EXPECT_TRUE(absl::StrContains(table, ": 7 sends went out over 1000 us behind the schedule: the "
                                       "load generator did not keep up"))
      << table;
  // Sends held back by the cap: the server is the one behind.
  level.delayed_sends = 5;
  table = FormatPerfTable(LoadMode::kRequestRate, {level});
  EXPECT_TRUE(absl::StrContains(table, ": 5 sends went out late, held back by the cap")) << table;
  EXPECT_FALSE(absl::StrContains(table, "did not keep up")) << table;
}

}  // namespace
}  // namespace graphserve
