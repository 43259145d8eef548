#include "client/client_command.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cuda_shared_memory.h"
#include "client/datatype.h"
#include "client/inference_client.h"
#include "client/load_generator.h"
#include "client/perf_report.h"
#include "client/request_builder.h"
#include "client/shared_memory_layout.h"
#include "client/shared_memory_slots.h"
#include "common/command_line.h"
#include "common/dtype.h"
#include "common/grpc_channel_args.h"
#include "common/status.h"
#include "google/protobuf/text_format.h"

namespace graphserve {
namespace {

constexpr char kProgram[] = "graphserve-client";

// Flags every command takes, before or after the command name.
struct ConnectionFlags {
  std::string url = "localhost:8001";
  int64_t timeout_ms = 30000;
  std::string grpc_channel_args;
  std::vector<std::string> headers;  // NAME:VALUE
};

void AddConnectionFlags(CommandLine& command_line, ConnectionFlags* flags) {
  command_line.AddString("url", &flags->url,
                         "The server's gRPC endpoint, HOST:PORT, or unix:PATH for a Unix socket.");
  command_line.AddInt("timeout-ms", &flags->timeout_ms,
                      "Deadline of each call in milliseconds; 0: none.");
  command_line.AddString("grpc-channel-args", &flags->grpc_channel_args,
                         "NAME=VALUE,...: gRPC core channel arguments, for tuning the transport "
                         "(a value of digits is an integer, any other a string; no commas).");
  command_line.AddStringList(
      "header", &flags->headers,
      "NAME:VALUE sent as gRPC metadata with every call (perf_analyzer's -H); repeatable. "
      "E.g. a restricted API's key, or graphserve-shared-memory-owner:SECRET to keep this "
      "client's shared-memory regions its own.");
}

// --header's NAME:VALUE pairs as gRPC metadata: the name trimmed and lower
// case, the value trimmed. Checked here against gRPC's rules (a name of
// a-z, 0-9, '-', '_', '.', not "grpc-"; a value of printable ASCII): gRPC
// aborts the process on a call whose metadata breaks them.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseHeaders(
    const std::vector<std::string>& headers) {
  const auto legal_name = [](absl::string_view name) {
    return !name.empty() && !absl::StartsWith(name, "grpc-") &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-' || c == '_' ||
                    c == '.';
           });
  };
  const auto legal_value = [](absl::string_view value) {
    return std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  };
  std::vector<std::pair<std::string, std::string>> metadata;
  for (const std::string& header : headers) {
    const size_t colon = header.find(':');
    const std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(header.substr(0, colon)));
    const std::string value = colon == std::string::npos
                                  ? ""
                                  : std::string(absl::StripAsciiWhitespace(header.substr(colon + 1)));
    if (colon == std::string::npos || !legal_name(name) || !legal_value(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--header wants NAME:VALUE, NAME of letters, digits, '-', '_' and '.' (not grpc-...), "
          "VALUE of printable ASCII; got '",
          absl::CEscape(header.substr(0, 40)), "'"));
    }
    metadata.emplace_back(name, value);
  }
  return metadata;
}

int Usage(std::ostream& err, absl::string_view message) {
  err << kProgram << ": " << message << "\n";
  return kClientExitUsage;
}

// Reports a failed call with what the user can do about the common causes.
int Fail(std::ostream& err, absl::string_view command, const ConnectionFlags& flags,
         const absl::Status& status) {
  err << kProgram << ": " << command << ": " << status;
  if (status.code() == absl::StatusCode::kUnavailable) {
    err << " (is a server listening at " << flags.url << "? see --url)";
  } else if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    err << " (no answer within --timeout-ms " << flags.timeout_ms << ")";
  }
  err << "\n";
  return kClientExitFailure;
}

// Parses `args` (args[0] is the command name) into `command_line`. Returns an
// exit code when the command is done (help, or a usage error).
std::optional<int> ParseCommandFlags(CommandLine& command_line,
                                     const std::vector<std::string>& args, std::ostream& out,
                                     std::ostream& err) {
  std::vector<const char*> argv;
  argv.reserve(args.size());
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  if (absl::Status status = command_line.Parse(static_cast<int>(argv.size()), argv.data());
      !status.ok()) {
    return Usage(err, absl::StrCat(args[0], ": ", status.message()));
  }
  if (command_line.help_requested()) {
    out << command_line.Help();
    return kClientExitOk;
  }
  return std::nullopt;
}

// A client for the flags; InvalidArgument (a usage error) for bad flag values.
absl::StatusOr<std::unique_ptr<InferenceClient>> Connect(const ConnectionFlags& flags,
                                                          bool private_connection = false) {
  if (flags.timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timeout-ms must not be negative, got ", flags.timeout_ms));
  }
  if (flags.url.empty()) return absl::InvalidArgumentError("--url must not be empty");
  ASSIGN_OR_RETURN(std::vector<GrpcChannelArg> channel_args,
                   ParseGrpcChannelArgs(flags.grpc_channel_args));
  ASSIGN_OR_RETURN(auto metadata, ParseHeaders(flags.headers));
  return InferenceClient::Create({.address = flags.url,
                                 .call_timeout = absl::Milliseconds(flags.timeout_ms),
                                 .private_connection = private_connection,
                                 .channel_args = std::move(channel_args),
                                 .metadata = std::move(metadata)});
}

// Removes every `--NAME VALUE` and `--NAME=VALUE` from `args` and returns the
// values: CommandLine keeps one value per flag, and --input repeats.
absl::StatusOr<std::vector<std::string>> TakeRepeatedFlag(std::vector<std::string>* args,
                                                          absl::string_view name) {
  const std::string bare = absl::StrCat("--", name);
  const std::string with_value = absl::StrCat(bare, "=");
  std::vector<std::string> values;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& arg = (*args)[i];
    if (arg == bare) {
      if (i + 1 >= args->size()) return absl::InvalidArgumentError(bare + " needs a value");
      values.push_back((*args)[++i]);
    } else if (absl::StartsWith(arg, with_value)) {
      values.push_back(arg.substr(with_value.size()));
    } else {
      rest.push_back(arg);
    }
  }
  *args = std::move(rest);
  return values;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return contents.str();
}

