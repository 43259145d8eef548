#include "server/triton_flags.h"

#include "absl/strings/str_cat.h"

namespace graphserve {

namespace {

using enum TritonFlagUse;

// Reasons shared by several rows.
constexpr char kNoBackends[] =
    "it runs ONNX models on its own runtime, with no backend libraries";
constexpr char kNoSageMaker[] = "it serves KServe v2 over gRPC and HTTP, not SageMaker's API";
constexpr char kNoVertexAi[] = "it serves KServe v2 over gRPC and HTTP, not Vertex AI's API";
constexpr char kNoTracing[] =
    "it has no request tracing; its NVTX ranges show each request in Nsight Systems";
constexpr char kNoCache[] = "it has no response cache";
constexpr char kNoRateLimiter[] =
    "it has no rate limiter; each model's queue and stream slots bound its work";
constexpr char kOwnMemory[] =
    "it sizes its pinned staging and device arenas per model at capture, not from a pool";
constexpr char kNoHeaderForwarding[] =
    "ONNX models take no request parameters, so headers are not forwarded";

constexpr TritonFlag kTritonFlags[] = {
    {"help", "<none>", kServed, "prints graphserve's flags"},
    {"id", "<string>", kIgnored,
     "ServerMetadata keeps the name graphserve, which clients and tools check"},
    {"exit-timeout-secs", "<integer>", kServed,
     "on SIGTERM, how long accepted requests may run before the rest are answered UNAVAILABLE"},
    {"model-store", "<string>", kServed, "another name of --model-repository"},
    {"model-repository", "<string>", kServed,
     "a model repository; repeated, several, a model name unique across them"},
    {"exit-on-error", "<boolean>", kServed, "refuse to start when a model fails to load"},
    {"disable-auto-complete-config", "<none>", kServed,
     "a model needs a config.pbtxt declaring its inputs and outputs"},
    {"strict-readiness", "<boolean>", kIgnored,
     "readiness is always strict here: ready only while every model is"},
    {"model-control-mode", "<string>", kServed, "none, explicit or poll"},
    {"repository-poll-secs", "<integer>", kServed, "seconds between scans in poll mode"},
    {"load-model", "<string>", kServed,
     "a model to load at start in explicit mode; repeated, several; * for all"},
    {"model-config-name", "<string>", kServed,
     "use <model>/configs/<name>.pbtxt where it exists, config.pbtxt otherwise"},
    {"model-load-thread-count", "<integer>", kIgnored,
     "models load one at a time, so each model's capture is timed alone"},
    {"model-load-retry-count", "<integer>", kIgnored,
     "a failed load is reported with its reason, not retried"},
    {"model-namespacing", "<boolean>", kIgnored,
     "model names are one namespace; a name in two repositories is not served"},
    {"enable-peer-access", "<boolean>", kIgnored,
     "a model's graphs run on one GPU and never copy between GPUs"},
    {"allow-http", "<boolean>", kServed, "serve KServe v2 HTTP/REST"},
    {"http-address", "<string>", kServed, "the address HTTP/REST binds (default: --host)"},
    {"http-port", "<integer>", kServed, "the HTTP/REST port"},
    {"reuse-http-port", "<boolean>", kServed, "share the HTTP port (SO_REUSEPORT)"},
    {"http-header-forward-pattern", "<string>", kIgnored, kNoHeaderForwarding},
    {"http-thread-count", "<integer>", kServed, "threads serving HTTP requests at once"},
    {"http-max-input-size", "<integer>", kServed,
     "largest HTTP request body in bytes; larger ones get 413"},
    {"http-restricted-api", "<string>:<string>=<string>", kServed,
     "routes of the categories answer 403 without the header and value "
     "(server/restricted_api.h)"},
    {"allow-grpc", "<boolean>", kServed, "serve gRPC"},
    {"grpc-address", "<string>", kServed,
     "the address gRPC binds (default: --host); unix:PATH adds a Unix socket"},
    {"grpc-port", "<integer>", kServed, "the gRPC port"},
    {"reuse-grpc-port", "<boolean>", kServed, "share the gRPC port (SO_REUSEPORT)"},
    {"grpc-header-forward-pattern", "<string>", kIgnored, kNoHeaderForwarding},
    {"grpc-infer-thread-count", "<integer>", kServed,
     "threads polling the inference completion queues (sets --grpc-queues unless given)"},
    {"grpc-infer-allocation-pool-size", "<integer>", kIgnored,
     "its gRPC handlers keep no pool of request and response objects"},
    {"grpc-max-response-pool-size", "<integer>", kIgnored,
     "its gRPC handlers keep no pool of response objects"},
    {"grpc-use-ssl", "<boolean>", kServed, "gRPC over TLS with the server's certificate and key"},
    {"grpc-use-ssl-mutual", "<boolean>", kServed,
     "gRPC over TLS, clients must present a certificate --grpc-root-cert signed"},
    {"grpc-server-cert", "<string>", kServed, "PEM file of the server's certificate"},
    {"grpc-server-key", "<string>", kServed, "PEM file of the server's private key"},
    {"grpc-root-cert", "<string>", kServed, "PEM file of the CA client certificates must chain to"},
    {"grpc-infer-response-compression-level", "<string>", kServed,
     "none, low, medium or high: gRPC compression of responses"},
    {"grpc-keepalive-time", "<integer>", kServed, "gRPC's keepalive time, milliseconds"},
    {"grpc-keepalive-timeout", "<integer>", kServed, "gRPC's keepalive timeout, milliseconds"},
    {"grpc-keepalive-permit-without-calls", "<boolean>", kServed,
     "gRPC keepalive pings with no call in flight"},
    {"grpc-http2-max-pings-without-data", "<integer>", kServed,
     "gRPC's HTTP/2 pings without data"},
    {"grpc-http2-min-recv-ping-interval-without-data", "<integer>", kServed,
     "gRPC's minimum interval between a client's pings, milliseconds"},
    {"grpc-http2-max-ping-strikes", "<integer>", kServed,
     "gRPC's bad pings before the connection closes"},
    {"grpc-max-connection-age", "<integer>", kServed, "gRPC's maximum connection age, milliseconds"},
    {"grpc-max-connection-age-grace", "<integer>", kServed,
     "gRPC's grace after the maximum age, milliseconds"},
    {"grpc-restricted-protocol", "<string>:<string>=<string>", kServed,
     "RPCs of the categories answer PERMISSION_DENIED without the metadata "
     "triton-grpc-protocol-<key> and value (server/restricted_api.h)"},
    {"log-verbose", "<integer>", kServed, "1 or more adds debug output"},
    {"log-info", "<boolean>", kServed, "info messages on or off"},
    {"log-warning", "<boolean>", kServed, "warnings on or off"},
    {"log-error", "<boolean>", kServed, "errors on or off"},
    {"log-format", "<string>", kServed, "default or ISO8601"},
    {"log-file", "<string>", kServed, "append the log to this file"},
    {"allow-sagemaker", "<boolean>", kIgnored, kNoSageMaker},
    {"sagemaker-port", "<integer>", kIgnored, kNoSageMaker},
    {"sagemaker-safe-port-range", "<integer>-<integer>", kIgnored, kNoSageMaker},
    {"sagemaker-thread-count", "<integer>", kIgnored, kNoSageMaker},
    {"allow-vertex-ai", "<boolean>", kIgnored, kNoVertexAi},
    {"vertex-ai-port", "<integer>", kIgnored, kNoVertexAi},
    {"vertex-ai-thread-count", "<integer>", kIgnored, kNoVertexAi},
    {"vertex-ai-default-model", "<string>", kIgnored, kNoVertexAi},
    {"allow-metrics", "<boolean>", kServed, "serve Prometheus metrics"},
    {"allow-gpu-metrics", "<boolean>", kIgnored,
     "GPU metrics are served with --allow-metrics wherever NVML is present"},
    {"allow-cpu-metrics", "<boolean>", kServed,
     "nv_cpu_utilization and nv_cpu_memory_{total,used}_bytes, from /proc"},
    {"metrics-address", "<string>", kServed,
     "the address metrics bind (default: --http-address, else --host)"},
    {"metrics-port", "<integer>", kServed, "the metrics port"},
    {"metrics-interval-ms", "<float>", kServed,
     "the shortest window CPU utilization is measured over; the rest are read when scraped"},
    {"metrics-config", "<string>=<string>", kIgnored,
     "its metrics are fixed: counters and histograms, no summaries"},
    {"trace-config", "<string>,<string>=<string>", kIgnored, kNoTracing},
    {"cache-config", "<string>,<string>=<string>", kIgnored, kNoCache},
    {"cache-directory", "<string>", kIgnored, kNoCache},
    {"rate-limit", "<string>", kIgnored, kNoRateLimiter},
    {"rate-limit-resource", "<string>:<integer>:<integer>", kIgnored, kNoRateLimiter},
    {"pinned-memory-pool-byte-size", "<integer>", kIgnored, kOwnMemory},
    {"cuda-memory-pool-byte-size", "<integer>:<integer>", kIgnored, kOwnMemory},
    {"cuda-virtual-address-size", "<integer>:<integer>", kIgnored,
     "it keeps no growable implicit state"},
    {"min-supported-compute-capability", "<float>", kIgnored,
     "it uses the GPUs --device and instance_group name"},
    {"buffer-manager-thread-count", "<integer>", kIgnored,
     "requests are copied by the stream workers that run them"},
    {"host-policy", "<string>,<string>=<string>", kIgnored,
     "it has no host policies; pin it with numactl or taskset"},
    {"model-load-gpu-limit", "<device_id>:<fraction>", kIgnored,
     "a load that does not fit on its GPU fails with the sizes"},
    {"allow-client-shm", "<boolean>", kServed,
     "true: clients may register shared memory, as they always may here; false is refused "
     "until graphserve can turn it off"},
    {"backend-directory", "<string>", kIgnored, kNoBackends},
    {"backend-config", "<string>,<string>=<string>", kIgnored, kNoBackends},
    {"repoagent-directory", "<string>", kIgnored, "it has no repository agents"},
    {"strict-model-config", "<boolean>", kServed,
     "true is --disable-auto-complete-config (Triton's deprecated name)"},
    {"response-cache-byte-size", "<integer>", kIgnored, kNoCache},
    {"trace-file", "<string>", kIgnored, kNoTracing},
    {"trace-level", "<string>", kIgnored, kNoTracing},
    {"trace-rate", "<integer>", kIgnored, kNoTracing},
    {"trace-count", "<integer>", kIgnored, kNoTracing},
    {"trace-log-frequency", "<integer>", kIgnored, kNoTracing},
};

}  // namespace

absl::Span<const TritonFlag> TritonFlags() { return kTritonFlags; }

const TritonFlag* FindTritonFlag(absl::string_view name) {
  for (const TritonFlag& flag : kTritonFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

std::string IgnoredFlagNotice(const TritonFlag& flag) {
  return absl::StrCat("--", flag.name, " does not apply to graphserve (", flag.what,
                      "); ignored");
}

}  // namespace graphserve
