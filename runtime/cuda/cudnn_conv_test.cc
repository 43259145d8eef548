#include "runtime/cuda/cudnn_conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/cuda_handles.h"
#include "common/dtype_table.h"
#include "runtime/cuda/kernel_test_util.h"
#include "runtime/host/nn_reference.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

// float32 summation of a few hundred products stays far under this, relative
// to the sum of their magnitudes; TF32 (10-bit mantissa) lands near 1e-3.
constexpr double kFloat32Tolerance = 1e-5;

// Output size along one dim, as binding computes it for symmetric pads.
int64_t OutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

struct ConvCase {
  std::string name;
  ConvParams params;
};

ConvCase MakeCase(std::string name, int64_t batch, int64_t in_channels, int64_t out_channels,
                  int64_t groups, int64_t in_h, int64_t in_w, int64_t kernel_h, int64_t kernel_w,
                  int64_t stride_h = 1, int64_t stride_w = 1, int64_t dilation_h = 1,
                  int64_t dilation_w = 1, int64_t pad_h = 0, int64_t pad_w = 0) {
  ConvParams p;
  p.batch = batch;
  p.in_channels = in_channels;
  p.out_channels = out_channels;
  p.groups = groups;
  p.in_h = in_h;
  p.in_w = in_w;
  p.kernel_h = kernel_h;
  p.kernel_w = kernel_w;
  p.stride_h = stride_h;
  p.stride_w = stride_w;
  p.dilation_h = dilation_h;
  p.dilation_w = dilation_w;
  p.pad_h = pad_h;
  p.pad_w = pad_w;
  p.out_h = OutSize(in_h, kernel_h, stride_h, dilation_h, pad_h);
  p.out_w = OutSize(in_w, kernel_w, stride_w, dilation_w, pad_w);
  return {std::move(name), p};
}

std::vector<ConvCase> ConvCases() {
  return {
      MakeCase("Basic3x3Pad1OddSpatial", 2, 8, 16, 1, 15, 13, 3, 3, 1, 1, 1, 1, 1, 1),
      MakeCase("Groups2Stride2", 2, 8, 12, 2, 17, 17, 3, 3, 2, 2, 1, 1, 1, 1),
      MakeCase("Depthwise3x3", 2, 16, 16, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1),
      MakeCase("Depthwise5x5Stride2", 1, 12, 12, 12, 19, 19, 5, 5, 2, 2, 1, 1, 2, 2),
      MakeCase("DepthwiseMultiplier2", 2, 6, 12, 6, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1),
      MakeCase("Pointwise1x1", 3, 32, 24, 1, 9, 11, 1, 1),
      MakeCase("Pointwise1x1Stride2", 2, 16, 8, 1, 10, 7, 1, 1, 2, 2),
      MakeCase("Kernel5x5Pad2", 2, 4, 8, 1, 12, 12, 5, 5, 1, 1, 1, 1, 2, 2),
      MakeCase("Dilation2", 2, 6, 6, 1, 13, 13, 3, 3, 1, 1, 2, 2, 2, 2),
      MakeCase("Kernel1x7", 2, 8, 8, 1, 9, 9, 1, 7, 1, 1, 1, 1, 0, 3),
      MakeCase("Kernel7x1", 2, 8, 8, 1, 9, 9, 7, 1, 1, 1, 1, 1, 3, 0),
      MakeCase("OneDimensional", 3, 4, 6, 1, 1, 50, 1, 5, 1, 2, 1, 2, 0, 4),
      MakeCase("OneDimensionalGroups", 2, 8, 8, 4, 1, 37, 1, 3, 1, 1, 1, 1, 0, 1),
      MakeCase("Batch64", 64, 3, 4, 1, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1),
      MakeCase("StemBatch1", 1, 3, 8, 1, 32, 32, 7, 7, 2, 2, 1, 1, 3, 3),
      MakeCase("MixedStrideDilation", 2, 4, 6, 2, 11, 15, 3, 3, 2, 1, 1, 2, 1, 2),
      MakeCase("KernelCoversInput", 16, 5, 7, 1, 5, 5, 5, 5),  // images without specials too
      MakeCase("LargePadSmallInput", 2, 3, 5, 1, 2, 3, 3, 3, 1, 1, 1, 1, 2, 2),
  };
}

