#pragma once
// graphserve-client's command line, kept out of main() so that tests can run
// it: `graphserve-client [--url HOST:PORT] <command> [flags]` with the
// commands live, ready, metadata, config, stats, infer and perf (see
// ClientUsage()). It speaks the KServe v2 / Open Inference Protocol over
// gRPC, so it works against GraphServe, Triton or any server of that
// protocol.

#include <ostream>
#include <string>
#include <vector>

namespace graphserve {

// Exit codes of RunClientCommand.
inline constexpr int kClientExitOk = 0;
// The server is unreachable, a model unknown or not ready, a request failed,
// an input file is unreadable or of the wrong size.
inline constexpr int kClientExitFailure = 1;
// A bad command, flag or flag value.
inline constexpr int kClientExitUsage = 2;

// The top-level usage text (`graphserve-client --help`).
std::string ClientUsage();

// Runs graphserve-client on `args` (argv without the program name). Results
// and help go to `out`, errors to `err` prefixed "graphserve-client: ".
// Returns one of the exit codes above.
int RunClientCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace graphserve
