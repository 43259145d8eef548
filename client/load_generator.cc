#include "client/load_generator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "client/replay_cost.h"
#include "client/request_builder.h"
#include "common/logging.h"
#include "common/status.h"

namespace graphserve {
namespace {

// Request times are taken on the monotonic clock; absl::Now() follows the
// wall clock, which may step during a run.
using SteadyClock = std::chrono::steady_clock;

int64_t Nanos(SteadyClock::duration duration) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(duration).count();
}

void SleepUntil(SteadyClock::time_point until) {
  const SteadyClock::duration left = until - SteadyClock::now();
  if (left > SteadyClock::duration::zero()) absl::SleepFor(absl::FromChrono(left));
}

// One finished request.
struct Completion {
  SteadyClock::time_point end;
  int64_t latency_ns = 0;
  int64_t send_ns = 0;
  int64_t receive_ns = 0;
  absl::Status status;
};

void Add(const inference::StatisticDuration& from, inference::StatisticDuration* to) {
  to->set_count(to->count() + from.count());
  to->set_ns(to->ns() + from.ns());
}

// ns per count of a counter's increase; 0 when it did not move.
int64_t AverageNs(const inference::StatisticDuration& before,
                  const inference::StatisticDuration& after) {
  const uint64_t count = after.count() - before.count();
  return count == 0 ? 0 : static_cast<int64_t>((after.ns() - before.ns()) / count);
}

// The server's per-request averages over the measured period, or nullopt when
// either snapshot is missing or the counters went backwards (a restarted
// server or a reloaded model).
std::optional<ServerAverages> ServerDelta(const std::optional<inference::InferStatistics>& before,
                                          const std::optional<inference::InferStatistics>& after) {
  if (!before.has_value() || !after.has_value()) return std::nullopt;
  for (auto member :
       {&inference::InferStatistics::success, &inference::InferStatistics::queue,
        &inference::InferStatistics::compute_input, &inference::InferStatistics::compute_infer,
        &inference::InferStatistics::compute_output}) {
    if (((*after).*member)().count() < ((*before).*member)().count() ||
        ((*after).*member)().ns() < ((*before).*member)().ns()) {
      return std::nullopt;
    }
  }
  return ServerAverages{
      .requests = static_cast<int64_t>(after->success().count() - before->success().count()),
      .queue_ns = AverageNs(before->queue(), after->queue()),
      .compute_input_ns = AverageNs(before->compute_input(), after->compute_input()),
      .compute_infer_ns = AverageNs(before->compute_infer(), after->compute_infer()),
      .compute_output_ns = AverageNs(before->compute_output(), after->compute_output()),
  };
}

// Counts what finished inside the windows delimited by `boundaries`
// (window w is [boundaries[w], boundaries[w + 1])).
LevelResult Summarize(const std::vector<Completion>& completions,
                      const std::vector<SteadyClock::time_point>& boundaries, int64_t batch_size,
                      double level) {
  LevelResult result{.level = level, .batch_size = batch_size};
  const SteadyClock::time_point start = boundaries.front();
  const SteadyClock::time_point end = boundaries.back();
  result.measured = absl::FromChrono(end - start);
  std::vector<int64_t> window_successes(boundaries.size() - 1, 0);
  std::vector<int64_t> latencies;
  latencies.reserve(completions.size());
  result.timeline.reserve(completions.size());
  int64_t send_ns = 0;
  int64_t receive_ns = 0;
  SteadyClock::time_point first_error_end = end;
  for (const Completion& completion : completions) {
    if (completion.end < start || completion.end >= end) continue;
    ++result.completed;
    result.timeline.push_back(
        {.sent_ns = Nanos(completion.end.time_since_epoch()) - completion.latency_ns,
         .latency_ns = completion.latency_ns,
         .ok = completion.status.ok()});
    if (!completion.status.ok()) {
      ++result.errors;
      if (completion.end < first_error_end) {
        first_error_end = completion.end;
        result.first_error = completion.status.ToString();
      }
      continue;
    }
    latencies.push_back(completion.latency_ns);
    send_ns += completion.send_ns;
    receive_ns += completion.receive_ns;
    for (size_t w = 0; w + 1 < boundaries.size(); ++w) {
      if (completion.end < boundaries[w + 1]) {
        ++window_successes[w];
        break;
      }
    }
  }
  const auto successes = static_cast<int64_t>(latencies.size());
  if (successes > 0) {
    result.avg_send_ns = send_ns / successes;
    result.avg_receive_ns = receive_ns / successes;
  }
  result.latency = SummarizeLatencies(std::move(latencies));
  const double seconds = absl::ToDoubleSeconds(result.measured);
  result.infer_per_sec = seconds > 0 ? static_cast<double>(successes * batch_size) / seconds : 0;
  for (size_t w = 0; w < window_successes.size(); ++w) {
    const double window_seconds =
        absl::ToDoubleSeconds(absl::FromChrono(boundaries[w + 1] - boundaries[w]));
    result.window_infer_per_sec.push_back(
        window_seconds > 0 ? static_cast<double>(window_successes[w] * batch_size) / window_seconds
                           : 0);
  }
  return result;
}

}  // namespace

