#pragma once
// The model repository on disk, in Triton's layout so that a repository
// written by `graphserve-capture prepare` (capture/model_config_writer.h) or
// laid out by hand for Triton reads the same:
//   <root>/<model>/config.pbtxt
//   <root>/<model>/<version>/<default_model_filename, or model.onnx>
// Scanning reads files only: loading the models is the server's business.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/model_config.pb.h"

namespace graphserve {

struct ModelVersionEntry {
  int64_t version = 0;
  std::string model_path;  // <directory>/<version>/<model file>
};

struct RepositoryModel {
  // The directory name: what clients call the model.
  std::string name;
  std::string directory;
  // The parsed config.pbtxt (its name filled from the directory when empty);
  // with no config.pbtxt, only the name, and the load completes it from the
  // model file (CompleteConfigFromModel, Triton's auto-complete).
  inference::ModelConfig config;
  bool config_from_model = false;
  // `config` came from Triton's "config" load parameter, not config.pbtxt.
  bool config_from_load = false;
  // What the version policy serves, ascending.
  std::vector<ModelVersionEntry> versions;
  // OK, or why this model cannot be served; one bad model does not stop the scan.
  absl::Status status;
};

// How model directories are read: Triton's repository flags.
struct RepositoryReadOptions {
  // Triton's --model-config-name: a model's configs/<config_name>.pbtxt is
  // its configuration when that file exists, config.pbtxt otherwise. Empty:
  // config.pbtxt.
  std::string config_name;
  // False with Triton's --disable-auto-complete-config (or
  // --strict-model-config=true): a model needs a configuration file that
  // declares its inputs and outputs; nothing is completed from the model file.
  bool auto_complete_config = true;
};

// The models under <root>/<model>/ (hidden directories and plain files
// skipped, sorted by name). NotFound naming the path when root is missing or
// not a directory. Versions are directories named by a positive integer in
// plain decimal ("1", "12"; not "0", "01", "v1"), each holding the model file;
// version_policy latest{num_versions} (default: latest 1), all,
// specific{versions}. Per-model errors (status): missing or unparsable
// config.pbtxt (with the parser's line and column), config name different from
// the directory name, a default_model_filename that is a path or over 255
// bytes, no version directory holding the model file, a specific version that
// is absent. A model with an error keeps whatever config was parsed and no
// versions.
absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepository(
    const std::string& root, const RepositoryReadOptions& read = {});

// The models of several repositories (Triton's repeated --model-repository),
// sorted by name. A model name must be unique across them, as in Triton: a
// name found in two is listed once, with an error naming both directories,
// and is not served. NotFound when any root is missing.
absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepositories(
    const std::vector<std::string>& roots, const RepositoryReadOptions& read = {});

// Whether <root>/<name>/ is a directory ScanModelRepository would list: a
// plain, not hidden, directory name (a client's name is checked with it
// before any file is read).
bool IsModelDirectory(const std::string& root, const std::string& name);

// The one root of `roots` holding the model directory `name`. NotFound
// naming the repositories when none does; InvalidArgument naming both
// directories when two do (ScanModelRepositories' rule).
absl::StatusOr<std::string> FindModelRoot(const std::vector<std::string>& roots,
                                          const std::string& name);

// The model directory <root>/<name>/ read as ScanModelRepository reads each.
// With `config` (Triton's "config" load parameter), that configuration stands
// for config.pbtxt, which is not read: its version policy and model file name
// apply, and it can replace a broken file; the client's text in it reaches
// messages quoted (Note [Quoting client text]). `name` must pass
// IsModelDirectory.
RepositoryModel ReadRepositoryModel(const std::string& root, const std::string& name,
                                    const inference::ModelConfig* config,
                                    const RepositoryReadOptions& read = {});

// Stream slots one model may have on one GPU: `capture.streams`, or an
// instance group's `count`. Each slot is a worker thread, a CUDA stream and a
// copy of every captured graph and its buffers, so a typo of 2000 would start
// 2000 threads and 2^31-1 would abort the process; 64 is far beyond what one
// GPU overlaps.
inline constexpr int kMaxStreamSlotsPerGpu = 64;
// GPUs one instance group may list (a GPU listed twice gets two sets of
// slots), and instance groups per model.
inline constexpr int kMaxInstanceGroupGpus = 64;
inline constexpr int kMaxInstanceGroups = 64;

// InvalidArgument naming `source`, the field, its value and the limit for a
// capture.streams or instance_group count outside 0..kMaxStreamSlotsPerGpu,
// or more GPUs or instance groups than the limits above. Every configuration
// a model loads with (config.pbtxt, the load parameter 'config') passes here
// before anything is started for it.
absl::Status CheckModelConfigLimits(const inference::ModelConfig& config,
                                    const std::string& source);

// Parses config.pbtxt text. InvalidArgument "<path>:<line>:<column>: <what>"
// (1-based, as editors count) for every syntax error and unknown field.
absl::StatusOr<inference::ModelConfig> ParseModelConfigText(const std::string& text,
                                                            const std::string& path);

// Parses the model-control load parameter 'config' (a ModelConfig in JSON, as
// Triton takes it). InvalidArgument naming `model` and quoting what the JSON
// parser said (Note [Quoting client text]).
absl::StatusOr<inference::ModelConfig> ParseModelConfigJson(const std::string& json,
                                                            const std::string& model);

}  // namespace graphserve
