#include "server/graph_set_runner.h"

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

GraphSetRunner::GraphSetRunner(std::shared_ptr<const GraphSet> set, int device, LaunchMode mode)
    : set_(std::move(set)), device_(device), mode_(mode) {}

int GraphSetRunner::num_slots() const { return set_->num_slots(); }

absl::Status GraphSetRunner::PrepareWorkerThread(int /*slot*/) {
  // Launch expects the set's device to be current; once per thread, not per
  // launch (see GraphSet::Launch).
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return absl::OkStatus();
}

absl::Status GraphSetRunner::Run(int slot, const ChunkJob& job, ChunkTiming* timing) {
  Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(set_->Launch({slot, job.chunk.batch_size, job.chunk.rows, mode_}, job.inputs));
  timing->input_ns = NanosSince(start);

  // Blocks this slot's worker only; the gRPC threads never wait here.
  start = Clock::now();
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(set_->done_event(slot)));
  timing->infer_ns = NanosSince(start);

  start = Clock::now();
  for (size_t o = 0; o < job.outputs.size(); ++o) {
    if (job.outputs[o] == nullptr) continue;
    std::memcpy(job.outputs[o], set_->output_rows(slot, o),
                set_->output_bytes_per_row(o) * static_cast<size_t>(job.chunk.rows));
  }
  timing->output_ns = NanosSince(start);
  return absl::OkStatus();
}

std::string GraphSetRunner::description() const {
  return absl::StrCat(mode_ == LaunchMode::kGraph ? "CUDA graphs" : "eager (graphs off)",
                      ", GPU ", device_);
}

}  // namespace graphserve
