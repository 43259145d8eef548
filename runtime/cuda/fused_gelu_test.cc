// The fused exact GELU against ONNX's function, y = x * 0.5 * (1 + erf(x /
// sqrt(2))), computed in float64, and against the five-node chain it replaces
// as the host executor runs it, in float32, float16 and bfloat16: NaN, both
// infinities, each type's largest and smallest numbers and a sweep through
// the range where 1 + erf cancels.
//
// Note [GELU at the edges]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// In IEEE arithmetic the formula gives, and the fused kernel must give:
//   GELU(NaN)  = NaN;
//   GELU(+Inf) = +Inf * 0.5 * (1 + 1) = +Inf;
//   GELU(-Inf) = -Inf * 0.5 * (1 - 1) = -Inf * 0 = NaN, not 0 (the limit):
//     the unfused chain PyTorch exports (Div, Erf, Add, Mul, Mul) gives NaN
//     there on the host executor, and fusing must not change an answer;
//   large negative x: 1 + erf rounds to 0, so -0.
// One place where the chain and the formula differ: for x > FLT_MAX / 2 the
// chain's float32 Mul(x, 1 + erf) = 2x overflows to +Inf before the Mul by
// 0.5, while ONNX's function (and its Gelu op, and the chain with the 0.5
// taken first) is x. The fused kernel takes the 0.5 first, so it gives x, as
// ONNX's Gelu does; the host test below pins the chain's +Inf so the
// difference stays a known one.
#include "runtime/cuda/fused_gelu.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/cuda_handles.h"
#include "common/tensor.h"
#include "runtime/bind.h"
#include "runtime/cuda/kernel_test_util.h"
#include "common/dtype_table.h"
#include "runtime/host/host_executor.h"
#include "runtime/ir.h"

namespace graphserve {
namespace {

// Against ONNX's function: erff's 2 ulp (CUDA's documented bound), the
// roundings of x * 0.70710678f, of 1 + erf and of the products: under 3
// float32 ulps of |x| in all, so 8 leaves room. Relative to |x|, not to
// |GELU(x)|: for x around -4, 1 + erf is a difference of nearly equal
// numbers, and float cannot do better. A 16-bit result is that float value
// rounded once, and the reference is rounded once too: the two differ by at
// most the two roundings, 2u |x| (u the type's unit roundoff).
double KernelRtol(DType dtype) {
  return 8 * FLT_EPSILON + (dtype == DType::kFloat32 ? 0.0 : 2 * UnitRoundoff(dtype));
}

// Against the chain: in float32 as above (the chain's roundings are float's
// too). A 16-bit chain rounds each of its nodes to the type: the Div's and
// the Erf's roundings reach 1 + erf damped by erf's slope (at most 0.48u
// each), 1 + erf's own rounding and the product's add 3u, times 0.5 |x| and
// |x|, plus the exporter's sqrt(2) rounded to the type (1.1e-4 relative in
// erf's argument): under 4u |x|, and the kernel's own 2u, so 8u leaves room.
double ChainRtol(DType dtype) {
  return 8 * FLT_EPSILON + (dtype == DType::kFloat32 ? 0.0 : 8 * UnitRoundoff(dtype));
}

// GELU is never below -0.17, so this is nobody's output: an element the
// kernel does not write keeps it and fails. Exact in every type.
constexpr float kPoison = -1.0f;
// Elements after the output that must stay kPoison (the widest tail: 7
// 16-bit elements after the last 16-byte vector).
constexpr int64_t kGuard = 8;

// `values` rounded to `dtype`, as the device stores them (exact for values
// already of the type).
std::vector<float> RoundedTo(DType dtype, std::vector<float> values) {
  const absl::StatusOr<std::vector<uint8_t>> bytes = RoundToDType(dtype, values);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return values;
}

float RoundedTo(DType dtype, float value) { return RoundedTo(dtype, std::vector<float>{value})[0]; }

// ONNX's function in float64 from the input (of `dtype`), rounded to `dtype`
// (through float for the 16-bit types, as the host executor rounds).
float OnnxGelu(DType dtype, float x) {
  const double v = x;
  return RoundedTo(dtype, static_cast<float>(v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)))));
}

