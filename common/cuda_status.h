#pragma once
// CUDA (common/cuda_error.h), cuBLAS and cuDNN return codes as absl::Status. The message
// names the failing call; callers add the op, graph or batch size with AnnotateStatus.

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "common/cuda_error.h"  // CudaErrorToStatus

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace graphserve {

inline absl::Status CublasErrorToStatus(cublasStatus_t error, absl::string_view call) {
  if (error == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const absl::StatusCode code = error == CUBLAS_STATUS_ALLOC_FAILED
                                    ? absl::StatusCode::kResourceExhausted
                                    : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat(call, " failed: ", cublasGetStatusName(error),
                                         " (", cublasGetStatusString(error), ")"));
}

// Prefixes a non-OK status with what was being done ("op 'fc1' (Gemm), batch 64").
// A cuDNN status naming the call, with cuDNN's own explanation of the last
// error where it has one: allocation failures are ResourceExhausted, bad
// parameters InvalidArgument, unsupported configurations Unimplemented.
inline absl::Status CudnnErrorToStatus(cudnnStatus_t status, absl::string_view call) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  absl::StatusCode code = absl::StatusCode::kInternal;
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    code = absl::StatusCode::kResourceExhausted;
  } else if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_BAD_PARAM) {
    code = absl::StatusCode::kInvalidArgument;
  } else if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED) {
    code = absl::StatusCode::kUnimplemented;
  }
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return absl::Status(code, absl::StrCat(call, " failed: ", cudnnGetErrorString(status),
                                         detail[0] != '\0' ? absl::StrCat(" (", detail, ")") : ""));
}

inline absl::Status AnnotateStatus(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

}  // namespace graphserve

#define CUDA_RETURN_IF_ERROR(call)                                                    \
  do {                                                                                \
    ::absl::Status gs_cuda_status_ = ::graphserve::CudaErrorToStatus((call), #call);  \
    if (!gs_cuda_status_.ok()) return gs_cuda_status_;                                \
  } while (false)

#define CUBLAS_RETURN_IF_ERROR(call)                                                    \
  do {                                                                                  \
    ::absl::Status gs_cublas_status_ = ::graphserve::CublasErrorToStatus((call), #call); \
    if (!gs_cublas_status_.ok()) return gs_cublas_status_;                              \
  } while (false)

#define CUDNN_RETURN_IF_ERROR(call)                                                   \
  do {                                                                                \
    ::absl::Status gs_cudnn_status_ = ::graphserve::CudnnErrorToStatus((call), #call); \
    if (!gs_cudnn_status_.ok()) return gs_cudnn_status_;                              \
  } while (false)
