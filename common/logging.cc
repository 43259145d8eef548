#include "common/logging.h"

#include <array>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/pattern_formatter.h"
#include "spdlog/sinks/basic_file_sink.h"
#include "spdlog/sinks/sink.h"
#include "spdlog/sinks/stdout_color_sinks.h"

namespace graphserve {

namespace {

constexpr char kDefaultPattern[] = "%Y-%m-%d %H:%M:%S.%e %^%l%$ %v";
// Triton's ISO8601 format, "YYYY-MM-DDThh:mm:ssZ L", in UTC.
constexpr char kIso8601Pattern[] = "%Y-%m-%dT%H:%M:%SZ %L %v";

// Passes on the severities that are switched on: spdlog's own level is a
// threshold, and Triton turns info, warning and error on and off each alone.
class SeverityFilterSink : public spdlog::sinks::sink {
 public:
  SeverityFilterSink(std::shared_ptr<spdlog::sinks::sink> inner,
                     std::array<bool, spdlog::level::n_levels> enabled)
      : inner_(std::move(inner)), enabled_(enabled) {}

  void log(const spdlog::details::log_msg& message) override {
    if (enabled_[message.level]) inner_->log(message);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  const std::shared_ptr<spdlog::sinks::sink> inner_;
  const std::array<bool, spdlog::level::n_levels> enabled_;
};

}  // namespace

absl::Status InitLogging(const LoggingOptions& options) {
  std::shared_ptr<spdlog::sinks::sink> output;
  if (options.file.empty() && options.to_stderr) {
    output = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  } else if (options.file.empty()) {
    output = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  } else {
    try {
      output = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.file,
                                                                   /*truncate=*/false);
    } catch (const spdlog::spdlog_ex& error) {
      return absl::InvalidArgumentError(
          absl::StrCat("--log-file ", options.file, ": cannot open it (", error.what(), ")"));
    }
  }
  std::array<bool, spdlog::level::n_levels> enabled{};
  enabled[spdlog::level::trace] = options.verbose > 1;
  enabled[spdlog::level::debug] = options.verbose > 0;
  enabled[spdlog::level::info] = options.info;
  enabled[spdlog::level::warn] = options.warning;
  enabled[spdlog::level::err] = options.error;
  enabled[spdlog::level::critical] = options.error;
  auto logger = std::make_shared<spdlog::logger>(
      "graphserve", std::make_shared<SeverityFilterSink>(std::move(output), enabled));
  if (options.format == LogFormat::kIso8601) {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(
        kIso8601Pattern, spdlog::pattern_time_type::utc));
  } else {
    logger->set_formatter(std::make_unique<spdlog::pattern_formatter>(kDefaultPattern));
  }
  logger->set_level(spdlog::level::trace);  // the filter decides
  // A log file is read by people and tools while the server runs.
  if (!options.file.empty()) logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
  return absl::OkStatus();
}

void InitLogging(bool verbose) {
  spdlog::set_pattern(kDefaultPattern);
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
}

}  // namespace graphserve
