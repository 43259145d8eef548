#pragma once
// Row-major GEMMs on cuBLASLt, with bias and ReLU fused into the epilogue:
//
//   D[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * D[b])   for b < batch
//
// where op(X) = X or X^T and epilogue(x) = x, x + bias, or relu(x + bias) with
// bias a vector over the n output columns. Everything cuBLASLt needs (the
// operation and layout descriptors, the algorithm) is chosen in Create(); the
// workspace is the caller's, so Enqueue() only launches.
//
// Note [GEMM datatypes]
// ~~~~~~~~~~~~~~~~~~~~~
// A and B are float32, float16 or bfloat16 (both the same); D is A's type or
// float32; C is D's own buffer (beta accumulates in place), so C's type is
// D's. Products and sums are float32 in every case (CUBLAS_COMPUTE_32F): a
// product of two 16-bit floats is exact in float32 (11- or 8-bit
// significands), so half-precision operands lose nothing beyond float32
// summation until D is rounded to its type once at the end. TF32
// (CUBLAS_COMPUTE_32F_FAST_TF32) rounds float32 operands to a 10-bit
// mantissa for the tensor cores; it means nothing for 16-bit operands,
// which the tensor cores read as they are. alpha and beta are float
// (scale type CUDA_R_32F), and cuBLASLt reads the bias vector in D's type
// for these kernels (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE's default), so
// bias_dtype must be d_dtype. Create() refuses every other combination by
// name rather than leave cuBLASLt to find no algorithm.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype_table.h"

namespace graphserve {

enum class GemmEpilogue {
  kNone,
  kBias,      // D += bias[n]
  kBiasRelu,  // D = relu(D + bias[n])
  kRelu,      // D = relu(D)
};

// What cuBLASLt multiplies and accumulates in (Note [GEMM datatypes]).
enum class GemmCompute : int32_t {
  kFloat32,      // CUBLAS_COMPUTE_32F: float32 products and sums
  kFloat32Tf32,  // CUBLAS_COMPUTE_32F_FAST_TF32: float32 A and B rounded to
                 // TF32 (relative error near 3e-4), float32 sums
};

// The compute type for A/B of `operands` under a model's TF32 setting:
// kFloat32Tf32 only for float32 operands with TF32 allowed.
constexpr GemmCompute GemmComputeFor(DType operands, bool allow_tf32) {
  return operands == DType::kFloat32 && allow_tf32 ? GemmCompute::kFloat32Tf32
                                                   : GemmCompute::kFloat32;
}

struct GemmOptions {
  // Row-major D[m, n] = op(A)[m, k] * op(B)[k, n].
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  // A is stored [k, m] and transposed (else [m, k]); B is stored [n, k] and
  // transposed (else [k, n]).
  bool trans_a = false;
  bool trans_b = false;
  // Strided batches; a stride of 0 reuses one matrix for every batch.
  int64_t batch = 1;
  int64_t stride_a = 0;  // elements
  int64_t stride_b = 0;
  int64_t stride_d = 0;
  // Elements from one stored row to the next; 0: packed (the stored row's
  // length). Larger when the matrices of a batch interleave (Note
  // [Batch-swapped GEMM operands] in runtime/fusion.h).
  int64_t ld_a = 0;
  int64_t ld_b = 0;
  int64_t ld_d = 0;
  float alpha = 1.0f;
  // Non-zero beta accumulates into the existing contents of D.
  float beta = 0.0f;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  // Element types (Note [GEMM datatypes]): A and B float32, float16 or
  // bfloat16 alike; D (and C, its buffer) A's type or float32; the bias
  // D's type.
  DType a_dtype = DType::kFloat32;
  DType b_dtype = DType::kFloat32;
  DType d_dtype = DType::kFloat32;
  DType bias_dtype = DType::kFloat32;
  // Bias for kBias / kBiasRelu: n elements of bias_dtype on the device,
  // fixed for the plan.
  const void* bias = nullptr;
  // Byte alignment the A/B/D addresses are guaranteed to have (a power of two
  // up to 256); lower alignment narrows the algorithms cuBLASLt may pick.
  int64_t alignment_a = 256;
  int64_t alignment_b = 256;
  int64_t alignment_d = 256;
  // float32 math, or TF32 tensor-core math for float32 operands (faster,
  // relative error near 3e-4); GemmComputeFor picks it from a model's
  // setting.
  GemmCompute compute = GemmCompute::kFloat32;
  // The most workspace an algorithm may need: only those that need at most
  // this are proposed.
  size_t workspace_bytes = 0;
};

// What an algorithm choice is recorded under (AlgorithmChoices): every option
// that shapes cuBLASLt's proposals (sizes, transposes, batches and strides,
// whether C is read, epilogue, types, alignments, compute, workspace), so
// that GEMMs of one problem share one timing wherever they occur: BERT's 72
// GEMM nodes are 4 problems at each (batch, bucket), and keying by node had
// 30 keys time all 72 (most of a 90 s load). Two GEMMs with one key get the
// same proposals, so a candidate index means the same algorithm in both.
std::string GemmChoiceKey(const GemmOptions& options);

// How many of cuBLASLt's heuristic results ChooseFastestAlgorithm times.
inline constexpr int kGemmCandidateAlgorithms = 8;

// cuBLASLt's heuristic's answer for one problem (one GemmChoiceKey): its
// proposed algorithms, best first, and the workspace each needs. Asked once
// per problem: the plans of the same problem on other slots and keys reuse
// it (through AlgorithmChoices), where asking again took 1 s of BERT-base's
// load at 4 slots. An algorithm is plain data, valid with any handle.
struct GemmProposals {
  std::vector<cublasLtMatmulAlgo_t> algorithms;
  std::vector<size_t> workspaces;
};

class CublasLtGemm {
 public:
  // Chooses an algorithm by cuBLASLt's heuristic for these exact sizes and
  // types, or from `proposals` already asked for them. Errors name the
  // sizes, the types and what cuBLASLt refused; combinations outside Note
  // [GEMM datatypes] are InvalidArgument.
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(
      cublasLtHandle_t handle, const GemmOptions& options,
      std::shared_ptr<const GemmProposals> proposals = nullptr);

