#include "runtime/cuda/cudnn_attention.h"

#include <cudnn_frontend.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/cudnn_frontend_status.h"

namespace graphserve {

namespace fe = cudnn_frontend;

namespace {

// The graph's tensors, by the uids the variant pack names them with.
constexpr int64_t kQUid = 1;
constexpr int64_t kKUid = 2;
constexpr int64_t kVUid = 3;
constexpr int64_t kMaskUid = 4;
constexpr int64_t kOutUid = 5;
constexpr int64_t kStatsUid = 6;

// The row statistics follow cuDNN's own workspace at this alignment.
constexpr int64_t kStatsAlignment = 256;

std::string StridesToString(const AttentionStrides& s) {
  return absl::StrCat("[", s.batch, ",", s.head, ",", s.row, ",", s.col, "]");
}

// An operand's view for cuDNN: its dims (1 where it broadcasts, a stride of
// 0) and strides, a size-1 dim given the largest extent as its stride (cuDNN
// reads it never, but wants a layout it can order).
struct CudnnView {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};

CudnnView CudnnViewOf(const AttentionStrides& s, const std::array<int64_t, 4>& full) {
  const std::array<int64_t, 4> strides = {s.batch, s.head, s.row, s.col};
  CudnnView view;
  int64_t extent = 1;
  for (size_t i = 0; i < 4; ++i) {
    const int64_t dim = strides[i] == 0 ? 1 : full[i];
    view.dims.push_back(dim);
    extent = std::max(extent, strides[i] * dim);
  }
  for (size_t i = 0; i < 4; ++i) view.strides.push_back(view.dims[i] == 1 ? extent : strides[i]);
  return view;
}

absl::Status CheckSupported(const FusedAttentionParams& p) {
  if (p.dtype != DType::kFloat16 && p.dtype != DType::kBFloat16) {
    return absl::UnimplementedError("cuDNN's attention runs float16 and bfloat16 only");
  }
  if (p.head_dim > kCudnnAttentionMaxHeadDim || p.value_dim > kCudnnAttentionMaxHeadDim ||
      p.head_dim % 8 != 0 || p.value_dim % 8 != 0) {
    return absl::UnimplementedError("cuDNN's attention takes head dims of multiples of 8 to 256");
  }
  for (const AttentionStrides* s : {&p.q, &p.k, &p.v, &p.out}) {
    if (s->col != 1) {
      return absl::UnimplementedError("cuDNN's attention reads head_dim-contiguous operands");
    }
  }
  if (p.batch > 1 && (p.k.batch == 0 || p.v.batch == 0)) {
    return absl::UnimplementedError("cuDNN's attention broadcasts k and v over heads only");
  }
  return absl::OkStatus();
}

}  // namespace

std::string AttentionParamsToString(const FusedAttentionParams& p) {
  return absl::StrCat("Attention ", DTypeName(p.dtype), p.float_scores ? " float scores" : "",
                      " b=", p.batch, " h=", p.heads,
                      " sq=", p.query_rows, " sk=", p.key_rows, " d=", p.head_dim,
                      " dv=", p.value_dim, " scale=", p.scale, p.nan_to_zero ? " nan_to_zero" : "",
                      " q", StridesToString(p.q), " k", StridesToString(p.k), " v",
                      StridesToString(p.v), " mask", StridesToString(p.mask), " out",
                      StridesToString(p.out));
}

struct CudnnAttention::Plan {
  fe::graph::Graph graph;
  FusedAttentionParams params;
  bool has_mask = false;
  // The workspace: cuDNN's own, then the row statistics, then (with
  // float_scores) the output in params.dtype, staged for the fill kernel to
  // widen.
  int64_t library_workspace_bytes = 0;
  int64_t staged_offset = 0;
  int64_t workspace_bytes = 0;
  std::string key;  // AttentionParamsToString, and whether it has a mask
};

namespace {

absl::StatusOr<std::shared_ptr<CudnnAttention::Plan>> BuildPlan(cudnnHandle_t handle,
                                                                const FusedAttentionParams& p,
                                                                bool has_mask, std::string key) {
  auto plan = std::make_shared<CudnnAttention::Plan>();
  plan->params = p;
  plan->has_mask = has_mask;
  plan->key = std::move(key);
  fe::graph::Graph& graph = plan->graph;
  const fe::DataType_t io = CudnnDataTypeOf(p.dtype);
  graph.set_io_data_type(io)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const auto tensor = [&graph](const char* name, int64_t uid, const CudnnView& view,
                               fe::DataType_t type) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim(view.dims)
                            .set_stride(view.strides)
                            .set_data_type(type));
  };
  const CudnnView q_view = CudnnViewOf(p.q, {p.batch, p.heads, p.query_rows, p.head_dim});
  const CudnnView k_view = CudnnViewOf(p.k, {p.batch, p.heads, p.key_rows, p.head_dim});
  const CudnnView v_view = CudnnViewOf(p.v, {p.batch, p.heads, p.key_rows, p.value_dim});
  // With float_scores cuDNN writes the output packed in the operands' type.
  const CudnnView out_view =
      p.float_scores
          ? CudnnView{{p.batch, p.heads, p.query_rows, p.value_dim},
                      {p.heads * p.query_rows * p.value_dim, p.query_rows * p.value_dim,
                       p.value_dim, 1}}
          : CudnnViewOf(p.out, {p.batch, p.heads, p.query_rows, p.value_dim});
  const auto q = tensor("q", kQUid, q_view, io);
  const auto k = tensor("k", kKUid, k_view, io);
  const auto v = tensor("v", kVUid, v_view, io);
  fe::graph::SDPA_attributes attributes = fe::graph::SDPA_attributes()
                                              .set_name("attention")
                                              .set_generate_stats(true)
                                              .set_attn_scale(p.scale);
  if (has_mask) {
    attributes.set_bias(
        tensor("mask", kMaskUid, CudnnViewOf(p.mask, {p.batch, p.heads, p.query_rows, p.key_rows}),
               CudnnDataTypeOf(AttentionScoreType(p))));
  }
  auto [out, stats] = graph.sdpa(q, k, v, std::move(attributes));
  out->set_output(true)
      .set_uid(kOutUid)
      .set_dim(out_view.dims)
      .set_stride(out_view.strides)
      .set_data_type(io);
  // Note [cuDNN attention], Semantics: each row's log-sum-exp, packed.
  stats->set_output(true)
      .set_uid(kStatsUid)
      .set_dim({p.batch, p.heads, p.query_rows, 1})
      .set_stride({p.heads * p.query_rows, p.query_rows, 1, 1})
      .set_data_type(fe::DataType_t::FLOAT);
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.validate());
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.build_operation_graph(handle));
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.create_execution_plans({fe::HeurMode_t::A}));
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.check_support(handle));
  GRAPHSERVE_FE_RETURN_IF_ERROR(
      graph.build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE));
  GRAPHSERVE_FE_RETURN_IF_ERROR(graph.get_workspace_size(plan->library_workspace_bytes));
  const auto aligned = [](int64_t bytes) {
    return (bytes + kStatsAlignment - 1) / kStatsAlignment * kStatsAlignment;
  };
  plan->library_workspace_bytes = aligned(plan->library_workspace_bytes);
  plan->staged_offset = plan->library_workspace_bytes +
                        aligned(p.batch * p.heads * p.query_rows * int64_t{sizeof(float)});
  plan->workspace_bytes =
      plan->staged_offset + (p.float_scores ? p.batch * p.heads * p.query_rows * p.value_dim *
                                                  static_cast<int64_t>(DTypeSize(p.dtype))
                                            : 0);
  return plan;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudnnAttention>> CudnnAttention::Create(
    cudnnHandle_t handle, const FusedAttentionParams& params, bool has_mask,
    AlgorithmChoices* choices) {
  RETURN_IF_ERROR(AnnotateStatus(CheckSupported(params), AttentionParamsToString(params)));
  const std::string key = absl::StrCat(AttentionParamsToString(params), has_mask ? "" : " no mask");
  std::shared_ptr<const Plan> plan;
  if (choices != nullptr) plan = std::static_pointer_cast<const Plan>(choices->FindPlan(key));
  if (plan == nullptr) {
    absl::StatusOr<std::shared_ptr<Plan>> built = BuildPlan(handle, params, has_mask, key);
    if (!built.ok()) return AnnotateStatus(built.status(), key);
    plan = *std::move(built);
    if (choices != nullptr) choices->RecordPlan(key, plan);
  }
  return std::unique_ptr<CudnnAttention>(new CudnnAttention(handle, std::move(plan)));
}

