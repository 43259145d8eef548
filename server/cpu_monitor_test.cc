#include "server/cpu_monitor.h"

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// A 5.15 kernel's /proc/stat, shortened: the aggregate line has ten counts
// (guest and guest_nice after steal), the per-CPU lines follow.
constexpr char kProcStat[] =
    "cpu  4705 356 584 3699176 23 0 8 5 0 0\n"
    "cpu0 1393 280 234 852764 15 0 2 1 0 0\n"
    "intr 114930548 113199788 3 0 5 263 0 4\n";

// A /proc/meminfo, shortened; MemFree is not what "used" subtracts.
constexpr char kProcMeminfo[] =
    "MemTotal:       16303428 kB\n"
    "MemFree:         8101204 kB\n"
    "MemAvailable:   12303428 kB\n"
    "Buffers:          402312 kB\n"
    "HugePages_Total:       0\n";

TEST(CpuMonitorTest, ParsesTheAggregateLineOfProcStat) {
  absl::StatusOr<CpuTicks> ticks = ParseProcStat(kProcStat);
  ASSERT_TRUE(ticks.ok()) << ticks.status();
  EXPECT_EQ(ticks->user, 4705u);
  EXPECT_EQ(ticks->nice, 356u);
  EXPECT_EQ(ticks->system, 584u);
  EXPECT_EQ(ticks->idle, 3699176u);
  EXPECT_EQ(ticks->iowait, 23u);
  EXPECT_EQ(ticks->irq, 0u);
  EXPECT_EQ(ticks->softirq, 8u);
  EXPECT_EQ(ticks->steal, 5u);
}

TEST(CpuMonitorTest, RefusesProcStatWithoutAnAggregateLine) {
  EXPECT_THAT(ParseProcStat("cpu0 1 2 3 4 5 6 7 8\n").status().message(),
              HasSubstr("does not begin with the aggregate \"cpu\" line"));
  EXPECT_THAT(ParseProcStat("cpu  1 2 3 4\n").status().message(),
              HasSubstr("has 4 counts, fewer than 8"));
  EXPECT_THAT(ParseProcStat("cpu  1 2 3 x 5 6 7 8\n").status().message(),
              HasSubstr("\"x\" is not a count"));
  EXPECT_FALSE(ParseProcStat("").ok());
}

TEST(CpuMonitorTest, UtilizationIsBusyTicksOverAllTicksBetweenReadings) {
  const CpuTicks before{.user = 100, .nice = 0, .system = 50, .idle = 800, .iowait = 50};
  // Busy: 30 user + 10 nice + 20 system + 5 irq + 3 softirq + 2 steal = 70;
  // idle: 120 idle + 10 iowait = 130. 70 / 200.
  const CpuTicks after{.user = 130,
                       .nice = 10,
                       .system = 70,
                       .idle = 920,
                       .iowait = 60,
                       .irq = 5,
                       .softirq = 3,
                       .steal = 2};
  EXPECT_DOUBLE_EQ(CpuUtilization(before, after), 0.35);
  // No tick between the readings: 0, not NaN.
  EXPECT_EQ(CpuUtilization(after, after), 0.0);
  // A count that went backwards adds nothing: only the 120 idle ticks count.
  CpuTicks wrapped = after;
  wrapped.user = 0;
  wrapped.nice = 0;
  wrapped.system = 0;
  wrapped.irq = 0;
  wrapped.softirq = 0;
  wrapped.steal = 0;
  EXPECT_EQ(CpuUtilization(before, wrapped), 0.0);
}

TEST(CpuMonitorTest, MemoryUsedIsTotalMinusAvailable) {
  absl::StatusOr<HostMemory> memory = ParseProcMeminfo(kProcMeminfo);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->total_bytes, uint64_t{16303428} * 1024);
  EXPECT_EQ(memory->used_bytes, uint64_t{16303428 - 12303428} * 1024);
}

TEST(CpuMonitorTest, RefusesMeminfoWithoutTotalAndAvailable) {
  EXPECT_THAT(ParseProcMeminfo("MemTotal: 100 kB\nMemFree: 50 kB\n").status().message(),
              HasSubstr("no MemTotal or no MemAvailable"));
  EXPECT_THAT(ParseProcMeminfo("MemTotal: 100 kB\nMemAvailable: 150 kB\n").status().message(),
              HasSubstr("MemAvailable 150 kB exceeds MemTotal 100 kB"));
  EXPECT_THAT(ParseProcMeminfo("MemTotal: lots kB\nMemAvailable: 150 kB\n").status().message(),
              HasSubstr("bad line \"MemTotal: lots kB\""));
}

// The monitor over fake files: the windows of Note [CPU utilisation window].
class CpuMonitorFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = ::testing::TempDir();
    options_.proc_stat = absl::StrCat(dir, "/cpu_monitor_test_stat");
    options_.proc_meminfo = absl::StrCat(dir, "/cpu_monitor_test_meminfo");
    WriteStat("cpu  100 0 50 800 50 0 0 0\n");
    std::ofstream(options_.proc_meminfo) << kProcMeminfo;
  }
  void WriteStat(const std::string& text) { std::ofstream(options_.proc_stat) << text; }

  CpuMonitor::Options options_;
};

TEST_F(CpuMonitorFilesTest, EachReadAfterTheIntervalMeasuresSinceThePreviousWindow) {
  options_.interval = absl::ZeroDuration();
  std::unique_ptr<CpuMonitor> monitor = CpuMonitor::Open(options_);
  ASSERT_NE(monitor, nullptr);
  // From the baseline Open read: 70 busy of 200, as in the test above.
  WriteStat("cpu  130 10 70 920 60 5 3 2\n");
  CpuReading reading = monitor->Read();
  EXPECT_DOUBLE_EQ(reading.utilization, 0.35);
  EXPECT_EQ(reading.memory.total_bytes, uint64_t{16303428} * 1024);
  EXPECT_EQ(reading.memory.used_bytes, uint64_t{4000000} * 1024);
  // The next window starts where that one ended: 100 busy user ticks of 100.
  WriteStat("cpu  230 10 70 920 60 5 3 2\n");
  EXPECT_DOUBLE_EQ(monitor->Read().utilization, 1.0);
}

TEST_F(CpuMonitorFilesTest, ReadsWithinTheIntervalKeepTheLastWindowsRatio) {
  options_.interval = absl::Hours(1);  // no window closes during the test
  std::unique_ptr<CpuMonitor> monitor = CpuMonitor::Open(options_);
  ASSERT_NE(monitor, nullptr);
  WriteStat("cpu  230 10 70 920 60 5 3 2\n");
  // No window has closed: 0, as Triton's gauge before its first poll.
  EXPECT_EQ(monitor->Read().utilization, 0.0);
}

TEST_F(CpuMonitorFilesTest, NoMonitorWithoutReadableFiles) {
  CpuMonitor::Options missing = options_;
  missing.proc_stat = absl::StrCat(::testing::TempDir(), "/no_such_proc_stat");
  EXPECT_EQ(CpuMonitor::Open(missing), nullptr);
  std::ofstream(options_.proc_meminfo) << "MemTotal: 100 kB\n";
  EXPECT_EQ(CpuMonitor::Open(options_), nullptr);
}

}  // namespace
}  // namespace graphserve
