#include "runtime/bind_context.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_join.h"
#include "common/half.h"
#include "common/status.h"

namespace graphserve {

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) product *= dims[i];
  return product;
}

std::optional<Dims> BroadcastPair(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

namespace {
std::string DTypeString(DType dtype) { return std::string(DTypeName(dtype)); }
}  // namespace

absl::Status BindContext::Annotate(const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat(Prefix(), status.message()));
}

absl::StatusOr<int64_t> BindContext::IntAttrOr(const std::string& name,
                                               int64_t default_value) const {
  absl::StatusOr<int64_t> value = GetIntAttr(attrs(), name, default_value);
  if (!value.ok()) return Annotate(value.status());
  return *value;
}

absl::StatusOr<float> BindContext::FloatAttrOr(const std::string& name, float default_value) const {
  absl::StatusOr<float> value = GetFloatAttr(attrs(), name, default_value);
  if (!value.ok()) return Annotate(value.status());
  return *value;
}

absl::StatusOr<std::vector<int64_t>> BindContext::IntsAttrOr(
    const std::string& name, std::vector<int64_t> default_value) const {
  absl::StatusOr<std::vector<int64_t>> value = GetIntsAttr(attrs(), name, std::move(default_value));
  if (!value.ok()) return Annotate(value.status());
  return *std::move(value);
}

absl::StatusOr<std::string> BindContext::StringAttrOr(const std::string& name,
                                                      std::string default_value) const {
  auto it = attrs().find(name);
  if (it == attrs().end()) return default_value;
  if (const std::string* s = std::get_if<std::string>(&it->second)) return *s;
  return Error("attribute '", name, "' should be a string");
}

absl::Status BindContext::CheckDType(size_t input, std::vector<DType> allowed) const {
  const DType dtype = in_dtype(input);
  if (std::find(allowed.begin(), allowed.end(), dtype) != allowed.end()) {
    return absl::OkStatus();
  }
  std::vector<std::string> names;
  for (DType a : allowed) names.push_back(DTypeString(a));
  // The model is valid ONNX (the op takes the type); this runtime lacks it.
  return Unsupported("input ", input, " '", in(input).name, "' is ", DTypeString(dtype),
                     "; this op runs on ", absl::StrJoin(names, " or "));
}

absl::Status BindContext::CheckSameDType(size_t a, size_t b) const {
  const DType da = in_dtype(a);
  const DType db = in_dtype(b);
  if (da == db) return absl::OkStatus();
  return Error("inputs ", a, " and ", b, " should have one dtype, got ", DTypeString(da), " and ",
               DTypeString(db));
}

absl::StatusOr<Dims> BindContext::Broadcast(const Dims& a, const Dims& b) const {
  std::optional<Dims> out = BroadcastPair(a, b);
  if (!out) {
    return Error("cannot broadcast dims ", DimsToString(a), " with ", DimsToString(b),
                 " (each pair of trailing-aligned dims must be equal or 1)");
  }
  return *out;
}

absl::StatusOr<int64_t> BindContext::NormalizeAxis(int64_t axis, int64_t rank,
                                                   const char* what) const {
  if (axis < -rank || axis >= rank) {
    return Error(what, " ", axis, " is out of range for rank ", rank, " (expected [", -rank, ", ",
                 rank - 1, "])");
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<int64_t>> BindContext::NormalizeAxes(std::vector<int64_t> axes,
                                                                int64_t rank) const {
  for (int64_t& axis : axes) {
    ASSIGN_OR_RETURN(axis, NormalizeAxis(axis, rank, "axis"));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    return Error("axes [", absl::StrJoin(axes, ","), "] repeat an axis");
  }
  return axes;
}

absl::StatusOr<std::vector<int64_t>> BindContext::ConstantInts(size_t input) const {
  const BoundValue& v = in(input);
  if (!v.is_constant()) return Error("input ", input, " '", v.name, "' must be a constant");
  if (v.dtype != DType::kInt64 && v.dtype != DType::kInt32) {
    return Error("input ", input, " '", v.name, "' should be int64 or int32, got ",
                 DTypeString(v.dtype));
  }
  if (v.dims.size() > 1) {
    return Error("input ", input, " '", v.name, "' should be 1-D, got dims ", DimsToString(v.dims));
  }
  if (v.dtype == DType::kInt32) {  // CumSum's axis, for one, may be int32
    const int32_t* data = v.constant->data<int32_t>();
    return std::vector<int64_t>(data, data + v.constant->num_elements());
  }
  const int64_t* data = v.constant->data<int64_t>();
  return std::vector<int64_t>(data, data + v.constant->num_elements());
}

absl::StatusOr<std::optional<float>> BindContext::ConstantScalar(size_t input) const {
  if (!has_input(input)) return std::optional<float>();
  const BoundValue& v = in(input);
  if (!v.is_constant()) {
    return Unsupported("input ", input, " '", v.name,
                       "' must be known at plan time (a constant or initializer)");
  }
  const bool float_type = v.dtype == DType::kFloat32 || v.dtype == DType::kFloat16 ||
                          v.dtype == DType::kBFloat16;
  if (!float_type || v.constant->num_elements() != 1) {
    return Error("input ", input, " '", v.name,
                 "' should be one float32, float16 or bfloat16, got ", DTypeString(v.dtype), " ",
                 DimsToString(v.dims));
  }
  float value = 0.0f;  // the 16-bit floats widen exactly
  VisitDType(v.dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    if constexpr (IsFloatingDType(decltype(tag)::value)) {
      value = static_cast<float>(Widen(v.constant->data<T>()[0]));
    }
  });
  return std::optional<float>(value);
}

absl::StatusOr<std::optional<std::vector<int64_t>>> BindContext::AxesOperand(
    int64_t input_since_opset) const {
  if (opset_ < input_since_opset) {
    if (!has_attr("axes")) return std::optional<std::vector<int64_t>>();
    ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntsAttrOr("axes", {}));
    return std::optional<std::vector<int64_t>>(std::move(axes));
  }
  if (!has_input(1)) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(std::vector<int64_t> axes, ConstantInts(1));
  return std::optional<std::vector<int64_t>>(std::move(axes));
}

