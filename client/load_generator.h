#pragma once
// perf_analyzer-style load on one model through InferenceClient::InferAsync,
// measured level by level:
//
//   concurrency N   a closed loop: N requests outstanding at all times, each
//                   completion sending the next (RunConcurrency);
//   request rate R  an open loop: requests sent at R per second, constant or
//                   Poisson spacing, whether or not answers have come back
//                   (RunRequestRate).
//
// Each level warms up, then measures `windows` windows of
// `measurement_window`: throughput (requests that finished in the windows x
// batch size / their length), client latency percentiles, errors, and the
// server's per-request queue and compute averages from ModelStatistics taken
// before and after the windows. Every request is the same one, built once
// from the model's metadata with random data. With shared memory its
// tensors sit in regions shared with the server, one per request in flight
// (Note [Shared-memory slots] in client/shared_memory_slots.h).
//
// Right after each level the same load runs with an empty RPC, ServerLive,
// in place of ModelInfer: the floor of Note [The served floor]
// (client/perf_report.h), beside the model's full-chunk replay read from
// its config.
//
// With `streaming`, a level sends its requests over ModelStreamInfer
// streams, one request at a time on each, instead of a call each (Note
// [Streaming slots] in client/load_generator.cc); its floor stays unary.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "client/inference_client.h"
#include "client/perf_report.h"
#include "client/shared_memory_slots.h"
#include "proto/grpc_service.pb.h"

namespace graphserve {

// Spacing of requests in request-rate mode.
enum class RequestDistribution {
  kConstant,  // exactly 1/R apart (perf_analyzer's default)
  kPoisson,   // exponentially distributed gaps with mean 1/R
};

struct LoadGeneratorOptions {
  // The model to load; required.
  std::string model_name;

  // Empty: the server's choice.
  std::string model_version;

  // Rows per request; each request counts as this many inferences.
  int64_t batch_size = 1;

  // Per input, its dims past the batch dim where the model takes any
  // (RequestBuilderOptions::input_shapes, perf_analyzer's --shape).
  std::map<std::string, std::vector<int64_t>> input_shapes;

  // Warm-up at the start of every level, not measured: the load runs until
  // both this time has passed and `warmup_requests` requests have finished.
  // A new level changes the queueing, so each gets its own warm-up.
  absl::Duration warmup = absl::Milliseconds(500);
  int64_t warmup_requests = 0;

  // Length and number of the measurement windows of a level.
  absl::Duration measurement_window = absl::Milliseconds(2000);
  int windows = 3;

  // Seed of the random input data and of the Poisson spacing.
  uint64_t seed = 0;

  RequestDistribution distribution = RequestDistribution::kConstant;

  // Request-rate mode: a level starts one schedule thread per this many
  // requests a second, up to a cap (Note [Schedule threads]).
  double rate_per_schedule_thread = 8000;

  // Request-rate mode: the most requests in flight. When a slow server
  // reaches it, sends wait (and are counted in LevelResult::delayed_sends)
  // instead of piling up without bound.
  int64_t max_outstanding = 1024;

  // Windows of `measurement_window` the floor (ServerLive at the same level)
  // is measured over after each level's own, following a warm-up as long as
  // the level's. 0: no floor.
  int floor_windows = 1;

  // Where the requests' inputs and outputs travel: in the messages (kNone),
  // or in system or CUDA shared memory.
  SharedMemoryOptions shared_memory;

  // Levels send ModelInfer over ModelStreamInfer streams, as perf_analyzer's
  // --streaming does: one per concurrency slot, or for a request rate as many
  // as it has requests in flight (Note [Streaming slots]). The floor stays
  // unary.
  bool streaming = false;
};

class LoadGenerator {
 public:
  // Validates the options, reads the model's metadata (and its config, when
  // the server has that extension) and builds the request. `client` is not
  // owned and must outlive the generator. Errors of those calls come back
  // as they are (NOT_FOUND for an unknown model).
  static absl::StatusOr<std::unique_ptr<LoadGenerator>> Create(InferenceClient* client,
                                                               const LoadGeneratorOptions& options);
  // The same, sending over several connections in turn (each closed-loop
  // slot keeps one): `connections` are not owned, non-empty, and the first
  // also reads metadata and statistics.
  static absl::StatusOr<std::unique_ptr<LoadGenerator>> Create(
      std::vector<InferenceClient*> connections, const LoadGeneratorOptions& options);

