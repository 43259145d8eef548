// Which float32 GEMM kernels cuBLASLt proposes under TF32, and how fast each
// runs, for BERT-base's four Linear shapes at batch 1 and 8 of 128 tokens
// (issue 28: TF32 BERT was slower than PyTorch's graph, whose cuBLAS picked
// Hopper TF32 kernels where our timing of cuBLASLt's first 8 proposals kept
// Ampere ones and, for one GEMM, a float FMA kernel). Per shape and weight
// layout (K-major [n, k] read transposed, "tn"; or [k, n], "nn"), with a
// bias epilogue as GraphServe plans them: each of the heuristic's first
// kProposals algorithms with its time (warm, back to back), its config (id,
// tile, stages, split-K), and whether GraphServe's 8 would time it; then
// cublasGemmEx's time (cuBLAS's own choice, what PyTorch calls; no bias).
// Times are per launch, eager back to back and as a graph's replay (Note
// [Timing GEMM algorithms] in runtime/cuda/gemm.cc).
// Runs on a GPU machine. Without arguments, the BERT-base shapes above under
// TF32; `--fp32 MxNxK...` probes the given shapes in float32 without TF32
// (issue 28: the small encoder at batch 1, whose m = 16 GEMMs ran FMA
// kernels on a few CTAs where PyTorch's cuBLAS ran gemmSN and split-K).

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr int kProposals = 32;
constexpr int kOursTimed = 8;  // runtime/cuda/gemm.h's kGemmCandidateAlgorithms
constexpr int kWarmup = 3;
constexpr int kTimed = 50;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

#define CHECK_CUDA(call)                                                             \
  do {                                                                               \
    if (cudaError_t e = (call); e != cudaSuccess) {                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorString(e));                                           \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)
#define CHECK_CUBLAS(call)                                                           \
  do {                                                                               \
    if (cublasStatus_t s = (call); s != CUBLAS_STATUS_SUCCESS) {                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,              \
                   cublasGetStatusName(s));                                          \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

// Microseconds per launch of `launch` on `stream`, negative if a launch
// fails: eagerly, back to back (host-bound for short GEMMs: what GraphServe
// timed before Note [Timing GEMM algorithms]), and as one replay of a graph
// of kTimed launches (the kernels' own time, as a model's graph runs them).
struct Times {
  double eager_us, graph_us;
};

Times TimeUs(cudaStream_t stream, const std::function<bool(cudaStream_t)>& launch) {
  for (int i = 0; i < kWarmup; ++i) {
    if (!launch(stream)) return {-1, -1};
  }
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  const auto elapsed_us = [&] {
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    return 1000.0 * ms / kTimed;
  };
  Times times{};
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < kTimed; ++i) launch(stream);
  CHECK_CUDA(cudaEventRecord(stop, stream));
  times.eager_us = elapsed_us();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kTimed; ++i) launch(stream);
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaEventRecord(start, stream));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaEventRecord(stop, stream));
  times.graph_us = elapsed_us();
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  return times;
}

int ConfigAttr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t value = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return static_cast<int>(value);
}

struct Buffers {
  float *a, *w, *bias, *d;
  void* workspace;
  cudaStream_t stream;
};

// Row-major D[m, n] = A[m, k] W + bias, W K-major ([n, k]) or not ([k, n]).
void ProbeLt(cublasLtHandle_t lt, const Buffers& buf, int64_t m, int64_t n, int64_t k,
             bool k_major, cublasComputeType_t compute) {
  cublasLtMatmulDesc_t op;
  CHECK_CUBLAS(cublasLtMatmulDescCreate(&op, compute, CUDA_R_32F));
  const cublasOperation_t first = k_major ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t second = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &first, sizeof(first)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &second, sizeof(second)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &buf.bias,
                                              sizeof(buf.bias)));
  // Column-major views (Note [Row-major GEMM on column-major cuBLASLt]).
  cublasLtMatrixLayout_t w_layout, a_layout, d_layout;
  CHECK_CUBLAS(k_major ? cublasLtMatrixLayoutCreate(&w_layout, CUDA_R_32F, k, n, k)
                       : cublasLtMatrixLayoutCreate(&w_layout, CUDA_R_32F, n, k, n));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&a_layout, CUDA_R_32F, k, m, k));
  CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&d_layout, CUDA_R_32F, n, m, n));
  cublasLtMatmulPreference_t pref;
  CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = kWorkspaceBytes;
  CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace, sizeof(workspace)));
  cublasLtMatmulHeuristicResult_t results[kProposals] = {};
  int returned = 0;
  CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, op, w_layout, a_layout, d_layout, d_layout, pref,
                                              kProposals, results, &returned));
  std::printf("  cuBLASLt, weight %s: %d proposals\n", k_major ? "[n, k] (tn)" : "[k, n] (nn)",
              returned);
  const float alpha = 1, beta = 0;
  int eager_choice = -1, graph_choice = -1, fastest = -1;
  Times eager_best{}, graph_best{}, best{};
  for (int i = 0; i < returned; ++i) {
    const cublasLtMatmulAlgo_t& algo = results[i].algo;
    const Times t = TimeUs(buf.stream, [&](cudaStream_t stream) {
      return cublasLtMatmul(lt, op, &alpha, buf.w, w_layout, buf.a, a_layout, &beta, buf.d,
                            d_layout, buf.d, d_layout, &algo, buf.workspace,
                            results[i].workspaceSize, stream) == CUBLAS_STATUS_SUCCESS;
    });
    if (t.graph_us < 0) continue;
    if (i < kOursTimed && (eager_choice < 0 || t.eager_us < eager_best.eager_us)) {
      eager_choice = i;
      eager_best = t;
    }
    if (i < kOursTimed && (graph_choice < 0 || t.graph_us < graph_best.graph_us)) {
      graph_choice = i;
      graph_best = t;
    }
    if (fastest < 0 || t.graph_us < best.graph_us) {
      fastest = i;
      best = t;
    }
    std::printf("    %2d %s eager %7.2f us graph %7.2f us  id %3d tile %3d stages %3d split-k %2d\n",
                i, i < kOursTimed ? "*" : " ", t.eager_us, t.graph_us,
                ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_ID),
                ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
  }
  std::printf("    of the first %d: eager timing keeps %d (graph %.2f us), graph timing keeps %d "
              "(%.2f us); fastest of all %d (%.2f us)\n",
              kOursTimed, eager_choice, eager_best.graph_us, graph_choice, graph_best.graph_us,
              fastest, best.graph_us);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(w_layout);
  cublasLtMatrixLayoutDestroy(a_layout);
  cublasLtMatrixLayoutDestroy(d_layout);
  cublasLtMatmulDescDestroy(op);
}

