#include "server/http_json.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/dtype.h"
#include "common/status.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"
#include "server/bytes_tensor.h"
#include "server/client_text.h"

namespace graphserve {

namespace {

using nlohmann::json;

// ---------------------------------------------------------------- protos

json FieldValue(const google::protobuf::Message& message,
                const google::protobuf::FieldDescriptor* field, int index);

// A message as JSON by its proto field names, int64 as numbers (Triton's
// clients read them as numbers), enums by name, maps as objects. Scalars and
// lists are written even when empty or zero, as Triton writes them (a
// statistic of 0 is {"count": 0, "ns": 0}, not {}); unset messages and
// oneof members are left out.
json ProtoToJson(const google::protobuf::Message& message) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  json object = json::object();
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(f);
    const bool singular_message =
        !field->is_repeated() &&
        field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE;
    if ((singular_message || field->containing_oneof() != nullptr) &&
        !reflection->HasField(message, field)) {
      continue;
    }
    if (field->is_map()) {
      json map = json::object();
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        const google::protobuf::Message& entry = reflection->GetRepeatedMessage(message, field, i);
        const google::protobuf::Descriptor* entry_type = entry.GetDescriptor();
        json key = FieldValue(entry, entry_type->FindFieldByNumber(1), -1);
        map[key.is_string() ? key.get<std::string>() : key.dump()] =
            FieldValue(entry, entry_type->FindFieldByNumber(2), -1);
      }
      object[field->name()] = std::move(map);
    } else if (field->is_repeated()) {
      json list = json::array();
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        list.push_back(FieldValue(message, field, i));
      }
      object[field->name()] = std::move(list);
    } else {
      object[field->name()] = FieldValue(message, field, -1);
    }
  }
  return object;
}

// Field `field` of `message` (element `index` when repeated, else -1).
json FieldValue(const google::protobuf::Message& message,
                const google::protobuf::FieldDescriptor* field, int index) {
  using Type = google::protobuf::FieldDescriptor::CppType;
  const google::protobuf::Reflection* r = message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case Type::CPPTYPE_INT32:
      return repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field);
    case Type::CPPTYPE_INT64:
      return repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field);
    case Type::CPPTYPE_UINT32:
      return repeated ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field);
    case Type::CPPTYPE_UINT64:
      return repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field);
    case Type::CPPTYPE_DOUBLE:
      return repeated ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field);
    case Type::CPPTYPE_FLOAT:
      return repeated ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field);
    case Type::CPPTYPE_BOOL:
      return repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field);
    case Type::CPPTYPE_ENUM:
      return (repeated ? r->GetRepeatedEnum(message, field, index) : r->GetEnum(message, field))
          ->name();
    case Type::CPPTYPE_STRING:
      return repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
    case Type::CPPTYPE_MESSAGE:
      return ProtoToJson(repeated ? r->GetRepeatedMessage(message, field, index)
                                  : r->GetMessage(message, field));
  }
  return nullptr;
}

// ---------------------------------------------------------------- tensors

// Note [JSON nesting depth]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A body of 200 KB can nest "data" 100k arrays deep, and 64 MiB allows far
// more; a recursive walk over such a value overflows the worker's stack and
// kills the server with one unauthenticated request. Two defences: every
// body is checked against a depth limit before it is parsed (CheckJsonDepth,
// --http-max-json-depth, a 400 naming the limit), and the walks over client
// JSON here (Flatten) keep their own stack rather than recursing.
// nlohmann::json 3.11 parses and destroys values without recursion.

// Every leaf of `data` (nested arrays, as Triton accepts them, or flat), in
// order, walked with an explicit stack (Note [JSON nesting depth]).
void Flatten(const json& data, std::vector<const json*>& leaves) {
  std::vector<std::pair<json::const_iterator, json::const_iterator>> open;
  if (!data.is_array()) {
    leaves.push_back(&data);
    return;
  }
  open.emplace_back(data.cbegin(), data.cend());
  while (!open.empty()) {
    auto& [next, end] = open.back();
    if (next == end) {
      open.pop_back();
      continue;
    }
    const json& item = *next;
    ++next;  // before emplace_back, which may move `open`'s elements
    if (item.is_array()) {
      open.emplace_back(item.cbegin(), item.cend());
    } else {
      leaves.push_back(&item);
    }
  }
}

