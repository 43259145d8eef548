#include "server/request_validation.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/number_text.h"
#include "common/status.h"
#include "server/bytes_tensor.h"
#include "server/classification.h"
#include "server/client_text.h"

namespace graphserve {

// Raw contents are little-endian by the protocol and typed contents are in host
// order; both are handed on in place, which is only right on a little-endian host.
static_assert(std::endian::native == std::endian::little, "GraphServe reads tensors in place");

namespace {

using InputTensor = inference::ModelInferRequest::InferInputTensor;
using ParameterMap = google::protobuf::Map<std::string, inference::InferParameter>;

// The index of the tensor called `name` in `specs` (the model's inputs or
// outputs, `kind` saying which), or an error that lists the names there are.
absl::StatusOr<size_t> FindTensor(const std::vector<TensorSpec>& specs, const std::string& name,
                                  const char* kind, const ModelInterface& model) {
  for (size_t index = 0; index < specs.size(); ++index) {
    if (specs[index].name == name) return index;
  }
  const std::string names = absl::StrJoin(
      specs, ", ",
      [](std::string* out, const TensorSpec& spec) { absl::StrAppend(out, "'", spec.name, "'"); });
  // Note [Quoting client text]: `name` is the client's. Triton's text first
  // (Note [Triton's error texts] in server/model_registry.cc).
  return absl::InvalidArgumentError(absl::StrCat("unexpected inference ", kind, " ",
                                                 QuoteClientText(name), " for model '", model.name,
                                                 "'; its ", kind, "s are ", names));
}

// Triton's prefix of a request's errors: "[request id: ID] ", with
// <id_unknown> for a request without one.
std::string LogRequest(const inference::ModelInferRequest& request) {
  return absl::StrCat("[request id: ",
                      request.id().empty() ? "<id_unknown>" : ClientTextPrefix(request.id()),
                      "] ");
}

// The client's shape, bounded: a request may carry thousands of dims (Note
// [Quoting client text]).
std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return ClientTextPrefix(DimsToString(Dims(shape.begin(), shape.end())));
}

// The InferTensorContents field that holds elements of `dtype`, and how
// many it holds. FP16 and BF16 have none: they travel as raw bytes only.
struct TypedContents {
  const char* field = nullptr;
  int count = 0;
};

TypedContents TypedContentsOf(DType dtype, const inference::InferTensorContents& contents) {
  switch (dtype) {
    case DType::kBool: return {"bool_contents", contents.bool_contents_size()};
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32: return {"int_contents", contents.int_contents_size()};
    case DType::kInt64: return {"int64_contents", contents.int64_contents_size()};
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32: return {"uint_contents", contents.uint_contents_size()};
    case DType::kUInt64: return {"uint64_contents", contents.uint64_contents_size()};
    case DType::kFloat32: return {"fp32_contents", contents.fp32_contents_size()};
    case DType::kFloat64: return {"fp64_contents", contents.fp64_contents_size()};
    case DType::kFloat16:
    case DType::kBFloat16: return {};
  }
  return {};
}

// The elements of a typed field as `T`'s bytes, appended to `bytes`; an
// element the narrower T cannot hold (300 in an INT8 tensor's int_contents)
// is refused, naming its index.
template <typename T, typename Repeated>
absl::Status NarrowInto(const Repeated& values, const TensorSpec& spec,
                        const ModelInterface& model, std::vector<std::byte>& bytes) {
  bytes.resize(static_cast<size_t>(values.size()) * sizeof(T));
  for (int i = 0; i < values.size(); ++i) {
    const auto value = values.Get(i);
    const T element = static_cast<T>(value);
    if (static_cast<decltype(value)>(element) != value) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", spec.name, "' of model '", model.name, "': element ", i, " (", value,
          ") is outside the range of ", KServeDatatype(spec.dtype)));
    }
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &element, sizeof(T));
  }
  return absl::OkStatus();
}

// The non-empty fields of `contents`, in field order.
std::vector<const char*> FilledTypedFields(const inference::InferTensorContents& contents) {
  std::vector<const char*> filled;
  if (!contents.bool_contents().empty()) filled.push_back("bool_contents");
  if (!contents.int_contents().empty()) filled.push_back("int_contents");
  if (!contents.int64_contents().empty()) filled.push_back("int64_contents");
  if (!contents.uint_contents().empty()) filled.push_back("uint_contents");
  if (!contents.uint64_contents().empty()) filled.push_back("uint64_contents");
  if (!contents.fp32_contents().empty()) filled.push_back("fp32_contents");
  if (!contents.fp64_contents().empty()) filled.push_back("fp64_contents");
  if (!contents.bytes_contents().empty()) filled.push_back("bytes_contents");
  return filled;
}

// A tensor's shared-memory parameters (the extension's names and types).
struct SharedMemoryParameters {
  std::string region;
  uint64_t offset = 0;
  uint64_t byte_size = 0;
};

// "input 'x' of model 'mlp'": how messages about one tensor start.
std::string TensorDescription(const char* kind, const std::string& name,
                              const ModelInterface& model) {
  return absl::StrCat(kind, " ", QuoteClientText(name), " of model '", model.name, "'");
}

// Parameter `key` as a byte count: an int64_param (what tritonclient sends)
// or a uint64_param, not negative.
absl::StatusOr<uint64_t> ByteCountParameter(const inference::InferParameter& parameter,
                                            const char* key, const std::string& where) {
  if (parameter.has_uint64_param()) return parameter.uint64_param();
  if (parameter.has_int64_param() && parameter.int64_param() >= 0) {
    return static_cast<uint64_t>(parameter.int64_param());
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": ", key, " must be an int64_param of at least 0"));
}

