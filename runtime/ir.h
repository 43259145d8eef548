#pragma once
// GraphServe's model IR: what ONNX import produces, before any batch size is
// chosen. Values are referred to by name, nodes are in topological order, and
// the batch dimension of each graph input is dim 0, written -1, unless the
// model is served without one (Model::batches). Other dims of a graph input
// may be dynamic too (Note [Shape dims]).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tensor.h"

namespace graphserve {

using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, HostTensor>;
using Attributes = std::map<std::string, Attribute>;

// Typed attribute lookups: the default when absent, an InvalidArgument error
// naming the attribute when present with another type.
absl::StatusOr<int64_t> GetIntAttr(const Attributes& attrs, const std::string& name,
                                   int64_t default_value);
absl::StatusOr<float> GetFloatAttr(const Attributes& attrs, const std::string& name,
                                   float default_value);
absl::StatusOr<std::vector<int64_t>> GetIntsAttr(const Attributes& attrs,
                                                 const std::string& name,
                                                 std::vector<int64_t> default_value);
// Lookups for attributes that binding has made canonical (see bound_graph.h):
// present by contract, so they return the value directly (0 / empty if absent).
int64_t IntAttr(const Attributes& attrs, const std::string& name);
float FloatAttr(const Attributes& attrs, const std::string& name);
const std::vector<int64_t>& IntsAttr(const Attributes& attrs, const std::string& name);

struct ValueInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Dims dims;  // -1: dynamic; dim 0 of a graph input so written is the batch
  // Graph inputs: per dim, the name of a dynamic dim (Note [Shape dims]),
  // dim 0 included; "" for fixed dims. Dim 0's name is a shape dim only for
  // a model served without a batch (Model::batches).
  std::vector<std::string> dim_names;
  // A graph input or output the file types STRING: the runtime sees `dtype`
  // numbers, clients send or receive their text (Note [Strings at the
  // model's edges]).
  bool text = false;
  // A graph input with a default: the initializer of its name, which an
  // execution sees when a request leaves the input out (Note [Inputs with
  // defaults]); of this input's dtype and dims, a dynamic dim at any extent.
  // Null for any other value.
  std::shared_ptr<const HostTensor> default_value;
};

// Note [Inputs with defaults]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// From IR version 4 on, an ONNX graph may list one of its initializers among
// its inputs too: an input with a default. ONNX Runtime lets a run feed it
// (its "overridable initializers") and uses the initializer otherwise; Triton
// serves such a model with the input declared `optional: true` (its QA's
// qa/L0_initializer_as_input), so that a request may send it or leave it out.
// Before IR 4 every initializer had to be listed as an input and none is
// overridable (ONNX Runtime's Graph::CanOverrideInitializer): there they are
// weights, as import has always read them. Import (runtime/onnx_import.cc)
// keeps an input with a default among Model::inputs, its initializer as
// ValueInfo::default_value and not among Model::initializers. How it is
// served follows the model's config:
//   - an input config.pbtxt does not declare is folded, as ONNX Runtime's
//     session lists its inputs without them: the first model pass
//     (FoldInputDefaults, runtime/passes/input_defaults.h) makes it the
//     initializer it is, before the passes that rewrite weights, and binding
//     folds what it reaches. graphserve-capture and every caller that names
//     no inputs (ModelPassOptions::declared_inputs) get this;
//   - an input config.pbtxt declares stays an input: the runtime computes on
//     what requests bring, as for any input. Config's `optional: true` (for
//     any input: TensorSpec::optional in server/model_interface.h) lets a
//     request leave it out; the server then fills each of the request's rows
//     with the default as it validates the request (ValidateInferRequest in
//     server/request_validation.h), so that batching, staging and both
//     executors see a request like any other, and one batch may merge rows
//     with the default and rows with a client's value. The default must
//     therefore be one row of fixed dims, checked at load
//     (TakeInputDefaults in server/model_interface.h).
// Triton's own way differs inside, not in what clients get: it hands the
// backend an omitted optional input as absent (ONNX Runtime then uses the
// initializer) and its dynamic batcher does not merge requests whose sets of
// inputs differ. An optional input of a model without a default has nothing
// to fill it with: a request that leaves it out is refused naming it.

// Note [Strings at the model's edges]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ONNX's STRING tensors (the protocol's BYTES, config.pbtxt's TYPE_STRING)
// have elements of any length: they fit no CUDA kernel, no captured graph's
// fixed buffers and no batch row of fixed bytes. What served models do with
// them happens at their edges: Triton's QA models read numbers as text (Cast
// from STRING), answer numbers as text (Cast to STRING), or hand strings back
// unchanged (Identity). So strings exist only there. Import
// (runtime/onnx_import.cc) rewrites the file:
//   - a STRING graph input that every reader Casts to one number type T
//     becomes an input of T marked `text`, and those Casts become Identity
//     (not BOOL, which has no number text: Note [Number text] in
//     common/number_text.h);
//   - a STRING graph output made by Cast(to=STRING) of a number, which nothing
//     else reads, becomes that number (of the dtype binding infers) marked
//     `text`, the Cast an Identity;
//   - a STRING graph output that is a STRING graph input through Identity
//     nodes only (or none) is recorded in Model::passed_strings, and the
//     input, the output and those nodes leave the graph;
//   - any other STRING value is refused, naming the node that makes or reads
//     it.
// The runtime, both executors and their CUDA graphs, thus never sees a
// string: it computes on T as on any input. The server converts at the
// request and response edge, one place for every transport
// (server/request_validation.h): a text input's BYTES are split (Note [BYTES
// serialization] in server/bytes_tensor.h) and parsed into T as the request
// is validated, before it is queued, so that batching, padding and splitting
// see rows of fixed size; a text output's numbers are formatted once all its
// rows are written. A model whose tensors are all passed strings needs no
// runtime: the server answers it as the request arrives, copying bytes
// (server/pass_through.h); one that passes strings beside computing is
// refused. config.pbtxt and the metadata keep TYPE_STRING and BYTES: what
// clients send and receive.

