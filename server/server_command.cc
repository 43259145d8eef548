#include "server/server_command.h"

#include <cstdint>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/command_line.h"
#include "common/gpu_wait.h"
#include "common/grpc_channel_args.h"
#include "common/status.h"

namespace graphserve {

namespace {

constexpr char kUsage[] =
    "graphserve [--model-repository DIR] [--grpc-port 8001] [--http-port 8000]\n"
    "           [--grpc-address unix:PATH] [--device auto|cuda|cuda:N|cpu]\n"
    "\n"
    "Serves every model of a model repository over the KServe v2 / Open Inference\n"
    "Protocol, gRPC and HTTP/REST (Triton's clients work unchanged):\n"
    "  DIR/<model>/config.pbtxt            the model config (graphserve-capture prepare\n"
    "                                      writes it; max_batch_size, inputs, outputs,\n"
    "                                      capture { batch_sizes streams cost })\n"
    "  DIR/<model>/<version>/model.onnx    the model\n"
    "Without --model-repository it serves the demo repository (the example models\n"
    "mlp and dlrm_dense), written to a scratch directory it names at startup.\n"
    "Before serving, every model's CUDA graphs are captured (one per captured batch\n"
    "size on each of its streams) and checked against an eager run; a startup table\n"
    "shows the result. A request is padded up to a captured size or split over\n"
    "several graphs, whichever the measured cost table says is cheaper. SIGTERM or\n"
    "Ctrl-C drains: health goes NOT_SERVING, new requests get UNAVAILABLE, accepted\n"
    "ones finish (up to --exit-timeout-secs), then the server exits 0.\n"
    "Health: grpc.health.v1; server reflection is on.\n"
    "Ports: a port another process holds is refused at startup with the address and\n"
    "the reason, and graphserve exits 1 (Triton's behaviour; gRPC and the HTTP library\n"
    "would otherwise share it and split the connections). --reuse-grpc-port and\n"
    "--reuse-http-port share a port on purpose. --grpc-address unix:PATH serves gRPC\n"
    "on a Unix domain socket as well as on TCP (clients connect to unix:PATH).";

// "auto" | "cuda" | "cuda:N" | "cpu" -> the executor and device.
absl::Status ResolveDevice(const std::string& device, int gpus_visible, std::ostream& notices,
                           ServedModelOptions* models) {
  if (device == "cpu") {
    models->executor = ExecutorKind::kHost;
    notices << "graphserve: --device cpu: serving on the HOST reference executor; no GPU, no "
               "CUDA graphs, for tests and trials only\n";
    return absl::OkStatus();
  }
  if (device == "auto") {
    if (gpus_visible > 0) {
      // Every visible GPU, for models whose config lists none.
      models->executor = ExecutorKind::kCuda;
      models->devices.clear();
      for (int gpu = 0; gpu < gpus_visible; ++gpu) models->devices.push_back(gpu);
      return absl::OkStatus();
    }
    models->executor = ExecutorKind::kHost;
    notices << "\n"
               "graphserve: *** NO CUDA GPU VISIBLE: serving on the HOST reference executor. ***\n"
               "graphserve: *** Results are correct but slow, and nothing runs as a CUDA graph. ***\n"
               "graphserve: *** Use --device cuda on a GPU machine (it fails loudly without one). ***\n\n";
    return absl::OkStatus();
  }
  int64_t ordinal = 0;
  if (device != "cuda" && !(absl::StartsWith(device, "cuda:") &&
                            absl::SimpleAtoi(device.substr(5), &ordinal) && ordinal >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device wants auto, cuda, cuda:N or cpu, got '", device, "'"));
  }
  if (ordinal >= gpus_visible) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device ", device, ": CUDA device ", ordinal, " is not visible (", gpus_visible,
        " found); use --device cpu to serve on the host executor"));
  }
  models->executor = ExecutorKind::kCuda;
  models->devices = {static_cast<int>(ordinal)};
  return absl::OkStatus();
}

absl::StatusOr<ModelControlMode> ParseModelControlMode(const std::string& mode) {
  if (mode == "none") return ModelControlMode::kNone;
  if (mode == "explicit") return ModelControlMode::kExplicit;
  if (mode == "poll") return ModelControlMode::kPoll;
  return absl::InvalidArgumentError(
      absl::StrCat("--model-control-mode wants none, explicit or poll, got '", mode, "'"));
}

// --grpc-address unix:PATH (or gRPC's unix:///PATH) -> PATH; "" -> "".
absl::StatusOr<std::string> UnixSocketPath(const std::string& address) {
  if (address.empty()) return std::string();
  constexpr absl::string_view kScheme = "unix:";
  absl::string_view path = address;
  if (!absl::ConsumePrefix(&path, kScheme) || path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-address wants unix:PATH (a Unix domain socket), got '", address, "'"));
  }
  // unix:///run/x.sock is gRPC's URI form of /run/x.sock.
  if (absl::StartsWith(path, "///")) path.remove_prefix(2);
  return std::string(path);
}

// InvalidArgument "--<flag> wants low..high, got value" unless it is within.
absl::Status CheckFlagRange(absl::string_view flag, int64_t value, int64_t low, int64_t high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " wants ", low, "..", high, ", got ", value));
}

