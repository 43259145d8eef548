#include "runtime/host/nn_kernels.h"

#include <cstdint>
#include <cstring>

#include "common/status.h"
#include "runtime/host/kernel_args.h"
#include "runtime/host/nn_reference.h"
#include "runtime/nn_node_params.h"

namespace graphserve {

namespace {

// The kernels receive tensors, not the graph: a one-node graph view of the
// tensors' dims lets them read the same canonical parameters as the CUDA
// factories (nn_node_params.h).
BoundGraph NodeView(const HostKernelArgs& args, BoundNode& node) {
  BoundGraph graph;
  node = args.node;
  node.inputs.clear();
  node.outputs.clear();
  for (const HostTensor* input : args.inputs) {
    node.inputs.push_back(static_cast<ValueId>(graph.values.size()));
    graph.values.push_back(BoundValue{"", input->dtype(), input->dims(), nullptr});
  }
  node.outputs.push_back(static_cast<ValueId>(graph.values.size()));
  graph.values.push_back(BoundValue{"", args.out(0).dtype(), args.out(0).dims(), nullptr});
  return graph;
}

absl::Status RequireFloat32(const HostKernelArgs& args) {
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    RETURN_IF_ERROR(RequireDType(args, args.in(i), DType::kFloat32, "input"));
  }
  return RequireDType(args, args.out(0), DType::kFloat32, "output");
}

}  // namespace

absl::Status HostConv(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireFloat32(args));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  const ConvParams p = ConvParamsOf(graph, node);
  const float* bias = args.inputs.size() > 2 ? args.in(2).data<float>() : nullptr;
  ConvReference(p, args.in(0).data<float>(), args.in(1).data<float>(), bias,
                args.out(0).data<float>());
  return absl::OkStatus();
}

absl::Status HostBatchNormalization(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireFloat32(args));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  ChannelEpilogueReference(ChannelEpilogueParamsOf(graph, node), args.in(0).data<float>(),
                           args.in(1).data<float>(), args.in(2).data<float>(), nullptr,
                           args.out(0).data<float>());
  return absl::OkStatus();
}

absl::Status HostPool(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireFloat32(args));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  PoolReference(PoolParamsOf(graph, node), args.in(0).data<float>(), args.out(0).data<float>());
  return absl::OkStatus();
}

absl::Status HostGlobalPool(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireFloat32(args));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  GlobalPoolReference(GlobalPoolParamsOf(graph, node), args.in(0).data<float>(),
                      args.out(0).data<float>());
  return absl::OkStatus();
}

absl::Status HostPad(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  const PadParams p = PadParamsOf(graph, node);
  const DType dtype = args.in(0).dtype();
  // The pad value in the tensor's own type.
  float f = p.value;
  int64_t i = static_cast<int64_t>(p.value);
  bool b = p.value != 0.0f;
  const void* value = dtype == DType::kFloat32 ? static_cast<const void*>(&f)
                      : dtype == DType::kInt64 ? static_cast<const void*>(&i)
                                               : static_cast<const void*>(&b);
  PadReference(p, args.in(0).raw(), args.out(0).raw(), static_cast<int>(DTypeSize(dtype)), value);
  return absl::OkStatus();
}

absl::Status HostActivation(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireFloat32(args));
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  const ActivationParams a = ActivationOf(args.node);
  const float* x = args.in(0).data<float>();
  float* y = args.out(0).data<float>();
  for (int64_t k = 0, n = args.in(0).num_elements(); k < n; ++k) y[k] = ApplyActivation(a, x[k]);
  return absl::OkStatus();
}

}  // namespace graphserve
