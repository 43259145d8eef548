#include "runtime/cuda/cudnn_conv.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace {

struct TensorDescDeleter {
  void operator()(cudnnTensorDescriptor_t desc) const { cudnnDestroyTensorDescriptor(desc); }
};
struct FilterDescDeleter {
  void operator()(cudnnFilterDescriptor_t desc) const { cudnnDestroyFilterDescriptor(desc); }
};
struct ConvDescDeleter {
  void operator()(cudnnConvolutionDescriptor_t desc) const {
    cudnnDestroyConvolutionDescriptor(desc);
  }
};

using TensorDesc =
    std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>, TensorDescDeleter>;
using FilterDesc =
    std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>, FilterDescDeleter>;
using ConvDesc =
    std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>, ConvDescDeleter>;

absl::StatusOr<TensorDesc> MakeTensorDesc(int64_t n, int64_t c, int64_t h, int64_t w) {
  cudnnTensorDescriptor_t raw = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateTensorDescriptor(&raw));
  TensorDesc desc(raw);
  CUDNN_RETURN_IF_ERROR(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                                   static_cast<int>(n), static_cast<int>(c),
                                                   static_cast<int>(h), static_cast<int>(w)));
  return desc;
}

// The algorithms that compute each output as a plain sum of products; see
// Note [cuDNN legacy convolution API] on why only these run without TF32.
bool SumsProductsDirectly(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return true;
    default:
      return false;
  }
}

bool UsesTensorCores(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH || math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// A result of cudnnGetConvolutionForwardAlgorithm_v7 or
// cudnnFindConvolutionForwardAlgorithmEx this convolution may use.
bool IsUsable(const cudnnConvolutionFwdAlgoPerf_t& perf, bool allow_tf32, size_t max_workspace) {
  if (perf.status != CUDNN_STATUS_SUCCESS || perf.memory > max_workspace) return false;
  if (allow_tf32) return true;
  return SumsProductsDirectly(perf.algo) && !UsesTensorCores(perf.mathType);
}

// The first usable result (cuDNN sorts them best first), deterministic ones
// preferred.
std::optional<cudnnConvolutionFwdAlgoPerf_t> FirstUsable(
    const std::vector<cudnnConvolutionFwdAlgoPerf_t>& results, bool allow_tf32,
    size_t max_workspace) {
  std::optional<cudnnConvolutionFwdAlgoPerf_t> nondeterministic;
  for (const cudnnConvolutionFwdAlgoPerf_t& perf : results) {
    if (!IsUsable(perf, allow_tf32, max_workspace)) continue;
    if (perf.determinism == CUDNN_DETERMINISTIC) return perf;
    if (!nondeterministic) nondeterministic = perf;
  }
  return nondeterministic;
}

bool FitsInt32(int64_t value) { return value <= std::numeric_limits<int32_t>::max(); }

absl::Status Validate(const ConvParams& p) {
  const int64_t sizes[] = {p.batch,    p.in_channels, p.out_channels, p.groups,    p.in_h,
                           p.in_w,     p.out_h,       p.out_w,        p.kernel_h,  p.kernel_w,
                           p.stride_h, p.stride_w,    p.dilation_h,   p.dilation_w};
  for (const int64_t size : sizes) {
    if (size < 1) return absl::InvalidArgumentError("sizes, strides, dilations must be >= 1");
    if (!FitsInt32(size)) return absl::InvalidArgumentError("a size exceeds cuDNN's int range");
  }
  if (p.pad_h < 0 || p.pad_w < 0) return absl::InvalidArgumentError("pads must be >= 0");
  if (!FitsInt32(p.pad_h) || !FitsInt32(p.pad_w)) {
    return absl::InvalidArgumentError("a pad exceeds cuDNN's int range");
  }
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0) {
    return absl::InvalidArgumentError("groups must divide in_channels and out_channels");
  }
  // cuDNN's 4-D descriptors hold int strides: each tensor stays below 2^31
  // elements.
  if (!FitsInt32(p.batch * p.in_channels * p.in_h * p.in_w) ||
      !FitsInt32(p.batch * p.out_channels * p.out_h * p.out_w) ||
      !FitsInt32(p.out_channels * (p.in_channels / p.groups) * p.kernel_h * p.kernel_w)) {
    return absl::InvalidArgumentError("a tensor has 2^31 elements or more");
  }
  return absl::OkStatus();
}

const char* AlgorithmName(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_FWD_ALGO_COUNT:
      break;
  }
  return "UNKNOWN";
}

}  // namespace

std::string ConvParamsToString(const ConvParams& p) {
  return absl::StrCat("Conv N=", p.batch, " C=", p.in_channels, " HxW=", p.in_h, "x", p.in_w,
                      " -> K=", p.out_channels, " ", p.out_h, "x", p.out_w, " kernel ", p.kernel_h,
                      "x", p.kernel_w, " stride ", p.stride_h, "x", p.stride_w, " dilation ",
                      p.dilation_h, "x", p.dilation_w, " pad ", p.pad_h, "x", p.pad_w, " groups ",
                      p.groups);
}

