#pragma once
// Library algorithms chosen by timing at plan time, shared by the M stream
// slots' plans of one model: a slot's plan for batch size B runs the same
// GEMMs and convolutions as every other slot's plan for B, on other buffers,
// so each is timed once per size and the other slots replay the choice.
// That keeps a model's load time growing with N sizes, not N x M.
// A choice is recorded in its kernel's text form (a cuBLASLt candidate's
// index, a cuDNN engine configuration's "eng12 k2=1").

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace graphserve {

class AlgorithmChoices {
 public:
  // The choice recorded under `key`, if any.
  [[nodiscard]] std::optional<std::string> Find(const std::string& key) const;
  void Record(const std::string& key, std::string choice);

  // "<node name>@<batch size>": a plan's kernels are named after their node,
  // and one size's plans agree on every shape. Kernels whose choice depends
  // on their sizes alone may key by those instead, so nodes of equal shape
  // share one timing.
  static std::string Key(const std::string& node, int64_t batch_size);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> choices_;  // guarded by mu_
};

}  // namespace graphserve
