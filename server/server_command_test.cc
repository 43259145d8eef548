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
  EXPECT_EQ(command->options.models.gpu_wait, GpuWait::kAuto);
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

TEST(ServerCommand, ModelControlAndSpinFlags) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/m", "--model-control-mode", "explicit", "--load-model", "a,b",
       "--idle-spin-us", "300"},
      0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.model_control, ModelControlMode::kExplicit);
  EXPECT_EQ(command->options.load_models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(command->options.models.idle_spin, std::chrono::microseconds(300));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--model-control-mode", "manual"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("none, explicit or poll"));
  EXPECT_THAT(
      ParseServerCommand({"--model-repository", "/m", "--load-model", "a"}, 0, notices)
          .status()
          .message(),
      HasSubstr("--model-control-mode=explicit"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--idle-spin-us", "-1"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("0..1000000"));
}

TEST(ServerCommand, GrpcQueueFlags) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-queues", "6", "--grpc-threads-per-queue", "1"}, 0,
      notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.grpc_queues, 6);
  EXPECT_EQ(command->options.grpc_threads_per_queue, 1);
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-queues", "0"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("--grpc-queues wants 1..64"));
  EXPECT_THAT(
      ParseServerCommand({"--model-repository", "/m", "--grpc-threads-per-queue", "17"}, 0,
                         notices)
          .status()
          .message(),
      HasSubstr("--grpc-threads-per-queue wants 1..16"));
}

TEST(ServerCommand, GpuWaitFlag) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository", "/m", "--gpu-wait", "yield"}, 0,
                                    notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.models.gpu_wait, GpuWait::kYield);
  const absl::Status bad =
      ParseServerCommand({"--model-repository", "/m", "--gpu-wait", "nap"}, 0, notices).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("--gpu-wait: the GPU wait is auto, spin, yield or block, "
                                       "got 'nap'"));
  // The help gives the threshold the server applies.
  EXPECT_THAT(ServerUsage(), HasSubstr("smallest chunk takes 150 us or more"));
  EXPECT_EQ(kSleepingWaitFromUs, 150);
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

TEST(ServerCommand, PortsAreRefusedWhenInUseUnlessSharingIsAsked) {
  std::ostringstream notices;
  auto plain = ParseServerCommand({"--model-repository", "/m"}, 0, notices);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->options.reuse_grpc_port);  // Triton's default
  EXPECT_FALSE(plain->options.reuse_http_port);
  auto shared = ParseServerCommand(
      {"--model-repository", "/m", "--reuse-grpc-port", "--reuse-http-port=true"}, 0, notices);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_TRUE(shared->options.reuse_grpc_port);
  EXPECT_TRUE(shared->options.reuse_http_port);
}

TEST(ServerCommand, OnePortForTwoListenersIsAUsageError) {
  std::ostringstream notices;
  const absl::Status status =
      ParseServerCommand({"--model-repository", "/m", "--http-port", "8001"}, 0, notices).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "--grpc-port and --http-port are both 8001; each listener needs a port of its own");
  // Not when the second listener is off, nor for port 0 (each picks its own).
  EXPECT_TRUE(
      ParseServerCommand({"--model-repository", "/m", "--http-port", "8001", "--allow-http=false"},
                         0, notices)
          .ok());
  EXPECT_TRUE(ParseServerCommand({"--model-repository", "/m", "--grpc-port", "0", "--http-port",
                                  "0", "--metrics-port", "0"},
                                 0, notices)
                  .ok());
}

TEST(ServerCommand, GrpcAddressTakesAUnixSocket) {
  std::ostringstream notices;
  for (const char* address : {"unix:/run/gs.sock", "unix:///run/gs.sock"}) {
    auto command =
        ParseServerCommand({"--model-repository", "/m", "--grpc-address", address}, 0, notices);
    ASSERT_TRUE(command.ok()) << command.status();
    EXPECT_EQ(command->options.grpc_unix_socket, "/run/gs.sock") << address;
  }
  auto relative = ParseServerCommand({"--model-repository", "/m", "--grpc-address", "unix:gs.sock"},
                                     0, notices);
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(relative->options.grpc_unix_socket, "gs.sock");
  auto none = ParseServerCommand({"--model-repository", "/m"}, 0, notices);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->options.grpc_unix_socket, "");
  for (const char* bad : {"0.0.0.0:9001", "unix:", "/run/gs.sock"}) {
    const absl::Status status =
        ParseServerCommand({"--model-repository", "/m", "--grpc-address", bad}, 0, notices)
            .status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("--grpc-address wants unix:PATH")) << bad;
  }
}

TEST(ServerCommand, HelpListsEveryFlag) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--help"}, 0, notices);
  ASSERT_TRUE(command.ok());
  EXPECT_TRUE(command->help);
  const std::string usage = ServerUsage();
  for (const char* flag : {"--model-repository", "--grpc-port", "--device", "--graphs",
                           "--log-verbose", "--exit-timeout-secs", "--exit-on-error",
                           "--reuse-grpc-port", "--reuse-http-port", "--grpc-address",
                           "--model-control-mode", "--load-model", "--repository-poll-secs",
                           "--idle-spin-us", "--gpu-wait"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace graphserve
