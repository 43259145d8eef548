#pragma once
// Element types GraphServe computes with: the datatype table (Note [Datatype
// table] in common/dtype_table.h) and its conversions from the names models
// and clients use.

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/dtype_table.h"

namespace graphserve {

// Converts an ONNX TensorProto.DataType number, or says which type is not
// supported, naming it as ONNX does (e.g. "STRING", "COMPLEX64").
absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type);

// Converts a KServe v2 datatype name ("FP32", "BF16", ...). InvalidArgument
// otherwise, whose message is a clause to follow the name (which it does not
// quote: the caller quotes a client's text its own way): "is not a datatype
// of the protocol (BOOL, ...)", or for BYTES that its elements have no fixed
// size (BYTES tensors are strings, which only a model's edges read: Note
// [Strings at the model's edges] in runtime/ir.h).
absl::StatusOr<DType> DTypeFromKServe(absl::string_view datatype);

// ONNX's name of a TensorProto.DataType number ("FLOAT16"), or "type#N".
std::string OnnxTypeName(int32_t onnx_type);

// A set of rows of the datatype table, one bit per row at its ONNX id (each
// below 32): what a kernel computes on.
using DTypeSet = uint32_t;

constexpr DTypeSet DTypes(std::initializer_list<DType> dtypes) {
  DTypeSet set = 0;
  for (DType dtype : dtypes) set |= DTypeSet{1} << static_cast<int>(dtype);
  return set;
}

constexpr bool Contains(DTypeSet set, DType dtype) {
  return (set >> static_cast<int>(dtype)) & 1;
}

inline constexpr DTypeSet kAnyDType = [] {
  DTypeSet set = 0;
  for (DType dtype : kAllDTypes) set |= DTypes({dtype});
  return set;
}();
inline constexpr DTypeSet kFloatDTypes =
    DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64});

// "float32, int64" in table order ("none" for the empty set).
std::string DTypeSetToString(DTypeSet set);

}  // namespace graphserve
