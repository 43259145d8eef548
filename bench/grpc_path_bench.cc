// The RPC transport alone, both of gRPC's asynchronous C++ APIs side by side:
// how many empty ServerLive RPCs a server answers per second, and at what
// latency, when it runs on the callback API (the server's other RPCs) or on
// completion queues polled by threads of its own, and the same for the
// load generator's side. serve_bench.sh runs every pairing on the GPU
// machine, so the choice of API for GraphServe's hot RPCs rests on numbers
// measured side by side, not on folklore.
//
//   grpc_path_bench serve --api callback|queues [--threads 8] --address HOST:PORT
//   grpc_path_bench load  --api callback|queues [--threads 8] [--channels 16]
//                         [--concurrency 64] [--milliseconds 2000] --address HOST:PORT
//
// `serve` answers until killed. `load` prints one line: RPCs/s, p50 and p99.

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/perf_report.h"
#include "common/command_line.h"
#include "common/mutex_checks.h"
#include "grpcpp/grpcpp.h"
#include "proto/grpc_service.grpc.pb.h"

namespace graphserve {
namespace {

using Clock = std::chrono::steady_clock;
using inference::GRPCInferenceService;

// ---------------------------------------------------------------- server side

class CallbackLive final : public GRPCInferenceService::CallbackService {
 public:
  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context,
                                       const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(true);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// One ServerLive call on a completion queue: asked for, answered, deleted
// when the answer is written.
class QueuedLive {
 public:
  QueuedLive(GRPCInferenceService::AsyncService* service, grpc::ServerCompletionQueue* queue)
      : service_(service), queue_(queue), writer_(&context_) {
    service_->RequestServerLive(&context_, &request_, &writer_, queue_, queue_, this);
  }
  void Proceed() {
    if (answered_) {
      delete this;
      return;
    }
    new QueuedLive(service_, queue_);  // the next call on this queue
    response_.set_live(true);
    answered_ = true;
    writer_.Finish(response_, grpc::Status::OK, this);
  }

 private:
  GRPCInferenceService::AsyncService* const service_;
  grpc::ServerCompletionQueue* const queue_;
  grpc::ServerContext context_;
  inference::ServerLiveRequest request_;
  inference::ServerLiveResponse response_;
  grpc::ServerAsyncResponseWriter<inference::ServerLiveResponse> writer_;
  bool answered_ = false;
};

int Serve(const std::string& api, int64_t threads, const std::string& address) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  CallbackLive callback;
  GRPCInferenceService::AsyncService queued;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  if (api == "callback") {
    builder.RegisterService(&callback);
  } else {
    builder.RegisterService(&queued);
    for (int64_t i = 0; i < threads; ++i) queues.push_back(builder.AddCompletionQueue());
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    std::cerr << "grpc_path_bench: cannot listen on " << address << "\n";
    return 1;
  }
  std::vector<std::thread> pollers;
  for (const auto& queue : queues) {
    pollers.emplace_back([&queued, queue = queue.get()] {
      // Several calls asked for at once, so a burst of arrivals on this
      // queue need not wait for each re-request.
      for (int i = 0; i < 16; ++i) new QueuedLive(&queued, queue);
      void* tag = nullptr;
      bool ok = false;
      while (queue->Next(&tag, &ok)) static_cast<QueuedLive*>(tag)->Proceed();
    });
  }
  server->Wait();
  return 0;
}

// ------------------------------------------------------------------ load side

// The load's shared state. Latencies go to each call's own vector (a call
// has one RPC outstanding at a time), so recording takes no lock that the
// measured RPCs would queue on.
struct Recorder {
  std::atomic<int64_t> failures{0};
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};

  // Only answered RPCs count towards throughput and latency.
  void Record(Clock::time_point sent, bool ok, std::vector<int64_t>* latencies_ns) {
    if (!ok) {
      failures.fetch_add(1);
      return;
    }
    if (!measuring.load(std::memory_order_relaxed)) return;
    latencies_ns->push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - sent).count());
  }
};

std::vector<std::unique_ptr<GRPCInferenceService::Stub>> Connect(const std::string& address,
                                                                 int64_t channels) {
  std::vector<std::unique_ptr<GRPCInferenceService::Stub>> stubs;
  for (int64_t i = 0; i < channels; ++i) {
    grpc::ChannelArguments arguments;
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    stubs.push_back(GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments)));
  }
  return stubs;
}

// One outstanding RPC of the callback load: re-sends itself when answered.
struct CallbackCall {
  GRPCInferenceService::Stub* stub = nullptr;
  Recorder* recorder = nullptr;
  std::unique_ptr<grpc::ClientContext> context;
  inference::ServerLiveRequest request;
  inference::ServerLiveResponse response;
  Clock::time_point sent;
  std::vector<int64_t> latencies_ns;
  std::atomic<bool>* idle = nullptr;

  void Send() {
    context = std::make_unique<grpc::ClientContext>();
    sent = Clock::now();
    stub->async()->ServerLive(context.get(), &request, &response, [this](grpc::Status status) {
      recorder->Record(sent, status.ok(), &latencies_ns);
      if (recorder->stop.load()) {
        idle->store(true);
        return;
      }
      Send();
    });
  }
};

// One outstanding RPC of the queue load, tagged by itself.
struct QueuedCall {
  GRPCInferenceService::Stub* stub = nullptr;
  grpc::CompletionQueue* queue = nullptr;
  std::unique_ptr<grpc::ClientContext> context;
  inference::ServerLiveRequest request;
  inference::ServerLiveResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ServerLiveResponse>> reader;
  Clock::time_point sent;
  std::vector<int64_t> latencies_ns;