// Each type's own edges: its largest number, the first x whose 2x overflows
// (and the last that does not), its smallest normal and subnormal numbers.
std::vector<float> TypeEdges(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return {65504.0f, -65504.0f, 32768.0f, 32752.0f, 0x1p-14f, 0x1p-24f, -0x1p-24f};
    case DType::kBFloat16:
      return {0x1.fep127f, -0x1.fep127f, 0x1p127f, 0x1.fep126f, 0x1p-126f, 0x1p-133f, -0x1p-133f};
    default:
      return {};  // the float32 cases below hold them
  }
}

// The edges of Note [GELU at the edges], then the float32 extremes and the
// type's, then x = -12 .. 12 in steps of 1/64 (exact in every type but
// bfloat16, which rounds some): through the cancelling range of 1 + erf and
// where GELU(x) rounds to x or to -0. All rounded to `dtype`.
std::vector<float> Inputs(DType dtype) {
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr float kMin = std::numeric_limits<float>::min();
  constexpr float kDenormMin = std::numeric_limits<float>::denorm_min();
  std::vector<float> x = {
      kNaN, kInf, -kInf,  // the edges, first and in this order: the tests index them
      kMax, 3e38f,        // past FLT_MAX / 2, where the chain's 2x overflows
      -kMax, -3e38f, kLarge, -kLarge, 1e5f, -1e5f,
      -10.0f, -5.0f, -4.0f,                      // 1 + erf rounds to 0, or cancels
      1e-30f, -1e-30f, kMin, -kMin,              // small normals
      1e-40f, -1e-40f, kDenormMin, 0.0f, -0.0f,  // subnormals and zeros
  };
  for (const float edge : TypeEdges(dtype)) x.push_back(edge);
  for (int i = -12 * 64; i <= 12 * 64; ++i) x.push_back(static_cast<float>(i) / 64);
  return RoundedTo(dtype, std::move(x));
}

// Where the chain's x * (1 + erf) = 2x overflows `dtype` and the formula's
// 0.5 * x does not (for large negative x, 1 + erf is 0).
bool ChainOverflows(DType dtype, float x) {
  return x > 0 && std::isfinite(x) && std::isinf(RoundedTo(dtype, 2.0f * x));
}

// A scalar constant of `dtype` (rounded once from the float).
std::shared_ptr<const HostTensor> Scalar(DType dtype, float v) {
  HostTensor tensor(DType::kFloat32, Dims{});
  tensor.data<float>()[0] = v;
  return std::make_shared<const HostTensor>(ConvertFloats(tensor, dtype));
}

// The chain PyTorch exports for nn.GELU() (the one MatchErfGelu replaces,
// its constants bit for bit, rounded to `dtype` as the exporter's are), on
// the host executor, one element a row.
absl::StatusOr<std::vector<float>> HostChain(DType dtype, const std::vector<float>& x) {
  Model model;
  model.name = "erf_gelu_chain";
  model.opset = 17;
  model.inputs.push_back({"x", dtype, {-1, 1}});
  model.outputs.push_back({"y", dtype, {-1, 1}});
  model.initializers["sqrt2"] = Scalar(dtype, 1.4142135381698608f);
  model.initializers["one"] = Scalar(dtype, 1.0f);
  model.initializers["half"] = Scalar(dtype, 0.5f);
  model.nodes = {
      {"div", "Div", {"x", "sqrt2"}, {"d"}, {}},
      {"erf", "Erf", {"d"}, {"e"}, {}},
      {"add", "Add", {"e", "one"}, {"a"}, {}},
      {"mul", "Mul", {"x", "a"}, {"m"}, {}},
      {"half_mul", "Mul", {"m", "half"}, {"y"}, {}},
  };
  BindOptions options;
  options.batch_size = static_cast<int64_t>(x.size());
  absl::StatusOr<BoundGraph> graph = BindModel(model, options);
  if (!graph.ok()) return graph.status();
  absl::StatusOr<std::unique_ptr<HostExecutor>> host = HostExecutor::Create(*std::move(graph));
  if (!host.ok()) return host.status();
  HostTensor input(DType::kFloat32, Dims{static_cast<int64_t>(x.size()), 1});
  std::copy(x.begin(), x.end(), input.data<float>());
  std::vector<HostTensor> inputs;
  inputs.push_back(ConvertFloats(input, dtype));  // exact: x is of the type
  absl::StatusOr<std::vector<HostTensor>> outputs = (*host)->Run(inputs);
  if (!outputs.ok()) return outputs.status();
  const HostTensor y = ConvertFloats((*outputs)[0], DType::kFloat32);
  return std::vector<float>(y.data<float>(), y.data<float>() + x.size());
}

