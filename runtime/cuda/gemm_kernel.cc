#include "runtime/cuda/gemm_kernel.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "common/cuda_status.h"
#include "common/status.h"
#include "runtime/cuda/op_kernels.h"
#include "runtime/fusion.h"

namespace graphserve {

namespace {

// cuBLASLt's recommended workspace on Hopper.
constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

// Largest power of two up to 256 dividing `bytes`: the alignment of a
// cudaMalloc'd (256-aligned) base address advanced by `bytes`.
int64_t AlignmentOf(int64_t bytes) {
  int64_t alignment = 256;
  while (alignment > 4 && bytes % alignment != 0) alignment /= 2;
  return alignment;
}

struct GemmGeometry {
  GemmOptions options;
  std::vector<std::array<int64_t, 3>> batch_offsets;
};

// Batch dims of a MatMul operand, with 1-D operands' promotion undone.
Dims BatchDims(const Dims& dims) {
  if (dims.size() <= 2) return {};
  return Dims(dims.begin(), dims.end() - 2);
}

// Geometry of MatMul(A, B) under numpy rules: 2-D B folds A's batch into m,
// unless A is stored transposed (`a_transposed`, Note [Transposed GEMM
// operands]): its batches are then [k, m] matrices, whose rows are not the
// product's rows, and they stay a batch with B's stride 0. Batches broadcast
// by stride 0 where one side has none; any other broadcast is unrolled into
// per-batch offsets.
absl::StatusOr<GemmGeometry> MatMulGeometry(const BoundValue& a, const BoundValue& b,
                                            bool a_transposed) {
  GemmGeometry g;
  GemmOptions& o = g.options;
  const Dims& ad = a.dims;
  const Dims& bd = b.dims;
  o.k = ad.back();
  o.n = bd.size() == 1 ? 1 : bd.back();
  const int64_t a_rows = ad.size() == 1 ? 1 : ad[ad.size() - 2];
  const Dims a_batch = BatchDims(ad);
  const Dims b_batch = BatchDims(bd);
  const int64_t a_batch_count = NumElements(a_batch);
  const int64_t b_batch_count = NumElements(b_batch);
  if (b_batch_count == 1 && !a_transposed) {
    // Every row of every A batch multiplies the same B: one GEMM of
    // a_batch_count * a_rows rows.
    o.m = a_batch_count * a_rows;
    return g;
  }
  o.m = a_rows;
  // Broadcast the batch dims, right-aligned.
  const size_t rank = std::max(a_batch.size(), b_batch.size());
  Dims out_batch(rank, 1), a_full(rank, 1), b_full(rank, 1);
  for (size_t i = 0; i < a_batch.size(); ++i) a_full[rank - a_batch.size() + i] = a_batch[i];
  for (size_t i = 0; i < b_batch.size(); ++i) b_full[rank - b_batch.size() + i] = b_batch[i];
  for (size_t i = 0; i < rank; ++i) out_batch[i] = std::max(a_full[i], b_full[i]);
  const int64_t batch = NumElements(out_batch);
  const int64_t a_matrix = a_rows * o.k;
  const int64_t b_matrix = o.k * o.n;
  const int64_t d_matrix = o.m * o.n;
  if (a_full == out_batch && (b_full == out_batch || b_batch_count == 1)) {
    o.batch = batch;
    o.stride_a = a_matrix;
    o.stride_b = b_batch_count == 1 ? 0 : b_matrix;
    o.stride_d = d_matrix;
    return g;
  }
  if (b_full == out_batch && a_batch_count == 1) {
    o.batch = batch;
    o.stride_a = 0;
    o.stride_b = b_matrix;
    o.stride_d = d_matrix;
    return g;
  }
  // General broadcast: walk the output batch index and map it into A and B.
  for (int64_t flat = 0; flat < batch; ++flat) {
    int64_t rest = flat, a_index = 0, b_index = 0, a_scale = 1, b_scale = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t coord = rest % out_batch[i];
      rest /= out_batch[i];
      a_index += (a_full[i] == 1 ? 0 : coord) * a_scale;
      b_index += (b_full[i] == 1 ? 0 : coord) * b_scale;
      a_scale *= a_full[i];
      b_scale *= b_full[i];
    }
    g.batch_offsets.push_back({a_index * a_matrix, b_index * b_matrix, flat * d_matrix});
  }
  return g;
}

// Device memory for AlgorithmChoices::TimingScratch.
absl::StatusOr<std::shared_ptr<void>> AllocateTimingScratch(size_t bytes) {
  ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::Allocate(bytes));
  auto owner = std::make_shared<DeviceBuffer>(std::move(buffer));
  void* address = owner->get();
  return std::shared_ptr<void>(std::move(owner), address);
}

