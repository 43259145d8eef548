#pragma once
// GraphServe's model IR: what ONNX import produces, before any batch size is
// chosen. Values are referred to by name, nodes are in topological order, and
// the batch dimension of each graph input is dim 0, written -1.

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
  Dims dims;  // dim 0 of a graph input may be -1: the batch dimension
};

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

}  // namespace graphserve
