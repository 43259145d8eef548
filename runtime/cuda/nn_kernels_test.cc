#include "runtime/cuda/nn_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cuda_handles.h"
#include "runtime/cuda/kernel_test_util.h"
#include "runtime/host/nn_reference.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

// float32 kernels against float64 references: a handful of roundings, or a
// float32 sum of at most a few thousand terms relative to their magnitudes.
constexpr double kTolerance = 1e-5;

int64_t CountIf(const std::vector<float>& v, bool (*predicate)(float)) {
  return std::count_if(v.begin(), v.end(), predicate);
}
bool IsNan(float v) { return std::isnan(v); }
bool IsInf(float v) { return std::isinf(v); }
bool IsFinite(float v) { return std::isfinite(v); }

std::vector<float> RandomNormal(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}


// Device copies of host vectors, with room for `extra` elements before the
// data (to misalign it on purpose).
class DeviceArray {
 public:
  template <typename T>
  static DeviceArray From(const std::vector<T>& host, size_t offset_bytes = 0) {
    DeviceArray array;
    absl::StatusOr<DeviceBuffer> buffer =
        DeviceBuffer::Allocate(host.size() * sizeof(T) + offset_bytes + 16);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return array;
    array.buffer_ = *std::move(buffer);
    array.offset_ = offset_bytes;
    array.bytes_ = host.size() * sizeof(T);
    const absl::Status copied = CopyToDeviceAndWait(array.data(), host.data(), array.bytes_);
    EXPECT_TRUE(copied.ok()) << copied;
    return array;
  }

  [[nodiscard]] void* data() const { return static_cast<char*>(buffer_.get()) + offset_; }
  [[nodiscard]] float* f() const { return static_cast<float*>(data()); }

