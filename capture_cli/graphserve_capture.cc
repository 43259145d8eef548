// graphserve-capture: offline tools for capturing CUDA graphs. See
// capture_cli/capture_command.h; `graphserve-capture --help` lists the commands.

#include <iostream>
#include <string>
#include <vector>

#include "capture_cli/capture_command.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return graphserve::RunCaptureCommand(args, std::cout, std::cerr);
}
