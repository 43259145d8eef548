#include "client/replay_cost.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace graphserve {

ReplayCost FullChunkReplay(const inference::ModelConfig& config, int64_t batch_size) {
  const inference::ModelCapture& capture = config.capture();
  ReplayCost replay;
  replay.graphs = !capture.graphs_disabled();
  if (capture.cost().empty()) {
    replay.note =
        "the served config carries no measured costs (capture.cost), as on the host "
        "executor";
    return replay;
  }
  // The sizes the server runs: capture.batch_sizes, or failing that the
  // sizes measured.
  std::vector<int64_t> sizes(capture.batch_sizes().begin(), capture.batch_sizes().end());
  if (sizes.empty()) {
    for (const inference::CaptureCost& cost : capture.cost()) sizes.push_back(cost.batch_size());
  }
  std::sort(sizes.begin(), sizes.end());
  const auto holds = std::lower_bound(sizes.begin(), sizes.end(), batch_size);
  if (holds == sizes.end()) {
    replay.note = absl::StrCat("batch ", batch_size, " exceeds the largest captured size ",
                               sizes.back(), ": the server splits it over several replays");
    return replay;
  }
  const int64_t padded = *holds;
  const char* what = replay.graphs ? "graph replay" : "eager run";
  for (const inference::CaptureCost& cost : capture.cost()) {
    const double us = replay.graphs ? cost.graph_us() : cost.eager_us();
    if (cost.batch_size() != padded || !(us > 0)) continue;
    replay.us = us;
    replay.captured_size = padded;
    if (padded != batch_size) {
      replay.note = absl::StrCat("batch ", batch_size, " is not captured: the cost of ", padded,
                                 ", the size it pads to");
    }
    return replay;
  }
  replay.note = absl::StrCat("capture.cost has no measured ", what, " of batch ", padded);
  return replay;
}

}  // namespace graphserve
