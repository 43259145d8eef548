#pragma once
// The models a server serves: every version the repository's policies name,
// loaded (captured and checked) before the server reports ready. A model that
// fails to load stays listed, with why, so clients get UNAVAILABLE and the
// reason rather than NOT_FOUND, and health stays NOT_SERVING.
//
// Model control (Triton's --model-control-mode): with `explicit` models are
// loaded and unloaded by RepositoryModelLoad/Unload, with `poll` by changes
// to the repository; see Note [Reloading without downtime].

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/model_repository.h"
#include "server/served_model.h"

namespace graphserve {

// One (model, version) the repository asked for, loaded or not.
struct ModelVersionState {
  std::string name;
  int64_t version = 0;          // 0 when the model failed before a version was known
  absl::Status status;          // OK: serving
  std::shared_ptr<ServedModel> model;  // set when status is OK
};

// The registry's states at one moment; iterating it needs no lock and it
// stays valid (with its models alive) while held.
class RegistrySnapshot {
 public:
  explicit RegistrySnapshot(std::shared_ptr<const std::vector<ModelVersionState>> states)
      : states_(std::move(states)) {}
  [[nodiscard]] auto begin() const { return states_->begin(); }
  [[nodiscard]] auto end() const { return states_->end(); }
  [[nodiscard]] bool empty() const { return states_->empty(); }
  [[nodiscard]] size_t size() const { return states_->size(); }

 private:
  std::shared_ptr<const std::vector<ModelVersionState>> states_;
};

// Triton's --model-control-mode.
enum class ModelControlMode {
  kNone,      // load everything at start; no load or unload requests
  kExplicit,  // load what --load-model names; load and unload on request
  kPoll,      // load everything, then follow the repository's changes
};

struct ModelRegistryOptions {
  ServedModelOptions models;
  ModelControlMode control = ModelControlMode::kNone;
  // kExplicit: the models loaded at start ("*": all).
  std::vector<std::string> startup_models;
  // kPoll: how often the repository is scanned for changes.
  std::chrono::milliseconds poll_interval{15000};
  // How model directories are read (--model-config-name,
  // --disable-auto-complete-config).
  RepositoryReadOptions read;
};

// One line of RepositoryIndex.
struct ModelIndexEntry {
  std::string name;
  std::string version;  // empty for a model with no version loaded or tried
  std::string state;    // "READY", "UNAVAILABLE", or empty (never loaded)
  std::string reason;
};

class ModelRegistry {
 public:
  // Scans the `repositories` (ScanModelRepositories: a model name unique
  // across them) and loads the versions their policies name (under kExplicit
  // only the startup models), reporting progress on `progress`. NotFound
  // when a repository itself is missing; per-model failures are kept in the
  // registry, not returned.
  static absl::StatusOr<std::unique_ptr<ModelRegistry>> Load(const std::vector<std::string>& repositories,
                                                             const ModelRegistryOptions& options,
                                                             std::ostream& progress);
  ~ModelRegistry();

  // The model serving `version` of `name` ("" means its latest loaded
  // version), kept alive for as long as the caller holds it: a request holds
  // its model until it is answered, so a reload never cuts it off. NotFound,
  // listing what exists, for an unknown model or a version not served;
  // Unavailable, with the load error, for a model or version that failed to
  // load.
  absl::StatusOr<std::shared_ptr<ServedModel>> Find(absl::string_view name,
                                                    absl::string_view version) const;