// cuBLAS's own choice for the K-major layout, as PyTorch's Linear calls it.
void ProbeCublas(cublasHandle_t handle, const Buffers& buf, int64_t m, int64_t n, int64_t k,
                 cublasComputeType_t compute) {
  const float alpha = 1, beta = 0;
  CHECK_CUBLAS(cublasSetStream(handle, buf.stream));
  const Times t = TimeUs(buf.stream, [&](cudaStream_t) {
    return cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, buf.w, CUDA_R_32F, k,
                        buf.a, CUDA_R_32F, k, &beta, buf.d, CUDA_R_32F, n,
                        compute, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  std::printf("  cublasGemmEx (tn, no bias): eager %.2f us, graph %.2f us\n", t.eager_us,
              t.graph_us);
}

struct Shape {
  int64_t m, n, k;
  std::string name;
};

// BERT-base's Linear shapes at batch 1 and 8 of 128 tokens.
std::vector<Shape> BertShapes() {
  std::vector<Shape> shapes;
  for (int64_t m : {128, 1024}) {
    const std::string batch = " batch " + std::to_string(m / 128);
    shapes.push_back({m, 768, 768, "q/k/v/out projection" + batch});
    shapes.push_back({m, 3072, 768, "FFN up" + batch});
    shapes.push_back({m, 768, 3072, "FFN down" + batch});
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    long long m = 0, n = 0, k = 0;
    if (arg == "--fp32") {
      compute = CUBLAS_COMPUTE_32F;
    } else if (std::sscanf(arg.c_str(), "%lldx%lldx%lld", &m, &n, &k) == 3 && m > 0 && n > 0 &&
               k > 0 && m * k <= int64_t{1024} * 3072 && k * n <= int64_t{1024} * 3072 &&
               m * n <= int64_t{1024} * 3072) {
      shapes.push_back({m, n, k, arg});
    } else {
      std::fprintf(stderr, "usage: %s [--fp32] [MxNxK ...] (each operand at most 3M elements)\n",
                   argv[0]);
      return 2;
    }
  }
  if (shapes.empty()) shapes = BertShapes();
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %s\n", prop.name, compute == CUBLAS_COMPUTE_32F ? "float32" : "TF32");
  cublasLtHandle_t lt;
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasLtCreate(&lt));
  CHECK_CUBLAS(cublasCreate(&handle));
  constexpr int64_t kMaxElements = int64_t{1024} * 3072;
  Buffers buf;
  for (float** p : {&buf.a, &buf.w, &buf.d}) {
    CHECK_CUDA(cudaMalloc(p, kMaxElements * sizeof(float)));
    CHECK_CUDA(cudaMemset(*p, 0, kMaxElements * sizeof(float)));
  }
  CHECK_CUDA(cudaMalloc(&buf.bias, kMaxElements * sizeof(float)));
  CHECK_CUDA(cudaMemset(buf.bias, 0, kMaxElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&buf.workspace, kWorkspaceBytes));
  CHECK_CUDA(cudaStreamCreateWithFlags(&buf.stream, cudaStreamNonBlocking));
  for (const Shape& s : shapes) {
    std::printf("m %lld n %lld k %lld (%s)\n", static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), s.name.c_str());
    ProbeLt(lt, buf, s.m, s.n, s.k, /*k_major=*/true, compute);
    ProbeLt(lt, buf, s.m, s.n, s.k, /*k_major=*/false, compute);
    ProbeCublas(handle, buf, s.m, s.n, s.k, compute);
  }
  return 0;
}