// The tensor's shared-memory parameters, or nullopt when it names no region.
// The region and byte_size come together or not at all (as in Triton); the
// offset is optional. Without `shared_memory` a region is refused: the
// tensor's data would otherwise be read as missing or, for an output, never
// reach the client's region.
absl::StatusOr<std::optional<SharedMemoryParameters>> ReadSharedMemoryParameters(
    const ParameterMap& parameters, const char* kind, const std::string& name,
    const ModelInterface& model, const SharedMemoryRegistry* shared_memory) {
  const auto region = parameters.find("shared_memory_region");
  const auto byte_size = parameters.find("shared_memory_byte_size");
  const auto offset = parameters.find("shared_memory_offset");
  const std::string where = TensorDescription(kind, name, model);
  if (region == parameters.end()) {
    if (byte_size != parameters.end() || offset != parameters.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       " has shared_memory_byte_size or shared_memory_offset but no "
                       "shared_memory_region"));
    }
    return std::nullopt;
  }
  if (shared_memory == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        where,
        " names a shared_memory_region; this server has no shared-memory regions: send "
        "the data in the request"));
  }
  if (!region->second.has_string_param()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": shared_memory_region must be a string_param"));
  }
  SharedMemoryParameters read;
  read.region = region->second.string_param();
  if (byte_size == parameters.end()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " names shared_memory_region ",
                                                   QuoteClientText(read.region),
                                                   " without shared_memory_byte_size"));
  }
  ASSIGN_OR_RETURN(read.byte_size,
                   ByteCountParameter(byte_size->second, "shared_memory_byte_size", where));
  if (offset != parameters.end()) {
    ASSIGN_OR_RETURN(read.offset,
                     ByteCountParameter(offset->second, "shared_memory_offset", where));
  }
  return read;
}

// The range the parameters name, the region held by `validated` until the
// request ends (Note [Shared memory lifetime]).
absl::StatusOr<SharedMemorySlice> HoldSlice(const SharedMemoryParameters& parameters,
                                            const std::string& where,
                                            const SharedMemoryRegistry& shared_memory,
                                            ValidatedRequest* validated) {
  absl::StatusOr<SharedMemorySlice> slice =
      shared_memory.Slice(parameters.region, parameters.offset, parameters.byte_size);
  if (!slice.ok()) {
    return absl::Status(slice.status().code(), absl::StrCat(where, ": ", slice.status().message()));
  }
  validated->regions.push_back(slice->region);
  return slice;
}

// Any byte but 0 or 1 is not a bool the executors may read. `source` says
// where the bytes came from ("raw", "shared-memory").
absl::Status CheckBoolBytes(const std::byte* bytes, size_t size, const char* source,
                            const TensorSpec& spec, const ModelInterface& model) {
  for (size_t i = 0; i < size; ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    if (byte > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", spec.name, "' of model '", model.name, "': ", source, " BOOL element ", i,
          " is byte ", static_cast<int>(byte), "; BOOL elements are bytes 0 or 1"));
    }
  }
  return absl::OkStatus();
}

// Checks datatype and shape against `spec`; returns the batch (dim 0), 1 for a
// model that does not batch.
absl::StatusOr<int64_t> CheckDatatypeAndShape(const InputTensor& tensor, const TensorSpec& spec,
                                              const ModelInterface& model,
                                              absl::string_view log_request) {
  if (tensor.datatype() != spec.datatype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        log_request, "inference input '", spec.name, "' data-type is ",
        QuoteClientText(tensor.datatype()), ", but model '", model.name, "' expects '",
        spec.datatype(), "'"));
  }
  // Only equality is tested, so a negative or huge dim is refused without any
  // arithmetic on it. A model that does not batch takes its full dims, one row.
  // A passed string's -1 takes any extent: nothing but the client reads it.
  const int batch_dims = model.batching ? 1 : 0;
  bool shape_matches = tensor.shape_size() == static_cast<int>(spec.dims.size()) + batch_dims;
  for (size_t d = 0; shape_matches && d < spec.dims.size(); ++d) {
    const int64_t dim = tensor.shape(static_cast<int>(d) + batch_dims);
    shape_matches = spec.dims[d] == -1 ? spec.wire == TensorWire::kPassed && dim >= 0
                                       : dim == spec.dims[d];
  }
  if (!shape_matches) {
    return absl::InvalidArgumentError(absl::StrCat(
        log_request, "unexpected shape for input '", spec.name, "' for model '", model.name,
        "'. Expected ", ClientShapeString(spec, model.batching), ", got ",
        ShapeString(tensor.shape()),
        model.batching ? " (the batch dimension first)" : " (the model does not batch)"));
  }
  if (!model.batching) return 1;
  const int64_t rows = tensor.shape(0);
  if (rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' has batch ", rows, " (shape ", ShapeString(tensor.shape()),
        "); model '", model.name, "' needs a batch (dim 0) of at least 1"));
  }
  if (rows > model.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        log_request, "inference request batch-size must be <= ", model.max_batch_size, " for '",
        model.name, "': batch ", rows, " exceeds max_batch_size ", model.max_batch_size,
        " (input '", spec.name, "' has shape ", ShapeString(tensor.shape()), ")"));
  }
  return rows;
}

// Bytes (or elements, with element_size 1) of `rows` rows of `spec`. The
// interface bounds this for max_batch_size rows (InterfaceFromConfig); an
// interface built another way still gets an error rather than a wrapped count.
absl::StatusOr<size_t> CheckedRowsSize(int64_t rows, const TensorSpec& spec, size_t per_row,
                                       const ModelInterface& model) {
  size_t size = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(rows), per_row, &size)) {
    return absl::InvalidArgumentError(absl::StrCat("input '", spec.name, "' of model '", model.name,
                                                   "': batch ", rows, " is too large to address"));
  }
  return size;
}

