#include "server/model_interface.h"

#include <algorithm>
#include <limits>
#include <set>
#include <type_traits>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "proto/config_dtype.h"
#include "server/bytes_tensor.h"
#include "server/row_shape.h"

namespace graphserve {

const char* TensorSpec::datatype() const {
  return wire == TensorWire::kNumbers ? KServeDatatype(dtype) : kBytesDatatype;
}

size_t TensorSpec::bytes_per_row() const {
  return static_cast<size_t>(NumElements(dims)) * DTypeSize(dtype);
}

Dims TensorSpec::DimsAt(const std::vector<int64_t>& extents) const {
  Dims at = dims;
  for (size_t d = 0; d < shape_dim_of.size(); ++d) {
    if (shape_dim_of[d] >= 0) at[d] = extents[static_cast<size_t>(shape_dim_of[d])];
  }
  return at;
}

ModelInterface ModelInterface::At(const std::vector<int64_t>& extents) const {
  ModelInterface at = *this;
  for (std::vector<TensorSpec>* side : {&at.inputs, &at.outputs}) {
    for (TensorSpec& spec : *side) {
      spec.dims = spec.DimsAt(extents);
      spec.shape_dim_of.clear();
    }
  }
  at.shape_dims.clear();
  at.buckets.clear();
  return at;
}

namespace {

// Reads config inputs and outputs alike: ModelInput and ModelOutput share the
// fields used here. `kind` is "input" or "output", for messages.
template <typename ConfigTensor>
absl::StatusOr<TensorSpec> SpecFromConfig(const inference::ModelConfig& config,
                                          const ConfigTensor& tensor, const char* kind, int index) {
  const std::string where =
      absl::StrCat("config.pbtxt of model '", config.name(), "': ", kind, "[", index, "]");
  if (tensor.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, " has no name"));
  TensorSpec spec;
  spec.name = tensor.name();
  if constexpr (std::is_same_v<ConfigTensor, inference::ModelInput>) {
    spec.optional = tensor.optional();
  }
  if (tensor.data_type() == inference::TYPE_STRING) {
    // Its dtype is the model file's (ResolveStringTensors).
    spec.wire = TensorWire::kText;
  } else {
    absl::StatusOr<DType> dtype = DTypeFromConfig(tensor.data_type());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " '", spec.name, "' data_type: ", dtype.status().message()));
    }
    spec.dtype = *dtype;
  }
  // The largest batch must have a byte count an int64 can hold, so that
  // request validation multiplies rows by bytes_per_row without overflow.
  // (A model that does not batch, max_batch_size 0, has one row.) A STRING
  // tensor's numbers are at most 8 bytes each.
  constexpr int64_t kWidestNumber = 8;
  int64_t bytes = std::max<int64_t>(config.max_batch_size(), 1) *
                  (spec.wire == TensorWire::kText ? kWidestNumber
                                                  : static_cast<int64_t>(DTypeSize(spec.dtype)));
  for (int d = 0; d < tensor.dims_size(); ++d) {
    const int64_t dim = tensor.dims(d);
    if (dim == -1) {
      // A shape dim: bounded by its largest bucket (server/shape_buckets.h).
      spec.dims.push_back(dim);
      continue;
    }
    if (dim < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " '", spec.name, "' dims[", d, "] is ", dim,
          "; a dim after the batch is at least 1, or -1 for a dim each request chooses"));
    }
    if (__builtin_mul_overflow(bytes, dim, &bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " '", spec.name, "' dims [", absl::StrJoin(tensor.dims(), ","),
          "] at max_batch_size ", config.max_batch_size(), " are too large to address"));
    }
    spec.dims.push_back(dim);
  }
  if (tensor.has_reshape() && absl::c_linear_search(spec.dims, -1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, " '", spec.name, "' has a reshape and a -1 dim; GraphServe reshapes fixed dims only"));
  }
  if (tensor.has_reshape()) {
    // An empty shape is a scalar per row (Triton's reshape of dims [1] to []).
    Dims reshaped;
    for (int d = 0; d < tensor.reshape().shape_size(); ++d) {
      const int64_t dim = tensor.reshape().shape(d);
      if (dim < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " '", spec.name, "' reshape.shape[", d, "] is ", dim,
            "; every reshaped dim must be fixed and at least 1 (only the batch varies)"));
      }
      reshaped.push_back(dim);
    }
    // Compared as products of dims >= 1 whose bytes fit an int64 (checked
    // above for dims); a larger reshape product overflows only when it differs.
    int64_t reshaped_elements = 1;
    bool overflow = false;
    for (int64_t dim : reshaped) {
      overflow = overflow || __builtin_mul_overflow(reshaped_elements, dim, &reshaped_elements);
    }
    if (overflow || reshaped_elements != NumElements(spec.dims)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " '", spec.name, "' reshape.shape ", DimsToString(reshaped), " has ",
                       overflow ? "too many" : absl::StrCat(reshaped_elements),
                       " elements but dims ", DimsToString(spec.dims), " have ",
                       NumElements(spec.dims), "; a reshape keeps a row's element count"));
    }
    spec.model_dims = std::move(reshaped);
  }
  return spec;
}

