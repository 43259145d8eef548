#pragma once
// Forward 2-D convolution (float32, float16 or bfloat16 data with float32
// accumulation, NCHW, groups, strides, dilations, symmetric pads) on cuDNN,
// as runtime/nn_params.h's ConvParams defines it.
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
//
// Half precision. With float16 or bfloat16 data (ConvParams::dtype) the
// operation graph's io type is that type and its intermediate and compute
// types are FLOAT: tensor-core engines are candidates whatever allow_tf32
// says, since a product of two 16-bit values is exact in their float32
// accumulator, and the result is the float32 sum rounded once to the data
// type. Engines with a 16-bit accumulator (REDUCED_PRECISION_REDUCTION) or
// narrower inputs (DOWN_CONVERT_INPUTS) never are; FFT and Winograd only
// with allow_tf32, which for 16-bit data means only that. Data of other
// types is InvalidArgument.
//
// Layouts. x and y each lie NCHW or NHWC (ConvParams::x_layout, y_layout;
// Note [Channels-last convolutions] in runtime/fusion.h), and w as
// [K, R, S, C/groups] when either is NHWC: the tensor strides of the
// operation graph say so, and cuDNN's engines read and write them as given
// (an engine that wants another layout transposes inside its own kernels).
//
// Note [Convolution tuning budget]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A model's set-up times each convolution shape once per captured size
// (AlgorithmChoices shares the plan with the other slots and nodes), and
// issue 9 wants 4 sizes x 2 streams of a CNN set up in under 5 s. For dense
// convolutions timing is cheap: the first kMaxTimedCandidates configurations
// run within a few times of each other (3-28 ms for all of them on the H100,
// conv_tuning_probe). Grouped ones are not: for depthwise shapes cuDNN also
// offers engines that run 10-100x slower than the best (engines that walk
// the groups one by one: their time grows with the groups and with N).
// Running them took 0.02-0.16 s per depthwise shape and size; algorithm
// choice took 3.7 s of MobileNetV2's 5.3 s set-up, and EfficientNet-B0's
// took 10 s (bench/results/2026-11-25_5f4a392_cudnn_frontend_h100). No
// candidate's run can be cut short once launched, so the budget comes from
// not running the hopeless ones, and from running them once, on few rows:
//  * first run: a candidate's first run (its kernels' first launch
//    included) is timed; one over kHopelessSlowdown times the fastest timed
//    run so far plus kFirstRunAllowanceMs is ruled out without a second.
//    The allowance covers a cold first launch: the first kernel of an
//    engine's module loads there, and on the H200 such first runs took up to
//    7.3 ms for kernels that then ran in 0.04-0.5 ms (conv_tuning_probe, the
//    process's first shape; bench/results/2026-11-26_9d94149_conv_setup).
//    With the 1 ms of that run, a fast engine first used in a grouped
//    shape's screening would have been judged on its load alone, for every
//    size. Runs under the allowance cost little to repeat anyway; the
//    engines that walk the groups take 6-27 ms on 4 rows of the larger
//    depthwise shapes;
//  * screening (grouped only): the first size of a grouped shape to be
//    timed, when it has more than one row, first runs every candidate once
//    at 1/kScreeningDivisor of its rows (the first rows of the same
//    buffers), which costs the slow engines about that fraction of a run at
//    full size;
//  * other sizes (grouped only): a configuration that ran at least
//    kHopelessSlowdown times slower than the fastest at every size of the
//    shape timed so far (screening included) is not run again; it still
//    takes its place among the first kMaxTimedCandidates, so that skipping
//    it brings in no new, untried one. A configuration never timed is timed.
//    The sizes' timings are kept by AlgorithmChoices under a key without N.
// The least slowdown seen is what counts, so a grouped configuration close
// to the fastest at any size is timed at every other. Dense convolutions
// keep full timing at every size: which configuration wins changes with N
// (eng70's tile knob k2=12 at N=1, k2=2 at N=8 for ResNet's 3x3 64@56), and
// a tile far too large for N=1 may be the best at N=32, so one size's
// timings say little about another's; and their timing is cheap. Finally,
// round two (the mean of kRetimeRuns runs) only runs when more than one
// candidate is within kCloseFactor of the fastest: with one, it has nothing
// to decide.

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

