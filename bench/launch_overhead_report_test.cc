#include "bench/launch_overhead_report.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graphserve {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Two topologies with round numbers, so that every printed value can be
// written out by hand below.
LaunchOverheadReport SampleReport() {
  LaunchOverheadReport report;
  report.device_name = "NVIDIA H200";
  report.cuda_runtime_version = 13000;
  report.cuda_driver_version = 13010;
  report.warmup = 100;
  report.iters = 2000;
  report.topologies.push_back({.topology = "straight_line",
                               .description = "32 kernels one after another on 1 stream",
                               .streams = 1,
                               .stream = {.host_us = 80.0, .device_us = 90.0},
                               .graph = {.host_us = 4.0, .device_us = 30.0}});
  report.topologies.push_back({.topology = "fork_join",
                               .description = "1 kernel, 30 in parallel, 1 kernel",
                               .streams = 31,
                               .stream = {.host_us = 150.0, .device_us = 160.0},
                               .graph = {.host_us = 5.0, .device_us = 0.0}});
  return report;
}

TEST(MedianTest, OddCountIsTheMiddleValue) {
  EXPECT_EQ(Median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(Median({7.0}), 7.0);
}

TEST(MedianTest, EvenCountIsTheMeanOfTheTwoMiddleValues) {
  EXPECT_EQ(Median({4.0, 1.0, 3.0, 2.0}), 2.5);
  // Duplicates around the middle: sorted {1, 2, 2, 9}.
  EXPECT_EQ(Median({2.0, 9.0, 1.0, 2.0}), 2.0);
}

TEST(MedianTest, IgnoresOutliersThatAMeanWouldNot) {
  // One preempted iteration among five: the mean would be 202.
  EXPECT_EQ(Median({2.0, 2.0, 1000.0, 3.0, 3.0}), 3.0);
}

TEST(MedianTest, NoSamplesIsNaN) { EXPECT_TRUE(std::isnan(Median({}))); }

TEST(StreamOverGraphRatioTest, DividesAndRefusesMeaninglessDenominators) {
  EXPECT_DOUBLE_EQ(StreamOverGraphRatio(80.0, 4.0), 20.0);
  EXPECT_TRUE(std::isnan(StreamOverGraphRatio(80.0, 0.0)));
  EXPECT_TRUE(std::isnan(StreamOverGraphRatio(80.0, -1.0)));
  EXPECT_TRUE(std::isnan(StreamOverGraphRatio(kNaN, 4.0)));
  EXPECT_TRUE(std::isnan(StreamOverGraphRatio(80.0, kNaN)));
}

TEST(FormatLaunchOverheadTableTest, HeaderSaysDeviceIterationsAndWhatIsTimed) {
  const std::string table = FormatLaunchOverheadTable(SampleReport());
  EXPECT_THAT(table, HasSubstr("Launch overhead on NVIDIA H200 (CUDA runtime 13.0, driver 13.1): "
                               "32 empty kernels (<<<1,1>>>) per iteration, medians over 2000 "
                               "timed iterations after 100 warm-up iterations per row."));
  EXPECT_THAT(table, HasSubstr(std::string("- host us: ") + kLaunchOverheadHostTimeMeaning));
  EXPECT_THAT(table, HasSubstr(std::string("- device us: ") + kLaunchOverheadDeviceTimeMeaning));
  EXPECT_THAT(table, HasSubstr("- fork_join: 1 kernel, 30 in parallel, 1 kernel.\n"));
  EXPECT_THAT(table, HasSubstr("- CUDA_DEVICE_MAX_CONNECTIONS: unset (default 8).\n"));
}

TEST(FormatLaunchOverheadTableTest, OneRowPerMethodWithRatiosInTheGraphRow) {
  const std::string table = FormatLaunchOverheadTable(SampleReport());
  EXPECT_THAT(table, HasSubstr("| topology | method | host us | device us | "
                               "host ratio stream/graph | device ratio stream/graph |\n"
                               "|---|---|---:|---:|---:|---:|\n"
                               "| straight_line | stream | 80.00 | 90.00 |  |  |\n"
                               "| straight_line | graph | 4.00 | 30.00 | 20.00 | 3.00 |\n"
                               "| fork_join | stream | 150.00 | 160.00 |  |  |\n"
                               // A zero device time has no ratio.
                               "| fork_join | graph | 5.00 | 0.00 | 30.00 | n/a |\n"));
  EXPECT_EQ(table.back(), '\n');
}

TEST(FormatLaunchOverheadTableTest, ShowsASetMaxConnections) {
  LaunchOverheadReport report = SampleReport();
  report.device_max_connections = "32";
  EXPECT_THAT(FormatLaunchOverheadTable(report), HasSubstr("- CUDA_DEVICE_MAX_CONNECTIONS: 32.\n"));
}

TEST(LaunchOverheadReportToJsonTest, HoldsTheSameNumbersAsTheTable) {
  const std::string json = LaunchOverheadReportToJson(SampleReport());
  EXPECT_THAT(json, HasSubstr("{\n  \"benchmark\": \"launch_overhead\",\n"
                              "  \"device\": \"NVIDIA H200\",\n"
                              "  \"cuda_runtime_version\": 13000,\n"
                              "  \"cuda_driver_version\": 13010,\n"
                              "  \"cuda_device_max_connections\": null,\n"
                              "  \"kernels_per_iteration\": 32,\n"
                              "  \"warmup\": 100,\n"
                              "  \"iters\": 2000,\n"));
  EXPECT_THAT(json, HasSubstr("    {\"topology\": \"straight_line\", \"description\": \"32 kernels "
                              "one after another on 1 stream\", \"streams\": 1,\n"
                              "     \"stream\": {\"host_us\": 80.000, \"device_us\": 90.000}, "
                              "\"graph\": {\"host_us\": 4.000, \"device_us\": 30.000},\n"
                              "     \"host_ratio_stream_over_graph\": 20.000, "
                              "\"device_ratio_stream_over_graph\": 3.000},\n"));
  EXPECT_THAT(json, HasSubstr("\"streams\": 31,"));
  EXPECT_THAT(json, HasSubstr("\"device_ratio_stream_over_graph\": null}\n  ]\n}\n"));
}

TEST(LaunchOverheadReportToJsonTest, StaysValidForOddValues) {
  LaunchOverheadReport report;
  report.device_name = "a\"b\\c\n";
  report.device_max_connections = "8";
  const std::string json = LaunchOverheadReportToJson(report);
  EXPECT_THAT(json, HasSubstr("\"device\": \"a\\\"b\\\\c\\u000a\""));
  EXPECT_THAT(json, HasSubstr("\"cuda_device_max_connections\": \"8\""));
  EXPECT_THAT(json, HasSubstr("\"topologies\": []\n}\n"));
}

}  // namespace
}  // namespace graphserve