CudnnAttention::CudnnAttention(cudnnHandle_t handle, std::shared_ptr<const Plan> plan)
    : handle_(handle), plan_(std::move(plan)) {}

CudnnAttention::~CudnnAttention() = default;

size_t CudnnAttention::workspace_bytes() const {
  return static_cast<size_t>(plan_->workspace_bytes);
}

absl::Status CudnnAttention::Enqueue(const void* q, const void* k, const void* v,
                                     const void* mask, void* out, void* workspace,
                                     cudaStream_t stream) const {
  if ((mask != nullptr) != plan_->has_mask) {
    return absl::InvalidArgumentError(
        absl::StrCat(plan_->key, ": planned ", plan_->has_mask ? "with" : "without", " a mask"));
  }
  if (workspace == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        plan_->key, ": needs ", plan_->workspace_bytes, " workspace bytes, got none"));
  }
  float* row_stats =
      reinterpret_cast<float*>(static_cast<char*>(workspace) + plan_->library_workspace_bytes);
  void* staged =
      plan_->params.float_scores ? static_cast<char*>(workspace) + plan_->staged_offset : nullptr;
  absl::Status status = CudnnErrorToStatus(cudnnSetStream(handle_, stream), "cudnnSetStream");
  if (status.ok()) {
    std::unordered_map<int64_t, void*> pointers = {{kQUid, const_cast<void*>(q)},
                                                   {kKUid, const_cast<void*>(k)},
                                                   {kVUid, const_cast<void*>(v)},
                                                   {kOutUid, staged ? staged : out},
                                                   {kStatsUid, row_stats}};
    if (mask != nullptr) pointers[kMaskUid] = const_cast<void*>(mask);
    status = FrontendStatus(plan_->graph.execute(handle_, pointers, workspace), "execute");
  }
  if (status.ok()) {
    status = CudaErrorToStatus(
        LaunchAttentionRowFill(plan_->params, row_stats, staged, out, stream),
        "LaunchAttentionRowFill");
  }
  if (status.ok()) return absl::OkStatus();
  return AnnotateStatus(status, plan_->key);
}

}  // namespace graphserve
