#pragma once
// Host reference kernels: plain loops over canonical bound nodes (see Note
// [Canonical bound nodes] in runtime/bound_graph.h), float64 accumulation in
// reductions and products. They are the oracle for the CUDA kernels and what
// binding uses to fold constant subgraphs.

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "runtime/bound_graph.h"
#include "common/tensor.h"

namespace graphserve {

// Computes `node`. `inputs` follow node.inputs; `outputs` follow node.outputs
// and arrive allocated with their bound dtype and dims. outputs[0] is always
// present; a later output may be null when nobody reads it (LayerNormalization's
// Mean and InvStdDev). Unimplemented for an op or dtype the host kernels lack,
// InvalidArgument for inputs that break the canonical contract (the message
// names the node and op). The caller keeps ownership of every tensor.
absl::Status RunHostNode(const BoundNode& node, absl::Span<const HostTensor* const> inputs,
                         absl::Span<HostTensor* const> outputs);

}  // namespace graphserve