template <typename ConfigTensors>
absl::Status SpecsFromConfig(const inference::ModelConfig& config, const ConfigTensors& tensors,
                             const char* kind, std::vector<TensorSpec>* specs,
                             std::set<std::string>* names) {
  if (tensors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.pbtxt of model '", config.name(), "' declares no ", kind, "s"));
  }
  for (int i = 0; i < tensors.size(); ++i) {
    ASSIGN_OR_RETURN(TensorSpec spec, SpecFromConfig(config, tensors[i], kind, i));
    // Inputs and outputs share one namespace: the runtime's graph names values
    // uniquely, and a shared name would make requests ambiguous to read.
    if (!names->insert(spec.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("config.pbtxt of model '", config.name(),
                                                     "': ", kind, "[", i, "] name '", spec.name,
                                                     "' is declared twice"));
    }
    specs->push_back(std::move(spec));
  }
  return absl::OkStatus();
}

// Compares one side (inputs or outputs) of two interfaces.
absl::Status CheckTensorsMatch(const std::vector<TensorSpec>& config,
                               const std::vector<TensorSpec>& model, const char* kind) {
  if (config.size() != model.size()) {
    return absl::FailedPreconditionError(absl::StrCat("config.pbtxt declares ", config.size(), " ",
                                                      kind, "s but the model file has ",
                                                      model.size()));
  }
  for (size_t i = 0; i < config.size(); ++i) {
    const TensorSpec& declared = config[i];
    const TensorSpec& actual = model[i];
    if (declared.name != actual.name) {
      return absl::FailedPreconditionError(
          absl::StrCat("config.pbtxt declares ", kind, " ", i, " as '", declared.name,
                       "' but the model file's ", kind, " ", i, " is '", actual.name,
                       "' (config.pbtxt lists ", kind, "s in the model's order)"));
    }
    if (declared.dtype != actual.dtype) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt declares ", kind, " '", declared.name, "' as ", declared.datatype(),
          declared.wire == TensorWire::kText
              ? absl::StrCat(" of ", KServeDatatype(declared.dtype), " numbers")
              : "",
          " but the model file has ", KServeDatatype(actual.dtype)));
    }
    // A reshape names the model's side; clients keep the dims.
    const Dims& expected = declared.model_dims.value_or(declared.dims);
    if (expected != actual.dims) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt declares ", kind, " '", declared.name, "' with ",
          declared.model_dims.has_value() ? "reshape.shape " : "dims ", DimsToString(expected),
          " but the model file has ", DimsToString(actual.dims)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelInterface> InterfaceFromConfig(const inference::ModelConfig& config) {
  if (config.max_batch_size() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.pbtxt of model '", config.name(), "': max_batch_size is ", config.max_batch_size(),
        "; it must be 0 (the model does not batch: dims are the full shape) or a batch size"));
  }
  ModelInterface interface;
  interface.name = config.name();
  interface.batching = config.max_batch_size() > 0;
  interface.max_batch_size = std::max<int64_t>(config.max_batch_size(), 1);
  std::set<std::string> names;
  RETURN_IF_ERROR(SpecsFromConfig(config, config.input(), "input", &interface.inputs, &names));
  RETURN_IF_ERROR(SpecsFromConfig(config, config.output(), "output", &interface.outputs, &names));
  return interface;
}