std::vector<float> RandomNormal(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

std::vector<float> Download(const DeviceBuffer& buffer, size_t count) {
  std::vector<float> host(count);
  EXPECT_EQ(cudaMemcpy(host.data(), buffer.get(), count * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

const float* In(const DeviceBuffer& b) { return static_cast<const float*>(b.get()); }
float* Out(const DeviceBuffer& b) { return static_cast<float*>(b.get()); }

// Operands of one case on host and device, and the float64 reference.
struct ConvProblem {
  std::vector<float> x, w, want, scale;
  DeviceBuffer dx, dw, dy;
  size_t y_count = 0;
};

void MakeProblem(const ConvParams& p, bool specials, ConvProblem& out) {
  std::mt19937 rng(static_cast<uint32_t>(p.batch * 7919 + p.in_channels * 131 + p.in_h * 17 +
                                         p.in_w + p.kernel_h * 3 + p.kernel_w));
  const int64_t icpg = p.in_channels / p.groups;
  out.x = RandomNormal(p.batch * p.in_channels * p.in_h * p.in_w, rng);
  out.w = RandomNormal(p.out_channels * icpg * p.kernel_h * p.kernel_w, rng);
  if (specials) {
    InjectSpecials(out.x, icpg * p.kernel_h * p.kernel_w, 0.2, rng);
    // And a NaN where output [0, 0, 0, 0] reads its first tap inside the
    // input, so that every case has a NaN output whatever its strides skip.
    const int64_t kh = (p.pad_h + p.dilation_h - 1) / p.dilation_h;
    const int64_t kw = (p.pad_w + p.dilation_w - 1) / p.dilation_w;
    const int64_t ih = kh * p.dilation_h - p.pad_h;
    const int64_t iw = kw * p.dilation_w - p.pad_w;
    if (kh < p.kernel_h && kw < p.kernel_w && ih < p.in_h && iw < p.in_w) {
      out.x[ih * p.in_w + iw] = kNaN;
    }
  }
  out.y_count = p.batch * p.out_channels * p.out_h * p.out_w;
  out.want.resize(out.y_count);
  out.scale.resize(out.y_count);
  ConvReference(p, out.x.data(), out.w.data(), nullptr, out.want.data());
  // The sum of the products' magnitudes: what float32 rounding scales with.
  ConvReference(p, Abs(out.x).data(), Abs(out.w).data(), nullptr, out.scale.data());
  absl::StatusOr<DeviceBuffer> dx = Upload(out.x);
  absl::StatusOr<DeviceBuffer> dw = Upload(out.w);
  absl::StatusOr<DeviceBuffer> dy = DeviceBuffer::Allocate(out.y_count * sizeof(float));
  ASSERT_TRUE(dx.ok() && dw.ok() && dy.ok());
  out.dx = *std::move(dx);
  out.dw = *std::move(dw);
  out.dy = *std::move(dy);
}

class CudnnConvTest : public ::testing::TestWithParam<ConvCase> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
    ASSERT_TRUE(handle.ok()) << handle.status();
    handle_ = *std::move(handle);
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  // Fills y with NaN (beta = 0 must not read it), enqueues, downloads.
  std::vector<float> Run(const CudnnConv& conv, const ConvProblem& problem) {
    EXPECT_EQ(cudaMemset(problem.dy.get(), 0xFF, problem.y_count * sizeof(float)), cudaSuccess);
    absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate(conv.workspace_bytes());
    EXPECT_TRUE(workspace.ok()) << workspace.status();
    const absl::Status status = conv.Enqueue(In(problem.dx), In(problem.dw), Out(problem.dy),
                                             workspace->get(), stream_.get());
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
    return Download(problem.dy, problem.y_count);
  }

  CudnnHandle handle_;
  CudaStream stream_;
};

// Exact float32 (TF32 off) with NaN, +-Inf and 1e30 inputs, first with the
// heuristic's algorithm, then with the fastest one.
TEST_P(CudnnConvTest, MatchesReferenceWithSpecialValues) {
  const ConvParams& p = GetParam().params;
  ConvProblem problem;
  ASSERT_NO_FATAL_FAILURE(MakeProblem(p, /*specials=*/true, problem));
  // The case must exercise both the special values and the arithmetic.
  const auto nans = std::count_if(problem.want.begin(), problem.want.end(),
                                  [](float v) { return std::isnan(v); });
  const auto finite = std::count_if(problem.want.begin(), problem.want.end(),
                                    [](float v) { return std::isfinite(v); });
  ASSERT_GT(nans, 0) << "the case must see a NaN";
  ASSERT_GT(finite, 0) << "the case must check arithmetic";

  absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
      CudnnConv::Create(handle_.get(), p, /*allow_tf32=*/false);
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_TRUE(
      MatchesReference(Run(**conv, problem), problem.want, kFloat32Tolerance, problem.scale))
      << "heuristic algorithm " << (*conv)->choice();

  const absl::Status tuned = (*conv)->ChooseFastestAlgorithm(In(problem.dx), In(problem.dw),
                                                             Out(problem.dy), stream_.get());
  ASSERT_TRUE(tuned.ok()) << tuned;
  EXPECT_TRUE(
      MatchesReference(Run(**conv, problem), problem.want, kFloat32Tolerance, problem.scale))
      << "fastest algorithm " << (*conv)->choice();

  // Another slot executes the same plan on its own handle.
  absl::StatusOr<CudnnHandle> other_handle = CudnnHandle::Create();
  ASSERT_TRUE(other_handle.ok()) << other_handle.status();
  absl::StatusOr<std::unique_ptr<CudnnConv>> replayed =
      CudnnConv::CreateWithPlan(other_handle->get(), p, /*allow_tf32=*/false, (*conv)->plan());
  ASSERT_TRUE(replayed.ok()) << replayed.status();
  EXPECT_EQ((*replayed)->choice(), (*conv)->choice());
  EXPECT_EQ((*replayed)->workspace_bytes(), (*conv)->workspace_bytes());
  EXPECT_TRUE(
      MatchesReference(Run(**replayed, problem), problem.want, kFloat32Tolerance, problem.scale))
      << "shared plan " << (*replayed)->choice();
}

// TF32 is allowed to be inexact, but the plumbing (math type, algorithm
// choice, workspace) must still compute the convolution.
TEST_P(CudnnConvTest, Tf32MatchesReferenceLoosely) {
  const ConvParams& p = GetParam().params;
  ConvProblem problem;
  ASSERT_NO_FATAL_FAILURE(MakeProblem(p, /*specials=*/false, problem));
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
      CudnnConv::Create(handle_.get(), p, /*allow_tf32=*/true);
  ASSERT_TRUE(conv.ok()) << conv.status();
  const absl::Status tuned = (*conv)->ChooseFastestAlgorithm(In(problem.dx), In(problem.dw),
                                                             Out(problem.dy), stream_.get());
  ASSERT_TRUE(tuned.ok()) << tuned;
  constexpr double kTf32Tolerance = 1e-2;  // 10-bit mantissa products, FFT/Winograd allowed
  EXPECT_TRUE(MatchesReference(Run(**conv, problem), problem.want, kTf32Tolerance, problem.scale))
      << (*conv)->choice();
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudnnConvTest, ::testing::ValuesIn(ConvCases()),
                         [](const ::testing::TestParamInfo<ConvCase>& info) {
                           return info.param.name;
                         });

// 16-bit data with float32 accumulation (Note [cuDNN graph API
// convolution], Half precision), against the float64 reference of the same
// rounded inputs.
class CudnnConvHalfTest : public ::testing::TestWithParam<std::tuple<DType, ConvCase>> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<CudnnHandle> handle = CudnnHandle::Create();
    ASSERT_TRUE(handle.ok()) << handle.status();
    handle_ = *std::move(handle);
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  CudnnHandle handle_;
  CudaStream stream_;
};

TEST_P(CudnnConvHalfTest, MatchesReferenceOfTheSameHalfInputs) {
  const auto& [dtype, conv_case] = GetParam();
  ConvParams p = conv_case.params;
  p.dtype = dtype;
  std::mt19937 rng(static_cast<uint32_t>(p.batch * 7919 + p.in_channels * 131 + p.in_h * 17 +
                                         p.in_w + p.kernel_h * 3 + p.kernel_w));
  const int64_t icpg = p.in_channels / p.groups;
  const int64_t taps = icpg * p.kernel_h * p.kernel_w;
  std::vector<float> x = RandomNormal(p.batch * p.in_channels * p.in_h * p.in_w, rng);
  std::vector<float> w = RandomNormal(p.out_channels * taps, rng);
  // Uploading rounds x and w to the data type in place: the reference reads
  // exactly what cuDNN reads.
  absl::StatusOr<DeviceBuffer> dx = UploadAs(dtype, x);
  absl::StatusOr<DeviceBuffer> dw = UploadAs(dtype, w);
  ASSERT_TRUE(dx.ok() && dw.ok());
  const size_t y_count = p.batch * p.out_channels * p.out_h * p.out_w;
  absl::StatusOr<DeviceBuffer> dy = DeviceBuffer::Allocate(y_count * DTypeSize(dtype));
  ASSERT_TRUE(dy.ok());
  std::vector<float> want(y_count), scale(y_count);
  ConvReference(p, x.data(), w.data(), nullptr, want.data());
  ConvReference(p, Abs(x).data(), Abs(w).data(), nullptr, scale.data());

  // Tolerance. A product of two 16-bit values is exact in float32, so the
  // float32 sum of `taps` products (at most 147 here) is within about
  // taps * 2^-24 (under 1e-5) of the exact sum, relative to the sum of their
  // magnitudes (`scale`); rounding y to the data type once adds at most its
  // unit roundoff u (2^-11 float16, 2^-8 bfloat16) of |y| <= scale. Twice
  // their sum: a failure is a wrong type, layout or accumulator (a float16
  // accumulator alone would miss by several u), never an unlucky rounding.
  // The root-mean-square error relative to y is held to 2u besides, which
  // a result off by several u everywhere would fail.
  const double u = dtype == DType::kFloat16 ? 0x1p-11 : 0x1p-8;
  const double accumulation = static_cast<double>(taps) * 0x1p-24;
  const double tolerance = 2 * (u + accumulation);
  const auto check = [&](const CudnnConv& conv, const char* which) {
    ASSERT_EQ(cudaMemset(dy->get(), 0xFF, dy->bytes()), cudaSuccess);  // NaN in both types
    absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate(conv.workspace_bytes());
    ASSERT_TRUE(workspace.ok()) << workspace.status();
    const absl::Status status =
        conv.Enqueue(dx->get(), dw->get(), dy->get(), workspace->get(), stream_.get());
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
    absl::StatusOr<std::vector<float>> y = DownloadAs(dtype, *dy, y_count);
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(MatchesReference(*y, want, tolerance, scale)) << which << " " << conv.choice();
    double error = 0, norm = 0;
    for (size_t i = 0; i < y_count; ++i) {
      error += (double{(*y)[i]} - want[i]) * (double{(*y)[i]} - want[i]);
      norm += double{want[i]} * want[i];
    }
    EXPECT_LT(std::sqrt(error / norm), 2 * u + accumulation) << which << " " << conv.choice();
  };

  absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
      CudnnConv::Create(handle_.get(), p, /*allow_tf32=*/false);
  ASSERT_TRUE(conv.ok()) << conv.status();
  ASSERT_NO_FATAL_FAILURE(check(**conv, "heuristic algorithm"));
  const absl::Status tuned =
      (*conv)->ChooseFastestAlgorithm(dx->get(), dw->get(), dy->get(), stream_.get());
  ASSERT_TRUE(tuned.ok()) << tuned;
  ASSERT_NO_FATAL_FAILURE(check(**conv, "fastest algorithm"));

  // The plan is another slot's to share at this dtype, never at float32.
  absl::StatusOr<std::unique_ptr<CudnnConv>> shared =
      CudnnConv::CreateWithPlan(handle_.get(), p, /*allow_tf32=*/false, (*conv)->plan());
  ASSERT_TRUE(shared.ok()) << shared.status();
  ASSERT_NO_FATAL_FAILURE(check(**shared, "shared plan"));
  const absl::StatusOr<std::unique_ptr<CudnnConv>> float32 = CudnnConv::CreateWithPlan(
      handle_.get(), conv_case.params, /*allow_tf32=*/false, (*conv)->plan());
  EXPECT_EQ(float32.status().code(), absl::StatusCode::kInvalidArgument) << float32.status();
}

// [d0, d1, rest] as [d0, rest, d1]: NCHW to NHWC, or w to channels last.
std::vector<float> ChannelsLast(const std::vector<float>& v, int64_t d0, int64_t d1, int64_t rest) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < d0; ++a) {
    for (int64_t c = 0; c < d1; ++c) {
      for (int64_t r = 0; r < rest; ++r) out[(a * rest + r) * d1 + c] = v[(a * d1 + c) * rest + r];
    }
  }
  return out;
}

