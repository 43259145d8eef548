#include "server/sequence_batcher.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "server/config_validation.h"
#include "server/shared_memory.h"
#include "spdlog/spdlog.h"

namespace graphserve {

namespace {

using Clock = std::chrono::steady_clock;
using Control = inference::ModelSequenceBatching::Control;

// A request parameter Triton reads as a bool; false when absent.
absl::StatusOr<bool> BoolParameter(const inference::ModelInferRequest& request,
                                   const std::string& name) {
  const auto found = request.parameters().find(name);
  if (found == request.parameters().end()) return false;
  if (found->second.parameter_choice_case() != inference::InferParameter::kBoolParam) {
    return absl::InvalidArgumentError(
        absl::StrCat("request parameter '", name, "' must be a bool_param"));
  }
  return found->second.bool_param();
}

// The request's "timeout" parameter (microseconds; int64_param or
// uint64_param), nullopt when absent or 0.
absl::StatusOr<std::optional<std::chrono::microseconds>> TimeoutOf(
    const inference::ModelInferRequest& request) {
  const auto found = request.parameters().find("timeout");
  if (found == request.parameters().end()) return std::nullopt;
  uint64_t timeout = 0;
  if (found->second.parameter_choice_case() == inference::InferParameter::kUint64Param) {
    timeout = found->second.uint64_param();
  } else if (found->second.parameter_choice_case() == inference::InferParameter::kInt64Param &&
             found->second.int64_param() >= 0) {
    timeout = static_cast<uint64_t>(found->second.int64_param());
  } else {
    return absl::InvalidArgumentError(
        "request parameter 'timeout' must be a non-negative int64_param or uint64_param");
  }
  if (timeout == 0) return std::nullopt;
  return std::chrono::microseconds(std::min<uint64_t>(timeout, uint64_t{1} << 62));
}

}  // namespace

std::string CorrelationIdString(const CorrelationId& id) {
  if (const uint64_t* number = std::get_if<uint64_t>(&id)) return absl::StrCat(*number);
  return std::get<std::string>(id);
}

absl::StatusOr<SequenceFlags> SequenceFlagsFromRequest(const inference::ModelInferRequest& request,
                                                       const std::string& model) {
  SequenceFlags flags;
  bool given = false;
  if (const auto found = request.parameters().find("sequence_id");
      found != request.parameters().end()) {
    const inference::InferParameter& parameter = found->second;
    switch (parameter.parameter_choice_case()) {
      case inference::InferParameter::kUint64Param:
        flags.id = parameter.uint64_param();
        given = parameter.uint64_param() != 0;
        break;
      case inference::InferParameter::kInt64Param:
        if (parameter.int64_param() < 0) {
          return absl::InvalidArgumentError(
              "request parameter 'sequence_id' must be a non-negative integer or a string");
        }
        flags.id = static_cast<uint64_t>(parameter.int64_param());
        given = parameter.int64_param() != 0;
        break;
      case inference::InferParameter::kStringParam:
        flags.id = parameter.string_param();
        given = !parameter.string_param().empty();
        break;
      default:
        return absl::InvalidArgumentError(
            "request parameter 'sequence_id' must be an unsigned integer or a string");
    }
  }
  if (!given) {
    return absl::InvalidArgumentError(absl::StrCat(
        "inference request to model '", model,
        "' must specify a non-zero or non-empty correlation ID"));
  }
  ASSIGN_OR_RETURN(flags.start, BoolParameter(request, "sequence_start"));
  ASSIGN_OR_RETURN(flags.end, BoolParameter(request, "sequence_end"));
  return flags;
}

// One client request of a sequence, from acceptance to its answer.
struct SequenceBatcher::Pending {
  const inference::ModelInferRequest* request = nullptr;
  inference::ModelInferResponse* response = nullptr;
  std::function<void(const absl::Status&)> done;
  Clock::time_point accepted;
  SequenceFlags flags;
  // Its "timeout" parameter: how long it may wait in the backlog.
  std::optional<std::chrono::microseconds> timeout;
  // Holds the shared-memory regions the request uses until it is answered.
  ValidatedRequest validated;
  std::vector<std::byte*> outputs;  // per interface output, from PrepareInferResponse
  // The execution's request and response, alive until `done`.
  inference::ModelInferRequest execution_request;
  inference::ModelInferResponse execution_response;
  ChunkTiming compute;
};

// One sequence: an id from its START to its END (or until the reaper frees
// it). Its fields are mu_'s, except that the running request's Pending is
// read and written only by the thread that runs or ends it.
struct SequenceBatcher::Sequence {
  CorrelationId id;
  int64_t slot = -1;  // -1 in the backlog, or once freed
  // Its requests not yet answered, in arrival order; the front runs when
  // `running`.
  std::deque<std::unique_ptr<Pending>> requests;
  bool running = false;
  bool ended = false;  // its END request is among `requests`, or has run
  Clock::time_point last_request;
  // In the backlog: when it times out, the earliest of its requests'
  // "timeout" parameters (Triton's backlog expiration); none without one.
  std::optional<Clock::time_point> backlog_deadline;
};

SequenceBatcher::SequenceBatcher(SequenceBatcherOptions options)
    : interface_(std::move(options.interface)),
      version_text_(std::move(options.version_text)),
      plan_(std::move(options.plan)),
      execute_(std::move(options.execute)),
      device_states_(std::move(options.device_states)),
      drain_execution_(std::move(options.drain_execution)),
      execution_statistics_(std::move(options.execution_statistics)),
      counters_(options.counters),
      reaper_period_(options.reaper_period) {
  const int64_t count = std::max<int64_t>(1, options.instances) * plan_.slots_per_instance;
  {
    absl::MutexLock lock(&mu_);
    slots_.resize(count);
    for (Slot& slot : slots_) {
      if (device_states_.has_value()) break;
      for (const SequenceState& state : plan_.states) slot.states.push_back(state.initial);
    }
    // Taken from the back: slot 0 first.
    for (int64_t slot = count - 1; slot >= 0; --slot) free_slots_.push_back(slot);
  }
  reaper_ = std::thread([this] { ReapIdle(); });
}

SequenceBatcher::~SequenceBatcher() {
  // The reaper reads the slots and the sequences: stop it first, notifying
  // outside the lock; the members it reads go after the join.
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  changed_.SignalAll();
  if (reaper_.joinable()) reaper_.join();
}

int64_t SequenceBatcher::active_sequences() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(slots_.size() - free_slots_.size());
}