// The model's config, or null when the server lacks the model_configuration
// extension (UNIMPLEMENTED); other errors are the caller's.
absl::StatusOr<std::optional<inference::ModelConfig>> OptionalModelConfig(
    InferenceClient& client, const std::string& model, const std::string& version) {
  absl::StatusOr<inference::ModelConfigResponse> response = client.ModelConfig(model, version);
  if (response.ok()) return std::optional<inference::ModelConfig>(response->config());
  if (response.status().code() == absl::StatusCode::kUnimplemented) {
    return std::optional<inference::ModelConfig>();
  }
  return response.status();
}

// -------------------------------------------------------------- shared memory

// perf_analyzer's --shared-memory, --output-shared-memory-size and
// --cuda-device, for infer and perf.
struct SharedMemoryFlags {
  std::string kind = "none";
  int64_t output_bytes = kDefaultOutputSharedMemoryBytes;
  int64_t cuda_device = 0;
};

constexpr char kSharedMemoryUsage[] =
    "\n\n"
    "--shared-memory system|cuda passes the inputs and outputs through memory shared\n"
    "with the server instead of the gRPC messages (Triton's shared-memory extensions,\n"
    "as perf_analyzer's flag does): each request in flight gets one region holding its\n"
    "inputs, written once, and room for its outputs, which the server writes there;\n"
    "the messages carry only the region, offset and byte size of each tensor.\n"
    "  system  a POSIX shared memory object (/dev/shm/graphserve_client_...) that the\n"
    "          server maps: the server must run on the same host as the client.\n"
    "  cuda    device memory on --cuda-device, opened by the server through CUDA IPC:\n"
    "          the server must run on the same GPU machine and see that GPU, and the\n"
    "          client needs it too: without a GPU the client says so and stops.\n"
    "Each output gets room for its bytes, at most --output-shared-memory-size (an\n"
    "output of a variable shape gets exactly that); a larger output is refused,\n"
    "naming the size to pass. The regions are unregistered and freed at the end.";

void AddSharedMemoryFlags(CommandLine& command_line, SharedMemoryFlags* flags) {
  command_line.AddString("shared-memory", &flags->kind,
                         "none, system or cuda: where inputs and outputs travel (see above).");
  command_line.AddInt("output-shared-memory-size", &flags->output_bytes,
                      "Bytes of shared memory an output may take, >= 1.");
  command_line.AddInt("cuda-device", &flags->cuda_device,
                      "--shared-memory cuda: the GPU holding the regions.");
}

// InvalidArgument (a usage error) for a bad flag value.
absl::StatusOr<SharedMemoryOptions> ParseSharedMemoryFlags(const SharedMemoryFlags& flags) {
  ASSIGN_OR_RETURN(const SharedMemoryKind kind, ParseSharedMemoryKind(flags.kind));
  if (flags.output_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--output-shared-memory-size must be at least 1 byte, got ", flags.output_bytes));
  }
  if (flags.cuda_device < 0 || flags.cuda_device > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cuda-device must be a device number >= 0, got ", flags.cuda_device));
  }
  return SharedMemoryOptions{.kind = kind,
                             .output_byte_size = flags.output_bytes,
                             .cuda_device = static_cast<int>(flags.cuda_device)};
}

// Checked before connecting, so that a client without a GPU says so first.
absl::Status CheckSharedMemoryDevice(const SharedMemoryOptions& options) {
  if (options.kind != SharedMemoryKind::kCuda) return absl::OkStatus();
  return CheckCudaDevice(options.cuda_device);
}

// infer's one slot: `request` (with its inputs' bytes) and the outputs it
// asks for, in one registered region.
absl::StatusOr<std::unique_ptr<SharedMemorySlots>> MakeSlots(
    InferenceClient& client, const InferRequest& request,
    const inference::ModelMetadataResponse& metadata, const inference::ModelConfig* config,
    const RequestBuilderOptions& request_options, const SharedMemoryOptions& options) {
  ASSIGN_OR_RETURN(const std::vector<ExpectedOutput> outputs,
                   ExpectedOutputs(metadata, config, request_options));
  return SharedMemorySlots::Create(&client, request, outputs, options);
}

// ---------------------------------------------------------------- live, ready

int RunLive(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
            std::ostream& err) {
  CommandLine command_line(
      "graphserve-client live\n\n"
      "Asks whether the server is live (its liveness probe). Prints `live` and exits 0,\n"
      "or prints `not live` and exits 1.");
  AddConnectionFlags(command_line, &flags);
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("live: ", client.status().message()));
  absl::StatusOr<inference::ServerLiveResponse> live = (*client)->ServerLive();
  if (!live.ok()) return Fail(err, "live", flags, live.status());
  out << (live->live() ? "live" : "not live") << "\n";
  return live->live() ? kClientExitOk : kClientExitFailure;
}

int RunHealth(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
              std::ostream& err) {
  std::string service;
  CommandLine command_line(
      "graphserve-client health [--service NAME]\n\n"
      "Asks the server's grpc.health.v1 service (what container HEALTHCHECKs and load\n"
      "balancers ask). Prints the status (SERVING, NOT_SERVING, ...) and exits 0 when it\n"
      "is SERVING, 1 otherwise (a draining server says NOT_SERVING).");
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("service", &service, "The service to ask about; empty: the server.");
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("health: ", client.status().message()));
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus> status =
      (*client)->Health(service);
  if (!status.ok()) return Fail(err, "health", flags, status.status());
  out << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(*status) << "\n";
  return *status == grpc::health::v1::HealthCheckResponse::SERVING ? kClientExitOk
                                                                   : kClientExitFailure;
}

