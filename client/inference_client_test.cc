#include "client/inference_client.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/fake_inference_server.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A "double" request of `rows` rows holding 0, 1, 2, ... (the fake's toy model).
InferRequest DoubleRequest(int64_t rows) {
  std::vector<float> x(rows * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 2.5f;
  InferRequest request{.model_name = "double"};
  request.inputs.push_back({"x", "FP32", {rows, 4}, Bytes(x)});
  return request;
}

class InferenceClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server = FakeInferenceServer::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        InferenceClient::Create({.address = server_->address(), .call_timeout = absl::Seconds(10)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  std::unique_ptr<FakeInferenceServer> server_;
  std::unique_ptr<InferenceClient> client_;
};

TEST(InferenceClientCreateTest, RejectsBadOptions) {
  EXPECT_EQ(InferenceClient::Create({.address = ""}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InferenceClient::Create({.call_timeout = absl::Seconds(-1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InferenceClient::Create({.max_message_bytes = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(InferenceClientCreateTest, UnreachableServerIsUnavailable) {
  // Port 1 (tcpmux) has no listener on a test machine: the connection is refused.
  absl::StatusOr<std::unique_ptr<InferenceClient>> client =
      InferenceClient::Create({.address = "127.0.0.1:1", .call_timeout = absl::Seconds(5)});
  ASSERT_TRUE(client.ok()) << client.status();  // connecting is lazy
  const absl::Status status = (*client)->ServerLive().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(InferenceClientTest, HealthAndServerMetadata) {
  absl::StatusOr<inference::ServerLiveResponse> live = client_->ServerLive();
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_TRUE(live->live());
  absl::StatusOr<inference::ServerReadyResponse> ready = client_->ServerReady();
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_TRUE(ready->ready());
  absl::StatusOr<inference::ServerMetadataResponse> metadata = client_->ServerMetadata();
  ASSERT_TRUE(metadata.ok()) << metadata.status();
  EXPECT_EQ(metadata->name(), "fake-inference-server");
  EXPECT_EQ(metadata->extensions_size(), 3);  // config, statistics, system shared memory
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(client_->Health("no.such.Service").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(InferenceClientTest, ModelReadyMetadataConfigAndStatistics) {
  EXPECT_TRUE(client_->ModelReady("double")->ready());
  EXPECT_FALSE(client_->ModelReady("triple")->ready());

  absl::StatusOr<inference::ModelMetadataResponse> metadata = client_->ModelMetadata("double");
  ASSERT_TRUE(metadata.ok()) << metadata.status();
  ASSERT_EQ(metadata->inputs_size(), 1);
  EXPECT_EQ(metadata->inputs(0).name(), "x");
  EXPECT_EQ(metadata->inputs(0).datatype(), "FP32");
  EXPECT_EQ(metadata->inputs(0).shape_size(), 2);

  absl::StatusOr<inference::ModelConfigResponse> config = client_->ModelConfig("double", "1");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->config().max_batch_size(), 8);  // FakeInferenceServerOptions' default

  ASSERT_TRUE(client_->Infer(DoubleRequest(3)).ok());
  absl::StatusOr<inference::ModelStatisticsResponse> stats = client_->ModelStatistics("double");
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_EQ(stats->model_stats_size(), 1);
  EXPECT_EQ(stats->model_stats(0).inference_count(), 3u);  // one request of 3 rows
  // No name: every model.
  EXPECT_EQ(client_->ModelStatistics()->model_stats_size(), 2);
}

TEST_F(InferenceClientTest, ErrorsKeepTheServersCodeAndMessage) {
  const absl::Status metadata = client_->ModelMetadata("triple").status();
  EXPECT_EQ(metadata.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(metadata.message(), "unknown model 'triple'");

  InferRequest request = DoubleRequest(1);
  request.model_name = "triple";
  const absl::Status infer = client_->Infer(request).status();
  EXPECT_EQ(infer.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(infer.message(), "unknown model 'triple'");

  request = DoubleRequest(9);  // above max_batch_size 8
  const absl::Status too_big = client_->Infer(request).status();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(too_big.message(), "batch 1 to 8")) << too_big;
}

TEST_F(InferenceClientTest, InferDoubles) {
  const InferRequest request = DoubleRequest(2);
  absl::StatusOr<InferResult> result = client_->Infer(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->model_name(), "double");
  EXPECT_EQ(result->model_version(), "1");
  absl::StatusOr<const InferOutput*> y = result->Output("y");
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)->datatype, "FP32");
  EXPECT_EQ((*y)->shape, (std::vector<int64_t>{2, 4}));
  absl::StatusOr<absl::Span<const float>> values = (*y)->AsFloat32();
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 8u);
  for (size_t i = 0; i < values->size(); ++i) {
    EXPECT_EQ((*values)[i], 2 * (static_cast<float>(i) - 2.5f)) << i;
  }
  EXPECT_GE(result->timing().send, absl::ZeroDuration());
  EXPECT_GE(result->timing().receive, absl::ZeroDuration());

  EXPECT_EQ((*y)->AsInt64().status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status missing = result->Output("z").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StrContains(missing.message(), "outputs: y")) << missing;
}

TEST_F(InferenceClientTest, InferBoolAndInt64Inputs) {
  InferRequest request{.model_name = "count_true", .requested_outputs = {"count"}};
  // Two rows: 2 and 0 true flags.
  request.inputs.push_back({"flags", "BOOL", {2, 3}, std::string("\1\0\1\0\0\0", 6)});
  request.inputs.push_back({"offset", "INT64", {2, 1}, Bytes(std::vector<int64_t>{10, -5})});
  absl::StatusOr<InferResult> result = client_->Infer(request);
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<const InferOutput*> count = result->Output("count");
  ASSERT_TRUE(count.ok()) << count.status();
  absl::StatusOr<absl::Span<const int64_t>> values = (*count)->AsInt64();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(std::vector<int64_t>(values->begin(), values->end()), (std::vector<int64_t>{12, -5}));
}

TEST_F(InferenceClientTest, RejectsMismatchedInputBytesWithoutACall) {
  InferRequest request = DoubleRequest(2);
  request.inputs[0].data.resize(31);  // 2 x 4 FP32 needs 32
  const absl::Status status = client_->Infer(request).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "needs 32 bytes, got 31")) << status;
  EXPECT_EQ(server_->infer_calls(), 0);
}

TEST_F(InferenceClientTest, InferAsyncRunsConcurrently) {
  // All sent before any is waited for, on the client's one queue (that they
  // overlap at the server is not checked here).
  constexpr int kCalls = 16;
  absl::BlockingCounter done(kCalls);
  absl::Mutex mu;
  std::vector<absl::StatusOr<InferResult>> results(kCalls, absl::UnknownError("not run"));
  for (int i = 0; i < kCalls; ++i) {
    client_->InferAsync(DoubleRequest(1 + i % 8), [&, i](absl::StatusOr<InferResult> result) {
      {
        absl::MutexLock lock(&mu);
        results[i] = std::move(result);
      }
      done.DecrementCount();
    });
  }
  done.Wait();
  absl::MutexLock lock(&mu);
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    absl::StatusOr<const InferOutput*> y = results[i]->Output("y");
    ASSERT_TRUE(y.ok());
    EXPECT_EQ((*y)->shape[0], 1 + i % 8);
    EXPECT_EQ((*(*y)->AsFloat32())[1], 2 * (1 - 2.5f));
  }
  EXPECT_EQ(server_->infer_calls(), kCalls);
}

// Destroying a client with calls in flight cancels them and waits: every
// callback has run, exactly once, when the destructor returns.
TEST_F(InferenceClientTest, DestroyingTheClientAnswersEveryCallInFlight) {
  constexpr int kCalls = 64;
  std::atomic<int> called{0}, ok{0}, cancelled{0};
  for (int i = 0; i < kCalls; ++i) {
    client_->InferAsync(DoubleRequest(8), [&](absl::StatusOr<InferResult> result) {
      if (result.ok()) {
        ++ok;
      } else if (result.status().code() == absl::StatusCode::kCancelled) {
        ++cancelled;
      }
      ++called;
    });
  }
  client_.reset();
  EXPECT_EQ(called.load(), kCalls);
  EXPECT_EQ(ok.load() + cancelled.load(), kCalls);
}

TEST_F(InferenceClientTest, InferAsyncPassesErrorsThrough) {
  InferRequest request = DoubleRequest(1);
  request.model_name = "triple";
  absl::BlockingCounter done(1);
  absl::Status status;
  client_->InferAsync(request, [&](absl::StatusOr<InferResult> result) {
    status = result.status();
    done.DecrementCount();
  });
  done.Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "unknown model 'triple'");
}

TEST_F(InferenceClientTest, ServerLiveAsyncReachesTheServer) {
  constexpr int kCalls = 16;  // several in flight at once
  absl::BlockingCounter done(kCalls);
  absl::Mutex mu;
  int ok = 0;
  for (int i = 0; i < kCalls; ++i) {
    client_->ServerLiveAsync([&](absl::Status status) {
      if (status.ok()) {
        absl::MutexLock lock(&mu);
        ++ok;
      }
      done.DecrementCount();
    });
  }
  done.Wait();
  EXPECT_EQ(ok, kCalls);
  EXPECT_EQ(server_->live_calls(), kCalls);
}

TEST(InferenceClientCreateTest, ServerLiveAsyncToNoServerIsUnavailable) {
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = InferenceClient::Create(
      {.address = "unix:/nonexistent/graphserve.sock", .call_timeout = absl::Seconds(5)});
  ASSERT_TRUE(client.ok());
  absl::BlockingCounter done(1);
  absl::Status status;
  (*client)->ServerLiveAsync([&](absl::Status s) {
    status = std::move(s);
    done.DecrementCount();
  });
  done.Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

// Sends `request` on `stream` and waits for its answer.
absl::StatusOr<InferResult> InferOnStream(InferStream& stream, const InferRequest& request) {
  absl::Notification answered;
  absl::StatusOr<InferResult> answer = absl::UnknownError("no answer");
  stream.InferAsync(request, [&](absl::StatusOr<InferResult> result) {
    answer = std::move(result);
    answered.Notify();
  });
  answered.WaitForNotification();
  return answer;
}

constexpr absl::Duration kCloseWithin = absl::Seconds(10);

TEST_F(InferenceClientTest, StreamAnswersItsRequestsOverOneCall) {
  std::unique_ptr<InferStream> stream = client_->OpenStream();
  EXPECT_EQ(server_->stream_calls(), 0);  // nothing goes before the first request
  for (int64_t rows = 1; rows <= 3; ++rows) {
    InferRequest request = DoubleRequest(rows);
    request.id = absl::StrCat("request ", rows);
    absl::StatusOr<InferResult> result = InferOnStream(*stream, request);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->id(), request.id);
    EXPECT_EQ(result->model_version(), "1");
    absl::StatusOr<const InferOutput*> y = result->Output("y");
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ((*y)->shape, (std::vector<int64_t>{rows, 4}));
    absl::StatusOr<absl::Span<const float>> values = (*y)->AsFloat32();
    ASSERT_TRUE(values.ok()) << values.status();
    ASSERT_EQ(values->size(), static_cast<size_t>(rows * 4));
    for (size_t i = 0; i < values->size(); ++i) {
      EXPECT_EQ((*values)[i], 2 * (static_cast<float>(i) - 2.5f)) << i;
    }
  }
  EXPECT_EQ(server_->stream_calls(), 1);
  EXPECT_EQ(server_->infer_calls(), 3);
  // The server ends the call with OK after the client's WritesDone.
  EXPECT_TRUE(stream->Close(absl::Now() + kCloseWithin).ok());

  // A request after Close starts another call.
  ASSERT_TRUE(InferOnStream(*stream, DoubleRequest(1)).ok());
  EXPECT_EQ(server_->stream_calls(), 2);
}

TEST_F(InferenceClientTest, AnErrorAnswerFailsItsRequestAndTheStreamGoesOn) {
  std::unique_ptr<InferStream> stream = client_->OpenStream();
  InferRequest unknown = DoubleRequest(1);
  unknown.model_name = "triple";
  unknown.id = "to an unknown model";  // a failed request's answer carries its id
  absl::Status status = InferOnStream(*stream, unknown).status();
  // The stream carries the server's message but no code.
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown) << status;
  EXPECT_EQ(status.message(), "unknown model 'triple'");
  status = InferOnStream(*stream, DoubleRequest(9)).status();  // above max_batch_size 8
  EXPECT_EQ(status.code(), absl::StatusCode::kUnknown) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "batch 1 to 8")) << status;

  absl::StatusOr<InferResult> result = InferOnStream(*stream, DoubleRequest(2));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ((*(*result->Output("y"))->AsFloat32())[0], 2 * -2.5f);
  EXPECT_EQ(server_->stream_calls(), 1);  // the errors did not end the call
  EXPECT_TRUE(stream->Close(absl::Now() + kCloseWithin).ok());
}

TEST(InferStreamTest, ACallTheServerEndsFailsItsRequestAndTheNextStartsAnother) {
  absl::StatusOr<std::unique_ptr<FakeInferenceServer>> server =
      FakeInferenceServer::Start({.end_streams_after_answers = 2});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = InferenceClient::Create(
      {.address = (*server)->address(), .call_timeout = absl::Seconds(10)});
  ASSERT_TRUE(client.ok()) << client.status();
  std::unique_ptr<InferStream> stream = (*client)->OpenStream();
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(InferOnStream(*stream, DoubleRequest(1)).ok()) << i;
  const absl::Status lost = InferOnStream(*stream, DoubleRequest(1)).status();
  EXPECT_EQ(lost.code(), absl::StatusCode::kUnavailable) << lost;
  EXPECT_EQ(lost.message(), "injected stream end");
  EXPECT_EQ((*server)->stream_calls(), 1);

  ASSERT_TRUE(InferOnStream(*stream, DoubleRequest(1)).ok());
  EXPECT_EQ((*server)->stream_calls(), 2);
  EXPECT_EQ((*server)->infer_calls(), 3);  // the lost request never ran
  EXPECT_TRUE(stream->Close(absl::Now() + kCloseWithin).ok());
}

TEST(InferStreamTest, AStreamToNoServerIsUnavailable) {
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = InferenceClient::Create(
      {.address = "unix:/nonexistent/graphserve.sock", .call_timeout = absl::Seconds(5)});
  ASSERT_TRUE(client.ok());
  std::unique_ptr<InferStream> stream = (*client)->OpenStream();
  const absl::Status status = InferOnStream(*stream, DoubleRequest(1)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

// Sends an 8-row request on `stream`; its callback stores the status in
// `outstanding` and counts itself in `called`.
void SendCounted(InferStream& stream, std::atomic<int>* called, absl::Status* outstanding) {
  stream.InferAsync(DoubleRequest(8), [called, outstanding](absl::StatusOr<InferResult> result) {
    *outstanding = result.status();
    ++*called;
  });
}

// A Close past its deadline cancels the call: the request outstanding is
// answered or cancelled, exactly once, and the stream stays usable.
TEST_F(InferenceClientTest, ClosePastItsDeadlineCancelsTheCall) {
  std::unique_ptr<InferStream> stream = client_->OpenStream();
  std::atomic<int> called{0};
  absl::Status outstanding;
  SendCounted(*stream, &called, &outstanding);
  // A deadline already past cancels a call still running. On a loaded machine
  // the answer can arrive, and the call end, before Close looks (seen in a
  // full `bazel test //...` on 2 busy cores): then there is nothing to cancel
  // and Close is OK, the request answered.
  const absl::Status closed = stream->Close(absl::InfinitePast());
  EXPECT_TRUE(closed.code() == absl::StatusCode::kDeadlineExceeded ||
              (closed.ok() && outstanding.ok()))
      << closed << "; the request: " << outstanding;
  EXPECT_EQ(called.load(), 1);
  EXPECT_TRUE(outstanding.ok() || outstanding.code() == absl::StatusCode::kCancelled)
      << outstanding;
  // On a new call (the cancelled one may not have reached the server at all).
  absl::StatusOr<InferResult> after = InferOnStream(*stream, DoubleRequest(1));
  EXPECT_TRUE(after.ok()) << after.status();
}

TEST_F(InferenceClientTest, DestroyingAStreamAnswersItsRequestOutstanding) {
  std::unique_ptr<InferStream> stream = client_->OpenStream();
  std::atomic<int> called{0};
  absl::Status outstanding;
  SendCounted(*stream, &called, &outstanding);
  stream.reset();
  EXPECT_EQ(called.load(), 1);
  EXPECT_TRUE(outstanding.ok() || outstanding.code() == absl::StatusCode::kCancelled)
      << outstanding;
}

TEST(InferResultTest, ReadsTypedContentsAsRaw) {
  inference::ModelInferResponse response;
  auto* output = response.add_outputs();
  output->set_name("y");
  output->set_datatype("FP32");
  output->add_shape(2);
  output->mutable_contents()->add_fp32_contents(1.5f);
  output->mutable_contents()->add_fp32_contents(-3.0f);
  absl::StatusOr<InferResult> result = InferResult::FromResponse(response);
  ASSERT_TRUE(result.ok()) << result.status();
  const absl::Span<const float> values = *result->outputs()[0].AsFloat32();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), (std::vector<float>{1.5f, -3.0f}));
}

TEST(InferResultTest, RejectsMalformedResponses) {
  inference::ModelInferResponse response;
  auto* output = response.add_outputs();
  output->set_name("y");
  output->set_datatype("FP32");
  output->add_shape(2);
  response.add_raw_output_contents(std::string(7, '\0'));  // [2] FP32 needs 8
  absl::Status status = InferResult::FromResponse(response).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(status.message(), "has 7 bytes, expected 8")) << status;

  response.add_raw_output_contents("");  // two entries for one output
  status = InferResult::FromResponse(response).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
}

// Note [Outputs in shared memory]: y in region "r" beside z in the message,
// y's raw entry empty (GraphServe) or left out.
inference::ModelInferResponse OneOutputInARegion(bool empty_entry) {
  inference::ModelInferResponse response;
  for (const std::string name : {"y", "z"}) {
    auto* output = response.add_outputs();
    output->set_name(name);
    output->set_datatype("INT64");
    output->add_shape(1);
  }
  auto& parameters = *response.mutable_outputs(0)->mutable_parameters();
  parameters["shared_memory_region"].set_string_param("r");
  parameters["shared_memory_byte_size"].set_int64_param(8);
  if (empty_entry) response.add_raw_output_contents("");
  response.add_raw_output_contents(Bytes(std::vector<int64_t>{7}));
  return response;
}

TEST(InferResultTest, OutputsInSharedMemoryNameTheirRegionWithEitherLayout) {
  for (const bool empty_entry : {true, false}) {
    absl::StatusOr<InferResult> result = InferResult::FromResponse(OneOutputInARegion(empty_entry));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->outputs().size(), 2u);
    EXPECT_EQ(result->outputs()[0].shared_memory_region, "r");
    EXPECT_TRUE(result->outputs()[0].data.empty());
    EXPECT_EQ(result->outputs()[1].shared_memory_region, "");
    EXPECT_EQ((*result->outputs()[1].AsInt64())[0], 7) << empty_entry;
  }
  // Bytes in the message for an output said to be in a region are malformed.
  inference::ModelInferResponse both = OneOutputInARegion(true);
  both.set_raw_output_contents(0, Bytes(std::vector<int64_t>{1}));
  EXPECT_EQ(InferResult::FromResponse(both).status().code(), absl::StatusCode::kInternal);
}

TEST(InferResultTest, CopiesShareTheBytes) {
  inference::ModelInferResponse response;
  auto* output = response.add_outputs();
  output->set_name("y");
  output->set_datatype("INT64");
  output->add_shape(1);
  response.add_raw_output_contents(Bytes(std::vector<int64_t>{42}));
  std::unique_ptr<InferResult> original =
      std::make_unique<InferResult>(*InferResult::FromResponse(response));
  const InferResult copy = *original;
  original.reset();
  EXPECT_EQ((*copy.outputs()[0].AsInt64())[0], 42);
}

}  // namespace
}  // namespace graphserve
