#pragma once
// The CUDA half of memcpy-node post-processing (Note [Memcpy node
// post-processing] in capture/transfer_mappings.h): read a captured graph's
// memcpy nodes, classify them, and remove the input and output copies.

#include <cuda_runtime.h>

#include <vector>

#include "absl/status/statusor.h"
#include "capture/transfer_mappings.h"

namespace graphserve {

// The memcpy nodes of `graph`, with node indices in cudaGraphGetNodes order.
// A copy's direction comes from its kind, or from the pointers' attributes
// for cudaMemcpyDefault. InvalidArgument for copies post-processing cannot
// account for: to or from a CUDA array, or inside a child graph.
absl::StatusOr<std::vector<CapturedMemcpy>> ReadMemcpyNodes(cudaGraph_t graph);

// Classifies the memcpy nodes of `graph` against `registry` and, when every
// one is explained, removes the input and output copies from `graph`
// (keeping the order among the nodes that stay) and returns the mappings.
// On error `graph` is unchanged.
absl::StatusOr<TransferPlan> PostProcessMemcpyNodes(cudaGraph_t graph,
                                                    const TransferRegistry& registry);

}  // namespace graphserve
