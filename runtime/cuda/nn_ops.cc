#include "runtime/cuda/nn_ops.h"

#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/dtype.h"
#include "common/status.h"
#include "runtime/cuda/cudnn_conv.h"
#include "runtime/cuda/kernel_families.h"
#include "runtime/cuda/nn_kernels.h"
#include "runtime/nn_node_params.h"
#include "tensor_holder/weight_store.h"

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

// An elementwise activation over `count` elements of `dtype`.
struct ActivationLaunch {
  ActivationParams params;
  DType dtype = DType::kFloat32;
  int64_t count = 0;
};

// The pad value's bytes in the tensor's own type, as LaunchPad takes it.
uint64_t PadValueBits(DType dtype, float value) {
  uint64_t bits = 0;
  VisitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::Host;
    const T v = static_cast<T>(value);
    std::memcpy(&bits, &v, sizeof(v));
  });
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

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePool(const CudaKernelContext& context) {
  return MakePoolKernel(context, ConvLayout::kNCHW);
}

// A BatchNormalization import could not fold into a Conv: inputs x, scale,
// shift (binding turned the statistics into those two).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeBatchNorm(const CudaKernelContext& context) {
  return MakeLaunchKernel<ChannelEpilogueParams>(
      Label(context.node), ChannelEpilogueParamsOf(context.graph, context.node),
      [](const ChannelEpilogueParams& p, DeviceInputs in, DeviceOutputs out,
         cudaStream_t stream) {
        return LaunchChannelEpilogue(p, in[0], in[1], in[2], nullptr, out[0], stream);
      },
      "LaunchChannelEpilogue");
}

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePad(const CudaKernelContext& context) {
  const DType dtype = context.graph.value(context.node.inputs[0]).dtype;
  PadLaunch pad;
  pad.params = PadParamsOf(context.graph, context.node);
  pad.element_size = static_cast<int>(DTypeSize(dtype));
  pad.value_bits = PadValueBits(dtype, pad.params.value);
  return MakeLaunchKernel<PadLaunch>(
      Label(context.node), pad,
      [](const PadLaunch& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
        return LaunchPad(p.params, in[0], out[0], p.element_size, p.value_bits, stream);
      },
      "LaunchPad");
}

// Clip, HardSigmoid, HardSwish.
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeActivation(const CudaKernelContext& context) {
  const BoundValue& x = context.graph.value(context.node.inputs[0]);
  const ActivationLaunch activation{ActivationOf(context.node), x.dtype, NumElements(x.dims)};
  return MakeLaunchKernel<ActivationLaunch>(
      Label(context.node), activation,
      [](const ActivationLaunch& a, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
        return LaunchActivation(a.params, a.dtype, in[0], out[0], a.count, stream);
      },
      "LaunchActivation");
}

// A Conv with its bias, nothing fused after it (the executor's fusions build
// ConvKernels with more to do).
absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakeConv(const CudaKernelContext& context) {
  ConvFusion fusion;
  fusion.has_bias = context.node.inputs.size() > 2;
  return ConvKernel::Create(context, fusion);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaOpKernel>> MakePoolKernel(const CudaKernelContext& context,
                                                             ConvLayout layout) {
  const std::string& op = context.node.op_type;
  if (op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    GlobalPoolParams params = GlobalPoolParamsOf(context.graph, context.node);
    params.layout = layout;
    return MakeLaunchKernel<GlobalPoolParams>(
        Label(context.node), params,
        [](const GlobalPoolParams& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
          return LaunchGlobalPool(p, in[0], out[0], stream);
        },
        "LaunchGlobalPool");
  }
  PoolParams params = PoolParamsOf(context.graph, context.node);
  params.layout = layout;
  return MakeLaunchKernel<PoolParams>(
      Label(context.node), params,
      [](const PoolParams& p, DeviceInputs in, DeviceOutputs out, cudaStream_t stream) {
        return LaunchPool(p, in[0], out[0], stream);
      },
      "LaunchPool");
}

void AddNnCudaKernels(CudaKernelDefs& defs) {
  // cuDNN's data types and the pooling and epilogue kernels' (computed in
  // float, runtime/cuda/nn_kernels.h).
  const DTypeSet nn_types = DTypes({DType::kFloat32, DType::kFloat16, DType::kBFloat16});
  for (const char* op : {"AveragePool", "MaxPool"}) defs.push_back({op, nn_types, MakePool});
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    defs.push_back({op, nn_types, MakePool});
  }
  for (const char* op : {"Clip", "HardSigmoid", "HardSwish"}) {
    defs.push_back({op, nn_types, MakeActivation});
  }
  defs.push_back({"BatchNormalization", nn_types, MakeBatchNorm});
  defs.push_back({"Conv", nn_types, MakeConv});
  defs.push_back({"Pad", kAnyDType, MakePad});
}

