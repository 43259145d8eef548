#include "server/ensemble_scheduler.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/cuda_status.h"
#include "common/dtype_table.h"
#include "common/status.h"
#include "common/tensor.h"
#include "server/classification.h"
#include "server/config_validation.h"
#include "server/request_validation.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;

// The ensemble tensor a step's model input or output `name` is mapped to in
// `pairs` (EnsembleStepPlan::inputs or outputs); null when it is not.
const std::string* MappedTensor(const std::vector<std::pair<std::string, std::string>>& pairs,
                                const std::string& name) {
  for (const auto& [model_tensor, ensemble_tensor] : pairs) {
    if (model_tensor == name) return &ensemble_tensor;
  }
  return nullptr;
}

// Note [Ensembles as one graph]: how far the pipeline's float outputs may be
// from the steps' at load.
constexpr double kPipelineCheckTolerance = 1e-3;

}  // namespace

// One ensemble tensor of one request.
struct StepTensor {
  std::string datatype;
  std::vector<int64_t> shape;  // the full shape, batch first when batching
  std::string bytes;           // on the host
  // Or on the device, its first device_bytes bytes (Note [Ensemble tensors
  // on the device]).
  std::optional<DeviceTensorPool::Buffer> device;
  uint64_t device_bytes = 0;
};

// One step of one request: what it sent and got back.
struct StepCall {
  inference::ModelInferRequest request;
  inference::ModelInferResponse response;
  std::shared_ptr<ServedModel> model;  // held until the step ends
  ChunkTiming compute;                 // the composing model's, for the ensemble's statistics
};

struct EnsembleScheduler::Pipeline {
  std::unique_ptr<PipelineGraphs> graphs;
  // Per pipeline step: the plan's step, the model it replays (to notice a
  // reload: Find then answers another), and per pipeline slot the model's
  // stream slot that slot replays (for its statistics).
  std::vector<size_t> steps;
  std::vector<std::weak_ptr<ServedModel>> models;
  std::vector<std::vector<int>> streams;
};

struct EnsembleScheduler::Request {
  const inference::ModelInferRequest* client_request = nullptr;
  inference::ModelInferResponse* response = nullptr;
  std::function<void(const absl::Status&)> done;
  Clock::time_point start;
  ValidatedRequest validated;
  std::vector<std::byte*> outputs;  // per interface output, from PrepareInferResponse
  std::vector<StepCall> calls;      // per step
  // False for the load-time check's request, which the ensemble's
  // statistics leave out (Note [Ensembles as one graph]).
  bool counted = true;

