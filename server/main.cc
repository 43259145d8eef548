// graphserve: the inference server binary. Parses flags, starts the server,
// waits for SIGTERM or SIGINT, drains. See server/server_command.h.

#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "common/cuda_handles.h"
#include "common/logging.h"
#include "server/inference_server.h"
#include "server/server_command.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  // Block the shutdown signals before any thread starts, so every thread
  // inherits the mask and only the sigwait below receives them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);

  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<graphserve::ServerCommand> command =
      graphserve::ParseServerCommand(args, graphserve::CudaDeviceCount(), std::cout);
  if (!command.ok()) {
    std::cerr << "graphserve: " << command.status().message() << "\n"
              << "run `graphserve --help` for the flags\n";
    return command.status().code() == absl::StatusCode::kInvalidArgument
               ? graphserve::kServerExitUsage
               : graphserve::kServerExitFailure;
  }
  if (command->help) {
    std::cout << graphserve::ServerUsage();
    return graphserve::kServerExitOk;
  }
  graphserve::InitLogging(command->verbose);

  absl::StatusOr<std::unique_ptr<graphserve::InferenceServer>> server =
      graphserve::InferenceServer::Start(command->options, std::cout);
  if (!server.ok()) {
    std::cerr << "graphserve: " << server.status().message() << "\n";
    return graphserve::kServerExitFailure;
  }

  int signal = 0;
  sigwait(&shutdown_signals, &signal);
  spdlog::info("received {}: draining", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  const absl::Status drained = (*server)->Shutdown();
  if (!drained.ok()) {
    std::cerr << "graphserve: " << drained.message() << "\n";
    return graphserve::kServerExitFailure;
  }
  return graphserve::kServerExitOk;
}
