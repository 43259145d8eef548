#include "runtime/host/nn_kernels.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/functional/function_ref.h"
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

// The references (nn_reference.h) read and write float32. A node of a
// 16-bit float runs them on its inputs widened to float32 (exactly), and its
// output rounded once more to its type: the float32 rounding first, as the
// GPU's kernels, which compute in float, round before they store.
absl::Status RunInFloat32(const HostKernelArgs& args,
                          absl::FunctionRef<void(const HostKernelArgs&)> reference) {
  const DType dtype = args.in(0).dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && dtype != DType::kBFloat16) {
    return UnsupportedDType(args, dtype);
  }
  for (size_t i = 1; i < args.inputs.size(); ++i) {
    RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.in(i)));
  }
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  if (dtype == DType::kFloat32) {
    reference(args);
    return absl::OkStatus();
  }
  std::vector<HostTensor> wide_inputs;
  wide_inputs.reserve(args.inputs.size());
  std::vector<const HostTensor*> inputs;
  for (const HostTensor* input : args.inputs) {
    inputs.push_back(&wide_inputs.emplace_back(ConvertFloats(*input, DType::kFloat32)));
  }
  HostTensor wide_output(DType::kFloat32, args.out(0).dims());
  HostTensor* outputs[] = {&wide_output};
  reference(HostKernelArgs{args.node, inputs, outputs});
  const HostTensor narrow = ConvertFloats(wide_output, dtype);
  std::memcpy(args.out(0).raw(), narrow.raw(), narrow.bytes());
  return absl::OkStatus();
}

}  // namespace

absl::Status HostConv(const HostKernelArgs& args) {
  return RunInFloat32(args, [](const HostKernelArgs& wide) {
    BoundNode node;
    const BoundGraph graph = NodeView(wide, node);
    const ConvParams p = ConvParamsOf(graph, node);
    const float* bias = wide.inputs.size() > 2 ? wide.in(2).data<float>() : nullptr;
    ConvReference(p, wide.in(0).data<float>(), wide.in(1).data<float>(), bias,
                  wide.out(0).data<float>());
  });
}

absl::Status HostBatchNormalization(const HostKernelArgs& args) {
  return RunInFloat32(args, [](const HostKernelArgs& wide) {
    BoundNode node;
    const BoundGraph graph = NodeView(wide, node);
    ChannelEpilogueReference(ChannelEpilogueParamsOf(graph, node), wide.in(0).data<float>(),
                             wide.in(1).data<float>(), wide.in(2).data<float>(), nullptr,
                             wide.out(0).data<float>());
  });
}

absl::Status HostPool(const HostKernelArgs& args) {
  return RunInFloat32(args, [](const HostKernelArgs& wide) {
    BoundNode node;
    const BoundGraph graph = NodeView(wide, node);
    PoolReference(PoolParamsOf(graph, node), wide.in(0).data<float>(), wide.out(0).data<float>());
  });
}

absl::Status HostGlobalPool(const HostKernelArgs& args) {
  return RunInFloat32(args, [](const HostKernelArgs& wide) {
    BoundNode node;
    const BoundGraph graph = NodeView(wide, node);
    GlobalPoolReference(GlobalPoolParamsOf(graph, node), wide.in(0).data<float>(),
                        wide.out(0).data<float>());
  });
}

absl::Status HostPad(const HostKernelArgs& args) {
  RETURN_IF_ERROR(RequireSameDType(args, args.in(0), args.out(0)));
  BoundNode node;
  const BoundGraph graph = NodeView(args, node);
  const PadParams p = PadParamsOf(graph, node);
  const DType dtype = args.in(0).dtype();
  // The pad value in the tensor's own type.
  HostTensor value(dtype, {});
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    value.data<T>()[0] = Narrow<T>(p.value);
  });
  PadReference(p, args.in(0).raw(), args.out(0).raw(), static_cast<int>(DTypeSize(dtype)),
               value.raw());
  return absl::OkStatus();
}

absl::Status HostActivation(const HostKernelArgs& args) {
  RETURN_IF_ERROR(CheckUnaryOperand(args));
  return RunInFloat32(args, [](const HostKernelArgs& wide) {
    const ActivationParams a = ActivationOf(wide.node);
    const float* x = wide.in(0).data<float>();
    float* y = wide.out(0).data<float>();
    for (int64_t k = 0, n = wide.in(0).num_elements(); k < n; ++k) y[k] = ApplyActivation(a, x[k]);
  });
}

}  // namespace graphserve