absl::StatusOr<std::unique_ptr<ConvKernel>> ConvKernel::Create(const CudaKernelContext& context,
                                                               const ConvFusion& fusion) {
  ConvParams params = ConvParamsOf(context.graph, context.node);
  params.x_layout = fusion.x_layout;
  params.y_layout = fusion.y_layout;
  const void* channels_last_w = nullptr;
  if (ChannelsLastWeights(params)) {
    const BoundValue& w = context.graph.value(context.node.inputs[1]);
    if (!w.is_constant()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Label(context.node), ": a channels-last convolution needs a constant W"));
    }
    ASSIGN_OR_RETURN(channels_last_w,
                     context.weights->GetOrUpload(w.constant, WeightLayout::kChannelsLast));
  }
  ChannelEpilogueParams epilogue;
  epilogue.batch = params.batch;
  epilogue.channels = params.out_channels;
  epilogue.spatial = params.out_h * params.out_w;
  epilogue.activation = fusion.activation;
  epilogue.dtype = params.dtype;
  epilogue.layout = fusion.y_layout;
  epilogue.residual_layout = fusion.residual_layout;
  if (context.own_depthwise_convs && DepthwiseConvRuns(params) &&
      (!fusion.has_residual || fusion.residual_layout == ConvLayout::kNCHW)) {
    return std::make_unique<ConvKernel>(Label(context.node), "", params, nullptr, fusion, epilogue,
                                        channels_last_w, context.workspace,
                                        context.algorithm_choices);
  }
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
  return std::make_unique<ConvKernel>(Label(context.node), choice_key, params, std::move(cudnn),
                                      fusion, epilogue, channels_last_w, context.workspace,
                                      context.algorithm_choices);
}

ConvKernel::ConvKernel(std::string label, std::string choice_key, ConvParams params,
                       std::unique_ptr<CudnnConv> conv, ConvFusion fusion,
                       ChannelEpilogueParams epilogue, const void* channels_last_w,
                       std::shared_ptr<StepWorkspace> workspace,
                       std::shared_ptr<AlgorithmChoices> algorithm_choices)
    : label_(std::move(label)),
      choice_key_(std::move(choice_key)),
      params_(params),
      conv_(std::move(conv)),
      fusion_(fusion),
      epilogue_(epilogue),
      channels_last_w_(channels_last_w),
      workspace_(std::move(workspace)),
      algorithm_choices_(std::move(algorithm_choices)) {}

std::pair<const void*, size_t> ConvKernel::Weight(absl::Span<const void* const> inputs) const {
  if (channels_last_w_ != nullptr) return {channels_last_w_, 1};
  return {inputs[1], 2};
}

ConvKernel::~ConvKernel() = default;

absl::Status ConvKernel::Autotune(absl::Span<const void* const> inputs,
                                  absl::Span<void* const> outputs, cudaStream_t stream) {
  if (conv_ == nullptr) return absl::OkStatus();  // our own kernel: nothing to choose
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
        conv_->ChooseFastestAlgorithm(inputs[0], Weight(inputs).first, outputs[0], stream, options),
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
  void* y = outputs[0];
  auto [w, next] = Weight(inputs);
  if (conv_ == nullptr) {
    const void* bias = fusion_.has_bias ? inputs[next++] : nullptr;
    const void* residual = fusion_.has_residual ? inputs[next++] : nullptr;
    return LaunchStatus(
        LaunchDepthwiseConv(params_, fusion_.activation, inputs[0], w, bias, residual, y, stream),
        label_, "LaunchDepthwiseConv");
  }
  RETURN_IF_ERROR(
      AnnotateStatus(conv_->Enqueue(inputs[0], w, y, workspace_->get(), stream), label_));
  const bool epilogue =
      fusion_.has_bias || fusion_.has_residual || fusion_.activation.kind != Activation::kNone;
  if (!epilogue) return absl::OkStatus();
  const void* bias = fusion_.has_bias ? inputs[next++] : nullptr;
  const void* residual = fusion_.has_residual ? inputs[next++] : nullptr;
  return LaunchStatus(LaunchChannelEpilogue(epilogue_, y, nullptr, bias, residual, y, stream),
                      label_, "LaunchChannelEpilogue");
}

}  // namespace graphserve
