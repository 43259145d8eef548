#include "client/request_builder.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/datatype.h"
#include "common/status.h"

namespace graphserve {
namespace {

template <typename T>
void AppendValue(T value, std::string* bytes) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes->append(raw, sizeof(T));
}

template <typename T>
std::string RandomIntegers(int64_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> distribution(0, 99);
  std::string bytes;
  bytes.reserve(count * sizeof(T));
  for (int64_t i = 0; i < count; ++i) AppendValue(static_cast<T>(distribution(rng)), &bytes);
  return bytes;
}

template <typename T>
std::string RandomReals(int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<T> distribution(-1, 1);
  std::string bytes;
  bytes.reserve(count * sizeof(T));
  for (int64_t i = 0; i < count; ++i) AppendValue(distribution(rng), &bytes);
  return bytes;
}

// Half-precision patterns of exactly representable values, so that the data
// needs no float-to-half conversion and holds no NaN or infinity.
std::string RandomHalves(const uint16_t (&patterns)[7], int64_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> pick(0, 6);
  std::string bytes;
  bytes.reserve(count * 2);
  for (int64_t i = 0; i < count; ++i) AppendValue(patterns[pick(rng)], &bytes);
  return bytes;
}

constexpr uint16_t kFp16Patterns[7] = {0x0000, 0x3400, 0xB400, 0x3800, 0xB800, 0x3C00, 0xBC00};
constexpr uint16_t kBf16Patterns[7] = {0x0000, 0x3E80, 0xBE80, 0x3F00, 0xBF00, 0x3F80, 0xBF80};

// Whether dim 0 of every tensor is the batch.
absl::StatusOr<bool> ModelBatches(const inference::ModelMetadataResponse& metadata,
                                  const inference::ModelConfig* config) {
  if (config != nullptr) return config->max_batch_size() > 0;
  for (const auto& input : metadata.inputs()) {
    if (input.shape().empty() || input.shape(0) != -1) return false;
  }
  return true;
}

absl::Status CheckBatchSize(const inference::ModelMetadataResponse& metadata,
                            const inference::ModelConfig* config, bool batches,
                            int64_t batch_size) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size must be at least 1, got ", batch_size));
  }
  if (!batches && batch_size != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", metadata.name(), "' does not batch; its batch size is 1, not ", batch_size));
  }
  if (config != nullptr && batches && batch_size > config->max_batch_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", batch_size, " exceeds the max_batch_size ",
                     config->max_batch_size(), " of model '", metadata.name(), "'"));
  }
  return absl::OkStatus();
}

// Sets `shape`'s dims past the batch dim (all of them when the model does
// not batch) to `dims`, which must keep the metadata's rank and fixed dims.
absl::Status ApplyInputShape(const inference::ModelMetadataResponse::TensorMetadata& metadata,
                             bool batches, const std::vector<int64_t>& dims,
                             std::vector<int64_t>* shape) {
  const size_t first = batches ? 1 : 0;
  bool fits = shape->size() - first == dims.size();
  for (size_t d = 0; fits && d < dims.size(); ++d) {
    const int64_t declared = metadata.shape(static_cast<int>(first + d));
    fits = dims[d] >= 0 && (declared == -1 || declared == dims[d]);
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shape ", metadata.name(), ":", absl::StrJoin(dims, ","),
                     " does not fit input ", metadata.name(), " ", FormatShape(metadata.shape()),
                     batches ? " (give the dims past the batch dim, -1 where the model takes any)"
                             : " (give every dim, -1 where the model takes any)"));
  }
  std::copy(dims.begin(), dims.end(), shape->begin() + static_cast<std::ptrdiff_t>(first));
  return absl::OkStatus();
}

absl::StatusOr<InferTensor> BuildInput(
    const inference::ModelMetadataResponse::TensorMetadata& metadata, bool batches,
    int64_t batch_size, const RequestBuilderOptions& options, std::mt19937_64& rng) {
  InferTensor tensor{.name = metadata.name(), .datatype = metadata.datatype()};
  tensor.shape.assign(metadata.shape().begin(), metadata.shape().end());
  if (batches) {
    if (tensor.shape.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", tensor.name, " has no batch dimension in its shape []"));
    }
    tensor.shape[0] = batch_size;
  }
  if (auto given = options.input_shapes.find(tensor.name); given != options.input_shapes.end()) {
    RETURN_IF_ERROR(ApplyInputShape(metadata, batches, given->second, &tensor.shape));
  }
  absl::StatusOr<int64_t> bytes = TensorByteSize(tensor.datatype, tensor.shape);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input ", tensor.name, " (", tensor.datatype, " ", FormatShape(metadata.shape()),
        "): ", bytes.status().message(), "; the client sends fixed-size tensors only"));
  }
  if (auto provided = options.provided_inputs.find(tensor.name);
      provided != options.provided_inputs.end()) {
    if (static_cast<int64_t>(provided->second.size()) != *bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", tensor.name, ": ", tensor.datatype, " ", FormatShape(tensor.shape),
                       " needs ", *bytes, " bytes, got ", provided->second.size()));
    }
    tensor.data = provided->second;
    return tensor;
  }
  ASSIGN_OR_RETURN(const int64_t count, ElementCount(tensor.shape));
  ASSIGN_OR_RETURN(tensor.data, RandomTensorData(tensor.datatype, count, rng));
  return tensor;
}

}  // namespace

