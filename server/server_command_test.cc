#include "server/server_command.h"

#include <sstream>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

TEST(ServerCommand, DefaultsFollowTritonConventions) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository", "/models"}, 1, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.model_repositories, std::vector<std::string>{"/models"});
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
  EXPECT_TRUE(command->options.model_repositories.empty());
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
  EXPECT_EQ(command->logging.verbose, 1);
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
  auto upper = ParseServerCommand({"--model-repository", "/m", "--model-control-mode", "POLL"}, 0,
                                  notices);
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(upper->options.model_control, ModelControlMode::kPoll);  // any case, as Triton
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--model-control-mode", "manual"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("none, explicit or poll"));
  // Triton ignores --load-model outside explicit mode; so does graphserve,
  // saying so.
  auto ignored = ParseServerCommand({"--model-repository", "/m", "--load-model", "a"}, 0, notices);
  ASSERT_TRUE(ignored.ok()) << ignored.status();
  EXPECT_TRUE(ignored->options.load_models.empty());
  EXPECT_THAT(ignored->warnings, ::testing::ElementsAre(HasSubstr("--model-control-mode=explicit")));
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
  for (const char* bad : {"0.0.0.0:9001", "/run/gs.sock", "a b"}) {
    const absl::Status status =
        ParseServerCommand({"--model-repository", "/m", "--grpc-address", bad}, 0, notices)
            .status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(status.message(), HasSubstr("--grpc-address wants an IP address such as 0.0.0.0, "
                                            "127.0.0.1 or :: (or unix:PATH)"))
        << bad;
  }
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-address", "0.0.0.0:9001"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("(the port is a flag of its own)"));
  EXPECT_THAT(
      ParseServerCommand({"--model-repository", "/m", "--grpc-address", "unix:"}, 0, notices)
          .status()
          .message(),
      HasSubstr("--grpc-address unix: wants a path"));
}

TEST(ServerCommand, EachListenerTakesTritonsAddressFlag) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository", "/m", "--grpc-address", "0.0.0.0",
                                     "--http-address", "127.0.0.1", "--metrics-address", "::1"},
                                    0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.grpc_host, "0.0.0.0");
  EXPECT_EQ(command->options.grpc_unix_socket, "");
  EXPECT_EQ(command->options.http_host, "127.0.0.1");
  EXPECT_EQ(command->options.metrics_host, "::1");
  auto ipv6 = ParseServerCommand({"--model-repository", "/m", "--grpc-address", "::"}, 0, notices);
  ASSERT_TRUE(ipv6.ok()) << ipv6.status();
  EXPECT_EQ(ipv6->options.grpc_host, "::");
  // Unset, each is --host's (InferenceServer falls back).
  auto fallback = ParseServerCommand({"--model-repository", "/m", "--host", "127.0.0.1"}, 0,
                                     notices);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->options.host, "127.0.0.1");
  EXPECT_EQ(fallback->options.http_host, "");
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--http-address", ""}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("--http-address wants an IP address"));
}

TEST(ServerCommand, CpuMetricsFlagsAreTritons) {
  std::ostringstream notices;
  auto defaults = ParseServerCommand({"--model-repository", "/m"}, 0, notices);
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_TRUE(defaults->options.metrics.allow_cpu_metrics);
  EXPECT_EQ(defaults->options.metrics.interval, absl::Milliseconds(2000));  // Triton's default
  auto given = ParseServerCommand({"--model-repository", "/m", "--allow-cpu-metrics=false",
                                   "--metrics-interval-ms", "250.5"},
                                  0, notices);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_FALSE(given->options.metrics.allow_cpu_metrics);
  EXPECT_EQ(given->options.metrics.interval, absl::Microseconds(250500));
  EXPECT_TRUE(given->ignored_flags.empty());
  for (const char* interval : {"0", "-5", "nan"}) {
    EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--metrics-interval-ms", interval},
                                   0, notices)
                    .status()
                    .message(),
                HasSubstr("--metrics-interval-ms wants a positive number"))
        << interval;
  }
}

TEST(ServerCommand, RepeatedRepositoriesAndModelsAreAllKept) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/a", "--model-store=/b", "--model-repository=/c",
       "--model-control-mode=explicit", "--load-model", "x", "--load-model=y,z", "--load-model",
       "x"},
      0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.model_repositories, (std::vector<std::string>{"/a", "/b", "/c"}));
  EXPECT_EQ(command->options.load_models, (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_FALSE(command->serve_demo);
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/a", "--model-control-mode=explicit",
                                  "--load-model=*", "--load-model=x"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("must be the only --load-model"));
}

