#include "server/server_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

TEST(ServerCommand, DefaultsFollowTritonConventions) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository", "/models"}, 1, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.model_repository, "/models");
  EXPECT_EQ(command->options.grpc_port, 8001);
  EXPECT_EQ(command->options.models.executor, ExecutorKind::kCuda);
  EXPECT_TRUE(command->options.models.graphs);
  EXPECT_EQ(command->options.exit_timeout.count(), 30);
  EXPECT_TRUE(notices.str().empty());
}

TEST(ServerCommand, NoRepositoryServesTheDemo) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--device", "cpu"}, 0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_TRUE(command->serve_demo);
  EXPECT_TRUE(command->options.model_repository.empty());
  auto given = ParseServerCommand({"--model-repository", "/m", "--device", "cpu"}, 0, notices);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_FALSE(given->serve_demo);
}

TEST(ServerCommand, AutoUsesEveryVisibleGpu) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--device", "auto"}, 3, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.models.executor, ExecutorKind::kCuda);
  EXPECT_EQ(command->options.models.devices, (std::vector<int>{0, 1, 2}));
  auto one = ParseServerCommand({"--device", "cuda"}, 3, notices);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->options.models.devices, std::vector<int>{0});
}

TEST(ServerCommand, AutoWithoutAGpuFallsBackToTheHostLoudly) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository=/m", "--device", "auto"}, 0, notices);
  ASSERT_TRUE(command.ok());
  EXPECT_EQ(command->options.models.executor, ExecutorKind::kHost);
  EXPECT_THAT(notices.str(), HasSubstr("NO CUDA GPU VISIBLE"));
}

TEST(ServerCommand, FlagsAreParsed) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-port", "0", "--device", "cuda:1", "--graphs", "off",
       "--exit-timeout-secs", "5", "--exit-on-error=false", "--log-verbose", "1"},
      2, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.grpc_port, 0);
  EXPECT_EQ(command->options.models.devices, std::vector<int>{1});
  EXPECT_FALSE(command->options.models.graphs);
  EXPECT_EQ(command->options.exit_timeout.count(), 5);
  EXPECT_FALSE(command->options.exit_on_error);
  EXPECT_TRUE(command->verbose);
}

TEST(ServerCommand, BadFlagsSayWhatIsExpected) {
  std::ostringstream notices;
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--device", "tpu"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("auto, cuda, cuda:N or cpu"));
  EXPECT_EQ(ParseServerCommand({"--model-repository", "/m", "--device", "cuda"}, 0, notices)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-port", "70000"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("0..65535"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--graphs", "maybe"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("on or off"));
  EXPECT_THAT(ParseServerCommand({"--modelrepository", "/m"}, 0, notices).status().message(),
              HasSubstr("--modelrepository"));
}

TEST(ServerCommand, HelpListsEveryFlag) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--help"}, 0, notices);
  ASSERT_TRUE(command.ok());
  EXPECT_TRUE(command->help);
  const std::string usage = ServerUsage();
  for (const char* flag : {"--model-repository", "--grpc-port", "--device", "--graphs",
                           "--log-verbose", "--exit-timeout-secs", "--exit-on-error"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace graphserve
