#pragma once
// The demo model repository the README's main command serves: the example
// models (examples/example_models.h) with their config.pbtxt, in the layout
// the server reads (<repo>/<model>/config.pbtxt, <repo>/<model>/1/model.onnx).
// Written without a GPU: the configs carry the captured sizes and streams but
// no cost table, which a GPU server measures at load.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace graphserve {

struct DemoRepositoryOptions {
  // Sizes every demo model captures: small requests pad to 1, 4 or 16 rows;
  // 64 and 256 cover bulk scoring.
  std::vector<int64_t> batch_sizes = {1, 4, 16, 64, 256};
  // Stream slots per model.
  int num_streams = 2;
  // The largest request; above the largest captured size requests split.
  int64_t max_batch_size = 256;
};

// Writes `dir`/mlp and `dir`/dlrm_dense (created if needed, replacing what
// was there) and returns the model directories through `written` (optional).
// Errors name the path.
absl::Status WriteDemoRepository(const std::string& dir, const DemoRepositoryOptions& options,
                                 std::vector<std::string>* written = nullptr);

}  // namespace graphserve
