#pragma once
// model_config.proto's DataType (config.pbtxt's TYPE_FP32 ...) against the
// datatype table (Note [Datatype table] in common/dtype_table.h): the
// server's config reader and the capture CLI's config writer share it.

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "proto/model_config.pb.h"

namespace graphserve {

// InvalidArgument naming the type for one the table lacks (TYPE_STRING, or a
// number no name exists for).
absl::StatusOr<DType> DTypeFromConfig(inference::DataType type);

// The config's name of an element type (TYPE_FP32 ... TYPE_BF16).
inference::DataType ConfigDataType(DType dtype);

}  // namespace graphserve
