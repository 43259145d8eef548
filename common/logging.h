#pragma once
// Logging goes through spdlog. Binaries call InitLogging once from main().

#include "spdlog/spdlog.h"

namespace graphserve {

// Sets the default logger's pattern and level; `verbose` enables debug output.
void InitLogging(bool verbose);

}  // namespace graphserve
