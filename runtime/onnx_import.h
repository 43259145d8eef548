#pragma once
// ONNX import: a model file of IR version <= 14 and default-domain opset <= 28,
// checked (Note [Model files of today] in onnx_import.cc), converted into
// GraphServe's IR (runtime/ir.h).

#include <string>

#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "runtime/ir.h"
#include "runtime/passes/model_passes.h"
#include "common/tensor.h"

namespace graphserve {

// Reads and converts a model. One InvalidArgument (or Unimplemented) error
// lists every problem found: each unsupported op (with its node names), each
// unsupported dtype, each dynamic dim other than an input's dim 0. A newer IR
// version or opset is Unimplemented naming the limit. A file that does not
// parse, whose graph reads a value nothing defines, or that fails libonnx's
// checker (where libonnx 1.12 knows the file) is InvalidArgument; a missing
// file is NotFound. The model passes run with `passes` (Note [Model
// passes]); their errors name the pass.
absl::StatusOr<Model> ImportOnnxFile(const std::string& path,
                                     const ModelPassOptions& passes = {});

// Same, from the serialized ModelProto bytes; `name` is used in messages, and
// external data is read from `model_dir` (none when empty).
absl::StatusOr<Model> ImportOnnxBytes(const std::string& bytes, const std::string& name,
                                      const std::string& model_dir = "",
                                      const ModelPassOptions& passes = {});

// A TensorProto (initializer, Constant attribute, or a node test's
// input_N.pb / output_N.pb) as a HostTensor; raw_data, the typed fields and
// external data (read inside `model_dir` only, Note [External data]; without
// a directory it is Unimplemented) are read. Sizes are checked against what
// the file holds before the tensor is allocated.
absl::StatusOr<HostTensor> TensorFromOnnx(const onnx::TensorProto& tensor,
                                          const std::string& model_dir = "");

// Reads a serialized TensorProto file (a node test's data set entry).
absl::StatusOr<HostTensor> ReadTensorProtoFile(const std::string& path);

}  // namespace graphserve
