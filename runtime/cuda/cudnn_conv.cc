#include "runtime/cuda/cudnn_conv.h"

#include <cudnn_frontend.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/cudnn_frontend_status.h"

namespace graphserve {

namespace fe = cudnn_frontend;

namespace {

// The graph's tensors, by the uids the variant pack names them with.
constexpr int64_t kXUid = 1;
constexpr int64_t kWUid = 2;
constexpr int64_t kYUid = 3;

bool FitsInt32(int64_t value) { return value <= std::numeric_limits<int32_t>::max(); }

int64_t OutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

bool IsConvIoType(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

absl::Status Validate(const ConvParams& p) {
  if (!IsConvIoType(p.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a convolution's data is float32, float16 or bfloat16, not ", DTypeName(p.dtype)));
  }
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
    return absl::InvalidArgumentError(absl::StrCat(
        "the convolution computes the output as ", p.batch, "x", p.out_channels, "x", out_h, "x",
        out_w, ", the params say ", p.batch, "x", p.out_channels, "x", p.out_h, "x", p.out_w));
  }
  return absl::OkStatus();
}

// Dense NCHW strides of a tensor of `dims`.
std::vector<int64_t> PackedStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// The numerical notes that rule an engine out for data of `dtype`; see Note
// [cuDNN graph API convolution].
std::vector<fe::NumericalNote_t> BarredNotes(DType dtype, bool allow_tf32) {
  std::vector<fe::NumericalNote_t> notes = {fe::NumericalNote_t::NONDETERMINISTIC};
  if (dtype != DType::kFloat32) {
    // 16-bit data: tensor cores are welcome (their products are exact in
    // the float32 accumulator); a 16-bit accumulator, a conversion of the
    // inputs to something narrower, and, unless allowed, FFT and Winograd
    // are not.
    notes.push_back(fe::NumericalNote_t::REDUCED_PRECISION_REDUCTION);
    notes.push_back(fe::NumericalNote_t::DOWN_CONVERT_INPUTS);
    if (!allow_tf32) {
      for (const fe::NumericalNote_t note :
           {fe::NumericalNote_t::FFT, fe::NumericalNote_t::WINOGRAD,
            fe::NumericalNote_t::WINOGRAD_TILE_4x4, fe::NumericalNote_t::WINOGRAD_TILE_6x6,
            fe::NumericalNote_t::WINOGRAD_TILE_13x13}) {
        notes.push_back(note);
      }
    }
    return notes;
  }
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

// What the precision rules bar that allow_tf32 would admit, for messages.
const char* BarredWithoutTf32(const ConvParams& params, bool allow_tf32) {
  if (allow_tf32) return "";
  return params.dtype == DType::kFloat32
             ? "; without TF32, FFT, Winograd and tensor-core engines are barred"
             : "; without TF32 allowed, FFT and Winograd engines are barred";
}

// Mean time of one execute of plan `index` over `runs` back-to-back runs,
// after `warmup` untimed ones. The handle's stream is `stream`.
absl::StatusOr<float> MeanRunMs(cudnnHandle_t handle, const fe::graph::Graph& graph, int64_t index,
                                std::unordered_map<int64_t, void*>& pointers, void* workspace,
                                cudaStream_t stream, int warmup, int runs) {
  ASSIGN_OR_RETURN(const CudaEvent start, CudaEvent::Create(/*timing=*/true));
  ASSIGN_OR_RETURN(const CudaEvent stop, CudaEvent::Create(/*timing=*/true));
  for (int i = 0; i < warmup; ++i) {
    GRAPHSERVE_FE_RETURN_IF_ERROR(graph.execute_plan_at_index(handle, pointers, workspace, index));
  }
  CUDA_RETURN_IF_ERROR(cudaEventRecord(start.get(), stream));
  for (int i = 0; i < runs; ++i) {
    GRAPHSERVE_FE_RETURN_IF_ERROR(graph.execute_plan_at_index(handle, pointers, workspace, index));
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

// The least time a slowdown is measured against: event timing resolves about
// half a microsecond, and a zero would make every slowdown infinite.
constexpr float kLeastBestMs = 1e-4f;

}  // namespace

bool RuledOutByFirstRun(float first_run_ms, float best_ms) {
  return std::isfinite(best_ms) &&
         first_run_ms > kHopelessSlowdown * best_ms + kFirstRunAllowanceMs;
}

int64_t ScreeningBatch(const ConvParams& params, const ConvSlowdowns& other_sizes) {
  if (params.groups <= 1 || params.batch < 2 || !other_sizes.empty()) return 0;
  return std::max<int64_t>(1, params.batch / kScreeningDivisor);
}

bool RuledOutByOtherSizes(const ConvParams& params, const ConvSlowdowns& other_sizes,
                          const std::string& name) {
  if (params.groups <= 1) return false;
  const auto it = other_sizes.find(name);
  return it != other_sizes.end() && it->second >= kHopelessSlowdown;
}

size_t CandidatesToRetime(const std::vector<float>& sorted_ms) {
  size_t close = 0;
  while (close < sorted_ms.size() && close < static_cast<size_t>(kMaxRetimed) &&
         sorted_ms[close] <= kCloseFactor * sorted_ms.front()) {
    ++close;
  }
  return close > 1 ? close : 0;
}

void MergeSlowdowns(const ConvSlowdowns& measured, ConvSlowdowns& slowdowns) {
  for (const auto& [name, slowdown] : measured) {
    const auto [it, inserted] = slowdowns.emplace(name, slowdown);
    if (!inserted) it->second = std::min(it->second, slowdown);
  }
}

std::string ConvParamsToString(const ConvParams& p) {
  // float32 NCHW, the default, goes unsaid: the algorithm choice keys and
  // the reports of float32 models read as they always have.
  return absl::StrCat("Conv N=", p.batch, " C=", p.in_channels, " HxW=", p.in_h, "x", p.in_w,
                      " -> K=", p.out_channels, " ", p.out_h, "x", p.out_w, " kernel ", p.kernel_h,
                      "x", p.kernel_w, " stride ", p.stride_h, "x", p.stride_w, " dilation ",
                      p.dilation_h, "x", p.dilation_w, " pad ", p.pad_h, "x", p.pad_w, " groups ",
                      p.groups, p.dtype != DType::kFloat32 ? " " : "",
                      p.dtype != DType::kFloat32 ? DTypeName(p.dtype) : "",
                      p.x_layout == ConvLayout::kNHWC ? " x NHWC" : "",
                      p.y_layout == ConvLayout::kNHWC ? " y NHWC" : "");
}

// The convolution as a one-node graph of the frontend, with the engine
// configurations the heuristics offer, some built, and the chosen one.
struct CudnnConv::Plan {
  fe::graph::Graph graph;
  // The data's type and layout the graph was built for; it computes in
  // float32 whatever they are.
  DType dtype = DType::kFloat32;
  ConvLayout x_layout = ConvLayout::kNCHW;
  ConvLayout y_layout = ConvLayout::kNCHW;
  int64_t index = -1;  // of the chosen configuration
  std::string name;    // cuDNN's name of it
  size_t workspace_bytes = 0;
};

namespace {

// The strides of a dense [d0, d1, d2, d3] tensor stored in `layout`: d1
// innermost when channels last.
std::vector<int64_t> StridesIn(ConvLayout layout, const std::vector<int64_t>& dims) {
  if (layout == ConvLayout::kNCHW) return PackedStrides(dims);
  const int64_t c = dims[1];
  return {c * dims[2] * dims[3], 1, dims[3] * c, c};
}

// The operation graph of `p`: x (uid 1) and w (uid 2) in, y (uid 3) out,
// all of p.dtype, each in its layout (w channels last when x or y is),
// float32 accumulation.
absl::StatusOr<std::unique_ptr<CudnnConv::Plan>> MakeOperationGraph(cudnnHandle_t handle,
                                                                    const ConvParams& p) {
  auto plan = std::make_unique<CudnnConv::Plan>();
  plan->dtype = p.dtype;
  plan->x_layout = p.x_layout;
  plan->y_layout = p.y_layout;
  fe::graph::Graph& graph = plan->graph;
  const fe::DataType_t io = CudnnDataTypeOf(p.dtype);
  graph.set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&graph, io](const char* name, int64_t uid, ConvLayout layout,
                                   std::vector<int64_t> dims) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim(dims)
                            .set_stride(StridesIn(layout, dims))
                            .set_data_type(io));
  };
  const auto x = tensor("x", kXUid, p.x_layout, {p.batch, p.in_channels, p.in_h, p.in_w});
  const auto w = tensor("w", kWUid, ChannelsLastWeights(p) ? ConvLayout::kNHWC : ConvLayout::kNCHW,
                        {p.out_channels, p.in_channels / p.groups, p.kernel_h, p.kernel_w});
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
      .set_stride(StridesIn(p.y_layout, y_dims))
      .set_data_type(io);
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.validate());
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.build_operation_graph(handle));
  return plan;
}

// Adds the heuristics' configurations (mode A, then the fallback list) and
// bars those the precision rules, the workspace limit or run-time
// compilation exclude.
absl::Status QueryHeuristics(fe::graph::Graph& graph, DType dtype, bool allow_tf32) {
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}));
  graph.deselect_numeric_notes(BarredNotes(dtype, allow_tf32));
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