absl::Status BindContext::EmitModelNode(std::string op_type, std::vector<ValueId> inputs,
                                        Attributes attrs, std::vector<OutputSpec> outputs) {
  if (outputs_.size() > outputs.size()) {
    return Error("expected at most ", outputs.size(), " output(s), got ", outputs_.size());
  }
  outputs.resize(outputs_.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].name = outputs_[i].empty() ? absl::StrCat(name_, "/unused_output_", i) : outputs_[i];
  }
  BoundNode node;
  node.name = name_;
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.attributes = std::move(attrs);
  ASSIGN_OR_RETURN(std::vector<ValueId> ids, engine_->Emit(std::move(node), std::move(outputs)));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!outputs_[i].empty()) RETURN_IF_ERROR(engine_->Define(outputs_[i], ids[i]));
  }
  return absl::OkStatus();
}

absl::Status BindContext::EmitSimple(std::vector<ValueId> inputs, Attributes attrs, DType dtype,
                                     Dims dims) {
  return EmitModelNode(op(), std::move(inputs), std::move(attrs),
                       {OutputSpec{"", dtype, std::move(dims)}});
}

absl::Status BindContext::EmitIdentity(size_t input) {
  return EmitModelNode("Identity", {inputs_[input]}, {},
                       {OutputSpec{"", in_dtype(input), in_dims(input)}});
}

absl::Status BindContext::ForwardInput(size_t input) {
  if (outputs_.size() != 1 || outputs_[0].empty() || engine_->IsGraphOutput(outputs_[0])) {
    return EmitIdentity(input);
  }
  return engine_->Define(outputs_[0], inputs_[input]);
}

absl::StatusOr<ValueId> BindContext::EmitHelper(const std::string& suffix, std::string op_type,
                                                std::vector<ValueId> inputs, Attributes attrs,
                                                DType dtype, Dims dims) {
  BoundNode node;
  node.name = absl::StrCat(name_, "/", suffix);
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.attributes = std::move(attrs);
  ASSIGN_OR_RETURN(
      std::vector<ValueId> ids,
      engine_->Emit(std::move(node), {OutputSpec{absl::StrCat(name_, "/", suffix, "_output"), dtype,
                                                 std::move(dims)}}));
  return ids[0];
}

absl::Status BindContext::EmitForOutput(size_t output, std::string op_type,
                                        std::vector<ValueId> inputs, Attributes attrs,
                                        DType dtype, Dims dims) {
  if (output >= outputs_.size() || outputs_[output].empty()) return absl::OkStatus();
  BoundNode node;
  node.name = absl::StrCat(name_, "/", output);
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.attributes = std::move(attrs);
  ASSIGN_OR_RETURN(std::vector<ValueId> ids,
                   engine_->Emit(std::move(node),
                                 {OutputSpec{outputs_[output], dtype, std::move(dims)}}));
  return engine_->Define(outputs_[output], ids[0]);
}

absl::Status BindContext::ReserveConstantBytes(uint64_t bytes) {
  absl::Status reserved = engine_->ReserveFolded(bytes);
  return reserved.ok() ? reserved : Annotate(reserved);
}

absl::StatusOr<HostTensor> BindContext::NewConstant(DType dtype, Dims dims) {
  const std::optional<uint64_t> bytes = TensorBytes(dims, dtype);
  if (!bytes.has_value()) return Error("a constant of dims ", DimsToString(dims), " is too large");
  RETURN_IF_ERROR(ReserveConstantBytes(*bytes));
  return HostTensor(dtype, std::move(dims));
}

absl::Status BindContext::DefineConstantOutput(HostTensor tensor) {
  if (outputs_.size() != 1 || outputs_[0].empty()) {
    return Error("expected exactly one named output, got ", outputs_.size());
  }
  const DType dtype = tensor.dtype();
  Dims dims = tensor.dims();
  return engine_->Define(outputs_[0],
                         engine_->AddValue(outputs_[0], dtype, std::move(dims),
                                           std::make_shared<const HostTensor>(std::move(tensor))));
}

ValueId BindContext::AddConstant(std::string name, HostTensor tensor) {
  const DType dtype = tensor.dtype();
  Dims dims = tensor.dims();
  return engine_->AddValue(std::move(name), dtype, std::move(dims),
                           std::make_shared<const HostTensor>(std::move(tensor)));
}

}  // namespace graphserve