struct LoadGenerator::Outcome {
  SteadyClock::time_point start;
  SteadyClock::time_point end;
  absl::Status status;
  InferTiming timing;  // ModelInfer's client-side send and receive

  // A request that failed before it was sent.
  static Outcome RefusedNow(absl::Status status) {
    const SteadyClock::time_point now = SteadyClock::now();
    return {.start = now, .end = now, .status = std::move(status)};
  }
};

// The requests of one level: slots for requests in flight, what finished, and
// the stop flag. Shared by the level's driver, its completion callbacks and
// (in request-rate mode) its schedule threads.
class LoadGenerator::LevelRecorder {
 public:
  // Takes a slot for a new request, unless the level is stopping.
  bool TryStart() {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    ++outstanding_;
    return true;
  }

  // Takes a slot once fewer than `cap` requests are in flight; false when the
  // level stops first. Counts the sends that had to wait.
  bool StartWhenBelow(int64_t cap) {
    absl::MutexLock lock(&mu_);
    if (!stopping_ && outstanding_ >= cap) {
      ++delayed_sends_;
      auto can_send = [this, cap]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || outstanding_ < cap;
      };
      mu_.Await(absl::Condition(&can_send));
    }
    if (stopping_) return false;
    ++outstanding_;
    return true;
  }

  // Records a finished request and frees its slot.
  void Finish(const Outcome& outcome) {
    Completion completion{.end = outcome.end,
                          .latency_ns = Nanos(outcome.end - outcome.start),
                          .status = outcome.status};
    if (outcome.status.ok()) {
      completion.send_ns = absl::ToInt64Nanoseconds(outcome.timing.send);
      completion.receive_ns = absl::ToInt64Nanoseconds(outcome.timing.receive);
    }
    absl::MutexLock lock(&mu_);
    completions_.push_back(std::move(completion));
    --outstanding_;
  }

  // Waits until `count` requests have finished.
  void AwaitFinished(int64_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return static_cast<int64_t>(completions_.size()) >= count;
    };
    mu_.Await(absl::Condition(&enough));
  }

  // Sleeps until `until`; false, at once, when the level stops first.
  bool SleepUntilOrStop(SteadyClock::time_point until) {
    const absl::Time deadline = absl::Now() + absl::FromChrono(until - SteadyClock::now());
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithDeadline(absl::Condition(&stopping_), deadline);
    return !stopping_;
  }

  // No new request starts after this.
  void Stop() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }

  // Waits, after Stop, until every request has finished. Each ends by the
  // client's call timeout at the latest.
  void AwaitDrained() {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outstanding_ == 0; };
    mu_.Await(absl::Condition(&drained));
  }

  std::vector<Completion> TakeCompletions() {
    absl::MutexLock lock(&mu_);
    return std::move(completions_);
  }

  int64_t delayed_sends() {
    absl::MutexLock lock(&mu_);
    return delayed_sends_;
  }

  // A send that went out over kLateSend behind its scheduled time.
  void CountLateSend() { late_sends_.fetch_add(1, std::memory_order_relaxed); }
  int64_t late_sends() const { return late_sends_.load(std::memory_order_relaxed); }

 private:
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t delayed_sends_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> late_sends_{0};
  std::vector<Completion> completions_ ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<LoadGenerator>> LoadGenerator::Create(
    InferenceClient* client, const LoadGeneratorOptions& options) {
  return Create(std::vector<InferenceClient*>{client}, options);
}

