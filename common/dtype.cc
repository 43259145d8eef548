#include "common/dtype.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graphserve {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
  }
  return "unknown";
}

namespace {

// ONNX TensorProto.DataType names, for error messages about unsupported types.
std::string OnnxTypeName(int32_t onnx_type) {
  static constexpr const char* kNames[] = {
      "UNDEFINED", "FLOAT",  "UINT8",   "INT8",      "UINT16",     "INT16",
      "INT32",     "INT64",  "STRING",  "BOOL",      "FLOAT16",    "DOUBLE",
      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (onnx_type >= 0 && onnx_type < static_cast<int32_t>(std::size(kNames))) {
    return kNames[onnx_type];
  }
  return absl::StrCat("type#", onnx_type);
}

}  // namespace

absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return DType::kFloat32;
    case 7:
      return DType::kInt64;
    case 9:
      return DType::kBool;
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", OnnxTypeName(onnx_type),
                       " is not supported (float32, int64 and bool are)"));
  }
}

}  // namespace graphserve