// One JSON value as a `Tag::Host` element's little-endian bytes, appended to
// `out`: a number for the float types (rounded to the type, as numpy's
// astype does), an integer the type holds for the integer types, true or
// false for BOOL.
template <typename Tag>
absl::Status AppendElement(const json& value, std::string& out) {
  using T = typename Tag::Host;
  const char* kserve = KServeDatatype(Tag::value);
  T element{};
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) return absl::InvalidArgumentError("BOOL data must be true or false");
    element = value.get<bool>();
  } else if constexpr (IsFloatingDType(Tag::value)) {
    if (!value.is_number()) {
      return absl::InvalidArgumentError(absl::StrCat(kserve, " data must be numbers"));
    }
    if constexpr (std::is_same_v<T, double>) {
      element = value.get<double>();
    } else {
      element = T(value.get<float>());
    }
  } else {
    // An integer type: the value must be an integer the type can hold.
    bool fits = false;
    if (value.is_number_unsigned()) {
      fits = value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (fits) element = static_cast<T>(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      const int64_t i = value.get<int64_t>();
      fits = std::is_signed_v<T> ? i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                       i <= static_cast<int64_t>(std::numeric_limits<T>::max())
                                 : i >= 0;
      if (fits) element = static_cast<T>(i);
    }
    if (!fits) {
      return absl::InvalidArgumentError(
          absl::StrCat(kserve, " data must be integers from ", +std::numeric_limits<T>::min(),
                       " to ", +std::numeric_limits<T>::max()));
    }
  }
  if constexpr (std::is_same_v<T, bool>) {
    out.push_back(element ? 1 : 0);  // the protocol's BOOL is one byte, 0 or 1
  } else {
    out.append(reinterpret_cast<const char*>(&element), sizeof(element));
  }
  return absl::OkStatus();
}

// The JSON values of `dtype`'s little-endian `bytes`: numbers (16-bit floats
// widened to float; NaN and Inf become null, since JSON has neither: use
// binary data for them), true or false for BOOL.
json ElementsOf(DType dtype, const std::string& bytes) {
  json data = json::array();
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    for (size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T)) {
      T element;
      std::memcpy(&element, bytes.data() + i, sizeof(T));
      if constexpr (std::is_same_v<T, bool>) {
        data.push_back(bytes[i] != 0);
      } else {
        data.push_back(Widen(element));
      }
    }
  });
  return data;
}

// The strings of a BYTES output's serialized `bytes` (Note [BYTES
// serialization]), `count` of them. The server wrote them itself, so a block
// that does not split is a bug: answered with no strings rather than some.
json BytesElementsOf(const std::string& bytes, int64_t count) {
  json data = json::array();
  const absl::StatusOr<std::vector<absl::string_view>> elements = SplitBytesElements(bytes, count);
  if (!elements.ok()) return data;
  for (const absl::string_view element : *elements) data.push_back(std::string(element));
  return data;
}

// `parameters.<name>` of a JSON object, or null.
const json* Parameter(const json& object, const char* name) {
  const auto parameters = object.find("parameters");
  if (parameters == object.end() || !parameters->is_object()) return nullptr;
  const auto value = parameters->find(name);
  return value == parameters->end() ? nullptr : &*value;
}

