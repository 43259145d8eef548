#include "runtime/cuda/cudnn_frontend_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace graphserve {

namespace fe = cudnn_frontend;

absl::Status FrontendStatus(fe::error_t error, absl::string_view call) {
  if (error.is_good()) return absl::OkStatus();
  const std::string message = absl::StrCat(call, ": ", error.get_message());
  if (error.get_code() == fe::error_code_t::GRAPH_NOT_SUPPORTED ||
      error.get_code() == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED) {
    return absl::UnimplementedError(message);
  }
  return absl::InternalError(message);
}

fe::DataType_t CudnnDataTypeOf(DType dtype) {
  switch (dtype) {
#define GRAPHSERVE_DTYPE_CUDNN(e, onnx, onnx_name, kserve, config, size, host, device, cuda, \
                               cudnn, ...)                                                   \
  case DType::e:                                                                             \
    return fe::DataType_t::cudnn;
    GRAPHSERVE_FORALL_DTYPES(GRAPHSERVE_DTYPE_CUDNN)
#undef GRAPHSERVE_DTYPE_CUDNN
  }
  return fe::DataType_t::NOT_SET;
}

}  // namespace graphserve
