#pragma once
// The KServe v2 HTTP/REST protocol's JSON bodies, and Triton's binary tensor
// data extension, converted to and from the protocol's messages
// (proto/grpc_service.proto), so that the HTTP endpoint hands the same
// requests to InferenceProtocol as gRPC does.
//
// An inference request body is a JSON object, optionally followed by binary
// tensors: the header `Inference-Header-Content-Length: N` says the JSON is
// the first N bytes, and each input with `"parameters": {"binary_data_size":
// B}` takes the next B bytes, in input order. Outputs asked for with
// `"parameters": {"binary_data": true}` (or every output, with the request
// parameter `"binary_data_output": true`) come back the same way.
//
// Shared memory: an input or output whose parameters name a
// "shared_memory_region" (with "shared_memory_byte_size" and optionally
// "shared_memory_offset") carries no data; its parameters go into the
// tensor's, as gRPC carries them, and request validation reads them
// (server/request_validation.h). Such an output comes back as Triton's does:
// name, datatype and shape, with no parameters and no data, its rows in the
// region.
//
// Classification: an output's `"parameters": {"classification": k}` goes
// into its parameters as gRPC carries it; the BYTES tensor of classes that
// answers it comes back as a JSON array of strings, or as binary data in the
// protocol's BYTES serialization (Note [Classification] in
// server/classification.h).

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// How deeply a request body's JSON may nest: arrays and objects inside one
// another. An inference request's "data" nests once per dimension (Triton
// accepts nested or flat data), so 32 is far more than any tensor has, and
// small enough that no JSON value from a client costs more than a bounded
// walk (Note [JSON nesting depth]).
inline constexpr int kDefaultMaxJsonDepth = 32;

// InvalidArgument naming `max_depth` (and the flag that sets it) when the
// JSON text nests arrays and objects more than `max_depth` deep. Linear in
// the text, with no recursion; brackets inside strings do not count.
absl::Status CheckJsonDepth(std::string_view text, int max_depth);

struct HttpInferRequest {
  inference::ModelInferRequest request;
  // Outputs to return as binary data; `all_binary`: every output.
  std::set<std::string> binary_outputs;
  bool all_binary = false;
};

// `body` is the whole request body; `header_length` the JSON's length (the
// Inference-Header-Content-Length header), or the body's size without it.
// Every input's tensor goes into raw_input_contents, but for inputs in shared
// memory. InvalidArgument says what is wrong, quoting at most a short prefix
// of what was sent; JSON nested deeper than `max_json_depth` is refused
// before it is parsed (CheckJsonDepth).
absl::StatusOr<HttpInferRequest> ParseInferRequest(std::string_view body, size_t header_length,
                                                   const std::string& model_name,
                                                   const std::string& model_version,
                                                   int max_json_depth = kDefaultMaxJsonDepth);

// A response body: `header_length` is the JSON's length when binary outputs
// follow it (0: the body is JSON alone).
struct HttpBody {
  std::string content;
  size_t header_length = 0;
};

HttpBody InferResponseToHttp(const inference::ModelInferResponse& response,
                             const HttpInferRequest& request);

// The other endpoints' JSON, as Triton's HTTP endpoint writes them.
std::string ServerMetadataToJson(const inference::ServerMetadataResponse& metadata);
std::string ModelMetadataToJson(const inference::ModelMetadataResponse& metadata);
// config.pbtxt's fields by their proto names (max_batch_size, ...).
std::string ModelConfigToJson(const inference::ModelConfig& config);
std::string ModelStatisticsToJson(const inference::ModelStatisticsResponse& statistics);
// The body of POST /v2/systemsharedmemory/region/NAME/register:
// {"key": "/shm_key", "offset": 0, "byte_size": 1024}, offset optional.
absl::StatusOr<inference::SystemSharedMemoryRegisterRequest> ParseSystemSharedMemoryRegister(
    std::string_view body, const std::string& name);
// The body of POST /v2/cudasharedmemory/region/NAME/register:
// {"raw_handle": {"b64": BASE64 of the cudaIpcMemHandle_t}, "device_id": 0,
// "byte_size": 1024}.
absl::StatusOr<inference::CudaSharedMemoryRegisterRequest> ParseCudaSharedMemoryRegister(
    std::string_view body, const std::string& name);
// Triton's shared-memory status bodies: a JSON array of the regions, by name:
// [{"name", "key", "offset", "byte_size"}] (system), [{"name", "device_id",
// "byte_size"}] (CUDA).
std::string SystemSharedMemoryStatusToJson(
    const inference::SystemSharedMemoryStatusResponse& status);
std::string CudaSharedMemoryStatusToJson(const inference::CudaSharedMemoryStatusResponse& status);
// Triton's model repository extension. The index body is optional JSON
// {"ready": bool}; the answer is a JSON array [{"name", "version", "state",
// "reason"}], each field left out when empty, as Triton leaves out all but
// the name for a model it never loaded.
absl::StatusOr<inference::RepositoryIndexRequest> ParseRepositoryIndex(std::string_view body);
std::string RepositoryIndexToJson(const inference::RepositoryIndexResponse& index);
// The bodies of POST /v2/repository/models/NAME/load and .../unload: optional
// JSON {"parameters": {"config": "<JSON config>", ...}}. Strings, booleans and
// integers become the parameters gRPC carries, so that InferenceProtocol
// judges both transports' parameters alike (tritonclient.http's unload always
// sends {"unload_dependents": bool}).
absl::StatusOr<inference::RepositoryModelLoadRequest> ParseRepositoryModelLoad(
    std::string_view body, const std::string& name);
absl::StatusOr<inference::RepositoryModelUnloadRequest> ParseRepositoryModelUnload(
    std::string_view body, const std::string& name);
// {"error": message}.
std::string ErrorJson(absl::string_view message);

}  // namespace graphserve
