#pragma once
// The bookkeeping half of memcpy-node post-processing: given the memcpy nodes
// of a captured run and the host buffers the capture registered, decide which
// nodes are the run's inputs and outputs and record them as mappings. Pure
// host code (no CUDA calls), so it is unit-tested without a GPU;
// capture/graph_post_processing.h reads the nodes out of a real cudaGraph and
// applies the result.
//
// Note [Memcpy node post-processing]
// A captured model run begins with host-to-device copies of its inputs and
// ends with device-to-host copies of its outputs. Those copies are recorded
// as memcpy nodes with the full captured batch B baked in, so replaying them
// would move B rows even for a request of b < B rows, and would tie the graph
// to one fixed host buffer. Following the seed design (CUDA Graph in
// TensorFlow), after capture we:
//   1. check every memcpy node: a host-to-device copy must read a registered
//      input staging buffer or a held constant, a device-to-host copy must
//      write a registered output staging buffer; anything else (a stray
//      transfer from memory nobody registered, host-to-host) rejects the graph
//      with a message naming the node, because replaying it would read or
//      write memory whose lifetime and contents nobody controls;
//   2. remove the input copies and output copies from the graph and record
//      them as InputMapping / OutputMapping (host address, device address,
//      bytes per row), which the replay issues itself for exactly the b real
//      rows. Constant uploads and device-to-device copies stay in the graph.
// Removal is only sound when nothing in the graph has to run before an input
// copy or after an output copy, since the replay moves input copies before
// the whole graph and output copies after it; so an input copy may depend
// only on other input copies, and an output copy may be followed only by
// other output copies. A graph that breaks this is rejected too.
// The capture learns a run's inputs and outputs only from these nodes; it
// never looks inside the runtime that produced them.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace graphserve {

enum class TransferDirection { kHostToDevice, kDeviceToHost, kDeviceToDevice, kHostToHost };

const char* TransferDirectionName(TransferDirection direction);

// One memcpy node of a captured graph.
struct CapturedMemcpy {
  // Index of the node in the graph's node list; names the node in errors.
  int node = 0;
  TransferDirection direction = TransferDirection::kDeviceToDevice;
  const void* src = nullptr;
  const void* dst = nullptr;
  size_t bytes = 0;
  // Node indices (any node type) this node waits for, and that wait for it.
  std::vector<int> predecessors;
  std::vector<int> successors;
};

// "node 3 (memcpy host-to-device, 4096 bytes, 0x7f00 -> 0x7e00)".
std::string DescribeMemcpy(const CapturedMemcpy& memcpy);

// A named range of host memory.
struct HostRegion {
  std::string name;
  const void* begin = nullptr;
  size_t bytes = 0;
};

// What the capture registered before recording a run of `batch_size` rows.
struct TransferRegistry {
  // Pinned staging the replay fills with request rows, one per graph input.
  std::vector<HostRegion> input_staging;
  // Pinned staging the replay reads response rows from, one per output.
  std::vector<HostRegion> output_staging;
  // Host memory the tensor holder keeps alive and unchanged for the graph's
  // lifetime (constants uploaded inside the run); copies from it stay.
  std::vector<HostRegion> held_constants;
  // Rows of the captured run: every input and output copy moves a whole
  // number of rows.
  int64_t batch_size = 1;
};

// An input copy removed from the graph: the replay copies the first b rows
// from host_src to device_dst before launching it.
struct InputMapping {
  std::string name;  // the staging region it reads
  const void* host_src = nullptr;
  void* device_dst = nullptr;
  size_t bytes = 0;  // all batch_size rows
  size_t bytes_per_row = 0;
};

// An output copy removed from the graph: the replay copies the first b rows
// from device_src to host_dst after launching it.
struct OutputMapping {
  std::string name;  // the staging region it writes
  const void* device_src = nullptr;
  void* host_dst = nullptr;
  size_t bytes = 0;
  size_t bytes_per_row = 0;
};

struct TransferPlan {
  // In node order.
  std::vector<InputMapping> inputs;
  std::vector<OutputMapping> outputs;
  // Node indices to remove from the graph: the input and output copies.
  std::vector<int> removed_nodes;
  // Copies that stay in the graph.
  int constant_uploads = 0;
  int device_copies = 0;
};

// Classifies `memcpys` against `registry` as Note [Memcpy node post-processing]
// describes. InvalidArgument naming the node for a copy that is not explained,
// an input or output copy that is not a whole number of rows, or one that
// could not be moved out of the graph.
absl::StatusOr<TransferPlan> PlanTransfers(absl::Span<const CapturedMemcpy> memcpys,
                                           const TransferRegistry& registry);

}  // namespace graphserve
