#include "runtime/cuda/algorithm_choices.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphserve {

std::optional<int64_t> AlgorithmChoices::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void AlgorithmChoices::Record(const std::string& key, int64_t choice) {
  std::lock_guard<std::mutex> lock(mu_);
  choices_[key] = choice;
}

std::shared_ptr<const void> AlgorithmChoices::FindPlan(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  return it == plans_.end() ? nullptr : it->second;
}

void AlgorithmChoices::RecordPlan(const std::string& key, std::shared_ptr<const void> plan) {
  std::lock_guard<std::mutex> lock(mu_);
  plans_[key] = std::move(plan);
}

AlgorithmChoices::Slowdowns AlgorithmChoices::FindSlowdowns(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slowdowns_.find(key);
  return it == slowdowns_.end() ? Slowdowns{} : it->second;
}

void AlgorithmChoices::RecordSlowdowns(const std::string& key, Slowdowns slowdowns) {
  std::lock_guard<std::mutex> lock(mu_);
  slowdowns_[key] = std::move(slowdowns);
}

absl::StatusOr<void*> AlgorithmChoices::TimingScratch(size_t bytes,
                                                      const ScratchAllocator& allocate) {
  std::lock_guard<std::mutex> lock(mu_);
  if (scratch_ == nullptr || scratch_bytes_ < bytes) {
    scratch_.reset();  // freed before the larger one is allocated
    scratch_bytes_ = 0;
    absl::StatusOr<std::shared_ptr<void>> scratch = allocate(bytes);
    if (!scratch.ok()) return scratch.status();
    scratch_ = *std::move(scratch);
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

void AlgorithmChoices::ReleaseTimingScratch() {
  std::lock_guard<std::mutex> lock(mu_);
  scratch_.reset();
  scratch_bytes_ = 0;
}

}  // namespace graphserve
