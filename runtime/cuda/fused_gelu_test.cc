// The fused exact GELU against ONNX's function, y = x * 0.5 * (1 + erf(x /
// sqrt(2))), computed in float64, and against the five-node chain it replaces
// as the host executor runs it: NaN, both infinities, the largest and
// smallest floats and a sweep through the range where 1 + erf cancels.
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
#include "runtime/host/host_executor.h"
#include "runtime/ir.h"

namespace graphserve {
namespace {

// erff's 2 ulp (CUDA's documented bound), the roundings of x * 0.70710678f,
// of 1 + erf and of the products: under 3 float32 ulps of |x| in all, so 8
// leaves room. Relative to |x|, not to |GELU(x)|: for x around -4, 1 + erf
// is a difference of nearly equal numbers, and float32 cannot do better.
constexpr double kRtol = 8 * FLT_EPSILON;
// GELU is never below -0.17, so this is nobody's output: an element the
// kernel does not write keeps it and fails.
constexpr float kPoison = -1.0f;
// Elements after the output that must stay kPoison (the float4 tail).
constexpr int64_t kGuard = 4;

// ONNX's function in float64 from the float32 input, rounded once.
float OnnxGelu(float x) {
  const double v = x;
  return static_cast<float>(v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0))));
}

// The edges of Note [GELU at the edges], then the float32 extremes, then
// x = -12 .. 12 in steps of 1/64 (exact in float32): through the cancelling
// range of 1 + erf and where GELU(x) rounds to x or to -0.
std::vector<float> Inputs() {
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
  for (int i = -12 * 64; i <= 12 * 64; ++i) x.push_back(static_cast<float>(i) / 64);
  return x;
}

// Where the chain's 2x overflows and the formula's 0.5 * x does not.
bool ChainOverflows(float x) { return x > std::numeric_limits<float>::max() / 2; }

std::shared_ptr<const HostTensor> Scalar(float v) {
  auto tensor = std::make_shared<HostTensor>(DType::kFloat32, Dims{});
  tensor->data<float>()[0] = v;
  return tensor;
}

// The chain PyTorch exports for nn.GELU() (the one MatchErfGelu replaces,
// its constants bit for bit), on the host executor, one element a row.
absl::StatusOr<std::vector<float>> HostChain(const std::vector<float>& x) {
  Model model;
  model.name = "erf_gelu_chain";
  model.opset = 17;
  model.inputs.push_back({"x", DType::kFloat32, {-1, 1}});
  model.outputs.push_back({"y", DType::kFloat32, {-1, 1}});
  model.initializers["sqrt2"] = Scalar(1.4142135381698608f);
  model.initializers["one"] = Scalar(1.0f);
  model.initializers["half"] = Scalar(0.5f);
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
  std::vector<HostTensor> inputs;
  inputs.emplace_back(DType::kFloat32, Dims{static_cast<int64_t>(x.size()), 1});
  std::copy(x.begin(), x.end(), inputs[0].data<float>());
  absl::StatusOr<std::vector<HostTensor>> outputs = (*host)->Run(inputs);
  if (!outputs.ok()) return outputs.status();
  const float* y = (*outputs)[0].data<float>();
  return std::vector<float>(y, y + x.size());
}

// Host-only: the oracle the kernel is held to is what the unfused chain gives
// on the host executor, edges included, except where the chain overflows
// (Note [GELU at the edges]).
TEST(FusedGeluReferenceTest, HostChainGivesOnnxsFunctionButOverflowsPastHalfFltMax) {
  const std::vector<float> x = Inputs();
  absl::StatusOr<std::vector<float>> chain = HostChain(x);
  ASSERT_TRUE(chain.ok()) << chain.status();
  std::vector<float> want, got, scale;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ChainOverflows(x[i])) {
      EXPECT_EQ((*chain)[i], kInf) << "x = " << x[i];
      EXPECT_EQ(OnnxGelu(x[i]), x[i]);
      continue;
    }
    want.push_back(OnnxGelu(x[i]));
    got.push_back((*chain)[i]);
    scale.push_back(std::fabs(x[i]));
  }
  EXPECT_TRUE(MatchesReference(got, want, kRtol, scale));
  // The edges, spelled out (MatchesReference already demands them).
  EXPECT_TRUE(std::isnan((*chain)[0]));  // NaN
  EXPECT_EQ((*chain)[1], kInf);          // +Inf
  EXPECT_TRUE(std::isnan((*chain)[2]));  // -Inf: -Inf * 0
  EXPECT_TRUE(std::isnan(OnnxGelu(-kInf)));
}

