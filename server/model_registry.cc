#include "server/model_registry.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/cuda_device_guard.h"
#include "common/heap_trim.h"
#include "common/status.h"
#include "common/thread_name.h"
#include "server/client_text.h"
#include "server/ensemble_config.h"
#include "server/ensemble_scheduler.h"
#include "server/sequence_batcher.h"
#include "server/model_repository.h"
#include "server/triton_config.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

// Ensembles nested in ensembles, at most: loading refuses cycles, and this
// bound keeps the readiness walk and the loading of composing models finite
// whatever a reload makes of the repository.
constexpr int kMaxEnsembleDepth = 16;

std::string MiB(size_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

std::string Names(const RegistrySnapshot& states) {
  std::vector<std::string> names;
  for (const ModelVersionState& state : states) {
    if (names.empty() || names.back() != state.name) names.push_back(state.name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace

// Frees unloaded and replaced models off the serving threads (Note
// [Reloading without downtime]) and says how much device memory came back.
class ModelRegistry::Retirer {
 public:
  Retirer() : thread_([this] { Loop(); }) {}
  ~Retirer() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    cv_.Signal();
    thread_.join();
  }
  void Retire(ServedModel* model) {
    {
      absl::MutexLock lock(&mu_);
      queue_.push_back(model);
    }
    cv_.Signal();
  }

 private:
  void Loop() {
    absl::MutexLock lock(&mu_);
    while (true) {
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;
      ServedModel* model = queue_.front();
      queue_.pop_front();
      mu_.Unlock();
      Free(model);
      mu_.Lock();
    }
  }
  static void Free(ServedModel* model) {
    const std::string label = absl::StrCat("model '", model->name(), "' version ",
                                           model->version());
    // Free memory on each of the model's GPUs, before and after: this
    // thread's current device says nothing about a model on another.
    const std::vector<int> devices = model->summary().devices;
    const std::optional<size_t> before = FreeDeviceBytes(devices);
    delete model;  // drains its (empty) queue, stops its slots, frees its memory
    const std::optional<size_t> after = before ? FreeDeviceBytes(devices) : std::nullopt;
    // Note [Trimming the heap] in common/heap_trim.h.
    const int64_t host_bytes = TrimHeap();
    if (after) {
      spdlog::info("{} retired: {} of device memory and {} of host memory returned", label,
                   MiB(*after > *before ? *after - *before : 0), MiB(host_bytes));
    } else {
      spdlog::info("{} retired: {} of host memory returned", label, MiB(host_bytes));
    }
  }

  // Free bytes summed over `devices`; nullopt for none, or when CUDA fails.
  static std::optional<size_t> FreeDeviceBytes(const std::vector<int>& devices) {
    if (devices.empty()) return std::nullopt;
    size_t sum = 0;
    for (int device : devices) {
      const CudaDeviceGuard guard(device);
      size_t free = 0, total = 0;
      if (!guard.status().ok() || cudaMemGetInfo(&free, &total) != cudaSuccess) {
        return std::nullopt;
      }
      sum += free;
    }
    return sum;
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<ServedModel*> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

namespace {

// A loaded model as the registry shares it: freed by the retirer once the
// last request holding it is answered.
std::shared_ptr<ServedModel> Share(std::unique_ptr<ServedModel> model,
                                   const std::shared_ptr<ModelRegistry::Retirer>& retirer) {
  return std::shared_ptr<ServedModel>(model.release(),
                                      [retirer](ServedModel* m) { retirer->Retire(m); });
}

// Triton's ignored fields, one line each, never an error, so a repository
// written for Triton loads as it is.
void LogIgnoredFields(const RepositoryModel& entry, std::ostream& progress) {
  for (const std::string& field : IgnoredConfigFields(entry.config)) {
    progress << "graphserve: model '" << entry.name << "': "
             << (entry.config_from_load ? "the load parameter 'config'" : "config.pbtxt")
             << " sets " << field
             << ", a Triton field GraphServe accepts and ignores\n";
  }
}

// The served config of an ensemble step's model, or why the ensemble cannot
// use it, in Triton's words (its model repository manager's dependency
// checks).
absl::StatusOr<inference::ModelConfig> ComposingConfig(const RegistrySnapshot& snapshot,
                                                       const std::string& ensemble,
                                                       const inference::ModelEnsembling::Step& step) {
  const std::string& name = step.model_name();
  bool known = false;
  const ModelVersionState* loaded = nullptr;
  const ModelVersionState* failed = nullptr;
  bool any_loaded = false;
  for (const ModelVersionState& state : snapshot) {
    if (state.name != name) continue;
    known = true;
    if (!state.status.ok()) {
      failed = &state;
      continue;
    }
    any_loaded = true;
    // Sorted by version: the last one loaded is the latest.
    if (step.model_version() < 0 || state.version == step.model_version()) loaded = &state;
  }
  if (!known) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ensemble ", ensemble, " contains models that are not available or ambiguous: ", name));
  }
  if (loaded != nullptr) return loaded->model->config();
  if (any_loaded) {
    return absl::InvalidArgumentError(absl::StrCat("ensemble '", ensemble, "' depends on '", name,
                                                   "' whose required version ",
                                                   step.model_version(), " is not loaded."));
  }
  std::string message = absl::StrCat("ensemble '", ensemble, "' depends on '", name,
                                     "' which has no loaded version.");
  if (failed != nullptr) {
    absl::StrAppend(&message, " Model '", name, "' loading failed with error: ",
                    failed->status.message());
  }
  return absl::InvalidArgumentError(message);
}

// `status` as clients read it: without the path of the repository that
// holds `entry` (Note [Server paths in error texts]); the log keeps it.
absl::Status ForClients(const absl::Status& status, const RepositoryModel& entry) {
  if (status.ok()) return status;
  const std::string repository = std::filesystem::path(entry.directory).parent_path().string();
  return absl::Status(status.code(), WithoutServerDirectory(status.message(), repository));
}

// Loads every version of `entry`; failures become states with their error.
// An ensemble's steps are checked against `registry`'s models as loaded now,
// and its requests find them there.
std::vector<ModelVersionState> LoadVersions(const RepositoryModel& entry,
                                            const ServedModelOptions& options,
                                            const std::shared_ptr<ModelRegistry::Retirer>& retirer,
                                            const ModelRegistry& registry,
                                            std::ostream& progress) {
  std::vector<ModelVersionState> states;
  if (!entry.status.ok()) {
    progress << "graphserve: model '" << entry.name << "': " << entry.status.message() << "\n";
    states.push_back({entry.name, 0, ForClients(entry.status, entry), nullptr});
    return states;
  }
  LogIgnoredFields(entry, progress);
  for (const ModelVersionEntry& version : entry.versions) {
    progress << "graphserve: loading model '" << entry.name << "' version " << version.version
             << " from " << version.model_path << "\n"
             << std::flush;
    ModelVersionState state{entry.name, version.version, absl::OkStatus(), nullptr};
    absl::StatusOr<std::unique_ptr<ServedModel>> model;
    if (IsEnsembleConfig(entry.config)) {
      const RegistrySnapshot snapshot = registry.states();
      model = LoadEnsemble(
          entry, version,
          [&](const inference::ModelEnsembling::Step& step) {
            return ComposingConfig(snapshot, entry.name, step);
          },
          [&registry](absl::string_view name, absl::string_view version) {
            return registry.Find(name, version);
          },
          options.gpu_wait);
    } else if (entry.config.has_sequence_batching()) {
      // Note [Sequence batching] in server/sequence_batcher.h.
      model = LoadSequenceModel(entry, version, options);
    } else {
      model = ServedModel::Load(entry, version, options);
    }
    if (model.ok()) {
      state.model = Share(*std::move(model), retirer);
    } else {
      // Triton's log line, which scripts grep for (Note [Triton's error texts]).
      progress << "graphserve: failed to load '" << entry.name << "' version " << version.version
               << ": " << model.status().message() << "\n";
      state.status = ForClients(model.status(), entry);
    }
    states.push_back(std::move(state));
  }
  return states;
}

bool Wanted(const ModelRegistryOptions& options, const std::string& name) {
  if (options.control != ModelControlMode::kExplicit) return true;
  for (const std::string& wanted : options.startup_models) {
    if (wanted == "*" || wanted == name) return true;
  }
  return false;
}

// What poll mode compares: every file under a model directory with its size
// and modification time.
std::string Fingerprint(const std::string& directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(directory, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    const auto size = it->file_size(error);
    const auto time = it->last_write_time(error).time_since_epoch().count();
    files.push_back(absl::StrCat(it->path().string(), ":", size, ":", time));
  }
  std::sort(files.begin(), files.end());
  return absl::StrJoin(files, "\n");
}

// Triton's check for ensembles that, through their steps, run themselves:
// the error names the cycle; OK when there is none.
absl::Status CircularDependency(const std::map<std::string, const RepositoryModel*>& by_name,
                                const std::string& start) {
  // Depth-first over the steps' models that are ensembles, with the path.
  std::vector<std::string> path = {start};
  std::set<std::string> visited;
  std::function<bool(const std::string&)> reaches_start = [&](const std::string& name) {
    const auto found = by_name.find(name);
    if (found == by_name.end() || !IsEnsembleConfig(found->second->config)) return false;
    for (const std::string& step : ComposingModelNames(found->second->config)) {
      if (step == start) return true;
      if (!visited.insert(step).second) continue;
      path.push_back(step);
      if (reaches_start(step)) return true;
      path.pop_back();
    }
    return false;
  };
  if (!reaches_start(start)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("circular dependency between ensembles: ", start,
                                                 " -> ... -> ", path.back(), " -> ", start));
}

// The order models load in: every model that is not an ensemble (by name),
// then each ensemble after the ensembles it runs (Note [Ensembles]). An
// ensemble in a cycle gets the cycle as its status.
std::vector<RepositoryModel> LoadOrder(std::vector<RepositoryModel> entries) {
  std::map<std::string, const RepositoryModel*> by_name;
  for (const RepositoryModel& entry : entries) by_name[entry.name] = &entry;
  std::vector<RepositoryModel> ordered;
  std::set<std::string> placed;
  for (const RepositoryModel& entry : entries) {
    if (!IsEnsembleConfig(entry.config)) {
      ordered.push_back(entry);
      placed.insert(entry.name);
    }
  }
  std::function<void(const RepositoryModel&)> place = [&](const RepositoryModel& entry) {
    if (!placed.insert(entry.name).second) return;
    RepositoryModel copy = entry;
    if (copy.status.ok()) copy.status = CircularDependency(by_name, entry.name);
    if (copy.status.ok()) {
      for (const std::string& step : ComposingModelNames(entry.config)) {
        const auto found = by_name.find(step);
        if (found != by_name.end()) place(*found->second);
      }
    }
    ordered.push_back(std::move(copy));
  };
  for (const RepositoryModel& entry : entries) place(entry);
  return ordered;
}

// The models a set of names needs loaded: each, and (Triton's behaviour) the
// steps of those that are ensembles, theirs in turn.
std::set<std::string> WithComposingModels(const std::vector<RepositoryModel>& entries,
                                          const std::vector<std::string>& names) {
  std::map<std::string, const RepositoryModel*> by_name;
  for (const RepositoryModel& entry : entries) by_name[entry.name] = &entry;
  std::set<std::string> wanted;
  std::vector<std::string> pending = names;
  while (!pending.empty()) {
    const std::string name = pending.back();
    pending.pop_back();
    if (!wanted.insert(name).second) continue;
    const auto found = by_name.find(name);
    if (found == by_name.end() || !IsEnsembleConfig(found->second->config)) continue;
    for (const std::string& step : ComposingModelNames(found->second->config)) {
      pending.push_back(step);
    }
  }
  return wanted;
}

}  // namespace

ModelRegistry::ModelRegistry(std::vector<std::string> repositories, ModelRegistryOptions options)
    : repositories_(std::move(repositories)),
      options_(std::move(options)),
      retirer_(std::make_shared<Retirer>()),
      states_(std::make_shared<const std::vector<ModelVersionState>>()) {}

absl::StatusOr<std::unique_ptr<ModelRegistry>> ModelRegistry::Load(
    const std::vector<std::string>& repositories, const ModelRegistryOptions& options,
    std::ostream& progress) {
  absl::StatusOr<std::vector<RepositoryModel>> scanned =
      ScanModelRepositories(repositories, options.read);
  if (!scanned.ok()) return scanned.status();
  std::unique_ptr<ModelRegistry> registry(new ModelRegistry(repositories, options));
  // Under kExplicit the startup models' composing models load with them.
  const std::set<std::string> with_composing =
      WithComposingModels(*scanned, options.startup_models);
  // Each model is published as it loads: an ensemble is checked against
  // the models loaded before it (LoadOrder).
  for (const RepositoryModel& entry : LoadOrder(*scanned)) {
    if (!Wanted(options, entry.name) && !with_composing.contains(entry.name)) continue;
    registry->Replace(entry.name, LoadVersions(entry, options.models, registry->retirer_,
                                               *registry, progress));
    if (options.control == ModelControlMode::kPoll) {
      registry->fingerprints_[entry.name] = Fingerprint(entry.directory);
    }
  }
  std::vector<ModelVersionState> missing;
  if (options.control == ModelControlMode::kExplicit) {
    for (const std::string& wanted : options.startup_models) {
      const bool found = wanted == "*" || std::any_of(scanned->begin(), scanned->end(),
                                                      [&](const RepositoryModel& entry) {
                                                        return entry.name == wanted;
                                                      });
      if (!found) {
        missing.push_back({wanted, 0,
                           absl::NotFoundError(absl::StrCat("--load-model ", wanted,
                                                            ": no such model in the model "
                                                            "repository")),
                           nullptr});
      }
    }
  }
  for (ModelVersionState& state : missing) {
    const std::string name = state.name;
    std::vector<ModelVersionState> states;
    states.push_back(std::move(state));
    registry->Replace(name, std::move(states));
  }
  registry->control_thread_ = std::thread([r = registry.get()] {
    NameThisThread("gs-model-ctl");
    r->ControlLoop();
  });
  return registry;
}

void ModelRegistry::StopControl() {
  std::deque<std::function<void(bool)>> queued;
  {
    absl::MutexLock lock(&control_mu_);
    stopping_ = true;
    queued.swap(jobs_);
  }
  control_cv_.SignalAll();
  for (std::function<void(bool)>& job : queued) job(/*stopping=*/true);
}

ModelRegistry::~ModelRegistry() {
  StopControl();
  if (control_thread_.joinable()) control_thread_.join();
  // The models go to the retirer; it frees each once its last holder is done.
  std::shared_ptr<const std::vector<ModelVersionState>> states;
  {
    absl::MutexLock lock(&mu_);
    states = std::move(states_);
  }
}

RegistrySnapshot ModelRegistry::states() const {
  absl::MutexLock lock(&mu_);
  return RegistrySnapshot(states_);
}

// Note [Triton's error texts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Scripts and tests written against Triton match the leading text of its
// errors and their codes, so those are Triton's (its core's
// model_lifecycle.cc, model_repository_manager.cc, common.cc and
// infer_request.cc), on gRPC and HTTP alike; what GraphServe knows beyond
// them (the models served, the versions, why a load failed) follows:
//   unknown model                NOT_FOUND         Request for unknown model: 'M' is not found
//   unknown version              NOT_FOUND         Request for unknown model: 'M' version V is
//                                                  not found
//   no version ready (latest)    NOT_FOUND         Request for unknown model: 'M' has no
//                                                  available versions
//   version V not ready          UNAVAILABLE       Request for unknown model: 'M' version V is
//                                                  not at ready state
//   version not an integer       INVALID_ARGUMENT  failed to get model version from specified
//                                                  version string 'V', ...
//   load of a model not there    INTERNAL          failed to load 'M', failed to poll from model
//                                                  repository
//   its config unreadable        (why's code)      failed to load 'M', failed to poll from model
//                                                  repository: why
//   load that fails              INVALID_ARGUMENT  load failed for model 'M': version V is at
//                                                  UNAVAILABLE state: why;
//   the log of a failed version                    failed to load 'M' version V: why
// and, from request validation (server/request_validation.cc),
// INVALID_ARGUMENT with Triton's "[request id: ID] " first where Triton has
// it: "expected N inputs but got K inputs for model 'M'. Got input(s) [...],
// but missing required input(s) [...]. ...", "unexpected inference input
// 'X' for model 'M'", "inference input 'X' data-type is 'T', but model 'M'
// expects 'U'", "unexpected shape for input 'X' for model 'M'. Expected
// [-1,3], got [2,4]", "inference request batch-size must be <= B for 'M'",
// "input byte size mismatch for input 'X' for model 'M'. Expected N, got K".
// HTTP answers each code with Triton's status: 400, 404, 500, 503.

absl::StatusOr<std::shared_ptr<ServedModel>> ModelRegistry::Find(
    absl::string_view name, absl::string_view version) const {
  const RegistrySnapshot snapshot = states();
  // One pass over the states, allocating nothing: Find runs on every request.
  int64_t number = 0;
  if (!version.empty() && !absl::SimpleAtoi(version, &number)) {
    return absl::InvalidArgumentError(
        absl::StrCat("failed to get model version from specified version string ",
                     QuoteClientText(version), ", version should be an integral value > 0"));
  }
  if (number < 0) {
    return absl::InvalidArgumentError(absl::StrCat("invalid model version specified ",
                                                   QuoteClientText(version),
                                                   ", version should be an integral value > 0"));
  }
  const bool numbered = !version.empty();
  bool known = false;
  const ModelVersionState* chosen = nullptr;
  const ModelVersionState* failed_latest = nullptr;
  for (const ModelVersionState& state : snapshot) {
    if (state.name != name) continue;
    known = true;
    if (version.empty()) {
      // The latest version that loaded; failing that, the model's failure.
      if (state.status.ok()) chosen = &state;
      failed_latest = &state;
    } else if (numbered && state.version == number) {
      chosen = &state;
    }
  }
  // `name` and `version` are the client's: Note [Quoting client text]. The
  // leading texts and codes are Triton's (Note [Triton's error texts]).
  constexpr absl::string_view kUnknown = "Request for unknown model: ";
  if (!known) {
    return absl::NotFoundError(absl::StrCat(
        kUnknown, QuoteClientText(name), " is not found; this server serves: ", Names(snapshot)));
  }
  if (chosen == nullptr && version.empty()) chosen = failed_latest;
  if (chosen == nullptr) {
    std::vector<std::string> served;
    for (const ModelVersionState& state : snapshot) {
      if (state.name == name && state.version > 0) served.push_back(absl::StrCat(state.version));
    }
    return absl::NotFoundError(absl::StrCat(
        kUnknown, "'", name, "' version ", number, " is not found; served versions: ",
        served.empty() ? "none" : absl::StrJoin(served, ", ")));
  }
  if (!chosen->status.ok()) {
    const std::string why = absl::StrCat(
        chosen->version > 0 ? absl::StrCat("version ", chosen->version, " ") : "",
        "failed to load: ", chosen->status.message());
    if (version.empty()) {
      return absl::NotFoundError(
          absl::StrCat(kUnknown, "'", name, "' has no available versions (", why, ")"));
    }
    return absl::UnavailableError(absl::StrCat(kUnknown, "'", name, "' version ", number,
                                               " is not at ready state (", why, ")"));
  }
  if (absl::Status steps = ComposingModelsReady(*chosen->model, 0); !steps.ok()) {
    if (version.empty()) {
      return absl::NotFoundError(absl::StrCat(kUnknown, "'", name, "' has no available versions (",
                                              steps.message(), ")"));
    }
    return absl::UnavailableError(absl::StrCat(kUnknown, "'", name, "' version ", number,
                                               " is not at ready state (", steps.message(), ")"));
  }
  return chosen->model;
}

absl::Status ModelRegistry::ComposingModelsReady(const ServedModel& model, int depth) const {
  if (!IsEnsembleConfig(model.config())) return absl::OkStatus();
  if (depth > kMaxEnsembleDepth) {
    return absl::FailedPreconditionError(absl::StrCat(
        "ensemble '", model.name(), "' nests ensembles deeper than ", kMaxEnsembleDepth));
  }
  for (const inference::ModelEnsembling::Step& step :
       model.config().ensemble_scheduling().step()) {
    const std::string version =
        step.model_version() < 0 ? "" : absl::StrCat(step.model_version());
    absl::StatusOr<std::shared_ptr<ServedModel>> composing = Find(step.model_name(), version);
    absl::Status ready = composing.ok() ? ComposingModelsReady(**composing, depth + 1)
                                        : composing.status();
    if (!ready.ok()) {
      return absl::Status(ready.code(),
                          absl::StrCat("ensemble '", model.name(), "' depends on '",
                                       step.model_name(), "', which is not ready: ",
                                       ready.message()));
    }
  }
  return absl::OkStatus();
}

bool ModelRegistry::all_ready() const {
  const RegistrySnapshot snapshot = states();
  return std::all_of(snapshot.begin(), snapshot.end(),
                     [](const ModelVersionState& state) { return state.status.ok(); });
}

std::string ModelRegistry::StartupTable() const {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "VERSION", "STATUS", "EXECUTOR", "PRECISION", "BATCH SIZES", "SHAPE BUCKETS", "STREAMS",
       "WEIGHTS", "SLOT MEMORY", "COSTS", "SCHEDULES", "LOAD"}};
  const RegistrySnapshot snapshot = states();
  for (const ModelVersionState& state : snapshot) {
    if (state.model == nullptr) {
      rows.push_back({state.name, state.version > 0 ? absl::StrCat(state.version) : "-",
                      "FAILED", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const ModelLoadSummary& s = state.model->summary();
    rows.push_back({state.name, absl::StrCat(state.version), "READY", s.executor, s.precision,
                    absl::StrJoin(s.batch_sizes, ","), s.buckets.empty() ? "-" : s.buckets,
                    absl::StrCat(s.num_streams),
                    MiB(s.weight_bytes), s.slot_bytes > 0 ? MiB(s.slot_bytes) : "-", s.costs,
                    s.schedules.empty() ? "-" : s.schedules,
                    absl::StrFormat("%.0f ms", s.load_ms)});
  }
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string table;
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&table, row[c], c + 1 < row.size() ? std::string(widths[c] - row[c].size() + 2, ' ') : "");
    }
    absl::StrAppend(&table, "\n");
  }
  for (const ModelVersionState& state : snapshot) {
    if (!state.status.ok()) {
      absl::StrAppend(&table, "  ", state.name, ": ", state.status.message(), "\n");
    }
  }
  return table;
}

void ModelRegistry::DrainAll(std::optional<std::chrono::steady_clock::time_point> deadline) {
  // The ensembles first: their accepted requests still run steps, which
  // the composing models must take (Note [Ensembles]). Within each phase
  // all models at once, so each gets the whole time to the deadline.
  const RegistrySnapshot snapshot = states();
  for (const bool ensembles : {true, false}) {
    std::vector<std::thread> drains;
    for (const ModelVersionState& state : snapshot) {
      if (state.model != nullptr && IsEnsembleConfig(state.model->config()) == ensembles) {
        drains.emplace_back([model = state.model.get(), deadline] { model->Drain(deadline); });
      }
    }
    for (std::thread& drain : drains) drain.join();
  }
}

// --- Model control ---

void ModelRegistry::Post(std::function<void(bool stopping)> job) {
  {
    absl::MutexLock lock(&control_mu_);
    if (!stopping_) {
      jobs_.push_back(std::move(job));
      job = nullptr;
    }
  }
  if (job) {
    job(/*stopping=*/true);
    return;
  }
  control_cv_.Signal();
}

void ModelRegistry::ControlLoop() {
  absl::MutexLock lock(&control_mu_);
  auto next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
  while (!stopping_) {
    if (!jobs_.empty()) {
      std::function<void(bool)> job = std::move(jobs_.front());
      jobs_.pop_front();
      control_mu_.Unlock();
      job(/*stopping=*/false);
      control_mu_.Lock();
      continue;
    }
    if (options_.control != ModelControlMode::kPoll) {
      control_cv_.Wait(&control_mu_);
      continue;
    }
    if (std::chrono::steady_clock::now() >= next_poll) {
      control_mu_.Unlock();
      std::ostringstream progress;
      PollOnce(progress);
      if (!progress.str().empty()) spdlog::info("repository poll:\n{}", progress.str());
      control_mu_.Lock();
      next_poll = std::chrono::steady_clock::now() + options_.poll_interval;
      continue;
    }
    control_cv_.WaitWithTimeout(&control_mu_,
                                absl::FromChrono(next_poll - std::chrono::steady_clock::now()));
  }
}

namespace {

absl::Status ControlRefused(ModelControlMode mode) {
  return absl::FailedPreconditionError(
      mode == ModelControlMode::kPoll
          ? "explicit model load / unload is not allowed if polling is enabled "
            "(--model-control-mode=poll)"
          : "explicit model load / unload is not allowed with --model-control-mode=none; "
            "start the server with --model-control-mode=explicit");
}

}  // namespace

void ModelRegistry::RequestLoad(const std::string& name, std::optional<std::string> config_json,
                                std::function<void(const absl::Status&)> done) {
  if (options_.control != ModelControlMode::kExplicit) {
    done(ControlRefused(options_.control));
    return;
  }
  Post([this, name, config_json = std::move(config_json), done](bool stopping) {
    if (stopping) {
      done(absl::UnavailableError("the server is shutting down"));
      return;
    }
    std::ostringstream progress;
    const absl::Status status = LoadModel(name, config_json, progress);
    spdlog::info("RepositoryModelLoad {}: {}\n{}", QuoteClientText(name), status.ToString(),
                 progress.str());
    done(status);
  });
}

void ModelRegistry::RequestUnload(const std::string& name,
                                  std::function<void(const absl::Status&)> done) {
  if (options_.control != ModelControlMode::kExplicit) {
    done(ControlRefused(options_.control));
    return;
  }
  Post([this, name, done](bool stopping) {
    done(stopping ? absl::UnavailableError("the server is shutting down") : UnloadModel(name));
  });
}

namespace {

// Triton's text for a model whose directory or config cannot be read (Note
// [Triton's error texts]), with why and the code that says what was wrong.
absl::Status PollFailure(absl::string_view name, const absl::Status& why) {
  return absl::Status(why.code(),
                      absl::StrCat("failed to load ", QuoteClientText(name),
                                   ", failed to poll from model repository: ", why.message()));
}

}  // namespace

absl::Status ModelRegistry::LoadModel(const std::string& name,
                                      const std::optional<std::string>& config_json,
                                      std::ostream& progress, int depth) {
  // The one model's directory is read, not the whole repository. A name
  // with a NUL names no directory: the file system would read "mlp\0x" as
  // "mlp" and load it under the longer name, a phantom entry.
  absl::StatusOr<std::string> found =
      name.find('\0') == std::string::npos
          ? FindModelRoot(repositories_, name)
          : absl::StatusOr<std::string>(absl::NotFoundError("a NUL in the name"));
  if (absl::IsNotFound(found.status())) {
    // Triton's text and code (Note [Triton's error texts]).
    return absl::InternalError(absl::StrCat("failed to load ", QuoteClientText(name),
                                            ", failed to poll from model repository (no "
                                            "repository has a model directory of that name)"));
  }
  ASSIGN_OR_RETURN(const std::string root, std::move(found));
  std::optional<inference::ModelConfig> config;
  if (config_json.has_value()) {
    absl::StatusOr<inference::ModelConfig> parsed = ParseModelConfigJson(*config_json, name);
    if (!parsed.ok()) return PollFailure(name, parsed.status());
    config = *std::move(parsed);
  }
  // With the override in place of config.pbtxt: its version policy and model
  // file name are the ones that apply.
  const RepositoryModel entry =
      ReadRepositoryModel(root, name, config.has_value() ? &*config : nullptr, options_.read);
  // Triton loads an ensemble's composing models with it: those not serving
  // load first; a failure among them shows in the ensemble's own error.
  // Past the depth bound the steps are left to the ensemble's check (a
  // cycle of ensembles).
  if (entry.status.ok() && IsEnsembleConfig(entry.config) && depth < kMaxEnsembleDepth) {
    for (const std::string& step : ComposingModelNames(entry.config)) {
      if (step == name || Find(step, "").ok()) continue;
      const absl::Status loaded = LoadModel(step, std::nullopt, progress, depth + 1);
      if (!loaded.ok()) {
        progress << "graphserve: composing model '" << step << "' of ensemble '" << name
                 << "': " << loaded.message() << "\n";
      }
    }
  }
  return LoadEntry(entry, progress);
}

absl::Status ModelRegistry::LoadEntry(const RepositoryModel& entry, std::ostream& progress) {
  const std::string& name = entry.name;
  std::vector<ModelVersionState> states =
      LoadVersions(entry, options_.models, retirer_, *this, progress);
  const auto failed = std::find_if(states.begin(), states.end(),
                                   [](const ModelVersionState& state) { return !state.status.ok(); });
  if (failed != states.end()) {
    // Triton keeps a model's serving versions when a reload fails; a model
    // that was not serving shows the failure.
    const bool serving = Find(name, "").ok();
    // Triton's text, one "version N is at UNAVAILABLE state: why;" per
    // version that failed, and its code (Note [Triton's error texts]).
    // A config that cannot be read or is refused fails before any version
    // loads: Triton's failure to poll.
    std::string versions;
    for (const ModelVersionState& state : states) {
      if (!state.status.ok()) {
        absl::StrAppend(&versions, " version ", state.version,
                        " is at UNAVAILABLE state: ", state.status.message(), ";");
      }
    }
    const std::string keep = serving ? " the versions loaded before keep serving" : "";
    const absl::Status error =
        failed->version <= 0
            ? absl::Status(failed->status.code(),
                           absl::StrCat(PollFailure(name, failed->status).message(), keep))
            : absl::InvalidArgumentError(
                  absl::StrCat("load failed for model '", name, "':", versions, keep));
    if (!serving) Replace(name, std::move(states));
    return error;
  }
  Replace(name, std::move(states));
  TellModelsOfLoad(name);
  return absl::OkStatus();
}

void ModelRegistry::TellModelsOfLoad(const std::string& name) const {
  for (const ModelVersionState& state : states()) {
    if (state.model != nullptr && state.name != name) state.model->ComposingModelLoaded(name);
  }
}

absl::Status ModelRegistry::UnloadModel(const std::string& name) {
  const RegistrySnapshot snapshot = states();
  if (std::none_of(snapshot.begin(), snapshot.end(),
                   [&](const ModelVersionState& state) { return state.name == name; })) {
    return absl::NotFoundError(absl::StrCat("model ", QuoteClientText(name), " is not loaded"));
  }
  Replace(name, {});
  fingerprints_.erase(name);
  spdlog::info("model '{}' unloaded: new requests get NOT_FOUND; accepted ones finish", name);
  return absl::OkStatus();
}

void ModelRegistry::Replace(const std::string& name, std::vector<ModelVersionState> states) {
  std::shared_ptr<const std::vector<ModelVersionState>> old;
  {
    absl::MutexLock lock(&mu_);
    auto next = std::make_shared<std::vector<ModelVersionState>>();
    for (const ModelVersionState& state : *states_) {
      if (state.name != name) next->push_back(state);
    }
    for (ModelVersionState& state : states) next->push_back(std::move(state));
    std::stable_sort(next->begin(), next->end(),
                     [](const ModelVersionState& a, const ModelVersionState& b) {
                       return std::tie(a.name, a.version) < std::tie(b.name, b.version);
                     });
    old = std::exchange(states_, std::move(next));
  }
  // `old` lets go here, outside the lock: a replaced version is retired once
  // its last request is answered.
}

void ModelRegistry::PollOnce(std::ostream& progress) {
  absl::StatusOr<std::vector<RepositoryModel>> scanned = ScanModelRepositories(repositories_, options_.read);
  if (!scanned.ok()) {
    spdlog::warn("repository poll: {}", scanned.status().ToString());
    return;
  }
  for (const RepositoryModel& entry : LoadOrder(*scanned)) {
    // One scan and one fingerprint per model and poll: the load uses both.
    const std::string fingerprint = Fingerprint(entry.directory);
    const auto known = fingerprints_.find(entry.name);
    if (known != fingerprints_.end() && known->second == fingerprint) continue;
    const absl::Status status = LoadEntry(entry, progress);
    progress << "graphserve: model '" << entry.name << "' "
             << (status.ok() ? "(re)loaded" : status.ToString()) << "\n";
    // A failed load is not retried until the files change again.
    fingerprints_[entry.name] = fingerprint;
  }
  const RegistrySnapshot snapshot = states();
  std::vector<std::string> gone;
  for (const ModelVersionState& state : snapshot) {
    const bool present = std::any_of(scanned->begin(), scanned->end(),
                                     [&](const RepositoryModel& e) { return e.name == state.name; });
    if (!present && (gone.empty() || gone.back() != state.name)) gone.push_back(state.name);
  }
  for (const std::string& name : gone) {
    (void)UnloadModel(name);
    progress << "graphserve: model '" << name << "' left the repository and was unloaded\n";
  }
}

absl::StatusOr<std::vector<ModelIndexEntry>> ModelRegistry::Index(bool ready_only) const {
  ASSIGN_OR_RETURN(const std::vector<RepositoryModel> scanned, ScanModelRepositories(repositories_, options_.read));
  const RegistrySnapshot snapshot = states();
  std::vector<ModelIndexEntry> index;
  std::set<std::string> listed;
  for (const ModelVersionState& state : snapshot) {
    listed.insert(state.name);
    if (ready_only && !state.status.ok()) continue;
    // Valid UTF-8 and bounded, or clients cannot decode the whole index
    // (Note [Bounded error texts]); a directory's name may be any bytes.
    // An ensemble over models that are gone is not ready (Note [Ensembles]).
    const absl::Status ready =
        state.status.ok() ? ComposingModelsReady(*state.model, 0) : state.status;
    if (ready_only && !ready.ok()) continue;
    index.push_back({ValidUtf8(state.name), state.version > 0 ? absl::StrCat(state.version) : "",
                     ready.ok() ? "READY" : "UNAVAILABLE",
                     ready.ok() ? "" : BoundedErrorText(ready.message())});
  }
  if (!ready_only) {
    for (const RepositoryModel& entry : scanned) {
      if (!listed.contains(entry.name)) index.push_back({ValidUtf8(entry.name), "", "", ""});
    }
  }
  std::sort(index.begin(), index.end(), [](const ModelIndexEntry& a, const ModelIndexEntry& b) {
    return std::tie(a.name, a.version) < std::tie(b.name, b.version);
  });
  return index;
}

}  // namespace graphserve