  absl::Mutex mu;
  std::map<std::string, StepTensor> tensors ABSL_GUARDED_BY(mu);
  std::vector<size_t> waiting ABSL_GUARDED_BY(mu);  // per step: steps it still waits for
  size_t running ABSL_GUARDED_BY(mu) = 0;           // steps started, not ended
  size_t ended ABSL_GUARDED_BY(mu) = 0;
  absl::Status status ABSL_GUARDED_BY(mu);
  uint64_t queue_ns ABSL_GUARDED_BY(mu) = 0;
  ChunkTiming compute ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::unique_ptr<ServedModel>> LoadEnsemble(const RepositoryModel& entry,
                                                          const ModelVersionEntry& version,
                                                          const ComposingConfigLookup& composing,
                                                          ModelFinder find, GpuWait gpu_wait) {
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(entry.status);
  inference::ModelConfig config = entry.config;
  NormalizeEnsembleConfig(&config);
  config.set_name(entry.name);
  RETURN_IF_ERROR(ValidateModelConfig(config));
  RETURN_IF_ERROR(ValidateEnsembleScheduling(config));
  ASSIGN_OR_RETURN(EnsemblePlan plan, PlanEnsemble(config, composing));
  ASSIGN_OR_RETURN(ModelInterface interface, InterfaceFromConfig(config));
  interface.name = entry.name;
  // Shape buckets are a served model's (Note [Shape buckets] in
  // server/shape_buckets.h); an ensemble passes whole tensors of fixed dims,
  // and of fixed-size elements: strings exist only at a served model's edges
  // (Note [Strings at the model's edges] in runtime/ir.h).
  for (const std::vector<TensorSpec>* side : {&interface.inputs, &interface.outputs}) {
    for (const TensorSpec& spec : *side) {
      if (spec.wire != TensorWire::kNumbers) {
        return absl::UnimplementedError(absl::StrCat(
            "ensemble '", entry.name, "' declares tensor '", spec.name,
            "' TYPE_STRING; GraphServe's ensembles pass tensors of fixed-size elements between "
            "their steps (a model with STRING inputs or outputs is served on its own)"));
      }
      if (std::find(spec.dims.begin(), spec.dims.end(), -1) != spec.dims.end()) {
        return absl::UnimplementedError(absl::StrCat(
            "ensemble '", entry.name, "' gives tensor '", spec.name, "' dims ",
            DimsToString(spec.dims), "; GraphServe's ensembles take fixed dims after the batch"));
      }
    }
  }
  RETURN_IF_ERROR(ReadOutputLabels(config, entry.directory, &interface));

  ModelLoadSummary summary;
  std::vector<std::string> steps;
  for (size_t step : plan.order) steps.push_back(plan.steps[step].model_name);
  summary.precision = "-";
  summary.costs = "-";
  const int64_t max_rows = std::max<int64_t>(interface.max_batch_size, 1);
  auto counters = std::make_unique<ModelCounters>(StatisticsSizes(max_rows), max_rows, 1);
  auto scheduler = std::make_unique<EnsembleScheduler>(
      interface, absl::StrCat(version.version), std::move(plan), std::move(find), counters.get(),
      EnsembleSchedulerOptions{.sleeping_pipeline_wait = gpu_wait == GpuWait::kBlock,
                               .device_step_tensors = !config.capture().host_step_tensors()});
  // Note [Ensembles as one graph]; capture.graphs_disabled turns it off, as
  // it turns a model's graphs off.
  const absl::Status built = config.capture().graphs_disabled()
                                 ? absl::FailedPreconditionError("capture.graphs_disabled is set")
                                 : scheduler->BuildPipeline();
  if (!built.ok()) {
    spdlog::info("ensemble '{}' runs step by step: {}", entry.name, std::string(built.message()));
  }
  summary.executor = absl::StrCat("ensemble: ", absl::StrJoin(steps, ", "), "; ",
                                  scheduler->ExecutionText());
  summary.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return ServedModel::FromPipeline(std::move(interface), version.version, std::move(config),
                                   std::move(counters), std::move(scheduler), std::move(summary));
}

EnsembleScheduler::EnsembleScheduler(ModelInterface interface, std::string version_text,
                                     EnsemblePlan plan, ModelFinder find, ModelCounters* counters,
                                     EnsembleSchedulerOptions options)
    : interface_(std::move(interface)),
      version_text_(std::move(version_text)),
      plan_(std::move(plan)),
      dependents_(plan_.steps.size()),
      find_(std::move(find)),
      counters_(counters),
      sleeping_pipeline_wait_(options.sleeping_pipeline_wait),
      device_tensors_(options.device_step_tensors ? std::make_unique<DeviceTensorPool>(absl::StrCat(
                                                        "graphserve/ensemble/", interface_.name))
                                                  : nullptr) {
  for (size_t step = 0; step < plan_.steps.size(); ++step) {
    for (size_t before : plan_.steps[step].after) dependents_[before].push_back(step);
  }
}

bool EnsembleScheduler::IsEnsembleOutput(const std::string& tensor) const {
  return std::any_of(interface_.outputs.begin(), interface_.outputs.end(),
                     [&](const TensorSpec& output) { return output.name == tensor; });
}

const TensorSpec* EnsembleScheduler::DeviceTensorSpec(const ServedModel& model,
                                                      const std::string& model_output,
                                                      const std::string& tensor) const {
  // An ensemble output goes to the client, through the host.
  if (device_tensors_ == nullptr || !model.device_memory_gpu().has_value() ||
      IsEnsembleOutput(tensor)) {
    return nullptr;
  }
  const ModelInterface& writer = model.interface();
  const auto spec =
      std::find_if(writer.outputs.begin(), writer.outputs.end(),
                   [&](const TensorSpec& output) { return output.name == model_output; });
  // Numbers of dims known before the step runs; BOOL would be checked on
  // the host as it is read (Note [CUDA shared memory]).
  if (spec == writer.outputs.end() || spec->wire != TensorWire::kNumbers ||
      spec->dtype == DType::kBool || spec->bytes_per_row() == 0 ||
      std::find(spec->dims.begin(), spec->dims.end(), -1) != spec->dims.end()) {
    return nullptr;
  }
  return &*spec;
}

std::optional<DeviceTensorPool::Buffer> EnsembleScheduler::DeviceBufferFor(
    const ServedModel& model, const std::string& model_output, const std::string& tensor,
    int64_t rows, uint64_t* bytes) {
  const TensorSpec* spec = DeviceTensorSpec(model, model_output, tensor);
  if (spec == nullptr) return std::nullopt;
  *bytes = static_cast<uint64_t>(model.interface().batching ? rows : 1) * spec->bytes_per_row();
  return device_tensors_->Take(*model.device_memory_gpu(), *bytes);
}

std::string EnsembleScheduler::StepTensorsText() const {
  int passed = 0;
  int on_device = 0;
  for (const EnsembleStepPlan& step : plan_.steps) {
    absl::StatusOr<std::shared_ptr<ServedModel>> model = find_(step.model_name, step.model_version);
    for (const auto& [model_output, tensor] : step.outputs) {
      if (IsEnsembleOutput(tensor)) continue;
      ++passed;
      if (model.ok() && DeviceTensorSpec(**model, model_output, tensor) != nullptr) ++on_device;
    }
  }
  if (passed == 0) return "no tensors between steps";
  if (on_device == passed) return "tensors between steps on the device";
  if (on_device == 0) return "tensors between steps through the host";
  return absl::StrCat(on_device, " of ", passed, " tensors between steps on the device");
}

void EnsembleScheduler::Infer(const inference::ModelInferRequest* request,
                              inference::ModelInferResponse* response,
                              std::function<void(const absl::Status&)> done,
                              const SharedMemoryRegistry* shared_memory) {
  Run(request, response, std::move(done), shared_memory, /*counted=*/true);
}

void EnsembleScheduler::Run(const inference::ModelInferRequest* request,
                            inference::ModelInferResponse* response,
                            std::function<void(const absl::Status&)> done,
                            const SharedMemoryRegistry* shared_memory, bool counted) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(*request, interface_, shared_memory);
  if (!validated.ok()) {
    // Note [Failure reasons] in server/model_counters.h: a bad request.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kOther);
    done(validated.status());
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    if (draining_) {
      counters_->RecordFailure(StatisticsNanos(Clock::now() - start), FailureReason::kRejected);
      done(absl::UnavailableError(absl::StrCat("ensemble '", interface_.name,
                                               "' is draining and accepts no new requests")));
      return;
    }
    ++running_;
  }
  auto state = std::make_shared<Request>();
  state->client_request = request;
  state->response = response;
  state->done = std::move(done);
  state->start = start;
  state->counted = counted;
  state->validated = *std::move(validated);
  state->outputs =
      PrepareInferResponse(*request, interface_, version_text_, state->validated, response);
  if (TryRunPipeline(state)) return;
  state->calls.resize(plan_.steps.size());
  std::vector<size_t> ready;
  {
    absl::MutexLock lock(&state->mu);
    const int64_t rows = state->validated.view.rows;
    for (size_t i = 0; i < interface_.inputs.size(); ++i) {
      const TensorSpec& spec = interface_.inputs[i];
      StepTensor& tensor = state->tensors[spec.name];
      tensor.datatype = KServeDatatype(spec.dtype);
      if (interface_.batching) tensor.shape.push_back(rows);
      tensor.shape.insert(tensor.shape.end(), spec.dims.begin(), spec.dims.end());
      const size_t bytes = static_cast<size_t>(rows) * spec.bytes_per_row();
      tensor.bytes.assign(reinterpret_cast<const char*>(state->validated.view.inputs[i].data),
                          bytes);
    }
    state->waiting.resize(plan_.steps.size());
    for (size_t step = 0; step < plan_.steps.size(); ++step) {
      state->waiting[step] = plan_.steps[step].after.size();
      if (state->waiting[step] == 0) ready.push_back(step);
    }
    state->queue_ns = StatisticsNanos(Clock::now() - start);
  }
  StartReadySteps(state, std::move(ready));
}