absl::StatusOr<const std::byte*> RawInput(const std::string& raw, const InputTensor& tensor,
                                          const TensorSpec& spec, int64_t rows,
                                          const ModelInterface& model,
                                          absl::string_view log_request) {
  ASSIGN_OR_RETURN(const size_t expected, CheckedRowsSize(rows, spec, spec.bytes_per_row(), model));
  if (raw.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        log_request, "input byte size mismatch for input '", spec.name, "' for model '",
        model.name, "'. Expected ", expected, ", got ", raw.size(),
        " (bytes in raw_input_contents for shape ", ShapeString(tensor.shape()), " ",
        KServeDatatype(spec.dtype), ")"));
  }
  const auto* data = reinterpret_cast<const std::byte*>(raw.data());
  if (spec.dtype == DType::kBool)
    RETURN_IF_ERROR(CheckBoolBytes(data, raw.size(), "raw", spec, model));
  return data;
}

// An input read in place from a shared-memory region, in the memory it
// lies in: its byte_size must be the shape's bytes, as raw_input_contents'
// size must.
absl::StatusOr<InputRows> SharedMemoryInput(const SharedMemoryParameters& parameters,
                                            const InputTensor& tensor, const TensorSpec& spec,
                                            int64_t rows, const ModelInterface& model,
                                            const SharedMemoryRegistry& shared_memory,
                                            std::optional<int> device_memory_gpu,
                                            ValidatedRequest* validated) {
  const std::string where = TensorDescription("input", spec.name, model);
  ASSIGN_OR_RETURN(const SharedMemorySlice slice,
                   HoldSlice(parameters, where, shared_memory, validated));
  ASSIGN_OR_RETURN(const size_t expected, CheckedRowsSize(rows, spec, spec.bytes_per_row(), model));
  if (slice.byte_size != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": shared_memory_byte_size ", slice.byte_size, " in shared memory region ",
        QuoteClientText(parameters.region), ", expected ", expected, " for shape ",
        ShapeString(tensor.shape()), " ", KServeDatatype(spec.dtype)));
  }
  InputRows input{slice.data, spec.bytes_per_row(), RowMemory::kPageable};
  if (slice.region->kind() == RegionKind::kSystem && slice.region->pinned()) {
    input.memory = RowMemory::kPinned;
  }
  if (slice.region->kind() == RegionKind::kCuda && device_memory_gpu == slice.region->device_id() &&
      spec.dtype != DType::kBool) {
    // Left on the device (Note [CUDA shared memory]).
    input.memory = RowMemory::kDevice;
    return input;
  }
  if (slice.region->kind() == RegionKind::kCuda) {
    // Read through the host (Note [CUDA shared memory]).
    std::vector<std::byte>& host = validated->converted.emplace_back(slice.byte_size);
    RETURN_IF_ERROR(CopyFromSlice(slice, host.data()));
    input.data = host.data();
  }
  if (spec.dtype == DType::kBool) {
    RETURN_IF_ERROR(CheckBoolBytes(input.data, slice.byte_size, "shared-memory", spec, model));
  }
  return input;
}

absl::StatusOr<const std::byte*> TypedInput(const InputTensor& tensor, const TensorSpec& spec,
                                            int64_t rows, const ModelInterface& model,
                                            std::vector<std::vector<std::byte>>* converted) {
  const inference::InferTensorContents& contents = tensor.contents();
  const TypedContents typed = TypedContentsOf(spec.dtype, contents);
  if (typed.field == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' of model '", model.name, "' is ", KServeDatatype(spec.dtype),
        ", which has no typed contents field; send it in raw_input_contents"));
  }
  const std::vector<const char*> filled = FilledTypedFields(contents);
  if (filled.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", spec.name, "' of model '", model.name,
                     "' has no data; send it in raw_input_contents or in contents.", typed.field));
  }
  for (const char* other : filled) {
    if (std::strcmp(other, typed.field) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", spec.name, "' of model '", model.name, "' is ",
                       KServeDatatype(spec.dtype), " but carries contents.", other, "; ",
                       KServeDatatype(spec.dtype), " elements go in contents.", typed.field));
    }
  }
  ASSIGN_OR_RETURN(const size_t expected,
                   CheckedRowsSize(rows, spec, static_cast<size_t>(NumElements(spec.dims)), model));
  if (static_cast<size_t>(typed.count) != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' of model '", model.name, "': ", typed.count,
        " elements in contents.", typed.field, ", expected ", expected, " for shape ",
        ShapeString(tensor.shape())));
  }
  // Read in place where the field's element type is the tensor's; copied
  // (narrowed, checked) where it is wider.
  switch (spec.dtype) {
    case DType::kFloat32:
      return reinterpret_cast<const std::byte*>(contents.fp32_contents().data());
    case DType::kFloat64:
      return reinterpret_cast<const std::byte*>(contents.fp64_contents().data());
    case DType::kInt32:
      return reinterpret_cast<const std::byte*>(contents.int_contents().data());
    case DType::kInt64:
      return reinterpret_cast<const std::byte*>(contents.int64_contents().data());
    case DType::kUInt32:
      return reinterpret_cast<const std::byte*>(contents.uint_contents().data());
    case DType::kUInt64:
      return reinterpret_cast<const std::byte*>(contents.uint64_contents().data());
    case DType::kBool: {
      // Written as bytes rather than read in place: the protocol's raw BOOL is a
      // byte holding 0 or 1, which C++ does not promise for bool's object form.
      std::vector<std::byte>& bytes = converted->emplace_back(typed.count);
      for (int i = 0; i < typed.count; ++i) {
        bytes[i] = std::byte{contents.bool_contents(i) ? uint8_t{1} : uint8_t{0}};
      }
      return bytes.data();
    }
    case DType::kInt8:
      RETURN_IF_ERROR(
          NarrowInto<int8_t>(contents.int_contents(), spec, model, converted->emplace_back()));
      return converted->back().data();
    case DType::kInt16:
      RETURN_IF_ERROR(
          NarrowInto<int16_t>(contents.int_contents(), spec, model, converted->emplace_back()));
      return converted->back().data();
    case DType::kUInt8:
      RETURN_IF_ERROR(
          NarrowInto<uint8_t>(contents.uint_contents(), spec, model, converted->emplace_back()));
      return converted->back().data();
    case DType::kUInt16:
      RETURN_IF_ERROR(
          NarrowInto<uint16_t>(contents.uint_contents(), spec, model, converted->emplace_back()));
      return converted->back().data();
    case DType::kFloat16:
    case DType::kBFloat16:
      break;  // refused above: no typed field
  }
  return absl::InternalError("unreachable: a dtype without typed contents");
}

