#include "client/load_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/fake_inference_server.h"
#include "client/perf_report.h"
#include "common/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

// Short levels: the CI machine has two cores, and a few hundred requests per
// level are plenty to check what is counted.
constexpr absl::Duration kWindow = absl::Milliseconds(200);
constexpr absl::Duration kWarmup = absl::Milliseconds(50);

class LoadGeneratorTest : public ::testing::Test {
 protected:
  void StartServer(const FakeInferenceServerOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server =
        FakeInferenceServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        InferenceClient::Create({.address = server_->address(), .call_timeout = absl::Seconds(10)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  LoadGeneratorOptions Options() const {
    return {.model_name = "double",
            .batch_size = 2,
            .warmup = kWarmup,
            .measurement_window = kWindow,
            .windows = 1};
  }

  // One level of `concurrency` with Options() over streams.
  absl::StatusOr<LevelResult> RunStreamingLevel(int64_t concurrency) {
    LoadGeneratorOptions options = Options();
    options.streaming = true;
    ASSIGN_OR_RETURN(std::unique_ptr<LoadGenerator> generator,
                     LoadGenerator::Create(client_.get(), options));
    return generator->RunConcurrency(concurrency);
  }

  std::unique_ptr<FakeInferenceServer> server_;
  std::unique_ptr<InferenceClient> client_;
};

void ExpectOrderedPercentiles(const LatencySummary& latency) {
  EXPECT_GT(latency.p50_ns, 0);
  EXPECT_LE(latency.p50_ns, latency.p90_ns);
  EXPECT_LE(latency.p90_ns, latency.p95_ns);
  EXPECT_LE(latency.p95_ns, latency.p99_ns);
  EXPECT_GT(latency.avg_ns, 0);
}

TEST_F(LoadGeneratorTest, ConcurrencySweepMeasuresAndWritesCsv) {
  StartServer();
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), Options());
  ASSERT_TRUE(generator.ok()) << generator.status();
  EXPECT_EQ((*generator)->request().inputs[0].shape, (std::vector<int64_t>{2, 4}));

  std::vector<LevelResult> levels;
  for (const int64_t concurrency : {1, 4}) {
    absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(concurrency);
    ASSERT_TRUE(level.ok()) << level.status();
    EXPECT_EQ(level->level, concurrency);
    EXPECT_GT(level->completed, 0);
    EXPECT_EQ(level->errors, 0) << level->first_error;
    EXPECT_GT(level->infer_per_sec, 0);
    // Throughput counts rows: requests x batch size 2 over the window.
    EXPECT_NEAR(level->infer_per_sec,
                2.0 * level->completed / absl::ToDoubleSeconds(level->measured),
                1e-6 * level->infer_per_sec);
    EXPECT_GE(level->measured, kWindow);
    ASSERT_EQ(level->window_infer_per_sec.size(), 1u);
    EXPECT_EQ(level->latency.count, level->completed);
    ExpectOrderedPercentiles(level->latency);
    ASSERT_TRUE(level->server.has_value());
    // The server counts from just before to just after the window, so its
    // requests are roughly the client's.
    EXPECT_GT(level->server->requests, level->completed / 2);
    EXPECT_LT(level->server->requests, 2 * level->completed + 10);
    levels.push_back(*std::move(level));
  }

  const std::string csv = FormatPerfCsv(LoadMode::kConcurrency, levels);
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[0], PerfCsvHeader(LoadMode::kConcurrency, {.server_stats = true, .floor = true}));
  const size_t columns = std::vector<std::string>(absl::StrSplit(lines[0], ',')).size();
  EXPECT_EQ(columns, 20u);  // perf_analyzer's 16, then the floor's 4
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(cells.size(), columns) << lines[i];
    EXPECT_EQ(cells[0], i == 1 ? "1" : "4");
    EXPECT_GT(std::stod(cells[1]), 0) << lines[i];  // Inferences/Second
  }
}

