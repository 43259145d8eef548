#include "runtime/host/host_executor.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "runtime/host/kernels.h"

namespace graphserve {

namespace {

std::string NodeLabel(const BoundNode& node) {
  return absl::StrCat("node '", node.name, "' (", node.op_type, ")");
}

bool InRange(const BoundGraph& graph, ValueId id) {
  return id >= 0 && static_cast<size_t>(id) < graph.values.size();
}

// Checks what Run relies on: ids in range, every value a node reads is a
// constant, a graph input or the output of an earlier node, and no value has
// two sources. A node output slot of -1 is an output the model does not use.
absl::Status ValidateGraph(const BoundGraph& graph) {
  std::vector<bool> available(graph.values.size(), false);
  for (size_t id = 0; id < graph.values.size(); ++id) {
    available[id] = graph.values[id].is_constant();
  }
  for (ValueId id : graph.inputs) {
    if (!InRange(graph, id)) {
      return absl::InvalidArgumentError(absl::StrCat("graph input id ", id, " out of range"));
    }
    if (available[id]) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph input '", graph.value(id).name, "' is also a constant or repeated"));
    }
    available[id] = true;
  }
  for (const BoundNode& node : graph.nodes) {
    for (ValueId id : node.inputs) {
      if (!InRange(graph, id) || !available[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(node), " reads value ", id,
                         InRange(graph, id) ? absl::StrCat(" '", graph.value(id).name, "'") : "",
                         " before anything produces it"));
      }
    }
    for (ValueId id : node.outputs) {
      if (id == -1) continue;
      if (!InRange(graph, id) || available[id]) {
        return absl::InvalidArgumentError(
            absl::StrCat(NodeLabel(node), " writes value ", id,
                         " that is out of range or already a constant, input or earlier output"));
      }
      available[id] = true;
    }
  }
  for (ValueId id : graph.outputs) {
    if (!InRange(graph, id) || !available[id]) {
      return absl::InvalidArgumentError(absl::StrCat("graph output ", id, " is never produced"));
    }
  }
  return absl::OkStatus();
}

// For each node, the produced values it is the last reader of: Run frees them
// once the node has run, so a large-batch run holds only live intermediates.
std::vector<std::vector<ValueId>> LastReaders(const BoundGraph& graph) {
  std::vector<int64_t> last_reader(graph.values.size(), -1);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (ValueId id : graph.nodes[n].inputs) last_reader[id] = static_cast<int64_t>(n);
  }
  std::vector<bool> keep(graph.values.size(), false);
  for (ValueId id : graph.outputs) keep[id] = true;
  std::vector<std::vector<ValueId>> release_after(graph.nodes.size());
  for (const BoundNode& node : graph.nodes) {
    for (ValueId id : node.outputs) {
      if (id != -1 && !keep[id] && last_reader[id] >= 0) {
        release_after[last_reader[id]].push_back(id);
      }
    }
  }
  return release_after;
}

}  // namespace

HostExecutor::HostExecutor(BoundGraph graph)
    : graph_(std::move(graph)), release_after_(LastReaders(graph_)) {}

absl::StatusOr<std::unique_ptr<HostExecutor>> HostExecutor::Create(BoundGraph graph) {
  RETURN_IF_ERROR(ValidateGraph(graph));
  return std::unique_ptr<HostExecutor>(new HostExecutor(std::move(graph)));
}

absl::StatusOr<std::vector<HostTensor>> HostExecutor::Run(absl::Span<const HostTensor> inputs) {
  RETURN_IF_ERROR(ValidateInputs(graph_, inputs));

  // Everything below is local to this call, which is what makes Run
  // thread-safe: graph_ is only read. `produced` owns node outputs; `view`
  // points at the tensor holding each value (constant, caller's input or
  // produced), indexed by ValueId. `produced` is sized once, so pointers into
  // it stay valid.
  std::vector<HostTensor> produced(graph_.values.size());
  std::vector<const HostTensor*> view(graph_.values.size(), nullptr);
  for (size_t id = 0; id < graph_.values.size(); ++id) {
    view[id] = graph_.values[id].constant.get();
  }
  for (size_t i = 0; i < inputs.size(); ++i) view[graph_.inputs[i]] = &inputs[i];

  std::vector<const HostTensor*> node_inputs;
  std::vector<HostTensor*> node_outputs;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const BoundNode& node = graph_.nodes[n];
    node_inputs.clear();
    for (ValueId id : node.inputs) node_inputs.push_back(view[id]);
    node_outputs.clear();
    for (ValueId id : node.outputs) {
      if (id == -1) {
        node_outputs.push_back(nullptr);
        continue;
      }
      const BoundValue& value = graph_.value(id);
      produced[id] = HostTensor(value.dtype, value.dims);
      node_outputs.push_back(&produced[id]);
    }
    RETURN_IF_ERROR(RunHostNode(node, node_inputs, node_outputs));
    for (ValueId id : node.outputs) {
      if (id != -1) view[id] = &produced[id];
    }
    for (ValueId id : release_after_[n]) {
      produced[id] = HostTensor();
      view[id] = nullptr;
    }
  }

  std::vector<HostTensor> outputs;
  outputs.reserve(graph_.outputs.size());
  for (ValueId id : graph_.outputs) outputs.push_back(*view[id]);
  return outputs;
}

ExecutorFactory HostExecutorFactory() {
  return [](BoundGraph graph) -> absl::StatusOr<std::unique_ptr<Executor>> {
    ASSIGN_OR_RETURN(std::unique_ptr<HostExecutor> executor,
                     HostExecutor::Create(std::move(graph)));
    return std::unique_ptr<Executor>(std::move(executor));
  };
}

}  // namespace graphserve
