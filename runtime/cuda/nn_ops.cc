#include "runtime/cuda/nn_ops.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/nn_kernels.h"
#include "runtime/nn_node_params.h"

namespace graphserve {

namespace {

std::string Label(const BoundNode& node) {
  return absl::StrCat("op '", node.name, "' (", node.op_type, ")");
}

absl::Status LaunchStatus(cudaError_t error, const std::string& label, const char* call) {
  return CudaErrorToStatus(error, absl::StrCat(call, " for ", label));
}

using DeviceInputs = absl::Span<const void* const>;
using DeviceOutputs = absl::Span<void* const>;

const float* In(DeviceInputs inputs, size_t i) { return static_cast<const float*>(inputs[i]); }
float* Out(DeviceOutputs outputs) { return static_cast<float*>(outputs[0]); }

// One launch of an nn_kernels function configured by `params` at plan time;
// `call` names it in errors.
template <typename Params>
class LaunchKernel final : public CudaOpKernel {
 public:
  using Launch = cudaError_t (*)(const Params& params, DeviceInputs inputs, DeviceOutputs outputs,
                                 cudaStream_t stream);
  LaunchKernel(std::string label, const Params& params, Launch launch, const char* call)
      : label_(std::move(label)), params_(params), launch_(launch), call_(call) {}

  absl::Status Enqueue(DeviceInputs inputs, DeviceOutputs outputs,
                       cudaStream_t stream) const override {
    return LaunchStatus(launch_(params_, inputs, outputs, stream), label_, call_);
  }

