#pragma once
// The models a server serves: every version the repository's policies name,
// loaded (captured and checked) before the server reports ready. A model that
// fails to load stays listed, with why, so clients get UNAVAILABLE and the
// reason rather than NOT_FOUND, and health stays NOT_SERVING.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/served_model.h"

namespace graphserve {

// One (model, version) the repository asked for, loaded or not.
struct ModelVersionState {
  std::string name;
  int64_t version = 0;          // 0 when the model failed before a version was known
  absl::Status status;          // OK: serving
  std::unique_ptr<ServedModel> model;  // set when status is OK
};

class ModelRegistry {
 public:
  // Scans `repository` (server/model_repository.h) and loads every version
  // its policies name, reporting each model's progress on `progress`.
  // NotFound when the repository itself is missing; per-model failures are
  // kept in the registry, not returned.
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Load(const std::string& repository,
                                                             const ServedModelOptions& options,
                                                             std::ostream& progress);

  // The model serving `version` of `name` ("" means its latest loaded
  // version). NotFound, listing what exists, for an unknown model or a
  // version not served; Unavailable, with the load error, for a model or
  // version that failed to load.
  absl::StatusOr<ServedModel*> Find(absl::string_view name, absl::string_view version) const;

  // True when every version the repository asked for is loaded.
  [[nodiscard]] bool all_ready() const;
  [[nodiscard]] const std::vector<ModelVersionState>& states() const { return states_; }
  // One row per (model, version): versions, captured sizes, streams, memory,
  // load time, status.
  [[nodiscard]] std::string StartupTable() const;
  // Refuses new requests to every model and runs the queued ones until
  // `deadline`; those still queued then are answered UNAVAILABLE. Returns
  // once every accepted request is answered (see ServedModel::Drain).
  void DrainAll(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

  // Implementation details follow.
 private:
  explicit ModelRegistry(std::vector<ModelVersionState> states) : states_(std::move(states)) {}
  std::vector<ModelVersionState> states_;  // sorted by name, then version
};

}  // namespace graphserve