int RunReady(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
             std::ostream& err) {
  std::string model;
  std::string version;
  CommandLine command_line(
      "graphserve-client ready [--model M [--model-version V]]\n\n"
      "Asks whether the server (its readiness probe), or one model, can take inference\n"
      "requests. Prints `ready` and exits 0, or prints `not ready` and exits 1.");
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &model, "A model to ask about instead of the server.");
  command_line.AddString("model-version", &version,
                         "The model's version; empty: the server's choice.");
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  if (model.empty() && !version.empty()) return Usage(err, "ready: --model-version needs --model");
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("ready: ", client.status().message()));
  bool ready = false;
  if (model.empty()) {
    absl::StatusOr<inference::ServerReadyResponse> response = (*client)->ServerReady();
    if (!response.ok()) return Fail(err, "ready", flags, response.status());
    ready = response->ready();
  } else {
    absl::StatusOr<inference::ModelReadyResponse> response = (*client)->ModelReady(model, version);
    if (!response.ok()) return Fail(err, "ready", flags, response.status());
    ready = response->ready();
  }
  out << (ready ? "ready" : "not ready") << "\n";
  return ready ? kClientExitOk : kClientExitFailure;
}

// ------------------------------------------------------- metadata, config, stats

std::string FormatTensors(
    const google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>&
        tensors) {
  std::string text;
  for (const auto& tensor : tensors) {
    absl::StrAppend(&text, "  ", tensor.name(), " ", tensor.datatype(), " ",
                    FormatShape(std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())),
                    "\n");
  }
  return text;
}

int RunMetadata(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
                std::ostream& err) {
  std::string model;
  std::string version;
  CommandLine command_line(
      "graphserve-client metadata [--model M [--model-version V]]\n\n"
      "Prints the server's name, version and protocol extensions, or with --model the\n"
      "model's versions, platform and input/output tensors (datatype and shape; -1 marks\n"
      "the batch dimension or another variable one).");
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &model, "The model to describe instead of the server.");
  command_line.AddString("model-version", &version,
                         "The model's version; empty: the server's choice.");
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  if (model.empty() && !version.empty()) {
    return Usage(err, "metadata: --model-version needs --model");
  }
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("metadata: ", client.status().message()));
  if (model.empty()) {
    absl::StatusOr<inference::ServerMetadataResponse> metadata = (*client)->ServerMetadata();
    if (!metadata.ok()) return Fail(err, "metadata", flags, metadata.status());
    out << "name: " << metadata->name() << "\nversion: " << metadata->version()
        << "\nextensions: " << absl::StrJoin(metadata->extensions(), ", ") << "\n";
    return kClientExitOk;
  }
  absl::StatusOr<inference::ModelMetadataResponse> metadata =
      (*client)->ModelMetadata(model, version);
  if (!metadata.ok()) return Fail(err, "metadata", flags, metadata.status());
  out << "model: " << metadata->name()
      << "\nversions: " << absl::StrJoin(metadata->versions(), ", ")
      << "\nplatform: " << metadata->platform() << "\ninputs:\n"
      << FormatTensors(metadata->inputs()) << "outputs:\n"
      << FormatTensors(metadata->outputs());
  return kClientExitOk;
}

int RunConfig(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
              std::ostream& err) {
  std::string model;
  std::string version;
  CommandLine command_line(
      "graphserve-client config --model M [--model-version V]\n\n"
      "Prints the model's configuration as the server holds it, in config.pbtxt's text\n"
      "format (the ModelConfig extension).");
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &model, "The model (required).");
  command_line.AddString("model-version", &version,
                         "The model's version; empty: the server's choice.");
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  if (model.empty()) return Usage(err, "config: --model is required (see --help)");
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("config: ", client.status().message()));
  absl::StatusOr<inference::ModelConfigResponse> config = (*client)->ModelConfig(model, version);
  if (!config.ok()) return Fail(err, "config", flags, config.status());
  std::string text;
  google::protobuf::TextFormat::PrintToString(config->config(), &text);
  out << text;
  return kClientExitOk;
}

std::string AverageMicros(const inference::StatisticDuration& duration) {
  if (duration.count() == 0) return "-";
  return absl::StrFormat(
      "%.1f", static_cast<double>(duration.ns()) / static_cast<double>(duration.count()) / 1000.0);
}

std::string FormatStatistics(const inference::ModelStatisticsResponse& response) {
  std::string text = absl::StrFormat("%-24s %-8s %11s %11s %9s %7s %9s %9s %9s %9s %9s\n", "model",
                                     "version", "inferences", "executions", "success", "fail",
                                     "total us", "queue us", "input us", "infer us", "output us");
  for (const inference::ModelStatistics& stats : response.model_stats()) {
    const inference::InferStatistics& infer = stats.inference_stats();
    absl::StrAppend(
        &text, absl::StrFormat(
                   "%-24s %-8s %11d %11d %9d %7d %9s %9s %9s %9s %9s\n", stats.name(),
                   stats.version(), stats.inference_count(), stats.execution_count(),
                   infer.success().count(), infer.fail().count(), AverageMicros(infer.success()),
                   AverageMicros(infer.queue()), AverageMicros(infer.compute_input()),
                   AverageMicros(infer.compute_infer()), AverageMicros(infer.compute_output())));
  }
  return text;
}

int RunStats(const std::vector<std::string>& args, ConnectionFlags flags, std::ostream& out,
             std::ostream& err) {
  std::string model;
  std::string version;
  CommandLine command_line(
      "graphserve-client stats [--model M [--model-version V]]\n\n"
      "Prints the server's cumulative statistics per model version (the statistics\n"
      "extension): inferences (batch rows), executions (batches run), successful and\n"
      "failed requests, and the average time per request in total, queued, and in\n"
      "compute input / infer / output, in microseconds.");
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &model, "Only this model; empty: every model.");
  command_line.AddString("model-version", &version, "Only this version; empty: every version.");
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  if (model.empty() && !version.empty()) return Usage(err, "stats: --model-version needs --model");
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("stats: ", client.status().message()));
  absl::StatusOr<inference::ModelStatisticsResponse> stats =
      (*client)->ModelStatistics(model, version);
  if (!stats.ok()) return Fail(err, "stats", flags, stats.status());
  out << FormatStatistics(*stats);
  return kClientExitOk;
}

// ---------------------------------------------------------------------- infer