void EnsembleScheduler::StartReadySteps(const std::shared_ptr<Request>& request,
                                        std::vector<size_t> ready) {
  {
    absl::MutexLock lock(&request->mu);
    request->running += ready.size();
  }
  for (size_t step : ready) StartStep(request, step);
}

void EnsembleScheduler::StartStep(const std::shared_ptr<Request>& request, size_t step) {
  const EnsembleStepPlan& plan = plan_.steps[step];
  StepCall& call = request->calls[step];
  absl::StatusOr<std::shared_ptr<ServedModel>> model = find_(plan.model_name, plan.model_version);
  if (!model.ok()) {
    StepEnded(request, step, model.status());
    return;
  }
  call.model = *std::move(model);
  inference::ModelInferRequest& step_request = call.request;
  step_request.set_model_name(plan.model_name);
  step_request.set_model_version(plan.model_version);
  step_request.set_id(request->client_request->id());
  // Every step gets the ensemble request's parameters ("priority" and
  // "timeout" among them), as Triton's ensemble scheduler passes them on.
  *step_request.mutable_parameters() = request->client_request->parameters();
  // A tensor on the device is named as a client names a CUDA region.
  const auto in_buffer =
      [](const DeviceTensorPool::Buffer& buffer, uint64_t bytes,
         google::protobuf::Map<std::string, inference::InferParameter>* parameters) {
        (*parameters)["shared_memory_region"].set_string_param(buffer.region);
        (*parameters)["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(bytes));
      };
  bool on_device = false;
  {
    absl::MutexLock lock(&request->mu);
    for (const auto& [model_input, tensor_name] : plan.inputs) {
      const StepTensor& tensor = request->tensors.at(tensor_name);
      inference::ModelInferRequest::InferInputTensor* input = step_request.add_inputs();
      input->set_name(model_input);
      input->set_datatype(tensor.datatype);
      for (int64_t dim : tensor.shape) input->add_shape(dim);
      if (tensor.device.has_value()) {
        in_buffer(*tensor.device, tensor.device_bytes, input->mutable_parameters());
        on_device = true;
        continue;
      }
      // A copy: other steps may read the same tensor.
      step_request.add_raw_input_contents(tensor.bytes);
    }
  }
  const int64_t rows = request->validated.view.rows;
  for (const auto& [model_output, tensor_name] : plan.outputs) {
    inference::ModelInferRequest::InferRequestedOutputTensor* output = step_request.add_outputs();
    output->set_name(model_output);
    uint64_t bytes = 0;
    std::optional<DeviceTensorPool::Buffer> buffer =
        DeviceBufferFor(*call.model, model_output, tensor_name, rows, &bytes);
    if (!buffer.has_value()) continue;
    in_buffer(*buffer, bytes, output->mutable_parameters());
    on_device = true;
    absl::MutexLock lock(&request->mu);
    StepTensor& tensor = request->tensors[tensor_name];
    tensor.device = *std::move(buffer);
    tensor.device_bytes = bytes;
  }
  ServedModel& served = *call.model;
  served.Infer(
      &call.request, &call.response,
      [this, request, step](const absl::Status& status) { StepEnded(request, step, status); },
      on_device ? device_tensors_->registry() : nullptr, &call.compute);
}

void EnsembleScheduler::StepEnded(const std::shared_ptr<Request>& request, size_t step,
                                  const absl::Status& status) {
  const EnsembleStepPlan& plan = plan_.steps[step];
  StepCall& call = request->calls[step];
  std::vector<size_t> ready;
  bool last = false;
  {
    absl::MutexLock lock(&request->mu);
    request->compute.input_ns += call.compute.input_ns;
    request->compute.infer_ns += call.compute.infer_ns;
    request->compute.output_ns += call.compute.output_ns;
    if (!status.ok() && request->status.ok()) {
      // Errors of a step name the step's model, whatever their own text says.
      request->status = absl::Status(
          status.code(), absl::StrCat("in ensemble '", interface_.name, "', step ", step,
                                      " (model '", plan.model_name, "'): ", status.message()));
    }
    if (status.ok()) {
      // Outputs by name: the response lists those the step asked for.
      inference::ModelInferResponse& response = call.response;
      for (int k = 0; k < response.outputs_size(); ++k) {
        const auto& output = response.outputs(k);
        const std::string* mapped = MappedTensor(plan.outputs, output.name());
        if (mapped == nullptr) continue;
        StepTensor& tensor = request->tensors[*mapped];
        if (!tensor.device.has_value() && k >= response.raw_output_contents_size()) continue;
        tensor.datatype = output.datatype();
        tensor.shape.assign(output.shape().begin(), output.shape().end());
        // A tensor on the device is in its buffer already.
        if (!tensor.device.has_value()) {
          tensor.bytes = std::move(*response.mutable_raw_output_contents(k));
        }
      }
      if (request->status.ok()) {
        for (size_t next : dependents_[step]) {
          if (--request->waiting[next] == 0) ready.push_back(next);
        }
      }
    }
    ++request->ended;
    --request->running;
    request->running += ready.size();
    last = request->running == 0;
  }
  // The step's model goes with its response; the request holds no model it
  // no longer needs.
  call.model.reset();
  for (size_t next : ready) StartStep(request, next);
  if (last) Finish(request);
}

void EnsembleScheduler::Finish(const std::shared_ptr<Request>& request) {
  absl::Status status;
  uint64_t queue_ns = 0;
  ChunkTiming compute;
  {
    absl::MutexLock lock(&request->mu);
    status = request->status;
    queue_ns = request->queue_ns;
    compute = request->compute;
    const int64_t rows = request->validated.view.rows;
    for (size_t k = 0; status.ok() && k < request->validated.outputs.size(); ++k) {
      const size_t index = request->validated.outputs[k];
      const TensorSpec& spec = interface_.outputs[index];
      const auto found = request->tensors.find(spec.name);
      const size_t bytes = static_cast<size_t>(rows) * spec.bytes_per_row();
      std::vector<int64_t> shape;
      if (interface_.batching) shape.push_back(rows);
      shape.insert(shape.end(), spec.dims.begin(), spec.dims.end());
      if (found == request->tensors.end()) {
        status = absl::InternalError(absl::StrCat("in ensemble '", interface_.name, "', output '",
                                                  spec.name, "' was not written"));
      } else if (found->second.datatype != KServeDatatype(spec.dtype) ||
                 found->second.shape != shape || found->second.bytes.size() != bytes) {
        status = absl::InvalidArgumentError(absl::StrCat(
            "in ensemble '", interface_.name, "', output '", spec.name, "' came back as ",
            found->second.datatype, " [", absl::StrJoin(found->second.shape, ","),
            "] where the ensemble declares ", KServeDatatype(spec.dtype), " [",
            absl::StrJoin(shape, ","), "]"));
      } else if (request->outputs[index] != nullptr) {
        std::memcpy(request->outputs[index], found->second.bytes.data(), bytes);
      }
    }
  }
  const int64_t rows = request->validated.view.rows;
  Answer(request, status, queue_ns, compute,
         {.stream = 0, .batch_size = rows, .rows = rows, .requests = 1});
}

void EnsembleScheduler::Answer(const std::shared_ptr<Request>& request, absl::Status status,
                               uint64_t queue_ns, const ChunkTiming& compute, const ChunkRun& run) {
  if (status.ok()) status = FinishOutputs(interface_, request->validated, request->response);
  const uint64_t elapsed = StatisticsNanos(Clock::now() - request->start);
  if (!status.ok()) spdlog::debug("{}", status.ToString());
  if (request->counted && status.ok()) {
    counters_->RecordChunk(run, compute);
    counters_->RecordSuccess(run.rows, /*length=*/0, elapsed, queue_ns, compute);
  } else if (request->counted) {
    counters_->RecordFailure(elapsed, FailureReason::kBackend);
  }
  // Every step has ended: the tensors can go before the client hears back,
  // their device buffers to the next request.
  {
    absl::MutexLock lock(&request->mu);
    for (auto& [name, tensor] : request->tensors) {
      if (tensor.device.has_value()) device_tensors_->Give(*std::move(tensor.device));
    }
    request->tensors.clear();
  }
  std::function<void(const absl::Status&)> done = std::move(request->done);
  // Before `done`: answering may let the ensemble's last holder go.
  Left();
  done(status);
}

absl::Status EnsembleScheduler::BuildPipeline() {
  {
    absl::MutexLock lock(&pipeline_mu_);
    pipeline_wanted_ = true;
  }
  if (!interface_.batching) {
    return absl::FailedPreconditionError("it does not batch (max_batch_size 0)");
  }
  auto pipeline = std::make_shared<Pipeline>();
  PipelineOptions options;
  options.sleeping_wait = sleeping_pipeline_wait_;
  std::optional<int> device;
  std::vector<int64_t> shared_sizes;
  options.num_slots = std::numeric_limits<int>::max();
  for (size_t step : plan_.order) {
    const EnsembleStepPlan& plan = plan_.steps[step];
    ASSIGN_OR_RETURN(const std::shared_ptr<ServedModel> model,
                     find_(plan.model_name, plan.model_version));
    const std::vector<std::shared_ptr<const GraphSet>> sets = model->graph_sets();
    if (sets.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", plan.model_name, "' is not served by CUDA graphs"));
    }
    if (!device.has_value()) device = sets.front()->device();
    const auto on_device = std::find_if(sets.begin(), sets.end(), [&](const auto& set) {
      return set->device() == *device;
    });
    if (on_device == sets.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", plan.model_name, "' has no graphs on GPU ", *device));
    }
    const std::shared_ptr<const GraphSet>& set = *on_device;
    if (!set->shape_dims().empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("model '", plan.model_name, "' has shape buckets"));
    }
    std::vector<int64_t> sizes;
    for (const GraphKey& key : set->keys()) {
      if (key.batch_size <= interface_.max_batch_size) sizes.push_back(key.batch_size);
    }
    if (pipeline->steps.empty()) {
      shared_sizes = sizes;
    } else {
      std::vector<int64_t> both;
      std::set_intersection(shared_sizes.begin(), shared_sizes.end(), sizes.begin(), sizes.end(),
                            std::back_inserter(both));
      shared_sizes = std::move(both);
    }
    PipelineStep& piped = options.steps.emplace_back();
    piped.set = set;
    for (size_t i = 0; i < set->num_inputs(); ++i) {
      const std::string* tensor = MappedTensor(plan.inputs, set->input_name(i));
      if (tensor == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "input '", set->input_name(i), "' of model '", plan.model_name, "' is not mapped"));
      }
      piped.inputs.push_back(*tensor);
    }
    for (size_t o = 0; o < set->num_outputs(); ++o) {
      const std::string* tensor = MappedTensor(plan.outputs, set->output_name(o));
      piped.outputs.push_back(tensor == nullptr ? "" : *tensor);
    }
    options.num_slots = std::min(options.num_slots, set->num_slots());
    pipeline->steps.push_back(step);
    pipeline->models.push_back(model);
    std::vector<int>& streams = pipeline->streams.emplace_back();
    for (int slot = 0; slot < set->num_slots(); ++slot) {
      streams.push_back(model->RunnerSlot(set.get(), slot).value_or(0));
    }
  }
  if (shared_sizes.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "its steps share no captured batch size up to its max_batch_size ",
        interface_.max_batch_size));
  }
  for (const TensorSpec& spec : interface_.inputs) {
    options.inputs.push_back({spec.name, spec.bytes_per_row()});
  }
  for (const TensorSpec& spec : interface_.outputs) {
    options.outputs.push_back({spec.name, spec.bytes_per_row()});
  }
  options.batch_sizes = shared_sizes;
  ASSIGN_OR_RETURN(pipeline->graphs, PipelineGraphs::Create(std::move(options)));
  RETURN_IF_ERROR(CheckPipeline(*pipeline->graphs));
  absl::MutexLock lock(&pipeline_mu_);
  pipeline_slot_busy_.assign(static_cast<size_t>(pipeline->graphs->num_slots()), false);
  pipeline_ = std::move(pipeline);
  return absl::OkStatus();
}

