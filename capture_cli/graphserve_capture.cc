// graphserve-capture: offline tools for capturing CUDA graphs. See
// capture_cli/capture_command.h; `graphserve-capture --help` lists the commands.

#include <iostream>
#include <string>
#include <vector>

#include "capture_cli/capture_command.h"
#include "common/logging.h"

int main(int argc, char** argv) {
  // `prepare` loads a model as the server does, and the server's log of it
  // goes to stderr beside the progress; stdout holds the report.
  graphserve::LoggingOptions logging;
  logging.to_stderr = true;
  if (absl::Status status = graphserve::InitLogging(logging); !status.ok()) return 1;
  const std::vector<std::string> args(argv + 1, argv + argc);
  return graphserve::RunCaptureCommand(args, std::cout, std::cerr);
}
