#include "runtime/cuda/algorithm_choices.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace graphserve {

std::optional<std::string> AlgorithmChoices::Find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = choices_.find(key);
  if (it == choices_.end()) return std::nullopt;
  return it->second;
}

void AlgorithmChoices::Record(const std::string& key, std::string choice) {
  std::lock_guard<std::mutex> lock(mu_);
  choices_[key] = std::move(choice);
}

std::string AlgorithmChoices::Key(const std::string& node, int64_t batch_size) {
  return absl::StrCat(node, "@", batch_size);
}

}  // namespace graphserve