// The classification extension's "classification" of a JSON output, as
// Triton's HTTP endpoint reads it: an unsigned integer, 0 asking for the
// values themselves. A count goes into the output's parameters as gRPC
// carries it (an int64_param; past int64, which asks for every class
// anyway, the largest), so that request validation judges both transports'
// alike (Note [Classification] in server/classification.h).
absl::Status CopyClassificationParameter(
    const json& output, inference::ModelInferRequest::InferRequestedOutputTensor* requested) {
  const json* classes = Parameter(output, "classification");
  if (classes == nullptr) return absl::OkStatus();
  if (!classes->is_number_unsigned()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Unable to set 'classification' of output ", QuoteClientText(requested->name()),
                     ": expected an unsigned integer, got ",
                     QuoteClientText(classes->dump(-1, ' ', false, json::error_handler_t::replace))));
  }
  const uint64_t count = classes->get<uint64_t>();
  if (count == 0) return absl::OkStatus();
  (*requested->mutable_parameters())["classification"].set_int64_param(static_cast<int64_t>(
      std::min<uint64_t>(count, std::numeric_limits<int64_t>::max())));
  return absl::OkStatus();
}

// The shared-memory parameters of a JSON input or output, copied into the
// tensor's `parameters` as the gRPC protocol carries them: the region's name
// a string_param, byte counts int64_param (uint64_param past int64), so
// request validation checks them once for both transports.
absl::Status CopySharedMemoryParameters(
    const json& tensor, const char* kind, const std::string& name,
    google::protobuf::Map<std::string, inference::InferParameter>* parameters) {
  for (const char* key :
       {"shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"}) {
    const json* value = Parameter(tensor, key);
    if (value == nullptr) continue;
    inference::InferParameter& parameter = (*parameters)[key];
    if (value->is_string()) {
      parameter.set_string_param(value->get<std::string>());
    } else if (value->is_number_unsigned()) {
      parameter.set_uint64_param(value->get<uint64_t>());
    } else if (value->is_number_integer()) {
      parameter.set_int64_param(value->get<int64_t>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(kind, " ", QuoteClientText(name),
                                                     ": parameter ", key,
                                                     " must be a string or an integer"));
    }
  }
  return absl::OkStatus();
}

// A BYTES input's JSON strings, serialized into `out` as raw contents carry
// them (Note [BYTES serialization]), so that request validation reads every
// transport's BYTES one way. Triton's JSON takes strings only.
absl::Status AppendBytesData(const std::vector<const json*>& leaves, const std::string& name,
                             std::string& out) {
  for (const json* leaf : leaves) {
    if (!leaf->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", QuoteClientText(name), ": BYTES data must be strings, got ",
          QuoteClientText(leaf->dump(-1, ' ', false, json::error_handler_t::replace))));
    }
    AppendBytesElement(leaf->get_ref<const std::string&>(), &out);
  }
  return absl::OkStatus();
}