// The inverse of ChannelsLast.
std::vector<float> ChannelsFirst(const std::vector<float>& v, int64_t d0, int64_t d1,
                                 int64_t rest) {
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < d0; ++a) {
    for (int64_t c = 0; c < d1; ++c) {
      for (int64_t r = 0; r < rest; ++r) out[(a * d1 + c) * rest + r] = v[(a * rest + r) * d1 + c];
    }
  }
  return out;
}

// Note [Channels-last convolutions] in runtime/fusion.h: x, y or both NHWC
// (w then [K, R, S, C/groups]) give the NCHW result, element for element
// within the same bound as MatchesReferenceOfTheSameHalfInputs, with the
// heuristic's algorithm and the fastest; and a plan of one layout is not
// another's.
TEST_P(CudnnConvHalfTest, ChannelsLastLayoutsGiveTheSameResult) {
  const auto& [dtype, conv_case] = GetParam();
  std::mt19937 rng(17);
  ConvParams nchw = conv_case.params;
  nchw.dtype = dtype;
  const int64_t icpg = nchw.in_channels / nchw.groups;
  const int64_t taps = icpg * nchw.kernel_h * nchw.kernel_w;
  const int64_t in_plane = nchw.in_h * nchw.in_w;
  const int64_t out_plane = nchw.out_h * nchw.out_w;
  std::vector<float> x = RandomNormal(nchw.batch * nchw.in_channels * in_plane, rng);
  std::vector<float> w = RandomNormal(nchw.out_channels * taps, rng);
  // Rounded to the data type by the upload, in place: the reference reads it.
  ASSERT_TRUE(UploadAs(dtype, x).ok() && UploadAs(dtype, w).ok());
  const size_t y_count = nchw.batch * nchw.out_channels * out_plane;
  std::vector<float> want(y_count), scale(y_count);
  ConvReference(nchw, x.data(), w.data(), nullptr, want.data());
  ConvReference(nchw, Abs(x).data(), Abs(w).data(), nullptr, scale.data());
  const double u = dtype == DType::kFloat16 ? 0x1p-11 : 0x1p-8;
  const double tolerance = 2 * (u + static_cast<double>(taps) * 0x1p-24);

  const std::pair<ConvLayout, ConvLayout> layouts[] = {{ConvLayout::kNHWC, ConvLayout::kNHWC},
                                                       {ConvLayout::kNCHW, ConvLayout::kNHWC},
                                                       {ConvLayout::kNHWC, ConvLayout::kNCHW}};
  for (const auto& [x_layout, y_layout] : layouts) {
    ConvParams p = nchw;
    p.x_layout = x_layout;
    p.y_layout = y_layout;
    const std::string what = ConvParamsToString(p);
    std::vector<float> x_in =
        x_layout == ConvLayout::kNHWC ? ChannelsLast(x, p.batch, p.in_channels, in_plane) : x;
    std::vector<float> w_in = ChannelsLast(w, p.out_channels, icpg, p.kernel_h * p.kernel_w);
    absl::StatusOr<DeviceBuffer> dx = UploadAs(dtype, x_in);
    absl::StatusOr<DeviceBuffer> dw = UploadAs(dtype, w_in);
    absl::StatusOr<DeviceBuffer> dy = DeviceBuffer::Allocate(y_count * DTypeSize(dtype));
    ASSERT_TRUE(dx.ok() && dw.ok() && dy.ok()) << what;
    absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
        CudnnConv::Create(handle_.get(), p, /*allow_tf32=*/false);
    ASSERT_TRUE(conv.ok()) << what << ": " << conv.status();
    for (const char* which : {"heuristic algorithm", "fastest algorithm"}) {
      if (std::string(which) == "fastest algorithm") {
        const absl::Status tuned =
            (*conv)->ChooseFastestAlgorithm(dx->get(), dw->get(), dy->get(), stream_.get());
        ASSERT_TRUE(tuned.ok()) << what << ": " << tuned;
      }
      ASSERT_EQ(cudaMemset(dy->get(), 0xFF, dy->bytes()), cudaSuccess);
      absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate((*conv)->workspace_bytes());
      ASSERT_TRUE(workspace.ok()) << workspace.status();
      ASSERT_TRUE(
          (*conv)->Enqueue(dx->get(), dw->get(), dy->get(), workspace->get(), stream_.get()).ok());
      ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
      absl::StatusOr<std::vector<float>> y = DownloadAs(dtype, *dy, y_count);
      ASSERT_TRUE(y.ok()) << y.status();
      const std::vector<float> got = y_layout == ConvLayout::kNHWC
                                         ? ChannelsFirst(*y, p.batch, p.out_channels, out_plane)
                                         : *y;
      EXPECT_TRUE(MatchesReference(got, want, tolerance, scale))
          << what << ", " << which << " " << (*conv)->choice();
    }
    const absl::StatusOr<std::unique_ptr<CudnnConv>> other_layout =
        CudnnConv::CreateWithPlan(handle_.get(), nchw, /*allow_tf32=*/false, (*conv)->plan());
    EXPECT_EQ(other_layout.status().code(), absl::StatusCode::kInvalidArgument)
        << what << ": " << other_layout.status();
  }
}