absl::StatusOr<std::unique_ptr<LoadGenerator>> LoadGenerator::Create(
    std::vector<InferenceClient*> connections, const LoadGeneratorOptions& options) {
  if (connections.empty() ||
      std::find(connections.begin(), connections.end(), nullptr) != connections.end()) {
    return absl::InvalidArgumentError("no client, or a null connection");
  }
  InferenceClient* const client = connections.front();
  if (options.model_name.empty()) return absl::InvalidArgumentError("no model name");
  if (options.windows < 1 || options.measurement_window <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("need at least one measurement window of positive length, got ",
                     options.windows, " of ", absl::FormatDuration(options.measurement_window)));
  }
  if (options.warmup < absl::ZeroDuration() || options.warmup_requests < 0) {
    return absl::InvalidArgumentError("the warm-up must not be negative");
  }
  if (options.max_outstanding < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max outstanding requests must be at least 1, got ", options.max_outstanding));
  }
  if (!(options.rate_per_schedule_thread > 0)) {  // NaN too
    return absl::InvalidArgumentError(absl::StrCat(
        "the rate per schedule thread must be positive, got ", options.rate_per_schedule_thread));
  }

  ASSIGN_OR_RETURN(const inference::ModelMetadataResponse metadata,
                   client->ModelMetadata(options.model_name, options.model_version));
  // The config says whether dim 0 is the batch and how large it may be; a
  // server without the model_configuration extension answers UNIMPLEMENTED
  // and BuildRequest falls back on the metadata's shapes.
  const absl::StatusOr<inference::ModelConfigResponse> config =
      client->ModelConfig(options.model_name, options.model_version);
  if (!config.ok() && config.status().code() != absl::StatusCode::kUnimplemented) {
    return config.status();
  }
  RequestBuilderOptions request_options{.model_version = options.model_version,
                                        .batch_size = options.batch_size,
                                        .seed = options.seed};
  request_options.input_shapes = options.input_shapes;
  ASSIGN_OR_RETURN(
      InferRequest request,
      BuildRequest(metadata, config.ok() ? &config->config() : nullptr, request_options));
  request.model_name = options.model_name;
  ReplayCost replay;
  if (config.ok()) {
    replay = FullChunkReplay(config->config(), options.batch_size);
  } else {
    replay.note = "the server has no ModelConfig (model_configuration extension)";
  }
  // Note [No inline failures]: InferAsync calls its callback on the calling
  // thread when the request fails CheckInferRequest. In the closed loop that
  // callback sends the next request, which would fail the same way, recursing
  // until the stack overflows. Checking once here rules it out: the request
  // never changes.
  RETURN_IF_ERROR(CheckInferRequest(request));
  if (options.floor_windows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("floor windows must not be negative, got ", options.floor_windows));
  }
  std::unique_ptr<SharedMemorySlots> slots;
  if (options.shared_memory.kind != SharedMemoryKind::kNone) {
    ASSIGN_OR_RETURN(const std::vector<ExpectedOutput> outputs,
                     ExpectedOutputs(metadata, config.ok() ? &config->config() : nullptr,
                                     {.batch_size = options.batch_size}));
    // The first slot is made here: a server without the extension, or a
    // client without a GPU, fails before any level runs.
    ASSIGN_OR_RETURN(slots,
                     SharedMemorySlots::Create(client, request, outputs, options.shared_memory));
  }
  return std::unique_ptr<LoadGenerator>(new LoadGenerator(
      std::move(connections), options, std::move(request), std::move(replay), std::move(slots)));
}

