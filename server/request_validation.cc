#include "server/request_validation.h"

#include <bit>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
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
  // Note [Quoting client text]: `name` is the client's.
  return absl::InvalidArgumentError(absl::StrCat("model '", model.name, "' has no ", kind, " ",
                                                 QuoteClientText(name), "; its ", kind, "s are ",
                                                 names));
}

// The client's shape, bounded: a request may carry thousands of dims (Note
// [Quoting client text]).
std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return ClientTextPrefix(DimsToString(Dims(shape.begin(), shape.end())));
}

// The InferTensorContents field that holds elements of `dtype`.
const char* TypedField(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "fp32_contents";
    case DType::kInt64: return "int64_contents";
    case DType::kBool: return "bool_contents";
  }
  return "no field";
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

// The shared-memory extension moves a tensor's data out of the message; a
// server without it would read the tensor as missing or, for an output, leave
// the client's region unwritten. Saying so beats either.
absl::Status CheckNoSharedMemory(const ParameterMap& parameters, const char* kind,
                                 const std::string& name, const ModelInterface& model) {
  if (parameters.contains("shared_memory_region")) {
    return absl::InvalidArgumentError(
        absl::StrCat(kind, " ", QuoteClientText(name), " of model '", model.name,
                     "' names a shared_memory_region; GraphServe does not serve the shared-memory "
                     "extension: send the data in the request"));
  }
  return absl::OkStatus();
}

// Checks datatype and shape against `spec`; returns the batch (dim 0).
absl::StatusOr<int64_t> CheckDatatypeAndShape(const InputTensor& tensor, const TensorSpec& spec,
                                              const ModelInterface& model) {
  if (tensor.datatype() != KServeDatatype(spec.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", spec.name, "' has datatype ", QuoteClientText(tensor.datatype()),
                     "; model '", model.name, "' expects ", KServeDatatype(spec.dtype)));
  }
  // Only equality is tested, so a negative or huge dim is refused without any
  // arithmetic on it.
  bool shape_matches = tensor.shape_size() == static_cast<int>(spec.dims.size()) + 1;
  for (size_t d = 0; shape_matches && d < spec.dims.size(); ++d) {
    shape_matches = tensor.shape(static_cast<int>(d) + 1) == spec.dims[d];
  }
  if (!shape_matches) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", spec.name, "' has shape ", ShapeString(tensor.shape()), "; model '",
                     model.name, "' expects ", ClientShapeString(spec), " (batch first)"));
  }
  const int64_t rows = tensor.shape(0);
  if (rows < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' has batch ", rows, " (shape ", ShapeString(tensor.shape()),
        "); model '", model.name, "' needs a batch (dim 0) of at least 1"));
  }
  if (rows > model.max_batch_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch ", rows, " exceeds max_batch_size ", model.max_batch_size, " of model '", model.name,
        "' (input '", spec.name, "' has shape ", ShapeString(tensor.shape()), ")"));
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
                                          const ModelInterface& model) {
  ASSIGN_OR_RETURN(const size_t expected, CheckedRowsSize(rows, spec, spec.bytes_per_row(), model));
  if (raw.size() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", spec.name, "' of model '", model.name, "': ", raw.size(),
                     " bytes in raw_input_contents, expected ", expected, " for shape ",
                     ShapeString(tensor.shape()), " ", KServeDatatype(spec.dtype)));
  }
  if (spec.dtype == DType::kBool) {
    // Any other byte is not a bool the executors may read.
    for (size_t i = 0; i < raw.size(); ++i) {
      const auto byte = static_cast<unsigned char>(raw[i]);
      if (byte > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", spec.name, "' of model '", model.name, "': raw BOOL element ", i,
            " is byte ", static_cast<int>(byte), "; BOOL elements are bytes 0 or 1"));
      }
    }
  }
  return reinterpret_cast<const std::byte*>(raw.data());
}

absl::StatusOr<const std::byte*> TypedInput(const InputTensor& tensor, const TensorSpec& spec,
                                            int64_t rows, const ModelInterface& model,
                                            std::vector<std::vector<std::byte>>* converted) {
  const char* field = TypedField(spec.dtype);
  const std::vector<const char*> filled = FilledTypedFields(tensor.contents());
  if (filled.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", spec.name, "' of model '", model.name,
                     "' has no data; send it in raw_input_contents or in contents.", field));
  }
  for (const char* other : filled) {
    if (std::strcmp(other, field) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", spec.name, "' of model '", model.name, "' is ",
                       KServeDatatype(spec.dtype), " but carries contents.", other, "; ",
                       KServeDatatype(spec.dtype), " elements go in contents.", field));
    }
  }
  const inference::InferTensorContents& contents = tensor.contents();
  size_t count = 0;
  switch (spec.dtype) {
    case DType::kFloat32: count = contents.fp32_contents_size(); break;
    case DType::kInt64: count = contents.int64_contents_size(); break;
    case DType::kBool: count = contents.bool_contents_size(); break;
  }
  ASSIGN_OR_RETURN(const size_t expected,
                   CheckedRowsSize(rows, spec, static_cast<size_t>(NumElements(spec.dims)), model));
  if (count != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", spec.name, "' of model '", model.name, "': ", count, " elements in contents.",
        field, ", expected ", expected, " for shape ", ShapeString(tensor.shape())));
  }
  switch (spec.dtype) {
    case DType::kFloat32:
      return reinterpret_cast<const std::byte*>(contents.fp32_contents().data());
    case DType::kInt64: return reinterpret_cast<const std::byte*>(contents.int64_contents().data());
    case DType::kBool: {
      // Written as bytes rather than read in place: the protocol's raw BOOL is a
      // byte holding 0 or 1, which C++ does not promise for bool's object form.
      std::vector<std::byte>& bytes = converted->emplace_back(count);
      for (size_t i = 0; i < count; ++i) {
        bytes[i] = std::byte{contents.bool_contents(static_cast<int>(i)) ? uint8_t{1} : uint8_t{0}};
      }
      return bytes.data();
    }
  }
  return absl::InternalError("unreachable: unknown dtype");
}