std::string HalfCaseName(const ::testing::TestParamInfo<std::tuple<DType, ConvCase>>& info) {
  return std::string(DTypeName(std::get<0>(info.param))) + "_" + std::get<1>(info.param).name;
}

// float16 over every shape; bfloat16 over a dense, a depthwise and a
// pointwise one.
INSTANTIATE_TEST_SUITE_P(Float16, CudnnConvHalfTest,
                         ::testing::Combine(::testing::Values(DType::kFloat16),
                                            ::testing::ValuesIn(ConvCases())),
                         HalfCaseName);
INSTANTIATE_TEST_SUITE_P(
    BFloat16, CudnnConvHalfTest,
    ::testing::Combine(::testing::Values(DType::kBFloat16),
                       ::testing::Values(ConvCases()[0], ConvCases()[2], ConvCases()[5])),
    HalfCaseName);

class CudnnConvCaptureTest : public CudnnConvTest {};

// Enqueue recorded into a CUDA graph and replayed computes the same result:
// the convolution launches no allocation or synchronisation.
TEST_F(CudnnConvCaptureTest, EnqueueIsCapturableAndReplays) {
  const ConvParams p = MakeCase("Capture", 2, 8, 16, 2, 15, 13, 3, 3, 1, 1, 1, 1, 1, 1).params;
  ConvProblem problem;
  ASSERT_NO_FATAL_FAILURE(MakeProblem(p, /*specials=*/true, problem));
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
      CudnnConv::Create(handle_.get(), p, /*allow_tf32=*/false);
  ASSERT_TRUE(conv.ok()) << conv.status();
  // Plan time: choose, and run once outside capture.
  ASSERT_TRUE(
      (*conv)
          ->ChooseFastestAlgorithm(In(problem.dx), In(problem.dw), Out(problem.dy), stream_.get())
          .ok());
  absl::StatusOr<DeviceBuffer> workspace = DeviceBuffer::Allocate((*conv)->workspace_bytes());
  ASSERT_TRUE(workspace.ok());
  ASSERT_TRUE((*conv)
                  ->Enqueue(In(problem.dx), In(problem.dw), Out(problem.dy), workspace->get(),
                            stream_.get())
                  .ok());
  ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
  ASSERT_EQ(cudaMemset(problem.dy.get(), 0xFF, problem.y_count * sizeof(float)), cudaSuccess);

  ASSERT_EQ(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const absl::Status enqueued = (*conv)->Enqueue(In(problem.dx), In(problem.dw), Out(problem.dy),
                                                 workspace->get(), stream_.get());
  cudaGraph_t raw_graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream_.get(), &raw_graph), cudaSuccess);
  const CudaGraph graph(raw_graph);
  ASSERT_TRUE(enqueued.ok()) << enqueued;
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph.get(), nullptr, &nodes), cudaSuccess);
  EXPECT_GT(nodes, 0u) << "the convolution was not recorded into the graph";
  // Nothing ran while capturing: y still holds the NaN fill.
  std::vector<float> before = Download(problem.dy, problem.y_count);
  EXPECT_TRUE(std::all_of(before.begin(), before.end(), [](float v) { return std::isnan(v); }));

  cudaGraphExec_t raw_exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&raw_exec, graph.get(), 0), cudaSuccess);
  const CudaGraphExec exec(raw_exec);
  for (int replay = 0; replay < 2; ++replay) {  // a second replay reuses the workspace
    ASSERT_EQ(cudaGraphLaunch(exec.get(), stream_.get()), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
    EXPECT_TRUE(MatchesReference(Download(problem.dy, problem.y_count), problem.want,
                                 kFloat32Tolerance, problem.scale))
        << "replay " << replay << ", " << (*conv)->choice();
  }
}