std::string NodeLabel(const BoundNode& node) {
  return absl::StrCat("op '", node.name, "' (", node.op_type, ")");
}

}  // namespace

namespace {

// The GEMM of `o`, with cuBLASLt's proposals for its problem asked once per
// AlgorithmChoices (GemmProposals): a candidate index then names the same
// algorithm in every plan, as GemmChoiceKey's comment requires.
absl::StatusOr<std::unique_ptr<CublasLtGemm>> CreateWithKnownProposals(
    const CudaKernelContext& context, const GemmOptions& o) {
  if (!context.algorithm_choices) return CublasLtGemm::Create(context.cublas, o);
  const std::string key = absl::StrCat("GemmProposals ", GemmChoiceKey(o));
  auto known = std::static_pointer_cast<const GemmProposals>(
      context.algorithm_choices->FindPlan(key));
  ASSIGN_OR_RETURN(std::unique_ptr<CublasLtGemm> gemm,
                   CublasLtGemm::Create(context.cublas, o, known));
  if (!known) context.algorithm_choices->RecordPlan(key, gemm->proposals());
  return gemm;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GemmKernel>> GemmKernel::Create(const CudaKernelContext& context,
                                                               const GemmStepFusion& fusion) {
  const BoundGraph& graph = context.graph;
  const BoundNode& node = context.node;
  const BoundValue& a = graph.value(node.inputs[0]);
  const BoundValue& b = graph.value(node.inputs[1]);
  const DType dtype = a.dtype;  // binding gives every operand one type
  GemmGeometry geometry;
  const BoundValue* bias = fusion.bias;
  std::unique_ptr<CudaOpKernel> broadcast_c;
  if (node.op_type == "Gemm") {
    GemmOptions& o = geometry.options;
    o.trans_a = IntAttr(node.attributes, "transA") != 0;
    o.trans_b = IntAttr(node.attributes, "transB") != 0;
    o.m = o.trans_a ? a.dims[1] : a.dims[0];
    o.k = o.trans_a ? a.dims[0] : a.dims[1];
    o.n = o.trans_b ? b.dims[0] : b.dims[1];
    o.alpha = FloatAttr(node.attributes, "alpha");
    if (GemmCIsBias(graph, node)) {
      bias = &graph.value(node.inputs[2]);  // PyTorch's Linear: C is the bias, beta 1
    } else if (GemmReadsC(graph, node)) {
      // D = broadcast(C), then the GEMM accumulates into it with beta.
      o.beta = FloatAttr(node.attributes, "beta");
      BoundNode expand{
          node.name + "/broadcast_c", "Expand", {node.inputs[2]}, {node.outputs[0]}, {}};
      ASSIGN_OR_RETURN(broadcast_c, MakeExpandKernel(graph, expand));
    }
  } else {
    // The node's operands are the logical ones; the step may read them
    // stored transposed.
    ASSIGN_OR_RETURN(geometry, MatMulGeometry(a, b, fusion.trans_a));
    geometry.options.trans_a = fusion.trans_a;
    geometry.options.trans_b = fusion.trans_b;
  }
  if (fusion.bias != nullptr && (broadcast_c != nullptr || bias != fusion.bias)) {
    return absl::InternalError(absl::StrCat(
        NodeLabel(node), ": a fused bias and the Gemm's own C cannot both be applied"));
  }
  GemmOptions& o = geometry.options;
  o.alpha *= fusion.scale;
  const void* weight = nullptr;
  if (fusion.weight_transposed) {
    if (!b.is_constant() || b.dims.size() != 2 || o.trans_b) {
      return absl::InternalError(absl::StrCat(
          NodeLabel(node), ": only a 2-D constant B read N-major is read transposed"));
    }
    // B^T is stored [n, k]: op(B) = (B^T)^T (Note [K-major weights]).
    ASSIGN_OR_RETURN(weight, context.weights->GetOrUpload(b.constant, WeightLayout::kTransposed));
    o.trans_b = true;
  }
  if (bias != nullptr) {
    ASSIGN_OR_RETURN(const void* bias_address, context.weights->GetOrUpload(bias->constant));
    o.bias = bias_address;
    o.bias_dtype = bias->dtype;
    o.epilogue = GemmEpilogue::kBias;
  }
  o.a_dtype = dtype;
  o.b_dtype = b.dtype;
  o.d_dtype = graph.value(node.outputs[0]).dtype;
  o.compute = GemmComputeFor(dtype, context.allow_tf32);
  o.workspace_bytes = kGemmWorkspaceBytes;
  const int64_t element_bytes = static_cast<int64_t>(DTypeSize(dtype));
  if (fusion.swapped_a || fusion.swapped_b || fusion.swapped_d) {
    // Note [Batch-swapped GEMM operands]: a stored [rows, batch, cols]
    // matrix is read with its batches `cols` apart and its rows
    // `batch * cols` apart.
    if (node.op_type != "MatMul" || !geometry.batch_offsets.empty() || o.batch < 2 ||
        (fusion.swapped_a && o.stride_a == 0) || (fusion.swapped_b && o.stride_b == 0)) {
      return absl::InternalError(absl::StrCat(
          NodeLabel(node), ": only a MatMul of two batches of matrices reads swapped operands"));
    }
    const auto swap = [&](int64_t cols, int64_t& stride, int64_t& ld, int64_t& alignment) {
      stride = cols;
      ld = o.batch * cols;
      alignment = AlignmentOf(cols * element_bytes);
    };
    if (fusion.swapped_a) swap(o.trans_a ? o.m : o.k, o.stride_a, o.ld_a, o.alignment_a);
    if (fusion.swapped_b) swap(o.trans_b ? o.k : o.n, o.stride_b, o.ld_b, o.alignment_b);
    if (fusion.swapped_d) swap(o.n, o.stride_d, o.ld_d, o.alignment_d);
  }
  if (!geometry.batch_offsets.empty()) {
    // Per-batch offsets may leave addresses less than 256-byte aligned.
    o.alignment_a = AlignmentOf(o.m * o.k * element_bytes);
    o.alignment_b = AlignmentOf(o.k * o.n * element_bytes);
    o.alignment_d = AlignmentOf(o.m * o.n * element_bytes);
  }
  std::unique_ptr<CublasLtGemm> gemm;
  if (NumElements(graph.value(node.outputs[0]).dims) > 0 && o.k > 0) {
    ASSIGN_OR_RETURN(gemm, CreateWithKnownProposals(context, o));
    context.workspace->Require(gemm->workspace_bytes());
  }
  // Batch offsets in bytes, for Enqueue's untyped pointers.
  std::vector<std::array<int64_t, 3>> byte_offsets = std::move(geometry.batch_offsets);
  for (std::array<int64_t, 3>& offsets : byte_offsets) {
    for (int64_t& offset : offsets) offset *= element_bytes;
  }
  return std::make_unique<GemmKernel>(
      NodeLabel(node), GemmChoiceKey(o), std::move(gemm), weight,
      std::move(broadcast_c), std::move(byte_offsets), context.workspace,
      context.algorithm_choices);
}

GemmKernel::GemmKernel(std::string label, std::string choice_key,
                       std::unique_ptr<CublasLtGemm> gemm, const void* weight,
                       std::unique_ptr<CudaOpKernel> broadcast_c,
                       std::vector<std::array<int64_t, 3>> batch_offsets,
                       std::shared_ptr<StepWorkspace> workspace,
                       std::shared_ptr<AlgorithmChoices> algorithm_choices)
    : label_(std::move(label)),
      choice_key_(std::move(choice_key)),
      gemm_(std::move(gemm)),
      weight_(weight),
      broadcast_c_(std::move(broadcast_c)),
      batch_offsets_(std::move(batch_offsets)),
      workspace_(std::move(workspace)),
      algorithm_choices_(std::move(algorithm_choices)) {}

// Times the algorithms on the first batch only (every batch has one shape),
// or replays the choice another slot's plan recorded.
absl::Status GemmKernel::Autotune(absl::Span<const void* const> inputs,
                                  absl::Span<void* const> outputs, cudaStream_t stream) {
  if (!gemm_) return absl::OkStatus();
  if (algorithm_choices_) {
    if (const std::optional<int64_t> recorded = algorithm_choices_->Find(choice_key_)) {
      RETURN_IF_ERROR(AnnotateStatus(gemm_->UseCandidate(static_cast<int>(*recorded)), label_));
      workspace_->Require(gemm_->workspace_bytes());
      return absl::OkStatus();
    }
  }
  const auto* a = static_cast<const char*>(inputs[0]);
  const char* b = B(inputs);
  auto* d = static_cast<char*>(outputs[0]);
  if (!batch_offsets_.empty()) {
    const auto& [a_offset, b_offset, d_offset] = batch_offsets_.front();
    a += a_offset;
    b += b_offset;
    d += d_offset;
  }
  // The candidates may need up to the limit: they are timed in scratch
  // memory outside the arena (Note [Step workspaces]), one buffer for all
  // the GEMMs that time through the same AlgorithmChoices.
  DeviceBuffer own_scratch;
  void* scratch = nullptr;
  if (algorithm_choices_) {
    ASSIGN_OR_RETURN(scratch,
                     algorithm_choices_->TimingScratch(kGemmWorkspaceBytes, AllocateTimingScratch));
  } else {
    ASSIGN_OR_RETURN(own_scratch, DeviceBuffer::Allocate(kGemmWorkspaceBytes));
    scratch = own_scratch.get();
  }
  RETURN_IF_ERROR(AnnotateStatus(gemm_->ChooseFastestAlgorithm(a, b, d, scratch, stream), label_));
  if (algorithm_choices_) algorithm_choices_->Record(choice_key_, gemm_->candidate());
  workspace_->Require(gemm_->workspace_bytes());
  return absl::OkStatus();
}

absl::Status GemmKernel::Enqueue(absl::Span<const void* const> inputs,
                                 absl::Span<void* const> outputs, cudaStream_t stream) const {
  if (broadcast_c_) {
    const void* c[] = {C(inputs)};
    RETURN_IF_ERROR(broadcast_c_->Enqueue(c, outputs, stream));
  }
  if (!gemm_) return absl::OkStatus();  // empty output
  const auto* a = static_cast<const char*>(inputs[0]);
  const char* b = B(inputs);
  auto* d = static_cast<char*>(outputs[0]);
  void* workspace = workspace_->get();
  if (batch_offsets_.empty()) return gemm_->Enqueue(a, b, d, workspace, stream);
  for (const auto& [a_offset, b_offset, d_offset] : batch_offsets_) {
    RETURN_IF_ERROR(gemm_->Enqueue(a + a_offset, b + b_offset, d + d_offset, workspace, stream));
  }
  return absl::OkStatus();
}

const char* GemmKernel::B(absl::Span<const void* const> inputs) const {
  return static_cast<const char*>(weight_ != nullptr ? weight_ : inputs[1]);
}

const void* GemmKernel::C(absl::Span<const void* const> inputs) const {
  return inputs[weight_ != nullptr ? 1 : 2];
}

}  // namespace graphserve
