// graphserve-client: health, metadata, statistics, single requests and
// perf_analyzer-style load against a KServe v2 gRPC server. See
// client/client_command.h; `graphserve-client --help` lists the commands.

#include <iostream>
#include <string>
#include <vector>

#include "client/client_command.h"
#include "common/mutex_checks.h"

int main(int argc, char** argv) {
  graphserve::TurnOffMutexDeadlockDetection();  // Note [Abseil's deadlock detection]
  const std::vector<std::string> args(argv + 1, argv + argc);
  return graphserve::RunClientCommand(args, std::cout, std::cerr);
}