  // What the heuristic proposed (or `proposals` gave), to reuse.
  [[nodiscard]] std::shared_ptr<const GemmProposals> proposals() const;

  // Times each algorithm cuBLASLt's heuristic proposed (up to
  // kGemmCandidateAlgorithms) on these operands and keeps the fastest: the
  // heuristic's first choice is sometimes several times slower for small m
  // (seen on the H200: m = 8). Each is timed as a captured graph's replay
  // (Note [Timing GEMM algorithms]), so `stream` is a created stream, not the
  // legacy default one. Writes `d`; synchronises `stream`. Call at plan
  // time, never while capturing. The operands are device arrays of
  // options().a_dtype, b_dtype and d_dtype.
  absl::Status ChooseFastestAlgorithm(const void* a, const void* b, void* d, void* workspace,
                                      cudaStream_t stream);

  // The index of the current algorithm among cuBLASLt's proposals, and the
  // use of another plan's choice for the same sizes (AlgorithmChoices)
  // without timing again. InvalidArgument for an index out of range.
  [[nodiscard]] int candidate() const;
  absl::Status UseCandidate(int index);

  // The workspace the current algorithm needs (at most
  // options().workspace_bytes): what Enqueue's `workspace` must hold.
  [[nodiscard]] size_t workspace_bytes() const;

  // Enqueues the GEMM on `stream`: no allocation, no synchronisation.
  // `workspace` holds workspace_bytes() (ChooseFastestAlgorithm's: up to
  // options().workspace_bytes). a, b and d as for ChooseFastestAlgorithm.
  absl::Status Enqueue(const void* a, const void* b, void* d, void* workspace,
                       cudaStream_t stream) const;

  [[nodiscard]] const GemmOptions& options() const { return options_; }

  ~CublasLtGemm();

  // Implementation details follow.
  struct Descriptors;

 private:
  CublasLtGemm(cublasLtHandle_t handle, const GemmOptions& options,
               std::unique_ptr<Descriptors> descriptors);

  cublasLtHandle_t handle_ = nullptr;  // not owned
  GemmOptions options_;
  std::unique_ptr<Descriptors> descriptors_;
};

}  // namespace graphserve
