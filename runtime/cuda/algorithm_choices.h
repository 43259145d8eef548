#pragma once
// Library algorithms chosen by timing at plan time, shared by the M stream
// slots' plans of one model: a slot's plan for batch size B runs the same
// GEMMs and convolutions as every other slot's plan for B, on other buffers,
// so each is timed once per size and the other slots replay the choice.
// That keeps a model's load time growing with N sizes, not N x M.
// Where a library's built plan is itself immutable and may run on several
// slots' handles at once (a cuDNN graph plan), the plan is shared instead of
// a choice, so it is also built once.
//
// One AlgorithmChoices serves the plans of one model on one device, made one
// at a time (the slots and sizes plan in turn); the mutex only keeps a
// misuse from corrupting the maps.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace graphserve {

class AlgorithmChoices {
 public:
  // The choice recorded under `key`, if any.
  [[nodiscard]] std::optional<int64_t> Find(const std::string& key) const;
  void Record(const std::string& key, int64_t choice);

  // The plan recorded under `key`, or null. Its type is the recording
  // kernel's: keys of plans name their kind (CudnnConv's start "Conv ").
  [[nodiscard]] std::shared_ptr<const void> FindPlan(const std::string& key) const;
  void RecordPlan(const std::string& key, std::shared_ptr<const void> plan);

  // How many times slower than the fastest candidate each candidate ran (by
  // its library's name of it), at the sizes of one shape timed so far, the
  // least seen: what a convolution's other sizes leave untimed (ConvSlowdowns,
  // Note [Convolution tuning budget] in runtime/cuda/cudnn_conv.h). Empty
  // when nothing was recorded under `key`; recording replaces.
  using Slowdowns = std::map<std::string, float>;
  [[nodiscard]] Slowdowns FindSlowdowns(const std::string& key) const;
  void RecordSlowdowns(const std::string& key, Slowdowns slowdowns);

  // Device memory that kernels time their candidates in (outside the arena:
  // Note [Step workspaces]), shared by all that time through this object, so
  // that each timed kernel does not allocate and free its own (cudaFree
  // waits for the whole device). Returns the address of the scratch held, if
  // it has at least `bytes`, else of the one `allocate(bytes)` makes, which
  // replaces it (the old one is freed: a caller uses the address only until
  // its timing is done). `allocate` returns an owner of device memory whose
  // get() is the address.
  using ScratchAllocator = std::function<absl::StatusOr<std::shared_ptr<void>>(size_t bytes)>;
  absl::StatusOr<void*> TimingScratch(size_t bytes, const ScratchAllocator& allocate);
  // Frees the scratch: the executor, once a plan's kernels are timed, so that
  // a loaded model holds none.
  void ReleaseTimingScratch();

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> choices_;                    // guarded by mu_
  std::map<std::string, std::shared_ptr<const void>> plans_;  // guarded by mu_
  std::map<std::string, Slowdowns> slowdowns_;                // guarded by mu_
  std::shared_ptr<void> scratch_;                             // guarded by mu_
  size_t scratch_bytes_ = 0;                                  // guarded by mu_
};

}  // namespace graphserve
