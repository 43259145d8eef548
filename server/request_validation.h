#pragma once
// The checks a ModelInfer request passes before it reaches a GPU, and the
// response skeleton its results are copied into. Everything a client can get
// wrong is caught here, with an InvalidArgument that says what the model
// expects, so that the execution path can take shapes and byte counts as given.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/grpc_service.pb.h"
#include "server/model_interface.h"

namespace graphserve {

// One validated ModelInfer request. Points into the request (raw_input_contents,
// or the typed fp32_contents / int64_contents, read in place) or into
// `converted` (typed contents that had to be turned into raw bytes); the request
// must outlive it. Moving it keeps the pointers valid (converted is a vector of
// vectors).
struct ValidatedRequest {
  int64_t rows = 0;  // the batch: dim 0 of every input
  // One per interface input, interface order: rows x bytes_per_row bytes,
  // row-major, little-endian; BOOL elements are bytes holding 0 or 1.
  std::vector<const std::byte*> inputs;
  // Interface output indices to return, in response order; all outputs in
  // interface order when the request names none.
  std::vector<size_t> outputs;
  std::vector<std::vector<std::byte>> converted;
};

// Checks `request` against `model`. Every error is InvalidArgument naming the
// model and the tensor and saying what was expected: missing, unknown or
// repeated inputs; datatype; shape (rank and non-batch dims); the batch (>= 1,
// <= max_batch_size, the same for every input); raw_input_contents (one entry
// per input, the byte count of the shape, BOOL bytes 0 or 1, not mixed with
// typed contents); typed contents (the field of the datatype, the element
// count of the shape); an input without data; unknown or repeated requested
// outputs. Requests for what GraphServe does not serve (the shared-memory
// extension, classification outputs) are refused rather than answered with
// something the client did not ask for. Other request, input and output
// parameters are ignored.
absl::StatusOr<ValidatedRequest> ValidateInferRequest(const inference::ModelInferRequest& request,
                                                      const ModelInterface& model);

// Clears `response`, then fills model_name (the interface's name),
// model_version, id, and for each returned output k: outputs[k] {name,
// datatype, shape [rows, dims...]} and raw_output_contents[k] sized rows x
// bytes_per_row (outputs always go out as raw_output_contents, what
// tritonclient and perf_analyzer read fastest). Returns, per INTERFACE output
// index, where the rows of that output go (into the response's strings), or
// nullptr for an output the request did not ask for. The pointers stay valid
// while `response` lives and its raw_output_contents are not resized or
// removed (adding fields to the response does not move them).
std::vector<std::byte*> PrepareInferResponse(const inference::ModelInferRequest& request,
                                             const ModelInterface& model,
                                             const std::string& version,
                                             const ValidatedRequest& validated,
                                             inference::ModelInferResponse* response);

}  // namespace graphserve