// The tuning budget across sizes (Note [Convolution tuning budget]): a
// grouped convolution screened at its first size, pruned by what screening
// and the first size measured, and each choice still computing the
// convolution.
class CudnnConvBudgetTest : public CudnnConvTest {};

TEST_F(CudnnConvBudgetTest, SharesTimingsAcrossSizes) {
  constexpr int64_t kFirstBatch = 16;  // screened at 16 / kScreeningDivisor rows
  ConvSlowdowns slowdowns;
  for (const int64_t batch : {kFirstBatch, int64_t{3}}) {
    const ConvParams p =
        MakeCase("Depthwise", batch, 64, 64, 64, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1).params;
    ConvProblem problem;
    ASSERT_NO_FATAL_FAILURE(MakeProblem(p, /*specials=*/true, problem));
    absl::StatusOr<std::unique_ptr<CudnnConv>> conv =
        CudnnConv::CreateUnplanned(handle_.get(), p, /*allow_tf32=*/false);
    ASSERT_TRUE(conv.ok()) << conv.status();
    EXPECT_EQ((*conv)->workspace_bytes(), 0u);
    const absl::Status unplanned =
        (*conv)->Enqueue(In(problem.dx), In(problem.dw), Out(problem.dy), nullptr, stream_.get());
    EXPECT_EQ(unplanned.code(), absl::StatusCode::kFailedPrecondition) << unplanned;

    const ConvSlowdowns before = slowdowns;
    CudnnConv::TuningStats stats;
    CudnnConv::TuningOptions options;
    options.slowdowns = &slowdowns;
    options.stats = &stats;
    const absl::Status tuned = (*conv)->ChooseFastestAlgorithm(
        In(problem.dx), In(problem.dw), Out(problem.dy), stream_.get(), options);
    ASSERT_TRUE(tuned.ok()) << tuned;
    EXPECT_TRUE(
        MatchesReference(Run(**conv, problem), problem.want, kFloat32Tolerance, problem.scale))
        << "batch " << batch << ", " << (*conv)->choice();

    // The first size screens (its full batch then skips what screening
    // found hopeless: on the H200, 7 of the 8); the second knows the first.
    EXPECT_EQ(stats.screening_batch, batch == kFirstBatch ? kFirstBatch / kScreeningDivisor : 0);
    for (const CudnnConv::CandidateTiming& c : stats.candidates) {
      EXPECT_TRUE(c.batch == stats.screening_batch || c.batch == batch) << c.name;
    }
    EXPECT_GT(stats.built, 0);
    EXPECT_LE(stats.built + stats.skipped, kMaxTimedCandidates);
    // Only what was hopeless at an earlier size or at screening is skipped;
    // skipped, it did not run again, so it is still hopeless in the kept
    // timings. The choice ran here, as the fastest or close to it.
    int hopeless = 0;
    for (const auto& [name, slowdown] : slowdowns) hopeless += slowdown >= kHopelessSlowdown;
    EXPECT_LE(stats.skipped, hopeless);
    EXPECT_FALSE(RuledOutByOtherSizes(p, before, (*conv)->choice()));
    ASSERT_TRUE(slowdowns.count((*conv)->choice())) << (*conv)->choice();
    EXPECT_LT(slowdowns.at((*conv)->choice()), kHopelessSlowdown);
  }
}

