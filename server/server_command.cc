#include "server/server_command.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/command_line.h"
#include "common/gpu_wait.h"
#include "common/grpc_channel_args.h"
#include "common/logging.h"
#include "common/status.h"
#include "server/request_framing.h"
#include "server/shared_memory_guard.h"
#include "server/triton_flags.h"

namespace graphserve {

namespace {

constexpr char kUsage[] =
    "graphserve [--model-repository DIR]... [--grpc-port 8001] [--http-port 8000]\n"
    "           [--grpc-address IP|unix:PATH] [--device auto|cuda|cuda:N|cpu]\n"
    "\n"
    "Serves every model of a model repository over the KServe v2 / Open Inference\n"
    "Protocol, gRPC and HTTP/REST (Triton's clients work unchanged):\n"
    "  DIR/<model>/config.pbtxt            the model config (graphserve-capture prepare\n"
    "                                      writes it; max_batch_size, inputs, outputs,\n"
    "                                      capture { batch_sizes streams cost })\n"
    "  DIR/<model>/<version>/model.onnx    the model\n"
    "--model-repository may be given several times (a model name must be unique\n"
    "across them). Without it graphserve serves the demo repository (the example models\n"
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
    "on a Unix domain socket as well as on TCP (clients connect to unix:PATH).\n"
    "Triton's command line works unchanged: every tritonserver flag is accepted,\n"
    "with Triton's meaning where graphserve has the feature (server/triton_flags.cc\n"
    "says what each one does here).";

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
  // Any case, as Triton reads it.
  const std::string lower = absl::AsciiStrToLower(mode);
  if (lower == "none") return ModelControlMode::kNone;
  if (lower == "explicit") return ModelControlMode::kExplicit;
  if (lower == "poll") return ModelControlMode::kPoll;
  return absl::InvalidArgumentError(
      absl::StrCat("--model-control-mode wants none, explicit or poll, got '", mode, "'"));
}

// An address a TCP listener binds, as Triton's --grpc-address,
// --http-address and --metrics-address take it: an IP address (0.0.0.0,
// 127.0.0.1, ::, [::1]) or a name of this machine; the port is a flag of its
// own. Whether it is an address of this machine is checked at startup
// (CheckCanListen), naming the flag.
absl::Status CheckListenHost(absl::string_view flag, const std::string& host,
                             absl::string_view other_forms) {
  const bool host_and_port = std::count(host.begin(), host.end(), ':') == 1;
  const bool bad = host.empty() || host_and_port || host.find('/') != std::string::npos ||
                   std::any_of(host.begin(), host.end(), [](char c) {
                     return absl::ascii_isspace(static_cast<unsigned char>(c));
                   });
  if (!bad) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, " wants an IP address such as 0.0.0.0, 127.0.0.1 or ::",
                   other_forms, ", got '", host, "'",
                   host_and_port ? " (the port is a flag of its own)" : ""));
}

// --grpc-address: unix:PATH (or gRPC's unix:///PATH) adds a Unix domain
// socket beside TCP; anything else is the address TCP binds.
absl::Status ParseGrpcAddress(const std::string& address, InferenceServerOptions* options) {
  if (address.empty()) return absl::OkStatus();
  constexpr absl::string_view kScheme = "unix:";
  absl::string_view path = address;
  if (!absl::ConsumePrefix(&path, kScheme)) {
    RETURN_IF_ERROR(CheckListenHost("grpc-address", address, " (or unix:PATH)"));
    options->grpc_host = address;
    return absl::OkStatus();
  }
  if (path.empty()) {
    return absl::InvalidArgumentError("--grpc-address unix: wants a path, e.g. unix:/run/gs.sock");
  }
  // unix:///run/x.sock is gRPC's URI form of /run/x.sock.
  if (absl::StartsWith(path, "///")) path.remove_prefix(2);
  options->grpc_unix_socket = std::string(path);
  return absl::OkStatus();
}

