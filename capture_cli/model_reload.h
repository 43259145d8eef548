#pragma once
// Reloading a served model with new capture sizes (and length buckets)
// through Triton's model
// control RPCs: ModelConfig for the config it serves now, then
// RepositoryModelLoad with that config, its capture sizes replaced, as the
// "config" parameter (JSON). The server must run with
// --model-control-mode=explicit. It captures the new sizes while the old
// version keeps serving and switches when they are ready, so no request
// fails (Note [Reloading without downtime] in server/model_registry.h).
//
// The reload lives in the server only: the repository's config.pbtxt keeps
// the old sizes, and a restarted server serves those.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/model_config.pb.h"

namespace graphserve {

struct ModelReloadOptions {
  // The server's gRPC target, e.g. "localhost:8001" (no default: a reload
  // goes where it is told).
  std::string address;
  // The model to reload, and the version whose config to start from (empty:
  // the server's choice, its latest).
  std::string model;
  std::string version;
  // The capture sizes to load it with, ascending, each >= 1.
  std::vector<int64_t> batch_sizes;
  // For a model with one shape dim: the length buckets to load it with,
  // ascending; empty keeps the config's.
  std::vector<int64_t> buckets;
  // Deadline of the ModelConfig call.
  absl::Duration config_timeout = absl::Seconds(30);
  // Deadline of the load: it captures (and on a GPU times) every new size,
  // which on a large model takes minutes.
  absl::Duration load_timeout = absl::Minutes(10);
};

struct ModelReloadResult {
  // The config sent with the load.
  inference::ModelConfig config;
  // The capture sizes (and buckets of one extent) the config named before.
  std::vector<int64_t> previous_sizes;
  std::vector<int64_t> previous_buckets;
  // How long RepositoryModelLoad took: the new sizes' capture and checks.
  absl::Duration load_time;
};

// `config` with capture.batch_sizes = `sizes`, capture.buckets one per
// entry of `buckets` when it is not empty, and capture.cost and
// capture.schedules cleared: they hold one entry per old size (and bucket),
// and the server measures and chooses them again for the new ones.
inference::ModelConfig WithCaptureSizes(inference::ModelConfig config,
                                        const std::vector<int64_t>& sizes,
                                        const std::vector<int64_t>& buckets = {});

// Fetches the config, replaces its sizes (WithCaptureSizes) and loads it.
// Errors keep the server's code and message (FAILED_PRECONDITION without
// explicit model control, NOT_FOUND for an unknown model) and say which call
// failed at which address.
absl::StatusOr<ModelReloadResult> ReloadWithCaptureSizes(const ModelReloadOptions& options);

}  // namespace graphserve