absl::Status ParseInput(const json& input, size_t index, std::string_view binary,
                        size_t& binary_offset, inference::ModelInferRequest& request) {
  const std::string where = absl::StrCat("input ", index);
  if (!input.is_object())
    return absl::InvalidArgumentError(absl::StrCat(where, " is not an object"));
  const auto name = input.find("name");
  const auto datatype = input.find("datatype");
  const auto shape = input.find("shape");
  if (name == input.end() || !name->is_string() || datatype == input.end() ||
      !datatype->is_string() || shape == input.end() || !shape->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " needs \"name\", \"datatype\" and \"shape\""));
  }
  inference::ModelInferRequest::InferInputTensor* tensor = request.add_inputs();
  tensor->set_name(name->get<std::string>());
  tensor->set_datatype(datatype->get<std::string>());
  int64_t elements = 1;
  for (const json& dim : *shape) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor->name()),
                                                     ": shape must be non-negative integers"));
    }
    tensor->add_shape(dim.get<int64_t>());
    elements *= dim.get<int64_t>();
  }
  // BYTES is no row of the datatype table: its elements are strings.
  const bool bytes = tensor->datatype() == kBytesDatatype;
  const absl::StatusOr<DType> dtype = DTypeFromKServe(tensor->datatype());
  if (!bytes && !dtype.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor->name()),
                                                   ": datatype ",
                                                   QuoteClientText(tensor->datatype()), " ",
                                                   dtype.status().message()));
  }
  if (Parameter(input, "shared_memory_region") != nullptr) {
    // The tensor's bytes are in the region, so it takes no raw entry:
    // raw_input_contents holds the inputs outside shared memory.
    if (Parameter(input, "binary_data_size") != nullptr || input.contains("data")) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", QuoteClientText(tensor->name()),
                       " names a shared_memory_region but also carries data; send it one way"));
    }
    return CopySharedMemoryParameters(input, "input", tensor->name(), tensor->mutable_parameters());
  }
  std::string* contents = request.add_raw_input_contents();
  if (const json* size = Parameter(input, "binary_data_size"); size != nullptr) {
    if (!size->is_number_unsigned()) {
      return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor->name()),
                                                     ": binary_data_size must be a byte count"));
    }
    const size_t bytes = size->get<size_t>();
    if (binary_offset + bytes > binary.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", QuoteClientText(tensor->name()), ": binary_data_size ", bytes,
          " runs past the ", binary.size(), " bytes of binary data after the JSON header"));
    }
    contents->assign(binary.substr(binary_offset, bytes));
    binary_offset += bytes;
    return absl::OkStatus();
  }
  const auto data = input.find("data");
  if (data == input.end()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor->name()),
                                                   " has neither \"data\" nor binary_data_size"));
  }
  std::vector<const json*> leaves;
  Flatten(*data, leaves);
  if (static_cast<int64_t>(leaves.size()) != elements) {
    return absl::InvalidArgumentError(absl::StrCat("input ", QuoteClientText(tensor->name()),
                                                   " has ", leaves.size(),
                                                   " values; its shape holds ", elements));
  }
  if (bytes) return AppendBytesData(leaves, tensor->name(), *contents);
  contents->reserve(leaves.size() * DTypeSize(*dtype));
  for (const json* leaf : leaves) {
    const absl::Status status = VisitDType(*dtype, [&](auto tag) {
      return AppendElement<decltype(tag)>(*leaf, *contents);
    });
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", QuoteClientText(tensor->name()), ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

bool IsTrue(const json* value) {
  return value != nullptr && value->is_boolean() && value->get<bool>();
}

// The request's "parameters" object into the request's map, as gRPC clients
// send them: Triton's "sequence_id" (an integer or a string),
// "sequence_start", "sequence_end", "priority", "timeout", and any other.
// Non-negative integers become uint64_param (a sequence id may exceed
// int64), negative ones int64_param.
absl::Status CopyRequestParameters(const json& header, inference::ModelInferRequest* request) {
  const auto parameters = header.find("parameters");
  if (parameters == header.end()) return absl::OkStatus();
  if (!parameters->is_object()) {
    return absl::InvalidArgumentError("\"parameters\" must be a JSON object");
  }
  for (const auto& [key, value] : parameters->items()) {
    if (key == "binary_data_output") continue;  // the response's form, read apart
    inference::InferParameter& parameter = (*request->mutable_parameters())[key];
    if (value.is_boolean()) {
      parameter.set_bool_param(value.get<bool>());
    } else if (value.is_number_unsigned()) {
      parameter.set_uint64_param(value.get<uint64_t>());
    } else if (value.is_number_integer()) {
      parameter.set_int64_param(value.get<int64_t>());
    } else if (value.is_number_float()) {
      parameter.set_double_param(value.get<double>());
    } else if (value.is_string()) {
      parameter.set_string_param(value.get<std::string>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "request parameter ", QuoteClientText(key), " must be a boolean, a number or a string"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckJsonDepth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the request's JSON nests arrays and objects more than ", max_depth,
            " levels deep, the server's limit (--http-max-json-depth); send tensor data "
            "flat or nested once per dimension"));
      }
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced text is the parser's to refuse
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HttpInferRequest> ParseInferRequest(std::string_view body, size_t header_length,
                                                   const std::string& model_name,
                                                   const std::string& model_version,
                                                   int max_json_depth) {
  if (header_length > body.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Inference-Header-Content-Length ",
                                                   header_length, " exceeds the body's ",
                                                   body.size(), " bytes"));
  }
  RETURN_IF_ERROR(CheckJsonDepth(body.substr(0, header_length), max_json_depth));
  const json header =
      json::parse(body.substr(0, header_length), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is not valid JSON (it starts with ",
                     QuoteClientText(absl::string_view(body.data(), body.size())), ")"));
  }
  if (!header.is_object()) return absl::InvalidArgumentError("the request must be a JSON object");
  HttpInferRequest parsed;
  inference::ModelInferRequest& request = parsed.request;
  request.set_model_name(model_name);
  request.set_model_version(model_version);
  if (const auto id = header.find("id"); id != header.end()) {
    if (!id->is_string()) return absl::InvalidArgumentError("\"id\" must be a string");
    request.set_id(id->get<std::string>());
  }
  parsed.all_binary = IsTrue(Parameter(header, "binary_data_output"));
  RETURN_IF_ERROR(CopyRequestParameters(header, &request));
  const auto inputs = header.find("inputs");
  if (inputs == header.end() || !inputs->is_array()) {
    return absl::InvalidArgumentError("the request needs an \"inputs\" array");
  }
  const std::string_view binary = body.substr(header_length);
  size_t binary_offset = 0;
  for (size_t i = 0; i < inputs->size(); ++i) {
    RETURN_IF_ERROR(ParseInput((*inputs)[i], i, binary, binary_offset, request));
  }
  if (binary_offset != binary.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(binary.size() - binary_offset, " bytes of binary data belong to no input"));
  }
  if (const auto outputs = header.find("outputs"); outputs != header.end()) {
    if (!outputs->is_array()) return absl::InvalidArgumentError("\"outputs\" must be an array");
    for (const json& output : *outputs) {
      const auto name = output.is_object() ? output.find("name") : output.end();
      if (!output.is_object() || name == output.end() || !name->is_string()) {
        return absl::InvalidArgumentError("each of \"outputs\" needs a \"name\"");
      }
      inference::ModelInferRequest::InferRequestedOutputTensor* requested = request.add_outputs();
      requested->set_name(name->get<std::string>());
      RETURN_IF_ERROR(CopySharedMemoryParameters(output, "output", requested->name(),
                                                 requested->mutable_parameters()));
      if (IsTrue(Parameter(output, "binary_data")))
        parsed.binary_outputs.insert(name->get<std::string>());
      RETURN_IF_ERROR(CopyClassificationParameter(output, requested));
    }
  }
  return parsed;
}