// FNV-1a, 64 bits: a checksum to compare outputs across runs and servers by
// eye; not cryptographic.
uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const char byte : bytes) {
    hash ^= static_cast<uint8_t>(byte);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

template <typename T>
std::string FormatFirst(absl::string_view bytes, int64_t count) {
  std::vector<std::string> values;
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      values.push_back(bytes[i] != 0 ? "true" : "false");
    } else if constexpr (std::is_floating_point_v<T> || kIsHost16BitFloat<T>) {
      values.push_back(absl::StrFormat("%g", Widen(value)));
    } else {
      values.push_back(absl::StrCat(+value));  // + prints int8/uint8 as numbers
    }
  }
  return absl::StrJoin(values, " ");
}

// The first `count` elements of an output, or why they are not shown.
std::string FormatValues(const InferOutput& output, int64_t count) {
  const absl::StatusOr<DType> dtype = DTypeFromKServe(output.datatype);
  if (!dtype.ok()) return absl::StrCat("(", output.datatype, " values are not printed)");
  return VisitDType(*dtype, [&](auto tag) {
    return FormatFirst<typename decltype(tag)::Host>(output.data, count);
  });
}

void PrintOutput(const InferOutput& output, int64_t show, std::ostream& out) {
  out << "output " << output.name << " " << output.datatype << " " << FormatShape(output.shape)
      << " " << output.data.size() << " bytes, fnv1a64 "
      << absl::StrFormat("%016x", Fnv1a64(output.data)) << "\n";
  const absl::StatusOr<size_t> element_bytes = DatatypeByteSize(output.datatype);
  if (!element_bytes.ok() || show <= 0) return;
  const int64_t elements = static_cast<int64_t>(output.data.size() / *element_bytes);
  const int64_t shown = std::min(show, elements);
  out << "  first " << shown << " of " << elements << ": " << FormatValues(output, shown) << "\n";
}

// A file name for an output: names may hold characters a path must not.
std::string OutputFileName(const std::string& name) {
  std::string file = name;
  for (char& c : file) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      c = '_';
    }
  }
  if (file.empty() || file == "." || file == "..") file = "output";
  return file + ".bin";
}

absl::Status WriteOutputs(const std::vector<InferOutput>& outputs, const std::string& dir,
                          std::ostream& out) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::NotFoundError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  for (const InferOutput& output : outputs) {
    const std::string path = (std::filesystem::path(dir) / OutputFileName(output.name)).string();
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(output.data.data(), static_cast<std::streamsize>(output.data.size()));
    file.close();
    if (!file) return absl::DataLossError(absl::StrCat("cannot write ", path));
    out << "wrote " << path << "\n";
  }
  return absl::OkStatus();
}

// The result's outputs, each in shared memory with its bytes read from
// `slot` (null: none asked for) into `storage`, a list so that the bytes
// stay put while the outputs view them.
absl::StatusOr<std::vector<InferOutput>> ReadOutputs(const InferResult& result,
                                                     const SharedMemorySlot* slot,
                                                     std::list<std::string>* storage) {
  std::vector<InferOutput> outputs = result.outputs();
  for (InferOutput& output : outputs) {
    if (output.shared_memory_region.empty()) continue;
    if (slot == nullptr || output.shared_memory_region != slot->region()) {
      return absl::InternalError(
          absl::StrCat("the server put output ", output.name, " in shared memory region ",
                       output.shared_memory_region, ", which this request did not name"));
    }
    ASSIGN_OR_RETURN(std::string bytes, slot->ReadOutput(output));
    output.data = storage->emplace_back(std::move(bytes));
  }
  return outputs;
}

// "NAME=FILE" -> the input's name and the file's bytes.
absl::Status ReadInputFiles(const std::vector<std::string>& specs,
                            std::map<std::string, std::string>* inputs) {
  for (const std::string& spec : specs) {
    const std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    ASSIGN_OR_RETURN(std::string bytes, ReadFile(parts[1]));
    (*inputs)[parts[0]] = std::move(bytes);
  }
  return absl::OkStatus();
}

// "NAME:D1,D2,..." (perf_analyzer's --shape) -> the input's name and dims.
absl::Status ParseInputShapes(const std::vector<std::string>& specs,
                              std::map<std::string, std::vector<int64_t>>* shapes) {
  for (const std::string& spec : specs) {
    const size_t colon = spec.rfind(':');
    std::vector<int64_t> dims;
    bool parsed = colon != std::string::npos && colon > 0 && colon + 1 < spec.size();
    if (parsed) {
      for (const absl::string_view dim : absl::StrSplit(spec.substr(colon + 1), ',')) {
        int64_t value = 0;
        parsed = parsed && absl::SimpleAtoi(dim, &value) && value >= 0;
        dims.push_back(value);
      }
    }
    if (!parsed) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--shape wants NAME:D1,D2,... (the dims past the batch dim, each >= 0), got '",
          spec.substr(0, 64), "'"));
    }
    (*shapes)[spec.substr(0, colon)] = std::move(dims);
  }
  return absl::OkStatus();
}

constexpr char kInferUsage[] =
    "graphserve-client infer --model M [--model-version V] [--batch-size B]\n"
    "    [--input NAME=FILE ...] [--shape NAME:D1,D2 ...] [--outputs NAME,...] [--seed S]\n"
    "    [--show N] [--output-dir DIR]\n"
    "    [--shared-memory none|system|cuda [--output-shared-memory-size BYTES]\n"
    "    [--cuda-device N]]\n"
    "\n"
    "Sends one inference request and prints each output's name, datatype, shape, size,\n"
    "an FNV-1a 64-bit checksum of its bytes and its first values. Inputs come from the\n"
    "model's metadata, the batch dimension set to B. `--input NAME=FILE` (repeatable)\n"
    "reads an input from a file of raw little-endian elements, exactly B rows of it\n"
    "(e.g. 4 x 512 x 4 bytes for FP32 [-1,512] at B = 4); other inputs get random data\n"
    "drawn from seed S (FP32 in [-1,1), integers in [0,100), BOOL 0/1).\n"
    "`--shape NAME:D1,D2` (repeatable, perf_analyzer's flag) gives an input's dims past\n"
    "the batch dim where the model takes any (-1: a sequence length, an image's size),\n"
    "e.g. --shape input_ids:20 for input_ids [-1,-1].\n"
    "--output-dir writes each output's raw bytes to DIR/NAME.bin. With --shared-memory\n"
    "the outputs are read back from the region, so the same request prints the same.";

