#pragma once
// Forward 2-D convolution (float32, NCHW, groups, strides, dilations,
// symmetric pads) on cuDNN, as runtime/nn_params.h's ConvParams defines it.
// Bias, BatchNorm's affine, the residual add and the activation are not part
// of it: our own epilogue kernel (LaunchChannelEpilogue, nn_kernels.h) applies
// them after the convolution.
//
// Note [cuDNN graph API convolution]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// We build each convolution as a one-node graph of cuDNN's C++ frontend
// (cudnn_frontend::graph, over the backend API), not with the legacy
// cudnnConvolutionForward API, because:
//  * the legacy API chooses among eight algorithm families, and cuDNN 9 maps
//    each to one older engine: on the H100 our ResNet-50 ran
//    implicit_convolve_sgemm kernels where PyTorch (which uses the graph API)
//    runs sm80_xmma_fprop_implicit_gemm ones for 43 of its 53 convolutions,
//    1.30x slower at batch 1. The graph API's heuristics offer every engine
//    and knob setting cuDNN has for the shape;
//  * an engine configuration (engine and knob values) is named, so it can be
//    recorded and rebuilt on another handle without timing: the M stream
//    slots and the nodes of equal shape reuse one timing (choice());
//  * each execute is capturable into a CUDA graph: given a workspace from the
//    caller (the plan's workspace size, queried at plan time) it allocates no
//    device memory and does not synchronise; it only patches a variant pack
//    on the host and launches the plan's kernels on the handle's stream.
// The frontend's own fusion (bias, activation) is not used: our epilogue does
// it in one memory-bound pass with the NaN semantics of nn_params.h, and
// runtime-fused float32 engines without tensor cores do not exist.
//
// Precision. With allow_tf32 false only engines without the TENSOR_CORE,
// DOWN_CONVERT_INPUTS and REDUCED_PRECISION_REDUCTION numerical notes are
// candidates (no TF32), and never FFT or Winograd ones: they transform the
// input, which costs accuracy (relative errors near 1e-4) and smears a NaN or
// Inf input over a whole tile of outputs. The result is then float32 rounding
// of the exact sum, within a few ulps times the number of products, and NaN
// exactly where a window reads a NaN (or sums +Inf and -Inf products). With
// allow_tf32 true TF32 tensor-core engines (relative error near 1e-3), FFT and
// Winograd are candidates too. Nondeterministic engines never are: a graph's
// replay must be bit-identical to its eager run.

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/nn_params.h"

namespace graphserve {

// The largest workspace a convolution may use: algorithms that need more are
// never chosen. Plan time also allocates this much, at most, to time them.
inline constexpr size_t kConvMaxWorkspaceBytes = size_t{256} << 20;  // 256 MiB

// How many of the heuristics' configurations ChooseFastestAlgorithm builds and
// times. cuDNN ranks its best guesses first; each one timed costs plan time
// for every distinct convolution shape of every captured size.
inline constexpr int kMaxTimedCandidates = 8;

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
  // element counts, out_h/out_w equal to the convolution's own), builds the
  // operation graph and takes the first buildable engine configuration of
  // cuDNN's heuristics (mode A, then the fallback list) that the precision
  // rules allow (Note [cuDNN graph API convolution]). Needs no device memory.
  // Errors name the parameters and cuDNN's message.
  static absl::StatusOr<std::unique_ptr<CudnnConv>> Create(cudnnHandle_t handle,
                                                           const ConvParams& params,
                                                           bool allow_tf32);

  // A built plan of these sizes (immutable, so any number of CudnnConv on
  // any handle of the same device may execute it at once, as cuDNN's graph
  // plans allow), with its chosen engine configuration.
  struct Plan;

  // The same on a plan another CudnnConv of these sizes built and chose
  // (its plan()): no heuristics query, no build, no timing. Each of a model's
  // M stream slots and each node of these sizes would do all three otherwise.
  static absl::StatusOr<std::unique_ptr<CudnnConv>> CreateWithPlan(
      cudnnHandle_t handle, const ConvParams& params, bool allow_tf32,
      std::shared_ptr<const Plan> plan);

  // Bytes of workspace Enqueue needs with the current plan; may change
  // (either way) after ChooseFastestAlgorithm, so size workspaces after it.
  [[nodiscard]] size_t workspace_bytes() const { return workspace_bytes_; }

  // Builds the first kMaxTimedCandidates allowed configurations of the
  // heuristics' list whose workspace is at most kConvMaxWorkspaceBytes, times
  // each on these operands (one run each, then the mean of several runs for
  // those close to the fastest) and keeps the fastest. Allocates its own temporary workspace, writes `y`,
  // synchronises `stream`. Plan time only: never while capturing. x, w and y
  // are device buffers of the params' sizes, ready in `stream` order.
  // `stats`, when given, receives where the time went.
  struct TuningStats {
    double heuristics_ms = 0;  // operation graph and heuristics query
    double build_ms = 0;       // building the candidates' plans
    double timing_ms = 0;      // running them (warm-up and timed runs)
    int proposed = 0;          // configurations the heuristics offered
    int built = 0;             // of which built and timed
  };
  absl::Status ChooseFastestAlgorithm(const float* x, const float* w, float* y,
                                      cudaStream_t stream, TuningStats* stats = nullptr);

  // Enqueues y = conv(x, w) on `stream` (y's old contents are never read).
  // `workspace` holds at least workspace_bytes() device bytes (null when that
  // is 0). No allocation, no synchronisation: capturable into a CUDA graph, on
  // every call. Run it once outside capture first (plan time does), so that
  // lazily loaded kernels are loaded before a capture begins.
  absl::Status Enqueue(const float* x, const float* w, float* y, void* workspace,
                       cudaStream_t stream) const;

  // The current plan, to share with other CudnnConv of these sizes
  // (AlgorithmChoices::RecordPlan), and its engine configuration as cuDNN
  // names it (engine and knob values, "eng28_k2=2_k3=0_...") for reports.
  [[nodiscard]] const std::shared_ptr<const Plan>& plan() const { return plan_; }
  [[nodiscard]] const std::string& choice() const;
  // Makes `plan` (of these sizes and precision) current.
  absl::Status UsePlan(std::shared_ptr<const Plan> plan);

  [[nodiscard]] const ConvParams& params() const { return params_; }
  [[nodiscard]] bool allow_tf32() const { return allow_tf32_; }

  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Implementation details follow.

 private:
  CudnnConv(cudnnHandle_t handle, const ConvParams& params, bool allow_tf32);

  static absl::StatusOr<std::unique_ptr<CudnnConv>> CreateUnplanned(cudnnHandle_t handle,
                                                                    const ConvParams& params,
                                                                    bool allow_tf32);

  // Makes `plan`, with its candidate `index` (built) chosen, current.
  absl::Status Adopt(std::unique_ptr<Plan> plan, int64_t index);

  cudnnHandle_t handle_ = nullptr;  // not owned
  ConvParams params_;
  bool allow_tf32_ = false;
  std::shared_ptr<const Plan> plan_;  // what Enqueue executes
  size_t workspace_bytes_ = 0;
};

}  // namespace graphserve