// Note [Streaming slots]
// With LoadGeneratorOptions::streaming, requests go over InferStreams, each
// carrying one request at a time, so a request pays for no gRPC call of its
// own and a stream needs no ids and no write queue. A concurrency level opens
// one per slot, on the slot's connection, as perf_analyzer's --streaming keeps
// one stream per slot: each answer's callback sends the slot's next request
// on the same stream. A request-rate level, whose requests do not wait for
// each other's answers, takes an idle stream for each send and gives it back
// with the answer, opening a new one (on the next connection in turn) when
// none is idle, so it holds as many streams as it had requests in flight. An
// answer with an error counts as a failed request, as a failed call does, and
// the stream goes on; a stream the server ends fails its request outstanding
// and starts a new call with the next (Note [Stream calls] in
// client/inference_client.h), so a slot never stops sending. Once the level
// stops, each stream is closed after its last answer (WritesDone, then the
// server's end), before the level drains: a stream has no deadline of its
// own, so Close's, a call timeout away, is what bounds the drain against a
// hung server, as each call's deadline does without streams. (A send that
// took its slot just before the level stopped may meet its stream closing,
// or find none to take: refused, it ends after the windows, uncounted.)

// A level's streams (Note [Streaming slots]). Thread-safe.
class LoadGenerator::LevelStreams {
 public:
  // Borrows `connections`, non-empty; streams Take opens go over them in
  // turn.
  explicit LevelStreams(absl::Span<InferenceClient* const> connections)
      : connections_(connections) {}

  // A new stream on `connection`, kept by its caller (a closed-loop slot).
  InferStream* Open(InferenceClient* connection) {
    absl::MutexLock lock(&mu_);
    streams_.push_back(connection->OpenStream());
    return streams_.back().get();
  }

  // An idle stream, opened when none is; null once CloseAll has begun.
  InferStream* Take() {
    absl::MutexLock lock(&mu_);
    if (closing_) return nullptr;
    if (idle_.empty()) {
      streams_.push_back(connections_[streams_.size() % connections_.size()]->OpenStream());
      return streams_.back().get();
    }
    InferStream* stream = idle_.back();
    idle_.pop_back();
    return stream;
  }

  // Gives back a stream Take gave, once its request is answered.
  void Give(InferStream* stream) {
    absl::MutexLock lock(&mu_);
    idle_.push_back(stream);
  }

  // After the load stopped: closes every stream, each after its last
  // answer, by one deadline `timeout` away (none when zero), and logs those
  // that did not end cleanly.
  void CloseAll(absl::Duration timeout) {
    std::vector<InferStream*> streams;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
      for (const std::unique_ptr<InferStream>& stream : streams_) streams.push_back(stream.get());
    }
    const absl::Time deadline =
        timeout > absl::ZeroDuration() ? absl::Now() + timeout : absl::InfiniteFuture();
    int failed = 0;
    absl::Status first;
    for (InferStream* stream : streams) {
      absl::Status closed = stream->Close(deadline);
      if (closed.ok()) continue;
      if (failed++ == 0) first = std::move(closed);
    }
    // Every request has been counted by now; this is only about the ends.
    if (failed > 0) {
      spdlog::warn("{} of {} ModelStreamInfer streams did not end cleanly; the first: {}", failed,
                   streams.size(), first.ToString());
    }
  }

 private:
  const absl::Span<InferenceClient* const> connections_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<InferStream>> streams_ ABSL_GUARDED_BY(mu_);
  std::vector<InferStream*> idle_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