  template <typename T>
  std::vector<T> Download() const {
    std::vector<T> host(bytes_ / sizeof(T));
    EXPECT_EQ(cudaMemcpy(host.data(), data(), bytes_, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  DeviceBuffer buffer_;
  size_t offset_ = 0;
  size_t bytes_ = 0;
};

class NnKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  void Sync() { ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess); }

  CudaStream stream_;
};

// --------------------------------------------------------------- LaunchPool

struct PoolCase {
  std::string name;
  PoolParams params;
};

// Output size along one dim, ceil_mode included, as binding computes it: a
// window that would start in the bottom/right padding is dropped.
int64_t PoolOutSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pad_begin,
                    int64_t pad_end, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - dilation * (kernel - 1) - 1;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

struct PoolShape {
  int64_t batch, channels, in_h, in_w, kernel_h, kernel_w;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool ceil_mode = false;
};

PoolCase MakePool(std::string name, PoolKind kind, const PoolShape& s,
                  bool count_include_pad = false) {
  PoolParams p;
  p.kind = kind;
  p.batch = s.batch;
  p.channels = s.channels;
  p.in_h = s.in_h;
  p.in_w = s.in_w;
  p.kernel_h = s.kernel_h;
  p.kernel_w = s.kernel_w;
  p.stride_h = s.stride_h;
  p.stride_w = s.stride_w;
  p.dilation_h = s.dilation_h;
  p.dilation_w = s.dilation_w;
  p.pad_top = s.pad_top;
  p.pad_left = s.pad_left;
  p.pad_bottom = s.pad_bottom;
  p.pad_right = s.pad_right;
  p.count_include_pad = count_include_pad;
  p.out_h = PoolOutSize(s.in_h, s.kernel_h, s.stride_h, s.dilation_h, s.pad_top, s.pad_bottom,
                        s.ceil_mode);
  p.out_w = PoolOutSize(s.in_w, s.kernel_w, s.stride_w, s.dilation_w, s.pad_left, s.pad_right,
                        s.ceil_mode);
  return {std::move(name), p};
}

std::vector<PoolCase> PoolCases() {
  std::vector<PoolCase> cases;
  const PoolKind kMax = PoolKind::kMax;
  cases.push_back(MakePool("Max2x2Stride2", kMax, {2, 3, 16, 16, 2, 2, 2, 2}));
  cases.push_back(
      MakePool("Max3x3Stride2Pad1Odd", kMax, {2, 4, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}));
  cases.push_back(MakePool("Max3x3CeilMode", kMax,
                           {2, 3, 14, 14, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, /*ceil_mode=*/true}));
  cases.push_back(MakePool("MaxDilation2Pad2", kMax, {2, 3, 11, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2}));
  cases.push_back(MakePool("MaxMixedDilation", kMax, {1, 5, 12, 13, 2, 3, 2, 1, 1, 3, 1, 0, 1, 2}));
  cases.push_back(MakePool("MaxAsymmetricPads", kMax, {2, 3, 9, 10, 2, 3, 2, 1, 1, 1, 1, 0, 2, 1}));
  cases.push_back(MakePool("Max1D", kMax, {3, 2, 1, 33, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1}));
  cases.push_back(MakePool("MaxBatch64", kMax, {64, 4, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}));
  // 1x1 windows with stride 2 and pad 1: the first row and column of windows
  // lie wholly in the padding (-inf for max, 0 for average).
  cases.push_back(
      MakePool("MaxWindowsInPadding", kMax, {1, 2, 4, 4, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1}));
  for (const bool include : {false, true}) {
    const std::string suffix = include ? "IncludePad" : "ExcludePad";
    const PoolKind kAvg = PoolKind::kAverage;
    cases.push_back(MakePool("Avg3x3Pad1" + suffix, kAvg,
                             {2, 3, 13, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, include));
    cases.push_back(MakePool("Avg2x2CeilMode" + suffix, kAvg,
                             {2, 3, 7, 7, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true}, include));
    // The last window runs past the padded end: those positions never count.
    cases.push_back(MakePool("Avg3x3Stride2Pad1CeilMode" + suffix, kAvg,
                             {2, 2, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true}, include));
    cases.push_back(MakePool("AvgAsymmetricPads5x5" + suffix, kAvg,
                             {1, 3, 11, 12, 5, 5, 3, 3, 1, 1, 2, 1, 0, 2}, include));
    cases.push_back(
        MakePool("Avg1D" + suffix, kAvg, {2, 3, 1, 31, 1, 4, 1, 3, 1, 1, 0, 2, 0, 2}, include));
    cases.push_back(MakePool("AvgKernelCoversInput" + suffix, kAvg, {3, 5, 7, 7, 7, 7}, include));
    cases.push_back(MakePool("AvgWindowsInPadding" + suffix, kAvg,
                             {1, 2, 4, 4, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1}, include));
    cases.push_back(MakePool("AvgBatch64" + suffix, kAvg,
                             {64, 3, 6, 6, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, true}, include));
  }
  return cases;
}

class PoolTest : public NnKernelsTest, public ::testing::WithParamInterface<PoolCase> {};

TEST_P(PoolTest, MatchesReferenceWithSpecialValues) {
  const PoolParams& p = GetParam().params;
  std::mt19937 rng(static_cast<uint32_t>(p.in_h * 131 + p.in_w * 7 + p.kernel_w));
  std::vector<float> x = RandomNormal(p.batch * p.channels * p.in_h * p.in_w, rng);
  InjectSpecials(x, p.kernel_h * p.kernel_w, 0.2, rng);
  const size_t out_count = p.batch * p.channels * p.out_h * p.out_w;
  std::vector<float> want(out_count);
  PoolReference(p, x.data(), want.data());
  // An average's float32 sum rounds relative to the sum of magnitudes.
  std::vector<float> scale(out_count);
  PoolReference(p, Abs(x).data(), scale.data());
  ASSERT_GT(CountIf(want, IsNan), 0) << "the case must see a NaN";
  ASSERT_GT(CountIf(want, IsFinite), 0);

  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dy = DeviceArray::From(std::vector<float>(out_count, -7.0f));
  ASSERT_EQ(LaunchPool(p, dx.f(), dy.f(), stream_.get()), cudaSuccess);
  Sync();
  // Max selects an input: exact. Average: float32 sum, then one division.
  const double rtol = p.kind == PoolKind::kMax ? 0.0 : kTolerance;
  EXPECT_TRUE(MatchesReference(dy.Download<float>(), want, rtol, scale));
}

INSTANTIATE_TEST_SUITE_P(Cases, PoolTest, ::testing::ValuesIn(PoolCases()),
                         [](const ::testing::TestParamInfo<PoolCase>& info) {
                           return info.param.name;
                         });

// --------------------------------------------------------- LaunchGlobalPool

using GlobalPoolCase = std::tuple<PoolKind, int64_t /*rows*/, int64_t /*spatial*/>;

class GlobalPoolTest : public NnKernelsTest,
                       public ::testing::WithParamInterface<GlobalPoolCase> {};

TEST_P(GlobalPoolTest, MatchesReferenceWithSpecialValues) {
  GlobalPoolParams p;
  std::tie(p.kind, p.rows, p.spatial) = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(p.rows * 31 + p.spatial));
  std::vector<float> x = RandomNormal(p.rows * p.spatial, rng);
  // Rows 0..3 hold NaN, +Inf, -Inf and +Inf with -Inf; row 4 holds 1e30s.
  // The other rows stay ordinary.
  if (p.spatial > 0 && p.rows >= 5) {
    std::uniform_int_distribution<int64_t> at(0, p.spatial - 1);
    x[0 * p.spatial + at(rng)] = kNaN;
    x[1 * p.spatial + at(rng)] = kInf;
    x[2 * p.spatial + at(rng)] = -kInf;
    x[3 * p.spatial + at(rng)] = kInf;
    x[3 * p.spatial + at(rng)] = -kInf;
    x[4 * p.spatial + at(rng)] = kLarge;
    x[4 * p.spatial + at(rng)] = -kLarge;
    x[4 * p.spatial + at(rng)] = kLarge;
  }
  std::vector<float> want(p.rows);
  GlobalPoolReference(p, x.data(), want.data());
  std::vector<float> scale(p.rows);
  GlobalPoolReference(p, Abs(x).data(), scale.data());
  if (p.spatial > 0 && p.rows >= 5) {
    ASSERT_TRUE(std::isnan(want[0]));
    // Inf - Inf, unless a row of one element kept only the second.
    ASSERT_TRUE(std::isnan(want[3]) || p.kind == PoolKind::kMax || p.spatial == 1);
    ASSERT_GT(CountIf(want, IsInf), 0);
  }

  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dy = DeviceArray::From(std::vector<float>(p.rows, -7.0f));
  ASSERT_EQ(LaunchGlobalPool(p, dx.f(), dy.f(), stream_.get()), cudaSuccess);
  Sync();
  const double rtol = p.kind == PoolKind::kMax ? 0.0 : kTolerance;
  EXPECT_TRUE(MatchesReference(dy.Download<float>(), want, rtol, scale));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GlobalPoolTest,
    ::testing::Combine(::testing::Values(PoolKind::kMax, PoolKind::kAverage),
                       ::testing::Values(int64_t{6}, int64_t{64 * 3}),
                       // 1, a warp's odd fraction, 7x7, 56x56, the block-per-row
                       // threshold and 112x112; 0 is an empty row.
                       ::testing::Values(int64_t{1}, int64_t{7}, int64_t{49}, int64_t{3136},
                                         int64_t{4096}, int64_t{12544}, int64_t{0})));

// ------------------------------------------------------ Channels-last pooling

// x [batch, channels, spatial] as [batch, spatial, channels], and back.
std::vector<float> ToChannelsLast(const std::vector<float>& x, int64_t channels, int64_t spatial) {
  std::vector<float> y(x.size());
  const int64_t batch = static_cast<int64_t>(x.size()) / (channels * spatial);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t s = 0; s < spatial; ++s) {
        y[(n * spatial + s) * channels + c] = x[(n * channels + c) * spatial + s];
      }
    }
  }
  return y;
}

std::vector<float> FromChannelsLast(const std::vector<float>& y, int64_t channels,
                                    int64_t spatial) {
  std::vector<float> x(y.size());
  const int64_t batch = static_cast<int64_t>(y.size()) / (channels * spatial);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t s = 0; s < spatial; ++s) {
        x[(n * channels + c) * spatial + s] = y[(n * spatial + s) * channels + c];
      }
    }
  }
  return x;
}