// The launch's own checks, before any CUDA call.
TEST(FusedGeluTest, ZeroCountEnqueuesNothingAndNegativeIsRefused) {
  EXPECT_EQ(LaunchErfGelu(nullptr, nullptr, 0, nullptr), cudaSuccess);
  EXPECT_EQ(LaunchErfGelu(nullptr, nullptr, -1, nullptr), cudaErrorInvalidValue);
}

// (count, misaligned, in place). Counts: the edges alone in the float4
// path's tail (1, 3), one float4 (4), a float4 and a tail (7), and many with
// tails of 1 to 3. Misaligned: x and y one float past 16-byte alignment, the
// scalar path.
class FusedGeluKernelTest
    : public ::testing::TestWithParam<std::tuple<int64_t, bool, bool>> {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

TEST_P(FusedGeluKernelTest, MatchesOnnxsFunctionAndTheUnfusedChain) {
  const auto [count, misaligned, in_place] = GetParam();
  const std::vector<float> cases = Inputs();
  std::vector<float> x(static_cast<size_t>(count));
  for (size_t i = 0; i < x.size(); ++i) x[i] = cases[i % cases.size()];

  const int64_t offset = misaligned ? 1 : 0;
  const size_t room = static_cast<size_t>(offset + count + kGuard);
  absl::StatusOr<DeviceBuffer> x_buffer = DeviceBuffer::Allocate(room * sizeof(float));
  absl::StatusOr<DeviceBuffer> y_buffer = DeviceBuffer::Allocate(room * sizeof(float));
  ASSERT_TRUE(x_buffer.ok()) << x_buffer.status();
  ASSERT_TRUE(y_buffer.ok()) << y_buffer.status();
  float* x_device = static_cast<float*>(x_buffer->get()) + offset;
  float* y_device = in_place ? x_device : static_cast<float*>(y_buffer->get()) + offset;
  // x, then the guard, in x's buffer; the whole of y's buffer poisoned.
  std::vector<float> x_room(x);
  x_room.resize(x.size() + kGuard, kPoison);
  const absl::Status copied =
      CopyToDeviceAndWait(x_device, x_room.data(), x_room.size() * sizeof(float));
  ASSERT_TRUE(copied.ok()) << copied;
  const std::vector<float> poison(room, kPoison);
  const absl::Status poisoned =
      CopyToDeviceAndWait(y_buffer->get(), poison.data(), poison.size() * sizeof(float));
  ASSERT_TRUE(poisoned.ok()) << poisoned;

  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok()) << stream.status();
  ASSERT_EQ(LaunchErfGelu(x_device, y_device, count, stream->get()), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream->get()), cudaSuccess);
  std::vector<float> y_room(x.size() + kGuard);
  ASSERT_EQ(cudaMemcpy(y_room.data(), y_device, y_room.size() * sizeof(float),
                       cudaMemcpyDeviceToHost),
            cudaSuccess);
  const std::vector<float> y(y_room.begin(), y_room.begin() + count);
  for (int64_t g = 0; g < kGuard; ++g) {
    EXPECT_EQ(y_room[static_cast<size_t>(count + g)], kPoison) << "written past " << count;
  }

  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = OnnxGelu(x[i]);
  EXPECT_TRUE(MatchesReference(y, want, kRtol, Abs(x))) << "against ONNX's function";

  // The chain, where it does not overflow (Note [GELU at the edges]).
  absl::StatusOr<std::vector<float>> chain = HostChain(x);
  ASSERT_TRUE(chain.ok()) << chain.status();
  std::vector<float> got, chain_want, scale;
  for (size_t i = 0; i < x.size(); ++i) {
    if (ChainOverflows(x[i])) continue;
    got.push_back(y[i]);
    chain_want.push_back((*chain)[i]);
    scale.push_back(std::fabs(x[i]));
  }
  EXPECT_TRUE(MatchesReference(got, chain_want, kRtol, scale)) << "against the unfused chain";
}

INSTANTIATE_TEST_SUITE_P(
    CountsAlignmentsInPlace, FusedGeluKernelTest,
    ::testing::Combine(::testing::Values(int64_t{1}, int64_t{3}, int64_t{4}, int64_t{7},
                                         int64_t{4 * 1600 + 1}, int64_t{4 * 1600 + 2},
                                         int64_t{4 * 1600 + 3}),
                       ::testing::Bool(), ::testing::Bool()),
    [](const auto& info) {
      return "count" + std::to_string(std::get<0>(info.param)) +
             (std::get<1>(info.param) ? "_misaligned" : "_aligned") +
             (std::get<2>(info.param) ? "_in_place" : "");
    });

}  // namespace
}  // namespace graphserve