int64_t SequenceBatcher::backlog_sequences() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(backlog_.size());
}

void SequenceBatcher::Infer(const inference::ModelInferRequest* request,
                            inference::ModelInferResponse* response,
                            std::function<void(const absl::Status&)> done,
                            const SharedMemoryRegistry* shared_memory) {
  const Clock::time_point accepted = Clock::now();
  const auto refuse = [&](const absl::Status& status, FailureReason reason) {
    // Note [Failure reasons] in server/model_counters.h.
    counters_->RecordFailure(StatisticsNanos(Clock::now() - accepted), reason);
    done(status);
  };
  absl::StatusOr<SequenceFlags> flags = SequenceFlagsFromRequest(*request, interface_.name);
  if (!flags.ok()) return refuse(flags.status(), FailureReason::kOther);
  absl::StatusOr<std::optional<std::chrono::microseconds>> timeout = TimeoutOf(*request);
  if (!timeout.ok()) return refuse(timeout.status(), FailureReason::kOther);
  absl::StatusOr<ValidatedRequest> validated =
      ValidateInferRequest(*request, interface_, shared_memory);
  if (!validated.ok()) return refuse(validated.status(), FailureReason::kOther);
  // Triton's sequence batcher takes one row per request (a batching model's
  // request of one row; a model that does not batch runs one row anyway).
  if (validated->view.rows > 1) {
    return refuse(absl::InvalidArgumentError(absl::StrCat(
                      "inference request to model '", interface_.name,
                      "' must specify batch-size 1 due to requirements of sequence batcher")),
                  FailureReason::kOther);
  }
  const SequenceControl* corrid = plan_.Find(Control::CONTROL_SEQUENCE_CORRID);
  if (corrid != nullptr && std::holds_alternative<std::string>(flags->id)) {
    return refuse(absl::InvalidArgumentError(absl::StrCat(
                      "inference request to model '", interface_.name, "' has the string sequence id '",
                      std::get<std::string>(flags->id), "' but the model's CORRID control '",
                      corrid->tensor, "' is ", KServeDatatype(corrid->dtype),
                      ": send an unsigned integer sequence id")),
                  FailureReason::kOther);
  }

  auto pending = std::make_unique<Pending>();
  pending->request = request;
  pending->response = response;
  pending->accepted = accepted;
  pending->flags = *flags;
  pending->timeout = *std::move(timeout);
  pending->validated = *std::move(validated);
  // Before the request is visible to other threads, which may run it.
  pending->outputs =
      PrepareInferResponse(*request, interface_, version_text_, pending->validated, response);
  std::optional<Launch> launch;
  std::optional<absl::Status> refused;
  {
    absl::MutexLock lock(&mu_);
    auto found = sequences_.find(flags->id);
    if (draining_ && flags->start) {
      // Triton's words: running sequences go on while the model drains.
      refused = absl::UnavailableError(
          "Server is stopping, scheduler for model has stopped accepting new inference "
          "requests");
    } else if (!flags->start && found == sequences_.end()) {
      refused = absl::InvalidArgumentError(
          absl::StrCat("inference request for sequence ", CorrelationIdString(flags->id),
                       " to model '", interface_.name,
                       "' must specify the START flag on the first request of the sequence"));
    } else {
      pending->done = std::move(done);
      launch = Accept(found, std::move(pending));
    }
  }
  if (refused.has_value()) {
    return refuse(*refused, refused->code() == absl::StatusCode::kUnavailable
                                ? FailureReason::kRejected
                                : FailureReason::kOther);
  }
  if (launch.has_value()) Run(*launch);
}

