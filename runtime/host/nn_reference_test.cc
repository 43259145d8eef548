#include "runtime/host/nn_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"
#include "runtime/nn_params.h"

namespace graphserve {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Where Debian's libonnx-testdata puts ONNX's node tests.
constexpr char kNodeTestDir[] = "/usr/share/libonnx-testdata/data/node";

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

std::vector<float> RandomFloats(size_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(count);
  for (float& v : values) v = dist(rng);
  return values;
}

std::vector<float> Abs(const std::vector<float>& values) {
  std::vector<float> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out[i] = std::fabs(values[i]);
  return out;
}

// Equal, or both NaN: the reference must produce NaN exactly where expected.
void ExpectSameFloats(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << ": " << actual[i];
    } else {
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
    }
  }
}

// |actual - expected| <= rtol * (1 + |expected|), NaN only against NaN.
void ExpectFloatsClose(const std::vector<float>& actual, const std::vector<float>& expected,
                       double rtol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(actual[i])) << "element " << i << ": " << actual[i];
      continue;
    }
    if (std::isinf(expected[i])) {  // inf - inf is NaN, which no tolerance admits
      EXPECT_EQ(actual[i], expected[i]) << "element " << i;
      continue;
    }
    EXPECT_NEAR(actual[i], expected[i], rtol * (1.0 + std::fabs(expected[i]))) << "element " << i;
  }
}

std::vector<float> Conv(const ConvParams& p, const std::vector<float>& x,
                        const std::vector<float>& w, const std::vector<float>* bias = nullptr) {
  std::vector<float> y(p.batch * p.out_channels * p.out_h * p.out_w, kNaN);
  ConvReference(p, x.data(), w.data(), bias != nullptr ? bias->data() : nullptr, y.data());
  return y;
}

std::vector<float> Pool(const PoolParams& p, const std::vector<float>& x) {
  std::vector<float> y(p.batch * p.channels * p.out_h * p.out_w, kNaN);
  PoolReference(p, x.data(), y.data());
  return y;
}

// Output size of one pooled/convolved dim as ONNX (and PyTorch) define it;
// with ceil_mode, a last window that would start in the end padding is
// dropped. Tests derive output sizes with it and check them against ONNX's
// outputs, which is what binding does before calling the reference.
int64_t WindowOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                         int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - ((kernel - 1) * dilation + 1);
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

