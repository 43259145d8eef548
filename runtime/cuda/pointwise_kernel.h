#pragma once
// The CUDA kernel of a fused pointwise region (StepKind::kPointwise in
// runtime/fusion.h): its nodes compiled into one PointwiseProgram
// (runtime/cuda/pointwise.h).

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/cuda/pointwise.h"

namespace graphserve {

// Whether an op compiles to an instruction: the ops IsPointwiseOp
// (runtime/fusion.h) lets into a region, as pointwise_test checks.
bool HasPointwiseInstruction(const std::string& op_type);

// Compiles `nodes` (ascending, so each reads only `inputs` and earlier nodes'
// outputs, or scalar constants) computing `output`. InvalidArgument when the
// region is not one the fusion pass makes (an op without an instruction, a
// value that is neither, too many inputs or nodes).
absl::StatusOr<PointwiseProgram> CompilePointwise(const BoundGraph& graph,
                                                  const std::vector<int>& nodes,
                                                  const std::vector<ValueId>& inputs,
                                                  ValueId output);

// Enqueue's inputs follow `inputs` above; one output.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePointwiseKernel(
    std::string label, const BoundGraph& graph, const std::vector<int>& nodes,
    const std::vector<ValueId>& inputs, ValueId output);

}  // namespace graphserve
