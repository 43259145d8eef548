#include "client/perf_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace graphserve {
namespace {

// perf_analyzer writes doubles with an ostream's default format, which is
// printf's %g with six significant digits.
std::string FormatDouble(double value) { return absl::StrFormat("%g", value); }

std::string FormatLevel(LoadMode mode, double level) {
  return mode == LoadMode::kConcurrency ? absl::StrCat(static_cast<int64_t>(level))
                                        : FormatDouble(level);
}

// Whole microseconds, truncated, as perf_analyzer's integer division.
int64_t Micros(int64_t ns) { return ns / 1000; }

// The time between sending and receiving not accounted for by the server's
// queue and compute: network, gRPC and the server's own overhead. Computed
// from averages of two different clocks, so it is clamped at zero.
int64_t NetworkAndServerOverheadNs(const LevelResult& level, const ServerAverages& server) {
  const int64_t client_wait = level.latency.avg_ns - level.avg_send_ns - level.avg_receive_ns;
  const int64_t server_time = server.queue_ns + server.compute_input_ns + server.compute_infer_ns +
                              server.compute_output_ns;
  return std::max<int64_t>(0, client_wait - server_time);
}

bool AllHaveServerStats(absl::Span<const LevelResult> levels) {
  return std::all_of(levels.begin(), levels.end(),
                     [](const LevelResult& level) { return level.server.has_value(); });
}

bool AllHaveFloors(absl::Span<const LevelResult> levels) {
  return std::all_of(levels.begin(), levels.end(),
                     [](const LevelResult& level) { return level.floor.has_value(); });
}

PerfCsvColumns ColumnsFor(absl::Span<const LevelResult> levels) {
  return {.server_stats = !levels.empty() && AllHaveServerStats(levels),
          .floor = !levels.empty() && AllHaveFloors(levels)};
}

// What the replay cost is, for the line under the table.
std::string DescribeReplay(const ReplayCost& replay, int64_t batch_size) {
  if (!replay.us.has_value()) {
    return absl::StrCat("full-chunk replay of batch ", batch_size, ": unknown (", replay.note,
                        "); served overhead not computed");
  }
  std::string line = absl::StrFormat(
      "full-chunk replay of batch %d: %.1f us, the model's measured %s of batch %d", batch_size,
      *replay.us, replay.graphs ? "graph replay" : "eager run", replay.captured_size);
  if (!replay.note.empty()) absl::StrAppend(&line, " (", replay.note, ")");
  return line;
}

const char* LevelName(LoadMode mode) {
  return mode == LoadMode::kConcurrency ? "Concurrency" : "Request Rate";
}

}  // namespace

std::optional<int64_t> ServedOverheadNs(const LevelResult& level) {
  if (!level.floor.has_value() || level.latency.count == 0 || level.floor->latency.count == 0 ||
      !level.replay.us.has_value()) {
    return std::nullopt;
  }
  const auto replay_ns = static_cast<int64_t>(std::llround(*level.replay.us * 1000.0));
  return level.latency.p50_ns - level.floor->latency.p50_ns - replay_ns;
}

int64_t Percentile(absl::Span<const int64_t> sorted, double percentile) {
  const double position = percentile / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto index = static_cast<size_t>(std::floor(position + 0.5));
  return sorted[std::min(index, sorted.size() - 1)];
}

LatencySummary SummarizeLatencies(std::vector<int64_t> latencies_ns) {
  LatencySummary summary;
  if (latencies_ns.empty()) return summary;
  std::sort(latencies_ns.begin(), latencies_ns.end());
  summary.count = static_cast<int64_t>(latencies_ns.size());
  summary.p50_ns = Percentile(latencies_ns, 50);
  summary.p90_ns = Percentile(latencies_ns, 90);
  summary.p95_ns = Percentile(latencies_ns, 95);
  summary.p99_ns = Percentile(latencies_ns, 99);
  // Summed in 128 bits: a long run of slow requests can pass 2^63 ns.
  __int128 total = 0;
  for (const int64_t latency : latencies_ns) total += latency;
  summary.avg_ns = static_cast<int64_t>(total / summary.count);
  return summary;
}