// The budget's rule is pure arithmetic on times; these run without a device.
TEST(ConvTuningRuleTest, FirstRunRulesOutOnlyExpensiveHopelessRuns) {
  constexpr float kNone = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(RuledOutByFirstRun(1000.0f, kNone)) << "nothing timed yet to compare with";
  // A cheap first run is timed again, however many times the best it is:
  // its one-time costs may dominate it, and a second run costs little.
  EXPECT_FALSE(RuledOutByFirstRun(0.5f, 0.01f));
  EXPECT_FALSE(RuledOutByFirstRun(kHopelessSlowdown * 0.01f + kFirstRunAllowanceMs, 0.01f));
  EXPECT_TRUE(RuledOutByFirstRun(kHopelessSlowdown * 0.01f + kFirstRunAllowanceMs + 0.01f, 0.01f));
  // 16.5 ms for eng1 walking 576 groups on 4 rows, against eng0's 14 us
  // (the H200).
  EXPECT_TRUE(RuledOutByFirstRun(16.5f, 0.014f));
  // A cold first launch of a fast engine (7.3 ms on the H200) is timed again.
  EXPECT_FALSE(RuledOutByFirstRun(7.3f, 0.038f));
  // A dense shape of 1 ms: a 3x slower first run is timed again.
  EXPECT_FALSE(RuledOutByFirstRun(3.0f, 1.0f));
  EXPECT_TRUE(RuledOutByFirstRun(kHopelessSlowdown * 1.0f + kFirstRunAllowanceMs + 0.5f, 1.0f));
}

