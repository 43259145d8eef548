#include "server/model_repository.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "server/client_text.h"
#include "server/ensemble_config.h"

namespace graphserve {

namespace fs = std::filesystem;

namespace {

// The longest file name Linux file systems take (NAME_MAX).
constexpr size_t kMaxFileNameBytes = 255;

// The model file name when the config names none (Triton's default for ONNX).
constexpr char kDefaultModelFilename[] = "model.onnx";

// Collects the text parser's errors with their positions; protobuf otherwise
// logs them to stderr, where the caller cannot put them into a Status.
class ConfigErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit ConfigErrorCollector(const std::string& path) : path_(path) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    // The parser counts from 0; editors and humans count from 1.
    errors_.push_back(absl::StrCat(path_, ":", line + 1, ":", column + 1, ": ", message));
  }

  [[nodiscard]] const std::vector<std::string>& errors() const { return errors_; }

 private:
  const std::string& path_;
  std::vector<std::string> errors_;
};

// Directory names under `directory`, sorted; plain files are left out. Entries
// that cannot be inspected (a dangling link) are left out too: they cannot
// hold a model.
absl::StatusOr<std::vector<std::string>> SubdirectoryNames(const fs::path& directory) {
  std::error_code error;
  fs::directory_iterator it(directory, error);
  std::vector<std::string> names;
  for (; !error && it != fs::directory_iterator(); it.increment(error)) {
    std::error_code type_error;
    if (it->is_directory(type_error)) names.push_back(it->path().filename().string());
  }
  if (error) {
    return absl::InternalError(
        absl::StrCat("cannot list ", directory.string(), ": ", error.message()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A version directory's number, or 0 for a name that is not one.
int64_t VersionNumber(const std::string& name) {
  // Plain decimal only, so that "1" and "01" cannot both claim version 1.
  if (name.empty() || name[0] == '0' ||
      !std::all_of(name.begin(), name.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return 0;
  }
  int64_t version = 0;
  return absl::SimpleAtoi(name, &version) ? version : 0;  // fails on overflow
}

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::InternalError(absl::StrCat("cannot read ", path.string()));
  return text.str();
}

// The versions the policy serves out of `available` (version -> model path).
// `source` names where the policy came from, for messages.
absl::StatusOr<std::vector<ModelVersionEntry>> ServedVersions(
    const inference::ModelVersionPolicy& policy, const std::map<int64_t, std::string>& available,
    const fs::path& directory, const std::string& filename, const std::string& source) {
  std::vector<ModelVersionEntry> versions;
  switch (policy.policy_choice_case()) {
    case inference::ModelVersionPolicy::kAll:
      for (const auto& [version, path] : available) versions.push_back({version, path});
      return versions;
    case inference::ModelVersionPolicy::kSpecific: {
      if (policy.specific().versions().empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source, ": version_policy specific lists no versions"));
      }
      const std::set<int64_t> wanted(policy.specific().versions().begin(),
                                     policy.specific().versions().end());
      for (int64_t version : wanted) {
        const auto found = available.find(version);
        if (found == available.end()) {
          return absl::NotFoundError(absl::StrCat(
              source, ": version_policy specific lists version ", version, " but ",
              (directory / std::to_string(version) / filename).string(), " is absent"));
        }
        versions.push_back({version, found->second});
      }
      return versions;
    }
    case inference::ModelVersionPolicy::kLatest:
    case inference::ModelVersionPolicy::POLICY_CHOICE_NOT_SET: break;
  }
  // latest: num_versions 0 (or no policy at all) means 1, as in Triton.
  const size_t count = std::max<uint32_t>(policy.latest().num_versions(), 1);
  auto first = available.begin();
  if (available.size() > count) std::advance(first, available.size() - count);
  for (auto it = first; it != available.end(); ++it) versions.push_back({it->first, it->second});
  return versions;
}

// What `platform` / `backend` (config.pbtxt, Triton's names) may say of a
// model GraphServe serves: ONNX Runtime's names, GraphServe's own (which the
// configs it writes carry), or nothing (ONNX is what it serves).
// Anything else is another framework's model: refused by name before any
// file is read, never parsed as ONNX or reported as a missing model.onnx.
absl::Status CheckPlatform(const inference::ModelConfig& config, const std::string& source) {
  const std::string& platform = config.platform();
  const std::string& backend = config.backend();
  // An ensemble's backend is refused with Triton's text at load
  // (ValidateEnsembleScheduling).
  if (platform == kEnsemblePlatform) return absl::OkStatus();
  const bool onnx_platform =
      platform.empty() || platform == "onnxruntime_onnx" || platform == "graphserve_onnx";
  const bool onnx_backend = backend.empty() || backend == "onnxruntime" || backend == "graphserve";
  if (onnx_platform && onnx_backend) return absl::OkStatus();
  std::string what;
  if (!onnx_platform) what = absl::StrCat("platform ", QuoteClientText(platform));
  if (!onnx_backend) {
    absl::StrAppend(&what, what.empty() ? "" : " and ", "backend ", QuoteClientText(backend));
  }
  std::string why = "GraphServe serves ONNX models (platform \"onnxruntime_onnx\" or backend "
                    "\"onnxruntime\", or neither)";
  return absl::UnimplementedError(
      absl::StrCat(source, " declares ", what, ": ", why, "; the model was not loaded"));
}

// The configuration file a model directory's configuration comes from:
// configs/<config_name>.pbtxt when --model-config-name names one that exists
// there, config.pbtxt otherwise (Triton's rule).
fs::path ConfigPath(const fs::path& directory, const RepositoryReadOptions& read) {
  if (!read.config_name.empty()) {
    const fs::path custom = directory / "configs" / (read.config_name + ".pbtxt");
    std::error_code error;
    if (fs::is_regular_file(custom, error)) return custom;
  }
  return directory / "config.pbtxt";
}

// Note [Configuration files stay in the model directory]
// A config.pbtxt that is a link to a file elsewhere would be read, and its
// parse error quotes the file's first words to every client: a link to
// /etc/passwd answered with its first user (issue 30, finding 8). As
// external data's files (Note [External data]), the configuration is read
// only when it lies inside the model's directory once links are followed;
// links inside the directory keep working.
//
// Whether `file`, once links are followed, lies inside `directory` (also
// followed).
bool InsideDirectory(const fs::path& file, const fs::path& directory) {
  std::error_code error;
  const fs::path dir = fs::canonical(directory, error);
  if (error) return false;
  const fs::path real = fs::canonical(file, error);
  if (error) return false;
  const auto [dir_end, file_it] = std::mismatch(dir.begin(), dir.end(), real.begin(), real.end());
  return dir_end == dir.end();
}

// Reads one model directory; what goes wrong goes into model->status.
absl::Status ReadModelDirectory(RepositoryModel* model, const inference::ModelConfig* config,
                                const RepositoryReadOptions& read) {
  const fs::path directory(model->directory);
  const fs::path config_path = ConfigPath(directory, read);
  std::error_code error;
  model->config_from_load = config != nullptr;
  // Where the configuration came from, for error messages.
  const std::string source =
      config != nullptr ? "the load parameter 'config'" : config_path.string();
  if (config != nullptr) {
    model->config = *config;
  } else if (fs::is_regular_file(config_path, error)) {
    if (!InsideDirectory(config_path, directory)) {
      return absl::InvalidArgumentError(absl::StrCat(
          config_path.string(), " leads outside the directory of model '", model->name,
          "' once links are followed; it is not read (keep the configuration inside the "
          "model's directory)"));
    }
    ASSIGN_OR_RETURN(const std::string text, ReadFile(config_path));
    ASSIGN_OR_RETURN(model->config, ParseModelConfigText(text, config_path.string()));
  } else if (!read.auto_complete_config) {
    return absl::NotFoundError(absl::StrCat(
        "model '", model->name, "' has no ", config_path.string(),
        ", and --disable-auto-complete-config (or --strict-model-config=true) asks for one: "
        "write it, or leave the flag out to complete the configuration from the model file"));
  } else {
    // As Triton with --strict-model-config=false: the model file says the
    // rest (CompleteConfigFromModel).
    model->config_from_model = true;
  }
  if (!read.auto_complete_config &&
      (model->config.input_size() == 0 || model->config.output_size() == 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, " declares no ", model->config.input_size() == 0 ? "input" : "output",
        ", and --disable-auto-complete-config (or --strict-model-config=true) completes nothing "
        "from the model file: declare every input and output"));
  }
  if (model->config.name().empty()) {
    model->config.set_name(model->name);
  } else if (model->config.name() != model->name) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " names the model ", QuoteClientText(model->config.name()),
                     " but its directory is '", model->name,
                     "'; clients call a model by its directory name, so the two must agree"));
  }
  NormalizeEnsembleConfig(&model->config);
  RETURN_IF_ERROR(CheckPlatform(model->config, source));
  RETURN_IF_ERROR(CheckModelConfigLimits(model->config, source));

  const std::string filename = model->config.default_model_filename().empty()
                                   ? kDefaultModelFilename
                                   : model->config.default_model_filename();
  if (filename.find('/') != std::string::npos || filename == "." || filename == ".." ||
      filename.size() > kMaxFileNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": default_model_filename ", QuoteClientText(filename),
                     " must be a file name (at most ", kMaxFileNameBytes,
                     " bytes) inside each version directory, not a path"));
  }

  ASSIGN_OR_RETURN(const std::vector<std::string> subdirectories, SubdirectoryNames(directory));
  // An ensemble's version directory holds nothing: its steps are other
  // models (Note [Ensembles] in server/ensemble_scheduler.h).
  const bool ensemble = IsEnsembleConfig(model->config);
  std::map<int64_t, std::string> available;
  for (const std::string& name : subdirectories) {
    const int64_t version = VersionNumber(name);
    const fs::path model_path = directory / name / filename;
    std::error_code file_error;
    if (version > 0 && ensemble) {
      available[version] = (directory / name).string();
    } else if (version > 0 && fs::is_regular_file(model_path, file_error)) {
      available[version] = model_path.string();
    }
  }
  if (available.empty() && ensemble) {
    return absl::NotFoundError(absl::StrCat("ensemble ", directory.string(),
                                            " has no version directory (expected e.g. ",
                                            (directory / "1").string(), "/, empty)"));
  }
  if (available.empty()) {
    return absl::NotFoundError(absl::StrCat("no version directory of ", directory.string(),
                                            " holds ", filename, " (expected e.g. ",
                                            (directory / "1" / filename).string(), ")"));
  }
  ASSIGN_OR_RETURN(model->versions,
                   ServedVersions(model->config.version_policy(), available, directory, filename,
                                  source));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<inference::ModelConfig> ParseModelConfigText(const std::string& text,
                                                            const std::string& path) {
  ConfigErrorCollector errors(path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  inference::ModelConfig config;
  if (!parser.ParseFromString(text, &config)) {
    if (errors.errors().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a valid model config"));
    }
    return absl::InvalidArgumentError(absl::StrJoin(errors.errors(), "; "));
  }
  return config;
}

absl::Status CheckModelConfigLimits(const inference::ModelConfig& config,
                                    const std::string& source) {
  const auto out_of_range = [&source](absl::string_view field, int64_t value, int64_t limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": ", field, " is ", value, "; it must be 0 to ", limit,
                     " (each stream slot is a worker thread, a CUDA stream and a copy of the "
                     "model's graphs and buffers on its GPU)"));
  };
  if (config.capture().streams() < 0 || config.capture().streams() > kMaxStreamSlotsPerGpu) {
    return out_of_range("capture.streams", config.capture().streams(), kMaxStreamSlotsPerGpu);
  }
  if (config.instance_group_size() > kMaxInstanceGroups) {
    return out_of_range("the number of instance_group entries", config.instance_group_size(),
                        kMaxInstanceGroups);
  }
  for (const inference::ModelInstanceGroup& group : config.instance_group()) {
    if (group.count() < 0 || group.count() > kMaxStreamSlotsPerGpu) {
      return out_of_range("instance_group.count", group.count(), kMaxStreamSlotsPerGpu);
    }
    if (group.gpus_size() > kMaxInstanceGroupGpus) {
      return out_of_range("the number of instance_group.gpus", group.gpus_size(),
                          kMaxInstanceGroupGpus);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<inference::ModelConfig> ParseModelConfigJson(const std::string& json,
                                                            const std::string& model) {
  inference::ModelConfig config;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &config);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("load parameter 'config' of model ", QuoteClientText(model),
                     " is not a model configuration in JSON: ", QuoteClientText(parsed.ToString())));
  }
  return config;
}

absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepository(
    const std::string& root, const RepositoryReadOptions& read) {
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    return absl::NotFoundError(
        absl::StrCat("model repository ", root, " does not exist or is not a directory"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> names, SubdirectoryNames(root));
  std::vector<RepositoryModel> models;
  for (const std::string& name : names) {
    if (!IsModelDirectory(root, name)) continue;
    models.push_back(ReadRepositoryModel(root, name, nullptr, read));
  }
  return models;
}

namespace {

// The paths name the model; the registry prefixes its name where it reports.
absl::Status NotUniqueError(const std::string& first, const std::string& second) {
  return absl::InvalidArgumentError(absl::StrCat(
      "in two model repositories: ", first, " and ", second,
      "; a model name must be unique across every --model-repository, so neither is served"));
}

}  // namespace

absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepositories(
    const std::vector<std::string>& roots, const RepositoryReadOptions& read) {
  std::map<std::string, RepositoryModel> by_name;
  std::set<std::string> duplicated;
  for (const std::string& root : roots) {
    ASSIGN_OR_RETURN(std::vector<RepositoryModel> models, ScanModelRepository(root, read));
    for (RepositoryModel& model : models) {
      const auto [it, inserted] = by_name.try_emplace(model.name, std::move(model));
      if (inserted) continue;
      // A third copy keeps the error that names the first two.
      if (!duplicated.insert(model.name).second) continue;
      RepositoryModel& first = it->second;
      first.status = NotUniqueError(first.directory, model.directory);
      first.versions.clear();
    }
  }
  std::vector<RepositoryModel> models;
  models.reserve(by_name.size());
  for (auto& [name, model] : by_name) models.push_back(std::move(model));
  return models;
}

bool IsModelDirectory(const std::string& root, const std::string& name) {
  // Hidden directories are editors' and tools' (.git, .ipynb_checkpoints);
  // "." and ".." are hidden too.
  if (name.empty() || name[0] == '.' || name.find('/') != std::string::npos) return false;
  std::error_code error;
  return fs::is_directory(fs::path(root) / name, error);
}

absl::StatusOr<std::string> FindModelRoot(const std::vector<std::string>& roots,
                                          const std::string& name) {
  const std::string* found = nullptr;
  for (const std::string& root : roots) {
    if (!IsModelDirectory(root, name)) continue;
    if (found != nullptr) {
      const absl::Status error =
          NotUniqueError((fs::path(*found) / name).string(), (fs::path(root) / name).string());
      return absl::InvalidArgumentError(
          absl::StrCat("model ", QuoteClientText(name), " is ", error.message()));
    }
    found = &root;
  }
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no model ", QuoteClientText(name), " in the ",
                                            roots.size() == 1 ? "repository " : "repositories ",
                                            absl::StrJoin(roots, ", ")));
  }
  return *found;
}

RepositoryModel ReadRepositoryModel(const std::string& root, const std::string& name,
                                    const inference::ModelConfig* config,
                                    const RepositoryReadOptions& read) {
  RepositoryModel model;
  model.name = name;
  model.directory = (fs::path(root) / name).string();
  model.status = ReadModelDirectory(&model, config, read);
  if (!model.status.ok()) model.versions.clear();
  return model;
}

}  // namespace graphserve