// The elements of a BYTES input (Note [BYTES serialization]), `count` of
// them, from where the request put them: a shared-memory range `region`,
// whose byte_size is their serialized size (a CUDA region's copied to the
// host first), the raw_input_contents entry `raw`, or else
// contents.bytes_contents.
absl::StatusOr<std::vector<absl::string_view>> BytesInputElements(
    const InputTensor& tensor, const std::optional<SharedMemoryParameters>& region,
    const std::string* raw, int64_t count, const TensorSpec& spec, const ModelInterface& model,
    const SharedMemoryRegistry* shared_memory, absl::string_view log_request,
    ValidatedRequest* validated) {
  const std::string where = TensorDescription("input", spec.name, model);
  absl::string_view data;
  std::string source;
  if (region.has_value()) {
    ASSIGN_OR_RETURN(const SharedMemorySlice slice,
                     HoldSlice(*region, where, *shared_memory, validated));
    data = absl::string_view(reinterpret_cast<const char*>(slice.data), slice.byte_size);
    if (slice.region->kind() == RegionKind::kCuda) {
      std::vector<std::byte>& host = validated->converted.emplace_back(slice.byte_size);
      RETURN_IF_ERROR(CopyFromSlice(slice, host.data()));
      data = absl::string_view(reinterpret_cast<const char*>(host.data()), host.size());
    }
    source = absl::StrCat("shared memory region ", QuoteClientText(region->region));
  } else if (raw != nullptr) {
    data = *raw;
    source = "raw_input_contents";
  } else {
    const inference::InferTensorContents& contents = tensor.contents();
    for (const char* other : FilledTypedFields(contents)) {
      if (std::strcmp(other, "bytes_contents") != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " is BYTES but carries contents.", other,
            "; BYTES elements go in contents.bytes_contents"));
      }
    }
    if (contents.bytes_contents().empty() && count > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " has no data; send it in raw_input_contents or in contents.bytes_contents"));
    }
    if (contents.bytes_contents_size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          log_request, "expected ", count, " string elements for inference input '", spec.name,
          "' for model '", model.name, "', got ", contents.bytes_contents_size(),
          " in contents.bytes_contents (shape ", ShapeString(tensor.shape()), ")"));
    }
    return std::vector<absl::string_view>(contents.bytes_contents().begin(),
                                          contents.bytes_contents().end());
  }
  absl::StatusOr<std::vector<absl::string_view>> elements = SplitBytesElements(data, count);
  if (!elements.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(log_request, where, ": ", source, " ", elements.status().message(),
                     " (shape ", ShapeString(tensor.shape()), ")"));
  }
  return elements;
}

// A text input's elements parsed into its numbers (Note [Number text]),
// held in `converted`.
absl::StatusOr<const std::byte*> ParseTextInput(const std::vector<absl::string_view>& elements,
                                                const TensorSpec& spec,
                                                const ModelInterface& model,
                                                std::vector<std::vector<std::byte>>* converted) {
  const size_t size = DTypeSize(spec.dtype);
  std::vector<std::byte>& numbers = converted->emplace_back(elements.size() * size);
  for (size_t i = 0; i < elements.size(); ++i) {
    const absl::Status parsed = ParseNumberText(elements[i], spec.dtype, numbers.data() + i * size);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          TensorDescription("input", spec.name, model), ": element ", i, ", ",
          QuoteClientText(elements[i]), ", ", parsed.message()));
    }
  }
  return numbers.data();
}

// The elements of a passed input's shape as sent: its dims (CheckDatatypeAndShape
// checked them >= 0) multiplied, or an error when they overflow.
absl::StatusOr<int64_t> PassedElementCount(const InputTensor& tensor, const TensorSpec& spec,
                                           const ModelInterface& model) {
  int64_t count = 1;
  for (const int64_t dim : tensor.shape()) {
    if (__builtin_mul_overflow(count, dim, &count)) {
      return absl::InvalidArgumentError(
          absl::StrCat(TensorDescription("input", spec.name, model), ": shape ",
                       ShapeString(tensor.shape()), " has too many elements to address"));
    }
  }
  return count;
}

