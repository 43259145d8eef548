#pragma once
// Binding: a Model made concrete for one batch size. Shapes are inferred op by
// op, nodes whose inputs are all known are run on the host and become
// constants (this folds PyTorch's Shape/Gather/Unsqueeze/Concat chains that
// feed Reshape and Expand), and every remaining node is put in the canonical
// form of Note [Canonical bound nodes] (bound_graph.h).

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/graph_key.h"
#include "runtime/bound_graph.h"
#include "runtime/ir.h"

namespace graphserve {

struct BindOptions {
  // Replaces dim 0 of every graph input whose dim 0 is -1 (the batch dim),
  // when the model batches (Model::batches); 1 for one that does not.
  int64_t batch_size = 1;
  // The extent of each shape dim (Note [Shape dims] in runtime/ir.h), by
  // name: the shape bucket being bound. Every shape dim of the model needs
  // one; a name the model lacks is an error.
  std::map<std::string, int64_t> dim_values;
  // Graph inputs whose values are fixed at plan time. They become constants
  // and are not inputs of the bound graph. ONNX's node tests feed shapes this
  // way (e.g. Reshape's `shape` as a graph input); a served model does not.
  std::map<std::string, HostTensor> known_inputs;
};

// Note [Bound node outputs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A bound node's outputs keep the model's positions, so a kernel knows output
// k by its index: every output the model names is kept, and trailing outputs
// are dropped when the model leaves them unnamed ("") or when nothing reads
// them and they are not graph outputs. An unnamed output before a kept one
// becomes a value named "<node>/unused_output_<k>". Nodes none of whose
// outputs reach a graph output are removed, and values the bound graph no
// longer refers to (folded intermediates, unused initializers) are dropped,
// so ValueIds are dense over what executors see.
// Nodes binding adds are named after the model node: "<node>/cast_exponent"
// (Pow's exponent Cast) and "<node>/chain_<k>" (links of a variadic Max/Min).
//
// Errors: InvalidArgument naming the node, op and the offending dims or
// dtypes (e.g. incompatible broadcast, a Reshape whose element count differs),
// or a shape operand that is not known at plan time.
absl::StatusOr<BoundGraph> BindModel(const Model& model, const BindOptions& options);

// The dtype of every value the model defines (graph inputs, initializers and
// every named node output, the folded ones included), by name, as binding at
// `options` infers them: what a model pass that rewrites by dtype reads
// (runtime/passes/precision.h), since the Model itself records dtypes only
// at its interface. Errors as BindModel's.
absl::StatusOr<std::map<std::string, DType>> InferValueDTypes(const Model& model,
                                                              const BindOptions& options);

// What binds `model` for the graph of `key` (Note [Graph keys] in
// common/graph_key.h): its batch, and the bucket's extent for each of the
// model's shape dims, in ShapeDimNames order. InvalidArgument when the
// bucket does not give one extent per shape dim, naming the dims, or when
// the key's batch is not 1 for a model without a batch dim.
absl::StatusOr<BindOptions> BindOptionsAt(const Model& model, const GraphKey& key);

// Note [Binding once per key]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A load binds the model at each key for several plans: every schedule
// candidate of a timed key, and each graph set. Binding BERT-base at one key
// takes about 22 ms (inference and folding over a thousand nodes), and its
// load at 30 keys bound a timed key five times. BoundGraphs binds each key
// once and hands out copies: a bound graph holds its constants by pointer,
// so a copy is cheap beside binding.
class BoundGraphs {
 public:
  // `model` must outlive this.
  explicit BoundGraphs(const Model& model) : model_(model) {}

  // `model` bound at `key` (BindOptionsAt, BindModel), on first use; errors
  // as theirs, and not remembered. Thread-safe.
  absl::StatusOr<BoundGraph> At(const GraphKey& key);

  [[nodiscard]] const Model& model() const { return model_; }

 private:
  const Model& model_;
  absl::Mutex mu_;
  std::map<GraphKey, BoundGraph> bound_ ABSL_GUARDED_BY(mu_);
};

// True when input `input_index` of `op_type` describes a shape (Reshape's
// shape, Expand's shape, Slice's starts/ends/axes/steps, Unsqueeze's and
// Squeeze's axes, ReduceMean's axes): its value must be known at plan time.
bool IsShapeOperand(const std::string& op_type, int input_index);

}  // namespace graphserve