// The first `limit` distinct configurations in the heuristics' order, built,
// except those `skip` names: they keep their place among the `limit`
// unbuilt (Note [Convolution tuning budget]). Configurations that fail to
// build (barred, unsupported on this device) are passed over.
struct Candidates {
  std::vector<int64_t> built;  // indices into the graph's configurations
  int skipped = 0;
};

Candidates BuildFirst(fe::graph::Graph& graph, int limit,
                      const std::function<bool(const std::string&)>& skip) {
  Candidates candidates;
  std::vector<std::string> seen;  // mode A and the fallback list overlap
  for (int64_t i = 0; i < graph.get_execution_plan_count() && seen.size() < size_t(limit); ++i) {
    std::string name = NameAt(graph, i);
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    if (skip && skip(name)) {
      ++candidates.skipped;
    } else {
      if (graph.build_plan_at_index(i).is_bad()) continue;
      candidates.built.push_back(i);
    }
    seen.push_back(std::move(name));
  }
  return candidates;
}

// Grows `buffer` to the largest workspace of `built`.
absl::Status ReserveWorkspace(const fe::graph::Graph& graph, const std::vector<int64_t>& built,
                              DeviceBuffer& buffer) {
  int64_t want = 0;
  for (const int64_t index : built) {
    int64_t bytes = 0;
    GRAPHSERVE_FE_RETURN_IF_ERROR(graph.get_workspace_size_plan_at_index(index, bytes));
    want = std::max(want, bytes);
  }
  if (buffer.bytes() >= static_cast<size_t>(want)) return absl::OkStatus();
  buffer = DeviceBuffer();  // freed before the larger one is allocated
  ASSIGN_OR_RETURN(buffer, DeviceBuffer::Allocate(static_cast<size_t>(want)));
  return absl::OkStatus();
}