HttpBody InferResponseToHttp(const inference::ModelInferResponse& response,
                             const HttpInferRequest& request) {
  json header = {{"model_name", response.model_name()},
                 {"model_version", response.model_version()}};
  if (!response.id().empty()) header["id"] = response.id();
  json outputs = json::array();
  std::string binary;
  for (int i = 0; i < response.outputs_size(); ++i) {
    const inference::ModelInferResponse::InferOutputTensor& output = response.outputs(i);
    json tensor = {
        {"name", output.name()},
        {"datatype", output.datatype()},
        {"shape", json(std::vector<int64_t>(output.shape().begin(), output.shape().end()))}};
    if (output.parameters().contains("shared_memory_region")) {
      // The rows are in the client's region already. Triton answers such an
      // output with its name, datatype and shape alone: Triton's C++ client
      // (perf_analyzer) reads any "parameters" of an output as binary data
      // and fails on one without "binary_data_size".
      outputs.push_back(std::move(tensor));
      continue;
    }
    const std::string& bytes = response.raw_output_contents(i);
    if (request.all_binary || request.binary_outputs.contains(output.name())) {
      tensor["parameters"] = {{"binary_data_size", bytes.size()}};
      binary += bytes;
    } else if (output.datatype() == kBytesDatatype) {
      int64_t count = 1;
      for (const int64_t dim : output.shape()) {
        if (__builtin_mul_overflow(count, dim, &count)) count = -1;  // splits into nothing
      }
      tensor["data"] = BytesElementsOf(bytes, count);
    } else {
      // The server names only table types in its answers, and BYTES.
      const absl::StatusOr<DType> dtype = DTypeFromKServe(output.datatype());
      tensor["data"] = dtype.ok() ? ElementsOf(*dtype, bytes) : json::array();
    }
    outputs.push_back(std::move(tensor));
  }
  header["outputs"] = std::move(outputs);
  HttpBody body;
  // A label file's text need not be UTF-8, which JSON strings must be.
  body.content = header.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty()) {
    body.header_length = body.content.size();
    body.content += binary;
  }
  return body;
}