 private:
  std::string label_;
  Params params_;
  Launch launch_;
  const char* call_;
};

template <typename Params>
std::unique_ptr<CudaOpKernel> MakeLaunchKernel(std::string label, const Params& params,
                                               typename LaunchKernel<Params>::Launch launch,
                                               const char* call) {
  return std::make_unique<LaunchKernel<Params>>(std::move(label), params, launch, call);
}

// Pad's plan-time parameters with the pad value's bytes.
struct PadLaunch {
  PadParams params;
  int element_size = 4;
  uint64_t value_bits = 0;
};

// An elementwise activation over `count` floats.
struct ActivationLaunch {
  ActivationParams params;
  int64_t count = 0;
};

// The pad value's bytes in the tensor's own type, as LaunchPad takes it.
uint64_t PadValueBits(DType dtype, float value) {
  uint64_t bits = 0;
  if (dtype == DType::kFloat32) {
    std::memcpy(&bits, &value, sizeof(value));
  } else if (dtype == DType::kInt64) {
    const int64_t v = static_cast<int64_t>(value);
    std::memcpy(&bits, &v, sizeof(v));
  } else {
    bits = value != 0.0f ? 1 : 0;
  }
  return bits;
}

// A convolution's plan depends on its sizes and precision alone, so it is
// keyed by them: ResNet's repeated blocks build and time each shape once per
// size, whatever the number of stream slots.
std::string ConvChoiceKey(const ConvParams& params, bool allow_tf32) {
  return absl::StrCat(ConvParamsToString(params), allow_tf32 ? " tf32" : "");
}

// The key of what the timings at each size of a convolution tell the others
// (Note [Convolution tuning budget]): its choice key without N.
std::string ConvSlowdownsKey(const ConvParams& params, bool allow_tf32) {
  ConvParams any_batch = params;
  any_batch.batch = 1;
  return absl::StrCat(ConvChoiceKey(any_batch, allow_tf32), " at any N");
}

// The plan another kernel recorded under `key`, or null.
std::shared_ptr<const CudnnConv::Plan> SharedPlan(const AlgorithmChoices* choices,
                                                  const std::string& key) {
  if (choices == nullptr) return nullptr;
  return std::static_pointer_cast<const CudnnConv::Plan>(choices->FindPlan(key));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeNnOpKernel(const BoundGraph& graph,
                                                             const BoundNode& node) {
  const std::string& op = node.op_type;
  std::string label = Label(node);
  if (op == "MaxPool" || op == "AveragePool") {
    return MakeLaunchKernel<PoolParams>(
        std::move(label), PoolParamsOf(graph, node),
        [](const PoolParams& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
          return LaunchPool(p, In(in, 0), Out(out), stream);
        },
        "LaunchPool");
  }
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    return MakeLaunchKernel<GlobalPoolParams>(
        std::move(label), GlobalPoolParamsOf(graph, node),
        [](const GlobalPoolParams& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
          return LaunchGlobalPool(p, In(in, 0), Out(out), stream);
        },
        "LaunchGlobalPool");
  }
  if (op == "BatchNormalization") {  // not folded: inputs x, scale, shift
    return MakeLaunchKernel<ChannelEpilogueParams>(
        std::move(label), ChannelEpilogueParamsOf(graph, node),
        [](const ChannelEpilogueParams& p, DeviceInputs in, DeviceOutputs out,
           cudaStream_t stream) {
          return LaunchChannelEpilogue(p, In(in, 0), In(in, 1), In(in, 2), nullptr, Out(out),
                                       stream);
        },
        "LaunchChannelEpilogue");
  }
  if (op == "Pad") {
    const DType dtype = graph.value(node.inputs[0]).dtype;
    PadLaunch pad;
    pad.params = PadParamsOf(graph, node);
    pad.element_size = static_cast<int>(DTypeSize(dtype));
    pad.value_bits = PadValueBits(dtype, pad.params.value);
    return MakeLaunchKernel<PadLaunch>(
        std::move(label), pad,
        [](const PadLaunch& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
          return LaunchPad(p.params, in[0], out[0], p.element_size, p.value_bits, stream);
        },
        "LaunchPad");
  }
  if (op == "Clip" || op == "HardSigmoid" || op == "HardSwish") {
    const ActivationLaunch activation{ActivationOf(node),
                                      NumElements(graph.value(node.inputs[0]).dims)};
    return MakeLaunchKernel<ActivationLaunch>(
        std::move(label), activation,
        [](const ActivationLaunch& a, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
          return LaunchActivation(a.params, In(in, 0), Out(out), a.count, stream);
        },
        "LaunchActivation");
  }
  return absl::UnimplementedError(absl::StrCat(label, ": no CUDA kernel in the nn family"));
}

absl::StatusOr<std::unique_ptr<ConvKernel>> ConvKernel::Create(const CudaKernelContext& context,
                                                               const ConvFusion& fusion) {
  const ConvParams params = ConvParamsOf(context.graph, context.node);
  const std::string choice_key = ConvChoiceKey(params, context.allow_tf32);
  const std::shared_ptr<const CudnnConv::Plan> shared =
      SharedPlan(context.algorithm_choices.get(), choice_key);
  std::unique_ptr<CudnnConv> cudnn;
  if (shared) {
    ASSIGN_OR_RETURN(cudnn,
                     CudnnConv::CreateWithPlan(context.cudnn, params, context.allow_tf32, shared));
  } else if (context.autotune) {
    // Autotune chooses the plan (or takes one another node of these sizes
    // chose meanwhile): the heuristic's plan would be built for nothing.
    ASSIGN_OR_RETURN(cudnn, CudnnConv::CreateUnplanned(context.cudnn, params, context.allow_tf32));
  } else {
    ASSIGN_OR_RETURN(cudnn, CudnnConv::Create(context.cudnn, params, context.allow_tf32));
  }
  context.workspace->Require(cudnn->workspace_bytes());
  ChannelEpilogueParams epilogue;
  epilogue.batch = params.batch;
  epilogue.channels = params.out_channels;
  epilogue.spatial = params.out_h * params.out_w;
  epilogue.activation = fusion.activation;
  return std::make_unique<ConvKernel>(Label(context.node), choice_key, std::move(cudnn), fusion,
                                      epilogue, context.workspace, context.algorithm_choices);
}

ConvKernel::ConvKernel(std::string label, std::string choice_key, std::unique_ptr<CudnnConv> conv,
                       ConvFusion fusion, ChannelEpilogueParams epilogue,
                       std::shared_ptr<StepWorkspace> workspace,
                       std::shared_ptr<AlgorithmChoices> algorithm_choices)
    : label_(std::move(label)),
      choice_key_(std::move(choice_key)),
      conv_(std::move(conv)),
      fusion_(fusion),
      epilogue_(epilogue),
      workspace_(std::move(workspace)),
      algorithm_choices_(std::move(algorithm_choices)) {}

ConvKernel::~ConvKernel() = default;

absl::Status ConvKernel::Autotune(absl::Span<const void* const> inputs,
                                  absl::Span<void* const> outputs, cudaStream_t stream) {
  const std::shared_ptr<const CudnnConv::Plan> shared =
      SharedPlan(algorithm_choices_.get(), choice_key_);
  if (shared) {
    // Another plan of these sizes chose it, usually before this one was
    // created with it.
    if (shared != conv_->plan()) RETURN_IF_ERROR(AnnotateStatus(conv_->UsePlan(shared), label_));
  } else {
    // The timings at this shape's other sizes prune this one's candidates,
    // and this one's are kept for the sizes still to come.
    const std::string slowdowns_key = ConvSlowdownsKey(conv_->params(), conv_->allow_tf32());
    ConvSlowdowns slowdowns;
    if (algorithm_choices_) slowdowns = algorithm_choices_->FindSlowdowns(slowdowns_key);
    CudnnConv::TuningOptions options;
    options.slowdowns = &slowdowns;
    RETURN_IF_ERROR(AnnotateStatus(
        conv_->ChooseFastestAlgorithm(static_cast<const float*>(inputs[0]),
                                      static_cast<const float*>(inputs[1]),
                                      static_cast<float*>(outputs[0]), stream, options),
        label_));
    if (algorithm_choices_) {
      algorithm_choices_->RecordPlan(choice_key_, conv_->plan());
      algorithm_choices_->RecordSlowdowns(slowdowns_key, std::move(slowdowns));
    }
  }
  workspace_->Require(conv_->workspace_bytes());
  return absl::OkStatus();
}

absl::Status ConvKernel::Enqueue(absl::Span<const void* const> inputs,
                                 absl::Span<void* const> outputs, cudaStream_t stream) const {
  float* y = static_cast<float*>(outputs[0]);
  RETURN_IF_ERROR(AnnotateStatus(
      conv_->Enqueue(static_cast<const float*>(inputs[0]), static_cast<const float*>(inputs[1]), y,
                     workspace_->get(), stream),
      label_));
  const bool epilogue =
      fusion_.has_bias || fusion_.has_residual || fusion_.activation.kind != Activation::kNone;
  if (!epilogue) return absl::OkStatus();
  size_t next = 2;
  const float* bias = fusion_.has_bias ? static_cast<const float*>(inputs[next++]) : nullptr;
  const float* residual =
      fusion_.has_residual ? static_cast<const float*>(inputs[next++]) : nullptr;
  return LaunchStatus(LaunchChannelEpilogue(epilogue_, y, nullptr, bias, residual, y, stream),
                      label_, "LaunchChannelEpilogue");
}

}  // namespace graphserve