  void Send() {
    reader.reset();  // lives in the old call's arena, which the old context frees
    context = std::make_unique<grpc::ClientContext>();
    sent = Clock::now();
    reader = stub->AsyncServerLive(context.get(), request, queue);
    reader->Finish(&response, &status, this);
  }
};

int Load(const std::string& api, int64_t threads, int64_t channels, int64_t concurrency,
         int64_t milliseconds, const std::string& address) {
  std::vector<std::unique_ptr<GRPCInferenceService::Stub>> stubs = Connect(address, channels);
  Recorder recorder;
  std::vector<std::thread> workers;
  std::vector<std::unique_ptr<CallbackCall>> callback_calls;
  std::vector<std::unique_ptr<QueuedCall>> queued_calls;
  std::vector<std::atomic<bool>> idle(static_cast<size_t>(concurrency));
  if (api == "callback") {
    for (int64_t i = 0; i < concurrency; ++i) {
      auto call = std::make_unique<CallbackCall>();
      call->stub = stubs[static_cast<size_t>(i % channels)].get();
      call->recorder = &recorder;
      call->idle = &idle[static_cast<size_t>(i)];
      call->Send();
      callback_calls.push_back(std::move(call));
    }
  } else {
    for (int64_t i = 0; i < concurrency; ++i) queued_calls.push_back(std::make_unique<QueuedCall>());
    for (int64_t t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        grpc::CompletionQueue queue;
        std::vector<QueuedCall*> calls;
        for (int64_t i = t; i < concurrency; i += threads) {
          QueuedCall* call = queued_calls[static_cast<size_t>(i)].get();
          call->stub = stubs[static_cast<size_t>(i % channels)].get();
          call->queue = &queue;
          call->Send();
          calls.push_back(call);
        }
        size_t outstanding = calls.size();
        void* tag = nullptr;
        bool ok = false;
        while (outstanding > 0 && queue.Next(&tag, &ok)) {
          auto* call = static_cast<QueuedCall*>(tag);
          recorder.Record(call->sent, ok && call->status.ok(), &call->latencies_ns);
          if (recorder.stop.load()) {
            --outstanding;
          } else {
            call->Send();
          }
        }
        queue.Shutdown();
        while (queue.Next(&tag, &ok)) {
        }
      });
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // warm-up
  recorder.measuring = true;
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
  recorder.measuring = false;
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  recorder.stop = true;
  for (std::thread& worker : workers) worker.join();
  if (api == "callback") {
    for (std::atomic<bool>& done : idle) {
      while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  // Percentiles as graphserve-client perf takes them, so that the two read
  // side by side in serve_bench.
  std::vector<int64_t> latencies_ns;
  for (const auto& call : callback_calls) {
    latencies_ns.insert(latencies_ns.end(), call->latencies_ns.begin(), call->latencies_ns.end());
  }
  for (const auto& call : queued_calls) {
    latencies_ns.insert(latencies_ns.end(), call->latencies_ns.begin(), call->latencies_ns.end());
  }
  const LatencySummary latency = SummarizeLatencies(std::move(latencies_ns));
  std::cout << absl::StrFormat(
      "load=%s threads=%d channels=%d concurrency=%d rpcs_per_s=%.0f p50_us=%.1f p99_us=%.1f "
      "failures=%d\n",
      api, threads, channels, concurrency, latency.count / seconds, latency.p50_ns / 1e3,
      latency.p99_ns / 1e3, recorder.failures.load());
  return 0;
}

int Run(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: grpc_path_bench serve|load --help\n";
    return 1;
  }
  const std::string mode = argv[1];
  std::string api = "callback", address;
  int64_t threads = 8, channels = 16, concurrency = 64, milliseconds = 2000;
  CommandLine flags(
      "grpc_path_bench serve|load --api callback|queues --address HOST:PORT [--threads 8]\n"
      "                [--channels 16] [--concurrency 64] [--milliseconds 2000]\n\n"
      "Empty ServerLive RPCs over gRPC's callback API or completion queues.");
  flags.AddString("api", &api, "callback, or queues (completion queues, one thread each).");
  flags.AddString("address", &address, "Where to listen (serve) or connect (load); required.");
  flags.AddInt("threads", &threads, "Completion queues, one polling thread each (queues).");
  flags.AddInt("channels", &channels, "load: connections, each its own TCP connection.");
  flags.AddInt("concurrency", &concurrency, "load: RPCs kept outstanding.");
  flags.AddInt("milliseconds", &milliseconds, "load: measured time, after 0.5 s of warm-up.");
  if (absl::Status status = flags.Parse(argc - 1, argv + 1); !status.ok()) {
    std::cerr << "grpc_path_bench: " << status << "\n";
    return 1;
  }
  if (flags.help_requested()) {
    std::cout << flags.Help();
    return 0;
  }
  if (address.empty() || (api != "callback" && api != "queues") || threads < 1 || channels < 1 ||
      concurrency < 1) {
    std::cerr << "grpc_path_bench: --address is required, --api is callback or queues, and "
                 "--threads, --channels and --concurrency are at least 1\n";
    return 1;
  }
  if (mode == "serve") return Serve(api, threads, address);
  if (mode == "load") return Load(api, threads, channels, concurrency, milliseconds, address);
  std::cerr << "grpc_path_bench: the first argument is serve or load, not " << mode << "\n";
  return 1;
}

}  // namespace
}  // namespace graphserve

int main(int argc, char** argv) {
  graphserve::TurnOffMutexDeadlockDetection();  // Note [Abseil's deadlock detection]
  return graphserve::Run(argc, argv);
}