// Runs `launch` on x (rounded to `dtype`) into `count` outputs.
template <typename Launch>
std::vector<float> RunOn(DType dtype, std::vector<float> x, size_t count, Launch launch,
                         cudaStream_t stream) {
  std::vector<float> poison(count, -7.0f);
  absl::StatusOr<DeviceBuffer> dx = UploadAs(dtype, x);
  absl::StatusOr<DeviceBuffer> dy = UploadAs(dtype, poison);
  EXPECT_TRUE(dx.ok() && dy.ok());
  if (!dx.ok() || !dy.ok()) return {};
  EXPECT_EQ(launch(dx->get(), dy->get()), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  absl::StatusOr<std::vector<float>> got = DownloadAs(dtype, *dy, count);
  EXPECT_TRUE(got.ok()) << got.status();
  return got.ok() ? *std::move(got) : std::vector<float>{};
}

// Note [Channels-last convolutions] in runtime/fusion.h: a pool over NHWC
// data gives exactly what it gives over NCHW (the same taps summed in the
// same order), with 3 channels one at a time and with 16 in 16-byte packs
// (four float32s, eight 16-bit values).
using ChannelsLastPoolCase = std::tuple<DType, int64_t /*channels*/, PoolCase>;

class ChannelsLastPoolTest : public NnKernelsTest,
                             public ::testing::WithParamInterface<ChannelsLastPoolCase> {};

TEST_P(ChannelsLastPoolTest, MatchesChannelsFirst) {
  const auto& [dtype, channels, pool] = GetParam();
  PoolParams p = pool.params;
  p.channels = channels;
  p.dtype = dtype;
  const int64_t in_spatial = p.in_h * p.in_w;
  const int64_t out_spatial = p.out_h * p.out_w;
  std::mt19937 rng(static_cast<uint32_t>(in_spatial * 131 + channels));
  std::vector<float> x = RandomNormal(p.batch * channels * in_spatial, rng);
  InjectSpecials(x, p.kernel_h * p.kernel_w, 0.2, rng);
  const size_t count = p.batch * channels * out_spatial;
  // Where few windows reach the input (the WindowsInPadding cases) the
  // injected NaNs may all lie outside them: then the first input some
  // window reads becomes one.
  const auto sees_nan = [&p, &x, count] {
    std::vector<float> reference(count);
    PoolReference(p, x.data(), reference.data());
    return CountIf(reference, IsNan) > 0;
  };
  for (size_t i = 0; i < x.size() && !sees_nan(); ++i) {
    const float kept = x[i];
    x[i] = kNaN;
    if (!sees_nan()) x[i] = kept;
  }
  const std::vector<float> want = RunOn(
      dtype, x, count, [&](void* in, void* out) { return LaunchPool(p, in, out, stream_.get()); },
      stream_.get());
  p.layout = ConvLayout::kNHWC;
  const std::vector<float> got = FromChannelsLast(
      RunOn(
          dtype, ToChannelsLast(x, channels, in_spatial), count,
          [&](void* in, void* out) { return LaunchPool(p, in, out, stream_.get()); },
          stream_.get()),
      channels, out_spatial);
  ASSERT_GT(CountIf(want, IsNan), 0) << "the case must see a NaN";
  EXPECT_TRUE(MatchesReference(got, want, 0.0, {}, 0.0));
}

std::string ChannelsLastPoolName(const ::testing::TestParamInfo<ChannelsLastPoolCase>& info) {
  const auto& [dtype, channels, pool] = info.param;
  return absl::StrCat(DTypeName(dtype), "_C", channels, "_", pool.name);
}

INSTANTIATE_TEST_SUITE_P(Cases, ChannelsLastPoolTest,
                         ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16,
                                                              DType::kBFloat16),
                                            ::testing::Values(int64_t{3}, int64_t{16}),
                                            ::testing::ValuesIn(PoolCases())),
                         ChannelsLastPoolName);

// A global pool over NHWC data: max exactly as over NCHW, an average within
// the rounding of a float sum taken in another order.
using ChannelsLastGlobalPoolCase =
    std::tuple<DType, PoolKind, int64_t /*channels*/, int64_t /*spatial*/>;

class ChannelsLastGlobalPoolTest
    : public NnKernelsTest,
      public ::testing::WithParamInterface<ChannelsLastGlobalPoolCase> {};

TEST_P(ChannelsLastGlobalPoolTest, MatchesChannelsFirst) {
  GlobalPoolParams p;
  std::tie(p.dtype, p.kind, p.channels, p.spatial) = GetParam();
  constexpr int64_t kBatch = 3;
  p.rows = kBatch * p.channels;
  std::mt19937 rng(static_cast<uint32_t>(p.channels * 31 + p.spatial));
  std::vector<float> x = RandomNormal(p.rows * p.spatial, rng);
  x[p.spatial / 2] = kNaN;              // row 0
  x[p.spatial + p.spatial / 3] = kInf;  // row 1
  const auto launch = [&](void* in, void* out) {
    return LaunchGlobalPool(p, in, out, stream_.get());
  };
  const std::vector<float> want = RunOn(p.dtype, x, p.rows, launch, stream_.get());
  std::vector<float> magnitude(p.rows);
  GlobalPoolReference(p, Abs(x).data(), magnitude.data());
  p.layout = ConvLayout::kNHWC;
  const std::vector<float> got =
      RunOn(p.dtype, ToChannelsLast(x, p.channels, p.spatial), p.rows, launch, stream_.get());
  ASSERT_TRUE(std::isnan(want[0]));
  ASSERT_TRUE(std::isinf(want[1]));
  const double rtol = p.kind == PoolKind::kMax ? 0.0 : 2 * UnitRoundoff(p.dtype) + kTolerance;
  EXPECT_TRUE(MatchesReference(got, want, rtol, magnitude, DTypeFloor(p.dtype)));
}

std::string ChannelsLastGlobalPoolName(
    const ::testing::TestParamInfo<ChannelsLastGlobalPoolCase>& info) {
  const auto& [dtype, kind, channels, spatial] = info.param;
  return absl::StrCat(DTypeName(dtype), kind == PoolKind::kMax ? "_Max" : "_Average", "_C",
                      channels, "_S", spatial);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChannelsLastGlobalPoolTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(PoolKind::kMax, PoolKind::kAverage),
                       ::testing::Values(int64_t{5}, int64_t{64}),  // one at a time; packs
                       // ResNet's 7x7, and 1
                       ::testing::Values(int64_t{49}, int64_t{1})),
    ChannelsLastGlobalPoolName);

// ---------------------------------------------------- LaunchChannelEpilogue

// The activations of nn_params.h, with non-default limits for clip and hard
// sigmoid.
std::vector<ActivationParams> AllActivations() {
  std::vector<ActivationParams> all;
  ActivationParams a;
  a.kind = Activation::kNone;
  all.push_back(a);
  a.kind = Activation::kRelu;
  all.push_back(a);
  a.kind = Activation::kClip;
  a.clip_min = 0.0f;
  a.clip_max = 6.0f;  // ReLU6
  all.push_back(a);
  a.clip_min = -1.5f;
  a.clip_max = 2.25f;
  all.push_back(a);
  a.kind = Activation::kSigmoid;
  all.push_back(a);
  a.kind = Activation::kSilu;
  all.push_back(a);
  a.kind = Activation::kHardSigmoid;  // ONNX defaults 0.2, 0.5
  all.push_back(a);
  a.alpha = 1.0f / 6.0f;  // PyTorch's hardsigmoid
  all.push_back(a);
  a.kind = Activation::kHardSwish;
  all.push_back(a);
  return all;
}

std::string ActivationName(const ActivationParams& a) {
  switch (a.kind) {
    case Activation::kNone:
      return "None";
    case Activation::kRelu:
      return "Relu";
    case Activation::kClip:
      return a.clip_min == 0.0f ? "Relu6" : "Clip";
    case Activation::kSigmoid:
      return "Sigmoid";
    case Activation::kSilu:
      return "Silu";
    case Activation::kHardSigmoid:
      return a.alpha == 0.2f ? "HardSigmoid" : "HardSigmoidTorch";
    case Activation::kHardSwish:
      return "HardSwish";
  }
  return "Unknown";
}