absl::StatusOr<int> ParseCompressionLevel(const std::string& level) {
  // GRPC_COMPRESS_LEVEL_NONE .. _HIGH, as Triton maps its names.
  const std::string lower = absl::AsciiStrToLower(level);
  if (lower == "none") return 0;
  if (lower == "low") return 1;
  if (lower == "medium") return 2;
  if (lower == "high") return 3;
  return absl::InvalidArgumentError(absl::StrCat(
      "--grpc-infer-response-compression-level wants none, low, medium or high, got '", level,
      "'"));
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
        metrics_interval_ms(absl::ToDoubleMilliseconds(options->metrics.interval)),
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
  double metrics_interval_ms;
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
  std::vector<std::string> repositories;
  std::vector<std::string> load_models;
  int64_t repository_poll_secs = 15;
  std::string grpc_channel_args;
  std::string gpu_wait = "auto";
  // Triton's flags (server/triton_flags.h).
  bool disable_auto_complete_config = false;
  bool strict_model_config = false;
  std::string http_address;
  std::string metrics_address;
  int64_t http_threads = 32;
  int64_t http_max_connections = 1024;
  int64_t grpc_max_open_streams = 4096;
  int64_t shared_memory_max_regions = 1024;
  int64_t grpc_max_stream_owed_bytes = int64_t{64} << 20;
  int64_t http_read_timeout_secs = 5;
  int64_t http_max_input_size = int64_t{64} << 20;
  int64_t http_max_header_size = kDefaultMaxHeaderBytes;
  int64_t grpc_infer_threads = 2;
  bool grpc_use_ssl = false;
  bool grpc_use_ssl_mutual = false;
  std::string compression_level = "none";
  bool allow_client_shm = true;
  bool log_info = true;
  bool log_warning = true;
  bool log_error = true;
  std::string log_format = "default";
  // Triton's gRPC keepalive and HTTP/2 flags: each given one becomes the
  // gRPC core argument it names, as Triton's server sets it.
  struct GrpcArgFlag {
    const char* flag;
    const char* arg;  // gRPC's name (grpc/impl/channel_arg_names.h)
    int64_t value = 0;
  };
  std::array<GrpcArgFlag, 7> grpc_int_args = {{
      {"grpc-keepalive-time", "grpc.keepalive_time_ms"},
      {"grpc-keepalive-timeout", "grpc.keepalive_timeout_ms"},
      {"grpc-http2-max-pings-without-data", "grpc.http2.max_pings_without_data"},
      {"grpc-http2-min-recv-ping-interval-without-data",
       "grpc.http2.min_ping_interval_without_data_ms"},
      {"grpc-http2-max-ping-strikes", "grpc.http2.max_ping_strikes"},
      {"grpc-max-connection-age", "grpc.max_connection_age_ms"},
      {"grpc-max-connection-age-grace", "grpc.max_connection_age_grace_ms"},
  }};
  bool keepalive_permit_without_calls = false;
  // Where the ignored flags' values go (checked by kind, then dropped);
  // deques, so the addresses handed to CommandLine stay put.
  std::deque<std::string> ignored_strings;
  std::deque<int64_t> ignored_ints;
  std::deque<double> ignored_doubles;
  std::deque<bool> ignored_bools;
  // Triton's restricted APIs (server/restricted_api.h), one group per
  // occurrence of the flag.
  std::vector<std::string> grpc_restricted;
  std::vector<std::string> http_restricted;
};

// Registers each of Triton's flags that does not apply here (Note [Triton's
// flags]), by the kind of its value, out of the flag list of --help.
void AddIgnoredTritonFlags(FlagValues* v, CommandLine* flags) {
  for (const TritonFlag& triton : TritonFlags()) {
    if (triton.use != TritonFlagUse::kIgnored) continue;
    const std::string name(triton.name);
    const std::string help(triton.what);
    if (triton.value == "<boolean>" || triton.value == "<none>") {
      flags->AddBool(name, &v->ignored_bools.emplace_back(), help);
    } else if (triton.value == "<integer>") {
      flags->AddInt(name, &v->ignored_ints.emplace_back(), help);
    } else if (triton.value == "<float>") {
      flags->AddDouble(name, &v->ignored_doubles.emplace_back(), help);
    } else {
      flags->AddString(name, &v->ignored_strings.emplace_back(), help);
    }
    flags->Hide(name);
  }
}

