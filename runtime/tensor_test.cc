#include "runtime/tensor.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include "gtest/gtest.h"

namespace graphserve {
namespace {

HostTensor Float32(std::initializer_list<float> values) {
  HostTensor tensor(DType::kFloat32, {static_cast<int64_t>(values.size())});
  float* data = tensor.data<float>();
  for (float value : values) *data++ = value;
  return tensor;
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