// An optional input the request leaves out: `rows` copies of its default
// row (Note [Inputs with defaults] in runtime/ir.h), held in `converted`,
// as though the client had sent them. Without a default there is nothing to
// send in its place.
absl::StatusOr<const std::byte*> DefaultRows(const TensorSpec& spec, int64_t rows,
                                             const ModelInterface& model,
                                             std::vector<std::vector<std::byte>>* converted) {
  if (spec.default_row == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' of model '", model.name,
        "' is optional, but the model has no default value for it (an ONNX initializer of its "
        "name) to use when it is left out: send it"));
  }
  const size_t row_bytes = spec.default_row->bytes();  // bytes_per_row (TakeInputDefaults)
  ASSIGN_OR_RETURN(const size_t bytes, CheckedRowsSize(rows, spec, row_bytes, model));
  std::vector<std::byte>& filled = converted->emplace_back(bytes);
  for (int64_t row = 0; row < rows; ++row) {
    std::memcpy(filled.data() + static_cast<size_t>(row) * row_bytes, spec.default_row->raw(),
                row_bytes);
  }
  return filled.data();
}

// Fills validated->outputs and output_slices, and the memory of the outputs
// in regions (validated->view.outputs, sized); validated->view.rows is known. An
// output in shared memory needs room for its rows in the range it names.
absl::Status RequestedOutputs(const inference::ModelInferRequest& request,
                              const ModelInterface& model,
                              const SharedMemoryRegistry* shared_memory,
                              std::optional<int> device_memory_gpu, ValidatedRequest* validated) {
  std::vector<size_t>& outputs = validated->outputs;
  if (request.outputs().empty()) {
    for (size_t i = 0; i < model.outputs.size(); ++i) outputs.push_back(i);
    validated->output_slices.resize(outputs.size());
    return absl::OkStatus();
  }
  std::vector<bool> requested(model.outputs.size(), false);
  for (const auto& output : request.outputs()) {
    ASSIGN_OR_RETURN(const size_t index, FindTensor(model.outputs, output.name(), "output", model));
    if (requested[index]) {
      return absl::InvalidArgumentError(absl::StrCat("output ", QuoteClientText(output.name()),
                                                     " is requested twice from model '", model.name,
                                                     "'"));
    }
    ASSIGN_OR_RETURN(const std::optional<SharedMemoryParameters> in_region,
                     ReadSharedMemoryParameters(output.parameters(), "output", output.name(), model,
                                                shared_memory));
    // Answered by ClassifyOutputs once the rows are written.
    RETURN_IF_ERROR(RequestedClassCount(output, model.outputs[index], model).status());
    SharedMemorySlice slice;
    if (in_region.has_value()) {
      const TensorSpec& spec = model.outputs[index];
      const std::string where = TensorDescription("output", spec.name, model);
      ASSIGN_OR_RETURN(slice, HoldSlice(*in_region, where, *shared_memory, validated));
      if (spec.wire != TensorWire::kNumbers) {
        // Its size is known once its text is: FinishOutputs checks the room.
        requested[index] = true;
        outputs.push_back(index);
        validated->output_slices.push_back(std::move(slice));
        continue;
      }
      const uint64_t needed = static_cast<uint64_t>(validated->view.rows) * spec.bytes_per_row();
      if (slice.byte_size < needed) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": shared_memory_byte_size ", slice.byte_size, " in shared memory region ",
            QuoteClientText(in_region->region), " cannot hold its ", needed, " bytes (",
            validated->view.rows, " rows of ", spec.bytes_per_row(), ")"));
      }
      RowMemory& memory = validated->view.outputs[index].memory;
      if (slice.region->kind() == RegionKind::kSystem && slice.region->pinned()) {
        memory = RowMemory::kPinned;
      }
      if (slice.region->kind() == RegionKind::kCuda &&
          device_memory_gpu == slice.region->device_id()) {
        // Written by the device in place (Note [CUDA shared memory]).
        memory = RowMemory::kDevice;
      }
    }
    requested[index] = true;
    outputs.push_back(index);
    validated->output_slices.push_back(std::move(slice));
  }
  return absl::OkStatus();
}

}  // namespace

// Triton's answer to a request with more inputs than the model has, or
// without one it requires: the inputs it got and the required ones missing,
// "expected number of inputs between R and N" when some are optional.
absl::Status InputCountError(const inference::ModelInferRequest& request,
                             const ModelInterface& model, absl::string_view log_request) {
  // A request may carry any number of inputs: the names quoted are bounded
  // (Note [Quoting client text]).
  constexpr int kNamesQuoted = 8;
  std::vector<std::string> got;
  for (const InputTensor& tensor : request.inputs()) {
    if (got.size() == kNamesQuoted) {
      got.push_back("...");
      break;
    }
    got.push_back(QuoteClientText(tensor.name()));
  }
  std::vector<std::string> missing;
  size_t required = 0;
  for (const TensorSpec& spec : model.inputs) {
    if (spec.optional) continue;
    ++required;
    const bool sent =
        std::any_of(request.inputs().begin(), request.inputs().end(),
                    [&spec](const InputTensor& tensor) { return tensor.name() == spec.name; });
    if (!sent) missing.push_back(absl::StrCat("'", spec.name, "'"));
  }
  const std::string expected =
      required == model.inputs.size()
          ? absl::StrCat("expected ", required, " inputs")
          : absl::StrCat("expected number of inputs between ", required, " and ",
                         model.inputs.size());
  return absl::InvalidArgumentError(absl::StrCat(
      log_request, expected, " but got ", request.inputs_size(), " inputs for model '",
      model.name, "'. Got input(s) [", absl::StrJoin(got, ","),
      "], but missing required input(s) [", absl::StrJoin(missing, ","),
      "]. Please provide all required input(s)."));
}