void AddFlags(FlagValues* v, ServerCommand* command, CommandLine* flags) {
  InferenceServerOptions& options = *v->options;
  flags->AddStringList("model-repository", &v->repositories,
                       "A model repository directory; give it again for more (a model name must "
                       "be unique across them). Without it, the demo repository.");
  flags->AddAlias("model-store", "model-repository");
  flags->AddInt("grpc-port", &v->port, "gRPC port; 0 picks a free one (printed at startup).");
  flags->AddInt("http-port", &v->http_port,
                "KServe v2 HTTP/REST port; 0 picks a free one (printed at startup).");
  flags->AddBool("allow-http", &options.allow_http,
                 "Serve HTTP/REST beside gRPC; --allow-http=false for gRPC only.");
  flags->AddInt("metrics-port", &v->metrics_port,
                "Prometheus metrics port (GET /metrics); 0 picks a free one.");
  flags->AddBool("allow-metrics", &options.allow_metrics,
                 "Serve Prometheus metrics; --allow-metrics=false to turn them off.");
  flags->AddBool("allow-cpu-metrics", &options.metrics.allow_cpu_metrics,
                 "Export the host's CPU utilization and memory (nv_cpu_*) with the metrics.");
  flags->AddDouble("metrics-interval-ms", &v->metrics_interval_ms,
                   "The shortest window nv_cpu_utilization is measured over, in ms; the other "
                   "metrics are read when they are scraped.");
  flags->AddString("host", &options.host,
                   "Address to listen on where --grpc-address, --http-address or "
                   "--metrics-address does not say: an address of this machine, or 0.0.0.0 / "
                   ":: for all.");
  flags->AddBool("reuse-grpc-port", &options.reuse_grpc_port,
                 "Share the gRPC port with other processes that ask the same (SO_REUSEPORT; "
                 "the kernel splits connections between them). Without it a port in use is "
                 "refused.");
  flags->AddBool("reuse-http-port", &options.reuse_http_port,
                 "As --reuse-grpc-port, for the HTTP/REST port.");
  flags->AddString("grpc-address", &v->grpc_address,
                   "The IP address gRPC binds (e.g. 127.0.0.1; default: --host). unix:PATH "
                   "instead serves gRPC on the Unix domain socket PATH as well as on TCP "
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
  flags->AddInt("shared-memory-max-regions", &v->shared_memory_max_regions,
                "System and CUDA shared-memory regions registered at once, all "
                "clients (and "
                "every graphserve-shared-memory-owner) together; one more is "
                "refused with "
                "RESOURCE_EXHAUSTED until some are unregistered. Each system "
                "region holds a "
                "mapping and a file descriptor.");
  flags->AddBool("shared-memory-owner-required", &options.shared_memory_owner_required,
                 "Refuse shared-memory registrations without the graphserve-shared-memory-owner "
                 "header (PERMISSION_DENIED), so that every client's regions are its own; "
                 "clients send a secret of their choosing with each call.");
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
  flags->AddStringList("load-model", &v->load_models,
                       "With --model-control-mode=explicit: a model to load at start (give it "
                       "again, or a comma-separated list, for more), or * for all.");
  flags->AddInt("repository-poll-secs", &v->repository_poll_secs,
                "With --model-control-mode=poll: seconds between repository scans.");
  flags->AddBool("disable-auto-complete-config", &v->disable_auto_complete_config,
                 "Every model needs a config.pbtxt that declares its inputs and outputs; "
                 "nothing is completed from the model file.");
  flags->AddBool("strict-model-config", &v->strict_model_config,
                 "true: as --disable-auto-complete-config (Triton's older name).");
  flags->AddString("model-config-name", &options.repository_read.config_name,
                   "Read each model's configs/NAME.pbtxt where it exists instead of its "
                   "config.pbtxt (one repository for several kinds of machine).");
  // Logging (Triton's flags).
  flags->AddInt("log-verbose", &v->log_verbose, "0: info; 1 or more: debug logging.");
  flags->AddBool("log-info", &v->log_info, "Log info messages.");
  flags->AddBool("log-warning", &v->log_warning, "Log warnings.");
  flags->AddBool("log-error", &v->log_error, "Log errors.");
  flags->AddString("log-format", &v->log_format,
                   "default, or ISO8601 (\"2026-01-31T12:00:00Z I message\", UTC).");
  flags->AddString("log-file", &command->logging.file,
                   "Append the log to this file instead of writing it to stdout.");
  // Listeners (Triton's flags; Note [Listen addresses] in inference_server.cc).
  flags->AddBool("allow-grpc", &options.allow_grpc,
                 "Serve gRPC; --allow-grpc=false serves HTTP/REST alone.");
  flags->AddString("http-address", &v->http_address,
                   "The IP address HTTP/REST binds (e.g. 127.0.0.1; default: --host).");
  flags->AddString("metrics-address", &v->metrics_address,
                   "The IP address metrics bind (default: --http-address, else --host).");
  flags->AddInt("http-thread-count", &v->http_threads, "Threads serving HTTP requests at once.");
  flags->AddInt("grpc-max-open-streams", &v->grpc_max_open_streams,
                "ModelStreamInfer streams open at once; one more is refused RESOURCE_EXHAUSTED.");
  flags->AddInt("grpc-max-stream-owed-bytes", &v->grpc_max_stream_owed_bytes,
                "Bytes of answers a ModelStreamInfer stream may owe a client that does not read "
                "them before it stops reading the client's requests.");
  flags->AddInt("http-max-connections", &v->http_max_connections,
                "HTTP connections served at once (each holds a thread while open; threads "
                "start as connections need them); later ones wait until one closes.");
  flags->AddInt("http-read-timeout-secs", &v->http_read_timeout_secs,
                "Seconds an HTTP connection may stay silent mid-request or between requests "
                "before it is closed.");
  flags->AddInt("http-max-input-size", &v->http_max_input_size,
                "Largest HTTP request body in bytes; larger ones get 413.");
  flags->AddInt("http-max-header-size", &v->http_max_header_size,
                "Largest HTTP request line and header fields together, in bytes (1024 to "
                "16 MiB); larger ones get 431.");
  flags->AddInt("grpc-infer-thread-count", &v->grpc_infer_threads,
                "Threads polling gRPC's inference completion queues (2..128); sets "
                "--grpc-queues to this over --grpc-threads-per-queue unless it is given.");
  flags->AddString("grpc-infer-response-compression-level", &v->compression_level,
                   "none, low, medium or high: compress gRPC responses (with an algorithm "
                   "the client accepts); also accepts compressed requests, as "
                   "--grpc-accept-compressed-requests does.");
  flags->AddBool("grpc-accept-compressed-requests", &options.grpc_accept_compressed_requests,
                 "Inflate gzip- and deflate-compressed gRPC requests. Off (the default) they "
                 "are refused UNIMPLEMENTED: gRPC inflates a message whole before the size "
                 "limit applies, so a small one can take gigabytes.");
  for (FlagValues::GrpcArgFlag& arg : v->grpc_int_args) {
    flags->AddInt(arg.flag, &arg.value,
                  absl::StrCat("Sets gRPC's ", arg.arg, " (Triton's flag; unset: gRPC's default)."));
  }
  flags->AddBool("grpc-keepalive-permit-without-calls", &v->keepalive_permit_without_calls,
                 "Sets gRPC's grpc.keepalive_permit_without_calls (Triton's flag).");
  // gRPC over TLS (Note [gRPC over TLS] in inference_server.cc).
  flags->AddBool("grpc-use-ssl", &v->grpc_use_ssl,
                 "Serve gRPC over TLS with --grpc-server-cert and --grpc-server-key.");
  flags->AddBool("grpc-use-ssl-mutual", &v->grpc_use_ssl_mutual,
                 "Serve gRPC over TLS and require each client's certificate, signed by "
                 "--grpc-root-cert; a client without one is refused.");
  flags->AddString("grpc-server-cert", &options.grpc_tls.server_cert,
                   "PEM file of the server's certificate (chain).");
  flags->AddString("grpc-server-key", &options.grpc_tls.server_key,
                   "PEM file of the server's private key.");
  flags->AddString("grpc-root-cert", &options.grpc_tls.root_cert,
                   "PEM file of the CA that signs client certificates (--grpc-use-ssl-mutual).");
  flags->AddBool("allow-client-shm", &v->allow_client_shm,
                 "Clients may register system and CUDA shared memory (graphserve's default; "
                 "false is refused until graphserve can turn it off).");
  AddIgnoredTritonFlags(v, flags);
  // Triton's restricted APIs: parsed by RestrictedApis in ParseServerCommand.
  flags->AddStringList("grpc-restricted-protocol", &v->grpc_restricted,
                       RestrictedApis::FlagHelp(RestrictedProtocol::kGrpc));
  flags->AddStringList("http-restricted-api", &v->http_restricted,
                       RestrictedApis::FlagHelp(RestrictedProtocol::kHttp));
}

// --help's section on Triton's flags that do not apply: their names,
// wrapped, rather than forty entries.
std::string IgnoredFlagsHelp() {
  std::string text =
      "\nTriton flags that do not apply to graphserve (accepted, each logging one line that "
      "says why;\nserver/triton_flags.cc lists every Triton flag and what graphserve does with "
      "it):\n";
  std::string line = " ";
  for (const TritonFlag& triton : TritonFlags()) {
    if (triton.use != TritonFlagUse::kIgnored) continue;
    const std::string word = absl::StrCat(" --", triton.name);
    if (line.size() + word.size() > 88) {
      absl::StrAppend(&text, line, "\n");
      line = " ";
    }
    absl::StrAppend(&line, word);
  }
  return absl::StrCat(text, line, "\n");
}

// The log flags -> LoggingOptions.
absl::Status ParseLogging(const FlagValues& v, LoggingOptions* logging) {
  if (v.log_verbose < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-verbose wants a value >= 0, got ", v.log_verbose));
  }
  logging->verbose = static_cast<int>(std::min<int64_t>(v.log_verbose, 1000));
  logging->info = v.log_info;
  logging->warning = v.log_warning;
  logging->error = v.log_error;
  if (v.log_format == "default") {
    logging->format = LogFormat::kDefault;
  } else if (v.log_format == "ISO8601") {
    logging->format = LogFormat::kIso8601;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-format wants default or ISO8601, got '", v.log_format, "'"));
  }
  return absl::OkStatus();
}

// Triton's TLS flags -> options.grpc_tls, refusing a combination that would
// serve something other than what was asked.
absl::Status ParseGrpcTls(const FlagValues& v, const CommandLine& flags,
                          InferenceServerOptions* options, std::vector<std::string>* warnings) {
  GrpcTlsOptions& tls = options->grpc_tls;
  tls.mutual = v.grpc_use_ssl_mutual;
  tls.enabled = v.grpc_use_ssl || v.grpc_use_ssl_mutual;  // mutual implies TLS, as in Triton
  if (!tls.enabled) {
    for (const char* file_flag : {"grpc-server-cert", "grpc-server-key", "grpc-root-cert"}) {
      if (flags.Given(file_flag)) {
        warnings->push_back(absl::StrCat("--", file_flag,
                                         " is given without --grpc-use-ssl or "
                                         "--grpc-use-ssl-mutual: gRPC serves WITHOUT TLS"));
      }
    }
    return absl::OkStatus();
  }
  const char* asked = tls.mutual ? "--grpc-use-ssl-mutual" : "--grpc-use-ssl";
  if (tls.server_cert.empty() || tls.server_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(asked, " needs --grpc-server-cert and --grpc-server-key (PEM files)"));
  }
  if (tls.mutual && tls.root_cert.empty()) {
    return absl::InvalidArgumentError(
        "--grpc-use-ssl-mutual needs --grpc-root-cert, the CA that signs client certificates");
  }
  return absl::OkStatus();
}

}  // namespace