ModelInterface InterfaceFromGraph(const std::string& name, int64_t max_batch_size, bool batching,
                                  const BoundGraph& graph) {
  const auto spec = [&graph, batching](ValueId id) {
    const BoundValue& value = graph.value(id);
    TensorSpec spec;
    spec.name = value.name;
    spec.dtype = value.dtype;
    const size_t batch_dims = batching && !value.dims.empty() ? 1 : 0;
    spec.dims.assign(value.dims.begin() + batch_dims, value.dims.end());
    return spec;
  };
  ModelInterface interface;
  interface.name = name;
  interface.max_batch_size = max_batch_size;
  interface.batching = batching;
  for (ValueId id : graph.inputs) interface.inputs.push_back(spec(id));
  for (ValueId id : graph.outputs) interface.outputs.push_back(spec(id));
  return interface;
}

namespace {

// `values` (the model's inputs or outputs) in the order of `declared`; every
// declared name must be one of them, and with `all_required` every one of
// them must be declared.
absl::StatusOr<std::vector<ValueInfo>> InDeclaredOrder(const std::vector<TensorSpec>& declared,
                                                       const std::vector<ValueInfo>& values,
                                                       const char* kind, bool all_required) {
  std::vector<ValueInfo> arranged;
  for (const TensorSpec& spec : declared) {
    auto it = std::find_if(values.begin(), values.end(),
                           [&spec](const ValueInfo& value) { return value.name == spec.name; });
    if (it == values.end()) {
      std::vector<std::string> names;
      for (const ValueInfo& value : values) names.push_back(value.name);
      return absl::FailedPreconditionError(
          absl::StrCat("config.pbtxt declares ", kind, " '", spec.name,
                       "', which the model file lacks (its ", kind, "s: ",
                       absl::StrJoin(names, ", "), ")"));
    }
    arranged.push_back(*it);
  }
  if (all_required && arranged.size() != values.size()) {
    for (const ValueInfo& value : values) {
      const bool listed = std::any_of(declared.begin(), declared.end(), [&](const TensorSpec& s) {
        return s.name == value.name;
      });
      if (!listed) {
        return absl::FailedPreconditionError(absl::StrCat(
            "config.pbtxt does not declare the model's ", kind, " '", value.name,
            "'; every input must be declared"));
      }
    }
  }
  return arranged;
}

}  // namespace

absl::Status ArrangeModelAsDeclared(const ModelInterface& declared, Model* model) {
  ASSIGN_OR_RETURN(model->inputs,
                   InDeclaredOrder(declared.inputs, model->inputs, "input", /*all_required=*/true));
  ASSIGN_OR_RETURN(model->outputs, InDeclaredOrder(declared.outputs, model->outputs, "output",
                                                   /*all_required=*/false));
  return absl::OkStatus();
}