namespace {

// Per shape dim of `model` (Note [Shape buckets] in server/shape_buckets.h):
// the extent the request's inputs give it, checked to be consistent, in range
// and held by a bucket (a bucket's own, for a model that does not pad). Dims
// no input carries as -1 keep the buckets' (config.pbtxt fixes them). An
// input of the wrong rank is refused here, its datatype checked first as
// everywhere, so that the expected shape shows the shape dims as -1 and not
// at some bucket's extents; an unknown input is left to the later checks.
absl::StatusOr<std::vector<int64_t>> RequestExtents(const inference::ModelInferRequest& request,
                                                    const ModelInterface& model) {
  std::vector<int64_t> extents = model.buckets.front();
  std::vector<int64_t> largest = extents;
  for (const std::vector<int64_t>& bucket : model.buckets) {
    for (size_t s = 0; s < bucket.size(); ++s) largest[s] = std::max(largest[s], bucket[s]);
  }
  if (!model.eager_extents.empty()) largest = model.eager_extents;  // Note [Eager fallback]
  std::vector<const TensorSpec*> given_by(extents.size(), nullptr);
  const int batch_dims = model.batching ? 1 : 0;
  for (const InputTensor& tensor : request.inputs()) {
    const auto spec = std::find_if(model.inputs.begin(), model.inputs.end(),
                                   [&](const TensorSpec& s) { return s.name == tensor.name(); });
    if (spec == model.inputs.end()) continue;
    if (tensor.shape_size() != static_cast<int>(spec->dims.size()) + batch_dims) {
      return CheckDatatypeAndShape(tensor, *spec, model, LogRequest(request)).status();
    }
    for (size_t d = 0; d < spec->shape_dim_of.size(); ++d) {
      if (spec->shape_dim_of[d] < 0) continue;
      const auto s = static_cast<size_t>(spec->shape_dim_of[d]);
      const int64_t extent = tensor.shape(static_cast<int>(d) + batch_dims);
      if (extent < 1 || extent > largest[s]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", spec->name, "' of model '", model.name, "' has ", extent,
            " in dim ", d + batch_dims, " (the model's dim '", model.shape_dims[s],
            "'); the model takes 1 to ", largest[s], " (shape ", ShapeString(tensor.shape()),
            ")"));
      }
      if (given_by[s] != nullptr && extents[s] != extent) {
        return absl::InvalidArgumentError(absl::StrCat(
            "inputs '", given_by[s]->name, "' and '", spec->name, "' of model '", model.name,
            "' share the model's dim '", model.shape_dims[s], "' but have ", extents[s],
            " and ", extent));
      }
      extents[s] = extent;
      given_by[s] = &*spec;
    }
  }
  if (!model.eager_extents.empty()) return extents;  // run eagerly if no bucket takes them
  if (!BucketTaking(model, extents).has_value()) {
    std::vector<std::string> buckets;
    for (const std::vector<int64_t>& bucket : model.buckets) {
      buckets.push_back(absl::StrCat("[", absl::StrJoin(bucket, ","), "]"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", model.name, "' takes its dims [", absl::StrJoin(model.shape_dims, ","),
        "] at ", model.pads_to_bucket ? "or inside " : "exactly ", "the extents of its buckets ",
        absl::StrJoin(buckets, " "), ", but the request has [", absl::StrJoin(extents, ","), "]",
        model.pads_to_bucket ? ""
                             : " (padding into a bucket is off for this model: config.pbtxt's "
                               "capture.shape_padding, or padding changed its outputs at load)"));
  }
  return extents;
}