TEST(ServerCommand, TritonsRepositoryFlags) {
  std::ostringstream notices;
  auto command = ParseServerCommand({"--model-repository", "/m"}, 0, notices);
  ASSERT_TRUE(command.ok());
  EXPECT_TRUE(command->options.repository_read.auto_complete_config);  // Triton's default
  for (const std::vector<std::string>& strict :
       {std::vector<std::string>{"--disable-auto-complete-config"},
        std::vector<std::string>{"--strict-model-config=true"},
        std::vector<std::string>{"--strict-model-config", "true"}}) {
    std::vector<std::string> args = {"--model-repository", "/m"};
    args.insert(args.end(), strict.begin(), strict.end());
    auto parsed = ParseServerCommand(args, 0, notices);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_FALSE(parsed->options.repository_read.auto_complete_config) << strict[0];
  }
  auto loose = ParseServerCommand({"--model-repository", "/m", "--strict-model-config=false"}, 0,
                                  notices);
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(loose->options.repository_read.auto_complete_config);
  auto named = ParseServerCommand({"--model-repository", "/m", "--model-config-name=h100"}, 0,
                                  notices);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->options.repository_read.config_name, "h100");
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--model-config-name=../x"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("without spaces or '/'"));
}

TEST(ServerCommand, CompressedGrpcRequestsAreRefusedUnlessAccepted) {
  std::ostringstream notices;
  auto plain = ParseServerCommand({"--model-repository", "/m"}, 0, notices);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_FALSE(plain->options.grpc_accept_compressed_requests);
  auto accepting = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-accept-compressed-requests"}, 0, notices);
  ASSERT_TRUE(accepting.ok()) << accepting.status();
  EXPECT_TRUE(accepting->options.grpc_accept_compressed_requests);
}

TEST(ServerCommand, TritonsHttpAndGrpcTuningFlags) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/m", "--allow-grpc", "false", "--http-thread-count", "8",
       "--http-max-input-size", "1048576", "--grpc-infer-response-compression-level", "HIGH",
       "--grpc-keepalive-time", "10000", "--grpc-keepalive-permit-without-calls", "1",
       "--grpc-channel-args", "grpc.keepalive_time_ms=20000"},
      0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_FALSE(command->options.allow_grpc);
  EXPECT_EQ(command->options.http_threads, 8);
  EXPECT_EQ(command->options.http_max_input_bytes, 1048576);
  EXPECT_EQ(command->options.grpc_compression_level, 3);
  // Triton's keepalive flags become gRPC's arguments, before the explicit
  // --grpc-channel-args.
  const std::vector<GrpcChannelArg>& args = command->options.grpc_channel_args;
  ASSERT_EQ(args.size(), 3u);
  EXPECT_EQ(args[0].name, "grpc.keepalive_time_ms");
  EXPECT_EQ(std::get<int>(args[0].value), 10000);
  EXPECT_EQ(args[1].name, "grpc.keepalive_permit_without_calls");
  EXPECT_EQ(std::get<int>(args[1].value), 1);
  EXPECT_EQ(args[2].name, "grpc.keepalive_time_ms");
  // Triton's thread count sets the queues (2 threads poll each) unless they are given.
  auto threads = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-infer-thread-count", "7"}, 0, notices);
  ASSERT_TRUE(threads.ok()) << threads.status();
  EXPECT_EQ(threads->options.grpc_queues, 4);
  auto queues = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-infer-thread-count", "7", "--grpc-queues", "1"}, 0,
      notices);
  ASSERT_TRUE(queues.ok());
  EXPECT_EQ(queues->options.grpc_queues, 1);
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-infer-thread-count", "1"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("--grpc-infer-thread-count wants 2..128"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m",
                                  "--grpc-infer-response-compression-level", "max"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("none, low, medium or high"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--http-max-input-size", "0"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("--http-max-input-size wants a byte count > 0"));
}