class FusedGeluReferenceTest : public ::testing::TestWithParam<DType> {};

// Host-only: the oracle the kernel is held to is what the unfused chain gives
// on the host executor, edges included, except where the chain overflows
// (Note [GELU at the edges]).
TEST_P(FusedGeluReferenceTest, HostChainGivesOnnxsFunctionButOverflowsPastHalfTheMax) {
  const DType dtype = GetParam();
  const std::vector<float> x = Inputs(dtype);
  absl::StatusOr<std::vector<float>> chain = HostChain(dtype, x);
  ASSERT_TRUE(chain.ok()) << chain.status();
  std::vector<float> want, got, scale;
  int overflows = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ChainOverflows(dtype, x[i])) {
      EXPECT_EQ((*chain)[i], kInf) << "x = " << x[i];
      EXPECT_EQ(OnnxGelu(dtype, x[i]), x[i]);
      ++overflows;
      continue;
    }
    want.push_back(OnnxGelu(dtype, x[i]));
    got.push_back((*chain)[i]);
    scale.push_back(std::fabs(x[i]));
  }
  EXPECT_GT(overflows, 0) << "the inputs hold x past half the type's largest number";
  EXPECT_TRUE(MatchesReference(got, want, ChainRtol(dtype), scale, DTypeFloor(dtype)));
  // The edges, spelled out (MatchesReference already demands them).
  EXPECT_TRUE(std::isnan((*chain)[0]));  // NaN
  EXPECT_EQ((*chain)[1], kInf);          // +Inf
  EXPECT_TRUE(std::isnan((*chain)[2]));  // -Inf: -Inf * 0
  EXPECT_TRUE(std::isnan(OnnxGelu(dtype, -kInf)));
}