// ValidateInferRequest for an interface whose dims are all fixed.
absl::StatusOr<ValidatedRequest> ValidateAtFixedDims(const inference::ModelInferRequest& request,
                                                     const ModelInterface& model,
                                                     const SharedMemoryRegistry* shared_memory,
                                                     std::optional<int> device_memory_gpu) {
  // Which request input feeds each interface input.
  constexpr int kAbsent = -1;
  std::vector<int> request_index(model.inputs.size(), kAbsent);
  // Per request input: the shared-memory range it names, if any.
  std::vector<std::optional<SharedMemoryParameters>> in_region(request.inputs_size());
  const std::string log_request = LogRequest(request);
  // Triton's order: an input named twice (refused as it is added), then the
  // count, then each name (Note [Triton's error texts]).
  std::set<absl::string_view> names;
  for (const InputTensor& tensor : request.inputs()) {
    if (!names.insert(tensor.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor.name()),
                                                     " appears twice in the request to model '",
                                                     model.name, "'"));
    }
  }
  const auto required = static_cast<int>(std::count_if(
      model.inputs.begin(), model.inputs.end(), [](const TensorSpec& s) { return !s.optional; }));
  if (request.inputs_size() > static_cast<int>(model.inputs.size()) ||
      request.inputs_size() < required) {
    return InputCountError(request, model, log_request);
  }
  for (int j = 0; j < request.inputs_size(); ++j) {
    const InputTensor& tensor = request.inputs(j);
    ASSIGN_OR_RETURN(const size_t index, FindTensor(model.inputs, tensor.name(), "input", model));
    ASSIGN_OR_RETURN(in_region[j], ReadSharedMemoryParameters(tensor.parameters(), "input",
                                                              tensor.name(), model, shared_memory));
    request_index[index] = j;
  }
  // None twice and none unknown; a count in range may still send an optional
  // input in place of a required one.
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    if (request_index[i] == kAbsent && !model.inputs[i].optional) {
      return InputCountError(request, model, log_request);
    }
  }

  ValidatedRequest validated;
  // The batch of the first input sent; a request that leaves every input
  // out (all optional) is one row.
  validated.view.rows = 1;
  const TensorSpec* batch_from = nullptr;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    if (request_index[i] == kAbsent) continue;
    const InputTensor& tensor = request.inputs(request_index[i]);
    ASSIGN_OR_RETURN(const int64_t rows,
                     CheckDatatypeAndShape(tensor, model.inputs[i], model, log_request));
    if (batch_from == nullptr) {
      validated.view.rows = rows;
      batch_from = &model.inputs[i];
    } else if (rows != validated.view.rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", QuoteClientText(tensor.name()), " has batch ", rows, " but input '",
          batch_from->name, "' has batch ", validated.view.rows,
          "; the inputs of a request to model '", model.name, "' share the batch (dim 0)"));
    }
  }

  // Which raw_input_contents entry holds each request input outside shared
  // memory: they take the entries in order, skipping those in a region.
  std::vector<int> raw_index(request.inputs_size(), kAbsent);
  int in_message = 0;
  for (int j = 0; j < request.inputs_size(); ++j) {
    if (!in_region[j].has_value()) raw_index[j] = in_message++;
  }
  const bool raw = !request.raw_input_contents().empty();
  for (int j = 0; j < request.inputs_size(); ++j) {
    const InputTensor& tensor = request.inputs(j);
    const std::vector<const char*> filled = FilledTypedFields(tensor.contents());
    if (filled.empty()) continue;
    if (in_region[j].has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(TensorDescription("input", tensor.name(), model),
                       " is in shared memory region ", QuoteClientText(in_region[j]->region),
                       " but also carries contents.", filled.front(), "; send its data one way"));
    }
    if (raw) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", QuoteClientText(tensor.name()),
                       " carries typed contents but the request to model '", model.name,
                       "' uses raw_input_contents; send every input raw or every input typed"));
    }
  }
  if (raw && request.raw_input_contents_size() != in_message) {
    const bool some_in_regions = in_message != request.inputs_size();
    return absl::InvalidArgumentError(
        absl::StrCat("the request to model '", model.name, "' has ",
                     request.raw_input_contents_size(), " raw_input_contents entries for ",
                     in_message, " inputs", some_in_regions ? " outside shared memory" : "",
                     "; raw_input_contents holds one entry per input, in the order of inputs"));
  }
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const int j = request_index[i];
    const TensorSpec& spec = model.inputs[i];
    if (j == kAbsent) {
      ASSIGN_OR_RETURN(const std::byte* data,
                       DefaultRows(spec, validated.view.rows, model, &validated.converted));
      validated.view.inputs.push_back({data, spec.bytes_per_row()});
      continue;
    }
    const InputTensor& tensor = request.inputs(j);
    if (spec.wire != TensorWire::kNumbers) {
      // Note [Strings at the model's edges]: parsed into numbers here, or
      // kept for the outputs that hand it back.
      int64_t count = validated.view.rows * NumElements(spec.dims);  // bounded by the interface
      if (spec.wire == TensorWire::kPassed) {
        ASSIGN_OR_RETURN(count, PassedElementCount(tensor, spec, model));
      }
      const std::string* raw_entry = in_region[j].has_value() || !raw
                                         ? nullptr
                                         : &request.raw_input_contents(raw_index[j]);
      ASSIGN_OR_RETURN(std::vector<absl::string_view> elements,
                       BytesInputElements(tensor, in_region[j], raw_entry, count, spec, model,
                                          shared_memory, log_request, &validated));
      if (spec.wire == TensorWire::kText) {
        ASSIGN_OR_RETURN(const std::byte* numbers,
                         ParseTextInput(elements, spec, model, &validated.converted));
        validated.view.inputs.push_back({numbers, spec.bytes_per_row()});
      } else {
        // Sized only for a model that passes strings: numbers pay nothing.
        if (validated.passed.empty()) validated.passed.resize(model.inputs.size());
        validated.passed[i].shape.assign(tensor.shape().begin(), tensor.shape().end());
        validated.passed[i].elements = std::move(elements);
        validated.view.inputs.emplace_back();
      }
      continue;
    }
    if (in_region[j].has_value()) {
      ASSIGN_OR_RETURN(const InputRows input,
                       SharedMemoryInput(*in_region[j], tensor, spec, validated.view.rows, model,
                                         *shared_memory, device_memory_gpu, &validated));
      validated.view.inputs.push_back(input);
    } else if (raw) {
      ASSIGN_OR_RETURN(const std::byte* data,
                       RawInput(request.raw_input_contents(raw_index[j]), tensor, model.inputs[i],
                                validated.view.rows, model, log_request));
      validated.view.inputs.push_back({data, spec.bytes_per_row()});
    } else {
      ASSIGN_OR_RETURN(
          const std::byte* data,
          TypedInput(tensor, model.inputs[i], validated.view.rows, model, &validated.converted));
      validated.view.inputs.push_back({data, spec.bytes_per_row()});
    }
  }

  validated.view.outputs.reserve(model.outputs.size());
  for (const TensorSpec& spec : model.outputs) {
    validated.view.outputs.push_back(
        {nullptr, spec.wire == TensorWire::kPassed ? 0 : spec.bytes_per_row()});
  }
  RETURN_IF_ERROR(RequestedOutputs(request, model, shared_memory, device_memory_gpu, &validated));
  return validated;
}

}  // namespace

absl::StatusOr<ValidatedRequest> ValidateInferRequest(const inference::ModelInferRequest& request,
                                                      const ModelInterface& model,
                                                      const SharedMemoryRegistry* shared_memory,
                                                      std::optional<int> device_memory_gpu) {
  if (model.shape_dims.empty()) {
    return ValidateAtFixedDims(request, model, shared_memory, device_memory_gpu);
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> extents, RequestExtents(request, model));
  ASSIGN_OR_RETURN(ValidatedRequest validated,
                   ValidateAtFixedDims(request, model.At(extents), shared_memory,
                                       device_memory_gpu));
  validated.extents = std::move(extents);
  return validated;
}

