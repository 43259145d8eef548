#pragma once
// A served model's tensors as clients see them: names, element types and the
// dims of one row (the batch dimension left out). Two sources describe it, the
// config.pbtxt and the model file; the server loads a model only when they
// agree, and then validates every request against the one interface.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/dtype.h"
#include "proto/model_config.pb.h"
#include "runtime/ir.h"
#include "runtime/bound_graph.h"
#include "common/tensor.h"

namespace graphserve {

// How a tensor's elements travel in requests and responses (Note [Strings
// at the model's edges] in runtime/ir.h).
enum class TensorWire {
  // The protocol's datatype of `dtype`: DTypeSize(dtype) bytes an element.
  kNumbers,
  // BYTES (config.pbtxt's TYPE_STRING), each element the text of one
  // `dtype` number (Note [Number text] in common/number_text.h): parsed as
  // the request is validated, formatted as the response is finished; the
  // runtime sees the numbers.
  kText,
  // BYTES the runtime never sees: an input handed back as sent, or an
  // output that is input `passed_from` handed back; `dtype` means nothing.
  kPassed,
};

struct TensorSpec {
  std::string name;
  // The element type the runtime computes with (for kText, the number the
  // text is of: InterfaceFromConfig leaves it unset for TYPE_STRING, and
  // ResolveStringTensors takes it from the model file).
  DType dtype = DType::kFloat32;
  // Without the batch dimension; -1 for a shape dim, whose extent each
  // request brings (Note [Shape buckets] in server/shape_buckets.h).
  Dims dims;
  // Per dim of `dims`: the index in ModelInterface::shape_dims of the shape
  // dim it is, -1 for a fixed dim; empty when every dim is fixed.
  std::vector<int> shape_dim_of;
  // The model's row dims when config.pbtxt gives Triton's `reshape`: clients
  // send and see `dims`, the model file has these, with as many elements. Rows
  // are contiguous and row-major, so only the shape compared at load differs.
  std::optional<Dims> model_dims;
  // An output's class labels, line i of config.pbtxt's label_filename naming
  // class i (ReadOutputLabels, Note [Classification] in
  // server/classification.h); empty without one.
  std::vector<std::string> labels;
  // How clients send or receive its elements: numbers, or BYTES.
  TensorWire wire = TensorWire::kNumbers;
  // An output of wire kPassed: the index of the input it hands back.
  size_t passed_from = 0;
  // An input config.pbtxt marks `optional: true`: a request may leave it out.
  bool optional = false;
  // What an optional input holds in each row of a request that leaves it
  // out: one row of dtype's elements, the model file's default for it (Note
  // [Inputs with defaults] in runtime/ir.h; TakeInputDefaults). Null for a
  // required input and for one the model file gives no default, which a
  // request must then send.
  std::shared_ptr<const HostTensor> default_row;

  // The protocol's datatype clients send and receive: "BYTES", or
  // KServeDatatype(dtype) for kNumbers.
  [[nodiscard]] const char* datatype() const;
  // Bytes of one batch row as the runtime holds it: the product of dims
  // times the element size (every dim fixed; not for kPassed).
  [[nodiscard]] size_t bytes_per_row() const;
  // `dims` with each shape dim at its extent in `extents`
  // (ModelInterface::shape_dims order).
  [[nodiscard]] Dims DimsAt(const std::vector<int64_t>& extents) const;
};

struct ModelInterface {
  std::string name;
  // >= 1 rows a request may carry; 1 for a model that does not batch.
  int64_t max_batch_size = 0;
  // false for config.pbtxt's max_batch_size 0 (Triton's non-batching model):
  // dims are the full shape, clients send and receive it without a batch
  // dim, and a request is one execution, one row inside the server.
  bool batching = true;
  std::vector<TensorSpec> inputs;  // the model's order
  std::vector<TensorSpec> outputs;
  // The model's shape dims that requests choose (a sequence length, an
  // image's height and width), and the buckets of extents captured for them,
  // smallest first (Note [Shape buckets] in server/shape_buckets.h). Empty
  // when every dim is fixed.
  std::vector<std::string> shape_dims;
  std::vector<std::vector<int64_t>> buckets;
  // Whether a request may be shorter than its bucket (padded into it, its
  // outputs sliced back); false: its extents must be a bucket's.
  bool pads_to_bucket = false;
  // Per shape dim: the largest extent a request that no bucket holds may
  // bring, run eagerly at its own extents (config.pbtxt's
  // capture.eager_extents; Note [Eager fallback] in server/eager_fallback.h).
  // Empty: such requests are refused.
  std::vector<int64_t> eager_extents;