struct CudnnConv::Descriptors {
  TensorDesc x;
  FilterDesc w;
  ConvDesc conv;
  TensorDesc y;
  // The math type the descriptor was created with, which cuDNN's algorithm
  // queries start from: CUDNN_FMA_MATH, or CUDNN_DEFAULT_MATH with TF32.
  cudnnMathType_t base_math = CUDNN_FMA_MATH;
};

namespace {

absl::StatusOr<std::unique_ptr<CudnnConv::Descriptors>> MakeDescriptors(const ConvParams& p,
                                                                        bool allow_tf32) {
  auto d = std::make_unique<CudnnConv::Descriptors>();
  ASSIGN_OR_RETURN(d->x, MakeTensorDesc(p.batch, p.in_channels, p.in_h, p.in_w));

  cudnnFilterDescriptor_t filter = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateFilterDescriptor(&filter));
  d->w.reset(filter);
  CUDNN_RETURN_IF_ERROR(cudnnSetFilter4dDescriptor(
      filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(p.out_channels),
      static_cast<int>(p.in_channels / p.groups), static_cast<int>(p.kernel_h),
      static_cast<int>(p.kernel_w)));

  cudnnConvolutionDescriptor_t conv = nullptr;
  CUDNN_RETURN_IF_ERROR(cudnnCreateConvolutionDescriptor(&conv));
  d->conv.reset(conv);
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolution2dDescriptor(
      conv, static_cast<int>(p.pad_h), static_cast<int>(p.pad_w), static_cast<int>(p.stride_h),
      static_cast<int>(p.stride_w), static_cast<int>(p.dilation_h), static_cast<int>(p.dilation_w),
      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionGroupCount(conv, static_cast<int>(p.groups)));
  d->base_math = allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(conv, d->base_math));

  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_RETURN_IF_ERROR(
      cudnnGetConvolution2dForwardOutputDim(conv, d->x.get(), filter, &n, &c, &h, &w));
  if (n != p.batch || c != p.out_channels || h != p.out_h || w != p.out_w) {
    return absl::InvalidArgumentError(absl::StrCat("cuDNN computes the output as ", n, "x", c, "x",
                                                   h, "x", w, ", the params say ", p.batch, "x",
                                                   p.out_channels, "x", p.out_h, "x", p.out_w));
  }
  ASSIGN_OR_RETURN(d->y, MakeTensorDesc(p.batch, p.out_channels, p.out_h, p.out_w));
  return d;
}

// Every forward algorithm cuDNN's heuristic knows for these descriptors, best
// first, with the workspace each needs and whether it can run at all.
absl::StatusOr<std::vector<cudnnConvolutionFwdAlgoPerf_t>> HeuristicResults(
    cudnnHandle_t handle, const CudnnConv::Descriptors& d) {
  int max_count = 0;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(max_count));
  int returned = 0;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
      handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), max_count, &returned, results.data()));
  results.resize(static_cast<size_t>(returned));
  return results;
}

// Mean time of one run of `algo` over kRetimeRuns back-to-back runs, after
// kRetimeWarmup untimed ones. Sets the descriptor's math type to `math`.
absl::StatusOr<float> MeanRunMs(cudnnHandle_t handle, const CudnnConv::Descriptors& d,
                                cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math,
                                const DeviceBuffer& workspace, const float* x, const float* w,
                                float* y, cudaStream_t stream) {
  constexpr int kRetimeWarmup = 2;
  constexpr int kRetimeRuns = 10;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.get(), math));
  ASSIGN_OR_RETURN(const CudaEvent start, CudaEvent::Create(/*timing=*/true));
  ASSIGN_OR_RETURN(const CudaEvent stop, CudaEvent::Create(/*timing=*/true));
  const float alpha = 1.0f;
  const float beta = 0.0f;
  auto run = [&]() {
    return cudnnConvolutionForward(handle, &alpha, d.x.get(), x, d.w.get(), w, d.conv.get(), algo,
                                   workspace.get(), workspace.bytes(), &beta, d.y.get(), y);
  };
  for (int i = 0; i < kRetimeWarmup; ++i) CUDNN_RETURN_IF_ERROR(run());
  CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < kRetimeRuns; ++i) CUDNN_RETURN_IF_ERROR(run());
  CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream));
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / kRetimeRuns;
}