std::string ServerUsage() {
  ServerCommand command;
  FlagValues values(&command.options);
  CommandLine flags(kUsage);
  AddFlags(&values, &command, &flags);
  return flags.Help() + IgnoredFlagsHelp();
}

absl::StatusOr<ServerCommand> ParseServerCommand(const std::vector<std::string>& args,
                                                 int gpus_visible, std::ostream& notices) {
  ServerCommand command;
  InferenceServerOptions& options = command.options;
  FlagValues v(&options);
  CommandLine flags(kUsage);
  AddFlags(&v, &command, &flags);

  std::vector<const char*> argv = {"graphserve"};
  for (const std::string& arg : args) {
    // A Triton flag that guards security and is not implemented yet is
    // refused by name, never ignored (Note [Triton's flags]).
    absl::string_view name = arg;
    if (absl::ConsumePrefix(&name, "--")) name = name.substr(0, name.find('='));
    const TritonFlag* triton = FindTritonFlag(name);
    if (triton != nullptr && triton->use == TritonFlagUse::kNotYet && !flags.Has(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " is not supported by graphserve yet (", triton->what, ")"));
    }
    argv.push_back(arg.c_str());
  }
  RETURN_IF_ERROR(flags.Parse(static_cast<int>(argv.size()), argv.data()));
  if (flags.help_requested()) {
    command.help = true;
    return command;
  }
  options.model_repositories = v.repositories;
  command.serve_demo = options.model_repositories.empty();
  for (const TritonFlag& triton : TritonFlags()) {
    if (triton.use == TritonFlagUse::kIgnored && flags.Given(triton.name)) {
      command.ignored_flags.push_back(IgnoredFlagNotice(triton));
    }
  }
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
  if (!(v.metrics_interval_ms > 0)) {  // NaN too
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-interval-ms wants a positive number, got ", v.metrics_interval_ms));
  }
  options.metrics.interval = absl::Milliseconds(v.metrics_interval_ms);
  RETURN_IF_ERROR(CheckDistinctPorts(options));
  RETURN_IF_ERROR(ParseGrpcAddress(v.grpc_address, &options));
  if (!v.http_address.empty() || flags.Given("http-address")) {
    RETURN_IF_ERROR(CheckListenHost("http-address", v.http_address, ""));
    options.http_host = v.http_address;
  }
  if (!v.metrics_address.empty() || flags.Given("metrics-address")) {
    RETURN_IF_ERROR(CheckListenHost("metrics-address", v.metrics_address, ""));
    options.metrics_host = v.metrics_address;
  }
  RETURN_IF_ERROR(CheckFlagRange("http-thread-count", v.http_threads, 1, 1024));
  options.http_threads = static_cast<int>(v.http_threads);
  RETURN_IF_ERROR(CheckFlagRange("grpc-max-open-streams", v.grpc_max_open_streams, 1, 1 << 20));
  options.grpc_stream_limits.max_open_streams = static_cast<int>(v.grpc_max_open_streams);
  RETURN_IF_ERROR(CheckFlagRange("grpc-max-stream-owed-bytes", v.grpc_max_stream_owed_bytes, 1,
                                 int64_t{1} << 40));
  options.grpc_stream_limits.max_owed_bytes = v.grpc_max_stream_owed_bytes;
  RETURN_IF_ERROR(CheckFlagRange("http-max-connections", v.http_max_connections, 1, 65536));
  options.http_max_connections = static_cast<int>(v.http_max_connections);
  RETURN_IF_ERROR(CheckFlagRange("http-read-timeout-secs", v.http_read_timeout_secs, 1, 3600));
  options.http_read_timeout_secs = static_cast<int>(v.http_read_timeout_secs);
  if (v.http_max_input_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-max-input-size wants a byte count > 0, got ", v.http_max_input_size));
  }
  options.http_max_input_bytes = v.http_max_input_size;
  RETURN_IF_ERROR(CheckFlagRange("http-max-header-size", v.http_max_header_size, 1024, 16 << 20));
  options.http_max_header_bytes = v.http_max_header_size;
  if (flags.Given("grpc-infer-thread-count")) {
    RETURN_IF_ERROR(CheckFlagRange("grpc-infer-thread-count", v.grpc_infer_threads, 2, 128));
    if (!flags.Given("grpc-queues")) {
      // Triton's count is threads; here threads poll per queue.
      const int64_t per_queue = options.grpc_threads_per_queue;
      options.grpc_queues = static_cast<int>(
          std::clamp<int64_t>((v.grpc_infer_threads + per_queue - 1) / per_queue, 1, 64));
    }
  }
  ASSIGN_OR_RETURN(options.grpc_compression_level, ParseCompressionLevel(v.compression_level));
  // Triton's keepalive flags first, so that --grpc-channel-args can still
  // say otherwise.
  std::vector<GrpcChannelArg> triton_args;
  for (const FlagValues::GrpcArgFlag& arg : v.grpc_int_args) {
    if (!flags.Given(arg.flag)) continue;
    RETURN_IF_ERROR(CheckFlagRange(arg.flag, arg.value, 0, std::numeric_limits<int>::max()));
    triton_args.push_back({arg.arg, static_cast<int>(arg.value)});
  }
  if (flags.Given("grpc-keepalive-permit-without-calls")) {
    triton_args.push_back(
        {"grpc.keepalive_permit_without_calls", v.keepalive_permit_without_calls ? 1 : 0});
  }
  options.grpc_channel_args.insert(options.grpc_channel_args.begin(), triton_args.begin(),
                                   triton_args.end());
  RETURN_IF_ERROR(ParseGrpcTls(v, flags, &options, &command.warnings));
  if (!v.allow_client_shm) {
    return absl::InvalidArgumentError(
        "--allow-client-shm=false is not supported by graphserve yet: clients may always "
        "register shared memory; leave the flag out or set it true");
  }
  RETURN_IF_ERROR(CheckFlagRange("shared-memory-max-regions", v.shared_memory_max_regions, 1,
                                 GuardedMapping::kCapacity));
  options.shared_memory_max_regions = static_cast<int>(v.shared_memory_max_regions);
  options.exit_timeout = std::chrono::seconds(v.exit_timeout);
  options.max_message_bytes = static_cast<int>(v.max_message_bytes);
  RETURN_IF_ERROR(CheckFlagRange("http-max-json-depth", v.http_max_json_depth, 1, 4096));
  options.http_max_json_depth = static_cast<int>(v.http_max_json_depth);
  options.models.max_queued_chunks = static_cast<size_t>(v.max_queued);
  options.models.graphs = v.graphs == "on";
  ASSIGN_OR_RETURN(options.model_control, ParseModelControlMode(v.model_control));
  // Repeated, as Triton's; each may also be a comma-separated list.
  for (const std::string& models : v.load_models) {
    for (absl::string_view model : absl::StrSplit(models, ',', absl::SkipEmpty())) {
      if (std::find(options.load_models.begin(), options.load_models.end(), model) ==
          options.load_models.end()) {
        options.load_models.emplace_back(model);
      }
    }
  }
  if (options.load_models.size() > 1 &&
      std::find(options.load_models.begin(), options.load_models.end(), "*") !=
          options.load_models.end()) {
    return absl::InvalidArgumentError(
        "--load-model=* loads every model and must be the only --load-model (Triton's rule)");
  }
  if (!options.load_models.empty() && options.model_control != ModelControlMode::kExplicit) {
    // Triton ignores it then; say so rather than refuse a Triton command line.
    command.warnings.push_back(
        "--load-model applies only with --model-control-mode=explicit; every model loads");
    options.load_models.clear();
  }
  if (flags.Given("model-config-name")) {
    const std::string& name = options.repository_read.config_name;
    if (name.empty() || name.find('/') != std::string::npos || name.find(' ') != std::string::npos ||
        name == "." || name == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model-config-name wants a file name without spaces or '/' (configs/NAME.pbtxt), "
          "got '",
          name, "'"));
    }
  }
  // --strict-model-config=false is Triton's default, auto-complete on.
  options.repository_read.auto_complete_config =
      !(v.disable_auto_complete_config || v.strict_model_config);
  if (v.repository_poll_secs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--repository-poll-secs wants a value >= 1, got ", v.repository_poll_secs));
  }
  options.repository_poll = std::chrono::seconds(v.repository_poll_secs);
  RETURN_IF_ERROR(ParseLogging(v, &command.logging));
  ASSIGN_OR_RETURN(options.grpc_restricted,
                   RestrictedApis::Parse(RestrictedProtocol::kGrpc, v.grpc_restricted));
  ASSIGN_OR_RETURN(options.http_restricted,
                   RestrictedApis::Parse(RestrictedProtocol::kHttp, v.http_restricted));
  RETURN_IF_ERROR(ResolveDevice(v.device, gpus_visible, notices, &options.models));
  return command;
}

}  // namespace graphserve