// Dyadic values k / 64 in [-8, 8]: products with scale (k / 16) and sums with
// shift and residual are exact in float32 in any order, so the kernel's fused
// multiply-add and the reference's float64 agree before the activation, and
// the comparison measures the activation alone. Interesting points of the
// activations (0, -0, +-3, +-6, +-2.5, exp's underflow near -88 and -104, the
// clip limits) are among them, as are NaN, +-Inf and +-1e30.
std::vector<float> EpilogueValues(size_t count, std::mt19937& rng) {
  std::uniform_int_distribution<int> k(-512, 512);
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>(k(rng)) / 64.0f;
  const float points[] = {0.0f,  -0.0f,  3.0f,    -3.0f,   6.0f,    -6.0f,  2.5f,
                          -2.5f, 100.0f, -100.0f, -88.75f, -103.5f, 1.5f,   -1.5f,
                          2.25f, kNaN,   kInf,    -kInf,   kLarge,  -kLarge};
  // Distinct positions, so that none overwrites another (NaN above all).
  std::vector<size_t> positions(count);
  for (size_t i = 0; i < count; ++i) positions[i] = i;
  std::shuffle(positions.begin(), positions.end(), rng);
  for (size_t i = 0; i < std::size(points) && i < count; ++i) v[positions[i]] = points[i];
  return v;
}

enum Operands : int {
  kScale = 1,
  kShift = 2,
  kResidual = 4,
};

struct EpilogueShape {
  std::string name;
  int64_t batch, channels, spatial;
  size_t misalign_bytes = 0;  // 4: the vectorised path cannot be used
  bool in_place = false;      // y == x
};

std::vector<EpilogueShape> EpilogueShapes() {
  return {
      {"Vec4", 2, 3, 16},          {"OddSpatial", 3, 5, 7},        {"Spatial1", 4, 6, 1},
      {"Misaligned", 1, 4, 12, 4}, {"InPlace", 2, 3, 20, 0, true}, {"Batch64", 64, 8, 4},
      {"Large56x56", 2, 32, 3136},
  };
}

using EpilogueCase = std::tuple<ActivationParams, int /*Operands*/, EpilogueShape>;

class EpilogueTest : public NnKernelsTest, public ::testing::WithParamInterface<EpilogueCase> {};

TEST_P(EpilogueTest, MatchesReferenceWithSpecialValues) {
  const auto& [activation, operands, shape] = GetParam();
  ChannelEpilogueParams p;
  p.batch = shape.batch;
  p.channels = shape.channels;
  p.spatial = shape.spatial;
  p.activation = activation;
  const size_t count = p.batch * p.channels * p.spatial;
  std::mt19937 rng(static_cast<uint32_t>(count * 13 + operands));
  const std::vector<float> x = EpilogueValues(count, rng);
  std::uniform_int_distribution<int> k(-64, 64);
  std::vector<float> scale(p.channels), shift(p.channels);
  for (float& s : scale) s = static_cast<float>(k(rng)) / 16.0f;  // 0 too: 0 * Inf = NaN
  for (float& t : shift) t = static_cast<float>(k(rng)) / 8.0f;
  const std::vector<float> residual = EpilogueValues(count, rng);
  const bool has_scale = operands & kScale;
  const bool has_shift = operands & kShift;
  const bool has_residual = operands & kResidual;

  std::vector<float> want(count);
  ChannelEpilogueReference(p, x.data(), has_scale ? scale.data() : nullptr,
                           has_shift ? shift.data() : nullptr,
                           has_residual ? residual.data() : nullptr, want.data());
  ASSERT_GT(CountIf(want, IsNan), 0);
  ASSERT_GT(CountIf(want, IsFinite), 0);

  const DeviceArray dx = DeviceArray::From(x, shape.misalign_bytes);
  const DeviceArray dscale = DeviceArray::From(scale);
  const DeviceArray dshift = DeviceArray::From(shift);
  const DeviceArray dresidual = DeviceArray::From(residual, shape.misalign_bytes);
  const DeviceArray dy = DeviceArray::From(std::vector<float>(count, -7.0f), shape.misalign_bytes);
  float* y = shape.in_place ? dx.f() : dy.f();
  ASSERT_EQ(LaunchChannelEpilogue(p, dx.f(), has_scale ? dscale.f() : nullptr,
                                  has_shift ? dshift.f() : nullptr,
                                  has_residual ? dresidual.f() : nullptr, y, stream_.get()),
            cudaSuccess);
  Sync();
  EXPECT_TRUE(MatchesReference((shape.in_place ? dx : dy).Download<float>(), want, kTolerance));
}

std::string EpilogueCaseName(const ::testing::TestParamInfo<EpilogueCase>& info) {
  const auto& [activation, operands, shape] = info.param;
  std::string name = ActivationName(activation) + "_" + shape.name;
  if (operands & kScale) name += "_Scale";
  if (operands & kShift) name += "_Shift";
  if (operands & kResidual) name += "_Residual";
  return name;
}

INSTANTIATE_TEST_SUITE_P(Cases, EpilogueTest,
                         ::testing::Combine(::testing::ValuesIn(AllActivations()),
                                            ::testing::Range(0, 8),
                                            ::testing::ValuesIn(EpilogueShapes())),
                         EpilogueCaseName);

// The residual may be the output (y += ... in place).
TEST_F(NnKernelsTest, EpilogueOutputMayBeTheResidual) {
  ChannelEpilogueParams p;
  p.batch = 2;
  p.channels = 3;
  p.spatial = 8;
  p.activation.kind = Activation::kRelu;
  std::mt19937 rng(5);
  const std::vector<float> x = EpilogueValues(48, rng);
  const std::vector<float> residual = EpilogueValues(48, rng);
  const std::vector<float> scale = {0.5f, -2.0f, 1.25f};
  std::vector<float> want(48);
  ChannelEpilogueReference(p, x.data(), scale.data(), nullptr, residual.data(), want.data());
  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dscale = DeviceArray::From(scale);
  const DeviceArray dresidual = DeviceArray::From(residual);
  ASSERT_EQ(LaunchChannelEpilogue(p, dx.f(), dscale.f(), nullptr, dresidual.f(), dresidual.f(),
                                  stream_.get()),
            cudaSuccess);
  Sync();
  EXPECT_TRUE(MatchesReference(dresidual.Download<float>(), want, kTolerance));
}

// 16-bit epilogues: the eight-wide kernel (planes of eights; channels
// innermost, as an NHWC epilogue is) and the scalar one (odd sizes, a
// misaligned buffer), in place and not, against the reference on the
// rounded inputs.
struct HalfEpilogueShape {
  std::string name;
  int64_t batch, channels, spatial;
  bool misaligned = false;  // x, residual and y 2 bytes past 16-byte alignment
  bool in_place = false;    // y == x
};

