#include "runtime/cuda/cudnn_conv.h"

#include <cudnn_frontend.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"

namespace graphserve {

namespace fe = cudnn_frontend;

namespace {

// The graph's tensors, by the uids the variant pack names them with.
constexpr int64_t kXUid = 1;
constexpr int64_t kWUid = 2;
constexpr int64_t kYUid = 3;

absl::Status FrontendStatus(fe::error_t error, absl::string_view call) {
  if (error.is_good()) return absl::OkStatus();
  const std::string message = absl::StrCat(call, ": ", error.get_message());
  if (error.get_code() == fe::error_code_t::GRAPH_NOT_SUPPORTED ||
      error.get_code() == fe::error_code_t::GRAPH_EXECUTION_PLAN_CREATION_FAILED) {
    return absl::UnimplementedError(message);
  }
  return absl::InternalError(message);
}

#define FE_RETURN_IF_ERROR(call) RETURN_IF_ERROR(FrontendStatus((call), #call))

bool FitsInt32(int64_t value) { return value <= std::numeric_limits<int32_t>::max(); }

int64_t OutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

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
  // cuDNN's implicit-GEMM engines index with int32: each tensor stays below
  // 2^31 elements.
  if (!FitsInt32(p.batch * p.in_channels * p.in_h * p.in_w) ||
      !FitsInt32(p.batch * p.out_channels * p.out_h * p.out_w) ||
      !FitsInt32(p.out_channels * (p.in_channels / p.groups) * p.kernel_h * p.kernel_w)) {
    return absl::InvalidArgumentError("a tensor has 2^31 elements or more");
  }
  const int64_t out_h = OutSize(p.in_h, p.kernel_h, p.stride_h, p.dilation_h, p.pad_h);
  const int64_t out_w = OutSize(p.in_w, p.kernel_w, p.stride_w, p.dilation_w, p.pad_w);
  if (out_h != p.out_h || out_w != p.out_w) {
    return absl::InvalidArgumentError(absl::StrCat("the convolution computes the output as ",
                                                   p.batch, "x", p.out_channels, "x", out_h, "x",
                                                   out_w, ", the params say ", p.batch, "x",
                                                   p.out_channels, "x", p.out_h, "x", p.out_w));
  }
  return absl::OkStatus();
}

// Dense NCHW strides of a tensor of `dims`.
std::vector<int64_t> PackedStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// The numerical notes that rule an engine out; see Note [cuDNN graph API
// convolution].
std::vector<fe::NumericalNote_t> BarredNotes(bool allow_tf32) {
  std::vector<fe::NumericalNote_t> notes = {fe::NumericalNote_t::NONDETERMINISTIC};
  if (!allow_tf32) {
    for (const fe::NumericalNote_t note :
         {fe::NumericalNote_t::TENSOR_CORE, fe::NumericalNote_t::DOWN_CONVERT_INPUTS,
          fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION, fe::NumericalNote_t::FFT,
          fe::NumericalNote_t::WINOGRAD, fe::NumericalNote_t::WINOGRAD_TILE_4x4,
          fe::NumericalNote_t::WINOGRAD_TILE_6x6, fe::NumericalNote_t::WINOGRAD_TILE_13x13}) {
      notes.push_back(note);
    }
  }
  return notes;
}

// Mean time of one execute of plan `index` over `runs` back-to-back runs,
// after `warmup` untimed ones. The handle's stream is `stream`.
absl::StatusOr<float> MeanRunMs(cudnnHandle_t handle, const fe::graph::Graph& graph,
                                int64_t index, std::unordered_map<int64_t, void*>& pointers,
                                void* workspace, cudaStream_t stream, int warmup, int runs) {
  ASSIGN_OR_RETURN(const CudaEvent start, CudaEvent::Create(/*timing=*/true));
  ASSIGN_OR_RETURN(const CudaEvent stop, CudaEvent::Create(/*timing=*/true));
  for (int i = 0; i < warmup; ++i) {
    FE_RETURN_IF_ERROR(graph.execute_plan_at_index(handle, pointers, workspace, index));
  }
  CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < runs; ++i) {
    FE_RETURN_IF_ERROR(graph.execute_plan_at_index(handle, pointers, workspace, index));
  }
  CUDA_RETURN_IF_ERROR(cudaEventRecord(stop.get(), stream));
  CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop.get()));
  float ms = 0;
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms / runs;
}