std::optional<SequenceBatcher::Launch> SequenceBatcher::Accept(
    std::unordered_map<CorrelationId, std::shared_ptr<Sequence>>::iterator found,
    std::unique_ptr<Pending> pending) {
  const SequenceFlags& flags = pending->flags;
  std::shared_ptr<Sequence> sequence;
  if (found != sequences_.end()) {
    sequence = found->second;
    if (flags.start) {
      spdlog::warn(
          "sequence {} for model '{}' has a conflict. The previous sequence did not end before "
          "this sequence start. Previous sequence will be terminated early.",
          CorrelationIdString(flags.id), interface_.name);
    }
  } else {
    sequence = std::make_shared<Sequence>();
    sequence->id = flags.id;
    sequences_[flags.id] = sequence;
    if (!free_slots_.empty()) {
      sequence->slot = free_slots_.back();
      free_slots_.pop_back();
      slots_[sequence->slot].owner = sequence;
    } else {
      backlog_.push_back(sequence);
    }
  }
  sequence->last_request = pending->accepted;
  if (sequence->slot < 0 && pending->timeout.has_value()) {
    const Clock::time_point deadline = pending->accepted + *pending->timeout;
    sequence->backlog_deadline = std::min(sequence->backlog_deadline.value_or(deadline), deadline);
  }
  if (flags.end) {
    sequence->ended = true;
    sequences_.erase(flags.id);
  }
  ++in_flight_;
  Pending* const raw = pending.get();
  sequence->requests.push_back(std::move(pending));
  if (sequence->slot < 0 || sequence->running) return std::nullopt;
  sequence->running = true;
  return Launch{sequence, raw};
}