namespace {

// PrepareInferResponse for an interface whose dims are all fixed.
std::vector<std::byte*> PrepareAtFixedDims(const inference::ModelInferRequest& request,
                                           const ModelInterface& model, const std::string& version,
                                           const ValidatedRequest& validated,
                                           inference::ModelInferResponse* response) {
  response->Clear();
  response->set_model_name(model.name);
  response->set_model_version(version);
  response->set_id(request.id());
  std::vector<std::byte*> destinations(model.outputs.size(), nullptr);
  for (size_t k = 0; k < validated.outputs.size(); ++k) {
    const size_t index = validated.outputs[k];
    const TensorSpec& spec = model.outputs[index];
    inference::ModelInferResponse::InferOutputTensor* output = response->add_outputs();
    output->set_name(spec.name);
    output->set_datatype(spec.datatype());
    // Each entry is its own heap string, so pointers into earlier entries
    // survive later add_raw_output_contents calls.
    std::string* contents = response->add_raw_output_contents();
    if (spec.wire == TensorWire::kPassed) {
      // Complete now: its input's elements, in its input's shape unless its
      // own dims are all fixed (a reshape of the same elements).
      const ValidatedRequest::PassedInput& input = validated.passed[spec.passed_from];
      if (std::find(spec.dims.begin(), spec.dims.end(), -1) == spec.dims.end()) {
        if (model.batching) output->add_shape(validated.view.rows);
        for (int64_t dim : spec.dims) output->add_shape(dim);
      } else {
        for (int64_t dim : input.shape) output->add_shape(dim);
      }
      for (const absl::string_view element : input.elements) AppendBytesElement(element, contents);
      continue;
    }
    if (model.batching) output->add_shape(validated.view.rows);
    for (int64_t dim : spec.dims) output->add_shape(dim);
    const size_t bytes = static_cast<size_t>(validated.view.rows) * spec.bytes_per_row();
    if (spec.wire == TensorWire::kText) {
      // Its numbers, which FinishOutputs turns into text and, for one in a
      // region, moves there.
      contents->resize(bytes);
      destinations[index] = reinterpret_cast<std::byte*>(contents->data());
      continue;
    }
    if (const SharedMemorySlice& slice = validated.output_slices[k]; slice.region != nullptr) {
      auto& parameters = *output->mutable_parameters();
      parameters["shared_memory_region"].set_string_param(slice.region->name());
      parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(bytes));
      if (slice.region->kind() == RegionKind::kSystem ||
          validated.view.outputs[index].memory == RowMemory::kDevice) {
        destinations[index] = slice.data;
        continue;
      }
      // Any other CUDA region: the rows land in the string, FinishOutputs
      // moves them.
    }
    contents->resize(bytes);
    destinations[index] = reinterpret_cast<std::byte*>(contents->data());
  }
  return destinations;
}

}  // namespace

std::vector<std::byte*> PrepareInferResponse(const inference::ModelInferRequest& request,
                                             const ModelInterface& model,
                                             const std::string& version,
                                             const ValidatedRequest& validated,
                                             inference::ModelInferResponse* response) {
  if (model.shape_dims.empty()) {
    return PrepareAtFixedDims(request, model, version, validated, response);
  }
  return PrepareAtFixedDims(request, model.At(validated.extents), version, validated, response);
}

namespace {

// A text output's numbers, `bytes` of `spec.dtype`, as their text serialized
// (Notes [Number text], [BYTES serialization]).
std::string TextOfNumbers(const std::string& bytes, const TensorSpec& spec) {
  const size_t size = DTypeSize(spec.dtype);
  std::string serialized;
  serialized.reserve(bytes.size() / size * (kBytesLengthSize + 8));
  std::string text;
  for (size_t at = 0; at + size <= bytes.size(); at += size) {
    text.clear();
    AppendNumberText(reinterpret_cast<const std::byte*>(bytes.data() + at), spec.dtype, &text);
    AppendBytesElement(text, &serialized);
  }
  return serialized;
}

}  // namespace

absl::Status FinishOutputs(const ModelInterface& model, const ValidatedRequest& validated,
                           inference::ModelInferResponse* response) {
  for (size_t k = 0; k < validated.outputs.size(); ++k) {
    const size_t index = validated.outputs[k];
    const TensorSpec& spec = model.outputs[index];
    std::string* contents = response->mutable_raw_output_contents(static_cast<int>(k));
    if (spec.wire == TensorWire::kText) *contents = TextOfNumbers(*contents, spec);
    const SharedMemorySlice& slice = validated.output_slices[k];
    const bool bytes = spec.wire != TensorWire::kNumbers;
    if (slice.region == nullptr ||
        !(bytes || (slice.region->kind() == RegionKind::kCuda &&
                    validated.view.outputs[index].memory != RowMemory::kDevice))) {
      continue;
    }
    if (bytes) {
      // Triton's text, as its response allocator refuses too small a range.
      if (contents->size() > slice.byte_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shared memory size specified with the request for output '", spec.name, "' (",
            slice.byte_size, " bytes) should be at least ", contents->size(),
            " bytes to hold the results"));
      }
      auto& parameters = *response->mutable_outputs(static_cast<int>(k))->mutable_parameters();
      parameters["shared_memory_region"].set_string_param(slice.region->name());
      parameters["shared_memory_byte_size"].set_int64_param(static_cast<int64_t>(contents->size()));
    }
    RETURN_IF_ERROR(CopyIntoSlice(slice, reinterpret_cast<const std::byte*>(contents->data()),
                                  contents->size()));
    contents->clear();
  }
  return absl::OkStatus();
}

}  // namespace graphserve
