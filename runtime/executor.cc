#include "runtime/executor.h"

#include "absl/strings/str_cat.h"

namespace graphserve {

absl::Status ValidateInputs(const BoundGraph& graph, absl::Span<const HostTensor> inputs) {
  if (inputs.size() != graph.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", graph.inputs.size(),
                                                   " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const BoundValue& expected = graph.value(graph.inputs[i]);
    if (inputs[i].dtype() != expected.dtype || inputs[i].dims() != expected.dims) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", expected.name, "': expected ", DTypeName(expected.dtype),
          DimsToString(expected.dims), ", got ", DTypeName(inputs[i].dtype()),
          DimsToString(inputs[i].dims())));
    }
  }
  return absl::OkStatus();
}

std::vector<HostTensor> RandomInputs(const BoundGraph& graph, uint64_t seed) {
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const BoundValue& value = graph.value(graph.inputs[i]);
    inputs.push_back(RandomTensor(value.dtype, value.dims, seed + i));
  }
  return inputs;
}

}  // namespace graphserve