using HalfEpilogueCase = std::tuple<DType, int /*Operands*/, HalfEpilogueShape>;

class HalfEpilogueTest : public NnKernelsTest,
                         public ::testing::WithParamInterface<HalfEpilogueCase> {};

TEST_P(HalfEpilogueTest, MatchesReferenceWithSpecialValues) {
  const auto& [dtype, operands, shape] = GetParam();
  ChannelEpilogueParams p;
  p.batch = shape.batch;
  p.channels = shape.channels;
  p.spatial = shape.spatial;
  p.activation.kind = Activation::kSilu;
  p.dtype = dtype;
  const size_t count = p.batch * p.channels * p.spatial;
  const size_t lead = shape.misaligned ? 1 : 0;  // elements before the data
  std::mt19937 rng(static_cast<uint32_t>(count * 31 + operands));
  std::vector<float> x = EpilogueValues(count + lead, rng);
  std::vector<float> residual = EpilogueValues(count + lead, rng);
  std::uniform_int_distribution<int> k(-64, 64);
  std::vector<float> scale(p.channels), shift(p.channels);
  for (float& v : scale) v = static_cast<float>(k(rng)) / 16.0f;
  for (float& v : shift) v = static_cast<float>(k(rng)) / 8.0f;
  std::vector<float> poison(count + lead, -7.0f);
  absl::StatusOr<DeviceBuffer> dx = UploadAs(dtype, x);
  absl::StatusOr<DeviceBuffer> dresidual = UploadAs(dtype, residual);
  absl::StatusOr<DeviceBuffer> dscale = UploadAs(dtype, scale);
  absl::StatusOr<DeviceBuffer> dshift = UploadAs(dtype, shift);
  absl::StatusOr<DeviceBuffer> dy = UploadAs(dtype, poison);
  ASSERT_TRUE(dx.ok() && dresidual.ok() && dscale.ok() && dshift.ok() && dy.ok());
  const bool has_scale = operands & kScale;
  const bool has_shift = operands & kShift;
  const bool has_residual = operands & kResidual;

  std::vector<float> want(count), magnitude(count);
  ChannelEpilogueReference(p, x.data() + lead, has_scale ? scale.data() : nullptr,
                           has_shift ? shift.data() : nullptr,
                           has_residual ? residual.data() + lead : nullptr, want.data());
  for (size_t i = 0; i < count; ++i) {
    const int64_t c = (static_cast<int64_t>(i) / p.spatial) % p.channels;
    magnitude[i] = std::abs(x[i + lead]) * (has_scale ? std::abs(scale[c]) : 1.0f) +
                   (has_shift ? std::abs(shift[c]) : 0.0f) +
                   (has_residual ? std::abs(residual[i + lead]) : 0.0f);
  }
  ASSERT_GT(CountIf(want, IsFinite), 0);

  const size_t element = DTypeSize(dtype);
  const auto at = [&](const DeviceBuffer& buffer) {
    return static_cast<char*>(buffer.get()) + lead * element;
  };
  void* y = shape.in_place ? at(*dx) : at(*dy);
  ASSERT_EQ(LaunchChannelEpilogue(p, at(*dx), has_scale ? dscale->get() : nullptr,
                                  has_shift ? dshift->get() : nullptr,
                                  has_residual ? at(*dresidual) : nullptr, y, stream_.get()),
            cudaSuccess);
  Sync();
  absl::StatusOr<std::vector<float>> got =
      DownloadAs(dtype, shape.in_place ? *dx : *dy, count + lead);
  ASSERT_TRUE(got.ok()) << got.status();
  got->erase(got->begin(), got->begin() + static_cast<std::ptrdiff_t>(lead));
  EXPECT_TRUE(MatchesReference(*got, want, 2 * UnitRoundoff(dtype), magnitude, DTypeFloor(dtype)));
}