INSTANTIATE_TEST_SUITE_P(Types, FusedGeluReferenceTest,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

// The launch's own checks, before any CUDA call.
TEST(FusedGeluTest, ZeroCountEnqueuesNothingAndNegativeOrOtherTypesAreRefused) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    EXPECT_EQ(LaunchErfGelu(dtype, nullptr, nullptr, 0, nullptr), cudaSuccess);
    EXPECT_EQ(LaunchErfGelu(dtype, nullptr, nullptr, -1, nullptr), cudaErrorInvalidValue);
  }
  EXPECT_EQ(LaunchErfGelu(DType::kFloat64, nullptr, nullptr, 4, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(LaunchErfGelu(DType::kInt32, nullptr, nullptr, 4, nullptr), cudaErrorInvalidValue);
}

// (dtype, count, misaligned, in place). Counts: the edges alone in the vector
// path's tail (1, 3), one float32 vector (4), a float32 vector and a tail
// (7), one 16-bit vector (8) and a tail of 7 (15), and many with tails of 1
// to 3 (float32) and 1 to 7 (16-bit). Misaligned: x and y one element past
// 16-byte alignment, the scalar path.
class FusedGeluKernelTest
    : public ::testing::TestWithParam<std::tuple<DType, int64_t, bool, bool>> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

// `count` elements of `dtype` at `device`, widened to float.
std::vector<float> Download(DType dtype, const void* device, int64_t count) {
  HostTensor stored(dtype, Dims{count});
  EXPECT_EQ(cudaMemcpy(stored.raw(), device, stored.bytes(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  const HostTensor widened = ConvertFloats(stored, DType::kFloat32);
  return std::vector<float>(widened.data<float>(), widened.data<float>() + count);
}

TEST_P(FusedGeluKernelTest, MatchesOnnxsFunctionAndTheUnfusedChain) {
  const auto [dtype, count, misaligned, in_place] = GetParam();
  const std::vector<float> cases = Inputs(dtype);
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i) x[i] = cases[i % cases.size()];

  const size_t element = DTypeSize(dtype);
  const int64_t offset = misaligned ? 1 : 0;
  const size_t room = static_cast<size_t>(offset + count + kGuard);
  absl::StatusOr<DeviceBuffer> x_buffer = DeviceBuffer::Allocate(room * element);
  absl::StatusOr<DeviceBuffer> y_buffer = DeviceBuffer::Allocate(room * element);
  ASSERT_TRUE(x_buffer.ok()) << x_buffer.status();
  ASSERT_TRUE(y_buffer.ok()) << y_buffer.status();
  char* x_device = static_cast<char*>(x_buffer->get()) + offset * element;
  char* y_device = in_place ? x_device : static_cast<char*>(y_buffer->get()) + offset * element;
  // x, then the guard, in x's buffer; the whole of y's buffer poisoned.
  std::vector<float> x_room(x);
  x_room.resize(x.size() + kGuard, kPoison);
  absl::StatusOr<std::vector<uint8_t>> x_bytes = RoundToDType(dtype, x_room);
  ASSERT_TRUE(x_bytes.ok()) << x_bytes.status();
  const absl::Status copied = CopyToDeviceAndWait(x_device, x_bytes->data(), x_bytes->size());
  ASSERT_TRUE(copied.ok()) << copied;
  std::vector<float> poison(room, kPoison);
  absl::StatusOr<std::vector<uint8_t>> poison_bytes = RoundToDType(dtype, poison);
  ASSERT_TRUE(poison_bytes.ok()) << poison_bytes.status();
  const absl::Status poisoned =
      CopyToDeviceAndWait(y_buffer->get(), poison_bytes->data(), poison_bytes->size());
  ASSERT_TRUE(poisoned.ok()) << poisoned;

  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_EQ(LaunchErfGelu(dtype, x_device, y_device, count, stream->get()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  const std::vector<float> y_room = Download(dtype, y_device, count + kGuard);
  const std::vector<float> y(y_room.begin(), y_room.begin() + count);
  for (int64_t g = 0; g < kGuard; ++g) {
    EXPECT_EQ(y_room[static_cast<size_t>(count + g)], kPoison) << "written past " << count;
  }

  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = OnnxGelu(dtype, x[i]);
  EXPECT_TRUE(MatchesReference(y, want, KernelRtol(dtype), Abs(x), DTypeFloor(dtype)))
      << "against ONNX's function";

  // The chain, where it does not overflow (Note [GELU at the edges]).
  absl::StatusOr<std::vector<float>> chain = HostChain(dtype, x);
  ASSERT_TRUE(chain.ok()) << chain.status();
  std::vector<float> got, chain_want, scale;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ChainOverflows(dtype, x[i])) continue;
    got.push_back(y[i]);
    chain_want.push_back((*chain)[i]);
    scale.push_back(std::fabs(x[i]));
  }
  EXPECT_TRUE(MatchesReference(got, chain_want, ChainRtol(dtype), scale, DTypeFloor(dtype)))
      << "against the unfused chain";
}

INSTANTIATE_TEST_SUITE_P(
    TypesCountsAlignmentsInPlace, FusedGeluKernelTest,
    ::testing::Combine(::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                       ::testing::Values(int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7},
                                         int64_t{8}, int64_t{15}, int64_t{8 * 800 + 1},
                                         int64_t{8 * 800 + 2}, int64_t{8 * 800 + 3},
                                         int64_t{8 * 800 + 7}),
                       ::testing::Bool(), ::testing::Bool()),
    [](const auto& info) {
      return std::string(DTypeName(std::get<0>(info.param))) + "_count" +
             std::to_string(std::get<1>(info.param)) +
             (std::get<2>(info.param) ? "_misaligned" : "_aligned") +
             (std::get<3>(info.param) ? "_in_place" : "");
    });

}  // namespace
}  // namespace graphserve