absl::StatusOr<std::vector<size_t>> RequestedOutputs(const inference::ModelInferRequest& request,
                                                     const ModelInterface& model) {
  std::vector<size_t> outputs;
  if (request.outputs().empty()) {
    for (size_t i = 0; i < model.outputs.size(); ++i) outputs.push_back(i);
    return outputs;
  }
  std::vector<bool> requested(model.outputs.size(), false);
  for (const auto& output : request.outputs()) {
    ASSIGN_OR_RETURN(const size_t index, FindTensor(model.outputs, output.name(), "output", model));
    if (requested[index]) {
      return absl::InvalidArgumentError(absl::StrCat("output ", QuoteClientText(output.name()),
                                                     " is requested twice from model '", model.name,
                                                     "'"));
    }
    RETURN_IF_ERROR(CheckNoSharedMemory(output.parameters(), "output", output.name(), model));
    // tritonclient's class_count asks for top-k labels instead of the tensor;
    // answering with the tensor would be misread as labels.
    if (output.parameters().contains("classification")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output ", QuoteClientText(output.name()), " of model '", model.name,
          "' asks for classification, which GraphServe does not serve; request the tensor itself"));
    }
    requested[index] = true;
    outputs.push_back(index);
  }
  return outputs;
}

}  // namespace

absl::StatusOr<ValidatedRequest> ValidateInferRequest(const inference::ModelInferRequest& request,
                                                      const ModelInterface& model) {
  // Which request input feeds each interface input.
  constexpr int kAbsent = -1;
  std::vector<int> request_index(model.inputs.size(), kAbsent);
  for (int j = 0; j < request.inputs_size(); ++j) {
    const InputTensor& tensor = request.inputs(j);
    ASSIGN_OR_RETURN(const size_t index, FindTensor(model.inputs, tensor.name(), "input", model));
    if (request_index[index] != kAbsent) {
      return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor.name()),
                                                     " appears twice in the request to model '",
                                                     model.name, "'"));
    }
    RETURN_IF_ERROR(CheckNoSharedMemory(tensor.parameters(), "input", tensor.name(), model));
    request_index[index] = j;
  }
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    if (request_index[i] == kAbsent) {
      const TensorSpec& spec = model.inputs[i];
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", model.name, "' expects input '", spec.name, "' (", KServeDatatype(spec.dtype),
          ", shape ", ClientShapeString(spec), "); the request has none"));
    }
  }

  ValidatedRequest validated;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const InputTensor& tensor = request.inputs(request_index[i]);
    ASSIGN_OR_RETURN(const int64_t rows, CheckDatatypeAndShape(tensor, model.inputs[i], model));
    if (i == 0) {
      validated.rows = rows;
    } else if (rows != validated.rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", QuoteClientText(tensor.name()), " has batch ", rows, " but input '",
          model.inputs[0].name, "' has batch ", validated.rows,
          "; the inputs of a request to model '", model.name, "' share the batch (dim 0)"));
    }
  }

  const bool raw = !request.raw_input_contents().empty();
  if (raw) {
    for (const InputTensor& tensor : request.inputs()) {
      if (!FilledTypedFields(tensor.contents()).empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input ", QuoteClientText(tensor.name()),
                         " carries typed contents but the request to model '", model.name,
                         "' uses raw_input_contents; send every input raw or every input typed"));
      }
    }
    if (request.raw_input_contents_size() != request.inputs_size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the request to model '", model.name, "' has ", request.raw_input_contents_size(),
          " raw_input_contents entries for ", request.inputs_size(),
          " inputs; raw_input_contents holds one entry per input, in the order of inputs"));
    }
  }
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const InputTensor& tensor = request.inputs(request_index[i]);
    if (raw) {
      ASSIGN_OR_RETURN(const std::byte* data,
                       RawInput(request.raw_input_contents(request_index[i]), tensor,
                                model.inputs[i], validated.rows, model));
      validated.inputs.push_back(data);
    } else {
      ASSIGN_OR_RETURN(const std::byte* data, TypedInput(tensor, model.inputs[i], validated.rows,
                                                         model, &validated.converted));
      validated.inputs.push_back(data);
    }
  }

  ASSIGN_OR_RETURN(validated.outputs, RequestedOutputs(request, model));
  return validated;
}

std::vector<std::byte*> PrepareInferResponse(const inference::ModelInferRequest& request,
                                             const ModelInterface& model,
                                             const std::string& version,
                                             const ValidatedRequest& validated,
                                             inference::ModelInferResponse* response) {
  response->Clear();
  response->set_model_name(model.name);
  response->set_model_version(version);
  response->set_id(request.id());
  std::vector<std::byte*> destinations(model.outputs.size(), nullptr);
  for (size_t index : validated.outputs) {
    const TensorSpec& spec = model.outputs[index];
    inference::ModelInferResponse::InferOutputTensor* output = response->add_outputs();
    output->set_name(spec.name);
    output->set_datatype(KServeDatatype(spec.dtype));
    output->add_shape(validated.rows);
    for (int64_t dim : spec.dims) output->add_shape(dim);
    // Each entry is its own heap string, so pointers into earlier entries
    // survive later add_raw_output_contents calls.
    std::string* contents = response->add_raw_output_contents();
    contents->resize(static_cast<size_t>(validated.rows) * spec.bytes_per_row());
    destinations[index] = reinterpret_cast<std::byte*>(contents->data());
  }
  return destinations;
}

}  // namespace graphserve