std::string HalfEpilogueCaseName(const ::testing::TestParamInfo<HalfEpilogueCase>& info) {
  const auto& [dtype, operands, shape] = info.param;
  std::string name = std::string(DTypeName(dtype)) + "_" + shape.name;
  if (operands & kScale) name += "_Scale";
  if (operands & kShift) name += "_Shift";
  if (operands & kResidual) name += "_Residual";
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HalfEpilogueTest,
    ::testing::Combine(::testing::Values(DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(kShift, kShift | kResidual, kScale | kShift | kResidual),
                       ::testing::Values(HalfEpilogueShape{"Planes16", 2, 3, 16},
                                         HalfEpilogueShape{"ChannelsInner", 18, 16, 1},
                                         HalfEpilogueShape{"OddSpatial", 3, 5, 7},
                                         HalfEpilogueShape{"ChannelsInner6", 9, 6, 1},
                                         HalfEpilogueShape{"Misaligned", 2, 4, 16, true},
                                         HalfEpilogueShape{"InPlace", 2, 3, 24, false, true},
                                         HalfEpilogueShape{"Large56x56", 2, 32, 3136})),
    HalfEpilogueCaseName);

// ------------------------------------------------------- LaunchActivation

using ActivationCase = std::tuple<ActivationParams, int64_t /*count*/, size_t /*misalign*/>;

class ActivationTest : public NnKernelsTest,
                       public ::testing::WithParamInterface<ActivationCase> {};

// A dense sweep over [-110, 110] (exp's underflow, the hard activations'
// knees) plus NaN, +-Inf, +-1e30 and -0, against ApplyActivation.
TEST_P(ActivationTest, MatchesReferenceWithSpecialValues) {
  const auto& [activation, count, misalign] = GetParam();
  std::vector<float> x(count);
  const float specials[] = {kNaN, kInf, -kInf, kLarge, -kLarge, -0.0f, -3.0f, 3.0f};
  for (int64_t i = 0; i < count; ++i) {
    x[i] =
        i < 8 ? specials[i] : -110.0f + 220.0f * static_cast<float>(i) / static_cast<float>(count);
  }
  std::vector<float> want(count);
  for (int64_t i = 0; i < count; ++i) want[i] = ApplyActivation(activation, x[i]);
  ASSERT_TRUE(std::isnan(want[0]));

  const DeviceArray dx = DeviceArray::From(x, misalign);
  const DeviceArray dy = DeviceArray::From(std::vector<float>(count, -7.0f), misalign);
  ASSERT_EQ(LaunchActivation(activation, DType::kFloat32, dx.f(), dy.f(), count, stream_.get()), cudaSuccess);
  Sync();
  EXPECT_TRUE(MatchesReference(dy.Download<float>(), want, kTolerance));
}

std::string ActivationCaseName(const ::testing::TestParamInfo<ActivationCase>& info) {
  const auto& [activation, count, misalign] = info.param;
  return ActivationName(activation) + "_" + std::to_string(count) +
         (misalign != 0 ? "_Misaligned" : "");
}

INSTANTIATE_TEST_SUITE_P(Cases, ActivationTest,
                         ::testing::Combine(::testing::ValuesIn(AllActivations()),
                                            ::testing::Values(int64_t{8}, int64_t{1001},
                                                              int64_t{65536 + 3}, int64_t{65536}),
                                            ::testing::Values(size_t{0}, size_t{4})),
                         ActivationCaseName);

// ---------------------------------------------------------------- LaunchPad

struct PadShape {
  std::string name;
  std::vector<int64_t> in_dims;
  std::vector<int64_t> pads_begin;
  std::vector<int64_t> pads_end;
};

std::vector<PadShape> PadShapes() {
  return {
      {"NchwSpatial", {2, 3, 5, 4}, {0, 0, 1, 2}, {0, 0, 2, 1}},
      {"Rank1BeyondDim", {7}, {3}, {9}},  // reflect wraps around more than once
      {"Cropping", {4, 6}, {-1, 2}, {1, -3}},
      {"SizeOneDims", {1, 5, 1}, {2, 1, 3}, {1, 2, 0}},
      {"Scalar", {}, {}, {}},
      {"Rank8", {2, 1, 2, 1, 3, 1, 2, 2}, {1, 0, 0, 1, 1, 0, 0, 2}, {0, 1, 1, 0, 2, 0, 1, 0}},
      {"EmptyInput", {0, 3}, {1, 0}, {1, 2}},
      {"Large", {4, 16, 33, 31}, {0, 1, 3, 2}, {0, 1, 2, 3}},
  };
}

PadParams MakePad(PadMode mode, const PadShape& s) {
  PadParams p;
  p.mode = mode;
  p.rank = static_cast<int32_t>(s.in_dims.size());
  for (int d = 0; d < p.rank; ++d) {
    p.in_dims[d] = s.in_dims[d];
    p.pads_begin[d] = s.pads_begin[d];
    p.out_dims[d] = s.in_dims[d] + s.pads_begin[d] + s.pads_end[d];
  }
  return p;
}

int64_t Elements(const int64_t* dims, int rank) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

using PadCase = std::tuple<PadMode, int /*element_size*/, PadShape>;

class PadTest : public NnKernelsTest, public ::testing::WithParamInterface<PadCase> {};

// Pad moves bits: the output must equal the reference byte for byte, NaN and
// infinities included.
TEST_P(PadTest, MatchesReferenceBytes) {
  const auto& [mode, element_size, shape] = GetParam();
  const PadParams p = MakePad(mode, shape);
  const int64_t in_count = Elements(p.in_dims, p.rank);
  const int64_t out_count = Elements(p.out_dims, p.rank);
  std::mt19937 rng(static_cast<uint32_t>(in_count * 7 + element_size));
  std::vector<uint8_t> x(in_count * element_size);
  uint64_t value_bits = 0;
  if (element_size == 4) {
    std::vector<float> values = RandomNormal(in_count, rng);
    const float specials[] = {kNaN, kInf, -kInf, kLarge};
    for (int64_t i = 0; i < in_count && i < 4; ++i) values[(i * 7) % in_count] = specials[i];
    std::memcpy(x.data(), values.data(), x.size());
    const float value = -2.5f;
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    value_bits = bits;
  } else if (element_size == 8) {
    std::uniform_int_distribution<int64_t> any(std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max());
    for (int64_t i = 0; i < in_count; ++i) {
      const int64_t v = any(rng);
      std::memcpy(x.data() + i * 8, &v, 8);
    }
    value_bits = 0x8000000000000001ull;  // both halves matter
  } else {
    for (uint8_t& b : x) b = static_cast<uint8_t>(rng() & 1);
    value_bits = 1;
  }
  std::vector<uint8_t> want(out_count * element_size, 0xAB);
  PadReference(p, x.data(), want.data(), element_size, &value_bits);

  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dy = DeviceArray::From(std::vector<uint8_t>(want.size(), 0xCD));
  ASSERT_EQ(LaunchPad(p, dx.data(), dy.data(), element_size, value_bits, stream_.get()),
            cudaSuccess);
  Sync();
  const std::vector<uint8_t> got = dy.Download<uint8_t>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "byte " << i << " (element " << i / element_size << ")";
  }
}

std::string PadCaseName(const ::testing::TestParamInfo<PadCase>& info) {
  const auto& [mode, element_size, shape] = info.param;
  const char* mode_name = mode == PadMode::kConstant  ? "Constant"
                          : mode == PadMode::kReflect ? "Reflect"
                                                      : "Edge";
  return std::string(mode_name) + "_" + std::to_string(element_size) + "Bytes_" + shape.name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PadTest,
    ::testing::Combine(::testing::Values(PadMode::kConstant, PadMode::kReflect, PadMode::kEdge),
                       ::testing::Values(1, 4, 8), ::testing::ValuesIn(PadShapes())),
    PadCaseName);

// ---------------------------------------------------- LaunchDepthwiseConv

struct DepthwiseShape {
  std::string name;
  int64_t batch, channels, in_h, in_w, kernel, stride, pad;
};

std::vector<DepthwiseShape> DepthwiseShapes() {
  return {
      {"K3S1", 2, 5, 9, 11, 3, 1, 1},
      {"K3S2", 3, 4, 12, 13, 3, 2, 1},
      {"K5S1", 1, 6, 7, 7, 5, 1, 2},
      {"K5S2", 2, 3, 15, 14, 5, 2, 2},
      {"K7S1", 1, 2, 10, 9, 7, 1, 3},
      {"K7S2NoPad", 2, 3, 16, 17, 7, 2, 0},
      {"K3S1Plane1x1", 4, 8, 1, 1, 3, 1, 1},
      {"K5S1Wide", 1, 3, 5, 70, 5, 1, 2},
      // DepthwiseSplit: rows wider than a block (two column tiles), planes
      // taller than one band, many small planes a block (the last block
      // partly filled).
      {"K3S1Cols300", 1, 2, 6, 300, 3, 1, 1},
      {"K7S2Cols300", 1, 3, 9, 600, 7, 2, 3},
      {"K5S1Bands", 1, 2, 70, 40, 5, 1, 2},
      {"K3S1SmallPlanes", 5, 7, 7, 7, 3, 1, 1},
  };
}

ConvParams DepthwiseParams(const DepthwiseShape& s, DType dtype) {
  ConvParams p;
  p.batch = s.batch;
  p.in_channels = p.out_channels = p.groups = s.channels;
  p.in_h = s.in_h;
  p.in_w = s.in_w;
  p.kernel_h = p.kernel_w = s.kernel;
  p.stride_h = p.stride_w = s.stride;
  p.pad_h = p.pad_w = s.pad;
  p.out_h = (s.in_h + 2 * s.pad - s.kernel) / s.stride + 1;
  p.out_w = (s.in_w + 2 * s.pad - s.kernel) / s.stride + 1;
  p.dtype = dtype;
  return p;
}

