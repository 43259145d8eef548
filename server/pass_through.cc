#include "server/pass_through.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/request_validation.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

bool AllFixed(const Dims& dims) { return std::find(dims.begin(), dims.end(), -1) == dims.end(); }

// FailedPrecondition unless config.pbtxt's row dims of `spec` fit the file's
// `file_dims` (the batch dim first for a batching model; empty when the file
// gives no shape): the same rank, and equal wherever both are fixed.
absl::Status CheckPassedDims(const TensorSpec& spec, const char* kind, const Dims& file_dims,
                             bool batching) {
  if (file_dims.empty()) return absl::OkStatus();
  const Dims& declared = spec.model_dims.value_or(spec.dims);
  const size_t batch_dims = batching ? 1 : 0;
  bool fits = file_dims.size() == declared.size() + batch_dims;
  for (size_t d = 0; fits && d < declared.size(); ++d) {
    const int64_t file = file_dims[d + batch_dims];
    fits = declared[d] == -1 || file == -1 || declared[d] == file;
  }
  if (fits) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "config.pbtxt declares ", kind, " '", spec.name, "' with ",
      spec.model_dims.has_value() ? "reshape.shape " : "dims ", DimsToString(declared),
      " but the model file has ", DimsToString(file_dims),
      batching ? " (the batch dim first)" : ""));
}

}  // namespace

absl::StatusOr<ModelInterface> PassThroughInterface(const inference::ModelConfig& config,
                                                    const Model& model) {
  if (!model.inputs.empty() || !model.outputs.empty() || !model.nodes.empty()) {
    std::vector<std::string> computed;
    for (const ValueInfo& output : model.outputs) computed.push_back(output.name);
    return absl::UnimplementedError(absl::StrCat(
        "model '", config.name(), "' hands STRING input '", model.passed_strings.front().input,
        "' back as output '", model.passed_strings.front().output, "' and also computes",
        computed.empty() ? "" : absl::StrCat(" (outputs ", absl::StrJoin(computed, ", "), ")"),
        "; GraphServe hands strings back only in a model that does nothing else (Note [Strings "
        "at the model's edges])"));
  }
  ASSIGN_OR_RETURN(ModelInterface interface, InterfaceFromConfig(config));
  interface.name = config.name();
  // Every input the file passes is declared, and every tensor declared is
  // one the file passes (Triton's rule for a model's inputs and outputs).
  std::vector<std::string> file_inputs;
  for (const PassedString& passed : model.passed_strings) {
    if (std::find(file_inputs.begin(), file_inputs.end(), passed.input) == file_inputs.end()) {
      file_inputs.push_back(passed.input);
    }
  }
  for (const std::string& input : file_inputs) {
    if (std::none_of(interface.inputs.begin(), interface.inputs.end(),
                     [&](const TensorSpec& spec) { return spec.name == input; })) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt does not declare the model's input '", input,
          "'; every input must be declared"));
    }
  }
  RETURN_IF_ERROR(ResolveStringTensors(model, &interface));
  for (const TensorSpec& spec : interface.inputs) {
    const auto passed = std::find_if(model.passed_strings.begin(), model.passed_strings.end(),
                                     [&](const PassedString& p) { return p.input == spec.name; });
    if (passed == model.passed_strings.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("config.pbtxt declares input '", spec.name,
                       "', which the model file lacks (its inputs: ",
                       absl::StrJoin(file_inputs, ", "), ")"));
    }
    RETURN_IF_ERROR(CheckPassedDims(spec, "input", passed->input_dims, interface.batching));
  }
  for (const TensorSpec& spec : interface.outputs) {
    const auto passed = std::find_if(model.passed_strings.begin(), model.passed_strings.end(),
                                     [&](const PassedString& p) { return p.output == spec.name; });
    if (passed == model.passed_strings.end()) {
      std::vector<std::string> names;
      for (const PassedString& p : model.passed_strings) names.push_back(p.output);
      return absl::FailedPreconditionError(
          absl::StrCat("config.pbtxt declares output '", spec.name,
                       "', which the model file lacks (its outputs: ",
                       absl::StrJoin(names, ", "), ")"));
    }
    RETURN_IF_ERROR(CheckPassedDims(spec, "output", passed->output_dims, interface.batching));
    // The output's shape must hold its input's elements, whatever the
    // request sends (Note [Strings at the model's edges]).
    const TensorSpec& input = interface.inputs[spec.passed_from];
    const bool holds = AllFixed(spec.dims)
                           ? AllFixed(input.dims) && NumElements(input.dims) == NumElements(spec.dims)
                           : input.dims == spec.dims;
    if (!holds) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt declares output '", spec.name, "' with dims ", DimsToString(spec.dims),
          ", which cannot hold the elements of input '", input.name, "' (dims ",
          DimsToString(input.dims), ") it hands back"));
    }
  }
  return interface;
}

void PassThroughPipeline::Infer(const inference::ModelInferRequest* request,
                                inference::ModelInferResponse* response,
                                std::function<void(const absl::Status&)> done,
                                const SharedMemoryRegistry* shared_memory) {
  const Clock::time_point start = Clock::now();
  if (draining_.load(std::memory_order_acquire)) {
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kRejected);
    done(absl::UnavailableError("the server is shutting down"));
    return;
  }
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(*request, interface_, shared_memory);
  if (!validated.ok()) {
    // Note [Failure reasons]: a bad request.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kOther);
    done(validated.status());
    return;
  }
  PrepareInferResponse(*request, interface_, version_text_, *validated, response);
  const absl::Status finished = FinishOutputs(interface_, *validated, response);
  const uint64_t elapsed = StatisticsNanos(Clock::now() - start);
  if (finished.ok()) {
    const int64_t rows = validated->view.rows;
    counters_->RecordChunk({.stream = 0, .batch_size = rows, .rows = rows, .requests = 1}, {});
    counters_->RecordSuccess(rows, /*length=*/0, elapsed, /*queue_ns=*/0, ChunkTiming{});
  } else {
    // A shared-memory range too small for the strings: the client's.
    counters_->RecordFailure(elapsed, FailureReason::kOther);
  }
  done(finished);
}

void PassThroughPipeline::Drain(std::optional<Clock::time_point> /*deadline*/) {
  draining_.store(true, std::memory_order_release);
}

}  // namespace graphserve