void SequenceBatcher::Run(const Launch& launch) {
  Pending& pending = *launch.pending;
  Slot* slot = nullptr;
  int64_t slot_index = -1;
  {
    absl::MutexLock lock(&mu_);
    slot_index = launch.sequence->slot;
    slot = &slots_[slot_index];
  }
  // The slot's buffers are the running request's alone (one request of its
  // owner runs at a time), so they are read and written without mu_.
  if (pending.flags.start) {
    for (size_t s = 0; s < plan_.states.size(); ++s) {
      if (!device_states_.has_value()) {
        slot->states[s] = plan_.states[s].initial;
        continue;
      }
      absl::Status set = [&]() -> absl::Status {
        ASSIGN_OR_RETURN(const SharedMemorySlice row, DeviceState(s, slot_index));
        return CopyIntoSlice(row, plan_.states[s].initial.data(), plan_.states[s].initial.size());
      }();
      if (!set.ok()) {
        Executed(launch.sequence, launch.pending, set);
        return;
      }
    }
  }
  inference::ModelInferRequest& execution = pending.execution_request;
  execution.set_model_name(interface_.name);
  execution.set_id(pending.request->id());
  // "priority" and "timeout" reach the execution's queue.
  for (const char* name : {"priority", "timeout"}) {
    const auto found = pending.request->parameters().find(name);
    if (found != pending.request->parameters().end()) {
      (*execution.mutable_parameters())[name] = found->second;
    }
  }
  const int64_t rows = pending.validated.view.rows;
  const auto add_input = [&](const std::string& name, DType dtype, const Dims& dims,
                             const void* bytes, size_t size) {
    inference::ModelInferRequest::InferInputTensor* input = execution.add_inputs();
    input->set_name(name);
    input->set_datatype(KServeDatatype(dtype));
    if (interface_.batching) input->add_shape(rows);
    for (int64_t dim : dims) input->add_shape(dim);
    execution.add_raw_input_contents(static_cast<const char*>(bytes), size);
  };
  for (size_t i = 0; i < interface_.inputs.size(); ++i) {
    const TensorSpec& spec = interface_.inputs[i];
    const Dims dims = interface_.shape_dims.empty() ? spec.dims : spec.DimsAt(pending.validated.extents);
    size_t elements = 1;
    for (int64_t dim : dims) elements *= static_cast<size_t>(dim);
    add_input(spec.name, spec.dtype, dims, pending.validated.view.inputs[i].data,
              static_cast<size_t>(rows) * elements * DTypeSize(spec.dtype));
  }
  for (const SequenceControl& control : plan_.controls) {
    std::vector<std::byte> value;
    switch (control.kind) {
      case Control::CONTROL_SEQUENCE_START:
        value = pending.flags.start ? control.true_value : control.false_value;
        break;
      case Control::CONTROL_SEQUENCE_END:
        value = pending.flags.end ? control.true_value : control.false_value;
        break;
      case Control::CONTROL_SEQUENCE_READY:
        value = control.true_value;
        break;
      default: {
        // Triton's CORRID: the id's low bytes, little-endian, in the
        // control's type (Infer refused a string id).
        const uint64_t id = std::get<uint64_t>(pending.flags.id);
        value.resize(DTypeSize(control.dtype));
        std::memcpy(value.data(), &id, std::min(value.size(), sizeof(id)));
        break;
      }
    }
    add_input(control.tensor, control.dtype, {1}, value.data(), value.size());
  }
  // A device state is the slot's row of its region, for the state input and
  // the state output alike: the execution copies it in before its graph
  // runs and the output over it after (Note [Sequence batching]).
  const auto in_region = [&](size_t s, google::protobuf::Map<std::string, inference::InferParameter>*
                                           parameters) {
    const size_t bytes = plan_.states[s].bytes_per_row();
    (*parameters)["shared_memory_region"].set_string_param(device_states_->regions[s]);
    (*parameters)["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(bytes));
    (*parameters)["shared_memory_offset"].set_int64_param(
        static_cast<int64_t>(bytes) * slot_index);
  };
  for (size_t s = 0; s < plan_.states.size(); ++s) {
    const SequenceState& state = plan_.states[s];
    if (!device_states_.has_value()) {
      add_input(state.input_name, state.dtype, state.dims, slot->states[s].data(),
                slot->states[s].size());
      continue;
    }
    inference::ModelInferRequest::InferInputTensor* input = execution.add_inputs();
    input->set_name(state.input_name);
    input->set_datatype(KServeDatatype(state.dtype));
    if (interface_.batching) input->add_shape(rows);
    for (int64_t dim : state.dims) input->add_shape(dim);
    in_region(s, input->mutable_parameters());
  }
  // The client's outputs, then the states' (once each).
  std::vector<std::string> wanted;
  for (size_t index : pending.validated.outputs) wanted.push_back(interface_.outputs[index].name);
  for (const SequenceState& state : plan_.states) {
    if (std::find(wanted.begin(), wanted.end(), state.output_name) == wanted.end()) {
      wanted.push_back(state.output_name);
    }
  }
  for (const std::string& name : wanted) {
    inference::ModelInferRequest::InferRequestedOutputTensor* output = execution.add_outputs();
    output->set_name(name);
    for (size_t s = 0; device_states_.has_value() && s < plan_.states.size(); ++s) {
      if (plan_.states[s].output_name == name) in_region(s, output->mutable_parameters());
    }
  }
  std::shared_ptr<Sequence> sequence = launch.sequence;
  Pending* const raw = launch.pending;
  execute_(&execution, &pending.execution_response,
           [this, sequence, raw](const absl::Status& status) { Executed(sequence, raw, status); },
           device_states_.has_value() ? device_states_->registry.get() : nullptr,
           &pending.compute);
}

absl::StatusOr<SharedMemorySlice> SequenceBatcher::DeviceState(size_t state,
                                                               int64_t slot) const {
  const uint64_t bytes = plan_.states[state].bytes_per_row();
  return device_states_->registry->Slice(device_states_->regions[state],
                                         bytes * static_cast<uint64_t>(slot), bytes);
}

namespace {

// The bytes of output `name` in `response`, or null.
const std::string* OutputBytes(const inference::ModelInferResponse& response,
                               const std::string& name) {
  for (int k = 0; k < response.outputs_size() && k < response.raw_output_contents_size(); ++k) {
    if (response.outputs(k).name() == name) return &response.raw_output_contents(k);
  }
  return nullptr;
}

}  // namespace

std::optional<size_t> SequenceBatcher::DeviceStateOutput(const std::string& name) const {
  if (!device_states_.has_value()) return std::nullopt;
  for (size_t s = 0; s < plan_.states.size(); ++s) {
    if (plan_.states[s].output_name == name) return s;
  }
  return std::nullopt;
}

void SequenceBatcher::Executed(const std::shared_ptr<Sequence>& sequence, Pending* pending,
                               const absl::Status& execution_status) {
  absl::Status status = execution_status;
  const inference::ModelInferResponse& execution = pending->execution_response;
  Slot* slot = nullptr;
  int64_t slot_index = -1;
  {
    absl::MutexLock lock(&mu_);
    slot_index = sequence->slot;
    slot = &slots_[slot_index];
  }
  if (status.ok()) {
    // The outputs first, so that a state is kept only with its request's
    // answer.
    const int64_t rows = pending->validated.view.rows;
    for (size_t index : pending->validated.outputs) {
      const TensorSpec& spec = interface_.outputs[index];
      if (std::optional<size_t> state = DeviceStateOutput(spec.name); state.has_value()) {
        // The client asked for a state the execution wrote on the device.
        status = [&]() -> absl::Status {
          ASSIGN_OR_RETURN(const SharedMemorySlice row, DeviceState(*state, slot_index));
          if (pending->outputs[index] == nullptr) return absl::OkStatus();
          return CopyFromSlice(row, pending->outputs[index]);
        }();
        if (!status.ok()) break;
        continue;
      }
      const std::string* bytes = OutputBytes(execution, spec.name);
      const Dims dims =
          interface_.shape_dims.empty() ? spec.dims : spec.DimsAt(pending->validated.extents);
      size_t expected = static_cast<size_t>(rows) * DTypeSize(spec.dtype);
      for (int64_t dim : dims) expected *= static_cast<size_t>(dim);
      if (bytes == nullptr || bytes->size() != expected) {
        status = absl::InternalError(absl::StrCat(
            "model '", interface_.name, "': the execution returned ",
            bytes == nullptr ? 0 : bytes->size(), " bytes of output '", spec.name, "' where ",
            expected, " were expected"));
        break;
      }
      if (pending->outputs[index] != nullptr) {
        std::memcpy(pending->outputs[index], bytes->data(), expected);
      }
    }
    if (status.ok()) status = FinishOutputs(interface_, pending->validated, pending->response);
  }
  if (status.ok() && !device_states_.has_value()) {
    for (size_t s = 0; s < plan_.states.size(); ++s) {
      const std::string* bytes = OutputBytes(execution, plan_.states[s].output_name);
      if (bytes == nullptr || bytes->size() != slot->states[s].size()) {
        status = absl::InternalError(absl::StrCat(
            "model '", interface_.name, "': the execution returned ",
            bytes == nullptr ? 0 : bytes->size(), " bytes of state output '",
            plan_.states[s].output_name, "' where ", slot->states[s].size(), " were expected"));
        break;
      }
      std::memcpy(slot->states[s].data(), bytes->data(), bytes->size());
    }
  }
  const uint64_t elapsed = StatisticsNanos(Clock::now() - pending->accepted);
  const ChunkTiming& compute = pending->compute;
  if (status.ok()) {
    const uint64_t compute_ns = compute.input_ns + compute.infer_ns + compute.output_ns;
    const int64_t rows = std::max<int64_t>(1, pending->validated.view.rows);
    counters_->RecordChunk({.stream = 0, .batch_size = rows, .rows = rows, .requests = 1}, compute);
    counters_->RecordSuccess(rows, /*length=*/0, elapsed,
                             elapsed > compute_ns ? elapsed - compute_ns : 0, compute);
  } else {
    if (execution_status.ok()) spdlog::warn("{}", status.ToString());
    counters_->RecordFailure(elapsed, FailureReason::kBackend);
  }

  std::unique_ptr<Pending> finished;
  std::optional<Launch> next;
  std::optional<Launch> handed_over;
  {
    absl::MutexLock lock(&mu_);
    finished = std::move(sequence->requests.front());
    sequence->requests.pop_front();
    if (!sequence->requests.empty()) {
      next = Launch{sequence, sequence->requests.front().get()};
    } else {
      sequence->running = false;
      if (sequence->ended) handed_over = ReleaseSlot(sequence);
    }
  }
  // Answered before its successor starts: the regions it holds go with it.
  finished->done(status);
  finished.reset();
  Left();
  if (next.has_value()) Run(*next);
  if (handed_over.has_value()) Run(*handed_over);
}

std::optional<SequenceBatcher::Launch> SequenceBatcher::ReleaseSlot(
    const std::shared_ptr<Sequence>& sequence) {
  const int64_t slot = sequence->slot;
  sequence->slot = -1;
  slots_[slot].owner.reset();
  if (backlog_.empty()) {
    free_slots_.push_back(slot);
    return std::nullopt;
  }
  std::shared_ptr<Sequence> waiting = std::move(backlog_.front());
  backlog_.pop_front();
  waiting->slot = slot;
  slots_[slot].owner = waiting;
  // A backlogged sequence came with a request and none of its requests ran.
  waiting->running = true;
  return Launch{waiting, waiting->requests.front().get()};
}

void SequenceBatcher::ReapIdle() {
  const auto period = std::min<std::chrono::microseconds>(
      reaper_period_, std::max<std::chrono::microseconds>(plan_.max_idle / 2,
                                                          std::chrono::microseconds(100)));
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    const Clock::time_point wake = Clock::now() + period;
    while (!stopping_ && Clock::now() < wake) {
      changed_.WaitWithTimeout(&mu_, absl::FromChrono(wake - Clock::now()));
    }
    if (stopping_) break;
    const Clock::time_point now = Clock::now();
    std::vector<Launch> launches;
    for (Slot& slot : slots_) {
      const std::shared_ptr<Sequence> owner = slot.owner;
      if (owner == nullptr || owner->running || owner->ended || !owner->requests.empty() ||
          now - owner->last_request < plan_.max_idle) {
        continue;
      }
      // Triton's reaper: the idle sequence ends, its id forgotten.
      spdlog::debug("model '{}': sequence {} idle for {} us, its slot freed", interface_.name,
                   CorrelationIdString(owner->id), plan_.max_idle.count());
      if (auto found = sequences_.find(owner->id);
          found != sequences_.end() && found->second == owner) {
        sequences_.erase(found);
      }
      owner->ended = true;
      if (std::optional<Launch> launch = ReleaseSlot(owner)) launches.push_back(*launch);
    }
    // Triton's backlog expiration: a backlogged sequence one of whose
    // requests set a "timeout" that has passed is refused whole.
    std::vector<std::unique_ptr<Pending>> expired;
    for (auto it = backlog_.begin(); it != backlog_.end();) {
      const std::shared_ptr<Sequence> waiting = *it;
      if (!waiting->backlog_deadline.has_value() || *waiting->backlog_deadline > now) {
        ++it;
        continue;
      }
      if (auto found = sequences_.find(waiting->id);
          found != sequences_.end() && found->second == waiting) {
        sequences_.erase(found);
      }
      waiting->ended = true;
      for (std::unique_ptr<Pending>& pending : waiting->requests) {
        expired.push_back(std::move(pending));
      }
      waiting->requests.clear();
      it = backlog_.erase(it);
    }
    if (launches.empty() && expired.empty()) continue;
    mu_.Unlock();
    for (std::unique_ptr<Pending>& pending : expired) {
      counters_->RecordFailure(StatisticsNanos(Clock::now() - pending->accepted),
                               FailureReason::kRejected);
      pending->done(
          absl::UnavailableError("timeout of the corresponding sequence has been expired"));
      pending.reset();
      Left();
    }
    for (const Launch& launch : launches) Run(launch);
    mu_.Lock();
  }
}

