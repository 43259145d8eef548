#pragma once
// Runs chunks on the host reference executor: how GraphServe serves on a
// machine without a GPU (`--device cpu`), and how the end-to-end tests run in
// CI. The plan is the GPU's: each chunk runs the model bound at its captured
// size with the padding rows copied from row 0, so padding, splitting and
// merging are exercised exactly as on the GPU, only slower.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/host/host_executor.h"
#include "runtime/ir.h"
#include "server/chunk_runner.h"

namespace graphserve {

struct HostRunnerOptions {
  // Worker threads, like the GPU's stream slots.
  int num_slots = 1;
  // Keys a chunk may run at (the model's captured keys).
  std::vector<GraphKey> graphs;
};

class HostRunner : public ChunkRunner {
 public:
  // Binds `model` at every size. Errors name the size that failed to bind.
  static absl::StatusOr<std::unique_ptr<HostRunner>> Create(const Model& model,
                                                            const HostRunnerOptions& options);

  [[nodiscard]] int num_slots() const override { return num_slots_; }
  absl::Status PrepareWorkerThread(int slot) override;
  // Runs the whole chunk (depth 1: Finish has nothing left to do).
  absl::Status Start(int slot, int staging, const ChunkJob& job, ChunkTiming* timing) override;
  absl::Status Finish(int /*slot*/, int /*staging*/, const ChunkJob& /*job*/,
                      ChunkTiming* /*timing*/) override {
    return absl::OkStatus();
  }
  [[nodiscard]] std::string description() const override;
  // Bytes of weights the bound graphs hold (shared by all sizes).
  [[nodiscard]] size_t weight_bytes() const { return weight_bytes_; }

  // Implementation details follow.
 private:
  HostRunner(int num_slots, std::map<GraphKey, std::unique_ptr<HostExecutor>> executors,
             size_t weight_bytes);

  const int num_slots_;
  // HostExecutor::Run is thread-safe, so slots share one executor per key.
  const std::map<GraphKey, std::unique_ptr<HostExecutor>> executors_;
  const size_t weight_bytes_;
};

}  // namespace graphserve