std::string ServerMetadataToJson(const inference::ServerMetadataResponse& metadata) {
  return ProtoToJson(metadata).dump();
}

std::string ModelMetadataToJson(const inference::ModelMetadataResponse& metadata) {
  return ProtoToJson(metadata).dump();
}

std::string ModelConfigToJson(const inference::ModelConfig& config) {
  return ProtoToJson(config).dump();
}

std::string ModelStatisticsToJson(const inference::ModelStatisticsResponse& statistics) {
  return ProtoToJson(statistics).dump();
}

absl::StatusOr<inference::SystemSharedMemoryRegisterRequest> ParseSystemSharedMemoryRegister(
    std::string_view body, const std::string& name) {
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "registering shared memory region ", QuoteClientText(name),
        " needs a JSON object {\"key\", \"offset\", \"byte_size\"}; the body starts with ",
        QuoteClientText(absl::string_view(body.data(), body.size()))));
  }
  const auto key = parsed.find("key");
  const auto offset = parsed.find("offset");
  const auto byte_size = parsed.find("byte_size");
  if (key == parsed.end() || !key->is_string() || byte_size == parsed.end() ||
      !byte_size->is_number_unsigned() ||
      (offset != parsed.end() && !offset->is_number_unsigned())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "registering shared memory region ", QuoteClientText(name),
        " needs \"key\" (a string), \"byte_size\" and optionally \"offset\" (byte counts)"));
  }
  inference::SystemSharedMemoryRegisterRequest request;
  request.set_name(name);
  request.set_key(key->get<std::string>());
  request.set_byte_size(byte_size->get<uint64_t>());
  if (offset != parsed.end()) request.set_offset(offset->get<uint64_t>());
  return request;
}

absl::StatusOr<inference::CudaSharedMemoryRegisterRequest> ParseCudaSharedMemoryRegister(
    std::string_view body, const std::string& name) {
  const std::string expected = absl::StrCat(
      "registering CUDA shared memory region ", QuoteClientText(name),
      " needs a JSON object {\"raw_handle\": {\"b64\": BASE64}, \"device_id\", \"byte_size\"}");
  const json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(expected, "; the body starts with ",
                     QuoteClientText(absl::string_view(body.data(), body.size()))));
  }
  const auto handle = parsed.find("raw_handle");
  const auto device_id = parsed.find("device_id");
  const auto byte_size = parsed.find("byte_size");
  std::string raw_handle;
  if (handle == parsed.end() || !handle->is_object() || !handle->contains("b64") ||
      !(*handle)["b64"].is_string() ||
      !absl::Base64Unescape((*handle)["b64"].get<std::string>(), &raw_handle) ||
      device_id == parsed.end() || !device_id->is_number_unsigned() ||
      byte_size == parsed.end() || !byte_size->is_number_unsigned()) {
    return absl::InvalidArgumentError(expected);
  }
  inference::CudaSharedMemoryRegisterRequest request;
  request.set_name(name);
  request.set_raw_handle(std::move(raw_handle));
  request.set_device_id(device_id->get<int64_t>());
  request.set_byte_size(byte_size->get<uint64_t>());
  return request;
}