// A candidate and its time.
struct Timed {
  int64_t index = -1;
  float ms = 0;
};

}  // namespace

std::string ConvParamsToString(const ConvParams& p) {
  return absl::StrCat("Conv N=", p.batch, " C=", p.in_channels, " HxW=", p.in_h, "x", p.in_w,
                      " -> K=", p.out_channels, " ", p.out_h, "x", p.out_w, " kernel ", p.kernel_h,
                      "x", p.kernel_w, " stride ", p.stride_h, "x", p.stride_w, " dilation ",
                      p.dilation_h, "x", p.dilation_w, " pad ", p.pad_h, "x", p.pad_w, " groups ",
                      p.groups);
}

// The convolution as a one-node graph of the frontend, with the engine
// configurations the heuristics offer, some built, and the chosen one.
struct CudnnConv::Plan {
  fe::graph::Graph graph;
  int64_t index = -1;  // of the chosen configuration
  std::string name;    // cuDNN's name of it
  size_t workspace_bytes = 0;
};

namespace {

// The operation graph of `p`: x (uid 1) and w (uid 2) in, y (uid 3) out,
// float32 NCHW, float32 accumulation.
absl::StatusOr<std::unique_ptr<CudnnConv::Plan>> MakeOperationGraph(cudnnHandle_t handle,
                                                                    const ConvParams& p) {
  auto plan = std::make_unique<CudnnConv::Plan>();
  fe::graph::Graph& graph = plan->graph;
  graph.set_io_data_type(fe::DataType_t::FLOAT)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&graph](const char* name, int64_t uid, std::vector<int64_t> dims) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim(dims)
                            .set_stride(PackedStrides(dims))
                            .set_data_type(fe::DataType_t::FLOAT));
  };
  const auto x = tensor("x", kXUid, {p.batch, p.in_channels, p.in_h, p.in_w});
  const auto w =
      tensor("w", kWUid, {p.out_channels, p.in_channels / p.groups, p.kernel_h, p.kernel_w});
  const auto y = graph.conv_fprop(x, w,
                                  fe::graph::Conv_fprop_attributes()
                                      .set_name("conv")
                                      .set_padding({p.pad_h, p.pad_w})
                                      .set_stride({p.stride_h, p.stride_w})
                                      .set_dilation({p.dilation_h, p.dilation_w})
                                      .set_compute_data_type(fe::DataType_t::FLOAT));
  const std::vector<int64_t> y_dims = {p.batch, p.out_channels, p.out_h, p.out_w};
  y->set_output(true)
      .set_uid(kYUid)
      .set_dim(y_dims)
      .set_stride(PackedStrides(y_dims))
      .set_data_type(fe::DataType_t::FLOAT);
  FE_RETURN_IF_ERROR(graph.validate());
  FE_RETURN_IF_ERROR(graph.build_operation_graph(handle));
  return plan;
}

// Adds the heuristics' configurations (mode A, then the fallback list) and
// bars those the precision rules, the workspace limit or run-time
// compilation exclude.
absl::Status QueryHeuristics(fe::graph::Graph& graph, bool allow_tf32) {
  FE_RETURN_IF_ERROR(graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
  graph.deselect_numeric_notes(BarredNotes(allow_tf32));
  // Runtime-compiled engines compile with NVRTC when built, hundreds of
  // milliseconds each, for every shape and size: on the H100 they took
  // MobileNetV2's set-up (4 sizes x 2 streams) from 2.5 s to 36 s.
  graph.deselect_behavior_notes({fe::BehaviorNote_t::RUNTIME_COMPILATION});
  graph.deselect_workspace_greater_than(static_cast<int64_t>(kConvMaxWorkspaceBytes));
  return absl::OkStatus();
}

std::string NameAt(const fe::graph::Graph& graph, int64_t index) {
  std::string name;
  if (graph.get_plan_name_at_index(index, name).is_bad()) return {};
  return name;
}

// Builds configurations in the heuristics' order until `limit` distinct ones
// built; returns their indices. Configurations that fail to build (barred,
// unsupported on this device) are skipped.
std::vector<int64_t> BuildFirst(fe::graph::Graph& graph, int limit) {
  std::vector<int64_t> built;
  std::vector<std::string> seen;  // mode A and the fallback list overlap
  for (int64_t i = 0; i < graph.get_execution_plan_count() && built.size() < size_t(limit); ++i) {
    std::string name = NameAt(graph, i);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    if (graph.build_plan_at_index(i).is_bad()) continue;
    seen.push_back(std::move(name));
    built.push_back(i);
  }
  return built;
}

}  // namespace