int RunInfer(std::vector<std::string> args, ConnectionFlags flags, std::ostream& out,
             std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> input_specs = TakeRepeatedFlag(&args, "input");
  if (!input_specs.ok()) return Usage(err, absl::StrCat("infer: ", input_specs.status().message()));
  absl::StatusOr<std::vector<std::string>> shape_specs = TakeRepeatedFlag(&args, "shape");
  if (!shape_specs.ok()) return Usage(err, absl::StrCat("infer: ", shape_specs.status().message()));
  std::string model;
  std::string version;
  int64_t batch_size = 1;
  std::string outputs;
  int64_t seed = 0;
  int64_t show = 8;
  std::string output_dir;
  SharedMemoryFlags shared_memory_flags;
  CommandLine command_line(absl::StrCat(kInferUsage, kSharedMemoryUsage));
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &model, "The model (required).");
  command_line.AddString("model-version", &version,
                         "The model's version; empty: the server's choice.");
  command_line.AddInt("batch-size", &batch_size, "Rows in the batch dimension, >= 1.");
  // Listed for --help only: TakeRepeatedFlag has taken every --input already.
  std::string input_help_only;
  command_line.AddString("input", &input_help_only,
                         "NAME=FILE: raw bytes of input NAME for the whole batch; repeatable.");
  std::string shape_help_only;
  command_line.AddString("shape", &shape_help_only,
                         "NAME:D1,D2: input NAME's dims past the batch dim; repeatable.");
  command_line.AddString("outputs", &outputs, "Comma-separated outputs to ask for; empty: all.");
  command_line.AddInt("seed", &seed, "Seed of the random input data.");
  command_line.AddInt("show", &show, "How many values of each output to print.");
  command_line.AddString("output-dir", &output_dir,
                         "Write each output's raw bytes to DIR/NAME.bin (created if missing).");
  AddSharedMemoryFlags(command_line, &shared_memory_flags);
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;
  if (model.empty()) return Usage(err, "infer: --model is required (see --help)");
  if (batch_size < 1) {
    return Usage(err, absl::StrCat("infer: --batch-size must be at least 1, got ", batch_size));
  }
  absl::StatusOr<SharedMemoryOptions> shared_memory = ParseSharedMemoryFlags(shared_memory_flags);
  if (!shared_memory.ok()) {
    return Usage(err, absl::StrCat("infer: ", shared_memory.status().message()));
  }
  if (absl::Status device = CheckSharedMemoryDevice(*shared_memory); !device.ok()) {
    return Fail(err, "infer", flags, device);
  }
  for (const std::string& spec : *input_specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return Usage(err, absl::StrCat("infer: --input wants NAME=FILE, got '", spec, "'"));
    }
  }

  RequestBuilderOptions request_options{
      .model_version = version, .batch_size = batch_size, .seed = static_cast<uint64_t>(seed)};
  if (!outputs.empty()) {
    std::vector<std::string> names = absl::StrSplit(outputs, ',');
    request_options.requested_outputs = std::move(names);
  }
  if (absl::Status shapes = ParseInputShapes(*shape_specs, &request_options.input_shapes);
      !shapes.ok()) {
    return Usage(err, absl::StrCat("infer: ", shapes.message()));
  }
  if (absl::Status read = ReadInputFiles(*input_specs, &request_options.provided_inputs);
      !read.ok()) {
    return Fail(err, "infer", flags, read);
  }
  absl::StatusOr<std::unique_ptr<InferenceClient>> client = Connect(flags);
  if (!client.ok()) return Usage(err, absl::StrCat("infer: ", client.status().message()));
  absl::StatusOr<inference::ModelMetadataResponse> metadata =
      (*client)->ModelMetadata(model, version);
  if (!metadata.ok()) return Fail(err, "infer", flags, metadata.status());
  absl::StatusOr<std::optional<inference::ModelConfig>> config =
      OptionalModelConfig(**client, model, version);
  if (!config.ok()) return Fail(err, "infer", flags, config.status());
  const inference::ModelConfig* model_config = config->has_value() ? &config->value() : nullptr;
  absl::StatusOr<InferRequest> request = BuildRequest(*metadata, model_config, request_options);
  if (!request.ok()) return Fail(err, "infer", flags, request.status());
  request->model_name = model;

  // Declared after the client: the slot unregisters through it.
  std::unique_ptr<SharedMemorySlots> slots;
  if (shared_memory->kind != SharedMemoryKind::kNone) {
    absl::StatusOr<std::unique_ptr<SharedMemorySlots>> made =
        MakeSlots(**client, *request, *metadata, model_config, request_options, *shared_memory);
    if (!made.ok()) return Fail(err, "infer", flags, made.status());
    slots = *std::move(made);
  }
  const SharedMemorySlot* slot = slots != nullptr ? slots->slot(0) : nullptr;
  absl::StatusOr<InferResult> result =
      (*client)->Infer(slot != nullptr ? slot->request() : *request);
  if (!result.ok()) return Fail(err, "infer", flags, result.status());
  std::list<std::string> region_bytes;
  absl::StatusOr<std::vector<InferOutput>> outputs_read = ReadOutputs(*result, slot, &region_bytes);
  if (!outputs_read.ok()) return Fail(err, "infer", flags, outputs_read.status());
  out << "model " << result->model_name() << " version " << result->model_version() << ", batch "
      << batch_size << "\n";
  for (const InferOutput& output : *outputs_read) PrintOutput(output, show, out);
  if (!output_dir.empty()) {
    if (absl::Status written = WriteOutputs(*outputs_read, output_dir, out); !written.ok()) {
      return Fail(err, "infer", flags, written);
    }
  }
  return kClientExitOk;
}

// ----------------------------------------------------------------------- perf