absl::Status EnsembleScheduler::CheckPipeline(const PipelineGraphs& graphs) {
  const int64_t rows = graphs.batch_sizes().back();
  inference::ModelInferRequest request;
  request.set_model_name(interface_.name);
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < interface_.inputs.size(); ++i) {
    const TensorSpec& spec = interface_.inputs[i];
    Dims dims = {rows};
    dims.insert(dims.end(), spec.dims.begin(), spec.dims.end());
    const HostTensor& input = inputs.emplace_back(RandomTensor(spec.dtype, dims, 20261129 + i));
    inference::ModelInferRequest::InferInputTensor* tensor = request.add_inputs();
    tensor->set_name(spec.name);
    tensor->set_datatype(KServeDatatype(spec.dtype));
    for (int64_t dim : dims) tensor->add_shape(dim);
    request.add_raw_input_contents(static_cast<const char*>(input.raw()), input.bytes());
  }
  inference::ModelInferResponse response;
  absl::Notification stepped;
  absl::Status step_status;
  Run(&request, &response,
      [&](const absl::Status& status) {
        step_status = status;
        stepped.Notify();
      },
      /*shared_memory=*/nullptr, /*counted=*/false);
  stepped.WaitForNotification();
  RETURN_IF_ERROR(AnnotateStatus(step_status, "the check's batch, run step by step"));

  std::vector<std::vector<std::byte>> outputs;
  std::vector<void*> output_pointers;
  for (const TensorSpec& spec : interface_.outputs) {
    outputs.emplace_back(static_cast<size_t>(rows) * spec.bytes_per_row());
    output_pointers.push_back(outputs.back().data());
  }
  std::vector<const void*> input_pointers;
  for (const HostTensor& input : inputs) input_pointers.push_back(input.raw());
  RETURN_IF_ERROR(AnnotateStatus(graphs.Run(0, rows, rows, input_pointers, output_pointers),
                                 "the check's batch, run through the pipeline"));
  for (int k = 0; k < response.outputs_size(); ++k) {
    const size_t index = static_cast<size_t>(std::find_if(interface_.outputs.begin(),
                                                          interface_.outputs.end(),
                                                          [&](const TensorSpec& spec) {
                                                            return spec.name ==
                                                                   response.outputs(k).name();
                                                          }) -
                                             interface_.outputs.begin());
    if (index == interface_.outputs.size() || k >= response.raw_output_contents_size()) continue;
    const TensorSpec& spec = interface_.outputs[index];
    const std::string& stepped_bytes = response.raw_output_contents(k);
    if (stepped_bytes.size() != outputs[index].size()) {
      return absl::InternalError(absl::StrCat("output '", spec.name, "' has ",
                                              stepped_bytes.size(), " bytes step by step and ",
                                              outputs[index].size(), " through the pipeline"));
    }
    if (!IsFloatingDType(spec.dtype)) {
      if (std::memcmp(stepped_bytes.data(), outputs[index].data(), stepped_bytes.size()) != 0) {
        return absl::InternalError(absl::StrCat(
            "output '", spec.name, "' differs between the pipeline and the steps"));
      }
      continue;
    }
    Dims dims = {rows};
    dims.insert(dims.end(), spec.dims.begin(), spec.dims.end());
    HostTensor piped(spec.dtype, dims);
    HostTensor want(spec.dtype, dims);
    std::memcpy(piped.raw(), outputs[index].data(), piped.bytes());
    std::memcpy(want.raw(), stepped_bytes.data(), want.bytes());
    const double error = RelativeError(piped, want);
    if (!(error <= kPipelineCheckTolerance)) {
      return absl::InternalError(absl::StrCat(
          "output '", spec.name, "' has relative error ", error,
          " through the pipeline against the steps (tolerance ", kPipelineCheckTolerance, ")"));
    }
  }
  return absl::OkStatus();
}