TEST(ConvTuningRuleTest, ScreensGroupedConvolutionsAtTheirFirstSizeOnly) {
  ConvParams depthwise = MakeCase("Dw", 32, 576, 576, 576, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1).params;
  EXPECT_EQ(ScreeningBatch(depthwise, {}), 32 / kScreeningDivisor);
  depthwise.batch = 8;
  EXPECT_EQ(ScreeningBatch(depthwise, {}), 1);
  depthwise.batch = 2;
  EXPECT_EQ(ScreeningBatch(depthwise, {}), 1) << "at least one row";
  depthwise.batch = 1;
  EXPECT_EQ(ScreeningBatch(depthwise, {}), 0) << "one row: screening would be the timing";
  depthwise.batch = 32;
  EXPECT_EQ(ScreeningBatch(depthwise, {{"eng0", 1.0f}}), 0) << "another size was timed";
  const ConvParams dense = MakeCase("Dense", 32, 64, 64, 1, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1).params;
  EXPECT_EQ(ScreeningBatch(dense, {}), 0);
}

TEST(ConvTuningRuleTest, OtherSizesRuleOutHopelessGroupedConfigurationsOnly) {
  const ConvSlowdowns slowdowns = {
      {"eng0", 1.0f}, {"eng1", kHopelessSlowdown}, {"eng2", kHopelessSlowdown * 0.99f}};
  const ConvParams grouped = MakeCase("Dw", 8, 32, 32, 32, 28, 28, 3, 3).params;
  EXPECT_FALSE(RuledOutByOtherSizes(grouped, slowdowns, "eng0"));
  EXPECT_TRUE(RuledOutByOtherSizes(grouped, slowdowns, "eng1"));
  EXPECT_FALSE(RuledOutByOtherSizes(grouped, slowdowns, "eng2"));
  EXPECT_FALSE(RuledOutByOtherSizes(grouped, slowdowns, "eng9")) << "never timed: time it";
  // Dense convolutions change winners with N: every size times in full.
  const ConvParams dense = MakeCase("Dense", 8, 32, 32, 1, 28, 28, 3, 3).params;
  EXPECT_FALSE(RuledOutByOtherSizes(dense, slowdowns, "eng1"));
}

