#pragma once
// Builds an InferRequest for a model from what the server says about it
// (ModelMetadata, and ModelConfig when the server has it): each input gets its
// datatype and shape, the batch dimension set to the batch size, and either
// bytes the caller gives or random data. The load generator builds its
// request once this way and reuses it; `graphserve-client infer` sends one.

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/inference_client.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"

namespace graphserve {

struct RequestBuilderOptions {
  // Sent as the request's model_version. Empty: the server's choice.
  std::string model_version;

  // Rows in the batch dimension. Must be 1 for a model that does not batch,
  // and at most max_batch_size for one that does.
  int64_t batch_size = 1;

  // Seed of the random input data: the same seed gives the same bytes.
  uint64_t seed = 0;

  // Input bytes by input name (raw little-endian, the whole batch); inputs
  // not named here get random data. The size must match the input's shape.
  std::map<std::string, std::string> provided_inputs;

  // Per input name, its dims past the batch dim (all its dims for a model
  // that does not batch), as perf_analyzer's --shape NAME:D1,D2 gives them:
  // what an input whose metadata has -1 there (a sequence length, an
  // image's size) is sent at. Fixed dims must be given as they are.
  std::map<std::string, std::vector<int64_t>> input_shapes;

  // Outputs to ask for. Empty: all.
  std::vector<std::string> requested_outputs;
};

// `config` may be null (a server without the ModelConfig extension): the
// model then counts as batching when every input's first dimension is -1.
// InvalidArgument, naming the input, for a batch size the model does not
// take, a variable dimension other than the batch that input_shapes does not
// give, an input shape of another rank or other fixed dims, a datatype
// without a fixed size, provided bytes of the wrong size, bytes or a shape
// for an unknown input.
absl::StatusOr<InferRequest> BuildRequest(const inference::ModelMetadataResponse& metadata,
                                          const inference::ModelConfig* config,
                                          const RequestBuilderOptions& options);

// An output a request asks for and the bytes it will come back as.
struct ExpectedOutput {
  std::string name;
  std::string datatype;
  // The metadata's shape with the batch dimension set to the batch size;
  // other variable dimensions stay -1.
  std::vector<int64_t> shape;
  // At the request's batch size; nullopt when a dimension other than the
  // batch varies or the datatype has no fixed size (BYTES): only the
  // response can tell.
  std::optional<int64_t> byte_size;
};

// The outputs a request BuildRequest builds from the same arguments asks
// for: options.requested_outputs in that order, or every output of the
// metadata. InvalidArgument naming an output the model does not have, and
// for what BuildRequest refuses about the batch size.
absl::StatusOr<std::vector<ExpectedOutput>> ExpectedOutputs(
    const inference::ModelMetadataResponse& metadata, const inference::ModelConfig* config,
    const RequestBuilderOptions& options);

// Random little-endian bytes for `count` elements of `datatype`: FP32, FP64
// uniform in [-1, 1); FP16, BF16 from {0, ±0.25, ±0.5, ±1}; integers
// uniform in [0, 100), small and non-negative because integer inputs are
// often indices; BOOL 0 or 1. InvalidArgument for BYTES and unknown names.
absl::StatusOr<std::string> RandomTensorData(absl::string_view datatype, int64_t count,
                                             std::mt19937_64& rng);

}  // namespace graphserve