// Round one over the `built` configurations of `graph` (on `batch` rows):
// each one's first run, timed, then one timed run, unless `budget` and the
// first-run rule rule it out. Appends each to `report`.
struct RoundOne {
  std::vector<Timed> ran;          // timed runs
  std::vector<Timed> ruled_out;    // first runs of those ruled out by them
  std::vector<size_t> ran_report;  // ran[i]'s entry in `report`
  std::string failures;            // "; <name>: <message>" per candidate that failed
};

absl::StatusOr<RoundOne> TimeRoundOne(cudnnHandle_t handle, const fe::graph::Graph& graph,
                                      const std::vector<int64_t>& built,
                                      std::unordered_map<int64_t, void*>& pointers, void* workspace,
                                      cudaStream_t stream, bool budget, int64_t batch,
                                      std::vector<CudnnConv::CandidateTiming>& report) {
  RoundOne round;
  float best = std::numeric_limits<float>::infinity();
  for (const int64_t index : built) {
    CudnnConv::CandidateTiming& entry = report.emplace_back();
    entry.name = NameAt(graph, index);
    entry.batch = batch;
    // The first run loads the engine's kernels, so it is not the time that
    // decides; it only rules out what it already shows to be hopeless.
    absl::StatusOr<float> ms =
        MeanRunMs(handle, graph, index, pointers, workspace, stream, /*warmup=*/0, /*runs=*/1);
    if (ms.ok()) {
      entry.first_run_ms = *ms;
      if (budget && RuledOutByFirstRun(*ms, best)) {
        round.ruled_out.push_back({index, *ms});
        continue;
      }
      ms = MeanRunMs(handle, graph, index, pointers, workspace, stream, /*warmup=*/0, /*runs=*/1);
    }
    if (!ms.ok()) {
      // An engine that fails to run here is not chosen; the sticky CUDA
      // errors are not, so those still fail the plan.
      CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      entry.failed = true;
      absl::StrAppend(&round.failures, "; ", entry.name, ": ", ms.status().message());
      continue;
    }
    entry.run_ms = *ms;
    best = std::min(best, *ms);
    round.ran.push_back({index, *ms});
    round.ran_report.push_back(report.size() - 1);
  }
  return round;
}