CudnnConv::CudnnConv(cudnnHandle_t handle, const ConvParams& params, bool allow_tf32)
    : handle_(handle), params_(params), allow_tf32_(allow_tf32) {}

CudnnConv::~CudnnConv() = default;

absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::CreateUnplanned(cudnnHandle_t handle,
                                                                      const ConvParams& params,
                                                                      bool allow_tf32) {
  const std::string context = ConvParamsToString(params);
  RETURN_IF_ERROR(AnnotateStatus(Validate(params), context));
  if (handle == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": no cuDNN handle"));
  }
  return std::unique_ptr<CudnnConv>(new CudnnConv(handle, params, allow_tf32));
}

absl::Status CudnnConv::Adopt(std::unique_ptr<Plan> plan, int64_t index) {
  int64_t workspace = 0;
  FE_RETURN_IF_ERROR(plan->graph.get_workspace_size_plan_at_index(index, workspace));
  FE_RETURN_IF_ERROR(plan->graph.get_plan_name_at_index(index, plan->name));
  plan->index = index;
  plan->workspace_bytes = static_cast<size_t>(workspace);
  return UsePlan(std::move(plan));
}

absl::Status CudnnConv::UsePlan(std::shared_ptr<const Plan> plan) {
  if (plan == nullptr || plan->index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ConvParamsToString(params_), ": no chosen plan to use"));
  }
  workspace_bytes_ = plan->workspace_bytes;
  plan_ = std::move(plan);
  return absl::OkStatus();
}

const std::string& CudnnConv::choice() const {
  static const std::string kNone = "(none)";
  return plan_ ? plan_->name : kNone;
}

absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::Create(cudnnHandle_t handle,
                                                             const ConvParams& params,
                                                             bool allow_tf32) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CreateUnplanned(handle, params, allow_tf32));
  const std::string context = ConvParamsToString(params);
  absl::StatusOr<std::unique_ptr<Plan>> plan = MakeOperationGraph(handle, params);
  if (!plan.ok()) return AnnotateStatus(plan.status(), context);
  RETURN_IF_ERROR(AnnotateStatus(QueryHeuristics((*plan)->graph, allow_tf32), context));
  const std::vector<int64_t> built = BuildFirst((*plan)->graph, /*limit=*/1);
  if (built.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        context, ": cuDNN offers no buildable engine configuration (",
        (*plan)->graph.get_execution_plan_count(), " proposed",
        allow_tf32 ? "" : "; without TF32, FFT, Winograd and tensor-core engines are barred",
        ")"));
  }
  RETURN_IF_ERROR(AnnotateStatus(conv->Adopt(*std::move(plan), built[0]), context));
  return conv;
}

absl::StatusOr<std::unique_ptr<CudnnConv>> CudnnConv::CreateWithPlan(
    cudnnHandle_t handle, const ConvParams& params, bool allow_tf32,
    std::shared_ptr<const Plan> plan) {
  ASSIGN_OR_RETURN(std::unique_ptr<CudnnConv> conv, CreateUnplanned(handle, params, allow_tf32));
  RETURN_IF_ERROR(conv->UsePlan(std::move(plan)));
  return conv;
}