  // One concurrency level, then its floor. Returns once every request it
  // sent has finished. InvalidArgument for concurrency < 1; with shared
  // memory, the error of a slot that could not be made. Failed requests
  // are counted in the result, not returned as an error.
  absl::StatusOr<LevelResult> RunConcurrency(int64_t concurrency);

  // One request-rate level (requests per second), then its floor. Returns
  // once every request it sent has finished. InvalidArgument for a rate that
  // is not positive. With shared memory, slots are
  // added on the schedule's thread as the requests in flight need them
  // (mostly in the warm-up); a send whose slot cannot be made counts as a
  // failed request.
  absl::StatusOr<LevelResult> RunRequestRate(double requests_per_second);

  // The request every level sends, with its inputs' bytes (with shared
  // memory, each slot sends its own copy that names its region).
  const InferRequest& request() const { return request_; }

  // The shared-memory slots; null without shared memory.
  const SharedMemorySlots* shared_memory_slots() const { return slots_.get(); }

  // The model's full-chunk replay for the batch size, from its config.
  const ReplayCost& replay() const { return replay_; }

  // Implementation details follow.
 private:
  class LevelRecorder;
  class LevelStreams;

  // What a level's requests call.
  enum class Call {
    kInfer,       // ModelInfer with request_: the served measurement
    kServerLive,  // the floor
  };

  LoadGenerator(std::vector<InferenceClient*> connections, const LoadGeneratorOptions& options,
                InferRequest request, ReplayCost replay,
                std::unique_ptr<SharedMemorySlots> slots)
      : client_(connections.front()),
        connections_(std::move(connections)),
        options_(options),
        request_(std::move(request)),
        replay_(std::move(replay)),
        slots_(std::move(slots)) {}

  // A closed loop (`concurrency` calls outstanding) or an open one (a
  // `requests_per_second` schedule), measured.
  LevelResult RunClosedLoop(Call call, int64_t concurrency, int windows);
  LevelResult RunOpenLoop(Call call, double requests_per_second, int windows);

  // Adds the floor (ServerLive at the same level) and the replay cost to a
  // measured level.
  void AddFloor(LoadMode mode, LevelResult* result);

  // How one call ended.
  struct Outcome;

  // Where a call goes: over `connection`, or on `stream`, a stream of that
  // connection (Note [Streaming slots]), when there is one; with the request
  // of `shared_memory` (null: request_).
  struct Route {
    InferenceClient* connection = nullptr;
    InferStream* stream = nullptr;
    const SharedMemorySlot* shared_memory = nullptr;
  };

  // Starts one call; `done` gets its outcome on the connection's
  // completion-queue thread.
  void StartCall(Call call, const Route& route, std::function<void(const Outcome&)> done);

  // Sends one closed-loop call whose slot is already taken; its completion
  // sends the next while the level runs, by the same route (a slot keeps its
  // connection, stream and shared-memory slot).
  void SendClosedLoop(Call call, std::shared_ptr<LevelRecorder> recorder, const Route& route);

  // Sends one open-loop call whose slot is already taken, on an idle stream
  // of `streams` when there are streams (null: none).
  void SendOpenLoop(Call call, std::shared_ptr<LevelRecorder> recorder, LevelStreams* streams);

  // Share `index` of `shares` of the request-rate schedule that starts at
  // `start`, run on its own thread until the level stops (Note [Schedule
  // threads]).
  void RunSchedule(Call call, std::shared_ptr<LevelRecorder> recorder, LevelStreams* streams,
                   double requests_per_second, std::chrono::steady_clock::time_point start,
                   int index, int shares);

  // Warm-up, `windows` windows and (for ModelInfer) the server statistics
  // around them; stops the load, closes the level's `streams` (null: none)
  // and waits for the load to drain, then summarises.
  LevelResult MeasureLevel(Call call, LevelRecorder& recorder, double level, int windows,
                           LevelStreams* streams = nullptr);

  // Summed inference statistics of the model, or nullopt when the server
  // does not answer ModelStatistics.
  std::optional<inference::InferStatistics> ServerStatistics();

  InferenceClient* const client_;  // metadata and statistics
  // Requests go out over these in turn (client_ among them).
  const std::vector<InferenceClient*> connections_;
  std::atomic<size_t> next_connection_{0};
  const LoadGeneratorOptions options_;
  const InferRequest request_;
  const ReplayCost replay_;
  // Null without shared memory. Its regions are unregistered through
  // client_ when the generator goes: Create's callers keep client_ alive.
  const std::unique_ptr<SharedMemorySlots> slots_;
};

}  // namespace graphserve
