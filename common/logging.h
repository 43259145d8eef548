#pragma once
// Logging goes through spdlog. Binaries call InitLogging once from main().

#include <string>

#include "absl/status/status.h"
#include "spdlog/spdlog.h"

namespace graphserve {

// Triton's --log-format.
enum class LogFormat {
  kDefault,  // "2026-11-28 13:33:30.123 info message", local time
  kIso8601,  // "2026-11-28T13:33:30Z I message", UTC, as Triton's ISO8601
};

// Triton's logging flags.
struct LoggingOptions {
  // --log-verbose: 0 logs from info up; 1 or more adds debug output.
  int verbose = 0;
  // --log-info, --log-warning, --log-error: each severity on or off on its
  // own (error covers critical).
  bool info = true;
  bool warning = true;
  bool error = true;
  LogFormat format = LogFormat::kDefault;
  // --log-file: append the log to this file instead of writing it to stdout.
  std::string file;
  // Without a file, the log on stderr instead of stdout (graphserve-capture
  // keeps stdout for its reports).
  bool to_stderr = false;
};

// Makes the default logger follow `options`. InvalidArgument naming the
// file when --log-file cannot be opened for appending.
absl::Status InitLogging(const LoggingOptions& options);

// The default logger on stdout; `verbose` enables debug output.
void InitLogging(bool verbose);

}  // namespace graphserve