void LoadGenerator::StartCall(Call call, const Route& route,
                              std::function<void(const Outcome&)> done) {
  const SteadyClock::time_point start = SteadyClock::now();
  if (call == Call::kServerLive) {
    route.connection->ServerLiveAsync([start, done = std::move(done)](absl::Status status) {
      done(Outcome{.start = start, .end = SteadyClock::now(), .status = std::move(status)});
    });
    return;
  }
  const InferRequest& request =
      route.shared_memory != nullptr ? route.shared_memory->request() : request_;
  InferCallback on_result = [start, done = std::move(done)](absl::StatusOr<InferResult> result) {
    Outcome outcome{.start = start, .end = SteadyClock::now()};
    if (result.ok()) {
      outcome.timing = result->timing();
    } else {
      outcome.status = result.status();
    }
    done(outcome);
  };
  if (route.stream != nullptr) {
    route.stream->InferAsync(request, std::move(on_result));
  } else {
    route.connection->InferAsync(request, std::move(on_result));
  }
}

void LoadGenerator::SendClosedLoop(Call call, std::shared_ptr<LevelRecorder> recorder,
                                   const Route& route) {
  StartCall(call, route, [this, call, recorder, route](const Outcome& outcome) {
    // The next request's slot is taken before this one's is freed, so the
    // count of requests in flight never touches zero while the level runs:
    // AwaitDrained cannot return, and the generator cannot be destroyed,
    // while this callback may still call SendClosedLoop on it.
    const bool send_next = recorder->TryStart();
    recorder->Finish(outcome);
    if (send_next) SendClosedLoop(call, recorder, route);
  });
}

void LoadGenerator::SendOpenLoop(Call call, std::shared_ptr<LevelRecorder> recorder,
                                 LevelStreams* streams) {
  InferenceClient* connection =
      connections_[next_connection_.fetch_add(1, std::memory_order_relaxed) % connections_.size()];
  InferStream* stream = nullptr;
  if (call == Call::kInfer && streams != nullptr) {
    stream = streams->Take();
    if (stream == nullptr) {  // the level's streams are closing: the load has stopped
      recorder->Finish(Outcome::RefusedNow(absl::CancelledError("the level's streams are closed")));
      return;
    }
  }
  SharedMemorySlot* shared_memory = nullptr;
  if (call == Call::kInfer && slots_ != nullptr) {
    // On the schedule's thread, which may block: a new slot is registered
    // here when every slot is in flight (Note [Shared-memory slots]).
    absl::StatusOr<SharedMemorySlot*> acquired = slots_->Acquire();
    if (!acquired.ok()) {
      if (stream != nullptr) streams->Give(stream);
      recorder->Finish(Outcome::RefusedNow(acquired.status()));
      return;
    }
    shared_memory = *acquired;
  }
  StartCall(call, {.connection = connection, .stream = stream, .shared_memory = shared_memory},
            [this, recorder, streams, stream, shared_memory](const Outcome& outcome) {
              // Released before the request's slot is freed, so that a send
              // let through by the freed slot finds this one free and the
              // pool stays within max_outstanding; the generator and the
              // level's streams are alive until Finish (AwaitDrained).
              if (shared_memory != nullptr) slots_->Release(shared_memory);
              if (stream != nullptr) streams->Give(stream);
              recorder->Finish(outcome);
            });
}

// Note [Schedule threads]
// One thread sending every request of a level managed about 28k requests a
// second on the 16-core GPU machine (a send builds and starts a gRPC call on
// the sending thread, ~35 us): asked for 32-43k/s it delivered 26-28k, late
// sends went out in bursts to catch up, and in two of four set-ups p99 at
// "half load" was 6-16x p50 (bench/results/2026-11-26_726a758_tail_probe_h200;
// 1.8-1.9x at 20k/s, which one thread kept). So a level's schedule
// is split among threads, one per LoadGeneratorOptions::rate_per_schedule_thread
// (8000) requests a second: thread i of k sends at rate R/k. A constant
// schedule stays evenly spaced (thread i starts i/R after the first); k
// independent Poisson processes of rate R/k together are one of rate R.
// Sends still over kLateSend behind their time are counted
// (LevelResult::late_sends) and reported, so a generator that falls behind
// says so instead of measuring a lower rate than the one named.
constexpr int kMaxScheduleThreads = 16;
// Slower schedules would not send within a measurement window, and their
// gaps, in nanoseconds, would overflow below ~1e-10/s.
constexpr double kMinRequestRate = 1.0 / 3600;