constexpr char kPerfUsage[] =
    "graphserve-client perf --model M [--batch-size B] [--shape NAME:D1,D2 ...]\n"
    "    (--concurrency 1,2,4 | --request-rate R[,R...] [--request-distribution D])\n"
    "    [--warmup-secs S] [--warmup-requests N] [--measurement-interval-ms 2000]\n"
    "    [--windows 3] [--floor-windows 1] [--csv FILE] [--timeline FILE] [--streaming]\n"
    "    [--shared-memory none|system|cuda [--output-shared-memory-size BYTES]\n"
    "    [--cuda-device N]]\n"
    "\n"
    "Measures throughput and latency as perf_analyzer does, one level at a time, with\n"
    "one request of random data (batch B) sent over and over:\n"
    "  --concurrency N,...  keeps N requests outstanding, each answer sending the next;\n"
    "  --request-rate R,... sends R requests per second whether or not answers came back,\n"
    "                       spaced evenly (constant) or at random (poisson), from one\n"
    "                       sending thread per 8000 a second (at most 16), so that the\n"
    "                       rate sent is the rate asked; sends over 1 ms behind the\n"
    "                       schedule are reported, and why.\n"
    "Each level warms up, then measures --windows windows of --measurement-interval-ms.\n"
    "Throughput counts inferences: requests x B per second. Latency is client-side, from\n"
    "the call to its result, as p50/p90/p95/p99 (the observed value at rank\n"
    "round(p/100 x (n-1)), perf_analyzer's method) and the mean; the server's queue and\n"
    "compute times per request come from its statistics before and after the windows.\n"
    "\n"
    "The floor: right after each level the same load (same connections, same\n"
    "concurrency or rate, same warm-up) runs with an empty RPC, ServerLive, for\n"
    "--floor-windows windows (0: none). What every RPC costs (client, gRPC, network)\n"
    "shows as the floor's p50 and p99 beside the served ones; the model's own cost is\n"
    "its full-chunk replay, the measured replay of batch B from the capture section of\n"
    "the served model's config (ModelConfig: capture.cost graph_us, or eager_us with\n"
    "graphs off; for a size not captured, the size it pads to, which the report says).\n"
    "What is left is the server's own work (validation, queueing, copies, responses):\n"
    "  served overhead = served p50 - floor p50 - full-chunk replay\n"
    "Without measured costs (the host executor) or for a batch above every captured\n"
    "size (split over several replays) the overhead is left out, saying why.\n"
    "\n"
    "--csv writes perf_analyzer's CSV (the --verbose-csv columns, microseconds), then\n"
    "Floor p50 latency, Floor p99 latency, Full-chunk replay and Served overhead.\n"
    "--timeline writes every measured request of every level, in the order they\n"
    "finished: the level, when it was sent (us on CLOCK_MONOTONIC, to line up with\n"
    "other samplers), its latency (us) and 1 if it succeeded. A stall shows there as\n"
    "the requests it held, where the percentiles only show its size\n"
    "(bench/timeline_report.py reads it).\n"
    "Failed requests are counted and reported, and make the exit code 1.\n"
    "Without --concurrency or --request-rate: --concurrency 1.\n"
    "With --shared-memory, concurrency N uses N regions, one per request outstanding;\n"
    "a request rate adds regions as the requests in flight need them (at most\n"
    "--max-outstanding). The report's columns stay the same; the client's send and\n"
    "receive times then cover messages without tensor bytes.\n"
    "\n"
    "--streaming sends the requests over ModelStreamInfer, Triton's bidirectional\n"
    "stream, as perf_analyzer's --streaming does, one request at a time on each stream,\n"
    "so that a request costs no gRPC call of its own: each of the N slots of\n"
    "--concurrency N keeps one stream (on its connection), each answer sending the\n"
    "next; a --request-rate level sends each request on an idle stream, opening one\n"
    "when none is, so it holds as many as it has requests in flight. An answer with an\n"
    "error counts as a failed request. The floor stays unary (ServerLive), and the\n"
    "report's columns the same.";

absl::StatusOr<std::vector<double>> ParseRateList(absl::string_view text) {
  std::vector<double> rates;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double rate = 0;
    if (!absl::SimpleAtod(part, &rate) || !(rate > 0) || !std::isfinite(rate)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part, "' in '", text, "' is not a positive number"));
    }
    rates.push_back(rate);
  }
  return rates;
}

// The levels to run: concurrencies or rates, and which.
struct PerfLevels {
  LoadMode mode = LoadMode::kConcurrency;
  std::vector<double> values;
};

absl::StatusOr<PerfLevels> ParseLevels(const std::string& concurrency,
                                       const std::string& request_rate) {
  if (!concurrency.empty() && !request_rate.empty()) {
    return absl::InvalidArgumentError("give --concurrency or --request-rate, not both");
  }
  if (!request_rate.empty()) {
    ASSIGN_OR_RETURN(std::vector<double> rates, ParseRateList(request_rate));
    return PerfLevels{LoadMode::kRequestRate, std::move(rates)};
  }
  absl::StatusOr<std::vector<int64_t>> values =
      ParseIntList(concurrency.empty() ? "1" : concurrency, 1);
  if (!values.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--concurrency: ", values.status().message()));
  }
  return PerfLevels{LoadMode::kConcurrency, std::vector<double>(values->begin(), values->end())};
}

// Runs every level, printing a line as each finishes.
absl::StatusOr<std::vector<LevelResult>> RunLevels(LoadGenerator& generator,
                                                   const PerfLevels& levels, std::ostream& out) {
  std::vector<LevelResult> results;
  for (const double value : levels.values) {
    absl::StatusOr<LevelResult> result = levels.mode == LoadMode::kConcurrency
                                             ? generator.RunConcurrency(static_cast<int64_t>(value))
                                             : generator.RunRequestRate(value);
    if (!result.ok()) return result.status();
    out << FormatLevelLine(levels.mode, *result) << std::endl;
    results.push_back(*std::move(result));
  }
  return results;
}

