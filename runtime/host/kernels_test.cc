#include "runtime/host/kernels.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace graphserve {
namespace {

// Test tensors from explicit dims and row-major values.
HostTensor Floats(Dims dims, const std::vector<float>& values) {
  HostTensor t(DType::kFloat32, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

HostTensor Ints(Dims dims, const std::vector<int64_t>& values) {
  HostTensor t(DType::kInt64, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

HostTensor Bools(Dims dims, const std::vector<bool>& values) {
  HostTensor t(DType::kBool, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  return t;
}

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

BoundNode MakeNode(const std::string& op_type, Attributes attributes = {}) {
  BoundNode node;
  node.name = "test_" + op_type;
  node.op_type = op_type;
  node.attributes = std::move(attributes);
  return node;
}

// Runs `node` on `inputs` into one output of `dtype` and `dims`.
absl::StatusOr<HostTensor> RunOne(const BoundNode& node, const std::vector<HostTensor>& inputs,
                                  DType dtype, Dims dims) {
  std::vector<const HostTensor*> in;
  for (const HostTensor& t : inputs) in.push_back(&t);
  HostTensor out(dtype, std::move(dims));
  std::vector<HostTensor*> outs = {&out};
  absl::Status status = RunHostNode(node, in, outs);
  if (!status.ok()) return status;
  return out;
}

HostTensor RunOk(const BoundNode& node, const std::vector<HostTensor>& inputs, DType dtype,
                 Dims dims) {
  absl::StatusOr<HostTensor> out = RunOne(node, inputs, dtype, std::move(dims));
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : HostTensor();
}

void ExpectFloatsNear(const std::vector<float>& actual, const std::vector<float>& expected,
                      float tolerance = 1e-6f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "element " << i;
  }
}

TEST(ElementwiseTest, AddBroadcastsRowAgainstColumn) {
  // [2,1] + [3] -> [2,3]
  HostTensor out = RunOk(MakeNode("Add"), {Floats({2, 1}, {1, 2}), Floats({3}, {10, 20, 30})},
                         DType::kFloat32, {2, 3});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{11, 21, 31, 12, 22, 32}));
}

TEST(ElementwiseTest, Int64DivTruncatesTowardZero) {
  HostTensor out = RunOk(MakeNode("Div"), {Ints({4}, {7, -7, 7, -7}), Ints({4}, {2, 2, -2, -2})},
                         DType::kInt64, {4});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{3, -3, -3, 3}));
}

TEST(ElementwiseTest, Int64DivByZeroIsInvalid) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("Div"), {Ints({2}, {1, 2}), Ints({2}, {1, 0})}, DType::kInt64, {2});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("test_Div"), std::string::npos) << out.status();
}

TEST(MatMulTest, TwoByTwo) {
  HostTensor out = RunOk(MakeNode("MatMul"), {Floats({2, 2}, {1, 2, 3, 4}), Floats({2, 2}, {5, 6, 7, 8})},
                         DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{19, 22, 43, 50}));
}

TEST(ElementwiseTest, WhereBroadcastsConditionOverRows) {
  HostTensor out = RunOk(MakeNode("Where"),
                         {Bools({1, 2}, {true, false}), Floats({2, 2}, {1, 2, 3, 4}),
                          Floats({1}, {-1})},
                         DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, -1, 3, -1}));
}

TEST(SoftmaxTest, LargeValuesStayFinite) {
  HostTensor out = RunOk(MakeNode("Softmax", {{"outer", int64_t{1}},
                                              {"axis_size", int64_t{3}},
                                              {"inner", int64_t{1}}}),
                         {Floats({3}, {1000, 1001, 1002})}, DType::kFloat32, {3});
  const double denom = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  ExpectFloatsNear(Values<float>(out), {static_cast<float>(std::exp(-2.0) / denom),
                                        static_cast<float>(std::exp(-1.0) / denom),
                                        static_cast<float>(1.0 / denom)});
}

TEST(DispatchTest, UnknownOpIsUnimplemented) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("Conv"), {Floats({1}, {1})}, DType::kFloat32, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace graphserve
