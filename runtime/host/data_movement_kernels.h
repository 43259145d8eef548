#pragma once
// Host reference kernels, data movement family: reinterpretations
// (Identity, Reshape, Flatten, Squeeze, Unsqueeze), Concat, Transpose, Slice,
// Expand, the gathers and scatters, Tile, Trilu, OneHot and TopK. Each
// computes one canonical bound node
// (Note [Canonical bound nodes]); the op registry
// (runtime/ops/data_movement.cc) names them.

#include "absl/status/status.h"

namespace graphserve {

struct HostKernelArgs;

absl::Status HostReinterpret(const HostKernelArgs& args);
absl::Status HostConcat(const HostKernelArgs& args);
absl::Status HostTranspose(const HostKernelArgs& args);
absl::Status HostSlice(const HostKernelArgs& args);
absl::Status HostExpand(const HostKernelArgs& args);
absl::Status HostGather(const HostKernelArgs& args);
absl::Status HostGatherElements(const HostKernelArgs& args);
absl::Status HostGatherND(const HostKernelArgs& args);
absl::Status HostTile(const HostKernelArgs& args);
absl::Status HostTrilu(const HostKernelArgs& args);
absl::Status HostScatterND(const HostKernelArgs& args);
absl::Status HostScatterElements(const HostKernelArgs& args);
absl::Status HostOneHot(const HostKernelArgs& args);
absl::Status HostTopK(const HostKernelArgs& args);
// The canonical Resize (Note [Resize sampling tables], runtime/ops/resize.cc);
// in resize_kernel.cc.
absl::Status HostResize(const HostKernelArgs& args);
// The canonical GridSample (Note [GridSample coordinates],
// runtime/ops/grid_sample.cc); in grid_sample_kernel.cc.
absl::Status HostGridSample(const HostKernelArgs& args);

}  // namespace graphserve