std::string PerfCsvHeader(LoadMode mode, PerfCsvColumns columns) {
  std::string header = absl::StrCat(LevelName(mode), ",Inferences/Second,Client Send,");
  if (columns.server_stats) {
    absl::StrAppend(&header,
                    "Network+Server Send/Recv,Server Queue,Server Compute Input,"
                    "Server Compute Infer,Server Compute Output,");
  }
  absl::StrAppend(&header,
                  "Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,"
                  "request/response,response wait");
  if (columns.floor) {
    absl::StrAppend(&header,
                    ",Floor p50 latency,Floor p99 latency,Full-chunk replay,"
                    "Served overhead");
  }
  return header;
}

std::string PerfCsvRow(LoadMode mode, const LevelResult& level, PerfCsvColumns columns) {
  const int64_t send_us = Micros(level.avg_send_ns);
  const int64_t receive_us = Micros(level.avg_receive_ns);
  const int64_t avg_us = Micros(level.latency.avg_ns);
  std::string row = absl::StrCat(FormatLevel(mode, level.level), ",",
                                 FormatDouble(level.infer_per_sec), ",", send_us, ",");
  if (columns.server_stats) {
    const ServerAverages& server = *level.server;
    absl::StrAppend(&row, Micros(NetworkAndServerOverheadNs(level, server)), ",",
                    Micros(server.queue_ns), ",", Micros(server.compute_input_ns), ",",
                    Micros(server.compute_infer_ns), ",", Micros(server.compute_output_ns), ",");
  }
  absl::StrAppend(&row, receive_us, ",", Micros(level.latency.p50_ns), ",",
                  Micros(level.latency.p90_ns), ",", Micros(level.latency.p95_ns), ",",
                  Micros(level.latency.p99_ns), ",", avg_us, ",", send_us + receive_us, ",",
                  std::max<int64_t>(0, avg_us - send_us - receive_us));
  if (columns.floor) {
    const std::optional<int64_t> overhead = ServedOverheadNs(level);
    absl::StrAppend(&row, ",", Micros(level.floor->latency.p50_ns), ",",
                    Micros(level.floor->latency.p99_ns), ",",
                    level.replay.us.has_value() ? FormatDouble(*level.replay.us) : "", ",",
                    overhead.has_value() ? absl::StrCat(Micros(*overhead)) : "");
  }
  return row;
}

std::string FormatPerfCsv(LoadMode mode, absl::Span<const LevelResult> levels) {
  const PerfCsvColumns columns = ColumnsFor(levels);
  std::string csv = absl::StrCat(PerfCsvHeader(mode, columns), "\n");
  for (const LevelResult& level : levels) {
    absl::StrAppend(&csv, PerfCsvRow(mode, level, columns), "\n");
  }
  return csv;
}

std::string FormatTimelineCsv(LoadMode mode, absl::Span<const LevelResult> levels) {
  std::string csv = absl::StrCat(LevelName(mode), ",Sent us,Latency us,OK\n");
  for (const LevelResult& level : levels) {
    const std::string name = FormatLevel(mode, level.level);
    for (const TimedRequest& request : level.timeline) {
      absl::StrAppend(&csv, name, ",", Micros(request.sent_ns), ",", Micros(request.latency_ns),
                      ",", request.ok ? 1 : 0, "\n");
    }
  }
  return csv;
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path, " for writing"));
  file << text;
  file.close();
  if (!file) return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

