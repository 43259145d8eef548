#include "capture/graph_post_processing.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "capture/stream_capture.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace {

absl::StatusOr<std::vector<cudaGraphNode_t>> Nodes(cudaGraph_t graph) {
  size_t count = 0;
  CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CUDA_RETURN_IF_ERROR(cudaGraphGetNodes(graph, nodes.data(), &count));
  nodes.resize(count);
  return nodes;
}

// cudaGraphNodeGetDependencies and cudaGraphNodeGetDependentNodes share one
// signature: ask for the count, then the nodes.
using EdgeQuery = cudaError_t (*)(cudaGraphNode_t, cudaGraphNode_t*, cudaGraphEdgeData*, size_t*);

absl::StatusOr<std::vector<cudaGraphNode_t>> Neighbours(cudaGraphNode_t node, EdgeQuery query,
                                                        const char* call) {
  size_t count = 0;
  RETURN_IF_ERROR(CudaErrorToStatus(query(node, nullptr, nullptr, &count), call));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) RETURN_IF_ERROR(CudaErrorToStatus(query(node, nodes.data(), nullptr, &count), call));
  nodes.resize(count);
  return nodes;
}

absl::StatusOr<std::vector<cudaGraphNode_t>> Dependencies(cudaGraphNode_t node) {
  return Neighbours(node, &cudaGraphNodeGetDependencies, "cudaGraphNodeGetDependencies");
}

absl::StatusOr<std::vector<cudaGraphNode_t>> Dependents(cudaGraphNode_t node) {
  return Neighbours(node, &cudaGraphNodeGetDependentNodes, "cudaGraphNodeGetDependentNodes");
}

std::vector<int> IndicesOf(const std::vector<cudaGraphNode_t>& nodes,
                           const std::vector<cudaGraphNode_t>& all) {
  std::vector<int> indices;
  for (cudaGraphNode_t node : nodes) {
    indices.push_back(static_cast<int>(std::find(all.begin(), all.end(), node) - all.begin()));
  }
  return indices;
}

absl::StatusOr<bool> IsHostPointer(const void* ptr) {
  cudaPointerAttributes attributes{};
  CUDA_RETURN_IF_ERROR(cudaPointerGetAttributes(&attributes, ptr));
  return attributes.type == cudaMemoryTypeHost || attributes.type == cudaMemoryTypeUnregistered;
}

absl::StatusOr<TransferDirection> DirectionOf(const cudaMemcpy3DParms& params) {
  switch (params.kind) {
    case cudaMemcpyHostToDevice: return TransferDirection::kHostToDevice;
    case cudaMemcpyDeviceToHost: return TransferDirection::kDeviceToHost;
    case cudaMemcpyDeviceToDevice: return TransferDirection::kDeviceToDevice;
    case cudaMemcpyHostToHost: return TransferDirection::kHostToHost;
    case cudaMemcpyDefault: break;
  }
  // Unified addressing: the pointers say where they live.
  ASSIGN_OR_RETURN(const bool src_host, IsHostPointer(params.srcPtr.ptr));
  ASSIGN_OR_RETURN(const bool dst_host, IsHostPointer(params.dstPtr.ptr));
  if (src_host) return dst_host ? TransferDirection::kHostToHost : TransferDirection::kHostToDevice;
  return dst_host ? TransferDirection::kDeviceToHost : TransferDirection::kDeviceToDevice;
}

// True if `graph` or a graph nested in it holds a memcpy node.
absl::StatusOr<bool> HasMemcpyNode(cudaGraph_t graph) {
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> nodes, Nodes(graph));
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type{};
    CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(node, &type));
    if (type == cudaGraphNodeTypeMemcpy) return true;
    if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      CUDA_RETURN_IF_ERROR(cudaGraphChildGraphNodeGetGraph(node, &child));
      ASSIGN_OR_RETURN(const bool nested, HasMemcpyNode(child));
      if (nested) return true;
    }
  }
  return false;
}

