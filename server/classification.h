#pragma once
// Triton's classification extension: a requested output with the parameter
// "classification": k is answered with its top k classes as strings instead
// of its values.
//
// Note [Classification]
// ~~~~~~~~~~~~~~~~~~~~~
// As Triton's server answers it (src/classification.cc, and the response
// writers of src/grpc/infer_handler.cc and src/http_server.cc):
// - the output comes back as a BYTES tensor of shape [rows, n] for a
//   batching model, [n] for one with max_batch_size 0, where n = min(k, the
//   elements of one row): k larger than the classes is no error;
// - each row's elements (all of the row's dims, flattened) are ordered by
//   value, largest first, and each of the first n becomes "<value>:<index>",
//   or "<value>:<index>:<label>" when the output's label_filename has a
//   non-empty line `index`; the value is printed as std::to_string prints it
//   (floats with six decimals, "0.250000"; integers in decimal);
// - Triton's texts refuse a parameter that is not int64_param, a count < 1,
//   and an output that is also put in a shared-memory region (the classes
//   are computed from the values; they have no region to go to). Triton
//   refuses an output whose type it cannot order (BOOL, FP16, BF16) after
//   the model ran; GraphServe refuses BOOL with Triton's text before, and
//   orders FP16 and BF16 by their float values, which Triton could not.
// Equal values, which Triton leaves in std::sort's order, come lower index
// first; NaN comes after every number. The classes are computed on the
// responder thread once the request's rows are all written (server/
// inference_protocol.cc), never on a stream worker; the labels are read once,
// when the model loads.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "proto/grpc_service.pb.h"
#include "proto/model_config.pb.h"
#include "server/model_interface.h"

namespace graphserve {

// The k `output` asks for, or nullopt when it carries no "classification"
// parameter. InvalidArgument with Triton's leading texts (Note
// [Classification]) for a value that is not an int64_param or is below 1, an
// output also in a shared-memory region, or one of `spec`'s dtype BOOL or a
// BYTES output.
absl::StatusOr<std::optional<int64_t>> RequestedClassCount(
    const inference::ModelInferRequest::InferRequestedOutputTensor& output, const TensorSpec& spec,
    const ModelInterface& model);

// The first min(k, count) classes of one row of `count` elements of `dtype`
// (not BOOL), in the extension's format; `labels[i]` names class i where it
// exists and is not empty.
std::vector<std::string> TopClasses(const std::byte* row, size_t count, DType dtype, int64_t k,
                                    const std::vector<std::string>& labels);

// The lines of a label file, as Triton reads them (std::getline: a last line
// without a newline counts, a '\r' stays). NotFound or PermissionDenied
// naming the path and why when it cannot be read.
absl::StatusOr<std::vector<std::string>> ReadLabelFile(const std::string& path);

// Fills the labels of each output of `interface` whose config output (the
// same name) has a label_filename: a file in `model_directory`. Triton's text
// refuses a path outside the model directory; an unreadable file fails too.
absl::Status ReadOutputLabels(const inference::ModelConfig& config,
                              const std::string& model_directory, ModelInterface* interface);

// Rewrites each output of `response` that `request` asked to classify (the
// request validated against `model`, its rows all written): its datatype
// BYTES, its shape [rows, n] (or [n]) and its raw_output_contents the
// classes, each a 4-byte little-endian length and the text (the protocol's
// BYTES serialization). Internal when the response does not hold what the
// request asked for (a bug, never a client's error).
absl::Status ClassifyOutputs(const inference::ModelInferRequest& request, const ModelInterface& model,
                     inference::ModelInferResponse* response);

}  // namespace graphserve
