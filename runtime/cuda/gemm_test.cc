#include "runtime/cuda/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "common/cuda_handles.h"
#include "runtime/cuda/kernel_test_util.h"

namespace graphserve {
namespace {

struct GemmCase {
  int64_t m, n, k, batch;
  bool trans_a, trans_b;
  GemmEpilogue epilogue;
  float alpha, beta;
};

// float64 reference of GemmOptions' definition, row-major.
std::vector<double> ReferenceGemm(const GemmCase& c, const std::vector<float>& a,
                                  const std::vector<float>& b, const std::vector<float>& d0,
                                  const std::vector<float>& bias) {
  std::vector<double> d(c.batch * c.m * c.n);
  for (int64_t p = 0; p < c.batch; ++p) {
    const float* A = a.data() + p * c.m * c.k;
    const float* B = b.data() + p * c.k * c.n;
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < c.k; ++l) {
          const double x = c.trans_a ? A[l * c.m + i] : A[i * c.k + l];
          const double y = c.trans_b ? B[j * c.k + l] : B[l * c.n + j];
          sum += x * y;
        }
        const int64_t at = p * c.m * c.n + i * c.n + j;
        double v = c.alpha * sum + c.beta * d0[at];
        if (c.epilogue == GemmEpilogue::kBias || c.epilogue == GemmEpilogue::kBiasRelu) v += bias[j];
        if (c.epilogue == GemmEpilogue::kRelu || c.epilogue == GemmEpilogue::kBiasRelu) {
          v = std::max(v, 0.0);
        }
        d[at] = v;
      }
    }
  }
  return d;
}

std::vector<float> RandomVector(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

class CublasLtGemmTest : public ::testing::TestWithParam<GemmCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};


TEST_P(CublasLtGemmTest, MatchesFloat64Reference) {
  const GemmCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k + c.batch));
  const std::vector<float> a = RandomVector(c.batch * c.m * c.k, rng);
  const std::vector<float> b = RandomVector(c.batch * c.k * c.n, rng);
  const std::vector<float> d0 = RandomVector(c.batch * c.m * c.n, rng);
  const std::vector<float> bias = RandomVector(c.n, rng);
  const std::vector<double> expected = ReferenceGemm(c, a, b, d0, bias);

  absl::StatusOr<CublasLtHandle> handle = CublasLtHandle::Create();
  ASSERT_TRUE(handle.ok()) << handle.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<DeviceBuffer> da = Upload(a), db = Upload(b), dd = Upload(d0), dbias = Upload(bias);
  ASSERT_TRUE(da.ok() && db.ok() && dd.ok() && dbias.ok());
  constexpr size_t kWorkspace = size_t{4} << 20;
  absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate(kWorkspace);
  ASSERT_TRUE(workspace.ok());

  GemmOptions options;
  options.m = c.m;
  options.n = c.n;
  options.k = c.k;
  options.trans_a = c.trans_a;
  options.trans_b = c.trans_b;
  options.batch = c.batch;
  options.stride_a = c.m * c.k;
  options.stride_b = c.k * c.n;
  options.stride_d = c.m * c.n;
  options.alpha = c.alpha;
  options.beta = c.beta;
  options.epilogue = c.epilogue;
  options.bias = static_cast<const float*>(dbias->get());
  options.workspace_bytes = kWorkspace;
  absl::StatusOr<std::unique_ptr<CublasLtGemm>> gemm = CublasLtGemm::Create(handle->get(), options);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  // The fastest of cuBLASLt's proposals must compute the same product. It
  // writes its own scratch output, so `dd` still holds C for beta != 0.
  absl::StatusOr<DeviceBuffer> scratch = Upload(d0);
  ASSERT_TRUE(scratch.ok());
  const absl::Status tuned = (*gemm)->ChooseFastestAlgorithm(
      static_cast<const float*>(da->get()), static_cast<const float*>(db->get()),
      static_cast<float*>(scratch->get()), workspace->get(), stream->get());
  ASSERT_TRUE(tuned.ok()) << tuned;
  ASSERT_TRUE((*gemm)
                  ->Enqueue(static_cast<const float*>(da->get()), static_cast<const float*>(db->get()),
                            static_cast<float*>(dd->get()), workspace->get(), stream->get())
                  .ok());
  std::vector<float> d(d0.size());
  ASSERT_EQ(cudaMemcpyAsync(d.data(), dd->get(), d.size() * sizeof(float), cudaMemcpyDeviceToHost,
                            stream->get()),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);

  double error = 0, norm = 0;
  for (size_t i = 0; i < d.size(); ++i) {
    ASSERT_FALSE(std::isnan(d[i])) << "element " << i;
    error += (d[i] - expected[i]) * (d[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  // float32 arithmetic lands far under 1e-5 relative error; TF32 would not.
  EXPECT_LT(std::sqrt(error / norm), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CublasLtGemmTest,
    ::testing::Values(
        GemmCase{1, 1024, 512, 1, false, true, GemmEpilogue::kBiasRelu, 1.0f, 0.0f},  // MLP, batch 1
        GemmCase{64, 256, 512, 1, false, true, GemmEpilogue::kBias, 1.0f, 0.0f},
        GemmCase{37, 19, 23, 1, false, false, GemmEpilogue::kNone, 1.0f, 0.0f},      // odd sizes
        GemmCase{13, 7, 5, 1, true, false, GemmEpilogue::kRelu, 0.5f, 0.0f},
        GemmCase{9, 11, 6, 1, true, true, GemmEpilogue::kNone, 2.0f, 0.75f},         // accumulate
        GemmCase{27, 27, 16, 8, false, true, GemmEpilogue::kNone, 1.0f, 0.0f},       // DLRM interaction
        GemmCase{16, 64, 16, 12, false, false, GemmEpilogue::kNone, 0.25f, 0.0f}));  // attention

}  // namespace
}  // namespace graphserve