// Each candidate's slowdown against round one's fastest (none when nothing
// ran): the ruled-out ones' first runs, which can only overstate their runs,
// are at least kHopelessSlowdown times the fastest by the rule.
ConvSlowdowns SlowdownsOf(const fe::graph::Graph& graph, const RoundOne& round) {
  ConvSlowdowns slowdowns;
  if (round.ran.empty()) return slowdowns;
  float best = std::numeric_limits<float>::infinity();
  for (const Timed& t : round.ran) best = std::min(best, t.ms);
  best = std::max(best, kLeastBestMs);
  for (const std::vector<Timed>* timed : {&round.ran, &round.ruled_out}) {
    for (const Timed& t : *timed) {
      MergeSlowdowns({{NameAt(graph, t.index), std::max(t.ms, kLeastBestMs) / best}}, slowdowns);
    }
  }
  return slowdowns;
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
  GRAPHSERVE_FE_RETURN_IF_ERROR(plan->graph.get_workspace_size_plan_at_index(index, workspace));
  GRAPHSERVE_FE_RETURN_IF_ERROR(plan->graph.get_plan_name_at_index(index, plan->name));
  plan->index = index;
  plan->workspace_bytes = static_cast<size_t>(workspace);
  return UsePlan(std::move(plan));
}

absl::Status CudnnConv::UsePlan(std::shared_ptr<const Plan> plan) {
  if (plan == nullptr || plan->index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ConvParamsToString(params_), ": no chosen plan to use"));
  }
  if (plan->dtype != params_.dtype || plan->x_layout != params_.x_layout ||
      plan->y_layout != params_.y_layout) {
    return absl::InvalidArgumentError(
        absl::StrCat(ConvParamsToString(params_), ": a plan for ", DTypeName(plan->dtype), " data",
                     plan->x_layout == ConvLayout::kNHWC ? ", x NHWC" : "",
                     plan->y_layout == ConvLayout::kNHWC ? ", y NHWC" : "", " cannot run it"));
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
  RETURN_IF_ERROR(
      AnnotateStatus(QueryHeuristics((*plan)->graph, params.dtype, allow_tf32), context));
  const std::vector<int64_t> built = BuildFirst((*plan)->graph, /*limit=*/1, nullptr).built;
  if (built.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        context, ": cuDNN offers no buildable engine configuration (",
        (*plan)->graph.get_execution_plan_count(), " proposed",
        BarredWithoutTf32(params, allow_tf32), ")"));
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

