#pragma once
// Element types GraphServe computes with. The numbering is ONNX's
// TensorProto.DataType, so a type read from a model file converts directly.

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace graphserve {

enum class DType : int32_t {
  kFloat32 = 1,  // onnx FLOAT
  kBool = 9,     // onnx BOOL, one byte per element
  kInt64 = 7,    // onnx INT64
};

// Bytes per element.
size_t DTypeSize(DType dtype);

// "float32", "int64", "bool" (a C string: Debian's absl::StrCat takes no std::string_view).
const char* DTypeName(DType dtype);

// Converts an ONNX TensorProto.DataType number, or says which type is not
// supported (naming it as ONNX does, e.g. "FLOAT16").
absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type);

}  // namespace graphserve