TEST(ServerCommand, ConnectionAndStreamLimits) {
  std::ostringstream notices;
  auto command =
      ParseServerCommand({"--model-repository", "/m", "--http-max-connections", "300",
                          "--http-read-timeout-secs", "2", "--http-max-header-size", "4096"},
                         0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->options.http_max_connections, 300);
  EXPECT_EQ(command->options.http_read_timeout_secs, 2);
  EXPECT_EQ(command->options.http_max_header_bytes, 4096);
  auto tiny =
      ParseServerCommand({"--model-repository", "/m", "--http-max-header-size", "100"}, 0, notices);
  ASSERT_FALSE(tiny.ok());
  EXPECT_THAT(tiny.status().message(), HasSubstr("http-max-header-size"));
  auto streams = ParseServerCommand({"--model-repository", "/m", "--grpc-max-open-streams", "3",
                                     "--grpc-max-stream-owed-bytes", "65536"},
                                    0, notices);
  ASSERT_TRUE(streams.ok()) << streams.status();
  EXPECT_EQ(streams->options.grpc_stream_limits.max_open_streams, 3);
  EXPECT_EQ(streams->options.grpc_stream_limits.max_owed_bytes, 65536);
  auto regions = ParseServerCommand({"--model-repository", "/m", "--shared-memory-max-regions",
                                     "16", "--shared-memory-owner-required"},
                                    0, notices);
  ASSERT_TRUE(regions.ok()) << regions.status();
  EXPECT_EQ(regions->options.shared_memory_max_regions, 16);
  EXPECT_TRUE(regions->options.shared_memory_owner_required);
  EXPECT_EQ(streams->options.shared_memory_max_regions, 1024);  // the defaults
  EXPECT_FALSE(streams->options.shared_memory_owner_required);
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--shared-memory-max-regions",
                                  "100000"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("--shared-memory-max-regions wants 1..16384"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-max-open-streams", "0"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("--grpc-max-open-streams wants 1.."));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--http-max-connections", "0"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("--http-max-connections wants 1..65536"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--http-read-timeout-secs", "0"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("--http-read-timeout-secs wants 1..3600"));
}

TEST(ServerCommand, TritonsLoggingFlags) {
  std::ostringstream notices;
  auto command = ParseServerCommand(
      {"--model-repository", "/m", "--log-verbose=2", "--log-info", "false", "--log-warning=off",
       "--log-error=true", "--log-format", "ISO8601", "--log-file", "/var/log/gs.log"},
      0, notices);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(command->logging.verbose, 2);
  EXPECT_FALSE(command->logging.info);
  EXPECT_FALSE(command->logging.warning);
  EXPECT_TRUE(command->logging.error);
  EXPECT_EQ(command->logging.format, LogFormat::kIso8601);
  EXPECT_EQ(command->logging.file, "/var/log/gs.log");
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--log-format", "json"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("--log-format wants default or ISO8601, got 'json'"));
}

TEST(ServerCommand, TlsFlagsNeedTheirFilesAndNeverServePlaintextSilently) {
  std::ostringstream notices;
  auto tls = ParseServerCommand({"--model-repository", "/m", "--grpc-use-ssl=true",
                                 "--grpc-server-cert", "s.pem", "--grpc-server-key", "k.pem"},
                                0, notices);
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_TRUE(tls->options.grpc_tls.enabled);
  EXPECT_FALSE(tls->options.grpc_tls.mutual);
  EXPECT_EQ(tls->options.grpc_tls.server_cert, "s.pem");
  EXPECT_EQ(tls->options.grpc_tls.server_key, "k.pem");
  // Mutual implies TLS, as in Triton.
  auto mutual = ParseServerCommand(
      {"--model-repository", "/m", "--grpc-use-ssl-mutual", "--grpc-server-cert", "s.pem",
       "--grpc-server-key", "k.pem", "--grpc-root-cert", "ca.pem"},
      0, notices);
  ASSERT_TRUE(mutual.ok()) << mutual.status();
  EXPECT_TRUE(mutual->options.grpc_tls.enabled);
  EXPECT_TRUE(mutual->options.grpc_tls.mutual);
  EXPECT_EQ(mutual->options.grpc_tls.root_cert, "ca.pem");
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-use-ssl"}, 0, notices)
                  .status()
                  .message(),
              HasSubstr("--grpc-use-ssl needs --grpc-server-cert and --grpc-server-key"));
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--grpc-use-ssl-mutual",
                                  "--grpc-server-cert", "s.pem", "--grpc-server-key", "k.pem"},
                                 0, notices)
                  .status()
                  .message(),
              HasSubstr("--grpc-use-ssl-mutual needs --grpc-root-cert"));
  auto forgot = ParseServerCommand({"--model-repository", "/m", "--grpc-server-cert", "s.pem"}, 0,
                                   notices);
  ASSERT_TRUE(forgot.ok());
  EXPECT_FALSE(forgot->options.grpc_tls.enabled);
  EXPECT_THAT(forgot->warnings, ::testing::ElementsAre(HasSubstr("gRPC serves WITHOUT TLS")));
  // Turning client shared memory off cannot be honoured yet: refused.
  EXPECT_TRUE(
      ParseServerCommand({"--model-repository", "/m", "--allow-client-shm=true"}, 0, notices).ok());
  EXPECT_THAT(ParseServerCommand({"--model-repository", "/m", "--allow-client-shm=false"}, 0,
                                 notices)
                  .status()
                  .message(),
              HasSubstr("--allow-client-shm=false is not supported"));
}

TEST(ServerCommand, AnUnknownFlagNamesTheClosestOne) {
  std::ostringstream notices;
  EXPECT_THAT(ParseServerCommand({"--model-repositroy", "/m"}, 0, notices).status().message(),
              HasSubstr("unknown flag --model-repositroy (did you mean --model-repository?)"));
  EXPECT_THAT(ParseServerCommand({"--grpc-adress", "0.0.0.0"}, 0, notices).status().message(),
              HasSubstr("(did you mean --grpc-address?)"));
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
                           "--idle-spin-us", "--gpu-wait", "--http-address", "--metrics-address",
                           "--grpc-use-ssl", "--log-file", "--allow-grpc"}) {
    EXPECT_THAT(usage, HasSubstr(flag));
  }
}

}  // namespace
}  // namespace graphserve