int RunPerf(std::vector<std::string> args, ConnectionFlags flags, std::ostream& out,
            std::ostream& err) {
  absl::StatusOr<std::vector<std::string>> shape_specs = TakeRepeatedFlag(&args, "shape");
  if (!shape_specs.ok()) return Usage(err, absl::StrCat("perf: ", shape_specs.status().message()));
  LoadGeneratorOptions options;
  std::string concurrency;
  std::string request_rate;
  std::string distribution = "constant";
  std::string warmup_secs = "0.5";
  int64_t interval_ms = absl::ToInt64Milliseconds(options.measurement_window);
  int64_t windows = options.windows;
  int64_t seed = 0;
  std::string csv_path;
  SharedMemoryFlags shared_memory_flags;
  CommandLine command_line(absl::StrCat(kPerfUsage, kSharedMemoryUsage));
  AddConnectionFlags(command_line, &flags);
  command_line.AddString("model", &options.model_name, "The model (required).");
  command_line.AddString("model-version", &options.model_version,
                         "The model's version; empty: the server's choice.");
  command_line.AddInt("batch-size", &options.batch_size, "Rows per request, >= 1.");
  std::string shape_help_only;
  command_line.AddString("shape", &shape_help_only,
                         "NAME:D1,D2: input NAME's dims past the batch dim; repeatable.");
  command_line.AddString("concurrency", &concurrency,
                         "Comma-separated numbers of outstanding requests, e.g. 1,2,4,8.");
  command_line.AddString("request-rate", &request_rate,
                         "Comma-separated request rates in requests per second.");
  command_line.AddString("request-distribution", &distribution,
                         "Spacing of --request-rate sends: constant or poisson.");
  command_line.AddString("warmup-secs", &warmup_secs, "Warm-up of each level in seconds.");
  command_line.AddInt("warmup-requests", &options.warmup_requests,
                      "Requests that must finish during each level's warm-up too.");
  command_line.AddInt("measurement-interval-ms", &interval_ms, "Length of a window in ms.");
  command_line.AddInt("windows", &windows, "Measurement windows per level, >= 1.");
  int64_t floor_windows = options.floor_windows;
  command_line.AddInt("floor-windows", &floor_windows,
                      "Windows of the floor (ServerLive at the same level) after each level; 0: "
                      "no floor.");
  int64_t connections = 1;
  command_line.AddInt("max-outstanding", &options.max_outstanding,
                      "--request-rate: the most requests in flight; sends beyond wait.");
  command_line.AddInt("connections", &connections,
                      "gRPC connections the requests are spread over (each concurrent slot keeps "
                      "one), like that many independent clients.");
  command_line.AddInt("seed", &seed, "Seed of the random input data and Poisson spacing.");
  command_line.AddString("csv", &csv_path, "Write perf_analyzer's CSV to this file.");
  std::string timeline_path;
  command_line.AddString("timeline", &timeline_path,
                         "Write every measured request (sent at, latency) to this CSV file.");
  command_line.AddBool("streaming", &options.streaming,
                       "Send the requests over ModelStreamInfer streams instead of a call each "
                       "(see above).");
  AddSharedMemoryFlags(command_line, &shared_memory_flags);
  if (auto done = ParseCommandFlags(command_line, args, out, err)) return *done;

  if (options.model_name.empty()) return Usage(err, "perf: --model is required (see --help)");
  if (absl::Status shapes = ParseInputShapes(*shape_specs, &options.input_shapes); !shapes.ok()) {
    return Usage(err, absl::StrCat("perf: ", shapes.message()));
  }
  absl::StatusOr<SharedMemoryOptions> shared_memory = ParseSharedMemoryFlags(shared_memory_flags);
  if (!shared_memory.ok()) {
    return Usage(err, absl::StrCat("perf: ", shared_memory.status().message()));
  }
  options.shared_memory = *shared_memory;
  absl::StatusOr<PerfLevels> levels = ParseLevels(concurrency, request_rate);
  if (!levels.ok()) return Usage(err, absl::StrCat("perf: ", levels.status().message()));
  if (distribution != "constant" && distribution != "poisson") {
    return Usage(err, absl::StrCat("perf: --request-distribution is constant or poisson, got '",
                                   distribution, "'"));
  }
  double warmup = 0;
  if (!absl::SimpleAtod(warmup_secs, &warmup) || !(warmup >= 0) || !std::isfinite(warmup)) {
    return Usage(err,
                 absl::StrCat("perf: --warmup-secs wants seconds >= 0, got '", warmup_secs, "'"));
  }
  if (options.batch_size < 1 || interval_ms < 1 || windows < 1 || options.warmup_requests < 0 ||
      options.max_outstanding < 1) {
    return Usage(err,
                 "perf: --batch-size, --measurement-interval-ms, --windows and "
                 "--max-outstanding must be at least 1, --warmup-requests at least 0");
  }
  options.distribution =
      distribution == "poisson" ? RequestDistribution::kPoisson : RequestDistribution::kConstant;
  options.warmup = absl::Seconds(warmup);
  options.measurement_window = absl::Milliseconds(interval_ms);
  options.windows = static_cast<int>(windows);
  if (floor_windows < 0) return Usage(err, "perf: --floor-windows must be at least 0");
  options.floor_windows = static_cast<int>(floor_windows);
  options.seed = static_cast<uint64_t>(seed);

  if (connections < 1) return Usage(err, "perf: --connections must be at least 1");
  if (absl::Status device = CheckSharedMemoryDevice(options.shared_memory); !device.ok()) {
    return Fail(err, "perf", flags, device);
  }
  // One client per connection; the first reads metadata and statistics, and
  // registers the shared memory. Declared before the generator, whose
  // shared-memory slots unregister through it when it goes.
  std::vector<std::unique_ptr<InferenceClient>> clients;
  std::vector<InferenceClient*> senders;
  for (int64_t c = 0; c < connections; ++c) {
    absl::StatusOr<std::unique_ptr<InferenceClient>> client =
        Connect(flags, /*private_connection=*/connections > 1);
    if (!client.ok()) return Usage(err, absl::StrCat("perf: ", client.status().message()));
    clients.push_back(*std::move(client));
    senders.push_back(clients.back().get());
  }
  absl::StatusOr<std::unique_ptr<LoadGenerator>> generator =
      LoadGenerator::Create(senders, options);
  if (!generator.ok()) return Fail(err, "perf", flags, generator.status());
  out << "model " << options.model_name << ", batch " << options.batch_size << ", " << windows
      << " x " << interval_ms << " ms windows per level after " << warmup_secs << " s warm-up\n";
  if (const SharedMemorySlots* slots = (*generator)->shared_memory_slots(); slots != nullptr) {
    out << "inputs and outputs in " << SharedMemoryKindName(options.shared_memory.kind)
        << " shared memory: one " << slots->layout().byte_size
        << "-byte region per request in flight\n";
  }
  if (options.streaming) {
    out << "requests over ModelStreamInfer streams, one request at a time on each"
        << (options.floor_windows > 0 ? "; the floor over unary calls\n" : "\n");
  }
  absl::StatusOr<std::vector<LevelResult>> results = RunLevels(**generator, *levels, out);
  if (!results.ok()) return Fail(err, "perf", flags, results.status());

  out << "\n" << FormatPerfTable(levels->mode, *results);
  if (!csv_path.empty()) {
    if (absl::Status written = WriteTextFile(csv_path, FormatPerfCsv(levels->mode, *results));
        !written.ok()) {
      return Fail(err, "perf", flags, written);
    }
    out << "wrote " << csv_path << "\n";
  }
  if (!timeline_path.empty()) {
    if (absl::Status written =
            WriteTextFile(timeline_path, FormatTimelineCsv(levels->mode, *results));
        !written.ok()) {
      return Fail(err, "perf", flags, written);
    }
    out << "wrote " << timeline_path << "\n";
  }
  int64_t errors = 0;
  int64_t completed = 0;
  for (const LevelResult& result : *results) {
    errors += result.errors;
    completed += result.completed;
  }
  if (errors > 0) {
    err << kProgram << ": perf: " << errors << " of " << completed
        << " measured requests failed (see the table for the first error of each level)\n";
    return kClientExitFailure;
  }
  return kClientExitOk;
}