TEST(ConvTuningRuleTest, RetimesOnlyWhenSeveralAreClose) {
  EXPECT_EQ(CandidatesToRetime({}), 0u);
  EXPECT_EQ(CandidatesToRetime({1.0f}), 0u);
  EXPECT_EQ(CandidatesToRetime({1.0f, 2.0f, 40.0f}), 0u) << "one close: it is the choice";
  EXPECT_EQ(CandidatesToRetime({1.0f, 1.4f, kCloseFactor, 1.6f}), 3u);
  EXPECT_EQ(CandidatesToRetime({1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}),
            static_cast<size_t>(kMaxRetimed));
}

TEST(ConvTuningRuleTest, MergingKeepsTheLeastSlowdownOfEachConfiguration) {
  ConvSlowdowns kept = {{"eng0", 1.0f}, {"eng1", 20.0f}, {"eng2", 3.0f}};
  MergeSlowdowns({{"eng0", 1.2f}, {"eng1", 2.0f}, {"eng3", 50.0f}}, kept);
  const ConvSlowdowns want = {{"eng0", 1.0f}, {"eng1", 2.0f}, {"eng2", 3.0f}, {"eng3", 50.0f}};
  EXPECT_EQ(kept, want) << "eng1, close at one size, is timed at every other";
}

// Validation happens before any cuDNN call, so these run without a device.
TEST(CudnnConvCreateTest, RefusesInconsistentParamsNamingThem) {
  ConvParams p = MakeCase("Bad", 1, 6, 4, 4, 8, 8, 3, 3).params;  // 4 groups do not divide 6
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(conv.status().message().find("groups 4"), absl::string_view::npos) << conv.status();

  p = MakeCase("Bad", 1, 4, 4, 1, 8, 8, 3, 3).params;
  p.stride_h = 0;
  conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);

  p = MakeCase("Bad", 1, 4, 4, 1, 8, 8, 3, 3).params;
  p.pad_w = -1;
  conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);

  p = MakeCase("Bad", 1 << 16, 1 << 8, 4, 1, 1 << 8, 1 << 8, 1, 1).params;  // 2^40 inputs
  conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CudnnConvCreateTest, RefusesOutputSizeCudnnDisagreesWith) {
  ConvParams p = MakeCase("Bad", 1, 4, 4, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1).params;
  p.out_h += 1;
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(conv.status().message().find("computes the output as 1x4x8x8"), absl::string_view::npos)
      << conv.status();
  EXPECT_NE(conv.status().message().find("K=4 9x8"), absl::string_view::npos) << conv.status();
}

TEST(CudnnConvCreateTest, RefusesOtherDataTypesNamingThem) {
  ConvParams p = MakeCase("Int8", 1, 4, 4, 1, 8, 8, 3, 3).params;
  p.dtype = DType::kInt8;
  absl::StatusOr<std::unique_ptr<CudnnConv>> conv = CudnnConv::Create(nullptr, p, false);
  ASSERT_FALSE(conv.ok());
  EXPECT_EQ(conv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(conv.status().message().find("not int8"), absl::string_view::npos) << conv.status();
}

TEST(CudnnConvCreateTest, ParamsToStringNamesTheDataTypeUnlessFloat32) {
  // The string keys the plans AlgorithmChoices shares: a float16 plan must
  // never be handed to a float32 convolution of the same sizes.
  ConvParams p = MakeCase("S", 8, 64, 128, 1, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1).params;
  const std::string float32 = ConvParamsToString(p);
  p.dtype = DType::kFloat16;
  EXPECT_EQ(ConvParamsToString(p), float32 + " float16");
  p.dtype = DType::kBFloat16;
  EXPECT_EQ(ConvParamsToString(p), float32 + " bfloat16");
  // Nor a plan of one layout to another.
  p.x_layout = ConvLayout::kNHWC;
  EXPECT_EQ(ConvParamsToString(p), float32 + " bfloat16 x NHWC");
  p.y_layout = ConvLayout::kNHWC;
  EXPECT_EQ(ConvParamsToString(p), float32 + " bfloat16 x NHWC y NHWC");
}

TEST(CudnnConvCreateTest, ParamsToStringNamesEverySize) {
  const ConvParams p = MakeCase("S", 8, 64, 128, 2, 56, 55, 3, 1, 2, 1, 1, 2, 1, 0).params;
  EXPECT_EQ(ConvParamsToString(p),
            "Conv N=8 C=64 HxW=56x55 -> K=128 28x55 kernel 3x1 stride 2x1 dilation 1x2 pad 1x0 "
            "groups 2");
}

}  // namespace
}  // namespace graphserve