// Find runs each algorithm once, so results within a few percent of each
// other are noise (measured on the H100: ResNet-50 ran slower kernels than
// PyTorch's cuDNN chose for the same convolutions). The usable results within
// 1.5x of the fastest, at most four, are timed again over several runs, and
// the fastest mean wins. The handle's stream is `stream`.
absl::StatusOr<cudnnConvolutionFwdAlgoPerf_t> RetimeClosest(
    cudnnHandle_t handle, const CudnnConv::Descriptors& d, bool allow_tf32,
    const std::vector<cudnnConvolutionFwdAlgoPerf_t>& timed,
    const cudnnConvolutionFwdAlgoPerf_t& fastest, const DeviceBuffer& workspace, const float* x,
    const float* w, float* y, cudaStream_t stream) {
  constexpr size_t kMaxRetimed = 4;
  std::vector<cudnnConvolutionFwdAlgoPerf_t> close;
  for (const cudnnConvolutionFwdAlgoPerf_t& perf : timed) {
    if (close.size() == kMaxRetimed) break;
    if (!IsUsable(perf, allow_tf32, workspace.bytes())) continue;
    if (perf.determinism != fastest.determinism) continue;
    if (perf.time > 1.5f * fastest.time) continue;
    close.push_back(perf);
  }
  if (close.size() < 2) return fastest;
  cudnnConvolutionFwdAlgoPerf_t best = fastest;
  float best_ms = std::numeric_limits<float>::infinity();
  for (const cudnnConvolutionFwdAlgoPerf_t& perf : close) {
    const cudnnMathType_t math = allow_tf32 ? perf.mathType : CUDNN_FMA_MATH;
    ASSIGN_OR_RETURN(const float ms,
                     MeanRunMs(handle, d, perf.algo, math, workspace, x, w, y, stream));
    if (ms < best_ms) {
      best_ms = ms;
      best = perf;
    }
  }
  return best;
}

// Times every algorithm on x, w and y (cudnnFindConvolutionForwardAlgorithmEx,
// which writes y) in a temporary workspace as large as the largest usable
// proposal needs, and returns the fastest usable one. Synchronises `stream`.
// Leaves the descriptor's math type at its base.
absl::StatusOr<cudnnConvolutionFwdAlgoPerf_t> TimeAlgorithms(
    cudnnHandle_t handle, const CudnnConv::Descriptors& d, bool allow_tf32,
    size_t current_workspace, const float* x, const float* w, float* y, cudaStream_t stream) {
  // The searches start from the descriptor's own math type, not the last
  // algorithm's.
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.get(), d.base_math));
  ASSIGN_OR_RETURN(const std::vector<cudnnConvolutionFwdAlgoPerf_t> proposals,
                   HeuristicResults(handle, d));
  size_t want = current_workspace;
  for (const cudnnConvolutionFwdAlgoPerf_t& perf : proposals) {
    if (IsUsable(perf, allow_tf32, kConvMaxWorkspaceBytes)) want = std::max(want, perf.memory);
  }
  absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate(want);
  if (!workspace.ok() && workspace.status().code() == absl::StatusCode::kResourceExhausted &&
      want > current_workspace) {
    // Time what fits in what the current algorithm needs rather than fail.
    workspace = DeviceBuffer::Allocate(current_workspace);
  }
  if (!workspace.ok()) return workspace.status();

  CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle, stream));
  int max_count = 0;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> timed(static_cast<size_t>(max_count));
  int returned = 0;
  const cudnnStatus_t found = cudnnFindConvolutionForwardAlgorithmEx(
      handle, d.x.get(), x, d.w.get(), w, d.conv.get(), d.y.get(), y, max_count, &returned,
      timed.data(), workspace->get(), workspace->bytes());
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  if (found != CUDNN_STATUS_SUCCESS) {
    return CudnnErrorToStatus(found, "cudnnFindConvolutionForwardAlgorithmEx");
  }
  timed.resize(static_cast<size_t>(returned));
  // Find sorts its results by time: the first usable one is the fastest.
  const std::optional<cudnnConvolutionFwdAlgoPerf_t> fastest =
      FirstUsable(timed, allow_tf32, workspace->bytes());
  if (!fastest) {
    return absl::InternalError(
        absl::StrCat("none of the ", returned, " algorithms cuDNN timed is usable"));
  }
  return RetimeClosest(handle, d, allow_tf32, timed, *fastest, *workspace, x, w, y, stream);
}

}  // namespace

CudnnConv::CudnnConv(cudnnHandle_t handle, const ConvParams& params, bool allow_tf32,
                     std::unique_ptr<Descriptors> descriptors)
    : handle_(handle),
      params_(params),
      allow_tf32_(allow_tf32),
      descriptors_(std::move(descriptors)) {}

CudnnConv::~CudnnConv() = default;