// The Conv's epilogue as ConvKernel fuses it: act(conv + bias + residual).
enum DepthwiseOperands : int { kBias = 1, kDepthwiseResidual = 2 };

using DepthwiseCase = std::tuple<DType, int /*DepthwiseOperands*/, DepthwiseShape>;

class DepthwiseConvTest : public NnKernelsTest,
                          public ::testing::WithParamInterface<DepthwiseCase> {};

// Against ConvReference (float64 sums) with the epilogue's reference after
// it, NaN, infinities and 1e30 among the inputs; each value is rounded to
// the type first, so both sides read the same numbers.
TEST_P(DepthwiseConvTest, MatchesReferenceWithItsEpilogue) {
  const auto& [dtype, operands, shape] = GetParam();
  const ConvParams p = DepthwiseParams(shape, dtype);
  ASSERT_TRUE(DepthwiseConvRuns(p));
  const int64_t taps = p.kernel_h * p.kernel_w;
  const size_t in_count = p.batch * p.in_channels * p.in_h * p.in_w;
  const size_t out_count = p.batch * p.out_channels * p.out_h * p.out_w;
  std::mt19937 rng(static_cast<uint32_t>(in_count * 7 + operands));
  std::vector<float> x = RandomNormal(in_count, rng);
  InjectSpecials(x, taps, 0.2, rng);
  std::vector<float> w = RandomNormal(p.out_channels * taps, rng);
  std::vector<float> bias = RandomNormal(p.out_channels, rng);
  std::vector<float> residual = RandomNormal(out_count, rng);
  ActivationParams activation;
  activation.kind = operands & kDepthwiseResidual ? Activation::kRelu : Activation::kSilu;
  const bool has_bias = operands & kBias;
  const bool has_residual = operands & kDepthwiseResidual;
  absl::StatusOr<DeviceBuffer> dx = UploadAs(dtype, x);
  absl::StatusOr<DeviceBuffer> dw = UploadAs(dtype, w);
  absl::StatusOr<DeviceBuffer> dbias = UploadAs(dtype, bias);
  absl::StatusOr<DeviceBuffer> dresidual = UploadAs(dtype, residual);
  std::vector<float> poison(out_count, -7.0f);
  absl::StatusOr<DeviceBuffer> dy = UploadAs(dtype, poison);
  ASSERT_TRUE(dx.ok() && dw.ok() && dbias.ok() && dresidual.ok() && dy.ok());

  std::vector<float> conv(out_count), want(out_count), magnitude(out_count);
  ConvReference(p, x.data(), w.data(), has_bias ? bias.data() : nullptr, conv.data());
  ChannelEpilogueParams epilogue;
  epilogue.batch = p.batch;
  epilogue.channels = p.out_channels;
  epilogue.spatial = p.out_h * p.out_w;
  epilogue.activation = activation;
  ChannelEpilogueReference(epilogue, conv.data(), nullptr, nullptr,
                           has_residual ? residual.data() : nullptr, want.data());
  // What rounding errors grow with: the sum of the terms' magnitudes.
  ConvReference(p, Abs(x).data(), Abs(w).data(), has_bias ? Abs(bias).data() : nullptr,
                magnitude.data());
  for (size_t i = 0; has_residual && i < out_count; ++i) magnitude[i] += std::abs(residual[i]);
  ASSERT_GT(CountIf(want, IsNan), 0);
  ASSERT_GT(CountIf(want, IsFinite), 0);

  ASSERT_EQ(
      LaunchDepthwiseConv(p, activation, dx->get(), dw->get(), has_bias ? dbias->get() : nullptr,
                          has_residual ? dresidual->get() : nullptr, dy->get(), stream_.get()),
      cudaSuccess);
  Sync();
  absl::StatusOr<std::vector<float>> got = DownloadAs(dtype, *dy, out_count);
  ASSERT_TRUE(got.ok()) << got.status();
  const double rtol = std::max(2 * UnitRoundoff(dtype), kTolerance);
  EXPECT_TRUE(MatchesReference(*got, want, rtol, magnitude, DTypeFloor(dtype)));
}

std::string DepthwiseCaseName(const ::testing::TestParamInfo<DepthwiseCase>& info) {
  const auto& [dtype, operands, shape] = info.param;
  std::string name = std::string(DTypeName(dtype)) + "_" + shape.name;
  if (operands & kBias) name += "_Bias";
  if (operands & kDepthwiseResidual) name += "_Residual";
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DepthwiseConvTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Range(0, 4), ::testing::ValuesIn(DepthwiseShapes())),
    DepthwiseCaseName);

// ONNX zero-pads, then convolves: an infinite weight over the padding makes
// 0 * inf = NaN there too, as in ConvReference; and the output may be the
// residual.
TEST_F(NnKernelsTest, DepthwiseConvMultipliesPaddingAndMayWriteItsResidual) {
  const ConvParams p = DepthwiseParams({"", 1, 2, 4, 4, 3, 1, 1}, DType::kFloat32);
  std::vector<float> x(32, 1.0f);
  std::vector<float> w(18, 0.5f);
  w[0] = kInf;  // channel 0's top-left tap: every output of channel 0 reads it
  std::vector<float> residual(32, 2.0f);
  std::vector<float> conv(32), want(32);
  ConvReference(p, x.data(), w.data(), nullptr, conv.data());
  for (size_t i = 0; i < 32; ++i) want[i] = conv[i] + residual[i];
  EXPECT_TRUE(std::isnan(want[0]));  // its tap lies in the padding
  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dw = DeviceArray::From(w);
  const DeviceArray dresidual = DeviceArray::From(residual);
  ASSERT_EQ(LaunchDepthwiseConv(p, ActivationParams(), dx.f(), dw.f(), nullptr, dresidual.f(),
                                dresidual.f(), stream_.get()),
            cudaSuccess);
  Sync();
  EXPECT_TRUE(MatchesReference(dresidual.Download<float>(), want, kTolerance));
}

// ------------------------------------------------------ capture into a graph

