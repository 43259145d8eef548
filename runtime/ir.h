#pragma once
// GraphServe's model IR: what ONNX import produces, before any batch size is
// chosen. Values are referred to by name, nodes are in topological order, and
// the batch dimension of each graph input is dim 0, written -1. Other dims of
// a graph input may be dynamic too (Note [Shape dims]).

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
  // Graph inputs: per dim, the name of a dynamic dim other than the batch
  // (Note [Shape dims]); "" for fixed dims and the batch.
  std::vector<std::string> dim_names;
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
  std::vector<ValueInfo> inputs;  // graph inputs that are not initializers
  std::vector<ValueInfo> outputs;
  // Shared so that every BoundGraph made from this model (one per batch size)
  // points at the same tensors, and the weight store uploads each once.
  std::map<std::string, std::shared_ptr<const HostTensor>> initializers;
  std::vector<Node> nodes;  // topological order
};

// The model's shape dims (Note [Shape dims]), each once, in the order the
// graph inputs first name them.
std::vector<std::string> ShapeDimNames(const Model& model);

}  // namespace graphserve