// Validated sizes and built descriptors on a handle, before any algorithm is
// chosen. Descriptors are host-side: sizes are checked before the handle is
// needed.
absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::CreateUnplanned(cudnnHandle_t handle,
                                                                      const ConvParams& params,
                                                                      bool allow_tf32) {
  const std::string context = ConvParamsToString(params);
  RETURN_IF_ERROR(AnnotateStatus(Validate(params), context));
  absl::StatusOr<std::unique_ptr<Descriptors>> descriptors = MakeDescriptors(params, allow_tf32);
  if (!descriptors.ok()) return AnnotateStatus(descriptors.status(), context);
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": no cuDNN handle"));
  }
  return std::unique_ptr<CudnnConv>(
      new CudnnConv(handle, params, allow_tf32, *std::move(descriptors)));
}

absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::Create(cudnnHandle_t handle,
                                                             const ConvParams& params,
                                                             bool allow_tf32) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CreateUnplanned(handle, params, allow_tf32));
  const std::string context = ConvParamsToString(params);
  const absl::StatusOr<std::vector<cudnnConvolutionFwdAlgoPerf_t>> results =
      HeuristicResults(handle, *conv->descriptors_);
  if (!results.ok()) return AnnotateStatus(results.status(), context);
  const std::optional<cudnnConvolutionFwdAlgoPerf_t> first =
      FirstUsable(*results, allow_tf32, kConvMaxWorkspaceBytes);
  if (!first) {
    return absl::UnimplementedError(absl::StrCat(
        context, ": cuDNN proposes no usable algorithm (", results->size(), " proposals",
        allow_tf32 ? "" : "; without TF32 only the GEMM-like algorithms qualify", ")"));
  }
  RETURN_IF_ERROR(AnnotateStatus(conv->UseAlgorithm(first->algo, first->mathType), context));
  return conv;
}

absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::CreateWithChoice(cudnnHandle_t handle,
                                                                       const ConvParams& params,
                                                                       bool allow_tf32,
                                                                       const Choice& choice) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CreateUnplanned(handle, params, allow_tf32));
  RETURN_IF_ERROR(AnnotateStatus(conv->UseChoice(choice), ConvParamsToString(params)));
  return conv;
}

absl::Status CudnnConv::UseAlgorithm(cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math) {
  Descriptors& d = *descriptors_;
  // Without TF32 the math type stays FMA whatever the result reported; with
  // it, cuDNN needs the result's own math type to pick the tensor-core kernel
  // it timed.
  const cudnnMathType_t use_math = allow_tf32_ ? math : CUDNN_FMA_MATH;
  CUDNN_RETURN_IF_ERROR(cudnnSetConvolutionMathType(d.conv.get(), use_math));
  size_t bytes = 0;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(
      handle_, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo, &bytes));
  algo_ = algo;
  math_ = math;
  workspace_bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status CudnnConv::ChooseFastestAlgorithm(const float* x, const float* w, float* y,
                                               cudaStream_t stream) {
  const std::string context = ConvParamsToString(params_);
  Descriptors& d = *descriptors_;
  cudnnMathType_t current_math = d.base_math;
  CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionMathType(d.conv.get(), &current_math));
  const absl::StatusOr<cudnnConvolutionFwdAlgoPerf_t> fastest =
      TimeAlgorithms(handle_, d, allow_tf32_, workspace_bytes_, x, w, y, stream);
  if (!fastest.ok()) {
    // Keep the plan as it was: the searches reset the math type.
    RETURN_IF_ERROR(AnnotateStatus(UseAlgorithm(algo_, current_math), context));
    return AnnotateStatus(fastest.status(), context);
  }
  return AnnotateStatus(UseAlgorithm(fastest->algo, fastest->mathType), context);
}

absl::Status CudnnConv::Enqueue(const float* x, const float* w, float* y, void* workspace,
                                cudaStream_t stream) const {
  if (workspace == nullptr && workspace_bytes_ > 0) {
    return absl::InvalidArgumentError(absl::StrCat(ConvParamsToString(params_), ": ",
                                                   algorithm_name(), " needs ", workspace_bytes_,
                                                   " workspace bytes, got none"));
  }
  const Descriptors& d = *descriptors_;
  const float alpha = 1.0f;
  const float beta = 0.0f;  // y is written, never read
  const char* call = "cudnnSetStream";
  cudnnStatus_t status = cudnnSetStream(handle_, stream);
  if (status == CUDNN_STATUS_SUCCESS) {
    call = "cudnnConvolutionForward";
    status = cudnnConvolutionForward(handle_, &alpha, d.x.get(), x, d.w.get(), w, d.conv.get(),
                                     algo_, workspace, workspace_bytes_, &beta, d.y.get(), y);
  }
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  // The message is built only on failure: Enqueue runs on the hot path.
  return AnnotateStatus(CudnnErrorToStatus(status, call),
                        absl::StrCat(ConvParamsToString(params_), " (", algorithm_name(), ")"));
}

const char* CudnnConv::algorithm_name() const { return AlgorithmName(algo_); }

}  // namespace graphserve
