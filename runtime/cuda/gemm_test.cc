#include "runtime/cuda/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "common/cuda_handles.h"
#include "common/dtype_table.h"
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

// 16-bit operands (Note [GEMM datatypes]): A and B of `operands`, D (and C,
// the bias) of `output`, accumulated in float32.
struct HalfGemmCase {
  DType operands;
  DType output;
  GemmCase shape;
};

std::string HalfGemmCaseName(const ::testing::TestParamInfo<HalfGemmCase>& info) {
  const GemmCase& c = info.param.shape;
  return std::string(DTypeName(info.param.operands)) + "_to_" + DTypeName(info.param.output) +
         "_m" + std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k) +
         "b" + std::to_string(c.batch) + (c.trans_a ? "_At" : "") + (c.trans_b ? "_Bt" : "");
}

class CublasLtHalfGemmTest : public ::testing::TestWithParam<HalfGemmCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_P(CublasLtHalfGemmTest, MatchesFloat64ReferenceOfTheSameHalfInputs) {
  const HalfGemmCase param = GetParam();
  const GemmCase& c = param.shape;
  std::mt19937 rng(static_cast<uint32_t>(c.m * 131 + c.n * 17 + c.k + c.batch));
  std::vector<float> a = RandomVector(c.batch * c.m * c.k, rng);
  std::vector<float> b = RandomVector(c.batch * c.k * c.n, rng);
  std::vector<float> d0 = RandomVector(c.batch * c.m * c.n, rng);
  std::vector<float> bias = RandomVector(c.n, rng);
  // Uploading rounds each vector to its device type in place, so the
  // reference reads exactly the values the GPU reads.
  absl::StatusOr<DeviceBuffer> da = UploadAs(param.operands, a);
  absl::StatusOr<DeviceBuffer> db = UploadAs(param.operands, b);
  absl::StatusOr<DeviceBuffer> dd = UploadAs(param.output, d0);
  absl::StatusOr<DeviceBuffer> dbias = UploadAs(param.output, bias);
  ASSERT_TRUE(da.ok() && db.ok() && dd.ok() && dbias.ok());
  std::vector<float> d0_again = d0;  // already representable: rounds to itself
  absl::StatusOr<DeviceBuffer> scratch = UploadAs(param.output, d0_again);
  ASSERT_TRUE(scratch.ok());
  const std::vector<double> exact = ReferenceGemm(c, a, b, d0, bias);
  // What the rounding errors scale with: the same GEMM on magnitudes.
  GemmCase magnitudes = c;
  magnitudes.alpha = std::fabs(c.alpha);
  magnitudes.beta = std::fabs(c.beta);
  magnitudes.epilogue =
      c.epilogue == GemmEpilogue::kBias || c.epilogue == GemmEpilogue::kBiasRelu
          ? GemmEpilogue::kBias
          : GemmEpilogue::kNone;
  const std::vector<double> scale_exact =
      ReferenceGemm(magnitudes, Abs(a), Abs(b), Abs(d0), Abs(bias));

  absl::StatusOr<CublasLtHandle> handle = CublasLtHandle::Create();
  ASSERT_TRUE(handle.ok()) << handle.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
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
  options.a_dtype = param.operands;
  options.b_dtype = param.operands;
  options.d_dtype = param.output;
  options.bias_dtype = param.output;
  options.bias = dbias->get();
  // What a model with TF32 allowed asks for: 16-bit operands still compute
  // in float32.
  options.compute = GemmComputeFor(param.operands, /*allow_tf32=*/true);
  ASSERT_EQ(options.compute, GemmCompute::kFloat32);
  options.workspace_bytes = kWorkspace;
  absl::StatusOr<std::unique_ptr<CublasLtGemm>> gemm = CublasLtGemm::Create(handle->get(), options);
  ASSERT_TRUE(gemm.ok()) << gemm.status();
  const absl::Status tuned = (*gemm)->ChooseFastestAlgorithm(
      da->get(), db->get(), scratch->get(), workspace->get(), stream->get());
  ASSERT_TRUE(tuned.ok()) << tuned;
  const absl::Status enqueued =
      (*gemm)->Enqueue(da->get(), db->get(), dd->get(), workspace->get(), stream->get());
  ASSERT_TRUE(enqueued.ok()) << enqueued;
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  absl::StatusOr<std::vector<float>> d = DownloadAs(param.output, *dd, d0.size());
  ASSERT_TRUE(d.ok()) << d.status();