// Note [The served floor]: after each level, ServerLive at the same level,
// and the model's full-chunk replay from its config.
TEST_F(LoadGeneratorTest, EachLevelMeasuresItsFloorAndReadsTheReplayCost) {
  FakeInferenceServerOptions server;
  server.capture.add_batch_sizes(1);
  server.capture.add_batch_sizes(4);
  inference::CaptureCost* cost = server.capture.add_cost();
  cost->set_batch_size(4);
  cost->set_graph_us(37.5);
  StartServer(server);
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), Options());  // batch 2: pads to 4
  ASSERT_TRUE(generator.ok()) << generator.status();
  EXPECT_EQ((*generator)->replay().note,
            "batch 2 is not captured: the cost of 4, the size it pads to");

  for (const bool closed_loop : {true, false}) {
    const int64_t live_before = server_->live_calls();
    absl::StatusOr<LevelResult> level =
        closed_loop ? (*generator)->RunConcurrency(3) : (*generator)->RunRequestRate(300);
    ASSERT_TRUE(level.ok()) << level.status();
    ASSERT_TRUE(level->floor.has_value());
    EXPECT_GT(level->floor->completed, 0);
    EXPECT_EQ(level->floor->errors, 0) << level->floor->first_error;
    EXPECT_EQ(level->floor->latency.count, level->floor->completed);
    ExpectOrderedPercentiles(level->floor->latency);
    // Every floor call was a ServerLive the server saw (plus the warm-up's).
    EXPECT_GE(server_->live_calls() - live_before, level->floor->completed);
    ASSERT_TRUE(level->replay.us.has_value());
    EXPECT_DOUBLE_EQ(*level->replay.us, 37.5);
    const std::optional<int64_t> overhead = ServedOverheadNs(*level);
    ASSERT_TRUE(overhead.has_value());
    EXPECT_EQ(*overhead, level->latency.p50_ns - level->floor->latency.p50_ns - 37'500);
  }
}

TEST_F(LoadGeneratorTest, NoFloorWindowsNoFloor) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.floor_windows = 0;
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(1);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_FALSE(level->floor.has_value());
  EXPECT_EQ(server_->live_calls(), 0);
  // The fake server's config has no capture section.
  EXPECT_FALSE(level->replay.us.has_value());
  EXPECT_THAT(level->replay.note, ::testing::HasSubstr("no measured costs"));
}

TEST_F(LoadGeneratorTest, SpreadsRequestsOverPrivateConnections) {
  StartServer();
  absl::StatusOr<std::unique_ptr<InferenceClient>> second = InferenceClient::Create(
      {.address = server_->address(), .call_timeout = absl::Seconds(10),
       .private_connection = true});
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create({client_.get(), second->get()}, Options());
  ASSERT_TRUE(generator.ok()) << generator.status();
  absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(4);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_GT(level->completed, 0);
  EXPECT_EQ(level->errors, 0) << level->first_error;
  absl::StatusOr<LevelResult> rate = (*generator)->RunRequestRate(200);
  ASSERT_TRUE(rate.ok()) << rate.status();
  EXPECT_EQ(rate->errors, 0) << rate->first_error;
  EXPECT_FALSE(LoadGenerator::Create(std::vector<InferenceClient*>{}, Options()).ok());
}

TEST_F(LoadGeneratorTest, CountsAndReportsErrors) {
  StartServer({.fail_every_nth_infer = 4});
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), Options());
  ASSERT_TRUE(generator.ok()) << generator.status();
  absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(2);
  ASSERT_TRUE(level.ok()) << level.status();
  ASSERT_GT(level->completed, 20);
  // One call in four fails on the server, whichever request it is.
  const double failed = static_cast<double>(level->errors) / level->completed;
  EXPECT_GT(failed, 0.15);
  EXPECT_LT(failed, 0.35);
  EXPECT_EQ(level->first_error, "INTERNAL: injected failure");
  EXPECT_EQ(level->latency.count, level->completed - level->errors);
  ASSERT_EQ(static_cast<int64_t>(level->timeline.size()), level->completed);
  EXPECT_EQ(std::count_if(level->timeline.begin(), level->timeline.end(),
                          [](const TimedRequest& request) { return !request.ok; }),
            level->errors);
  EXPECT_NEAR(level->infer_per_sec,
              2.0 * (level->completed - level->errors) / absl::ToDoubleSeconds(level->measured),
              1e-6 * level->infer_per_sec);
}

TEST_F(LoadGeneratorTest, RequestRateHoldsTheRate) {
  StartServer();
  // One schedule thread (the default share) and four of 50/s each (Note
  // [Schedule threads]): the shares add up to the rate.
  for (const auto& [rate_per_thread, distribution] :
       std::vector<std::pair<double, RequestDistribution>>{
           {8000, RequestDistribution::kConstant},
           {8000, RequestDistribution::kPoisson},
           {50, RequestDistribution::kConstant},
           {50, RequestDistribution::kPoisson}}) {
    SCOPED_TRACE(absl::StrCat("rate per schedule thread ", rate_per_thread));
    LoadGeneratorOptions options = Options();
    options.distribution = distribution;
    options.rate_per_schedule_thread = rate_per_thread;
    absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
        LoadGenerator::Create(client_.get(), options);
    ASSERT_TRUE(generator.ok()) << generator.status();
    // 200 requests/s over a 200 ms window: 40 expected. Poisson counts
    // spread with sd sqrt(40) ~ 6.3, so 20 to 60 holds with margin.
    absl::StatusOr<LevelResult> level = (*generator)->RunRequestRate(200);
    ASSERT_TRUE(level.ok()) << level.status();
    EXPECT_EQ(level->level, 200);
    EXPECT_GE(level->completed, 20);
    EXPECT_LE(level->completed, 60);
    EXPECT_EQ(level->errors, 0);
    EXPECT_EQ(level->delayed_sends, 0);
    ExpectOrderedPercentiles(level->latency);
    // The timeline holds every measured request, on the steady clock: all
    // finished within one window of each other, before now.
    ASSERT_EQ(static_cast<int64_t>(level->timeline.size()), level->completed);
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    const auto [first, last] = std::minmax_element(
        level->timeline.begin(), level->timeline.end(), [](const auto& a, const auto& b) {
          return a.sent_ns + a.latency_ns < b.sent_ns + b.latency_ns;
        });
    EXPECT_LE(last->sent_ns + last->latency_ns - (first->sent_ns + first->latency_ns),
              absl::ToInt64Nanoseconds(level->measured));
    for (const TimedRequest& request : level->timeline) {
      EXPECT_TRUE(request.ok);
      EXPECT_GT(request.latency_ns, 0);
      EXPECT_LT(request.sent_ns + request.latency_ns, now);
    }
  }
}

