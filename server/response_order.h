#pragma once
// Answers a model's requests in the order they were accepted: Triton's
// dynamic_batching { preserve_ordering: true }. Chunks run on several stream
// slots and merged requests finish together, so without it a later request
// may be answered first.

#include <cstdint>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphserve {

class ResponseOrder {
 public:
  // The next request's place in line.
  uint64_t Accept();
  // Runs `answer` once every request accepted before `sequence` has been
  // answered: now, on this thread, or later on the thread that finishes the
  // last earlier one. Every accepted sequence must be finished once (a
  // refused request with an empty answer), or the ones after it wait
  // forever. Answers run under the lock, so they must be quick (post the
  // response, no more).
  void Finish(uint64_t sequence, std::function<void()> answer);

  // Implementation details follow.
 private:
  absl::Mutex mu_;
  uint64_t accepted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_answer_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, std::function<void()>> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace graphserve
