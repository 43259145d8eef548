#include "server/response_order.h"

#include <utility>

namespace graphserve {

uint64_t ResponseOrder::Accept() {
  absl::MutexLock lock(&mu_);
  return accepted_++;
}

void ResponseOrder::Finish(uint64_t sequence, std::function<void()> answer) {
  absl::MutexLock lock(&mu_);
  finished_.emplace(sequence, std::move(answer));
  // Answering under the lock keeps two threads from interleaving their runs.
  for (auto next = finished_.begin(); next != finished_.end() && next->first == next_answer_;
       next = finished_.begin()) {
    next->second();
    finished_.erase(next);
    ++next_answer_;
  }
}

}  // namespace graphserve