// The tuning budget's rule (Note [Convolution tuning budget]).
// Round two re-times the candidates within kCloseFactor of the fastest of
// round one, at most kMaxRetimed of them, over kRetimeRuns runs each.
inline constexpr float kCloseFactor = 1.5f;
inline constexpr int kMaxRetimed = 4;
inline constexpr int kRetimeRuns = 10;
// A candidate this many times slower than the fastest is never chosen, and
// not run again (the depthwise engines that walk the groups one by one run
// 10-100x slower than the best).
inline constexpr float kHopelessSlowdown = 8.0f;
// What a first run may spend on one-time costs (a cold kernel load: up to
// 7.3 ms on the H200) before the first-run rule judges it.
inline constexpr float kFirstRunAllowanceMs = 10.0f;
// Screening runs a grouped convolution at 1/kScreeningDivisor of its rows.
inline constexpr int64_t kScreeningDivisor = 8;

// How many times slower than the fastest candidate of its size each engine
// configuration ran (by cuDNN's name of it), the least over the sizes of one
// shape timed so far.
using ConvSlowdowns = std::map<std::string, float>;

// Whether a candidate whose first run took `first_run_ms` is ruled out
// without a timed run, `best_ms` being the fastest timed run so far (none:
// infinity).
bool RuledOutByFirstRun(float first_run_ms, float best_ms);

// The batch at which `params` screen their candidates first, or 0 for none:
// grouped convolutions of more than one row with no timings at other sizes.
int64_t ScreeningBatch(const ConvParams& params, const ConvSlowdowns& other_sizes);

// Whether the timings at other sizes leave the configuration `name` of
// `params` untimed.
bool RuledOutByOtherSizes(const ConvParams& params, const ConvSlowdowns& other_sizes,
                          const std::string& name);

// Round two's candidates: of round one's times `sorted_ms` (fastest first),
// how many to time again (the first ones within kCloseFactor of the fastest,
// at most kMaxRetimed); 0 when only the fastest is close: it is chosen as is.
size_t CandidatesToRetime(const std::vector<float>& sorted_ms);

