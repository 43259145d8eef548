#pragma once
// One served model version: its interface, batch planner and stream pool,
// and the request path that ties them together (see the data flow in
// ../shared/ARCHITECTURE.md):
//
//   validate names, dtypes, shapes, byte counts (request_validation.h)
//   -> size the response (outputs go out as raw_output_contents)
//   -> plan b rows as chunks: pad up or split (batch_planner.h)
//   -> queue every chunk on the stream pool at once (stream_pool.h)
//   -> each chunk's worker runs it and copies its real rows into the response
//   -> the last chunk to finish ends the RPC.
//
// Loading captures and checks every graph (GPU) or binds every size (host)
// before the model is reported ready.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"
#include "server/batch_planner.h"
#include "server/model_counters.h"
#include "server/model_interface.h"
#include "server/model_repository.h"
#include "server/stream_pool.h"

namespace graphserve {

// Where models run.
enum class ExecutorKind {
  kCuda,  // CUDA graphs (or eager, graphs off) on a GraphSet's streams
  kHost,  // the host reference executor
};

struct ServedModelOptions {
  ExecutorKind executor = ExecutorKind::kCuda;
  // CUDA devices (kCuda) of models whose config lists no GPUs: each gets
  // the model's stream slots and its own graphs; requests spread over all.
  std::vector<int> devices = {0};
  // False serves every model eagerly on the same streams and plans, for
  // side-by-side measurement; a config's capture.graphs_disabled does the
  // same for one model.
  bool graphs = true;
  // TF32 GEMMs (kCuda): faster, relative error near 3e-4. Off: exact float32.
  bool allow_tf32 = false;
  // Chunks that may wait for a free stream slot (see StreamPoolOptions).
  size_t max_queued_chunks = 1024;
  // Timed launches per size when a config carries no cost table (kCuda).
  int64_t cost_iters = 30;
};

// What loading did, for the startup table.
struct ModelLoadSummary {
  std::string executor;             // e.g. "CUDA graphs, GPU 0"
  std::vector<int64_t> batch_sizes; // ascending
  int num_streams = 0;               // slots over all GPUs
  size_t weight_bytes = 0;           // over all GPUs
  size_t slot_bytes = 0;            // device arena + I/O + staging + workspace, all slots
  double load_ms = 0;
  std::string costs;                // "config", "measured at load" or "none (pad up)"
  // Each size's multi-stream schedule and where it came from, e.g. "1:asap
  // on 4 streams, 8:single (measured at load)"; empty on the host executor.
  std::string schedules;
};

class ServedModel {
 public:
  // Imports `version`'s model file, checks it against the config's
  // interface, then captures and checks its graphs (kCuda) or binds it at
  // every size (kHost). Errors say which step failed and why.
  static absl::StatusOr<std::unique_ptr<ServedModel>> Load(const RepositoryModel& entry,
                                                           const ModelVersionEntry& version,
                                                           const ServedModelOptions& options);

  // Runs one request. `done` is called exactly once with the status the RPC
  // ends with: inline when the request is refused (bad input, full queue),
  // otherwise on a stream worker after the request's last chunk. `request`
  // and `response` must stay alive until then; when the status is OK the
  // response is complete.
  void Infer(const inference::ModelInferRequest* request, inference::ModelInferResponse* response,
             std::function<void(const absl::Status&)> done);

  [[nodiscard]] const std::string& name() const { return interface_.name; }
  [[nodiscard]] int64_t version() const { return version_; }
  [[nodiscard]] const ModelInterface& interface() const { return interface_; }
  // The config as served: the repository's, with the capture section set to
  // the sizes, streams and costs in use.
  [[nodiscard]] const inference::ModelConfig& config() const { return config_; }
  [[nodiscard]] const ModelLoadSummary& summary() const { return summary_; }
  void FillStatistics(inference::ModelStatistics* statistics) const;
  // Requests accepted and not yet answered (Triton's pending request count).
  [[nodiscard]] int64_t pending_requests() const { return counters_.pending(); }
  // The counters FillStatistics reads, and GraphServe's own for /metrics.
  [[nodiscard]] const ModelCounters& counters() const { return counters_; }
  // Runs every accepted chunk, then refuses new ones (StreamPool::Drain).
  void Drain();

  // Implementation details follow.
  struct RequestState;

 private:
  ServedModel(ModelInterface interface, int64_t version, inference::ModelConfig config,
              BatchPlanner planner, std::unique_ptr<StreamPool> pool, ModelLoadSummary summary);
  void FinishChunk(const std::shared_ptr<RequestState>& state, const PlannedChunk& chunk,
                   const absl::Status& status, StreamPool::Clock::duration queued,
                   const ChunkTiming& timing);

  const ModelInterface interface_;
  const int64_t version_;
  const std::string version_text_;  // what responses and statistics carry
  const inference::ModelConfig config_;
  const BatchPlanner planner_;
  const ModelLoadSummary summary_;
  const std::unique_ptr<StreamPool> pool_;

  ModelCounters counters_;  // what statistics and /metrics read
};

}  // namespace graphserve
