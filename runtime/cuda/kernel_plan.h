#pragma once
// What the CUDA factories of GraphServe's own kernels share (the elementwise,
// data movement and normalization families, runtime/cuda/<family>_ops.cc):
// node checks, broadcast and layout arithmetic, and the kernel classes most
// ops are one of. Private to those files.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/bound_graph.h"
#include "runtime/cuda/cuda_op_kernel.h"
#include "runtime/cuda/op_kernels_launch.h"

namespace graphserve::kernel_plan {

// "op '<name>' (<op>)", the prefix of every message about the node.
std::string NodeContext(const BoundNode& node);
// InvalidArgument: the node contradicts itself (binding should have refused it).
absl::Status Invalid(const BoundNode& node, absl::string_view message);
// Unimplemented: a valid node these kernels do not cover.
absl::Status Unsupported(const BoundNode& node, absl::string_view message);

// Row-major strides (in elements) of dims.
std::vector<int64_t> ContiguousStrides(const Dims& dims);
// dims[begin] * ... * dims[end - 1] (1 when empty).
int64_t Product(const Dims& dims, size_t begin, size_t end);

// The node's inputs and outputs as values, after checking their counts, that
// every id is in range, and that no tensor exceeds kMaxRank. An output id
// below zero marks an optional output the model does not use.
struct NodeValues {
  std::vector<const BoundValue*> inputs;
  std::vector<const BoundValue*> outputs;  // null for an absent optional output
};
absl::StatusOr<NodeValues> GetNodeValues(const BoundGraph& graph, const BoundNode& node,
                                         size_t min_inputs, size_t max_inputs,
                                         size_t min_outputs, size_t max_outputs);

// The registry checks the dtype of a node's typed input against its kernel
// definition; these check the node's other values.
absl::Status CheckDType(const BoundNode& node, const BoundValue& value, DTypeSet allowed);
absl::Status CheckSameDType(const BoundNode& node, const BoundValue& a, const BoundValue& b);
absl::Status CheckElementCount(const BoundNode& node, const BoundValue& value, int64_t expected);

// Strides (in elements) with which `input` is read when broadcast
// (multidirectionally, right-aligned) to `out`: 0 along broadcast dims.
absl::StatusOr<std::vector<int64_t>> BroadcastStrides(const BoundNode& node,
                                                      const BoundValue& input, const Dims& out);

// Dims with one stride list per operand, outermost first.
struct StridedDims {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
};

// Drops dims of size 1 and merges each dim into its outer neighbour where
// every operand walks the pair as one contiguous run (Note [Strided
// layouts]). Never returns rank 0: a single element is one dim of size 1.
StridedDims MergeDims(const std::vector<int64_t>& dims,
                      const std::vector<std::vector<int64_t>>& strides);

// The launch layout for a dense output of `out_dims` read through
// `input_strides` (one list of out_dims.size() strides per input).
op_kernels_internal::StridedLayout MakeLayout(
    const Dims& out_dims, const std::vector<std::vector<int64_t>>& input_strides);

// A copy of `dtype` elements into a contiguous output of `out_dims`, reading
// the input with `in_strides` (elements, one per output dim): the one
// mechanism behind Expand, Transpose and Slice.
op_kernels_internal::UnaryParams StridedCopyParams(DType dtype, const Dims& out_dims,
                                                   std::vector<int64_t> in_strides);

// Checks the arity of each Enqueue against the node and turns launch errors
// into Statuses that name the node.
class NodeKernel : public CudaOpKernel {
 protected:
  explicit NodeKernel(const BoundNode& node);

  absl::Status CheckArity(absl::Span<const void* const> inputs,
                          absl::Span<void* const> outputs) const;
  absl::Status LaunchStatus(cudaError_t error, absl::string_view call) const;

 private:
  std::string context_;
  size_t num_inputs_;
  size_t num_outputs_;
};

// One LaunchUnary: the unary ops, Cast, and the strided copies.
class UnaryKernel final : public NodeKernel {
 public:
  // `input_offset_bytes` moves the input pointer to the first element read
  // (a Slice's start).
  UnaryKernel(const BoundNode& node, const op_kernels_internal::UnaryParams& params,
              int64_t input_offset_bytes)
      : NodeKernel(node), params_(params), input_offset_bytes_(input_offset_bytes) {}

  absl::Status Enqueue(absl::Span<const void* const> inputs, absl::Span<void* const> outputs,
                       cudaStream_t stream) const override;

 private:
  op_kernels_internal::UnaryParams params_;
  int64_t input_offset_bytes_;
};

// The device pointers an Enqueue receives, in the node's order.
using DeviceInputs = absl::Span<const void* const>;
using DeviceOutputs = absl::Span<void* const>;

// One launch of an op_kernels_internal kernel with `params` on the node's
// device pointers.
template <typename Params>
using ParamsLaunch = cudaError_t (*)(const Params& params, DeviceInputs inputs,
                                     DeviceOutputs outputs, cudaStream_t stream);

// A node whose Enqueue is a single launch configured by `params`; `call`
// (a string literal) names the launch in errors.
template <typename Params>
class ParamsKernel final : public NodeKernel {
 public:
  ParamsKernel(const BoundNode& node, const Params& params, ParamsLaunch<Params> launch,
               const char* call)
      : NodeKernel(node), params_(params), launch_(launch), call_(call) {}

  absl::Status Enqueue(DeviceInputs inputs, DeviceOutputs outputs,
                       cudaStream_t stream) const override {
    RETURN_IF_ERROR(CheckArity(inputs, outputs));
    return LaunchStatus(launch_(params_, inputs, outputs, stream), call_);
  }

 private:
  Params params_;
  ParamsLaunch<Params> launch_;
  const char* call_;
};

template <typename Params>
std::unique_ptr<CudaOpKernel> MakeParamsKernel(const BoundNode& node, const Params& params,
                                               ParamsLaunch<Params> launch, const char* call) {
  return std::make_unique<ParamsKernel<Params>>(node, params, launch, call);
}

}  // namespace graphserve::kernel_plan