bool EnsembleScheduler::TryRunPipeline(const std::shared_ptr<Request>& request) {
  const int64_t rows = request->validated.view.rows;
  std::shared_ptr<const Pipeline> pipeline;
  int slot = 0;
  {
    absl::MutexLock lock(&pipeline_mu_);
    if (pipeline_ == nullptr || rows > pipeline_->graphs->batch_sizes().back()) return false;
    const auto idle = std::find(pipeline_slot_busy_.begin(), pipeline_slot_busy_.end(), false);
    if (idle == pipeline_slot_busy_.end()) return false;
    *idle = true;
    slot = static_cast<int>(idle - pipeline_slot_busy_.begin());
    pipeline = pipeline_;
  }
  auto release = [&] {
    absl::MutexLock lock(&pipeline_mu_);
    if (pipeline_ == pipeline) pipeline_slot_busy_[static_cast<size_t>(slot)] = false;
  };
  // The models the parent graph replays must still be the ones served.
  std::vector<std::shared_ptr<ServedModel>> models;
  for (size_t k = 0; k < pipeline->steps.size(); ++k) {
    const EnsembleStepPlan& step = plan_.steps[pipeline->steps[k]];
    absl::StatusOr<std::shared_ptr<ServedModel>> model = find_(step.model_name, step.model_version);
    if (!model.ok() || *model != pipeline->models[k].lock()) {
      release();
      absl::MutexLock lock(&pipeline_mu_);
      if (pipeline_ == pipeline) {
        pipeline_.reset();
        spdlog::warn("ensemble '{}': model '{}' changed since the ensemble's pipeline was built; "
                     "the ensemble runs step by step from now on",
                     interface_.name, step.model_name);
      }
      return false;
    }
    models.push_back(*std::move(model));
  }
  const std::vector<int64_t>& sizes = pipeline->graphs->batch_sizes();
  const int64_t batch = *std::lower_bound(sizes.begin(), sizes.end(), rows);
  const uint64_t queue_ns = StatisticsNanos(Clock::now() - request->start);
  std::vector<const void*> inputs;
  for (const InputRows& input : request->validated.view.inputs) inputs.push_back(input.data);
  // Outputs the request did not ask for are written, and dropped, here.
  std::vector<std::vector<std::byte>> unasked;
  std::vector<void*> outputs;
  for (size_t o = 0; o < interface_.outputs.size(); ++o) {
    void* to = request->outputs[o];
    if (to == nullptr) {
      to = unasked.emplace_back(static_cast<size_t>(rows) * interface_.outputs[o].bytes_per_row())
               .data();
    }
    outputs.push_back(to);
  }
  PipelineTiming timing;
  absl::Status status = pipeline->graphs->Run(slot, batch, rows, inputs, outputs, &timing);
  release();
  const ChunkTiming compute{timing.input_ns, timing.infer_ns, timing.output_ns};
  if (status.ok()) {
    for (size_t k = 0; k < models.size(); ++k) {
      models[k]->CountPipelineStep(pipeline->streams[k][static_cast<size_t>(slot)], batch, rows,
                                   compute);
    }
  } else {
    status = absl::Status(status.code(), absl::StrCat("in ensemble '", interface_.name,
                                                      "', its pipeline: ", status.message()));
  }
  Answer(request, status, queue_ns, compute,
         {.stream = 0, .batch_size = batch, .rows = rows, .requests = 1});
  return true;
}