absl::Status CudnnConv::ChooseFastestAlgorithm(const float* x, const float* w, float* y,
                                               cudaStream_t stream, TuningStats* stats) {
  const std::string context = ConvParamsToString(params_);
  TuningStats local;
  TuningStats& tally = stats != nullptr ? *stats : local;
  tally = TuningStats{};
  auto clock = std::chrono::steady_clock::now();
  const auto lap = [&clock]() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - clock).count();
    clock = now;
    return ms;
  };
  absl::StatusOr<std::unique_ptr<Plan>> plan = MakeOperationGraph(handle_, params_);
  if (!plan.ok()) return AnnotateStatus(plan.status(), context);
  fe::graph::Graph& graph = (*plan)->graph;
  RETURN_IF_ERROR(AnnotateStatus(QueryHeuristics(graph, allow_tf32_), context));
  tally.proposed = static_cast<int>(graph.get_execution_plan_count());
  tally.heuristics_ms = lap();
  const std::vector<int64_t> built = BuildFirst(graph, kMaxTimedCandidates);
  tally.built = static_cast<int>(built.size());
  tally.build_ms = lap();
  if (built.empty()) {
    return absl::UnimplementedError(
        absl::StrCat(context, ": cuDNN offers no buildable engine configuration"));
  }
  int64_t want = 0;
  for (const int64_t index : built) {
    int64_t bytes = 0;
    FE_RETURN_IF_ERROR(graph.get_workspace_size_plan_at_index(index, bytes));
    want = std::max(want, bytes);
  }
  ASSIGN_OR_RETURN(const DeviceBuffer workspace,
                   DeviceBuffer::Allocate(static_cast<size_t>(want)));
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle_, stream));
  std::unordered_map<int64_t, void*> pointers = {{kXUid, const_cast<float*>(x)},
                                                 {kWUid, const_cast<float*>(w)},
                                                 {kYUid, y}};
  // Two rounds. A first run (loading the kernels) and one timed run of each
  // candidate rule out the slow ones cheaply: for depthwise convolutions some
  // engines run 10-100x slower than the best (on the H100, timing each of
  // MobileNetV2's eight candidates ten times took 21 s of its 4-size set-up).
  // The candidates within kCloseFactor of the fastest, at most kMaxRetimed,
  // are then timed again over kRuns runs, where one run's noise would decide.
  constexpr float kCloseFactor = 1.5f;
  constexpr size_t kMaxRetimed = 4;
  constexpr int kRuns = 10;
  std::vector<Timed> first_round;
  std::string failures;
  for (const int64_t index : built) {
    const absl::StatusOr<float> ms = MeanRunMs(handle_, graph, index, pointers, workspace.get(),
                                               stream, /*warmup=*/1, /*runs=*/1);
    if (!ms.ok()) {
      // An engine that fails to run here is not chosen; the sticky CUDA
      // errors are not, so those still fail the plan.
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      absl::StrAppend(&failures, "; ", NameAt(graph, index), ": ", ms.status().message());
      continue;
    }
    first_round.push_back({index, *ms});
  }
  if (first_round.empty()) {
    return absl::InternalError(
        absl::StrCat(context, ": none of the ", built.size(), " configurations ran", failures));
  }
  std::stable_sort(first_round.begin(), first_round.end(),
                   [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
  Timed fastest{-1, std::numeric_limits<float>::infinity()};
  for (size_t i = 0; i < first_round.size() && i < kMaxRetimed; ++i) {
    if (first_round[i].ms > kCloseFactor * first_round.front().ms) break;
    ASSIGN_OR_RETURN(const float ms, MeanRunMs(handle_, graph, first_round[i].index, pointers,
                                               workspace.get(), stream, /*warmup=*/1, kRuns));
    if (ms < fastest.ms) fastest = {first_round[i].index, ms};
  }
  tally.timing_ms = lap();
  return AnnotateStatus(Adopt(*std::move(plan), fastest.index), context);
}

absl::Status CudnnConv::Enqueue(const float* x, const float* w, float* y, void* workspace,
                                cudaStream_t stream) const {
  if (workspace == nullptr && workspace_bytes_ > 0) {
    return absl::InvalidArgumentError(absl::StrCat(ConvParamsToString(params_), ": ",
                                                   choice(), " needs ", workspace_bytes_,
                                                   " workspace bytes, got none"));
  }
  absl::Status status = CudnnErrorToStatus(cudnnSetStream(handle_, stream), "cudnnSetStream");
  if (status.ok()) {
    std::unordered_map<int64_t, void*> pointers = {{kXUid, const_cast<float*>(x)},
                                                   {kWUid, const_cast<float*>(w)},
                                                   {kYUid, y}};
    status = FrontendStatus(
        plan_->graph.execute_plan_at_index(handle_, pointers, workspace, plan_->index),
        "execute_plan_at_index");
  }
  if (status.ok()) return absl::OkStatus();
  // The message is built only on failure: Enqueue runs on the hot path.
  return AnnotateStatus(status, absl::StrCat(ConvParamsToString(params_), " (", choice(), ")"));
}

}  // namespace graphserve
