#pragma once
// graphserve-capture's command line, kept out of main() so that tests can run
// it. Subcommands: `select` (choose the typical batch sizes to capture from a
// history of request batch sizes) and `prepare` (capture a model's CUDA
// graphs on the GPU and write its model repository entry).

#include <ostream>
#include <string>
#include <vector>

namespace graphserve {

// Exit codes of RunCaptureCommand.
inline constexpr int kCaptureExitOk = 0;
inline constexpr int kCaptureExitFailure = 1;  // e.g. a malformed history, no GPU, a failed capture
inline constexpr int kCaptureExitUsage = 2;    // bad subcommand, flag or flag value

// The top-level usage text (`graphserve-capture --help`).
std::string CaptureUsage();

// Runs graphserve-capture on `args` (argv without the program name). Results
// and help go to `out`, errors to `err`, prefixed "graphserve-capture: ".
// Returns one of the exit codes above.
int RunCaptureCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace graphserve
