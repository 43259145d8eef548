#include "proto/config_dtype.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::StatusOr<DType> DTypeFromConfig(inference::DataType type) {
  switch (type) {
#define GRAPHSERVE_DTYPE_FROM_CONFIG(e, onnx, onnx_name, kserve, config, ...) \
  case inference::config:                                                     \
    return DType::e;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_FROM_CONFIG)
#undef GRAPHSERVE_DTYPE_FROM_CONFIG
    default:
      break;
  }
  // The enum may hold a number no name exists for (a config from a newer schema).
  const std::string name = inference::DataType_IsValid(type)
                               ? inference::DataType_Name(type)
                               : absl::StrCat("data type #", static_cast<int>(type));
  if (type == inference::TYPE_STRING) {
    return absl::InvalidArgumentError(
        "TYPE_STRING is not supported: GraphServe's models take fixed-size numeric and "
        "TYPE_BOOL tensors");
  }
  return absl::InvalidArgumentError(absl::StrCat(name, " is not supported"));
}

inference::DataType ConfigDataType(DType dtype) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_TO_CONFIG(e, onnx, onnx_name, kserve, config, ...) \
  case DType::e:                                                            \
    return inference::config;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_TO_CONFIG)
#undef GRAPHSERVE_DTYPE_TO_CONFIG
  }
  return inference::TYPE_INVALID;
}

}  // namespace graphserve