void EnsembleScheduler::ComposingModelLoaded(const std::string& name) {
  const bool runs_it = std::any_of(plan_.steps.begin(), plan_.steps.end(),
                                   [&](const EnsembleStepPlan& step) {
                                     return step.model_name == name;
                                   });
  {
    absl::MutexLock lock(&pipeline_mu_);
    if (!runs_it || !pipeline_wanted_) return;
  }
  if (const absl::Status built = BuildPipeline(); built.ok()) {
    spdlog::info("ensemble '{}': its pipeline was built again over the new model '{}': {}",
                 interface_.name, name, ExecutionText());
  } else {
    spdlog::info("ensemble '{}' runs step by step after model '{}' was loaded again: {}",
                 interface_.name, name, std::string(built.message()));
  }
}

std::string EnsembleScheduler::ExecutionText() const {
  {
    absl::MutexLock lock(&pipeline_mu_);
    if (pipeline_ != nullptr) return PipelineText();
  }
  // Outside pipeline_mu_: it looks the models up.
  return absl::StrCat("step by step, ", StepTensorsText());
}

std::string EnsembleScheduler::PipelineText() const {
  return absl::StrCat("one CUDA graph at batch sizes ",
                      absl::StrJoin(pipeline_->graphs->batch_sizes(), ","), " on ",
                      pipeline_->graphs->num_slots(), " slots, GPU ", pipeline_->graphs->device(),
                      sleeping_pipeline_wait_ ? ", sleeping while it replays" : "");
}

void EnsembleScheduler::Left() {
  bool idle = false;
  {
    absl::MutexLock lock(&mu_);
    idle = --running_ == 0 && draining_;
  }
  if (idle) drained_.SignalAll();
}

void EnsembleScheduler::Drain(std::optional<std::chrono::steady_clock::time_point> deadline) {
  absl::MutexLock lock(&mu_);
  draining_ = true;
  while (running_ != 0) {
    if (!deadline.has_value()) {
      drained_.Wait(&mu_);
      continue;
    }
    const Clock::duration left = *deadline - Clock::now();
    if (left <= left.zero()) break;
    drained_.WaitWithTimeout(&mu_, absl::FromChrono(left));
  }
}

}  // namespace graphserve
