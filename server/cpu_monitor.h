#pragma once
// The host's CPU utilisation and memory for the metrics endpoint
// (nv_cpu_utilization, nv_cpu_memory_{total,used}_bytes), read from
// /proc/stat and /proc/meminfo as Triton reads them (its src/metrics.cc), so
// a dashboard built on Triton's numbers reads the same here.

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphserve {

// The aggregate "cpu" line of /proc/stat: clock ticks spent in each state
// since boot, over all CPUs.
struct CpuTicks {
  uint64_t user = 0;
  uint64_t nice = 0;
  uint64_t system = 0;
  uint64_t idle = 0;
  uint64_t iowait = 0;
  uint64_t irq = 0;
  uint64_t softirq = 0;
  uint64_t steal = 0;
};

// The aggregate line of /proc/stat's `text`: an error when the first line is
// not "cpu " followed by at least the eight counts above (later kernels add
// guest counts, which are already inside user and nice).
absl::StatusOr<CpuTicks> ParseProcStat(absl::string_view text);

// The fraction of the ticks from `before` to `after` that were busy, 0..1:
// user, nice, system, irq, softirq and steal are busy, idle and iowait are
// not (Triton's split). 0 when no tick passed; a count that went backwards
// (a wrapped counter) adds nothing, as in Triton.
double CpuUtilization(const CpuTicks& before, const CpuTicks& after);

struct HostMemory {
  uint64_t total_bytes = 0;  // MemTotal
  uint64_t used_bytes = 0;   // MemTotal - MemAvailable, Triton's "used"
};

// MemTotal and MemAvailable of /proc/meminfo's `text` ("Name: value kB"
// lines): an error when either is missing or MemAvailable exceeds MemTotal.
absl::StatusOr<HostMemory> ParseProcMeminfo(absl::string_view text);

struct CpuReading {
  double utilization = 0;  // nv_cpu_utilization, 0..1
  HostMemory memory;       // 0s when /proc/meminfo could not be read, as Triton
};

class CpuMonitor {
 public:
  struct Options {
    // Utilisation is measured over windows at least this long (Triton's
    // --metrics-interval-ms): Note [CPU utilisation window].
    absl::Duration interval = absl::Milliseconds(2000);
    // The files read; a test points them at fakes of its own.
    std::string proc_stat = "/proc/stat";
    std::string proc_meminfo = "/proc/meminfo";
  };

  // Reads both files once, the utilisation's first baseline. Null when
  // either cannot be read or parsed (said once in the log): no CPU metrics.
  static std::unique_ptr<CpuMonitor> Open(const Options& options);

  // Safe from several threads at once (scrapes may overlap).
  [[nodiscard]] CpuReading Read();

  // Implementation details follow.
 private:
  CpuMonitor(Options options, CpuTicks baseline);

  const Options options_;
  absl::Mutex mu_;
  CpuTicks window_start_ ABSL_GUARDED_BY(mu_);
  absl::Time window_start_time_ ABSL_GUARDED_BY(mu_);
  double utilization_ ABSL_GUARDED_BY(mu_) = 0;  // of the last full window
};

// Note [CPU utilisation window]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Utilisation is a ratio of two /proc/stat readings, so it depends on how far
// apart they are. Triton polls every --metrics-interval-ms / 2 on a thread of
// its own and exports the ratio since the previous poll, its first poll
// measuring from the baseline read when CPU metrics start. GraphServe reads
// its metrics when they are scraped and keeps no polling thread: a scrape at
// least an interval after the window began closes the window (the new ratio,
// and the next window starts there); an earlier scrape gets the last closed
// window's ratio, 0 before the first closes, as Triton's gauge before its
// first poll. So windows are never shorter than the interval, whatever the
// scrape rate, and with one Prometheus scraping every interval or more each
// scrape sees the utilisation since the one before.

}  // namespace graphserve
