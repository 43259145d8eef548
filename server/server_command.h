#pragma once
// graphserve's command line, kept out of main() so that tests reach it:
// every tritonserver flag (server/triton_flags.h) beside graphserve's own,
// parsed into the server's options, with the executor resolved (--device
// auto picks the GPU when one is visible and says loudly when it falls back
// to the host).

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/logging.h"
#include "server/inference_server.h"

namespace graphserve {

// Exit codes of graphserve.
inline constexpr int kServerExitOk = 0;        // served, then shut down cleanly
inline constexpr int kServerExitFailure = 1;   // could not start, or shutdown cut requests off
inline constexpr int kServerExitUsage = 2;     // bad flag or flag value

struct ServerCommand {
  InferenceServerOptions options;
  bool help = false;   // --help: print usage and exit
  // Triton's --log-verbose, --log-info, --log-warning, --log-error,
  // --log-format and --log-file.
  LoggingOptions logging;
  // One line for each of Triton's flags given that does not apply here
  // (server/triton_flags.h), for main() to log at startup.
  std::vector<std::string> ignored_flags;
  // Flags that do something other than the user may think, for the log.
  std::vector<std::string> warnings;
  // No --model-repository: serve the demo repository (examples/
  // demo_repository.h), which main() writes to a scratch directory.
  bool serve_demo = false;
};

// The usage text (`graphserve --help`).
std::string ServerUsage();

// Parses argv without the program name. InvalidArgument, saying what is
// expected, for an unknown flag or a bad value. `gpus_visible` is how many
// CUDA devices this machine has (what --device auto decides on);
// `notices` receives the loud line when the server falls back to the host.
absl::StatusOr<ServerCommand> ParseServerCommand(const std::vector<std::string>& args,
                                                 int gpus_visible, std::ostream& notices);

}  // namespace graphserve
