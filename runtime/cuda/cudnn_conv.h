#pragma once
// Forward 2-D convolution (float32, NCHW, groups, strides, dilations,
// symmetric pads) on cuDNN, as runtime/nn_params.h's ConvParams defines it.
// Bias, BatchNorm's affine, the residual add and the activation are not part
// of it: our own epilogue kernel (LaunchChannelEpilogue, nn_kernels.h) applies
// them after the convolution.
//
// Note [cuDNN legacy convolution API]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// We use cuDNN's legacy (v7-style) API - tensor, filter and convolution
// descriptors, cudnnFindConvolutionForwardAlgorithmEx, cudnnConvolutionForward -
// rather than the backend or the cudnn-frontend graph API, because:
//  * it ships in the toolkit's cudnn.h and libcudnn: no extra dependency (the
//    frontend is a separate header-only library we would have to vendor);
//  * each cudnnConvolutionForward call is capturable into a CUDA graph: given a
//    workspace from the caller it allocates nothing and does not synchronise,
//    so Enqueue() is a kernel launch or a few, like CublasLtGemm::Enqueue;
//  * cudnnFindConvolutionForwardAlgorithmEx chooses by timing the algorithms
//    on the real shapes, the same plan-time autotuning our GEMMs get;
//  * the only fusion we need (per-channel affine, residual, activation) is a
//    memory-bound pass that our own epilogue kernel does in one launch with
//    exactly the NaN semantics nn_params.h specifies, so the frontend's fusion
//    graphs would buy us nothing.
// cuDNN 9 marks this API deprecated (it warns only under
// CUDNN_WARN_DEPRECATED); moving to the backend API would change only
// cudnn_conv.cc.
//
// Precision. With allow_tf32 false the convolution descriptor asks for
// CUDNN_FMA_MATH (no tensor cores, no TF32), and only the algorithms that sum
// the products directly are candidates (implicit GEMM, precomputed implicit
// GEMM, explicit GEMM, direct): FFT and Winograd transform the input, which
// costs accuracy (relative errors near 1e-4) and smears a NaN or Inf input
// over a whole tile of outputs. The result is then float32 rounding of the
// exact sum, within a few ulps times the number of products, and NaN exactly
// where a window reads a NaN (or sums +Inf and -Inf products). With allow_tf32
// true every algorithm and math type is allowed (CUDNN_DEFAULT_MATH: TF32
// tensor cores on Ampere and later, relative error near 1e-3).

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/nn_params.h"

namespace graphserve {

// The largest workspace a convolution may use: algorithms that need more are
// never chosen. Plan time also allocates this much, at most, to time them.
inline constexpr size_t kConvMaxWorkspaceBytes = size_t{256} << 20;  // 256 MiB

// "Conv N=8 C=64 HxW=56x56 -> K=128 56x56 kernel 3x3 stride 1x1 dilation 1x1
// pad 1x1 groups 1", for error messages and reports.
std::string ConvParamsToString(const ConvParams& params);

// One convolution of fixed sizes, planned on one cuDNN handle (not owned; it
// must outlive this object). cuDNN handles are not thread safe and every call
// here sets the handle's stream: one thread at a time may use the handle and
// every CudnnConv planned on it.
class CudnnConv {
 public:
  // Validates the sizes (positive, groups dividing both channel counts, int32
  // range as cuDNN's 4-D descriptors need, out_h/out_w equal to what cuDNN
  // computes) and builds the descriptors; the initial algorithm is the first
  // usable one of cuDNN's heuristic (cudnnGetConvolutionForwardAlgorithm_v7).
  // Needs no device memory. Errors name the parameters and cuDNN's status.
  static absl::StatusOr<std::unique_ptr<CudnnConv>> Create(cudnnHandle_t handle,
                                                           const ConvParams& params,
                                                           bool allow_tf32);

  // The same with a choice another plan of these sizes made (UseChoice),
  // which skips cuDNN's heuristic query: a few milliseconds per convolution,
  // for each of a model's M stream slots and N sizes otherwise.
  struct Choice;
  static absl::StatusOr<std::unique_ptr<CudnnConv>> CreateWithChoice(cudnnHandle_t handle,
                                                                     const ConvParams& params,
                                                                     bool allow_tf32,
                                                                     const Choice& choice);

  // Bytes of workspace Enqueue needs with the current algorithm; may change
  // (either way) after ChooseFastestAlgorithm, so size workspaces after it.
  [[nodiscard]] size_t workspace_bytes() const { return workspace_bytes_; }

  // Times every candidate algorithm on these operands
  // (cudnnFindConvolutionForwardAlgorithmEx) and keeps the fastest whose
  // workspace is at most kConvMaxWorkspaceBytes, preferring deterministic ones.
  // Allocates its own temporary workspace, writes `y`, synchronises `stream`.
  // Plan time only: never while capturing. x, w and y are device buffers of
  // the params' sizes, ready in `stream` order.
  absl::Status ChooseFastestAlgorithm(const float* x, const float* w, float* y,
                                      cudaStream_t stream);

  // Enqueues y = conv(x, w) on `stream` (cudnnSetStream, then
  // cudnnConvolutionForward with alpha 1, beta 0: y's old contents are never
  // read). `workspace` holds at least workspace_bytes() device bytes (null
  // when that is 0). No allocation, no synchronisation: capturable into a CUDA
  // graph, on every call. Run it once outside capture first (plan time does),
  // so that lazily loaded kernels are loaded before a capture begins.
  absl::Status Enqueue(const float* x, const float* w, float* y, void* workspace,
                       cudaStream_t stream) const;

  // The current algorithm and math type, to replay a choice on another plan
  // of the same sizes (AlgorithmChoices) without timing again.
  struct Choice {
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    cudnnMathType_t math = CUDNN_FMA_MATH;
  };
  [[nodiscard]] Choice choice() const { return {algo_, math_}; }
  absl::Status UseChoice(const Choice& choice) { return UseAlgorithm(choice.algo, choice.math); }

  [[nodiscard]] const ConvParams& params() const { return params_; }
  [[nodiscard]] bool allow_tf32() const { return allow_tf32_; }
  // The chosen algorithm, e.g. "IMPLICIT_PRECOMP_GEMM", for reports.
  [[nodiscard]] const char* algorithm_name() const;

  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Implementation details follow.
  struct Descriptors;

 private:
  CudnnConv(cudnnHandle_t handle, const ConvParams& params, bool allow_tf32,
            std::unique_ptr<Descriptors> descriptors);

  static absl::StatusOr<std::unique_ptr<CudnnConv>> CreateUnplanned(cudnnHandle_t handle,
                                                                    const ConvParams& params,
                                                                    bool allow_tf32);

  // Makes `algo` with `math` current: sets the math type on the convolution
  // descriptor (cuDNN decides tensor-core use from it) and asks cuDNN for the
  // workspace it then needs.
  absl::Status UseAlgorithm(cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math);

  cudnnHandle_t handle_ = nullptr;  // not owned
  ConvParams params_;
  bool allow_tf32_ = false;
  std::unique_ptr<Descriptors> descriptors_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math_ = CUDNN_FMA_MATH;  // as UseAlgorithm was given it
  size_t workspace_bytes_ = 0;
};

}  // namespace graphserve
