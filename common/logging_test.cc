#include "common/logging.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace graphserve {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LoggingTest, FileFormatAndSeveritiesFollowTritonsFlags) {
  const std::string path = ::testing::TempDir() + "/graphserve.log";
  std::filesystem::remove(path);
  LoggingOptions options;
  options.file = path;
  options.format = LogFormat::kIso8601;
  options.info = false;   // --log-info=false
  options.warning = true;
  options.error = false;  // --log-error=false: each severity on its own
  ASSERT_TRUE(InitLogging(options).ok());
  spdlog::info("an info line");
  spdlog::warn("a warning line");
  spdlog::error("an error line");
  spdlog::debug("a debug line");
  const std::string log = ReadAll(path);
  EXPECT_THAT(log, ContainsRegex("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z W a "
                                 "warning line\n$"));
  EXPECT_THAT(log, Not(HasSubstr("info line")));
  EXPECT_THAT(log, Not(HasSubstr("error line")));
  EXPECT_THAT(log, Not(HasSubstr("debug line")));

  // A second start appends rather than wiping what the first one logged.
  options.verbose = 1;
  options.format = LogFormat::kDefault;
  ASSERT_TRUE(InitLogging(options).ok());
  spdlog::debug("a debug line");
  const std::string appended = ReadAll(path);
  EXPECT_THAT(appended, HasSubstr("a warning line"));
  EXPECT_THAT(appended, ContainsRegex("[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} debug a debug line"));
  InitLogging(/*verbose=*/false);
}

TEST(LoggingTest, AFileThatCannotBeOpenedIsNamed) {
  LoggingOptions options;
  options.file = "/no/such/directory/graphserve.log";
  const absl::Status status = InitLogging(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("--log-file /no/such/directory/graphserve.log: cannot open it"));
}

}  // namespace
}  // namespace graphserve
