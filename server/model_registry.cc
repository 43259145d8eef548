#include "server/model_registry.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "server/client_text.h"
#include "server/model_repository.h"
#include "server/triton_config.h"

namespace graphserve {

namespace {

std::string MiB(size_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

std::string Names(const std::vector<ModelVersionState>& states) {
  std::vector<std::string> names;
  for (const ModelVersionState& state : states) {
    if (names.empty() || names.back() != state.name) names.push_back(state.name);
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelRegistry>> ModelRegistry::Load(
    const std::string& repository, const ServedModelOptions& options, std::ostream& progress) {
  absl::StatusOr<std::vector<RepositoryModel>> scanned = ScanModelRepository(repository);
  if (!scanned.ok()) return scanned.status();
  std::vector<ModelVersionState> states;
  for (const RepositoryModel& entry : *scanned) {
    if (!entry.status.ok()) {
      progress << "graphserve: model '" << entry.name << "': " << entry.status.message() << "\n";
      states.push_back({entry.name, 0, entry.status, nullptr});
      continue;
    }
    // Triton's fields GraphServe does not act on: one line each, never an
    // error, so a repository written for Triton loads as it is.
    for (const std::string& field : IgnoredConfigFields(entry.config)) {
      progress << "graphserve: model '" << entry.name << "': config.pbtxt sets " << field
               << ", a Triton field GraphServe accepts and ignores\n";
    }
    for (const ModelVersionEntry& version : entry.versions) {
      progress << "graphserve: loading model '" << entry.name << "' version " << version.version
               << " from " << version.model_path << "\n"
               << std::flush;
      ModelVersionState state{entry.name, version.version, absl::OkStatus(), nullptr};
      absl::StatusOr<std::unique_ptr<ServedModel>> model =
          ServedModel::Load(entry, version, options);
      if (model.ok()) {
        state.model = *std::move(model);
      } else {
        state.status = model.status();
        progress << "graphserve: model '" << entry.name << "' version " << version.version
                 << " failed to load: " << state.status.message() << "\n";
      }
      states.push_back(std::move(state));
    }
  }
  return std::unique_ptr<ModelRegistry>(new ModelRegistry(std::move(states)));
}

absl::StatusOr<ServedModel*> ModelRegistry::Find(absl::string_view name,
                                                 absl::string_view version) const {
  // One pass over the states, allocating nothing: Find runs on every request.
  int64_t number = 0;
  const bool numbered = !version.empty() && absl::SimpleAtoi(version, &number);
  bool known = false;
  const ModelVersionState* chosen = nullptr;
  const ModelVersionState* failed_latest = nullptr;
  for (const ModelVersionState& state : states_) {
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
  // `name` and `version` are the client's: Note [Quoting client text].
  if (!known) {
    return absl::NotFoundError(absl::StrCat("unknown model ", QuoteClientText(name),
                                            "; this server serves: ", Names(states_)));
  }
  if (chosen == nullptr && version.empty()) chosen = failed_latest;
  if (chosen == nullptr) {
    std::vector<std::string> served;
    for (const ModelVersionState& state : states_) {
      if (state.name == name && state.version > 0) served.push_back(absl::StrCat(state.version));
    }
    return absl::NotFoundError(
        absl::StrCat("model '", name, "' has no version ", QuoteClientText(version),
                     "; served versions: ", served.empty() ? "none" : absl::StrJoin(served, ", ")));
  }
  if (!chosen->status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("model '", name, "'",
                     chosen->version > 0 ? absl::StrCat(" version ", chosen->version) : "",
                     " is not ready: it failed to load: ", chosen->status.message()));
  }
  return chosen->model.get();
}

bool ModelRegistry::all_ready() const {
  return std::all_of(states_.begin(), states_.end(),
                     [](const ModelVersionState& state) { return state.status.ok(); });
}

std::string ModelRegistry::StartupTable() const {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "VERSION", "STATUS", "EXECUTOR", "BATCH SIZES", "STREAMS", "WEIGHTS",
       "SLOT MEMORY", "COSTS", "SCHEDULES", "LOAD"}};
  for (const ModelVersionState& state : states_) {
    if (state.model == nullptr) {
      rows.push_back({state.name, state.version > 0 ? absl::StrCat(state.version) : "-",
                      "FAILED", "-", "-", "-", "-", "-", "-", "-", "-"});
      continue;
    }
    const ModelLoadSummary& s = state.model->summary();
    rows.push_back({state.name, absl::StrCat(state.version), "READY", s.executor,
                    absl::StrJoin(s.batch_sizes, ","), absl::StrCat(s.num_streams),
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
  for (const ModelVersionState& state : states_) {
    if (!state.status.ok()) {
      absl::StrAppend(&table, "  ", state.name, ": ", state.status.message(), "\n");
    }
  }
  return table;
}

void ModelRegistry::DrainAll(std::optional<std::chrono::steady_clock::time_point> deadline) {
  // All models at once, so each gets the whole time to the deadline.
  std::vector<std::thread> drains;
  for (ModelVersionState& state : states_) {
    if (state.model != nullptr) {
      drains.emplace_back([model = state.model.get(), deadline] { model->Drain(deadline); });
    }
  }
  for (std::thread& drain : drains) drain.join();
}

}  // namespace graphserve