std::string FormatPerfTable(LoadMode mode, absl::Span<const LevelResult> levels) {
  const PerfCsvColumns columns = ColumnsFor(levels);
  std::string table =
      absl::StrFormat("%12s %12s %9s %7s %9s %9s %9s %9s %9s",
                      mode == LoadMode::kConcurrency ? "concurrency" : "rate/s", "infer/s",
                      "requests", "errors", "p50 us", "p90 us", "p95 us", "p99 us", "avg us");
  if (columns.server_stats) {
    absl::StrAppend(&table, absl::StrFormat(" %9s %9s %9s %9s", "queue us", "input us", "infer us",
                                            "output us"));
  }
  if (columns.floor) {
    absl::StrAppend(&table, absl::StrFormat(" %10s %10s %9s %11s", "floor p50", "floor p99",
                                            "replay us", "overhead us"));
  }
  absl::StrAppend(&table, "\n");
  auto us = [](int64_t ns) { return absl::StrFormat("%.1f", static_cast<double>(ns) / 1000.0); };
  for (const LevelResult& level : levels) {
    absl::StrAppend(&table, absl::StrFormat("%12s %12.1f %9d %7d %9s %9s %9s %9s %9s",
                                            FormatLevel(mode, level.level), level.infer_per_sec,
                                            level.completed, level.errors, us(level.latency.p50_ns),
                                            us(level.latency.p90_ns), us(level.latency.p95_ns),
                                            us(level.latency.p99_ns), us(level.latency.avg_ns)));
    if (columns.server_stats) {
      absl::StrAppend(&table, absl::StrFormat(" %9s %9s %9s %9s", us(level.server->queue_ns),
                                              us(level.server->compute_input_ns),
                                              us(level.server->compute_infer_ns),
                                              us(level.server->compute_output_ns)));
    }
    if (columns.floor) {
      const std::optional<int64_t> overhead = ServedOverheadNs(level);
      absl::StrAppend(
          &table, absl::StrFormat(
                      " %10s %10s %9s %11s", us(level.floor->latency.p50_ns),
                      us(level.floor->latency.p99_ns),
                      level.replay.us.has_value() ? absl::StrFormat("%.1f", *level.replay.us) : "-",
                      overhead.has_value() ? us(*overhead) : "-"));
    }
    absl::StrAppend(&table, "\n");
  }
  if (!columns.server_stats && !levels.empty()) {
    absl::StrAppend(&table,
                    "(no server-side statistics: the server did not answer "
                    "ModelStatistics for every level)\n");
  }
  if (columns.floor) {
    absl::StrAppend(&table,
                    "floor: ServerLive, an empty RPC, over the same connections at the same "
                    "level, right after it; overhead = p50 - floor p50 - replay\n",
                    DescribeReplay(levels.front().replay, levels.front().batch_size), "\n");
  }
  for (const LevelResult& level : levels) {
    if (level.errors > 0) {
      absl::StrAppend(&table, LevelName(mode), " ", FormatLevel(mode, level.level), ": ",
                      level.errors, " of ", level.completed,
                      " requests failed; first: ", level.first_error, "\n");
    }
    if (level.floor.has_value() && level.floor->errors > 0) {
      absl::StrAppend(&table, LevelName(mode), " ", FormatLevel(mode, level.level), ": ",
                      level.floor->errors, " of ", level.floor->completed,
                      " floor calls (ServerLive) failed; first: ", level.floor->first_error, "\n");
    }
    if (level.delayed_sends > 0) {
      absl::StrAppend(&table, LevelName(mode), " ", FormatLevel(mode, level.level), ": ",
                      level.delayed_sends,
                      " sends went out late, held back by the cap on outstanding requests; "
                      "the server does not keep up with this rate\n");
    } else if (level.late_sends > 0) {
      absl::StrAppend(&table, LevelName(mode), " ", FormatLevel(mode, level.level), ": ",
                      level.late_sends, " sends went out over ", kLateSend.count(),
                      " us behind the schedule: the load generator did not keep up with this "
                      "rate, so the rate measured is not the rate asked\n");
    }
  }
  return table;
}

std::string FormatLevelLine(LoadMode mode, const LevelResult& level) {
  std::string line =
      absl::StrCat(LevelName(mode), ": ", FormatLevel(mode, level.level),
                   ", throughput: ", FormatDouble(level.infer_per_sec), " infer/sec, latency p50 ",
                   Micros(level.latency.p50_ns), " usec, p99 ", Micros(level.latency.p99_ns),
                   " usec, ", level.errors, " errors");
  if (level.floor.has_value()) {
    absl::StrAppend(&line, ", floor p50 ", Micros(level.floor->latency.p50_ns), " usec, p99 ",
                    Micros(level.floor->latency.p99_ns), " usec");
    if (const std::optional<int64_t> overhead = ServedOverheadNs(level); overhead.has_value()) {
      absl::StrAppend(&line, ", served overhead ", Micros(*overhead), " usec");
    }
  }
  return line;
}

}  // namespace graphserve