void SequenceBatcher::Left() {
  bool idle = false;
  {
    absl::MutexLock lock(&mu_);
    idle = --in_flight_ == 0 && draining_;
  }
  if (idle) changed_.SignalAll();
}

void SequenceBatcher::AddExecutionStatistics(inference::ModelStatistics* statistics) const {
  if (!execution_statistics_) return;
  inference::ModelStatistics execution;
  execution_statistics_(&execution);
  statistics->set_execution_count(execution.execution_count());
  *statistics->mutable_batch_stats() = execution.batch_stats();
}

void SequenceBatcher::Drain(std::optional<std::chrono::steady_clock::time_point> deadline) {
  {
    absl::MutexLock lock(&mu_);
    draining_ = true;
    while (in_flight_ != 0) {
      if (!deadline.has_value()) {
        changed_.Wait(&mu_);
        continue;
      }
      const Clock::duration left = *deadline - Clock::now();
      if (left <= left.zero()) break;
      changed_.WaitWithTimeout(&mu_, absl::FromChrono(left));
    }
  }
  if (drain_execution_) drain_execution_(deadline);
}

absl::StatusOr<std::unique_ptr<ServedModel>> LoadSequenceModel(const RepositoryModel& entry,
                                                               const ModelVersionEntry& version,
                                                               const ServedModelOptions& options) {
  const Clock::time_point start = Clock::now();
  RETURN_IF_ERROR(entry.status);
  inference::ModelConfig config = entry.config;
  config.set_name(entry.name);
  NormalizeSequenceBatching(&config);
  // Triton's sequence_batching rules; the rest of the config is checked as
  // the execution's below.
  RETURN_IF_ERROR(ValidateModelConfig(config));
  if (config.input().empty() || config.output().empty()) {
    // Completing them from the model file would make the control and state
    // inputs client inputs.
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", entry.name, "' sets sequence_batching but its config declares no ",
        config.input().empty() ? "inputs" : "outputs",
        ": a sequence model's config must list the tensors clients send and receive (the "
        "control and state tensors are the sequence batcher's)"));
  }
  // The batcher hands the execution fixed-size rows (Note [Strings at the
  // model's edges] in runtime/ir.h).
  const auto is_string = [](const auto& tensor) {
    return tensor.data_type() == inference::TYPE_STRING;
  };
  if (std::any_of(config.input().begin(), config.input().end(), is_string) ||
      std::any_of(config.output().begin(), config.output().end(), is_string)) {
    return absl::UnimplementedError(absl::StrCat(
        "model '", entry.name, "' sets sequence_batching and has TYPE_STRING inputs or outputs; "
        "GraphServe's sequence batcher carries tensors of fixed-size elements"));
  }
  ASSIGN_OR_RETURN(SequencePlan plan, PlanSequenceBatching(config, entry.directory));
  RepositoryModel execution_entry = entry;
  execution_entry.config = ExecutionConfig(config, plan);
  ASSIGN_OR_RETURN(std::unique_ptr<ServedModel> loaded,
                   ServedModel::Load(execution_entry, version, options));
  const std::shared_ptr<ServedModel> execution = std::move(loaded);

  // Clients send neither controls nor states, and see a state output only
  // when the config lists it (Triton's rule for requesting the state).
  ModelInterface interface = execution->interface();
  std::erase_if(interface.inputs,
                [&](const TensorSpec& spec) { return plan.IsBatcherInput(spec.name); });
  std::erase_if(interface.outputs, [&](const TensorSpec& spec) {
    const bool state = std::any_of(plan.states.begin(), plan.states.end(),
                                   [&](const SequenceState& s) { return s.output_name == spec.name; });
    const bool declared =
        std::any_of(config.output().begin(), config.output().end(),
                    [&](const inference::ModelOutput& output) { return output.name() == spec.name; });
    return state && !declared;
  });
  // The config as served: the repository's, with what loading chose.
  *config.mutable_capture() = execution->config().capture();

  ModelLoadSummary summary = execution->summary();
  const int64_t instances = std::max(1, summary.num_streams);
  const std::string batcher_summary =
      absl::StrCat("; sequence batcher (", plan.strategy == SequenceStrategy::kOldest ? "oldest" : "direct",
                   ", ", instances * plan.slots_per_instance, " slots");
  const int64_t max_rows = std::max<int64_t>(interface.max_batch_size, 1);
  // Requests of one row each: their statistics are kept under batch size 1.
  auto counters = std::make_unique<ModelCounters>(std::vector<int64_t>{1}, max_rows, 1);
  SequenceBatcherOptions batcher_options;
  batcher_options.interface = interface;
  batcher_options.version_text = absl::StrCat(version.version);
  batcher_options.plan = std::move(plan);
  batcher_options.instances = instances;
  batcher_options.execute = [execution](const inference::ModelInferRequest* request,
                                        inference::ModelInferResponse* response,
                                        std::function<void(const absl::Status&)> done,
                                        const SharedMemoryRegistry* shared_memory,
                                        ChunkTiming* compute) {
    execution->Infer(request, response, std::move(done), shared_memory, compute);
  };
  // On one GPU, whose memory the execution's runner copies itself, the
  // states live there (Note [Sequence batching]); else on the host.
  const bool device_memory = options.executor == ExecutorKind::kCuda &&
                             summary.devices.size() == 1 && interface.shape_dims.empty();
  if (device_memory && !batcher_options.plan.states.empty()) {
    auto registry = std::make_shared<SharedMemoryRegistry>();
    DeviceStates states{.registry = registry, .regions = {}};
    const int64_t slots = instances * batcher_options.plan.slots_per_instance;
    for (const SequenceState& state : batcher_options.plan.states) {
      const std::string name = absl::StrCat("graphserve/sequence_state/", entry.name, "/",
                                            version.version, "/", state.input_name);
      ASSIGN_OR_RETURN(std::shared_ptr<SharedMemoryRegion> region,
                       SharedMemoryRegion::AllocateCuda(
                           name, summary.devices.front(),
                           static_cast<uint64_t>(slots) * state.bytes_per_row()));
      RETURN_IF_ERROR(registry->Add(std::move(region)));
      states.regions.push_back(name);
    }
    batcher_options.device_states = std::move(states);
  }
  summary.executor = absl::StrCat(
      summary.executor, batcher_summary,
      batcher_options.plan.states.empty() ? ""
      : batcher_options.device_states.has_value()
          ? absl::StrCat(", implicit state on GPU ", summary.devices.front())
          : ", implicit state on the host",
      ")");
  batcher_options.drain_execution =
      [execution](std::optional<std::chrono::steady_clock::time_point> deadline) {
        execution->Drain(deadline);
      };
  batcher_options.execution_statistics = [execution](inference::ModelStatistics* statistics) {
    execution->FillStatistics(statistics);
  };
  batcher_options.counters = counters.get();
  auto batcher = std::make_unique<SequenceBatcher>(std::move(batcher_options));
  summary.load_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return ServedModel::FromPipeline(std::move(interface), version.version, std::move(config),
                                   std::move(counters), std::move(batcher), std::move(summary));
}

}  // namespace graphserve