  // Tolerance. The products of 16-bit values are exact in float32, so the
  // float32 sums of at most k = 512 products differ from the float64 sum by
  // at most about k * 2^-24 (3e-5) of the sum of their magnitudes (`scale`,
  // which also covers beta * C and the bias); rounding D to its type once
  // adds at most its unit roundoff u (2^-11 float16, 2^-8 bfloat16, 2^-24
  // float32) of |D| <= scale. Per element, then, the error stays under
  // (u + 3e-5) * scale: kTolerance is twice that, so that a failure means
  // a wrong operand, layout or type and never an unlucky rounding. The
  // root-mean-square error relative to D, dominated by the final rounding,
  // must stay under 2u as well: a bound on scale alone would pass a
  // result whose every element is off by one part in a few hundred.
  const double u = UnitRoundoff(param.output);
  const double tolerance = 2 * (u + 3e-5);
  std::vector<float> want(exact.begin(), exact.end());
  std::vector<float> scale(scale_exact.begin(), scale_exact.end());
  EXPECT_TRUE(MatchesReference(*d, want, tolerance, scale)) << (*gemm)->candidate();
  double error = 0, norm = 0;
  for (size_t i = 0; i < d->size(); ++i) {
    error += ((*d)[i] - exact[i]) * ((*d)[i] - exact[i]);
    norm += exact[i] * exact[i];
  }
  EXPECT_LT(std::sqrt(error / norm), 2 * u + 3e-5);
}

std::vector<HalfGemmCase> HalfGemmCases() {
  const GemmCase shapes[] = {
      {1, 1024, 512, 1, false, true, GemmEpilogue::kBiasRelu, 1.0f, 0.0f},  // MLP, batch 1
      {64, 256, 512, 1, false, true, GemmEpilogue::kBias, 1.0f, 0.0f},      // Linear
      {37, 19, 23, 1, false, false, GemmEpilogue::kNone, 1.0f, 0.0f},       // odd sizes
      {9, 11, 6, 1, true, true, GemmEpilogue::kNone, 2.0f, 0.75f},          // accumulate into C
      {16, 64, 16, 12, false, false, GemmEpilogue::kNone, 0.25f, 0.0f},     // attention
  };
  std::vector<HalfGemmCase> cases;
  for (const DType operands : {DType::kFloat16, DType::kBFloat16}) {
    for (const GemmCase& shape : shapes) cases.push_back({operands, operands, shape});
    // float32 D: a classifier head or logits kept in float32.
    cases.push_back({operands, DType::kFloat32, shapes[1]});
    cases.push_back({operands, DType::kFloat32, shapes[3]});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Types, CublasLtHalfGemmTest, ::testing::ValuesIn(HalfGemmCases()),
                         HalfGemmCaseName);

// Type checks come before any cuBLASLt call: these run without a device.
TEST(CublasLtGemmTypesTest, RefusesCombinationsOutsideTheNoteNamingThem) {
  GemmOptions base;
  base.m = 4;
  base.n = 8;
  base.k = 16;
  const auto refused = [](const GemmOptions& options, const std::string& why,
                          absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
    const absl::StatusOr<std::unique_ptr<CublasLtGemm>> gemm =
        CublasLtGemm::Create(/*handle=*/nullptr, options);
    EXPECT_EQ(gemm.status().code(), code) << gemm.status();
    EXPECT_NE(gemm.status().message().find(why), std::string::npos) << gemm.status();
    EXPECT_NE(gemm.status().message().find("GEMM m=4 n=8 k=16"), std::string::npos)
        << gemm.status();
  };
  GemmOptions mixed = base;
  mixed.a_dtype = DType::kFloat16;
  refused(mixed, "A and B must be of the same type");
  // Valid MatMul types the GEMM does not take: unsupported, not invalid.
  GemmOptions integer = base;
  integer.a_dtype = integer.b_dtype = DType::kInt8;
  refused(integer, "GEMMs here take float32, float16 or bfloat16 operands, not int8",
          absl::StatusCode::kUnimplemented);
  GemmOptions float64 = base;
  float64.a_dtype = float64.b_dtype = float64.d_dtype = DType::kFloat64;
  refused(float64, "not float64", absl::StatusCode::kUnimplemented);
  GemmOptions narrowing = base;
  narrowing.d_dtype = DType::kBFloat16;  // float32 operands, bfloat16 D
  refused(narrowing, "D must be of A's type or float32");
  GemmOptions cross = base;
  cross.a_dtype = cross.b_dtype = DType::kFloat16;
  cross.d_dtype = DType::kBFloat16;
  refused(cross, "D must be of A's type or float32");
  GemmOptions tf32 = base;
  tf32.a_dtype = tf32.b_dtype = tf32.d_dtype = DType::kBFloat16;
  tf32.compute = GemmCompute::kFloat32Tf32;
  refused(tf32, "TF32 compute rounds float32 operands");
  GemmOptions bias = base;
  bias.a_dtype = bias.b_dtype = bias.d_dtype = DType::kFloat16;
  bias.epilogue = GemmEpilogue::kBias;
  static const float kSomeAddress = 0;  // never read: Create refuses first
  bias.bias = &kSomeAddress;
  refused(bias, "the bias must be of D's type");
}

TEST(CublasLtGemmTypesTest, Tf32OnlyForFloat32OperandsWhereAllowed) {
  EXPECT_EQ(GemmComputeFor(DType::kFloat32, true), GemmCompute::kFloat32Tf32);
  EXPECT_EQ(GemmComputeFor(DType::kFloat32, false), GemmCompute::kFloat32);
  EXPECT_EQ(GemmComputeFor(DType::kFloat16, true), GemmCompute::kFloat32);
  EXPECT_EQ(GemmComputeFor(DType::kBFloat16, true), GemmCompute::kFloat32);
}

}  // namespace
}  // namespace graphserve