// Two listeners on one port would refuse each other at startup; saying so
// here names both flags.
absl::Status CheckDistinctPorts(const InferenceServerOptions& options) {
  const std::vector<std::pair<const char*, int>> ports = {
      {"--grpc-port", options.grpc_port},
      {"--http-port", options.allow_http ? options.http_port : 0},
      {"--metrics-port", options.allow_metrics ? options.metrics_port : 0}};
  for (size_t i = 0; i < ports.size(); ++i) {
    for (size_t j = i + 1; j < ports.size(); ++j) {
      if (ports[i].second != 0 && ports[i].second == ports[j].second) {
        return absl::InvalidArgumentError(absl::StrCat(ports[i].first, " and ", ports[j].first,
                                                       " are both ", ports[i].second,
                                                       "; each listener needs a port of its own"));
      }
    }
  }
  return absl::OkStatus();
}

// The flags' values before they are checked and copied into the options.
struct FlagValues {
  explicit FlagValues(InferenceServerOptions* options)
      : options(options),
        port(options->grpc_port),
        http_port(options->http_port),
        metrics_port(options->metrics_port),
        exit_timeout(options->exit_timeout.count()),
        max_message_bytes(options->max_message_bytes),
        http_max_json_depth(options->http_max_json_depth),
        max_queued(static_cast<int64_t>(options->models.max_queued_chunks)),
        responder_threads(options->responder_threads),
        grpc_queues(options->grpc_queues),
        grpc_threads_per_queue(options->grpc_threads_per_queue),
        idle_spin_us(options->models.idle_spin.count()) {}
  InferenceServerOptions* options;
  std::string device = "auto";
  std::string grpc_address;
  std::string graphs = "on";
  int64_t port;
  int64_t http_port;
  int64_t metrics_port;
  int64_t exit_timeout;
  int64_t log_verbose = 0;
  int64_t max_message_bytes;
  int64_t http_max_json_depth;
  int64_t max_queued;
  int64_t responder_threads;
  int64_t grpc_queues;
  int64_t grpc_threads_per_queue;
  int64_t idle_spin_us;
  std::string model_control = "none";
  std::string load_models;
  int64_t repository_poll_secs = 15;
  std::string grpc_channel_args;
  std::string gpu_wait = "auto";
  // Triton's restricted APIs (server/restricted_api.h).
  std::string grpc_restricted;
  std::string http_restricted;
};