void LoadGenerator::RunSchedule(Call call, std::shared_ptr<LevelRecorder> recorder,
                                LevelStreams* streams, double requests_per_second,
                                SteadyClock::time_point start, int index, int shares) {
  const double share_rate = requests_per_second / shares;
  // seed_seq keeps 32 bits of each value: the seed goes in as two halves.
  std::seed_seq seeds{options_.seed & 0xffffffffu, options_.seed >> 32,
                      static_cast<uint64_t>(index)};
  std::mt19937_64 rng(seeds);
  std::exponential_distribution<double> poisson_gap(share_rate);
  const double constant_gap = 1.0 / share_rate;
  const auto after = [](double seconds) {
    return std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(seconds));
  };
  // Send times follow the schedule, not the previous send: a late send is
  // followed by earlier ones, so the rate holds on average.
  SteadyClock::time_point next =
      options_.distribution == RequestDistribution::kPoisson
          ? start + after(poisson_gap(rng))
          : start + after(static_cast<double>(index) / requests_per_second);
  while (recorder->SleepUntilOrStop(next)) {
    if (!recorder->StartWhenBelow(options_.max_outstanding)) return;
    if (SteadyClock::now() - next > kLateSend) recorder->CountLateSend();
    SendOpenLoop(call, recorder, streams);
    next += after(options_.distribution == RequestDistribution::kPoisson ? poisson_gap(rng)
                                                                         : constant_gap);
  }
}

std::optional<inference::InferStatistics> LoadGenerator::ServerStatistics() {
  absl::StatusOr<inference::ModelStatisticsResponse> response =
      client_->ModelStatistics(options_.model_name, options_.model_version);
  if (!response.ok()) return std::nullopt;
  inference::InferStatistics sum;
  bool found = false;
  // With no version asked for, every version is reported: their sum is the
  // model's.
  for (const inference::ModelStatistics& stats : response->model_stats()) {
    if (stats.name() != options_.model_name) continue;
    found = true;
    const inference::InferStatistics& infer = stats.inference_stats();
    Add(infer.success(), sum.mutable_success());
    Add(infer.queue(), sum.mutable_queue());
    Add(infer.compute_input(), sum.mutable_compute_input());
    Add(infer.compute_infer(), sum.mutable_compute_infer());
    Add(infer.compute_output(), sum.mutable_compute_output());
  }
  if (!found) return std::nullopt;
  return sum;
}

LevelResult LoadGenerator::MeasureLevel(Call call, LevelRecorder& recorder, double level,
                                        int windows, LevelStreams* streams) {
  const SteadyClock::time_point level_start = SteadyClock::now();
  recorder.AwaitFinished(options_.warmup_requests);
  SleepUntil(level_start + absl::ToChronoNanoseconds(options_.warmup));

  // ServerLive moves no model statistics.
  const bool served = call == Call::kInfer;
  const std::optional<inference::InferStatistics> before =
      served ? ServerStatistics() : std::nullopt;
  std::vector<SteadyClock::time_point> boundaries = {SteadyClock::now()};
  for (int w = 1; w <= windows; ++w) {
    SleepUntil(boundaries.front() + absl::ToChronoNanoseconds(options_.measurement_window * w));
    boundaries.push_back(SteadyClock::now());
  }
  const std::optional<inference::InferStatistics> after =
      served ? ServerStatistics() : std::nullopt;

  recorder.Stop();
  if (streams != nullptr) streams->CloseAll(client_->options().call_timeout);
  recorder.AwaitDrained();
  LevelResult result =
      Summarize(recorder.TakeCompletions(), boundaries, options_.batch_size, level);
  result.server = ServerDelta(before, after);
  result.delayed_sends = recorder.delayed_sends();
  result.late_sends = recorder.late_sends();
  return result;
}