  // True when every version the registry tried to load is loaded.
  [[nodiscard]] bool all_ready() const;
  [[nodiscard]] RegistrySnapshot states() const;
  // One row per (model, version): versions, captured sizes, streams, memory,
  // load time, status.
  [[nodiscard]] std::string StartupTable() const;
  // Refuses new requests to every model and runs the queued ones until
  // `deadline`; those still queued then are answered UNAVAILABLE. Returns
  // once every accepted request is answered (see ServedModel::Drain).
  void DrainAll(std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

  // --- Model control ---
  [[nodiscard]] ModelControlMode control_mode() const { return options_.control; }
  // Every model directory of the repository with each version's state.
  [[nodiscard]] absl::StatusOr<std::vector<ModelIndexEntry>> Index(bool ready_only) const;
  // Loads `name` again from the repository (or with `config_json`, Triton's
  // "config" load parameter, instead of its config.pbtxt) while its current
  // versions keep serving, then switches to the new ones at once. Runs on
  // the registry's control thread; `done` gets the outcome there.
  // FailedPrecondition unless the mode is kExplicit; NotFound for a model not
  // in the repository; the load error, with the old versions still serving.
  void RequestLoad(const std::string& name, std::optional<std::string> config_json,
                   std::function<void(const absl::Status&)> done);
  // Stops serving `name`: new requests get NotFound, requests already
  // accepted finish, then its memory is released. Same thread and errors.
  void RequestUnload(const std::string& name, std::function<void(const absl::Status&)> done);
  // Shutdown: later loads and unloads, and those still queued, are answered
  // UNAVAILABLE at once; one already running finishes. Idempotent; the
  // destructor calls it.
  void StopControl();

  // Implementation details follow.
  class Retirer;

 private:
  ModelRegistry(std::vector<std::string> repositories, ModelRegistryOptions options);
  // Loads every version of the repository's model `name` into states; the
  // old states of `name` are replaced in one step.
  // An ensemble's composing models that are not serving load first
  // (`depth`: ensembles above this one on that path).
  absl::Status LoadModel(const std::string& name, const std::optional<std::string>& config_json,
                         std::ostream& progress, int depth = 0);
  // OK for a model that is not an ensemble; for an ensemble, whether every
  // step's model is found and ready, ensembles within it likewise (`depth`
  // bounds the nesting); the error names the first that is not.
  absl::Status ComposingModelsReady(const ServedModel& model, int depth) const;
  // Loads a scanned (or re-read) entry.
  absl::Status LoadEntry(const RepositoryModel& entry, std::ostream& progress);
  absl::Status UnloadModel(const std::string& name);
  void Replace(const std::string& name, std::vector<ModelVersionState> states);
  // Tells every other model that `name` was loaded again (an ensemble
  // builds its pipeline over the new version: Note [Ensembles as one graph]
  // in server/ensemble_scheduler.h).
  void TellModelsOfLoad(const std::string& name) const;
  void PollOnce(std::ostream& progress);
  void ControlLoop();
  // Runs `job` on the control thread; at shutdown jobs not yet run are
  // called with stopping = true, to answer without running.
  void Post(std::function<void(bool stopping)> job);

  const std::vector<std::string> repositories_;
  const ModelRegistryOptions options_;
  const std::shared_ptr<Retirer> retirer_;

  mutable absl::Mutex mu_;
  // Sorted by name, then version; replaced whole, never changed in place.
  std::shared_ptr<const std::vector<ModelVersionState>> states_ ABSL_GUARDED_BY(mu_);

  // The control thread: loads, unloads and polls, one at a time, off the
  // serving threads.
  absl::Mutex control_mu_;
  absl::CondVar control_cv_;
  std::deque<std::function<void(bool)>> jobs_ ABSL_GUARDED_BY(control_mu_);
  bool stopping_ ABSL_GUARDED_BY(control_mu_) = false;
  // kPoll only: each model directory's files (path, size, time) when it was
  // last loaded or tried.
  std::map<std::string, std::string> fingerprints_;  // control thread only
  std::thread control_thread_;
};

// Note [Reloading without downtime]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The registry's states are an immutable vector behind a shared_ptr: Find
// copies the pointer under a lock held for nanoseconds, and a reload builds
// the new versions (import, capture, check: seconds, on the control thread)
// while the old ones keep serving, then swaps the pointer. Every request
// holds a shared_ptr to the model it found until it is answered, so a
// request that found the old version just before the swap is still accepted
// and answered by it: no request fails because of a reload. The old version
// is destroyed when its last holder lets go, on the retirer's thread (never
// a stream worker of its own, which its destructor joins): its queue has
// emptied by then, its stream pool stops and its arena, weights and graphs
// are freed; the retirer logs the device memory that came back.

}  // namespace graphserve
