#include "common/dtype.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphserve {

std::string OnnxTypeName(int32_t onnx_type) {
  switch (onnx_type) {
#define GRAPHSERVE_DTYPE_ONNX_NAME(e, onnx, onnx_name, ...) \
  case onnx:                                                \
    return onnx_name;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_ONNX_NAME)
#undef GRAPHSERVE_DTYPE_ONNX_NAME
    // The types ONNX defines that have no row in the table.
    case 0:
      return "UNDEFINED";
    case 8:
      return "STRING";
    case 14:
      return "COMPLEX64";
    case 15:
      return "COMPLEX128";
    case 17:
      return "FLOAT8E4M3FN";
    case 18:
      return "FLOAT8E4M3FNUZ";
    case 19:
      return "FLOAT8E5M2";
    case 20:
      return "FLOAT8E5M2FNUZ";
    case 21:
      return "UINT4";
    case 22:
      return "INT4";
    case 23:
      return "FLOAT4E2M1";
    default:
      return absl::StrCat("type#", onnx_type);
  }
}

absl::StatusOr<DType> DTypeFromOnnx(int32_t onnx_type) {
  switch (onnx_type) {
#define GRAPHSERVE_DTYPE_FROM_ONNX(e, onnx, ...) \
  case onnx:                                     \
    return DType::e;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_FROM_ONNX)
#undef GRAPHSERVE_DTYPE_FROM_ONNX
  }
  return absl::UnimplementedError(absl::StrCat(
      "element type ", OnnxTypeName(onnx_type),
      " is not supported (the numeric types, bool, float16 and bfloat16 are)"));
}

absl::StatusOr<DType> DTypeFromKServe(absl::string_view datatype) {
  for (const DType dtype : kAllDTypes) {
    if (datatype == KServeDatatype(dtype)) return dtype;
  }
  if (datatype == "BYTES") {
    return absl::InvalidArgumentError(
        "has variable-length elements (strings), so no fixed-size type of the table: it is read "
        "as text at a model's edges (Note [Strings at the model's edges] in runtime/ir.h)");
  }
  std::vector<const char*> names;
  for (const DType dtype : kAllDTypes) names.push_back(KServeDatatype(dtype));
  return absl::InvalidArgumentError(
      absl::StrCat("is not a datatype of the protocol (", absl::StrJoin(names, ", "), ")"));
}

std::string DTypeSetToString(DTypeSet set) {
  std::vector<std::string> names;
  for (const DType dtype : kAllDTypes) {
    if (Contains(set, dtype)) names.push_back(DTypeName(dtype));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

}  // namespace graphserve