void AddFlags(FlagValues* v, CommandLine* flags) {
  InferenceServerOptions& options = *v->options;
  flags->AddString("model-repository", &options.model_repository,
                   "The model repository directory; without it, the demo repository.");
  flags->AddInt("grpc-port", &v->port, "gRPC port; 0 picks a free one (printed at startup).");
  flags->AddInt("http-port", &v->http_port,
                "KServe v2 HTTP/REST port; 0 picks a free one (printed at startup).");
  flags->AddBool("allow-http", &options.allow_http,
                 "Serve HTTP/REST beside gRPC; --allow-http=false for gRPC only.");
  flags->AddInt("metrics-port", &v->metrics_port,
                "Prometheus metrics port (GET /metrics); 0 picks a free one.");
  flags->AddBool("allow-metrics", &options.allow_metrics,
                 "Serve Prometheus metrics; --allow-metrics=false to turn them off.");
  flags->AddString("host", &options.host,
                   "Address to listen on: an address of this machine, or 0.0.0.0 / :: for all.");
  flags->AddBool("reuse-grpc-port", &options.reuse_grpc_port,
                 "Share the gRPC port with other processes that ask the same (SO_REUSEPORT; "
                 "the kernel splits connections between them). Without it a port in use is "
                 "refused.");
  flags->AddBool("reuse-http-port", &options.reuse_http_port,
                 "As --reuse-grpc-port, for the HTTP/REST port.");
  flags->AddString("grpc-address", &v->grpc_address,
                   "unix:PATH: serve gRPC on the Unix domain socket PATH as well as on TCP "
                   "(clients on this machine connect to unix:PATH). A stale socket file is "
                   "replaced; one where a server answers is refused.");
  flags->AddString("device", &v->device,
                   "auto (every visible GPU, else the host executor), cuda (GPU 0), cuda:N, "
                   "or cpu (the host reference executor). A model's config.pbtxt may place "
                   "it on GPUs of its own: instance_group { kind: KIND_GPU gpus: [0, 1] }.");
  flags->AddString("graphs", &v->graphs,
                   "on: replay CUDA graphs; off: run the same plans eagerly on the same "
                   "streams (for side-by-side measurement).");
  flags->AddBool("allow-tf32", &options.models.allow_tf32,
                 "TF32 tensor-core GEMMs and convolutions (faster; relative error near 3e-4).");
  flags->AddInt("max-queued-chunks", &v->max_queued,
                "Chunks per model that may wait for a free stream; beyond it requests get "
                "RESOURCE_EXHAUSTED.");
  flags->AddInt("idle-spin-us", &v->idle_spin_us,
                "Microseconds an idle stream worker or responder polls for work before it "
                "sleeps. Waking a sleeping thread costs tens of microseconds per request on a "
                "quiet server; a longer spin saves that at the price of idle CPU. 0: sleep at "
                "once; a request that finds a slot idle runs on its RPC thread and wakes no "
                "worker.");
  flags->AddBool("run-on-rpc-thread", &options.models.run_on_rpc_thread,
                 "A request that finds a stream slot idle runs on the thread that received it, "
                 "which also writes the response: no thread hand-off on a quiet server. Off: "
                 "every chunk runs on a stream worker; with --idle-spin-us 1000 that is the "
                 "lowest-latency setting (polling threads cost a core or two under load).");
  flags->AddString("gpu-wait", &v->gpu_wait,
                   absl::StrCat(
                       "How a stream worker waits for its chunk on the GPU: auto (sleep for "
                       "models whose smallest chunk takes ",
                       kSleepingWaitFromUs,
                       " us or more, whose spinning workers would hold cores gRPC's threads need; "
                       "otherwise CUDA's choice, a spin with more cores than GPUs), spin (on its "
                       "core: the soonest wake-up), yield (spin, giving the core to any other "
                       "thread that can run) or block (every model sleeps until the GPU signals: "
                       "no CPU while waiting, a wake-up some 15 us later)."));
  flags->AddInt("responder-threads", &v->responder_threads,
                "Threads that write inference responses, so GPU stream workers never do.");
  flags->AddInt("grpc-queues", &v->grpc_queues,
                "gRPC completion queues receiving ModelInfer, ModelStreamInfer and ServerLive "
                "calls.");
  flags->AddInt("grpc-threads-per-queue", &v->grpc_threads_per_queue,
                "Threads polling each gRPC completion queue. A request runs on its RPC thread "
                "(--run-on-rpc-thread) only while another thread keeps polling its queue, so "
                "1 hands every request to the stream workers.");
  flags->AddString("grpc-channel-args", &v->grpc_channel_args,
                   "NAME=VALUE,...: gRPC core channel arguments for the server's transport "
                   "(e.g. grpc.http2.lookahead_bytes=4194304), for tuning. A value of digits is "
                   "an integer, any other a string (no commas); gRPC ignores names it does not "
                   "know, and the message size limits come from --grpc-max-message-bytes.");
  flags->AddBool("pin-shared-memory", &options.pin_shared_memory,
                 "On GPUs, page-lock each system shared-memory region when it is registered, so "
                 "the GPU copies a request's tensors straight from and into it. This locks the "
                 "whole registered range in memory until it is unregistered.");
  flags->AddInt("grpc-max-message-bytes", &v->max_message_bytes,
                "Largest request or response; larger ones get RESOURCE_EXHAUSTED.");
  flags->AddInt("http-max-json-depth", &v->http_max_json_depth,
                "How deeply an HTTP/REST request's JSON may nest arrays and objects; deeper "
                "requests get 400 naming the limit.");
  flags->AddInt("exit-timeout-secs", &v->exit_timeout,
                "On SIGTERM, how long accepted requests may run; those still queued then are "
                "answered UNAVAILABLE.");
  flags->AddBool("exit-on-error", &options.exit_on_error,
                 "Exit when a model fails to load; --exit-on-error=false serves the others.");
  flags->AddString("model-control-mode", &v->model_control,
                   "none: load every model at start; explicit: load the --load-model models, "
                   "then load, reload and unload with RepositoryModelLoad/Unload (a reload "
                   "serves the old version until the new one is captured); poll: load every "
                   "model and follow the repository's changes every --repository-poll-secs.");
  flags->AddString("load-model", &v->load_models,
                   "With --model-control-mode=explicit: comma-separated models to load at "
                   "start, or * for all.");
  flags->AddInt("repository-poll-secs", &v->repository_poll_secs,
                "With --model-control-mode=poll: seconds between repository scans.");
  flags->AddInt("log-verbose", &v->log_verbose, "0: info; 1 or more: debug logging.");
  // Triton's restricted APIs: parsed by RestrictedApis in ParseServerCommand.
  flags->AddString("grpc-restricted-protocol", &v->grpc_restricted,
                   RestrictedApis::FlagHelp(RestrictedProtocol::kGrpc));
  flags->AddString("http-restricted-api", &v->http_restricted,
                   RestrictedApis::FlagHelp(RestrictedProtocol::kHttp));
}

}  // namespace

