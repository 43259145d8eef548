#pragma once
// What the users of cuDNN's C++ frontend graphs (cudnn_conv, cudnn_attention)
// share: the frontend's errors as absl::Status, and the datatype table's cuDNN
// column.

#include <cudnn_frontend.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/dtype_table.h"
#include "common/status.h"

namespace graphserve {

// OK for a good error_t. GRAPH_NOT_SUPPORTED and a failed execution plan
// (cuDNN has no engine for the graph on this device) are Unimplemented, the
// rest Internal; the message names `call` and cuDNN's text.
absl::Status FrontendStatus(cudnn_frontend::error_t error, absl::string_view call);

// cuDNN's type of a DType: the table's CudnnType column (NOT_SET for types
// cuDNN has none of).
cudnn_frontend::DataType_t CudnnDataTypeOf(DType dtype);

}  // namespace graphserve

#define GRAPHSERVE_FE_RETURN_IF_ERROR(call) \
  RETURN_IF_ERROR(::graphserve::FrontendStatus((call), #call))
