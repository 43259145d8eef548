#pragma once
// The datatype table: one row per element type GraphServe knows, and every
// fact about a type is a column of its row. See Note [Datatype table].
//
// Plain C++ with no library headers, so that nvcc compiles it into the .cu
// files too.

#include <cstddef>
#include <cstdint>

#include "common/half.h"

namespace graphserve {

// Note [Datatype table]
// ~~~~~~~~~~~~~~~~~~~~~
// GRAPHSERVE_FORALL_DTYPES(X) calls X once per type with its columns:
//
//   X(Enum, onnx_id, "ONNX_NAME", "KSERVE", ConfigType, size, HostType,
//     DeviceType, CudaDataType, CudnnType, "name")
//
//   Enum          DType::Enum
//   onnx_id       ONNX TensorProto.DataType, also DType's numeric value, so
//                 a type read from a model file converts directly
//   ONNX_NAME     ONNX's spelling ("FLOAT16"), for messages about model files
//   KSERVE        the KServe v2 / Open Inference Protocol's spelling ("FP16")
//   ConfigType    model_config.proto's enum value (inference::TYPE_FP16);
//                 config.pbtxt spells it the same way
//   size          bytes per element
//   HostType      the C++ type on the host (Half and BFloat16: common/half.h)
//   DeviceType    the type CUDA code computes with (__half, __nv_bfloat16)
//   CudaDataType  cudaDataType_t for cuBLASLt (CUDA_R_8U stands in for bool,
//                 which has none and which no library op takes)
//   CudnnType     cudnn_frontend::DataType_t's member (NOT_SET: none)
//   name          GraphServe's own spelling in messages ("float16")
//
// A column is a token, not a value: ConfigType, DeviceType, CudaDataType and
// CudnnType mean something only where their headers are included, which is
// where a macro that reads them is expanded (server/ for the config types,
// runtime/cuda/ for the rest). Adding a type is one row here, plus a kernel
// wherever an op should take it; code that switches over DType expands this
// table rather than listing cases, so a new row needs no new case.
#define GRAPHSERVE_FORALL_DTYPES(X)                                                            \
  X(kFloat32, 1, "FLOAT", "FP32", TYPE_FP32, 4, float, float, CUDA_R_32F, FLOAT, "float32")   \
  X(kUInt8, 2, "UINT8", "UINT8", TYPE_UINT8, 1, uint8_t, uint8_t, CUDA_R_8U, UINT8, "uint8")  \
  X(kInt8, 3, "INT8", "INT8", TYPE_INT8, 1, int8_t, int8_t, CUDA_R_8I, INT8, "int8")          \
  X(kUInt16, 4, "UINT16", "UINT16", TYPE_UINT16, 2, uint16_t, uint16_t, CUDA_R_16U, NOT_SET,  \
    "uint16")                                                                                  \
  X(kInt16, 5, "INT16", "INT16", TYPE_INT16, 2, int16_t, int16_t, CUDA_R_16I, NOT_SET,        \
    "int16")                                                                                   \
  X(kInt32, 6, "INT32", "INT32", TYPE_INT32, 4, int32_t, int32_t, CUDA_R_32I, INT32, "int32") \
  X(kInt64, 7, "INT64", "INT64", TYPE_INT64, 8, int64_t, int64_t, CUDA_R_64I, INT64, "int64") \
  X(kBool, 9, "BOOL", "BOOL", TYPE_BOOL, 1, bool, bool, CUDA_R_8U, BOOLEAN, "bool")           \
  X(kFloat16, 10, "FLOAT16", "FP16", TYPE_FP16, 2, Half, __half, CUDA_R_16F, HALF, "float16") \
  X(kFloat64, 11, "DOUBLE", "FP64", TYPE_FP64, 8, double, double, CUDA_R_64F, DOUBLE,         \
    "float64")                                                                                 \
  X(kUInt32, 12, "UINT32", "UINT32", TYPE_UINT32, 4, uint32_t, uint32_t, CUDA_R_32U, NOT_SET, \
    "uint32")                                                                                  \
  X(kUInt64, 13, "UINT64", "UINT64", TYPE_UINT64, 8, uint64_t, uint64_t, CUDA_R_64U, NOT_SET, \
    "uint64")                                                                                  \
  X(kBFloat16, 16, "BFLOAT16", "BF16", TYPE_BF16, 2, BFloat16, __nv_bfloat16, CUDA_R_16BF,    \
    BFLOAT16, "bfloat16")

enum class DType : int32_t {
#define GRAPHSERVE_DTYPE_ENUM(e, onnx, ...) e = onnx,
  GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_ENUM)
#undef GRAPHSERVE_DTYPE_ENUM
};

// Every row, in table order.
inline constexpr DType kAllDTypes[] = {
#define GRAPHSERVE_DTYPE_LIST(e, ...) DType::e,
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_LIST)
#undef GRAPHSERVE_DTYPE_LIST
};

// Bytes per element (0 for a value outside the table).
constexpr size_t DTypeSize(DType dtype) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_SIZE(e, onnx, onnx_name, kserve, config, size, ...) \
  case DType::e:                                                             \
    return size;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_SIZE)
#undef GRAPHSERVE_DTYPE_SIZE
  }
  return 0;
}

// GraphServe's name, "float32" ... "bfloat16" ("unknown" outside the table).
// A C string: Debian's absl::StrCat takes no std::string_view.
constexpr const char* DTypeName(DType dtype) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_NAME(e, onnx, onnx_name, kserve, config, size, host, device, cuda, \
                              cudnn, name)                                                  \
  case DType::e:                                                                            \
    return name;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_NAME)
#undef GRAPHSERVE_DTYPE_NAME
  }
  return "unknown";
}

// The KServe v2 name, "FP32" ... "BF16" ("unknown" outside the table).
constexpr const char* KServeDatatype(DType dtype) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_KSERVE(e, onnx, onnx_name, kserve, ...) \
  case DType::e:                                                 \
    return kserve;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_KSERVE)
#undef GRAPHSERVE_DTYPE_KSERVE
  }
  return "unknown";
}

// The host type of a DType: HostType<DType::kFloat16> is Half.
template <DType dtype>
struct HostTypeOf;
#define GRAPHSERVE_DTYPE_HOST_TYPE(e, onnx, onnx_name, kserve, config, size, host, ...) \
  template <>                                                                           \
  struct HostTypeOf<DType::e> {                                                         \
    using type = host;                                                                  \
  };
GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_HOST_TYPE)
#undef GRAPHSERVE_DTYPE_HOST_TYPE

template <DType dtype>
using HostType = typename HostTypeOf<dtype>::type;

// Names a row at compile time: what VisitDType passes its function.
template <DType kDType>
struct DTypeTag {
  static constexpr DType value = kDType;
  using Host = HostType<kDType>;
};

// Calls fn(DTypeTag<dtype>{}) for a runtime `dtype`: code generic over the
// host type (conversion, copies, checks) written once for every row.
// `dtype` must be a row of the table, as every DType the conversions from
// ONNX, KServe and config names produce is.
template <typename Fn>
decltype(auto) VisitDType(DType dtype, Fn&& fn) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_VISIT(e, ...) \
  case DType::e:                       \
    return fn(DTypeTag<DType::e>{});
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_VISIT)
#undef GRAPHSERVE_DTYPE_VISIT
  }
  __builtin_trap();  // not a row: a DType made by casting a bad number
}

// Whether the type is one of the four floating-point types.
constexpr bool IsFloatingDType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16 ||
         dtype == DType::kFloat64;
}

}  // namespace graphserve