std::string ServerUsage() {
  InferenceServerOptions options;
  FlagValues values(&options);
  CommandLine flags(kUsage);
  AddFlags(&values, &flags);
  return flags.Help();
}

absl::StatusOr<ServerCommand> ParseServerCommand(const std::vector<std::string>& args,
                                                 int gpus_visible, std::ostream& notices) {
  ServerCommand command;
  InferenceServerOptions& options = command.options;
  FlagValues v(&options);
  CommandLine flags(kUsage);
  AddFlags(&v, &flags);

  std::vector<const char*> argv = {"graphserve"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  RETURN_IF_ERROR(flags.Parse(static_cast<int>(argv.size()), argv.data()));
  if (flags.help_requested()) {
    command.help = true;
    return command;
  }
  command.serve_demo = options.model_repository.empty();
  RETURN_IF_ERROR(CheckFlagRange("grpc-port", v.port, 0, 65535));
  if (v.exit_timeout < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--exit-timeout-secs wants a value >= 0, got ", v.exit_timeout));
  }
  RETURN_IF_ERROR(
      CheckFlagRange("grpc-max-message-bytes", v.max_message_bytes, 1024, (int64_t{1} << 31) - 1));
  if (v.max_queued < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-queued-chunks wants a value >= 1, got ", v.max_queued));
  }
  RETURN_IF_ERROR(CheckFlagRange("responder-threads", v.responder_threads, 1, 256));
  options.responder_threads = static_cast<int>(v.responder_threads);
  RETURN_IF_ERROR(CheckFlagRange("grpc-queues", v.grpc_queues, 1, 64));
  RETURN_IF_ERROR(CheckFlagRange("grpc-threads-per-queue", v.grpc_threads_per_queue, 1, 16));
  options.grpc_queues = static_cast<int>(v.grpc_queues);
  options.grpc_threads_per_queue = static_cast<int>(v.grpc_threads_per_queue);
  ASSIGN_OR_RETURN(options.grpc_channel_args, ParseGrpcChannelArgs(v.grpc_channel_args));
  RETURN_IF_ERROR(CheckFlagRange("idle-spin-us", v.idle_spin_us, 0, 1'000'000));
  absl::StatusOr<GpuWait> gpu_wait = ParseGpuWait(v.gpu_wait);
  if (!gpu_wait.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--gpu-wait: ", gpu_wait.status().message()));
  }
  options.models.gpu_wait = *gpu_wait;
  options.models.idle_spin = std::chrono::microseconds(v.idle_spin_us);
  if (v.graphs != "on" && v.graphs != "off") {
    return absl::InvalidArgumentError(absl::StrCat("--graphs wants on or off, got '", v.graphs, "'"));
  }
  options.grpc_port = static_cast<int>(v.port);
  RETURN_IF_ERROR(CheckFlagRange("http-port", v.http_port, 0, 65535));
  options.http_port = static_cast<int>(v.http_port);
  RETURN_IF_ERROR(CheckFlagRange("metrics-port", v.metrics_port, 0, 65535));
  options.metrics_port = static_cast<int>(v.metrics_port);
  RETURN_IF_ERROR(CheckDistinctPorts(options));
  ASSIGN_OR_RETURN(options.grpc_unix_socket, UnixSocketPath(v.grpc_address));
  options.exit_timeout = std::chrono::seconds(v.exit_timeout);
  options.max_message_bytes = static_cast<int>(v.max_message_bytes);
  RETURN_IF_ERROR(CheckFlagRange("http-max-json-depth", v.http_max_json_depth, 1, 4096));
  options.http_max_json_depth = static_cast<int>(v.http_max_json_depth);
  options.models.max_queued_chunks = static_cast<size_t>(v.max_queued);
  options.models.graphs = v.graphs == "on";
  ASSIGN_OR_RETURN(options.model_control, ParseModelControlMode(v.model_control));
  if (!v.load_models.empty() && options.model_control != ModelControlMode::kExplicit) {
    return absl::InvalidArgumentError(
        "--load-model needs --model-control-mode=explicit (the other modes load every model)");
  }
  options.load_models = absl::StrSplit(v.load_models, ',', absl::SkipEmpty());
  if (v.repository_poll_secs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--repository-poll-secs wants a value >= 1, got ", v.repository_poll_secs));
  }
  options.repository_poll = std::chrono::seconds(v.repository_poll_secs);
  command.verbose = v.log_verbose > 0;
  // One group per flag for now: CommandLine keeps a repeated flag's last value.
  const auto specs = [](const std::string& spec) {
    return spec.empty() ? std::vector<std::string>() : std::vector<std::string>{spec};
  };
  ASSIGN_OR_RETURN(options.grpc_restricted,
                   RestrictedApis::Parse(RestrictedProtocol::kGrpc, specs(v.grpc_restricted)));
  ASSIGN_OR_RETURN(options.http_restricted,
                   RestrictedApis::Parse(RestrictedProtocol::kHttp, specs(v.http_restricted)));
  RETURN_IF_ERROR(ResolveDevice(v.device, gpus_visible, notices, &options.models));
  return command;
}

}  // namespace graphserve
