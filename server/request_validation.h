#pragma once
// The checks a ModelInfer request passes before it reaches a GPU, and the
// response skeleton its results are copied into. Everything a client can get
// wrong is caught here, with an InvalidArgument that says what the model
// expects, so that the execution path can take shapes and byte counts as given.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/grpc_service.pb.h"
#include "server/model_interface.h"
#include "server/row_view.h"
#include "server/shared_memory.h"

namespace graphserve {

// One validated ModelInfer request. Points into the request (raw_input_contents,
// or the typed fp32_contents / int64_contents, read in place), into
// `converted` (typed contents that had to be turned into raw bytes) or into
// shared-memory regions it holds; the request must outlive it. Moving it keeps
// the pointers valid (converted is a vector of vectors).
struct ValidatedRequest {
  // The rows (view.rows: dim 0 of every input) and where they lie. Per
  // interface input: rows x pitch bytes, row-major, little-endian, pitch the
  // bytes of one row at the request's extents; BOOL elements are bytes
  // holding 0 or 1; an optional input the request leaves out is its
  // default's rows, in `converted`; a kPassed input (below) has no data.
  // Per interface output: the memory its rows go to and their pitch, data
  // null (PrepareInferResponse says where). view.shape is null: the server
  // knows the row shape of `extents`.
  RowView view;
  // The extents of the model's shape dims the request brings
  // (ModelInterface::shape_dims order; Note [Shape buckets] in
  // server/shape_buckets.h); empty for a model without them.
  std::vector<int64_t> extents;
  // Interface output indices to return, in response order; all outputs in
  // interface order when the request names none.
  std::vector<size_t> outputs;
  // Parallel to `outputs`: where the output's rows go when the request put
  // it in a shared-memory region, or an empty slice (no region) for an output
  // the response carries.
  std::vector<SharedMemorySlice> output_slices;
  std::vector<std::vector<std::byte>> converted;
  // Per interface input of wire kPassed (Note [Strings at the model's
  // edges] in runtime/ir.h), whose view.inputs entry has no data since the
  // runtime never reads it: its shape as sent and its elements, views into
  // the request, a region or `converted`. Empty for the other inputs, and
  // wholly empty for a model without passed strings.
  struct PassedInput {
    Dims shape;
    std::vector<absl::string_view> elements;
  };
  std::vector<PassedInput> passed;
  // Every region an input or output of the request uses, held until the
  // request ends (Note [Shared memory lifetime]).
  std::vector<std::shared_ptr<const SharedMemoryRegion>> regions;
};

// Checks `request` against `model`. Every error is InvalidArgument naming the
// model and the tensor and saying what was expected: more inputs than the
// model has or a required one missing (Triton's text, which says "between R
// and N" inputs where some are optional), unknown or repeated inputs; an
// optional input left out without a default_row; datatype; shape (rank and non-batch dims; a shape
// dim within the model's buckets, RequestExtents); the batch (>= 1,
// <= max_batch_size, the same for every input); raw_input_contents (one entry
// per input, the byte count of the shape, BOOL bytes 0 or 1, not mixed with
// typed contents); typed contents (the field of the datatype, the element
// count of the shape); an input without data; unknown or repeated requested
// outputs; an output's "classification" parameter (RequestedClassCount in
// server/classification.h). Other request, input and output parameters are
// ignored.
//
// An optional input the request leaves out (TensorSpec::optional) gets its
// default_row in each of the request's rows, as though the client had sent
// it (Note [Inputs with defaults] in runtime/ir.h); the batch is the inputs'
// sent, one row when none is.
//
// BYTES inputs (Note [Strings at the model's edges] in runtime/ir.h): raw
// contents, a shared-memory range (its byte_size the serialized size) or
// contents.bytes_contents must hold exactly the shape's elements (Note
// [BYTES serialization] in server/bytes_tensor.h); a kText input's elements
// are parsed here into its numbers (Note [Number text]), each that does not
// parse refused naming its index and quoting a prefix, so the request goes
// on as numbers; a kPassed input's dims of -1 take any extent, and its
// elements are kept in ValidatedRequest::passed.
//
// Shared memory: an input or output whose parameters name a
// shared_memory_region (with shared_memory_byte_size and an optional
// shared_memory_offset) is read from, or written to, that range of the region
// in `shared_memory`: the range must lie within the region, an input's
// byte_size must be its shape's bytes and an output's at least its rows'
// bytes. raw_input_contents then holds one entry per input outside shared
// memory, in the order of inputs (as Triton reads it). Without
// `shared_memory` a request that names a region is refused. A tensor in a
// pinned system region is marked RowMemory::kPinned. An input in a CUDA
// region is copied to the host, unless the region lies on GPU
// `device_memory_gpu` (for a runner that copies that GPU's memory itself):
// then it stays on the device, marked RowMemory::kDevice; BOOL inputs (their
// bytes are checked) are copied all the same. An output in a CUDA region on
// that GPU is marked so too: the runner writes it in place.
absl::StatusOr<ValidatedRequest> ValidateInferRequest(
    const inference::ModelInferRequest& request, const ModelInterface& model,
    const SharedMemoryRegistry* shared_memory = nullptr,
    std::optional<int> device_memory_gpu = std::nullopt);

// Clears `response`, then fills model_name (the interface's name),
// model_version, id, and for each returned output k: outputs[k] {name,
// datatype, shape [rows, dims...]} and raw_output_contents[k] sized rows x
// bytes_per_row (outputs always go out as raw_output_contents, what
// tritonclient and perf_analyzer read fastest); an output asked to classify
// gets its values so too, which ClassifyOutputs (server/classification.h)
// then replaces with its classes. An output in shared memory
// gets an empty raw_output_contents[k] instead (so that entry k stays output
// k's, as tritonclient indexes them) and the parameters
// shared_memory_region and shared_memory_byte_size (the bytes written).
// BYTES outputs: a kText output's numbers are written into
// raw_output_contents[k] even when it is in shared memory (FinishOutputs
// formats and places them); a kPassed output is complete here, its input's
// elements serialized (its shape the input's as sent where its dims are not
// all fixed), and gets no destination.
// Returns, per INTERFACE output index, where the rows of that output go (into
// the response's strings, or the region), or nullptr for an output the
// request did not ask for. The pointers stay valid while `response` and
// `validated` live and the response's raw_output_contents are not resized or
// removed (adding fields to the response does not move them).
std::vector<std::byte*> PrepareInferResponse(const inference::ModelInferRequest& request,
                                             const ModelInterface& model,
                                             const std::string& version,
                                             const ValidatedRequest& validated,
                                             inference::ModelInferResponse* response);

// Finishes the outputs PrepareInferResponse laid out, once their rows are
// all written: each kText output's numbers become their text, serialized
// (Note [Strings at the model's edges] in runtime/ir.h); then each output
// whose bytes are in the response's string but belong in a shared-memory
// region (any BYTES output in a region; a numbers output in a CUDA region
// that the runner did not write in place, Note [CUDA shared memory]) is
// copied there and its string emptied. A BYTES output gets its
// shared_memory_region and shared_memory_byte_size parameters here, and a
// range too small for its bytes is InvalidArgument with Triton's text.
absl::Status FinishOutputs(const ModelInterface& model, const ValidatedRequest& validated,
                           inference::ModelInferResponse* response);

}  // namespace graphserve