absl::Status CudnnConv::ChooseFastestAlgorithm(const void* x, const void* w, void* y,
                                               cudaStream_t stream, const TuningOptions& options) {
  const std::string context = ConvParamsToString(params_);
  TuningStats local;
  TuningStats& tally = options.stats != nullptr ? *options.stats : local;
  tally = TuningStats{};
  auto clock = std::chrono::steady_clock::now();
  const auto lap = [&clock]() {
    const auto now = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - clock).count();
    clock = now;
    return ms;
  };
  const bool budget = options.budget;
  // What the other sizes' timings and this call's screening know.
  ConvSlowdowns known;
  if (budget && options.slowdowns != nullptr) known = *options.slowdowns;
  ConvSlowdowns measured;
  CUDNN_RETURN_IF_ERROR(cudnnSetStream(handle_, stream));
  std::unordered_map<int64_t, void*> pointers = {
      {kXUid, const_cast<void*>(x)}, {kWUid, const_cast<void*>(w)}, {kYUid, y}};
  DeviceBuffer workspace;

  // Screening: every candidate once on the first rows of the same buffers.
  // Nothing ran (all failed) is no error here: the full batch is timed then.
  if (const int64_t rows = budget ? ScreeningBatch(params_, known) : 0; rows > 0) {
    tally.screening_batch = rows;
    ConvParams screened = params_;
    screened.batch = rows;
    absl::StatusOr<std::unique_ptr<Plan>> plan = MakeOperationGraph(handle_, screened);
    if (!plan.ok()) return AnnotateStatus(plan.status(), context);
    fe::graph::Graph& graph = (*plan)->graph;
    RETURN_IF_ERROR(AnnotateStatus(QueryHeuristics(graph, params_.dtype, allow_tf32_), context));
    tally.heuristics_ms += lap();
    const Candidates candidates = BuildFirst(graph, kMaxTimedCandidates, nullptr);
    tally.build_ms += lap();
    RETURN_IF_ERROR(AnnotateStatus(ReserveWorkspace(graph, candidates.built, workspace), context));
    ASSIGN_OR_RETURN(const RoundOne round,
                     TimeRoundOne(handle_, graph, candidates.built, pointers, workspace.get(),
                                  stream, budget, rows, tally.candidates));
    tally.first_run_outs += static_cast<int>(round.ruled_out.size());
    MergeSlowdowns(SlowdownsOf(graph, round), measured);
    MergeSlowdowns(measured, known);
    tally.screening_ms = lap();
  }

  absl::StatusOr<std::unique_ptr<Plan>> plan = MakeOperationGraph(handle_, params_);
  if (!plan.ok()) return AnnotateStatus(plan.status(), context);
  fe::graph::Graph& graph = (*plan)->graph;
  RETURN_IF_ERROR(AnnotateStatus(QueryHeuristics(graph, params_.dtype, allow_tf32_), context));
  tally.proposed = static_cast<int>(graph.get_execution_plan_count());
  tally.heuristics_ms += lap();
  const auto hopeless = [this, &known](const std::string& name) {
    return RuledOutByOtherSizes(params_, known, name);
  };
  Candidates candidates =
      BuildFirst(graph, kMaxTimedCandidates,
                 budget ? std::function<bool(const std::string&)>(hopeless) : nullptr);
  if (candidates.built.empty() && candidates.skipped > 0) {
    // Every one of them was hopeless at other sizes: time them at this one.
    candidates = BuildFirst(graph, kMaxTimedCandidates, nullptr);
  }
  tally.built = static_cast<int>(candidates.built.size());
  tally.skipped = candidates.skipped;
  tally.build_ms += lap();
  if (candidates.built.empty()) {
    return absl::UnimplementedError(
        absl::StrCat(context, ": cuDNN offers no buildable engine configuration"));
  }
  RETURN_IF_ERROR(AnnotateStatus(ReserveWorkspace(graph, candidates.built, workspace), context));
  // Round one rules out the slow candidates cheaply: one run each (for
  // depthwise convolutions some engines run 10-100x slower than the best).
  // Round two times those within kCloseFactor of the fastest, at most
  // kMaxRetimed, over kRetimeRuns runs, where one run's noise would decide.
  ASSIGN_OR_RETURN(RoundOne round,
                   TimeRoundOne(handle_, graph, candidates.built, pointers, workspace.get(), stream,
                                budget, params_.batch, tally.candidates));
  tally.first_run_outs += static_cast<int>(round.ruled_out.size());
  if (round.ran.empty()) {
    return absl::InternalError(absl::StrCat(context, ": none of the ", candidates.built.size(),
                                            " configurations ran", round.failures));
  }
  MergeSlowdowns(SlowdownsOf(graph, round), measured);
  std::vector<size_t> order(round.ran.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&round](size_t a, size_t b) { return round.ran[a].ms < round.ran[b].ms; });
  std::vector<float> sorted_ms;
  for (const size_t i : order) sorted_ms.push_back(round.ran[i].ms);
  const size_t retime = CandidatesToRetime(sorted_ms);
  Timed fastest = round.ran[order.front()];
  if (retime > 0) fastest = {-1, std::numeric_limits<float>::infinity()};
  for (size_t k = 0; k < retime; ++k) {
    const Timed& candidate = round.ran[order[k]];
    ASSIGN_OR_RETURN(const float ms, MeanRunMs(handle_, graph, candidate.index, pointers,
                                               workspace.get(), stream, /*warmup=*/1, kRetimeRuns));
    tally.candidates[round.ran_report[order[k]]].retimed_ms = ms;
    if (ms < fastest.ms) fastest = {candidate.index, ms};
  }
  tally.retimed = static_cast<int>(retime);
  tally.timing_ms = lap();
  if (budget && options.slowdowns != nullptr) MergeSlowdowns(measured, *options.slowdowns);
  return AnnotateStatus(Adopt(*std::move(plan), fastest.index), context);
}

absl::Status CudnnConv::Enqueue(const void* x, const void* w, void* y, void* workspace,
                                cudaStream_t stream) const {
  if (plan_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(ConvParamsToString(params_), ": no plan chosen yet (ChooseFastestAlgorithm)"));
  }
  if (workspace == nullptr && workspace_bytes_ > 0) {
    return absl::InvalidArgumentError(absl::StrCat(ConvParamsToString(params_), ": ", choice(),
                                                   " needs ", workspace_bytes_,
                                                   " workspace bytes, got none"));
  }
  absl::Status status = CudnnErrorToStatus(cudnnSetStream(handle_, stream), "cudnnSetStream");
  if (status.ok()) {
    std::unordered_map<int64_t, void*> pointers = {
        {kXUid, const_cast<void*>(x)}, {kWUid, const_cast<void*>(w)}, {kYUid, y}};
    status = FrontendStatus(
        plan_->graph.execute_plan_at_index(handle_, pointers, workspace, plan_->index),
        "execute_plan_at_index");
  }
  if (status.ok()) return absl::OkStatus();
  // The message is built only on failure: Enqueue runs on the hot path.
  return AnnotateStatus(status, absl::StrCat(ConvParamsToString(params_), " (", choice(), ")"));
}

}  // namespace graphserve
