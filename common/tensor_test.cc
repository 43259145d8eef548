#include "common/tensor.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

HostTensor Float32(std::initializer_list<float> values) {
  HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(values.size())});
  float* data = tensor.data<float>();
  for (float value : values) *data++ = value;
  return tensor;
}

TEST(TensorBytesTest, CountsBytesAndRefusesNegativeOrOverflowingDims) {
  EXPECT_EQ(TensorBytes({2, 3}, DType::kFloat16), std::optional<uint64_t>(12));
  EXPECT_EQ(TensorBytes({}, DType::kInt64), std::optional<uint64_t>(8));
  EXPECT_EQ(TensorBytes({0, int64_t{1} << 62}, DType::kFloat32), std::optional<uint64_t>(0));
  EXPECT_EQ(TensorBytes({2, -1}, DType::kFloat32), std::nullopt);
  EXPECT_EQ(TensorBytes({int64_t{1} << 40}, DType::kUInt8),
            std::optional<uint64_t>(kMaxTensorBytes));
  EXPECT_EQ(TensorBytes({int64_t{1} << 40}, DType::kFloat16), std::nullopt);
  EXPECT_EQ(TensorBytes({int64_t{1} << 32, int64_t{1} << 32}, DType::kUInt8), std::nullopt);
}

TEST(RelativeErrorTest, ZeroForEqualTensors) {
  EXPECT_EQ(RelativeError(Float32({1, -2, 3}), Float32({1, -2, 3})), 0.0);
}

TEST(RelativeErrorTest, IsTheNormOfTheDifferenceOverTheNormOfWant) {
  // want = (3, 4) has norm 5; got - want = (0, 1) has norm 1.
  EXPECT_DOUBLE_EQ(RelativeError(Float32({3, 5}), Float32({3, 4})), 0.2);
}

TEST(RelativeErrorTest, AllZeroWantIsMatchedOnlyByAllZeroGot) {
  EXPECT_EQ(RelativeError(Float32({0, 0}), Float32({0, 0})), 0.0);
  EXPECT_GT(RelativeError(Float32({0, 1e-3f}), Float32({0, 0})), 1.0);
}

TEST(RelativeErrorTest, NanFailsAToleranceCheck) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isinf(RelativeError(Float32({1, nan}), Float32({1, 2}))));
  EXPECT_TRUE(std::isinf(RelativeError(Float32({1, 2}), Float32({1, nan}))));
  EXPECT_FALSE(RelativeError(Float32({1, nan}), Float32({1, 2})) < 1e-5);
}

TEST(RelativeErrorTest, MismatchedTensorsAreInfinitelyFar) {
  EXPECT_TRUE(std::isinf(RelativeError(Float32({1, 2, 3}), Float32({1, 2}))));
  EXPECT_TRUE(std::isinf(RelativeError(HostTensor(DType::kInt64, {2}), Float32({1, 2}))));
}

}  // namespace
}  // namespace graphserve

namespace graphserve {
namespace {

TEST(RandomTensorTest, SeededAndNotConstant) {
  const HostTensor a = RandomTensor(DType::kFloat32, {4, 8}, 7);
  const HostTensor b = RandomTensor(DType::kFloat32, {4, 8}, 7);
  const HostTensor c = RandomTensor(DType::kFloat32, {4, 8}, 8);
  EXPECT_EQ(RelativeError(a, b), 0.0);
  EXPECT_GT(RelativeError(a, c), 0.1);
  const HostTensor ints = RandomTensor(DType::kInt64, {64}, 7);
  int64_t ones = 0;
  for (int64_t i = 0; i < 64; ++i) {
    ASSERT_TRUE(ints.data<int64_t>()[i] == 0 || ints.data<int64_t>()[i] == 1);
    ones += ints.data<int64_t>()[i];
  }
  EXPECT_GT(ones, 0);  // 64 fair coin flips are all zero with probability 2^-64
  EXPECT_LT(ones, 64);
}

}  // namespace
}  // namespace graphserve