  // This interface with every shape dim at `extents`: what a request of
  // those extents sends and receives.
  [[nodiscard]] ModelInterface At(const std::vector<int64_t>& extents) const;
};

// The index in `model.buckets` (smallest first) of the first bucket that
// takes a request of `extents`: one that holds them, or for a model that does
// not pad into its buckets, one that is them; nullopt when none does.
std::optional<size_t> BucketTaking(const ModelInterface& model,
                                   const std::vector<int64_t>& extents);

// The interface config.pbtxt declares (max_batch_size 0: not batching, one row
// of the full dims). A TYPE_STRING tensor is kText, its dtype unset until
// ResolveStringTensors. InvalidArgument naming the field for: max_batch_size < 0,
// no inputs or no outputs, an unsupported data_type, a dim 0 or
// below -1 (-1: a shape dim, Note [Shape buckets]), a reshape of a tensor
// with a -1 dim, a reshape dim < 1 or a reshape
// whose element count differs from the dims', duplicate names, or a tensor
// whose largest batch (max_batch_size rows) has more bytes than an int64 counts.
absl::StatusOr<ModelInterface> InterfaceFromConfig(const inference::ModelConfig& config);

// The interface of a bound model: with `batching`, bound at any batch size,
// dim 0 of every input and output is the batch; without, every dim is the
// tensor's (the model bound at one row).
ModelInterface InterfaceFromGraph(const std::string& name, int64_t max_batch_size, bool batching,
                                  const BoundGraph& graph);

// Triton matches config.pbtxt's tensors to the model's by name: the config may
// list the inputs in any order and a subset of the outputs. Arranges `model`
// as the config declares it: its inputs in the config's order, its outputs
// the config's, in the config's order (the others are not served). A name
// the model lacks, or a model input the config leaves out, is
// FailedPrecondition naming it.
absl::Status ArrangeModelAsDeclared(const ModelInterface& declared, Model* model);

// Gives each of `declared`'s TYPE_STRING tensors its form from the model
// file (Note [Strings at the model's edges] in runtime/ir.h): a tensor the
// file reads or writes as the text of numbers keeps kText and takes the
// numbers' dtype; one of model.passed_strings becomes kPassed (an output
// with the index of the declared input it hands back). FailedPrecondition
// naming the tensor when config.pbtxt and the file disagree: TYPE_STRING for
// a number of the file or a number type for its STRING, or a passed output
// whose input config.pbtxt does not declare. Tensors the file lacks are left
// for ArrangeModelAsDeclared to name.
absl::Status ResolveStringTensors(const Model& model, ModelInterface* declared);

// Gives each optional input of `declared` the model file's default for it,
// as its default_row (Note [Inputs with defaults] in runtime/ir.h); called
// once the model's interface is checked against `declared`
// (CheckInterfacesMatch), so that a default has its input's dtype. The
// default must be one row: FailedPrecondition naming the input when it has a
// dim each request chooses (-1), or, for a batching model, a dim 0 other
// than 1.
absl::Status TakeInputDefaults(const Model& model, ModelInterface* declared);

// FailedPrecondition naming the first difference (count, order and names,
// dtypes, dims; inputs before outputs), e.g. "config.pbtxt declares input 'x'
// with dims [512] but the model file has [256]". A config tensor's model_dims
// (its reshape), when set, is what the model file's dims must equal.
// max_batch_size is not compared: the model file batches on dim 0 at any size.
absl::Status CheckInterfacesMatch(const ModelInterface& config, const ModelInterface& model);

// The shape clients see: "[-1,512]", batch first; "[3,224,224]" for a model
// that does not batch.
std::string ClientShapeString(const TensorSpec& spec, bool batching);

}  // namespace graphserve