// The index of the command in `args`: the first argument that is neither a
// global flag nor a global flag's value. Every global flag but --help takes a
// value.
size_t CommandIndex(const std::vector<std::string>& args) {
  size_t i = 0;
  while (i < args.size() && absl::StartsWith(args[i], "-")) {
    const bool takes_next =
        args[i] != "--help" && args[i] != "-h" && !absl::StrContains(args[i], '=');
    i += takes_next ? 2 : 1;
  }
  return i;
}

}  // namespace

std::string ClientUsage() {
  return "usage: graphserve-client [--url HOST:PORT] [--timeout-ms MS] <command> [flags]\n"
         "\n"
         "A client of the KServe v2 / Open Inference Protocol gRPC service (GraphServe,\n"
         "Triton, or any server of that protocol).\n"
         "\n"
         "Commands:\n"
         "  health    grpc.health.v1's status (SERVING, NOT_SERVING): exit 0 if SERVING.\n"
         "  live      Is the server live? Exit 0 if so, 1 if not.\n"
         "  ready     Is the server, or with --model M one model, ready? Exit 0 if so, 1 if not.\n"
         "  metadata  The server's name, version and extensions; with --model M the model's\n"
         "            versions, platform and tensors.\n"
         "  config    A model's configuration in config.pbtxt format: config --model M\n"
         "  stats     Cumulative inference statistics per model version: stats [--model M]\n"
         "  infer     Send one request and print the outputs: infer --model M [--batch-size B]\n"
         "            [--input NAME=FILE ...] [--seed S] [--output-dir DIR]\n"
         "  perf      Measure throughput and latency like perf_analyzer: perf --model M\n"
         "            [--batch-size B] (--concurrency 1,2,4 | --request-rate R) [--csv FILE]\n"
         "\n"
         "Flags for every command (before or after its name):\n"
         "  --url HOST:PORT   The server's gRPC endpoint (default localhost:8001), or\n"
         "                    unix:PATH for a server's Unix domain socket.\n"
         "  --timeout-ms MS   Deadline of each call, 0 for none (default 30000).\n"
         "  --grpc-channel-args NAME=VALUE,...\n"
         "                    gRPC core channel arguments, for tuning the transport.\n"
         "  --header NAME:VALUE\n"
         "                    gRPC metadata sent with every call (repeatable), e.g. a\n"
         "                    restricted API's key or graphserve-shared-memory-owner:SECRET.\n"
         "\n"
         "`graphserve-client <command> --help` describes a command's flags.\n"
         "Exit codes: 0 success, 1 failure (e.g. unreachable server, unknown model, failed\n"
         "requests), 2 usage error.\n";
}

int RunClientCommand(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const size_t command_index = CommandIndex(args);
  ConnectionFlags flags;
  {
    CommandLine global(ClientUsage());
    AddConnectionFlags(global, &flags);
    std::vector<const char*> argv = {kProgram};
    for (size_t i = 0; i < command_index && i < args.size(); ++i) argv.push_back(args[i].c_str());
    if (absl::Status status = global.Parse(static_cast<int>(argv.size()), argv.data());
        !status.ok()) {
      return Usage(err, status.message());
    }
    if (global.help_requested() || (command_index < args.size() && args[command_index] == "help")) {
      out << ClientUsage();
      return kClientExitOk;
    }
  }
  if (command_index >= args.size()) {
    err << ClientUsage();
    return kClientExitUsage;
  }
  const std::vector<std::string> command_args(args.begin() + command_index, args.end());
  const std::string& command = command_args[0];
  if (command == "live") return RunLive(command_args, flags, out, err);
  if (command == "health") return RunHealth(command_args, flags, out, err);
  if (command == "ready") return RunReady(command_args, flags, out, err);
  if (command == "metadata") return RunMetadata(command_args, flags, out, err);
  if (command == "config") return RunConfig(command_args, flags, out, err);
  if (command == "stats") return RunStats(command_args, flags, out, err);
  if (command == "infer") return RunInfer(command_args, flags, out, err);
  if (command == "perf") return RunPerf(command_args, flags, out, err);
  return Usage(err, absl::StrCat("unknown command '", command, "' (see --help)"));
}

}  // namespace graphserve