// A STRING graph output that is a STRING graph input passed through Identity
// nodes (Note [Strings at the model's edges]). Dims as the file gives them
// (-1 for a dynamic dim; dim 0 of the input, so written, is the batch);
// output_dims is empty when the file gives no shape.
struct PassedString {
  std::string input;
  Dims input_dims;
  std::string output;
  Dims output_dims;
};

// Note [Shape dims]
// ~~~~~~~~~~~~~~~~~
// A model's shape dims are the dynamic dims of its graph inputs other than
// the batch: a sequence length, an image's height and width. They are named
// as the file names them (ONNX's dim_param: "sequence", "height", "s0"), so
// that input_ids [batch, sequence] and attention_mask [batch, sequence] share
// one extent, as the exporter meant; a dynamic dim the file leaves unnamed is
// named "<input>:<axis>" and shares nothing. Binding makes them concrete from
// BindOptions::dim_values, as it makes the batch concrete from batch_size:
// one bound graph per (batch, extents), the shape bucket of a captured graph.
//
// Note [Models without a batch dim]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ONNX does not say which dim is the batch: GraphServe takes dynamic dim 0
// of the graph inputs for it, as Triton's ONNX Runtime backend does. A model
// that config.pbtxt serves with max_batch_size 0 has none, and Triton then
// lets each request choose every dynamic dim, dim 0 included (its QA's
// identity models take INPUT0 [-1], the tutorials' text detector [-1, -1,
// -1, 3] images of one request). Binding such a model at "a batch of 1"
// would fix dim 0 at 1; instead the loader clears Model::batches (in
// CompleteConfigFromModel, server/triton_config.h, where the config's
// max_batch_size is settled), and the model's dynamic dim 0 becomes a shape
// dim like the others, under the file's name for it ("N", or "<input>:0"):
// import names it, ShapeDimNames lists it, binding takes it from the
// bucket's extents. Everything made for shape dims then applies
// unchanged (Note [Shape buckets] in server/shape_buckets.h): the model is
// bound and captured at a few buckets of extents, a request runs in the
// smallest bucket that holds it, padded into it and its outputs sliced back
// where padding is proven exact for that model at load, and otherwise only
// at a bucket's exact extents. A request is one execution, one row: nothing
// merges across requests, because there is no dim to merge them along. One
// mechanism, not a second one for models without a batch: the graph key is
// {1, bucket}, and the planner, the runners and the captured graphs see a
// model with shape dims whose batch is always 1. What the buckets cannot
// give is Triton's any extent at all: extents past the largest bucket, and
// for a model that sees its padding the extents between buckets, are refused
// naming the buckets (a config's capture.buckets widens them), unless the
// config's capture.eager_extents lets them run eagerly at their own extents
// (Note [Eager fallback] in server/eager_fallback.h), as for any model with
// shape dims. On the GPU a
// graph's tensors are then whole rows of any dims, not rows along a leading
// batch (CheckBatchLeading in capture/graph_set.cc).

struct Node {
  std::string name;     // may be empty in the file; import fills "<op_type>_<index>"
  std::string op_type;  // ONNX op type, default domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  Attributes attributes;
};

struct Model {
  std::string name;
  int64_t opset = 0;              // default-domain opset the model was written for
  // Graph inputs that are not initializers, and those with a default (Note
  // [Inputs with defaults]) until the model passes fold the undeclared ones.
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // Shared so that every BoundGraph made from this model (one per batch size)
  // points at the same tensors, and the weight store uploads each once.
  std::map<std::string, std::shared_ptr<const HostTensor>> initializers;
  std::vector<Node> nodes;  // topological order
  // Outputs that hand an input's strings back unchanged; neither is among
  // `inputs` and `outputs` (Note [Strings at the model's edges]).
  std::vector<PassedString> passed_strings;
  // Whether a graph input's dynamic dim 0 is the batch, which binding takes
  // from BindOptions::batch_size; false for a model served without one
  // (config.pbtxt's max_batch_size 0), whose dynamic dim 0 is a shape dim
  // like any other (Note [Models without a batch dim]).
  bool batches = true;
};

// The model's shape dims (Note [Shape dims]), each once, in the order the
// graph inputs first name them; dim 0 of an input is one only when the model
// does not batch (Note [Models without a batch dim]).
std::vector<std::string> ShapeDimNames(const Model& model);

}  // namespace graphserve