// Adds `measured` to `slowdowns`, each configuration keeping the least.
void MergeSlowdowns(const ConvSlowdowns& measured, ConvSlowdowns& slowdowns);

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
  // element counts, out_h/out_w equal to the convolution's own), the dtype
  // and the layout (Half precision above), builds the operation graph and
  // takes the first buildable engine configuration of cuDNN's heuristics
  // (mode A, then the fallback list) that the precision rules allow (Note
  // [cuDNN graph API convolution]). Needs no device memory.
  // Errors name the parameters and cuDNN's message.
  static absl::StatusOr<std::unique_ptr<CudnnConv>> Create(cudnnHandle_t handle,
                                                           const ConvParams& params,
                                                           bool allow_tf32);

  // Validates as Create does but queries and builds nothing: the plan comes
  // from ChooseFastestAlgorithm or UsePlan, and until then workspace_bytes()
  // is 0 and Enqueue fails. For callers that time anyway, where Create's
  // heuristics query and build would be thrown away (MobileNetV2's 0.9 s of
  // kernel planning at 4 sizes on the H100).
  static absl::StatusOr<std::unique_ptr<CudnnConv>> CreateUnplanned(cudnnHandle_t handle,
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

  // One candidate's times in ChooseFastestAlgorithm, for reports.
  struct CandidateTiming {
    std::string name;         // cuDNN's name of the configuration
    int64_t batch = 0;        // the rows it ran on (the screening batch or the params')
    float first_run_ms = -1;  // its first run, kernels' first launch included; -1: not run
    float run_ms = -1;        // round one's timed run; -1: ruled out by its first run
    float retimed_ms = -1;    // round two's mean; -1: not re-timed
    bool failed = false;      // it did not run here
  };
  // Where ChooseFastestAlgorithm's time went.
  struct TuningStats {
    double heuristics_ms = 0;     // operation graphs and heuristics queries
    double build_ms = 0;          // building the candidates' plans
    double screening_ms = 0;      // running them at the screening batch
    double timing_ms = 0;         // running them at the params' batch (both rounds)
    int proposed = 0;             // configurations the heuristics offered
    int built = 0;                // of which built and timed at the params' batch
    int skipped = 0;              // of the first kMaxTimedCandidates, left out by other sizes
    int64_t screening_batch = 0;  // 0: no screening
    int first_run_outs = 0;       // ruled out by their first run (screening included)
    int retimed = 0;              // timed again in round two
    std::vector<CandidateTiming> candidates;  // screening's, then the params' batch's
  };
  struct TuningOptions {
    // The budget rules of Note [Convolution tuning budget]; off, every one
    // of the first kMaxTimedCandidates is run twice and no timings of other
    // sizes are read (conv_tuning_probe's reference).
    bool budget = true;
    // The timings of these params at other batch sizes (null: none kept):
    // read to leave hopeless configurations out, and this call's merged in.
    ConvSlowdowns* slowdowns = nullptr;
    // Receives where the time went (null: not reported).
    TuningStats* stats = nullptr;
  };

  // Builds the first kMaxTimedCandidates allowed configurations of the
  // heuristics' list whose workspace is at most kConvMaxWorkspaceBytes, times
  // those the budget leaves (round one: one run each; round two: the mean of
  // kRetimeRuns runs of those close to the fastest) and keeps the fastest
  // (Note [Convolution tuning budget]). Allocates its own temporary
  // workspace, writes `y`, synchronises `stream`. Plan time only: never while
  // capturing. x, w and y are device buffers of the params' sizes and
  // dtype, ready in `stream` order.
  absl::Status ChooseFastestAlgorithm(const void* x, const void* w, void* y, cudaStream_t stream,
                                      const TuningOptions& options);
  absl::Status ChooseFastestAlgorithm(const void* x, const void* w, void* y,
                                      cudaStream_t stream) {
    return ChooseFastestAlgorithm(x, w, y, stream, TuningOptions{});
  }

  // Enqueues y = conv(x, w) on `stream` (y's old contents are never read).
  // `workspace` holds at least workspace_bytes() device bytes (null when that
  // is 0). No allocation, no synchronisation: capturable into a CUDA graph, on
  // every call. Run it once outside capture first (plan time does), so that
  // lazily loaded kernels are loaded before a capture begins.
  // FailedPrecondition before a plan is chosen (CreateUnplanned).
  absl::Status Enqueue(const void* x, const void* w, void* y, void* workspace,
                       cudaStream_t stream) const;

  // The current plan, to share with other CudnnConv of these sizes
  // (AlgorithmChoices::RecordPlan), and its engine configuration as cuDNN
  // names it (engine and knob values, "eng28_k2=2_k3=0_...") for reports.
  [[nodiscard]] const std::shared_ptr<const Plan>& plan() const { return plan_; }
  [[nodiscard]] const std::string& choice() const;
  // Makes `plan` (of these sizes and precision) current. InvalidArgument for
  // a plan built for another dtype or layout.
  absl::Status UsePlan(std::shared_ptr<const Plan> plan);

  [[nodiscard]] const ConvParams& params() const { return params_; }
  [[nodiscard]] bool allow_tf32() const { return allow_tf32_; }

  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Implementation details follow.

 private:
  CudnnConv(cudnnHandle_t handle, const ConvParams& params, bool allow_tf32);

  // Makes `plan`, with its candidate `index` (built) chosen, current.
  absl::Status Adopt(std::unique_ptr<Plan> plan, int64_t index);

  cudnnHandle_t handle_ = nullptr;  // not owned
  ConvParams params_;
  bool allow_tf32_ = false;
  std::shared_ptr<const Plan> plan_;  // what Enqueue executes
  size_t workspace_bytes_ = 0;
};

}  // namespace graphserve
