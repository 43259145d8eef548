#include "capture/transfer_mappings.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace graphserve {

namespace {

// The region of `regions` that holds all of [ptr, ptr + bytes), if any.
const HostRegion* FindRegion(const std::vector<HostRegion>& regions, const void* ptr,
                             size_t bytes) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  for (const HostRegion& region : regions) {
    const auto begin = reinterpret_cast<uintptr_t>(region.begin);
    if (address >= begin && address - begin <= region.bytes &&
        bytes <= region.bytes - (address - begin)) {
      return &region;
    }
  }
  return nullptr;
}

absl::StatusOr<size_t> BytesPerRow(const CapturedMemcpy& memcpy, const std::string& name,
                                   int64_t batch_size) {
  if (batch_size < 1 || memcpy.bytes % static_cast<size_t>(batch_size) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        DescribeMemcpy(memcpy), " copies '", name, "' but ", memcpy.bytes,
        " bytes is not a whole number of rows at batch size ", batch_size,
        "; every graph input and output must have the batch as its leading dimension"));
  }
  return memcpy.bytes / static_cast<size_t>(batch_size);
}

bool Contains(const std::vector<int>& sorted, int node) {
  return std::binary_search(sorted.begin(), sorted.end(), node);
}

}  // namespace

const char* TransferDirectionName(TransferDirection direction) {
  switch (direction) {
    case TransferDirection::kHostToDevice: return "host-to-device";
    case TransferDirection::kDeviceToHost: return "device-to-host";
    case TransferDirection::kDeviceToDevice: return "device-to-device";
    case TransferDirection::kHostToHost: return "host-to-host";
  }
  return "unknown";
}

std::string DescribeMemcpy(const CapturedMemcpy& memcpy) {
  return absl::StrFormat("node %d (memcpy %s, %u bytes, %p -> %p)", memcpy.node,
                         TransferDirectionName(memcpy.direction), memcpy.bytes, memcpy.src,
                         memcpy.dst);
}

absl::StatusOr<TransferPlan> PlanTransfers(absl::Span<const CapturedMemcpy> memcpys,
                                           const TransferRegistry& registry) {
  TransferPlan plan;
  std::vector<int> input_nodes;   // the copies that become mappings
  std::vector<int> output_nodes;
  for (const CapturedMemcpy& memcpy : memcpys) {
    switch (memcpy.direction) {
      case TransferDirection::kHostToDevice: {
        if (const HostRegion* staging =
                FindRegion(registry.input_staging, memcpy.src, memcpy.bytes)) {
          InputMapping& mapping = plan.inputs.emplace_back();
          mapping.name = staging->name;
          mapping.host_src = memcpy.src;
          mapping.device_dst = const_cast<void*>(memcpy.dst);
          mapping.bytes = memcpy.bytes;
          ASSIGN_OR_RETURN(mapping.bytes_per_row,
                           BytesPerRow(memcpy, staging->name, registry.batch_size));
          input_nodes.push_back(memcpy.node);
        } else if (FindRegion(registry.held_constants, memcpy.src, memcpy.bytes) != nullptr) {
          ++plan.constant_uploads;
        } else {
          return absl::InvalidArgumentError(absl::StrCat(
              "graph rejected: ", DescribeMemcpy(memcpy),
              " reads host memory that is neither a registered input staging buffer nor a "
              "held constant; a replay would read memory nobody keeps alive. Copy inputs "
              "only from the staging buffers the capture registers"));
        }
        break;
      }
      case TransferDirection::kDeviceToHost: {
        const HostRegion* staging = FindRegion(registry.output_staging, memcpy.dst, memcpy.bytes);
        if (staging == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "graph rejected: ", DescribeMemcpy(memcpy),
              " writes host memory that is not a registered output staging buffer; a replay "
              "would write memory nobody reads or owns. Copy outputs only to the staging "
              "buffers the capture registers"));
        }
        OutputMapping& mapping = plan.outputs.emplace_back();
        mapping.name = staging->name;
        mapping.device_src = memcpy.src;
        mapping.host_dst = const_cast<void*>(memcpy.dst);
        mapping.bytes = memcpy.bytes;
        ASSIGN_OR_RETURN(mapping.bytes_per_row,
                         BytesPerRow(memcpy, staging->name, registry.batch_size));
        output_nodes.push_back(memcpy.node);
        break;
      }
      case TransferDirection::kDeviceToDevice:
        ++plan.device_copies;
        break;
      case TransferDirection::kHostToHost:
        return absl::InvalidArgumentError(
            absl::StrCat("graph rejected: ", DescribeMemcpy(memcpy),
                         " copies host to host inside the graph; a model run has no reason to"));
    }
  }

  // Input copies run before the replayed graph and output copies after it, so
  // nothing else may be ordered before an input copy or after an output copy.
  std::sort(input_nodes.begin(), input_nodes.end());
  std::sort(output_nodes.begin(), output_nodes.end());
  for (const CapturedMemcpy& memcpy : memcpys) {
    if (Contains(input_nodes, memcpy.node)) {
      for (int predecessor : memcpy.predecessors) {
        if (!Contains(input_nodes, predecessor)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "graph rejected: input copy ", DescribeMemcpy(memcpy), " waits for node ",
              predecessor, ", which is not an input copy; the replay copies inputs before "
              "the whole graph, so the model must copy every input before other work"));
        }
      }
    }
    if (Contains(output_nodes, memcpy.node)) {
      for (int successor : memcpy.successors) {
        if (!Contains(output_nodes, successor)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "graph rejected: output copy ", DescribeMemcpy(memcpy), " is followed by node ",
              successor, ", which is not an output copy; the replay copies outputs after "
              "the whole graph, so the model must copy outputs after all other work"));
        }
      }
    }
  }
  std::merge(input_nodes.begin(), input_nodes.end(), output_nodes.begin(), output_nodes.end(),
             std::back_inserter(plan.removed_nodes));
  return plan;
}

}  // namespace graphserve