// One TensorProto of an ONNX node test: its element bytes (little-endian, as
// this host), and the values as float32 or int64 where it holds those.
struct OnnxTensor {
  std::vector<int64_t> dims;
  int element_size = 0;
  std::string bytes;
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

template <typename T, typename Repeated>
std::string ElementBytes(const std::string& raw, const Repeated& values) {
  if (!raw.empty()) return raw;
  std::string bytes(values.size() * sizeof(T), '\0');
  for (int i = 0; i < values.size(); ++i) {
    const T value = static_cast<T>(values[i]);
    std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
  }
  return bytes;
}

template <typename T>
std::vector<T> BytesAs(const std::string& bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

std::optional<OnnxTensor> ReadOnnxTensor(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) return std::nullopt;
  OnnxTensor tensor;
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  switch (proto.data_type()) {
    case onnx::TensorProto::FLOAT:
      tensor.element_size = sizeof(float);
      tensor.bytes = ElementBytes<float>(proto.raw_data(), proto.float_data());
      tensor.floats = BytesAs<float>(tensor.bytes);
      break;
    case onnx::TensorProto::INT32:  // test_edge_pad and test_reflect_pad's data
      tensor.element_size = sizeof(int32_t);
      tensor.bytes = ElementBytes<int32_t>(proto.raw_data(), proto.int32_data());
      break;
    case onnx::TensorProto::INT64:
      tensor.element_size = sizeof(int64_t);
      tensor.bytes = ElementBytes<int64_t>(proto.raw_data(), proto.int64_data());
      tensor.ints = BytesAs<int64_t>(tensor.bytes);
      break;
    default:
      return std::nullopt;
  }
  return tensor;
}

// input_0.pb .. input_{inputs-1}.pb, then output_0.pb, of a node test's first
// data set; empty where the test data is not installed.
std::vector<OnnxTensor> ReadNodeTest(const std::string& test, int inputs) {
  const std::filesystem::path dir = std::filesystem::path(kNodeTestDir) / test / "test_data_set_0";
  std::vector<OnnxTensor> tensors;
  for (int i = 0; i <= inputs; ++i) {
    const std::string file = i < inputs ? "input_" + std::to_string(i) + ".pb" : "output_0.pb";
    std::optional<OnnxTensor> tensor = ReadOnnxTensor(dir / file);
    if (!tensor.has_value()) return {};
    tensors.push_back(*std::move(tensor));
  }
  return tensors;
}

// ---------------------------------------------------------------------------
// Conv
// ---------------------------------------------------------------------------

TEST(ConvReferenceTest, HandComputed2x2KernelOn3x3WithBias) {
  ConvParams p;
  p.in_h = p.in_w = 3;
  p.kernel_h = p.kernel_w = 2;
  p.out_h = p.out_w = 2;
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> w = {1, 2, 3, 4};
  const std::vector<float> bias = {0.5f};
  // y00 = 1*1 + 2*2 + 3*4 + 4*5, and so on, plus the bias.
  ExpectSameFloats(Conv(p, x, w, &bias), {37.5f, 47.5f, 67.5f, 77.5f});
}

TEST(ConvReferenceTest, HandComputedDilation) {
  ConvParams p;
  p.in_h = p.in_w = 4;
  p.kernel_h = p.kernel_w = 2;
  p.dilation_h = p.dilation_w = 2;
  p.out_h = p.out_w = 2;  // 4 - ((2 - 1) * 2 + 1) + 1
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  // Taps 2 apart: y00 = x00 + x02 + x20 + x22 = 0 + 2 + 8 + 10.
  ExpectSameFloats(Conv(p, x, {1, 1, 1, 1}), {20, 24, 36, 40});
}

TEST(ConvReferenceTest, OneDimensionalAsHeightOne) {
  ConvParams p;
  p.in_w = 5;
  p.kernel_w = 3;
  p.pad_w = 1;
  p.out_w = 5;
  // y[i] = x[i-1] - x[i+1], reading 0 outside.
  ExpectSameFloats(Conv(p, {1, 2, 3, 4, 5}, {1, 0, -1}), {-2, -2, -2, -2, 4});
}

TEST(ConvReferenceTest, NaNReachesOnlyTheWindowsThatReadIt) {
  ConvParams p;
  p.in_h = p.in_w = 3;
  p.kernel_h = p.kernel_w = 2;
  p.out_h = p.out_w = 2;
  const std::vector<float> x = {kNaN, 1, 1, 1, 1, 1, 1, 1, kInf};
  ExpectSameFloats(Conv(p, x, {1, 1, 1, 1}), {kNaN, 4, 4, kInf});
}

// Grouped convolution is, by definition, `groups` independent convolutions
// of channel slices; check it against exactly that.
struct GroupedCase {
  const char* name;
  int64_t in_channels;
  int64_t out_channels;
  int64_t groups;
};

class GroupedConvTest : public ::testing::TestWithParam<GroupedCase> {};

TEST_P(GroupedConvTest, EqualsSeparateConvPerGroup) {
  const GroupedCase& c = GetParam();
  ConvParams p;
  p.batch = 2;
  p.in_channels = c.in_channels;
  p.out_channels = c.out_channels;
  p.groups = c.groups;
  p.in_h = 6;
  p.in_w = 5;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = 2;
  p.pad_h = p.pad_w = 1;
  p.dilation_w = 2;
  p.out_h = WindowOutputSize(p.in_h, 3, 2, 1, 1, 1, false);
  p.out_w = WindowOutputSize(p.in_w, 3, 1, 2, 1, 1, false);
  const int64_t icpg = p.in_channels / p.groups;
  const int64_t ocpg = p.out_channels / p.groups;
  const int64_t in_plane = p.in_h * p.in_w;
  const int64_t out_plane = p.out_h * p.out_w;
  const int64_t w_per_oc = icpg * 9;
  const std::vector<float> x = RandomFloats(p.batch * p.in_channels * in_plane, 1);
  const std::vector<float> w = RandomFloats(p.out_channels * w_per_oc, 2);
  const std::vector<float> bias = RandomFloats(p.out_channels, 3);
  const std::vector<float> grouped = Conv(p, x, w, &bias);

  ConvParams one = p;
  one.in_channels = icpg;
  one.out_channels = ocpg;
  one.groups = 1;
  for (int64_t g = 0; g < p.groups; ++g) {
    std::vector<float> xg;
    for (int64_t n = 0; n < p.batch; ++n) {
      const auto begin = x.begin() + (n * p.in_channels + g * icpg) * in_plane;
      xg.insert(xg.end(), begin, begin + icpg * in_plane);
    }
    const std::vector<float> wg(w.begin() + g * ocpg * w_per_oc,
                                w.begin() + (g + 1) * ocpg * w_per_oc);
    const std::vector<float> bg(bias.begin() + g * ocpg, bias.begin() + (g + 1) * ocpg);
    const std::vector<float> yg = Conv(one, xg, wg, &bg);
    std::vector<float> expected;
    std::vector<float> actual;
    for (int64_t n = 0; n < p.batch; ++n) {
      const auto begin = grouped.begin() + (n * p.out_channels + g * ocpg) * out_plane;
      actual.insert(actual.end(), begin, begin + ocpg * out_plane);
      expected.insert(expected.end(), yg.begin() + n * ocpg * out_plane,
                      yg.begin() + (n + 1) * ocpg * out_plane);
    }
    SCOPED_TRACE("group " + std::to_string(g));
    ExpectFloatsClose(actual, expected, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, GroupedConvTest,
                         ::testing::Values(GroupedCase{"two_groups", 4, 6, 2},
                                           GroupedCase{"depthwise", 3, 3, 3},
                                           GroupedCase{"depthwise_multiplier_2", 3, 6, 3}),
                         [](const ::testing::TestParamInfo<GroupedCase>& info) {
                           return info.param.name;
                         });

TEST(ConvReferenceTest, EqualsIm2colMatrixProduct) {
  ConvParams p;
  p.batch = 2;
  p.in_channels = 3;
  p.out_channels = 4;
  p.in_h = 7;
  p.in_w = 6;
  p.kernel_h = 3;
  p.kernel_w = 2;
  p.stride_h = 2;
  p.dilation_w = 2;
  p.pad_h = 1;
  p.pad_w = 2;
  p.out_h = WindowOutputSize(p.in_h, 3, 2, 1, 1, 1, false);  // 4
  p.out_w = WindowOutputSize(p.in_w, 2, 1, 2, 2, 2, false);  // 8
  const std::vector<float> x = RandomFloats(p.batch * p.in_channels * p.in_h * p.in_w, 4);
  const std::vector<float> w = RandomFloats(p.out_channels * p.in_channels * 6, 5);
  const std::vector<float> bias = RandomFloats(p.out_channels, 6);
  const std::vector<float> y = Conv(p, x, w, &bias);

  // cols[(ic, kh, kw), (oh, ow)] per image, zero where the tap reads padding;
  // then y = w [out_channels, ic*kh*kw] x cols + bias.
  const int64_t k = p.in_channels * p.kernel_h * p.kernel_w;
  const int64_t spatial = p.out_h * p.out_w;
  std::vector<float> expected;
  for (int64_t n = 0; n < p.batch; ++n) {
    std::vector<double> cols(k * spatial, 0.0);
    for (int64_t ic = 0; ic < p.in_channels; ++ic) {
      for (int64_t kh = 0; kh < p.kernel_h; ++kh) {
        for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
          const int64_t row = (ic * p.kernel_h + kh) * p.kernel_w + kw;
          for (int64_t oh = 0; oh < p.out_h; ++oh) {
            for (int64_t ow = 0; ow < p.out_w; ++ow) {
              const int64_t ih = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
              const int64_t iw = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
              if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
              cols[row * spatial + oh * p.out_w + ow] =
                  x[((n * p.in_channels + ic) * p.in_h + ih) * p.in_w + iw];
            }
          }
        }
      }
    }
    for (int64_t oc = 0; oc < p.out_channels; ++oc) {
      for (int64_t s = 0; s < spatial; ++s) {
        double acc = bias[oc];
        for (int64_t r = 0; r < k; ++r) acc += w[oc * k + r] * cols[r * spatial + s];
        expected.push_back(static_cast<float>(acc));
      }
    }
  }
  ExpectFloatsClose(y, expected, 1e-6);
}

// ONNX Conv node tests whose attributes map to symmetric pads by hand.
struct OnnxConvCase {
  const char* test;
  int64_t stride;
  int64_t pad_h;
  int64_t pad_w;
};

class OnnxConvTest : public ::testing::TestWithParam<OnnxConvCase> {};

TEST_P(OnnxConvTest, MatchesOnnxOutput) {
  const OnnxConvCase& c = GetParam();
  const std::vector<OnnxTensor> t = ReadNodeTest(c.test, 2);
  if (t.empty()) GTEST_SKIP() << c.test << " missing: install libonnx-testdata";
  const OnnxTensor& x = t[0];
  const OnnxTensor& w = t[1];
  const OnnxTensor& y = t[2];
  ASSERT_EQ(x.dims.size(), 4u);
  ConvParams p;
  p.batch = x.dims[0];
  p.in_channels = x.dims[1];
  p.in_h = x.dims[2];
  p.in_w = x.dims[3];
  p.out_channels = w.dims[0];
  p.kernel_h = w.dims[2];
  p.kernel_w = w.dims[3];
  p.stride_h = p.stride_w = c.stride;
  p.pad_h = c.pad_h;
  p.pad_w = c.pad_w;
  p.out_h = WindowOutputSize(p.in_h, p.kernel_h, c.stride, 1, c.pad_h, c.pad_h, false);
  p.out_w = WindowOutputSize(p.in_w, p.kernel_w, c.stride, 1, c.pad_w, c.pad_w, false);
  ASSERT_EQ((std::vector<int64_t>{p.batch, p.out_channels, p.out_h, p.out_w}), y.dims);
  ExpectFloatsClose(Conv(p, x.floats, w.floats), y.floats, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(
    NodeTests, OnnxConvTest,
    ::testing::Values(OnnxConvCase{"test_basic_conv_with_padding", 1, 1, 1},
                      OnnxConvCase{"test_basic_conv_without_padding", 1, 0, 0},
                      OnnxConvCase{"test_conv_with_strides_padding", 2, 1, 1},
                      OnnxConvCase{"test_conv_with_strides_no_padding", 2, 0, 0},
                      // pads [1, 0, 1, 0]: begin and end agree per dim.
                      OnnxConvCase{"test_conv_with_strides_and_asymmetric_padding", 2, 1, 0},
                      // SAME_LOWER, 5 -> 3 at stride 2: 2 pad rows, 1 each side.
                      OnnxConvCase{"test_conv_with_autopad_same", 2, 1, 1}),
    [](const ::testing::TestParamInfo<OnnxConvCase>& info) {
      return std::string(info.param.test).substr(5);  // without "test_"
    });

// ---------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------

TEST(PoolReferenceTest, MaxPaddingNeverWins) {
  PoolParams p;
  p.in_h = p.in_w = 2;
  p.kernel_h = p.kernel_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  p.out_h = p.out_w = 3;
  // All negative: a zero from the padding would win every border window.
  ExpectSameFloats(Pool(p, {-1, -2, -3, -4}), {-1, -1, -2, -1, -1, -2, -3, -3, -4});
}

TEST(PoolReferenceTest, MaxDilationWithPads) {
  PoolParams p;
  p.in_w = 5;
  p.kernel_w = 2;
  p.dilation_w = 2;
  p.pad_left = p.pad_right = 1;
  p.out_w = WindowOutputSize(5, 2, 1, 2, 1, 1, false);
  ASSERT_EQ(p.out_w, 5);
  // Window ow reads columns ow-1 and ow+1.
  ExpectSameFloats(Pool(p, {5, 1, 4, 2, 3}), {1, 5, 2, 4, 2});
}

TEST(PoolReferenceTest, MaxPropagatesNaNWhereverItSitsAndKeepsInfinities) {
  PoolParams p;
  p.in_w = 8;
  p.kernel_w = 2;
  p.out_w = 7;
  // NaN first in a window (where fmax-style code would drop it) and last.
  const std::vector<float> x = {kNaN, 1, 2, kNaN, 3, kInf, -kInf, -kInf};
  ExpectSameFloats(Pool(p, x), {kNaN, 2, kNaN, kNaN, kInf, kInf, -kInf});
}

TEST(PoolReferenceTest, AverageCountIncludePadBothWays) {
  PoolParams p;
  p.kind = PoolKind::kAverage;
  p.in_h = p.in_w = 2;
  p.kernel_h = p.kernel_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  p.out_h = p.out_w = 3;
  const std::vector<float> x = {1, 2, 3, 4};
  // Corner windows hold one input value, edges two, the centre four.
  p.count_include_pad = false;
  ExpectSameFloats(Pool(p, x), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  p.count_include_pad = true;
  ExpectSameFloats(Pool(p, x), {0.25f, 0.75f, 0.5f, 1, 2.5f, 1.5f, 0.75f, 1.75f, 1});
}

TEST(PoolReferenceTest, AverageCeilModeDoesNotCountPastThePaddedEnd) {
  PoolParams p;
  p.kind = PoolKind::kAverage;
  p.in_w = 4;
  p.kernel_w = 3;
  p.stride_w = 2;
  p.pad_left = p.pad_right = 1;
  p.out_w = WindowOutputSize(4, 3, 2, 1, 1, 1, /*ceil_mode=*/true);
  ASSERT_EQ(p.out_w, 3);  // floor mode gives 2
  const std::vector<float> x = {1, 2, 3, 4};
  // The last window covers columns 3..5: 3 is input, 4 padding, 5 past it.
  p.count_include_pad = true;
  ExpectSameFloats(Pool(p, x), {1, 3, 2});  // 3/3, 9/3, 4/2 (PyTorch's)
  p.count_include_pad = false;
  ExpectSameFloats(Pool(p, x), {1.5f, 3, 4});
}

TEST(PoolReferenceTest, AverageOfWindowOutsideTheInputIsZero) {
  PoolParams p;
  p.kind = PoolKind::kAverage;
  p.in_w = 2;
  p.pad_left = p.pad_right = 1;  // a 1-wide kernel: the end windows are pure padding
  p.out_w = 4;
  for (bool include : {false, true}) {
    p.count_include_pad = include;
    SCOPED_TRACE(include ? "count_include_pad" : "exclude pad");
    ExpectSameFloats(Pool(p, {3, 5}), {0, 3, 5, 0});
  }
}

TEST(PoolReferenceTest, AverageAccumulatesInDoubleAndPropagatesNonFinite) {
  PoolParams p;
  p.kind = PoolKind::kAverage;
  p.in_w = 6;
  p.kernel_w = 3;
  p.stride_w = 3;
  p.out_w = 2;
  // In float, 1e8 + 1 rounds back to 1e8 and the first mean would be 0.
  ExpectSameFloats(Pool(p, {1e8f, 1, -1e8f, kInf, -kInf, 0}), {1.0f / 3.0f, kNaN});
}

// ONNX pooling node tests with their attributes mapped to PoolParams by hand.
struct OnnxPoolCase {
  const char* test;
  PoolKind kind;
  int64_t kernel;
  int64_t stride;
  int64_t dilation;
  int64_t pad_begin;  // top and left
  int64_t pad_end;    // bottom and right
  bool ceil_mode;
  bool count_include_pad;
};

class OnnxPoolTest : public ::testing::TestWithParam<OnnxPoolCase> {};

TEST_P(OnnxPoolTest, MatchesOnnxOutputAndShape) {
  const OnnxPoolCase& c = GetParam();
  const std::vector<OnnxTensor> t = ReadNodeTest(c.test, 1);
  if (t.empty()) GTEST_SKIP() << c.test << " missing: install libonnx-testdata";
  const OnnxTensor& x = t[0];
  const OnnxTensor& y = t[1];
  const bool one_d = x.dims.size() == 3;
  ASSERT_TRUE(one_d || x.dims.size() == 4);
  PoolParams p;
  p.kind = c.kind;
  p.batch = x.dims[0];
  p.channels = x.dims[1];
  p.in_h = one_d ? 1 : x.dims[2];
  p.in_w = x.dims.back();
  p.kernel_w = c.kernel;
  p.stride_w = c.stride;
  p.dilation_w = c.dilation;
  p.pad_left = c.pad_begin;
  p.pad_right = c.pad_end;
  if (!one_d) {
    p.kernel_h = c.kernel;
    p.stride_h = c.stride;
    p.dilation_h = c.dilation;
    p.pad_top = c.pad_begin;
    p.pad_bottom = c.pad_end;
  }
  p.count_include_pad = c.count_include_pad;
  p.out_h = WindowOutputSize(p.in_h, p.kernel_h, p.stride_h, p.dilation_h, p.pad_top, p.pad_bottom,
                             c.ceil_mode);
  p.out_w = WindowOutputSize(p.in_w, p.kernel_w, p.stride_w, p.dilation_w, p.pad_left, p.pad_right,
                             c.ceil_mode);
  std::vector<int64_t> dims = {p.batch, p.channels, p.out_h, p.out_w};
  if (one_d) dims.erase(dims.begin() + 2);
  ASSERT_EQ(dims, y.dims);
  ExpectFloatsClose(Pool(p, x.floats), y.floats, 1e-6);
}

constexpr PoolKind kMax = PoolKind::kMax;
constexpr PoolKind kAvg = PoolKind::kAverage;

INSTANTIATE_TEST_SUITE_P(
    NodeTests, OnnxPoolTest,
    ::testing::Values(
        // test, kind, kernel, stride, dilation, pad begin, pad end, ceil, include pad
        OnnxPoolCase{"test_averagepool_1d_default", kAvg, 2, 1, 1, 0, 0, false, false},
        OnnxPoolCase{"test_averagepool_2d_default", kAvg, 2, 1, 1, 0, 0, false, false},
        OnnxPoolCase{"test_averagepool_2d_ceil", kAvg, 3, 2, 1, 0, 0, true, false},
        OnnxPoolCase{"test_averagepool_2d_pads", kAvg, 3, 1, 1, 2, 2, false, false},
        OnnxPoolCase{"test_averagepool_2d_pads_count_include_pad", kAvg, 3, 1, 1, 2, 2, false,
                     true},
        OnnxPoolCase{"test_averagepool_2d_precomputed_pads", kAvg, 5, 1, 1, 2, 2, false, false},
        OnnxPoolCase{"test_averagepool_2d_precomputed_pads_count_include_pad", kAvg, 5, 1, 1, 2, 2,
                     false, true},
        OnnxPoolCase{"test_averagepool_2d_strides", kAvg, 5, 3, 1, 0, 0, false, false},
        OnnxPoolCase{"test_averagepool_2d_precomputed_strides", kAvg, 2, 2, 1, 0, 0, false, false},
        // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning.
        OnnxPoolCase{"test_averagepool_2d_same_upper", kAvg, 2, 1, 1, 0, 1, false, false},
        OnnxPoolCase{"test_averagepool_2d_same_lower", kAvg, 2, 1, 1, 1, 0, false, false},
        OnnxPoolCase{"test_averagepool_2d_precomputed_same_upper", kAvg, 3, 2, 1, 1, 1, false,
                     false},
        OnnxPoolCase{"test_maxpool_1d_default", kMax, 2, 1, 1, 0, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_default", kMax, 2, 1, 1, 0, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_ceil", kMax, 3, 2, 1, 0, 0, true, false},
        OnnxPoolCase{"test_maxpool_2d_dilations", kMax, 2, 1, 2, 0, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_pads", kMax, 3, 1, 1, 2, 2, false, false},
        OnnxPoolCase{"test_maxpool_2d_precomputed_pads", kMax, 5, 1, 1, 2, 2, false, false},
        OnnxPoolCase{"test_maxpool_2d_strides", kMax, 5, 3, 1, 0, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_precomputed_strides", kMax, 2, 2, 1, 0, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_same_upper", kMax, 2, 1, 1, 0, 1, false, false},
        OnnxPoolCase{"test_maxpool_2d_same_lower", kMax, 2, 1, 1, 1, 0, false, false},
        OnnxPoolCase{"test_maxpool_2d_precomputed_same_upper", kMax, 3, 2, 1, 1, 1, false, false}),
    [](const ::testing::TestParamInfo<OnnxPoolCase>& info) {
      return std::string(info.param.test).substr(5);
    });

// ---------------------------------------------------------------------------
// Global pooling
// ---------------------------------------------------------------------------

class OnnxGlobalPoolTest : public ::testing::TestWithParam<const char*> {};

TEST_P(OnnxGlobalPoolTest, MatchesOnnxOutput) {
  const std::string test = GetParam();
  const std::vector<OnnxTensor> t = ReadNodeTest(test, 1);
  if (t.empty()) GTEST_SKIP() << test << " missing: install libonnx-testdata";
  GlobalPoolParams p;
  p.kind = test.find("max") != std::string::npos ? PoolKind::kMax : PoolKind::kAverage;
  p.rows = t[0].dims[0] * t[0].dims[1];
  p.spatial = t[0].dims[2] * t[0].dims[3];
  std::vector<float> y(p.rows, kNaN);
  GlobalPoolReference(p, t[0].floats.data(), y.data());
  ExpectFloatsClose(y, t[1].floats, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(NodeTests, OnnxGlobalPoolTest,
                         ::testing::Values("test_globalaveragepool",
                                           "test_globalaveragepool_precomputed",
                                           "test_globalmaxpool", "test_globalmaxpool_precomputed"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).substr(5);
                         });

TEST(GlobalPoolReferenceTest, MaxPropagatesNaNAndKeepsNegativeInfinity) {
  GlobalPoolParams p;
  p.kind = PoolKind::kMax;
  p.rows = 4;
  p.spatial = 3;
  const std::vector<float> x = {kNaN, 5, 1, 1, 5, kNaN, -kInf, -kInf, -kInf, -3, -1, -2};
  std::vector<float> y(4);
  GlobalPoolReference(p, x.data(), y.data());
  ExpectSameFloats(y, {kNaN, kNaN, -kInf, -1});
}

TEST(GlobalPoolReferenceTest, AverageAccumulatesInDouble) {
  GlobalPoolParams p;
  p.rows = 2;
  p.spatial = 3;
  // Float accumulation loses the 1 against 1e8 and gives 0 for the first row.
  const std::vector<float> x = {1e8f, 1, -1e8f, 1, kNaN, 2};
  std::vector<float> y(2);
  GlobalPoolReference(p, x.data(), y.data());
  ExpectSameFloats(y, {1.0f / 3.0f, kNaN});
}

// ---------------------------------------------------------------------------
// Activations and the channel epilogue
// ---------------------------------------------------------------------------

ActivationParams Act(Activation kind) {
  ActivationParams a;
  a.kind = kind;
  return a;
}

struct ActivationCase {
  const char* name;
  ActivationParams params;
  std::vector<float> x;
  std::vector<float> expected;
};

class ActivationTest : public ::testing::TestWithParam<ActivationCase> {};

TEST_P(ActivationTest, HandValuesAndNaN) {
  const ActivationCase& c = GetParam();
  ASSERT_EQ(c.x.size(), c.expected.size());
  std::vector<float> y;
  for (float v : c.x) y.push_back(ApplyActivation(c.params, v));
  ExpectFloatsClose(y, c.expected, 1e-7);
  // NaN in, NaN out, for every kind.
  EXPECT_TRUE(std::isnan(ApplyActivation(c.params, kNaN)));
}

ActivationParams ClipParams(float lo, float hi) {
  ActivationParams a = Act(Activation::kClip);
  a.clip_min = lo;
  a.clip_max = hi;
  return a;
}

ActivationParams HardSigmoidParams(float alpha, float beta) {
  ActivationParams a = Act(Activation::kHardSigmoid);
  a.alpha = alpha;
  a.beta = beta;
  return a;
}

// Sigmoid(1) = 1 / (1 + e^-1).
constexpr float kSigmoidOne = 0.7310585786300049f;

INSTANTIATE_TEST_SUITE_P(
    Kinds, ActivationTest,
    ::testing::Values(
        ActivationCase{"none", Act(Activation::kNone), {-2, 0, 3, kInf}, {-2, 0, 3, kInf}},
        ActivationCase{"relu", Act(Activation::kRelu), {-2, 0, 3, kInf, -kInf}, {0, 0, 3, kInf, 0}},
        ActivationCase{"relu6", ClipParams(0, 6), {-1, 2.5f, 7, kInf, -kInf}, {0, 2.5f, 6, 6, 0}},
        ActivationCase{"clip", ClipParams(-1, 0.5f), {-3, 0.25f, 1}, {-1, 0.25f, 0.5f}},
        ActivationCase{"sigmoid",
                       Act(Activation::kSigmoid),
                       {0, 1, -1, kInf, -kInf},
                       {0.5f, kSigmoidOne, 1 - kSigmoidOne, 1, 0}},
        // -inf: -inf * sigmoid(-inf) = -inf * 0, NaN as in the Sigmoid-Mul graph.
        ActivationCase{"silu",
                       Act(Activation::kSilu),
                       {0, 1, -1, kInf, -kInf},
                       {0, kSigmoidOne, -(1 - kSigmoidOne), kInf, kNaN}},
        // ONNX's defaults alpha 0.2, beta 0.5: 0.2 * 1 + 0.5 = 0.7.
        ActivationCase{"hard_sigmoid",
                       Act(Activation::kHardSigmoid),
                       {-3, 0, 1, 3, kInf},
                       {0, 0.5f, 0.7f, 1, 1}},
        ActivationCase{
            "hard_sigmoid_params", HardSigmoidParams(0.5f, 0.25f), {-1, 1, 2}, {0, 0.75f, 1}},
        // x * clamp(x / 6 + 1/2, 0, 1): 1 * (1/6 + 1/2) = 2/3.
        ActivationCase{"hard_swish",
                       Act(Activation::kHardSwish),
                       {-4, -3, 0, 1, 3, 5, kInf},
                       {0, 0, 0, 2.0f / 3.0f, 3, 5, kInf}}),
    [](const ::testing::TestParamInfo<ActivationCase>& info) { return info.param.name; });

TEST(ActivationTest, ReluOfNegativeZeroIsPositiveZero) {
  // x > 0 ? x : 0 (nn_params.h), unlike max(x, 0) implementations.
  EXPECT_FALSE(std::signbit(ApplyActivation(Act(Activation::kRelu), -0.0f)));
}

TEST(ChannelEpilogueReferenceTest, ScaleShiftResidualThenActivation) {
  ChannelEpilogueParams p;
  p.batch = 2;
  p.channels = 2;
  p.spatial = 2;
  p.activation = Act(Activation::kRelu);
  const std::vector<float> x = {1, -2, 3, 4, 5, 6, -7, 8};
  const std::vector<float> scale = {2, -1};
  const std::vector<float> shift = {1, 10};
  const std::vector<float> residual = {0.5f, 0, 0, kNaN, -20, 0, 0, 1};
  std::vector<float> y(8);
  ChannelEpilogueReference(p, x.data(), scale.data(), shift.data(), residual.data(), y.data());
  // Channel 0: 2x + 1, channel 1: -x + 10, plus the residual, then ReLU.
  ExpectSameFloats(y, {3.5f, 0, 7, kNaN, 0, 13, 17, 3});
}

TEST(ChannelEpilogueReferenceTest, NullOperandsAreIdentityAndInPlaceWorks) {
  ChannelEpilogueParams p;
  p.channels = 3;
  p.spatial = 2;
  p.activation = ClipParams(-1, 1);
  std::vector<float> x = {-5, 0.5f, kNaN, 2, -0.25f, kInf};
  const std::vector<float> shift = {0, 0.5f, -1};
  // Only the clip applies.
  std::vector<float> y(6);
  ChannelEpilogueReference(p, x.data(), nullptr, nullptr, nullptr, y.data());
  ExpectSameFloats(y, {-1, 0.5f, kNaN, 1, -0.25f, 1});
  // Shift only, written over x.
  ChannelEpilogueReference(p, x.data(), nullptr, shift.data(), nullptr, x.data());
  ExpectSameFloats(x, {-1, 0.5f, kNaN, 1, -1, 1});
}

// ---------------------------------------------------------------------------
// Pad
// ---------------------------------------------------------------------------

PadParams MakePad(PadMode mode, const std::vector<int64_t>& in_dims,
                  const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  PadParams p;
  p.mode = mode;
  p.rank = static_cast<int32_t>(in_dims.size());
  for (size_t d = 0; d < in_dims.size(); ++d) {
    p.in_dims[d] = in_dims[d];
    p.pads_begin[d] = begin[d];
    p.out_dims[d] = in_dims[d] + begin[d] + end[d];
  }
  return p;
}

int64_t OutCount(const PadParams& p) {
  int64_t count = 1;
  for (int d = 0; d < p.rank; ++d) count *= p.out_dims[d];
  return count;
}

std::vector<float> PadFloats(const PadParams& p, const std::vector<float>& x, float value = 0) {
  std::vector<float> y(OutCount(p), kNaN);
  PadReference(p, x.data(), y.data(), sizeof(float), &value);
  return y;
}

class OnnxPadTest : public ::testing::TestWithParam<const char*> {};

// Compares bytes: Pad only moves elements, so the result must be exact, and
// this covers the int32 data of ONNX's edge and reflect tests.
TEST_P(OnnxPadTest, MatchesOnnxOutput) {
  const std::string test = GetParam();
  const bool constant = test == "test_constant_pad";
  const std::vector<OnnxTensor> t = ReadNodeTest(test, constant ? 3 : 2);
  if (t.empty()) GTEST_SKIP() << test << " missing: install libonnx-testdata";
  const OnnxTensor& x = t[0];
  const std::vector<int64_t>& pads = t[1].ints;  // all begins, then all ends
  const size_t rank = x.dims.size();
  ASSERT_EQ(pads.size(), 2 * rank);
  PadMode mode = PadMode::kEdge;
  if (constant) mode = PadMode::kConstant;
  if (test.find("reflect") != std::string::npos) mode = PadMode::kReflect;
  const PadParams p = MakePad(mode, x.dims, std::vector<int64_t>(pads.begin(), pads.begin() + rank),
                              std::vector<int64_t>(pads.begin() + rank, pads.end()));
  const OnnxTensor& y = t.back();
  ASSERT_EQ(std::vector<int64_t>(p.out_dims, p.out_dims + rank), y.dims);
  ASSERT_EQ(y.element_size, x.element_size);
  std::string value(x.element_size, '\0');  // ONNX's default pad value, 0
  if (constant) {
    ASSERT_EQ(t[2].element_size, x.element_size);
    value = t[2].bytes;
  }
  std::string out(y.bytes.size(), '\x5a');  // not a pattern the data holds
  PadReference(p, x.bytes.data(), out.data(), x.element_size, value.data());
  EXPECT_EQ(out, y.bytes);
}

INSTANTIATE_TEST_SUITE_P(NodeTests, OnnxPadTest,
                         ::testing::Values("test_constant_pad", "test_edge_pad",
                                           "test_reflect_pad"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).substr(5);
                         });

TEST(PadReferenceTest, NegativePadsCrop) {
  // [[0 1 2 3] [4 5 6 7]]: drop the first and last columns, add a row of 9s.
  const std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7};
  const PadParams p = MakePad(PadMode::kConstant, {2, 4}, {0, -1}, {1, -1});
  ExpectSameFloats(PadFloats(p, x, 9), {1, 2, 5, 6, 9, 9});
}

TEST(PadReferenceTest, ReflectCropsOneSideAndMirrorsTheOther) {
  const PadParams p = MakePad(PadMode::kReflect, {4}, {-1}, {2});
  // Input 0 1 2 3 without its first element, then mirrored past 3: 2 1.
  ExpectSameFloats(PadFloats(p, {0, 1, 2, 3}), {1, 2, 3, 2, 1});
}

TEST(PadReferenceTest, ReflectFurtherThanTheInputRepeatsLikeNumpy) {
  // numpy.pad([1, 2, 3], (4, 0), 'reflect') == [1, 2, 3, 2, 1, 2, 3].
  const PadParams p = MakePad(PadMode::kReflect, {3}, {4}, {0});
  ExpectSameFloats(PadFloats(p, {1, 2, 3}), {1, 2, 3, 2, 1, 2, 3});
}

TEST(PadReferenceTest, EdgeAndReflectAcrossTwoDims) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  ExpectSameFloats(PadFloats(MakePad(PadMode::kEdge, {2, 3}, {1, 0}, {0, 2}), x),
                   {1, 2, 3, 3, 3,  //
                    1, 2, 3, 3, 3,  //
                    4, 5, 6, 6, 6});
  ExpectSameFloats(PadFloats(MakePad(PadMode::kReflect, {2, 3}, {1, 1}, {0, 1}), x),
                   {5, 4, 5, 6, 5,  //
                    2, 1, 2, 3, 2,  //
                    5, 4, 5, 6, 5});
}

TEST(PadReferenceTest, Int64ElementsKeepAllEightBytes) {
  constexpr int64_t kBig = int64_t{1} << 40;  // would be cut by a 4-byte copy
  const std::vector<int64_t> x = {kBig + 1, -kBig, 7};
  const int64_t value = -kBig - 5;
  std::vector<int64_t> y(6, 0);
  PadReference(MakePad(PadMode::kEdge, {3}, {2}, {1}), x.data(), y.data(), sizeof(int64_t), &value);
  EXPECT_EQ(y, (std::vector<int64_t>{kBig + 1, kBig + 1, kBig + 1, -kBig, 7, 7}));
  std::vector<int64_t> z(5, 0);
  PadReference(MakePad(PadMode::kConstant, {3}, {1}, {1}), x.data(), z.data(), sizeof(int64_t),
               &value);
  EXPECT_EQ(z, (std::vector<int64_t>{value, kBig + 1, -kBig, 7, value}));
}

TEST(PadReferenceTest, BoolElementsAreOneByte) {
  const bool x[] = {false, true, false};
  const bool value = true;
  bool y[6] = {};
  PadReference(MakePad(PadMode::kConstant, {3}, {2}, {1}), x, y, sizeof(bool), &value);
  const bool expected[] = {true, true, false, true, false, true};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], expected[i]) << "element " << i;
}

TEST(PadReferenceTest, ScalarIsCopied) {
  PadParams p;  // rank 0
  const float x = 4.5f;
  float y = 0;
  PadReference(p, &x, &y, sizeof(float), nullptr);
  EXPECT_EQ(y, 4.5f);
}

// ---------------------------------------------------------------------------
// BatchNormalization as an affine, and folding it into a convolution
// ---------------------------------------------------------------------------

TEST(BatchNormAffineTest, HandComputed) {
  // Channel 0: 2 / sqrt(3.75 + 0.25) = 1, 5 - 4 * 1 = 1.
  // Channel 1: 1 / sqrt(0 + 0.25) = 2, 0 - 1 * 2 = -2.
  const float gamma[] = {2, 1};
  const float beta[] = {5, 0};
  const float mean[] = {4, 1};
  const float var[] = {3.75f, 0};
  float scale[2];
  float shift[2];
  BatchNormAffine(2, gamma, beta, mean, var, 0.25f, scale, shift);
  EXPECT_EQ(scale[0], 1.0f);
  EXPECT_EQ(shift[0], 1.0f);
  EXPECT_EQ(scale[1], 2.0f);
  EXPECT_EQ(shift[1], -2.0f);
}

TEST(BatchNormAffineTest, RoundsTheFloat64ResultOnce) {
  constexpr int64_t kChannels = 64;  // enough that float arithmetic would differ somewhere
  const std::vector<float> gamma = RandomFloats(kChannels, 7, 0.5f, 2.0f);
  const std::vector<float> beta = RandomFloats(kChannels, 8);
  const std::vector<float> mean = RandomFloats(kChannels, 9, -3.0f, 3.0f);
  const std::vector<float> var = RandomFloats(kChannels, 10, 0.01f, 4.0f);
  constexpr float kEpsilon = 1e-5f;
  std::vector<float> scale(kChannels);
  std::vector<float> shift(kChannels);
  BatchNormAffine(kChannels, gamma.data(), beta.data(), mean.data(), var.data(), kEpsilon,
                  scale.data(), shift.data());
  for (int64_t c = 0; c < kChannels; ++c) {
    const double s = static_cast<double>(gamma[c]) / std::sqrt(double{var[c]} + kEpsilon);
    EXPECT_EQ(scale[c], static_cast<float>(s)) << "channel " << c;
    EXPECT_EQ(shift[c], static_cast<float>(beta[c] - mean[c] * s)) << "channel " << c;
  }
}

TEST(FoldAffineIntoConvTest, HandComputed) {
  const float scale[] = {2, -1};
  const float shift[] = {1, 3};
  const float w[] = {1, 2, 3, 4, 5, 6};  // 2 channels x 3 weights
  const float b[] = {0.5f, 1};
  float w_out[6];
  float b_out[2];
  FoldAffineIntoConv(2, 3, scale, shift, w, b, w_out, b_out);
  ExpectSameFloats(std::vector<float>(w_out, w_out + 6), {2, 4, 6, -4, -5, -6});
  ExpectSameFloats(std::vector<float>(b_out, b_out + 2), {2, 2});
  FoldAffineIntoConv(2, 3, scale, shift, w, nullptr, w_out, b_out);
  ExpectSameFloats(std::vector<float>(b_out, b_out + 2), {1, 3});
}

struct FoldCase {
  const char* name;
  int64_t in_channels;
  int64_t out_channels;
  int64_t groups;
  bool has_bias;
};

class ConvBatchNormFoldTest : public ::testing::TestWithParam<FoldCase> {};

// Conv, then BatchNormalization computed from its definition, against the
// convolution with the BN folded into its weights and bias.
TEST_P(ConvBatchNormFoldTest, FoldedConvEqualsConvThenBatchNorm) {
  const FoldCase& c = GetParam();
  ConvParams p;
  p.batch = 2;
  p.in_channels = c.in_channels;
  p.out_channels = c.out_channels;
  p.groups = c.groups;
  p.in_h = 6;
  p.in_w = 7;
  p.kernel_h = p.kernel_w = 3;
  p.pad_h = p.pad_w = 1;
  p.out_h = 6;
  p.out_w = 7;
  const int64_t weights_per_channel = (p.in_channels / p.groups) * 9;
  const std::vector<float> x = RandomFloats(p.batch * p.in_channels * 42, 11);
  const std::vector<float> w = RandomFloats(p.out_channels * weights_per_channel, 12);
  const std::vector<float> b = RandomFloats(p.out_channels, 13);
  const std::vector<float> gamma = RandomFloats(p.out_channels, 14, 0.5f, 2.0f);
  const std::vector<float> beta = RandomFloats(p.out_channels, 15);
  const std::vector<float> mean = RandomFloats(p.out_channels, 16);
  const std::vector<float> var = RandomFloats(p.out_channels, 17, 0.1f, 2.0f);
  constexpr float kEpsilon = 1e-5f;
  const std::vector<float>* bias = c.has_bias ? &b : nullptr;

  std::vector<float> scale(p.out_channels);
  std::vector<float> shift(p.out_channels);
  BatchNormAffine(p.out_channels, gamma.data(), beta.data(), mean.data(), var.data(), kEpsilon,
                  scale.data(), shift.data());
  std::vector<float> w_folded(w.size());
  std::vector<float> b_folded(p.out_channels);
  FoldAffineIntoConv(p.out_channels, weights_per_channel, scale.data(), shift.data(), w.data(),
                     bias != nullptr ? bias->data() : nullptr, w_folded.data(), b_folded.data());
  const std::vector<float> folded = Conv(p, x, w_folded, &b_folded);

  const std::vector<float> conv = Conv(p, x, w, bias);
  // The relative error is measured against the size of the terms summed,
  // |scale| * conv(|x|, |w|) + |shift|, not against an output that may cancel
  // to near zero.
  const std::vector<float> abs_b = Abs(b);
  const std::vector<float> magnitude = Conv(p, Abs(x), Abs(w), c.has_bias ? &abs_b : nullptr);
  const int64_t plane = p.out_h * p.out_w;
  for (size_t i = 0; i < conv.size(); ++i) {
    const int64_t oc = (static_cast<int64_t>(i) / plane) % p.out_channels;
    const double inv_std = 1.0 / std::sqrt(double{var[oc]} + kEpsilon);
    const double expected = (conv[i] - double{mean[oc]}) * inv_std * gamma[oc] + beta[oc];
    const double bound = std::fabs(gamma[oc] * inv_std) * magnitude[i] +
                         std::fabs(beta[oc] - mean[oc] * gamma[oc] * inv_std);
    EXPECT_NEAR(folded[i], expected, 1e-6 * bound) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvBatchNormFoldTest,
                         ::testing::Values(FoldCase{"dense_with_bias", 3, 4, 1, true},
                                           FoldCase{"dense_without_bias", 3, 4, 1, false},
                                           FoldCase{"depthwise_with_bias", 4, 4, 4, true},
                                           FoldCase{"grouped_without_bias", 4, 6, 2, false}),
                         [](const ::testing::TestParamInfo<FoldCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace graphserve