absl::StatusOr<CapturedMemcpy> ReadMemcpy(cudaGraphNode_t node, int index,
                                          const std::vector<cudaGraphNode_t>& all) {
  cudaMemcpy3DParms params{};
  CUDA_RETURN_IF_ERROR(cudaGraphMemcpyNodeGetParams(node, &params));
  if (params.srcArray != nullptr || params.dstArray != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph rejected: node ", index, " copies to or from a CUDA array; a model run's "
        "inputs and outputs must be linear memory"));
  }
  const cudaExtent& extent = params.extent;
  if (extent.height > 1 || extent.depth > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "graph rejected: node ", index, " is a ", extent.depth > 1 ? "3D" : "2D",
        " copy; post-processing maps only contiguous 1D copies"));
  }
  CapturedMemcpy memcpy;
  memcpy.node = index;
  ASSIGN_OR_RETURN(memcpy.direction, DirectionOf(params));
  memcpy.src = static_cast<const char*>(params.srcPtr.ptr) +
               params.srcPos.x;  // 1D: only x positions
  memcpy.dst = static_cast<const char*>(params.dstPtr.ptr) + params.dstPos.x;
  memcpy.bytes = extent.width;
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> predecessors, Dependencies(node));
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> successors, Dependents(node));
  memcpy.predecessors = IndicesOf(predecessors, all);
  memcpy.successors = IndicesOf(successors, all);
  return memcpy;
}

// Destroys `node`, first ordering each of its predecessors before each of its
// successors so the nodes that stay keep their order.
absl::Status RemoveKeepingOrder(cudaGraph_t graph, cudaGraphNode_t node) {
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> predecessors, Dependencies(node));
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> successors, Dependents(node));
  for (cudaGraphNode_t successor : successors) {
    ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> existing, Dependencies(successor));
    for (cudaGraphNode_t predecessor : predecessors) {
      if (std::find(existing.begin(), existing.end(), predecessor) != existing.end()) continue;
      CUDA_RETURN_IF_ERROR(
          cudaGraphAddDependencies(graph, &predecessor, &successor, nullptr, 1));
    }
  }
  CUDA_RETURN_IF_ERROR(cudaGraphDestroyNode(node));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<CapturedMemcpy>> ReadMemcpyNodes(cudaGraph_t graph) {
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> nodes, Nodes(graph));
  std::vector<CapturedMemcpy> memcpys;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    cudaGraphNodeType type{};
    CUDA_RETURN_IF_ERROR(cudaGraphNodeGetType(nodes[i], &type));
    if (type == cudaGraphNodeTypeMemcpy) {
      ASSIGN_OR_RETURN(CapturedMemcpy memcpy, ReadMemcpy(nodes[i], i, nodes));
      memcpys.push_back(std::move(memcpy));
    } else if (type == cudaGraphNodeTypeGraph) {
      cudaGraph_t child = nullptr;
      CUDA_RETURN_IF_ERROR(cudaGraphChildGraphNodeGetGraph(nodes[i], &child));
      ASSIGN_OR_RETURN(const bool has_memcpy, HasMemcpyNode(child));
      if (has_memcpy) {
        return absl::InvalidArgumentError(absl::StrCat(
            "graph rejected: node ", i, " is a child graph with memcpy nodes; post-processing "
            "cannot map copies inside child graphs"));
      }
    }
  }
  return memcpys;
}

absl::StatusOr<TransferPlan> PostProcessMemcpyNodes(cudaGraph_t graph,
                                                    const TransferRegistry& registry) {
  ASSIGN_OR_RETURN(const std::vector<CapturedMemcpy> memcpys, ReadMemcpyNodes(graph));
  ASSIGN_OR_RETURN(TransferPlan plan, PlanTransfers(memcpys, registry));
  ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> nodes, Nodes(graph));
  for (int index : plan.removed_nodes) {
    RETURN_IF_ERROR(RemoveKeepingOrder(graph, nodes[index]));
  }
  return plan;
}

}  // namespace graphserve