LevelResult LoadGenerator::RunClosedLoop(Call call, int64_t concurrency, int windows) {
  auto recorder = std::make_shared<LevelRecorder>();
  // Closed by MeasureLevel once the load stops; their slots' callbacks have
  // all returned before it returns.
  LevelStreams streams(connections_);
  for (int64_t i = 0; i < concurrency; ++i) {
    const auto index = static_cast<size_t>(i);
    Route route{.connection = connections_[index % connections_.size()]};
    if (call == Call::kInfer) {
      // Request i of the loop keeps shared-memory slot i (RunConcurrency
      // reserved them).
      if (slots_ != nullptr) route.shared_memory = slots_->slot(index);
      if (options_.streaming) route.stream = streams.Open(route.connection);
    }
    if (recorder->TryStart()) SendClosedLoop(call, recorder, route);
  }
  return MeasureLevel(call, *recorder, static_cast<double>(concurrency), windows, &streams);
}

LevelResult LoadGenerator::RunOpenLoop(Call call, double requests_per_second, int windows) {
  auto recorder = std::make_shared<LevelRecorder>();
  // Outlives the schedule threads and every answer (Note [Streaming slots]).
  std::optional<LevelStreams> streams;
  if (call == Call::kInfer && options_.streaming) streams.emplace(connections_);
  LevelStreams* level_streams = streams.has_value() ? &*streams : nullptr;
  // In double first: a huge rate would overflow the int.
  const int shares = static_cast<int>(
      std::clamp(std::ceil(requests_per_second / options_.rate_per_schedule_thread), 1.0,
                 static_cast<double>(kMaxScheduleThreads)));
  const SteadyClock::time_point start = SteadyClock::now();
  std::vector<std::thread> schedulers;
  for (int i = 0; i < shares; ++i) {
    schedulers.emplace_back(
        [this, call, recorder, level_streams, requests_per_second, start, i, shares] {
          RunSchedule(call, recorder, level_streams, requests_per_second, start, i, shares);
        });
  }
  // MeasureLevel stops the recorder, which ends the schedule; the threads
  // are joined before the generator can go away.
  LevelResult result =
      MeasureLevel(call, *recorder, requests_per_second, windows, level_streams);
  for (std::thread& scheduler : schedulers) scheduler.join();
  return result;
}

void LoadGenerator::AddFloor(LoadMode mode, LevelResult* result) {
  result->replay = replay_;
  if (options_.floor_windows == 0) return;
  // Right after the level, over the same connections, at the same level:
  // Note [The served floor].
  const LevelResult floor =
      mode == LoadMode::kConcurrency
          ? RunClosedLoop(Call::kServerLive, static_cast<int64_t>(result->level),
                          options_.floor_windows)
          : RunOpenLoop(Call::kServerLive, result->level, options_.floor_windows);
  result->floor = FloorResult{.latency = floor.latency,
                              .completed = floor.completed,
                              .errors = floor.errors,
                              .first_error = floor.first_error};
}

absl::StatusOr<LevelResult> LoadGenerator::RunConcurrency(int64_t concurrency) {
  if (concurrency < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("concurrency must be at least 1, got ", concurrency));
  }
  if (slots_ != nullptr) RETURN_IF_ERROR(slots_->Reserve(static_cast<size_t>(concurrency)));
  LevelResult result = RunClosedLoop(Call::kInfer, concurrency, options_.windows);
  AddFloor(LoadMode::kConcurrency, &result);
  return result;
}

absl::StatusOr<LevelResult> LoadGenerator::RunRequestRate(double requests_per_second) {
  if (!(requests_per_second >= kMinRequestRate) || !std::isfinite(requests_per_second)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request rate must be at least one an hour (", kMinRequestRate, "/s), got ",
        requests_per_second));
  }
  LevelResult result = RunOpenLoop(Call::kInfer, requests_per_second, options_.windows);
  AddFloor(LoadMode::kRequestRate, &result);
  return result;
}

}  // namespace graphserve
