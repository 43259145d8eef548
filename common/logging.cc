#include "common/logging.h"

namespace graphserve {

void InitLogging(bool verbose) {
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::info);
}

}  // namespace graphserve