std::string SystemSharedMemoryStatusToJson(
    const inference::SystemSharedMemoryStatusResponse& status) {
  json regions = json::array();
  for (const auto& [name, region] : status.regions()) {
    regions.push_back({{"name", region.name()},
                       {"key", region.key()},
                       {"offset", region.offset()},
                       {"byte_size", region.byte_size()}});
  }
  // By name: the proto map's order is unspecified.
  std::sort(regions.begin(), regions.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  return regions.dump();
}

std::string CudaSharedMemoryStatusToJson(const inference::CudaSharedMemoryStatusResponse& status) {
  json regions = json::array();
  for (const auto& [name, region] : status.regions()) {
    regions.push_back({{"name", region.name()},
                       {"device_id", region.device_id()},
                       {"byte_size", region.byte_size()}});
  }
  std::sort(regions.begin(), regions.end(),
            [](const json& a, const json& b) { return a["name"] < b["name"]; });
  return regions.dump();
}

namespace {

// An optional JSON object body: empty is {}. `what` names the request in
// the error.
absl::StatusOr<json> ParseOptionalObject(std::string_view body, absl::string_view what) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return json::object();
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " takes an optional JSON object; the body starts with ",
                     QuoteClientText(absl::string_view(body.data(), body.size()))));
  }
  return parsed;
}

// {"parameters": {...}} of a load or unload body into the request's map.
absl::Status ParseRepositoryParameters(
    std::string_view body, const std::string& name, absl::string_view action,
    google::protobuf::Map<std::string, inference::ModelRepositoryParameter>* parameters) {
  const std::string what = absl::StrCat(action, " of model ", QuoteClientText(name));
  ASSIGN_OR_RETURN(const json parsed, ParseOptionalObject(body, what));
  const auto found = parsed.find("parameters");
  if (found == parsed.end()) return absl::OkStatus();
  if (!found->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"parameters\" of the ", what, " must be a JSON object"));
  }
  for (const auto& [key, value] : found->items()) {
    inference::ModelRepositoryParameter& parameter = (*parameters)[key];
    if (value.is_string()) {
      parameter.set_string_param(value.get<std::string>());
    } else if (value.is_boolean()) {
      parameter.set_bool_param(value.get<bool>());
    } else if (value.is_number_integer()) {
      parameter.set_int64_param(value.get<int64_t>());
    } else {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", QuoteClientText(key), " of the ",
                                                     what,
                                                     " must be a string, boolean or integer"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<inference::RepositoryIndexRequest> ParseRepositoryIndex(std::string_view body) {
  ASSIGN_OR_RETURN(const json parsed, ParseOptionalObject(body, "the repository index"));
  inference::RepositoryIndexRequest request;
  const auto ready = parsed.find("ready");
  if (ready != parsed.end()) {
    if (!ready->is_boolean()) {
      return absl::InvalidArgumentError("\"ready\" of the repository index must be a boolean");
    }
    request.set_ready(ready->get<bool>());
  }
  return request;
}

std::string RepositoryIndexToJson(const inference::RepositoryIndexResponse& index) {
  json models = json::array();
  for (const inference::RepositoryIndexResponse::ModelIndex& model : index.models()) {
    json entry = {{"name", model.name()}};
    if (!model.version().empty()) entry["version"] = model.version();
    if (!model.state().empty()) entry["state"] = model.state();
    if (!model.reason().empty()) entry["reason"] = model.reason();
    models.push_back(std::move(entry));
  }
  return models.dump();
}

absl::StatusOr<inference::RepositoryModelLoadRequest> ParseRepositoryModelLoad(
    std::string_view body, const std::string& name) {
  inference::RepositoryModelLoadRequest request;
  request.set_model_name(name);
  RETURN_IF_ERROR(ParseRepositoryParameters(body, name, "the load", request.mutable_parameters()));
  return request;
}

absl::StatusOr<inference::RepositoryModelUnloadRequest> ParseRepositoryModelUnload(
    std::string_view body, const std::string& name) {
  inference::RepositoryModelUnloadRequest request;
  request.set_model_name(name);
  RETURN_IF_ERROR(
      ParseRepositoryParameters(body, name, "the unload", request.mutable_parameters()));
  return request;
}

std::string ErrorJson(absl::string_view message) {
  // Note [Bounded error texts].
  return json{{"error", BoundedErrorText(message)}}.dump();
}

}  // namespace graphserve
