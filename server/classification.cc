#include "server/classification.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/bytes_tensor.h"
#include "server/client_text.h"

namespace graphserve {

namespace {

constexpr char kClassificationParameter[] = "classification";

// What one element is ordered by: half types by their float value, the rest
// as they are.
template <typename T>
auto OrderValue(T value) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(value);
  } else {
    return value;
  }
}

// Whether element (a, i) comes before (b, j): larger value first, NaN after
// every number, equal values lower index first (a strict weak order even
// with NaN, which the plain > is not).
template <typename V>
bool ComesBefore(V a, size_t i, V b, size_t j) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return std::isnan(b);
      return i < j;
    }
  }
  if (a != b) return a > b;
  return i < j;
}

template <typename T>
std::vector<std::string> TopClassesOf(const std::byte* row, size_t count, int64_t k,
                                      const std::vector<std::string>& labels) {
  // A copy: the row may sit at any byte of the response's string.
  std::vector<T> values(count);
  std::memcpy(values.data(), row, count * sizeof(T));
  const size_t n = std::min(count, static_cast<size_t>(k));
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&values](size_t i, size_t j) {
                      return ComesBefore(OrderValue(values[i]), i, OrderValue(values[j]), j);
                    });
  std::vector<std::string> classes;
  classes.reserve(n);
  for (size_t rank = 0; rank < n; ++rank) {
    const size_t index = order[rank];
    // std::to_string, as Triton prints it: int8 and uint8 promote to int.
    std::string text = absl::StrCat(std::to_string(OrderValue(values[index])), ":", index);
    if (index < labels.size() && !labels[index].empty()) absl::StrAppend(&text, ":", labels[index]);
    classes.push_back(std::move(text));
  }
  return classes;
}

}  // namespace

absl::StatusOr<std::optional<int64_t>> RequestedClassCount(
    const inference::ModelInferRequest::InferRequestedOutputTensor& output, const TensorSpec& spec,
    const ModelInterface& model) {
  const auto found = output.parameters().find(kClassificationParameter);
  if (found == output.parameters().end()) return std::nullopt;
  // Triton's texts first (Note [Classification]), then which output of
  // which model.
  const std::string where = absl::StrCat(" (output '", spec.name, "' of model '", model.name, "')");
  if (found->second.parameter_choice_case() != inference::InferParameter::kInt64Param) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid value type for 'classification' parameter, expected int64_param", where));
  }
  const int64_t count = found->second.int64_param();
  if (count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid value for 'classification' parameter, expected >= 1, got ", count, where));
  }
  if (output.parameters().contains("shared_memory_region")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output can't set both 'shared_memory_region' and 'classification'", where));
  }
  // BOOL has no order; BYTES holds text, which Triton does not order either.
  if (spec.dtype == DType::kBool || spec.wire != TensorWire::kNumbers) {
    return absl::InvalidArgumentError(
        absl::StrCat("class result not available for output due to unsupported type '",
                     spec.datatype(), "'", where));
  }
  return count;
}

std::vector<std::string> TopClasses(const std::byte* row, size_t count, DType dtype, int64_t k,
                                    const std::vector<std::string>& labels) {
  return VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    if constexpr (std::is_same_v<T, bool>) {
      // Refused with the request (RequestedClassCount): BOOL has no order.
      return std::vector<std::string>();
    } else {
      return TopClassesOf<T>(row, count, k, labels);
    }
  });
}

absl::StatusOr<std::vector<std::string>> ReadLabelFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    const std::string message =
        absl::StrCat("failed to open label file '", path, "': ", std::strerror(error));
    return error == EACCES ? absl::PermissionDeniedError(message) : absl::NotFoundError(message);
  }
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(in, line)) labels.push_back(line);
  if (in.bad()) return absl::DataLossError(absl::StrCat("failed to read label file '", path, "'"));
  return labels;
}

