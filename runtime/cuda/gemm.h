#pragma once
// Row-major float32 GEMMs on cuBLASLt, with bias and ReLU fused into the
// epilogue:
//
//   D[b] = epilogue(alpha * op(A[b]) * op(B[b]) + beta * D[b])   for b < batch
//
// where op(X) = X or X^T and epilogue(x) = x, x + bias, or relu(x + bias) with
// bias a vector over the n output columns. Everything cuBLASLt needs (the
// operation and layout descriptors, the algorithm) is chosen in Create(); the
// workspace is the caller's, so Enqueue() only launches.

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace graphserve {

enum class GemmEpilogue {
  kNone,
  kBias,      // D += bias[n]
  kBiasRelu,  // D = relu(D + bias[n])
  kRelu,      // D = relu(D)
};

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
  float alpha = 1.0f;
  // Non-zero beta accumulates into the existing contents of D.
  float beta = 0.0f;
  GemmEpilogue epilogue = GemmEpilogue::kNone;
  // Bias for kBias / kBiasRelu: n floats on the device, fixed for the plan.
  const float* bias = nullptr;
  // Byte alignment the A/B/D addresses are guaranteed to have (a power of two
  // up to 256); lower alignment narrows the algorithms cuBLASLt may pick.
  int64_t alignment_a = 256;
  int64_t alignment_b = 256;
  int64_t alignment_d = 256;
  // TF32 tensor-core math (faster, relative error near 3e-4) or exact float32.
  bool allow_tf32 = false;
  // The most workspace an algorithm may need: only those that need at most
  // this are proposed.
  size_t workspace_bytes = 0;
};

// How many of cuBLASLt's heuristic results ChooseFastestAlgorithm times.
inline constexpr int kGemmCandidateAlgorithms = 8;

class CublasLtGemm {
 public:
  // Chooses an algorithm by cuBLASLt's heuristic for these exact sizes.
  // Errors name the sizes and what cuBLASLt refused.
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(cublasLtHandle_t handle,
                                                              const GemmOptions& options);

  // Times each algorithm cuBLASLt's heuristic proposed (up to
  // kGemmCandidateAlgorithms) on these operands and keeps the fastest: the
  // heuristic's first choice is sometimes several times slower for small m
  // (seen on the H200: m = 8). Writes `d`; synchronises `stream`. Call at
  // plan time, never while capturing.
  absl::Status ChooseFastestAlgorithm(const float* a, const float* b, float* d, void* workspace,
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
  // options().workspace_bytes).
  absl::Status Enqueue(const float* a, const float* b, float* d, void* workspace,
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