TEST_F(LoadGeneratorTest, RequestRateAboveTheCapDelaysSends) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.max_outstanding = 1;
  options.measurement_window = absl::Milliseconds(100);
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  // A million per second cannot be kept with one request in flight; 1e14
  // asks for more schedule threads than an int holds (capped).
  for (const double rate : {1e6, 1e14}) {
    SCOPED_TRACE(rate);
    absl::StatusOr<LevelResult> level = (*generator)->RunRequestRate(rate);
    ASSERT_TRUE(level.ok()) << level.status();
    EXPECT_GT(level->delayed_sends, 0);
    // Held back, they went out behind their schedule too.
    EXPECT_GT(level->late_sends, 0);
    EXPECT_GT(level->completed, 0);
  }
}

TEST_F(LoadGeneratorTest, CreatePassesServerErrorsThrough) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.model_name = "triple";
  const absl::Status unknown = LoadGenerator::Create(client_.get(), options).status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "unknown model 'triple'");

  options = Options();
  options.batch_size = 9;  // the fake's max_batch_size is 8
  EXPECT_EQ(LoadGenerator::Create(client_.get(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = Options();
  options.windows = 0;
  EXPECT_EQ(LoadGenerator::Create(client_.get(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const double bad_rate : {0.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    options = Options();
    options.rate_per_schedule_thread = bad_rate;
    EXPECT_EQ(LoadGenerator::Create(client_.get(), options).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST_F(LoadGeneratorTest, SharedMemoryGivesEveryRequestInFlightItsOwnRegion) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.shared_memory.kind = SharedMemoryKind::kSystem;
  options.max_outstanding = 4;
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  const SharedMemorySlots* slots = (*generator)->shared_memory_slots();
  ASSERT_NE(slots, nullptr);
  EXPECT_EQ(slots->size(), 1u);  // made by Create, so that failures show there

  constexpr int64_t kConcurrency = 3;
  absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(kConcurrency);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_GT(level->completed, 0);
  EXPECT_EQ(level->errors, 0) << level->first_error;
  EXPECT_EQ(slots->size(), static_cast<size_t>(kConcurrency));
  EXPECT_EQ(server_->registered_regions(), kConcurrency);

  // The open loop takes free slots and adds one only when all are busy.
  level = (*generator)->RunRequestRate(300);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_GT(level->completed, 0);
  EXPECT_EQ(level->errors, 0) << level->first_error;
  EXPECT_LE(slots->size(), static_cast<size_t>(std::max<int64_t>(kConcurrency, 4)));

  generator->reset();
  EXPECT_EQ(server_->registered_regions(), 0);
}

// Note [Streaming slots]: each slot of a level keeps one stream, on its
// connection, for the whole level; the floor stays unary.
TEST_F(LoadGeneratorTest, StreamingSendsEachSlotsRequestsOnAStreamOfItsOwn) {
  StartServer();
  absl::StatusOr<std::unique_ptr<InferenceClient>> second = InferenceClient::Create(
      {.address = server_->address(), .call_timeout = absl::Seconds(10),
       .private_connection = true});
  ASSERT_TRUE(second.ok()) << second.status();
  LoadGeneratorOptions options = Options();
  options.streaming = true;
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create({client_.get(), second->get()}, options);
  ASSERT_TRUE(generator.ok()) << generator.status();

  int64_t streams_before = 0;
  for (const int64_t concurrency : {3, 1}) {
    SCOPED_TRACE(absl::StrCat("concurrency ", concurrency));
    const int64_t live_before = server_->live_calls();
    absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(concurrency);
    ASSERT_TRUE(level.ok()) << level.status();
    EXPECT_EQ(level->level, concurrency);
    EXPECT_EQ(server_->stream_calls() - streams_before, concurrency);
    streams_before = server_->stream_calls();

    EXPECT_GT(level->completed, 0);
    EXPECT_EQ(level->errors, 0) << level->first_error;
    EXPECT_EQ(level->latency.count, level->completed);
    EXPECT_EQ(static_cast<int64_t>(level->timeline.size()), level->completed);
    ExpectOrderedPercentiles(level->latency);
    EXPECT_NEAR(level->infer_per_sec,
                2.0 * level->completed / absl::ToDoubleSeconds(level->measured),
                1e-6 * level->infer_per_sec);
    // Every request counted went over a stream, as the server counted it.
    EXPECT_GE(server_->infer_calls(), level->completed);
    ASSERT_TRUE(level->server.has_value());
    EXPECT_GT(level->server->requests, level->completed / 2);
    EXPECT_LT(level->server->requests, 2 * level->completed + 10);

    ASSERT_TRUE(level->floor.has_value());
    EXPECT_GT(level->floor->completed, 0);
    EXPECT_EQ(level->floor->errors, 0) << level->floor->first_error;
    EXPECT_GE(server_->live_calls() - live_before, level->floor->completed);
  }

}

// A request-rate level over streams sends each request on an idle stream,
// opening one only when none is: far fewer streams than requests.
TEST_F(LoadGeneratorTest, StreamingAtARequestRateTakesAnIdleStreamForEachSend) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.streaming = true;
  options.floor_windows = 0;
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  absl::StatusOr<LevelResult> level = (*generator)->RunRequestRate(400);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_GT(level->completed, 20);
  EXPECT_EQ(level->errors, 0) << level->first_error;
  EXPECT_EQ(level->latency.count, level->completed);
  EXPECT_GE(server_->stream_calls(), 1);
  EXPECT_LT(server_->stream_calls(), level->completed / 2);
}

TEST_F(LoadGeneratorTest, StreamingCountsErrorAnswersAndKeepsItsStreams) {
  StartServer({.fail_every_nth_infer = 4});
  absl::StatusOr<LevelResult> level = RunStreamingLevel(2);
  ASSERT_TRUE(level.ok()) << level.status();
  ASSERT_GT(level->completed, 20);
  // One request in four fails on the server, as with a call each.
  const double failed = static_cast<double>(level->errors) / level->completed;
  EXPECT_GT(failed, 0.15);
  EXPECT_LT(failed, 0.35);
  // An answer's error_message carries no code.
  EXPECT_EQ(level->first_error, "UNKNOWN: injected failure");
  EXPECT_EQ(level->latency.count, level->completed - level->errors);
  EXPECT_EQ(server_->stream_calls(), 2);  // errors do not end streams
}

TEST_F(LoadGeneratorTest, StreamingSlotsGoOnWhenTheServerEndsTheirStreams) {
  // Every stream loses its sixth request and ends: the slot's next request
  // starts a new stream.
  StartServer({.end_streams_after_answers = 5});
  absl::StatusOr<LevelResult> level = RunStreamingLevel(2);
  ASSERT_TRUE(level.ok()) << level.status();
  // Enough that a window's edges move the share of errors by little.
  ASSERT_GT(level->completed, 60);
  const double failed = static_cast<double>(level->errors) / level->completed;
  EXPECT_GT(failed, 0.1);  // 1 in 6
  EXPECT_LT(failed, 0.25);
  EXPECT_EQ(level->first_error, "UNAVAILABLE: injected stream end");
  EXPECT_GT(server_->stream_calls(), level->errors);
}

TEST_F(LoadGeneratorTest, StreamingWithSharedMemoryKeepsASlotsRegionOnItsStream) {
  StartServer();
  LoadGeneratorOptions options = Options();
  options.shared_memory.kind = SharedMemoryKind::kSystem;
  options.streaming = true;
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), options);
  ASSERT_TRUE(generator.ok()) << generator.status();
  constexpr int64_t kConcurrency = 3;
  absl::StatusOr<LevelResult> level = (*generator)->RunConcurrency(kConcurrency);
  ASSERT_TRUE(level.ok()) << level.status();
  EXPECT_GT(level->completed, 0);
  EXPECT_EQ(level->errors, 0) << level->first_error;
  EXPECT_EQ(server_->registered_regions(), kConcurrency);
  EXPECT_EQ(server_->stream_calls(), kConcurrency);
  generator->reset();
  EXPECT_EQ(server_->registered_regions(), 0);
}

TEST_F(LoadGeneratorTest, RejectsBadLevels) {
  StartServer();
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(client_.get(), Options());
  ASSERT_TRUE(generator.ok()) << generator.status();
  EXPECT_EQ((*generator)->RunConcurrency(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*generator)->RunRequestRate(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*generator)->RunRequestRate(1e-5).status().code(),  // one a day
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*generator)->RunRequestRate(std::numeric_limits<double>::quiet_NaN()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