absl::StatusOr<std::string> RandomTensorData(absl::string_view datatype, int64_t count,
                                             std::mt19937_64& rng) {
  if (datatype == "FP32") return RandomReals<float>(count, rng);
  if (datatype == "FP64") return RandomReals<double>(count, rng);
  if (datatype == "FP16") return RandomHalves(kFp16Patterns, count, rng);
  if (datatype == "BF16") return RandomHalves(kBf16Patterns, count, rng);
  if (datatype == "INT8") return RandomIntegers<int8_t>(count, rng);
  if (datatype == "INT16") return RandomIntegers<int16_t>(count, rng);
  if (datatype == "INT32") return RandomIntegers<int32_t>(count, rng);
  if (datatype == "INT64") return RandomIntegers<int64_t>(count, rng);
  if (datatype == "UINT8") return RandomIntegers<uint8_t>(count, rng);
  if (datatype == "UINT16") return RandomIntegers<uint16_t>(count, rng);
  if (datatype == "UINT32") return RandomIntegers<uint32_t>(count, rng);
  if (datatype == "UINT64") return RandomIntegers<uint64_t>(count, rng);
  if (datatype == "BOOL") {
    std::bernoulli_distribution coin(0.5);
    std::string bytes(static_cast<size_t>(count), '\0');
    for (char& byte : bytes) byte = coin(rng) ? 1 : 0;
    return bytes;
  }
  // BYTES or an unknown name: DatatypeByteSize says which.
  absl::Status status = DatatypeByteSize(datatype).status();
  if (status.ok()) status = absl::InternalError(absl::StrCat("no random data for ", datatype));
  return status;
}

absl::StatusOr<InferRequest> BuildRequest(const inference::ModelMetadataResponse& metadata,
                                          const inference::ModelConfig* config,
                                          const RequestBuilderOptions& options) {
  ASSIGN_OR_RETURN(const bool batches, ModelBatches(metadata, config));
  RETURN_IF_ERROR(CheckBatchSize(metadata, config, batches, options.batch_size));

  std::set<std::string> input_names;
  for (const auto& input : metadata.inputs()) input_names.insert(input.name());
  std::vector<std::string> named;
  for (const auto& [name, bytes] : options.provided_inputs) named.push_back(name);
  for (const auto& [name, dims] : options.input_shapes) named.push_back(name);
  for (const std::string& name : named) {
    if (input_names.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("model '", metadata.name(), "' has no input '", name,
                       "' (inputs: ", absl::StrJoin(input_names, ", "), ")"));
    }
  }

  InferRequest request{.model_name = metadata.name(),
                       .model_version = options.model_version,
                       .requested_outputs = options.requested_outputs};
  // One generator for all inputs, drawn in the metadata's order: the same
  // seed gives the same request.
  std::mt19937_64 rng(options.seed);
  for (const auto& input : metadata.inputs()) {
    ASSIGN_OR_RETURN(InferTensor tensor,
                     BuildInput(input, batches, options.batch_size, options, rng));
    request.inputs.push_back(std::move(tensor));
  }
  return request;
}

absl::StatusOr<std::vector<ExpectedOutput>> ExpectedOutputs(
    const inference::ModelMetadataResponse& metadata, const inference::ModelConfig* config,
    const RequestBuilderOptions& options) {
  ASSIGN_OR_RETURN(const bool batches, ModelBatches(metadata, config));
  RETURN_IF_ERROR(CheckBatchSize(metadata, config, batches, options.batch_size));
  auto expect = [&](const inference::ModelMetadataResponse::TensorMetadata& tensor) {
    ExpectedOutput output{.name = tensor.name(),
                          .datatype = tensor.datatype(),
                          .shape = {tensor.shape().begin(), tensor.shape().end()}};
    if (batches && !output.shape.empty()) output.shape[0] = options.batch_size;
    // A -1 left in the shape, or BYTES, has no size before the response.
    if (absl::StatusOr<int64_t> bytes = TensorByteSize(output.datatype, output.shape); bytes.ok()) {
      output.byte_size = *bytes;
    }
    return output;
  };
  std::vector<ExpectedOutput> outputs;
  if (options.requested_outputs.empty()) {
    for (const auto& tensor : metadata.outputs()) outputs.push_back(expect(tensor));
    return outputs;
  }
  for (const std::string& name : options.requested_outputs) {
    const auto tensor = std::find_if(metadata.outputs().begin(), metadata.outputs().end(),
                                     [&](const auto& output) { return output.name() == name; });
    if (tensor == metadata.outputs().end()) {
      std::vector<std::string> names;
      for (const auto& output : metadata.outputs()) names.push_back(output.name());
      return absl::InvalidArgumentError(
          absl::StrCat("model '", metadata.name(), "' has no output '", name,
                       "' (outputs: ", absl::StrJoin(names, ", "), ")"));
    }
    outputs.push_back(expect(*tensor));
  }
  return outputs;
}

}  // namespace graphserve