namespace {

// Note [Strings at the model's edges]: one side of ResolveStringTensors.
// `kind` is "input" or "output".
absl::Status ResolveSide(const std::vector<ValueInfo>& values, const Model& model,
                         const char* kind, const std::vector<TensorSpec>& inputs,
                         std::vector<TensorSpec>* specs) {
  const bool outputs = std::string(kind) == "output";
  for (TensorSpec& spec : *specs) {
    const bool declared_string = spec.wire == TensorWire::kText;
    const auto value = std::find_if(values.begin(), values.end(),
                                    [&](const ValueInfo& v) { return v.name == spec.name; });
    if (value != values.end()) {
      if (declared_string && !value->text) {
        return absl::FailedPreconditionError(absl::StrCat(
            "config.pbtxt declares ", kind, " '", spec.name,
            "' as TYPE_STRING but the model file has ", KServeDatatype(value->dtype)));
      }
      if (!declared_string && value->text) {
        return absl::FailedPreconditionError(absl::StrCat(
            "config.pbtxt declares ", kind, " '", spec.name, "' as ", KServeDatatype(spec.dtype),
            " but the model file has STRING (the text of ", KServeDatatype(value->dtype),
            " numbers): declare it TYPE_STRING"));
      }
      if (declared_string) spec.dtype = value->dtype;
      continue;
    }
    const auto passed = std::find_if(
        model.passed_strings.begin(), model.passed_strings.end(), [&](const PassedString& p) {
          return (outputs ? p.output : p.input) == spec.name;
        });
    if (passed == model.passed_strings.end()) continue;  // ArrangeModelAsDeclared names it
    if (!declared_string) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt declares ", kind, " '", spec.name, "' as ", KServeDatatype(spec.dtype),
          " but the model file has STRING, passed through unchanged: declare it TYPE_STRING"));
    }
    spec.wire = TensorWire::kPassed;
    if (!outputs) continue;
    const auto input = std::find_if(inputs.begin(), inputs.end(), [&](const TensorSpec& s) {
      return s.name == passed->input;
    });
    if (input == inputs.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "config.pbtxt declares output '", spec.name, "', which hands back the model file's "
          "input '", passed->input, "', but does not declare that input"));
    }
    spec.passed_from = static_cast<size_t>(input - inputs.begin());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ResolveStringTensors(const Model& model, ModelInterface* declared) {
  RETURN_IF_ERROR(ResolveSide(model.inputs, model, "input", declared->inputs, &declared->inputs));
  return ResolveSide(model.outputs, model, "output", declared->inputs, &declared->outputs);
}

absl::Status TakeInputDefaults(const Model& model, ModelInterface* declared) {
  for (TensorSpec& spec : declared->inputs) {
    if (!spec.optional) continue;
    const auto input = std::find_if(model.inputs.begin(), model.inputs.end(),
                                    [&](const ValueInfo& v) { return v.name == spec.name; });
    if (input == model.inputs.end() || input->default_value == nullptr) continue;
    const HostTensor& value = *input->default_value;
    const std::string why = absl::StrCat(
        "config.pbtxt declares input '", spec.name, "' optional, and the model file's default ",
        "for it (the initializer of its name) is ", DimsToString(value.dims()), "; GraphServe ",
        "fills each row of a request that leaves the input out with the default, which must be ",
        "one row");
    if (absl::c_linear_search(spec.dims, -1)) {
      return absl::FailedPreconditionError(
          absl::StrCat(why, ", but the input's dims ", DimsToString(spec.dims),
                       " have a dim each request chooses"));
    }
    if (value.bytes() != spec.bytes_per_row()) {
      return absl::FailedPreconditionError(
          absl::StrCat(why, " of dims ", DimsToString(spec.dims)));
    }
    spec.default_row = input->default_value;
  }
  return absl::OkStatus();
}

absl::Status CheckInterfacesMatch(const ModelInterface& config, const ModelInterface& model) {
  RETURN_IF_ERROR(CheckTensorsMatch(config.inputs, model.inputs, "input"));
  return CheckTensorsMatch(config.outputs, model.outputs, "output");
}

std::string ClientShapeString(const TensorSpec& spec, bool batching) {
  if (!batching) return DimsToString(spec.dims);
  Dims shape = {-1};
  shape.insert(shape.end(), spec.dims.begin(), spec.dims.end());
  return DimsToString(shape);
}

std::optional<size_t> BucketTaking(const ModelInterface& model,
                                   const std::vector<int64_t>& extents) {
  for (size_t b = 0; b < model.buckets.size(); ++b) {
    const std::vector<int64_t>& bucket = model.buckets[b];
    if (model.pads_to_bucket ? BucketHolds(bucket, extents) : bucket == extents) return b;
  }
  return std::nullopt;
}

}  // namespace graphserve
