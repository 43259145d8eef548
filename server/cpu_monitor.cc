#include "server/cpu_monitor.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/status.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

absl::StatusOr<std::string> ReadProcFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot open ", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

uint64_t TicksSince(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

}  // namespace

absl::StatusOr<CpuTicks> ParseProcStat(absl::string_view text) {
  const absl::string_view first_line = text.substr(0, text.find('\n'));
  absl::string_view counts = first_line;
  if (!absl::ConsumePrefix(&counts, "cpu ")) {
    return absl::InvalidArgumentError(
        absl::StrCat("/proc/stat does not begin with the aggregate \"cpu\" line: \"",
                     first_line.substr(0, 80), "\""));
  }
  const std::vector<absl::string_view> fields =
      absl::StrSplit(counts, ' ', absl::SkipWhitespace());
  CpuTicks ticks;
  uint64_t* const in_order[] = {&ticks.user, &ticks.nice,    &ticks.system,  &ticks.idle,
                                &ticks.iowait, &ticks.irq, &ticks.softirq, &ticks.steal};
  if (fields.size() < std::size(in_order)) {
    return absl::InvalidArgumentError(absl::StrCat("/proc/stat's cpu line has ", fields.size(),
                                                   " counts, fewer than ", std::size(in_order)));
  }
  for (size_t i = 0; i < std::size(in_order); ++i) {
    if (!absl::SimpleAtoi(fields[i], in_order[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("/proc/stat's cpu line: \"", fields[i], "\" is not a count"));
    }
  }
  return ticks;
}

double CpuUtilization(const CpuTicks& before, const CpuTicks& after) {
  const uint64_t busy = TicksSince(before.user, after.user) + TicksSince(before.nice, after.nice) +
                        TicksSince(before.system, after.system) +
                        TicksSince(before.irq, after.irq) +
                        TicksSince(before.softirq, after.softirq) +
                        TicksSince(before.steal, after.steal);
  const uint64_t idle =
      TicksSince(before.idle, after.idle) + TicksSince(before.iowait, after.iowait);
  // Triton divides unguarded, exporting NaN when no tick passed.
  if (busy + idle == 0) return 0;
  return static_cast<double>(busy) / static_cast<double>(busy + idle);
}

absl::StatusOr<HostMemory> ParseProcMeminfo(absl::string_view text) {
  std::optional<uint64_t> total_kib;
  std::optional<uint64_t> available_kib;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (fields.size() < 2) continue;
    std::optional<uint64_t>* const wanted = fields[0] == "MemTotal:"       ? &total_kib
                                            : fields[0] == "MemAvailable:" ? &available_kib
                                                                           : nullptr;
    if (wanted == nullptr) continue;
    uint64_t kib = 0;
    if (!absl::SimpleAtoi(fields[1], &kib)) {
      return absl::InvalidArgumentError(absl::StrCat("/proc/meminfo: bad line \"", line, "\""));
    }
    *wanted = kib;
  }
  if (!total_kib.has_value() || !available_kib.has_value()) {
    return absl::InvalidArgumentError("/proc/meminfo has no MemTotal or no MemAvailable");
  }
  if (*available_kib > *total_kib) {
    return absl::InvalidArgumentError(absl::StrCat("/proc/meminfo: MemAvailable ", *available_kib,
                                                   " kB exceeds MemTotal ", *total_kib, " kB"));
  }
  constexpr uint64_t kKiB = 1024;  // the kernel's "kB"
  return HostMemory{.total_bytes = *total_kib * kKiB,
                    .used_bytes = (*total_kib - *available_kib) * kKiB};
}

namespace {

absl::StatusOr<CpuTicks> ReadCpuTicks(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadProcFile(path));
  return ParseProcStat(text);
}

absl::StatusOr<HostMemory> ReadHostMemory(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadProcFile(path));
  return ParseProcMeminfo(text);
}

}  // namespace

std::unique_ptr<CpuMonitor> CpuMonitor::Open(const Options& options) {
  absl::StatusOr<CpuTicks> baseline = ReadCpuTicks(options.proc_stat);
  absl::Status memory = ReadHostMemory(options.proc_meminfo).status();
  if (!baseline.ok() || !memory.ok()) {
    spdlog::warn("no CPU metrics: {}",
                 (!baseline.ok() ? baseline.status() : memory).ToString());
    return nullptr;
  }
  return std::unique_ptr<CpuMonitor>(new CpuMonitor(options, *baseline));
}

CpuMonitor::CpuMonitor(Options options, CpuTicks baseline)
    : options_(std::move(options)), window_start_(baseline), window_start_time_(absl::Now()) {}

CpuReading CpuMonitor::Read() {
  CpuReading reading;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    // Note [CPU utilisation window]. A file that stops reading keeps the
    // window open and the last ratio, rather than a made-up one.
    if (now - window_start_time_ >= options_.interval) {
      absl::StatusOr<CpuTicks> ticks = ReadCpuTicks(options_.proc_stat);
      if (ticks.ok()) {
        utilization_ = CpuUtilization(window_start_, *ticks);
        window_start_ = *ticks;
        window_start_time_ = now;
      }
    }
    reading.utilization = utilization_;
  }
  absl::StatusOr<HostMemory> memory = ReadHostMemory(options_.proc_meminfo);
  if (memory.ok()) reading.memory = *memory;
  return reading;
}

}  // namespace graphserve