// Pool, epilogue and pad recorded into one CUDA graph replay to the same
// results: none of them allocates or synchronises.
TEST_F(NnKernelsTest, LaunchesAreCapturable) {
  std::mt19937 rng(11);
  const PoolParams pool =
      MakePool("Capture", PoolKind::kMax, {2, 4, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1}).params;
  std::vector<float> x = RandomNormal(2 * 4 * 15 * 15, rng);
  InjectSpecials(x, 9, 0.2, rng);
  const int64_t pooled_count = 2 * 4 * pool.out_h * pool.out_w;
  ChannelEpilogueParams epilogue;
  epilogue.batch = 2;
  epilogue.channels = 4;
  epilogue.spatial = pool.out_h * pool.out_w;
  epilogue.activation.kind = Activation::kSilu;
  const std::vector<float> scale = {0.5f, 1.0f, -1.5f, 2.0f};
  PadShape pad_shape{"", {2, 4, pool.out_h, pool.out_w}, {0, 0, 1, 2}, {0, 0, 2, 1}};
  const PadParams pad = MakePad(PadMode::kReflect, pad_shape);

  std::vector<float> pooled(pooled_count), activated(pooled_count);
  PoolReference(pool, x.data(), pooled.data());
  ChannelEpilogueReference(epilogue, pooled.data(), scale.data(), nullptr, nullptr,
                           activated.data());
  std::vector<float> want(Elements(pad.out_dims, pad.rank));
  PadReference(pad, activated.data(), want.data(), 4, nullptr);

  const DeviceArray dx = DeviceArray::From(x);
  const DeviceArray dscale = DeviceArray::From(scale);
  const DeviceArray dpooled = DeviceArray::From(std::vector<float>(pooled_count));
  const DeviceArray dy = DeviceArray::From(std::vector<float>(want.size(), -7.0f));
  ASSERT_EQ(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const cudaError_t pooled_error = LaunchPool(pool, dx.f(), dpooled.f(), stream_.get());
  const cudaError_t epilogue_error = LaunchChannelEpilogue(
      epilogue, dpooled.f(), dscale.f(), nullptr, nullptr, dpooled.f(), stream_.get());
  const cudaError_t pad_error = LaunchPad(pad, dpooled.f(), dy.f(), 4, 0, stream_.get());
  cudaGraph_t raw_graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream_.get(), &raw_graph), cudaSuccess);
  const CudaGraph graph(raw_graph);
  ASSERT_EQ(pooled_error, cudaSuccess);
  ASSERT_EQ(epilogue_error, cudaSuccess);
  ASSERT_EQ(pad_error, cudaSuccess);
  size_t nodes = 0;
  ASSERT_EQ(cudaGraphGetNodes(graph.get(), nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 3u);  // one kernel each

  cudaGraphExec_t raw_exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&raw_exec, graph.get(), 0), cudaSuccess);
  const CudaGraphExec exec(raw_exec);
  ASSERT_EQ(cudaGraphLaunch(exec.get(), stream_.get()), cudaSuccess);
  Sync();
  EXPECT_TRUE(MatchesReference(dy.Download<float>(), want, kTolerance));
}

// -------------------------------------------- arguments (no device needed)

// Invalid parameters and empty outputs return before any CUDA call, so these
// run everywhere: on a machine without a device a launch would fail instead.
TEST(NnKernelsArgumentsTest, InvalidParametersAreRefused) {
  PoolParams pool;
  pool.stride_h = 0;
  EXPECT_EQ(LaunchPool(pool, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
  pool = PoolParams();
  pool.batch = -1;
  EXPECT_EQ(LaunchPool(pool, nullptr, nullptr, nullptr), cudaErrorInvalidValue);

  GlobalPoolParams global;
  global.spatial = -1;
  EXPECT_EQ(LaunchGlobalPool(global, nullptr, nullptr, nullptr), cudaErrorInvalidValue);

  ChannelEpilogueParams epilogue;
  epilogue.channels = -2;
  EXPECT_EQ(LaunchChannelEpilogue(epilogue, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            cudaErrorInvalidValue);

  PadParams pad;
  pad.rank = 1;
  pad.in_dims[0] = pad.out_dims[0] = 4;
  EXPECT_EQ(LaunchPad(pad, nullptr, nullptr, /*element_size=*/3, 0, nullptr),
            cudaErrorInvalidValue);
  // Pooling and epilogues take float32 and the 16-bit floats only.
  PoolParams int_pool;
  int_pool.dtype = DType::kInt64;
  EXPECT_EQ(LaunchPool(int_pool, nullptr, nullptr, nullptr), cudaErrorInvalidValue);
  pad.rank = kMaxPadRank + 1;
  EXPECT_EQ(LaunchPad(pad, nullptr, nullptr, 4, 0, nullptr), cudaErrorInvalidValue);

  EXPECT_EQ(LaunchActivation(ActivationParams(), DType::kFloat32, nullptr, nullptr, -1, nullptr),
            cudaErrorInvalidValue);

  // Depthwise convolutions outside the kernel's shapes go to cuDNN.
  ConvParams depthwise;
  depthwise.in_channels = depthwise.out_channels = depthwise.groups = 4;
  depthwise.kernel_h = depthwise.kernel_w = 3;
  EXPECT_TRUE(DepthwiseConvRuns(depthwise));
  const auto refused = [&](auto change) {
    ConvParams p = depthwise;
    change(p);
    return !DepthwiseConvRuns(p) &&
           LaunchDepthwiseConv(p, ActivationParams(), nullptr, nullptr, nullptr, nullptr, nullptr,
                               nullptr) == cudaErrorInvalidValue;
  };
  EXPECT_TRUE(refused([](ConvParams& p) { p.out_channels = 8; }));  // a multiplier of 2
  EXPECT_TRUE(refused([](ConvParams& p) { p.groups = 2; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.kernel_h = p.kernel_w = 4; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.kernel_w = 5; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.stride_h = p.stride_w = 3; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.dilation_h = 2; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.x_layout = ConvLayout::kNHWC; }));
  EXPECT_TRUE(refused([](ConvParams& p) { p.dtype = DType::kInt64; }));
}

TEST(NnKernelsArgumentsTest, EmptyOutputsEnqueueNothing) {
  PoolParams pool;
  pool.batch = 0;
  EXPECT_EQ(LaunchPool(pool, nullptr, nullptr, nullptr), cudaSuccess);
  GlobalPoolParams global;
  global.rows = 0;
  EXPECT_EQ(LaunchGlobalPool(global, nullptr, nullptr, nullptr), cudaSuccess);
  ChannelEpilogueParams epilogue;
  epilogue.spatial = 0;
  EXPECT_EQ(LaunchChannelEpilogue(epilogue, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            cudaSuccess);
  PadParams pad;
  pad.rank = 2;
  pad.in_dims[0] = 3;
  pad.in_dims[1] = 4;
  pad.out_dims[0] = 3;
  pad.out_dims[1] = 0;  // cropped away
  pad.pads_begin[1] = -4;
  EXPECT_EQ(LaunchPad(pad, nullptr, nullptr, 4, 0, nullptr), cudaSuccess);
  EXPECT_EQ(LaunchActivation(ActivationParams(), DType::kFloat32, nullptr, nullptr, 0, nullptr), cudaSuccess);
}

}  // namespace
}  // namespace graphserve