absl::Status ReadOutputLabels(const inference::ModelConfig& config,
                              const std::string& model_directory, ModelInterface* interface) {
  namespace fs = std::filesystem;
  for (const inference::ModelOutput& output : config.output()) {
    if (output.label_filename().empty()) continue;
    const fs::path path = fs::path(model_directory) / output.label_filename();
    // Triton's rule: the file must lie inside the model directory, links
    // followed (a label_filename of "../x" or "/etc/x" reads nothing).
    std::error_code error;
    const fs::path file = fs::weakly_canonical(path, error);
    const fs::path directory = error ? fs::path() : fs::canonical(model_directory, error);
    const fs::path relative = error ? fs::path() : file.lexically_relative(directory);
    if (error || relative.empty() || *relative.begin() == "..") {
      return absl::InvalidArgumentError(absl::StrCat(
          "label file path '", path.string(), "' for output '", output.name(), "' in model '",
          interface->name, "' is outside model directory"));
    }
    const auto spec = std::find_if(
        interface->outputs.begin(), interface->outputs.end(),
        [&output](const TensorSpec& candidate) { return candidate.name == output.name(); });
    if (spec == interface->outputs.end()) continue;  // not served: InterfaceFromConfig's outputs
    ASSIGN_OR_RETURN(spec->labels, ReadLabelFile(path.string()));
  }
  return absl::OkStatus();
}

absl::Status ClassifyOutputs(const inference::ModelInferRequest& request,
                             const ModelInterface& model,
                             inference::ModelInferResponse* response) {
  // A request that names no outputs classifies none; one that names them has
  // response output k for request output k (PrepareInferResponse).
  for (int k = 0; k < request.outputs_size(); ++k) {
    const auto& requested = request.outputs(k);
    if (!requested.parameters().contains(kClassificationParameter)) continue;
    const auto spec =
        std::find_if(model.outputs.begin(), model.outputs.end(),
                     [&requested](const TensorSpec& s) { return s.name == requested.name(); });
    if (spec == model.outputs.end() || k >= response->outputs_size()) {
      return absl::InternalError(
          absl::StrCat("classification of output ", QuoteClientText(requested.name()),
                       " of model '", model.name, "' found no such output in the response"));
    }
    ASSIGN_OR_RETURN(const std::optional<int64_t> classes,
                     RequestedClassCount(requested, *spec, model));
    inference::ModelInferResponse::InferOutputTensor* output = response->mutable_outputs(k);
    const int64_t rows = model.batching ? output->shape(0) : 1;
    // A row's elements as the response shapes them (a shape dim at the
    // request's extent: Note [Shape buckets] in server/shape_buckets.h).
    size_t per_row = 1;
    for (int d = model.batching ? 1 : 0; d < output->shape_size(); ++d) {
      per_row *= static_cast<size_t>(output->shape(d));
    }
    const size_t row_bytes = per_row * DTypeSize(spec->dtype);
    const std::string values = std::move(*response->mutable_raw_output_contents(k));
    if (values.size() != static_cast<size_t>(rows) * row_bytes) {
      return absl::InternalError(absl::StrCat("output '", spec->name, "' of model '", model.name,
                                              "' holds ", values.size(), " bytes, not ", rows,
                                              " rows of ", row_bytes));
    }
    std::string serialized;
    for (int64_t row = 0; row < rows; ++row) {
      const std::byte* data = reinterpret_cast<const std::byte*>(values.data()) + row * row_bytes;
      for (const std::string& text : TopClasses(data, per_row, spec->dtype, *classes, spec->labels)) {
        AppendBytesElement(text, &serialized);
      }
    }
    *response->mutable_raw_output_contents(k) = std::move(serialized);
    output->set_datatype(kBytesDatatype);
    output->clear_shape();
    if (model.batching) output->add_shape(rows);
    output->add_shape(std::min(static_cast<int64_t>(per_row), *classes));
  }
  return absl::OkStatus();
}

}  // namespace graphserve
