#pragma once
// An ensemble's configuration (Triton's `platform: "ensemble"` with
// `ensemble_scheduling { step [...] }`): the rules Triton checks, in Triton's
// words, and the plan a request follows: which steps, in which order, each
// reading and writing which ensemble tensors. See Note [Ensembles] in
// server/ensemble_scheduler.h.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// Triton's platform name of an ensemble.
inline constexpr char kEnsemblePlatform[] = "ensemble";

// Whether `config` describes an ensemble: platform "ensemble", or no
// platform and no backend with ensemble_scheduling set (a config Triton
// accepts as an ensemble; NormalizeEnsembleConfig names its platform).
bool IsEnsembleConfig(const inference::ModelConfig& config);

// Sets platform "ensemble" on a config IsEnsembleConfig accepts without one,
// so ModelConfig and ModelMetadata answer as Triton does.
void NormalizeEnsembleConfig(inference::ModelConfig* config);

// InvalidArgument with Triton's text (its core's ValidateModelConfig and
// ValidateEnsembleSchedulingConfig) for the first rule an ensemble's own
// config breaks, before any composing model is looked at:
// - an empty backend, and ensemble_scheduling set;
// - no instance_group, optimization or model_warmup;
// - at least one step, each with a model_name, an input_map and an
//   output_map; a model input mapped once per step; an ensemble tensor
//   written by one step only;
// - every ensemble input read, every ensemble output written (through steps
//   whose inputs are all written: a cycle leaves its tensors unwritten), and
//   every other ensemble tensor both written and read.
absl::Status ValidateEnsembleScheduling(const inference::ModelConfig& config);

// The served config of a composing model, or an error saying why the step's
// model cannot be used (not loaded, failed).
using ComposingConfigLookup = std::function<absl::StatusOr<inference::ModelConfig>(
    const inference::ModelEnsembling::Step& step)>;

// One step as a request runs it.
struct EnsembleStepPlan {
  std::string model_name;
  // The version a step asks for: "" for model_version -1 (the latest ready).
  std::string model_version;
  // (the step model's input, the ensemble tensor it reads), in the step
  // model's input order.
  std::vector<std::pair<std::string, std::string>> inputs;
  // (the step model's output, the ensemble tensor it writes), in the step
  // model's output order.
  std::vector<std::pair<std::string, std::string>> outputs;
  // Steps that write the tensors this step reads (indices into
  // EnsemblePlan::steps), each once: the step starts when they have ended.
  std::vector<size_t> after;
};

struct EnsemblePlan {
  // In the config's order; `after` orders them.
  std::vector<EnsembleStepPlan> steps;
  // A topological order of `steps`: every step after the steps it waits for.
  std::vector<size_t> order;
};

// Checks the ensemble against its composing models' configs, with Triton's
// texts (its core's ValidateEnsembleConfig): a composing model's
// max_batch_size (when it batches) at least the ensemble's; every step input
// mapped from an ensemble tensor and only existing inputs and outputs
// mapped; every ensemble tensor of one data type and of consistent dims
// across the ensemble's config and the models that read and write it. Then
// returns the plan. `config` must have passed ValidateEnsembleScheduling.
absl::StatusOr<EnsemblePlan> PlanEnsemble(const inference::ModelConfig& config,
                                          const ComposingConfigLookup& lookup);

// The names of the models an ensemble's steps run, each once, in step order.
std::vector<std::string> ComposingModelNames(const inference::ModelConfig& config);

}  // namespace graphserve
