// graphserve: the inference server binary. Parses flags, starts the server,
// waits for SIGTERM or SIGINT, drains. See server/server_command.h.

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "common/cuda_handles.h"
#include "common/logging.h"
#include "common/lost_cuda_context.h"
#include "common/mutex_checks.h"
#include "examples/demo_repository.h"
#include "server/inference_server.h"
#include "server/server_command.h"
#include "spdlog/spdlog.h"

namespace {

// Writes the demo repository into a fresh scratch directory and returns it.
absl::StatusOr<std::string> WriteScratchDemoRepository() {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path dir = std::filesystem::path(tmp != nullptr ? tmp : "/tmp") /
                                    ("graphserve-demo-" + std::to_string(getpid()));
  absl::Status written = graphserve::WriteDemoRepository(dir.string(), {});
  if (!written.ok()) return written;
  return dir.string();
}

// Note [Exiting on a lost CUDA context]
// A sticky CUDA error (Note [Sticky CUDA errors] in common/cuda_error.h)
// leaves a GPU unusable until the process restarts. The thread that finds
// it reports it (common/lost_cuda_context.h), which sends this process
// kLostContextSignal; the main thread, waiting for the shutdown signals,
// wakes, shuts the server down (health NOT_SERVING first; what is queued
// fails at once, as every launch on the lost GPU does) and exits non-zero,
// so that the orchestrator (Kubernetes, systemd, compose) restarts it.
constexpr int kLostContextSignal = SIGUSR1;

void WakeMainForLostContext() { kill(getpid(), kLostContextSignal); }

}  // namespace

int main(int argc, char** argv) {
  graphserve::TurnOffMutexDeadlockDetection();  // Note [Abseil's deadlock detection]
  // Block the shutdown signals before any thread starts, so every thread
  // inherits the mask and only the sigwait below receives them.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, kLostContextSignal);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  graphserve::SetLostCudaContextHandler(&WakeMainForLostContext);

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
  if (const absl::Status logging = graphserve::InitLogging(command->logging); !logging.ok()) {
    std::cerr << "graphserve: " << logging.message() << "\n";
    return graphserve::kServerExitUsage;
  }
  // Note [Triton's flags]: one line for each that does not apply here.
  for (const std::string& notice : command->ignored_flags) spdlog::info("{}", notice);
  for (const std::string& warning : command->warnings) spdlog::warn("{}", warning);
  if (command->serve_demo) {
    absl::StatusOr<std::string> demo = WriteScratchDemoRepository();
    if (!demo.ok()) {
      std::cerr << "graphserve: cannot write the demo repository: " << demo.status().message()
                << "\n";
      return graphserve::kServerExitFailure;
    }
    std::cout << "graphserve: no --model-repository: serving the demo repository (mlp, "
                 "dlrm_dense) written to "
              << *demo << "; give --model-repository DIR to serve your own models\n";
    command->options.model_repositories = {*demo};
  }

  const auto remove_scratch_demo = [&command] {
    if (!command->serve_demo) return;
    std::error_code ignored;  // a scratch directory left behind is harmless
    std::filesystem::remove_all(command->options.model_repositories.front(), ignored);
  };
  absl::StatusOr<std::unique_ptr<graphserve::InferenceServer>> server =
      graphserve::InferenceServer::Start(command->options, std::cout);
  if (!server.ok()) {
    // E.g. "cannot listen on 0.0.0.0:8001: address in use (...)": one line
    // that names the address and why, then exit 1.
    std::cerr << "graphserve: " << server.status().message() << "\n";
    remove_scratch_demo();
    return graphserve::kServerExitFailure;
  }

  int signal = 0;
  while (true) {
    sigwait(&shutdown_signals, &signal);
    // kLostContextSignal from anyone else changes nothing.
    if (signal != kLostContextSignal || graphserve::CudaContextLost()) break;
  }
  const bool lost_gpu = graphserve::CudaContextLost();
  if (lost_gpu) {
    spdlog::error("exiting because a CUDA context is lost ({}); the process must be restarted",
                  graphserve::LostCudaContextReason());
  } else {
    spdlog::info("received {}: draining", signal == SIGTERM ? "SIGTERM" : "SIGINT");
  }
  const absl::Status drained = (*server)->Shutdown();
  remove_scratch_demo();
  if (lost_gpu) {
    std::cerr << "graphserve: a CUDA context is lost (" << graphserve::LostCudaContextReason()
              << "); exiting with status " << graphserve::kServerExitFailure
              << " to be restarted\n";
    return graphserve::kServerExitFailure;
  }
  if (!drained.ok()) {
    std::cerr << "graphserve: " << drained.message() << "\n";
    return graphserve::kServerExitFailure;
  }
  return graphserve::kServerExitOk;
}
