#pragma once
// Where one request's tensors sit in one shared-memory region, and the
// request that names them there instead of carrying them (Note
// [Shared-memory slots] in client/shared_memory_slots.h). Pure: no memory is
// touched and nothing is sent.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "client/inference_client.h"
#include "client/request_builder.h"

namespace graphserve {

// cudaMalloc's alignment: a tensor in a CUDA region starts as aligned as its
// own allocation would, and in system memory every element type is aligned.
inline constexpr int64_t kSharedMemoryTensorAlignment = 256;

// perf_analyzer's default --output-shared-memory-size.
inline constexpr int64_t kDefaultOutputSharedMemoryBytes = 102400;

// One tensor's bytes in the region.
struct TensorPlacement {
  std::string name;
  int64_t offset = 0;  // from the region's start, a multiple of the alignment
  int64_t byte_size = 0;
};

struct SharedMemoryLayout {
  std::vector<TensorPlacement> inputs;   // in the request's input order
  std::vector<TensorPlacement> outputs;  // in the order of the expected outputs
  int64_t byte_size = 0;                 // the whole region
};

// Inputs first, then outputs, each on a kSharedMemoryTensorAlignment
// boundary. An input takes its bytes; an output the bytes it will come back
// as, or `output_byte_size` when only the response can tell (a variable
// dimension besides the batch). `output_byte_size` is perf_analyzer's
// --output-shared-memory-size: the room an output may take. InvalidArgument
// when it is below 1, when an output needs more than it (naming the output,
// its shape and bytes, and the flag), for an input already in shared memory
// or an empty request.
absl::StatusOr<SharedMemoryLayout> PlanSharedMemory(const InferRequest& request,
                                                    absl::Span<const ExpectedOutput> outputs,
                                                    int64_t output_byte_size);

// `request` with every tensor of `layout` in region `region`: its inputs
// carry the region's ranges and no data, and requested_outputs lists the
// layout's outputs, each with its range in output_shared_memory. `layout`
// must come from PlanSharedMemory(request, ...).
InferRequest PlaceInRegion(const InferRequest& request, const SharedMemoryLayout& layout,
                           const std::string& region);

}  // namespace graphserve
