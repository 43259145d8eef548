#include "runtime/host/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// A tensor of any dtype from values each element type holds (rounded to
// nearest even for the 16-bit floats).
template <typename T>
HostTensor Typed(DType dtype, Dims dims, const std::vector<double>& values) {
  HostTensor t(dtype, std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.num_elements()), values.size());
  for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = Narrow<T>(values[i]);
  return t;
}

// Elements as double (the 16-bit floats exactly, through float).
template <typename T>
std::vector<double> Widened(const HostTensor& t) {
  std::vector<double> values;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    values.push_back(static_cast<double>(Widen(t.data<T>()[i])));
  }
  return values;
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

// ---------------------------------------------------------------------------
// Binary elementwise ops and broadcasting
// ---------------------------------------------------------------------------

TEST(ElementwiseTest, AddBroadcastsRowAgainstColumn) {
  // [2,1] + [3] -> [2,3]
  HostTensor out = RunOk(MakeNode("Add"), {Floats({2, 1}, {1, 2}), Floats({3}, {10, 20, 30})},
                         DType::kFloat32, {2, 3});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{11, 21, 31, 12, 22, 32}));
}

TEST(ElementwiseTest, SubBroadcastsMiddleDim) {
  // [2,1,2] - [3,1] -> [2,3,2]: out[i][j][k] = a[i][0][k] - b[j][0]
  HostTensor out =
      RunOk(MakeNode("Sub"), {Floats({2, 1, 2}, {1, 2, 3, 4}), Floats({3, 1}, {1, 10, 100})},
            DType::kFloat32, {2, 3, 2});
  EXPECT_EQ(Values<float>(out),
            (std::vector<float>{0, 1, -9, -8, -99, -98, 2, 3, -7, -6, -97, -96}));
}

TEST(ElementwiseTest, MulWithScalar) {
  HostTensor out = RunOk(MakeNode("Mul"), {Floats({}, {-2}), Floats({2, 2}, {1, 2.5f, -3, 0})},
                         DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{-2, -5, 6, -0.0f}));
}

TEST(ElementwiseTest, FloatDivAndPow) {
  HostTensor div = RunOk(MakeNode("Div"), {Floats({3}, {1, -3, 5}), Floats({3}, {4, 2, -0.5f})},
                         DType::kFloat32, {3});
  EXPECT_EQ(Values<float>(div), (std::vector<float>{0.25f, -1.5f, -10}));
  HostTensor pow =
      RunOk(MakeNode("Pow"), {Floats({3}, {2, 4, -3}), Floats({1}, {0.5f})}, DType::kFloat32, {3});
  const std::vector<float> actual = Values<float>(pow);
  EXPECT_FLOAT_EQ(actual[0], static_cast<float>(std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(actual[1], 2.0f);
  EXPECT_TRUE(std::isnan(actual[2]));  // negative base, fractional exponent
}

TEST(ElementwiseTest, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a = Floats({3}, {1, 5, nan});
  HostTensor b = Floats({3}, {2, -5, 0});
  std::vector<float> max = Values<float>(RunOk(MakeNode("Max"), {a, b}, DType::kFloat32, {3}));
  std::vector<float> min = Values<float>(RunOk(MakeNode("Min"), {a, b}, DType::kFloat32, {3}));
  EXPECT_EQ(max[0], 2);
  EXPECT_EQ(max[1], 5);
  EXPECT_TRUE(std::isnan(max[2]));
  EXPECT_EQ(min[0], 1);
  EXPECT_EQ(min[1], -5);
  EXPECT_TRUE(std::isnan(min[2]));
}

TEST(ElementwiseTest, Int64ArithmeticBroadcasts) {
  HostTensor a = Ints({2, 2}, {1, -2, 3, -4});
  HostTensor b = Ints({2}, {10, 3});
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Add"), {a, b}, DType::kInt64, {2, 2})),
            (std::vector<int64_t>{11, 1, 13, -1}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Sub"), {a, b}, DType::kInt64, {2, 2})),
            (std::vector<int64_t>{-9, -5, -7, -7}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Mul"), {a, b}, DType::kInt64, {2, 2})),
            (std::vector<int64_t>{10, -6, 30, -12}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Max"), {a, b}, DType::kInt64, {2, 2})),
            (std::vector<int64_t>{10, 3, 10, 3}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Min"), {a, b}, DType::kInt64, {2, 2})),
            (std::vector<int64_t>{1, -2, 3, -4}));
}

TEST(ElementwiseTest, Int64PowIsExact) {
  HostTensor out =
      RunOk(MakeNode("Pow"), {Ints({5}, {3, -2, 7, 2, 5}), Ints({5}, {4, 3, 0, 40, -1})},
            DType::kInt64, {5});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{81, -8, 1, int64_t{1} << 40, 0}));
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
  EXPECT_NE(out.status().message().find("(Div)"), std::string::npos) << out.status();
}

// Every sign combination of dividend and divisor, for Mod's two conventions.
TEST(ElementwiseTest, Int64ModFollowsDividendOrDivisorSign) {
  const HostTensor a = Ints({6}, {7, -7, 7, -7, 6, -6});
  const HostTensor b = Ints({6}, {3, 3, -3, -3, -3, 3});
  // fmod=1: C's %, the sign of the dividend.
  EXPECT_EQ(Values<int64_t>(
                RunOk(MakeNode("Mod", {{"fmod", int64_t{1}}}), {a, b}, DType::kInt64, {6})),
            (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  // fmod=0: Python's %, the sign of the divisor.
  EXPECT_EQ(Values<int64_t>(
                RunOk(MakeNode("Mod", {{"fmod", int64_t{0}}}), {a, b}, DType::kInt64, {6})),
            (std::vector<int64_t>{1, 2, -2, -1, 0, 0}));
}

TEST(ElementwiseTest, Int64ModOfMostNegativeByMinusOneIsZero) {
  const int64_t lowest = std::numeric_limits<int64_t>::min();  // lowest % -1 overflows in C++
  for (int64_t fmod : {0, 1}) {
    HostTensor out = RunOk(MakeNode("Mod", {{"fmod", fmod}}),
                           {Ints({2}, {lowest, lowest}), Ints({2}, {-1, 2})}, DType::kInt64, {2});
    EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{0, 0})) << "fmod=" << fmod;
  }
}

TEST(ElementwiseTest, ModBroadcastsDivisorRow) {
  // [2,3] % [3] -> [2,3], Python's %.
  HostTensor out = RunOk(MakeNode("Mod", {{"fmod", int64_t{0}}}),
                         {Ints({2, 3}, {5, -5, 9, 10, -1, -9}), Ints({3}, {4, 4, -4})},
                         DType::kInt64, {2, 3});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{1, 3, -3, 2, 3, -1}));
}

TEST(ElementwiseTest, FloatModIsCFmod) {
  // [4] fmod [] (a scalar divisor broadcast), then mixed signs elementwise.
  HostTensor scalar = RunOk(MakeNode("Mod", {{"fmod", int64_t{1}}}),
                            {Floats({4}, {5.5f, -5.5f, 0.75f, -0.0f}), Floats({}, {2})},
                            DType::kFloat32, {4});
  EXPECT_EQ(Values<float>(scalar), (std::vector<float>{1.5f, -1.5f, 0.75f, -0.0f}));
  HostTensor mixed = RunOk(MakeNode("Mod", {{"fmod", int64_t{1}}}),
                           {Floats({3}, {-4.25f, 4.25f, 3}), Floats({3}, {-2, -2, 0})},
                           DType::kFloat32, {3});
  const std::vector<float> actual = Values<float>(mixed);
  EXPECT_EQ(actual[0], -0.25f);
  EXPECT_EQ(actual[1], 0.25f);
  EXPECT_TRUE(std::isnan(actual[2]));  // fmod(x, 0)
}

// fmod=0 on floats as opset 28 defines it: Python's %, with its special
// cases (a zero of the divisor's sign, an infinite divisor, NaN).
TEST(ElementwiseTest, FloatModWithoutFmodFloorsAsOpset28) {
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor out = RunOk(MakeNode("Mod", {{"fmod", int64_t{0}}}),
                         {Floats({8}, {5.5f, -5.5f, 4, 0, 3, -3, inf, 1}),
                          Floats({8}, {-2, 2, -2, -1, inf, inf, 2, 0})},
                         DType::kFloat32, {8});
  const std::vector<float> v = Values<float>(out);
  EXPECT_EQ(v[0], -0.5f);
  EXPECT_EQ(v[1], 0.5f);
  EXPECT_EQ(v[2], 0.0f);
  EXPECT_TRUE(std::signbit(v[2])) << "a zero result takes the divisor's sign";
  EXPECT_TRUE(std::signbit(v[3]));
  EXPECT_EQ(v[4], 3.0f);  // finite x, same sign as an infinite y: x
  EXPECT_EQ(v[5], inf);   // opposite signs: y
  EXPECT_TRUE(std::isnan(v[6]));  // infinite x
  EXPECT_TRUE(std::isnan(v[7]));  // zero y
}

TEST(ElementwiseTest, Int64ModByZeroIsInvalid) {
  for (int64_t fmod : {0, 1}) {
    absl::StatusOr<HostTensor> out = RunOne(MakeNode("Mod", {{"fmod", fmod}}),
                                            {Ints({2}, {1, 2}), Ints({2}, {1, 0})},
                                            DType::kInt64, {2});
    ASSERT_FALSE(out.ok()) << "fmod=" << fmod;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("(Mod)"), std::string::npos) << out.status();
    EXPECT_NE(out.status().message().find("modulo by zero"), std::string::npos) << out.status();
  }
}

TEST(ElementwiseTest, IncompatibleBroadcastIsInvalid) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("Add"), {Floats({3}, {1, 2, 3}), Floats({2}, {1, 2})}, DType::kFloat32, {3});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("test_Add"), std::string::npos) << out.status();
}

TEST(ElementwiseTest, EqualComparesEveryType) {
  HostTensor floats = RunOk(MakeNode("Equal"), {Floats({2, 2}, {1, 2, 3, 4}), Floats({2}, {1, 4})},
                            DType::kBool, {2, 2});
  EXPECT_EQ(Values<bool>(floats), (std::vector<bool>{true, false, false, true}));
  HostTensor ints =
      RunOk(MakeNode("Equal"), {Ints({3}, {-1, 0, 7}), Ints({}, {7})}, DType::kBool, {3});
  EXPECT_EQ(Values<bool>(ints), (std::vector<bool>{false, false, true}));
  HostTensor bools = RunOk(MakeNode("Equal"), {Bools({2}, {true, false}), Bools({2}, {true, true})},
                           DType::kBool, {2});
  EXPECT_EQ(Values<bool>(bools), (std::vector<bool>{true, false}));
}

TEST(ElementwiseTest, WhereBroadcastsConditionOverRows) {
  HostTensor out =
      RunOk(MakeNode("Where"),
            {Bools({1, 2}, {true, false}), Floats({2, 2}, {1, 2, 3, 4}), Floats({1}, {-1})},
            DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, -1, 3, -1}));
}

TEST(ElementwiseTest, WhereOnInt64BroadcastsAllThree) {
  // cond [2,1], x [3], y [2,3]
  HostTensor out = RunOk(
      MakeNode("Where"),
      {Bools({2, 1}, {false, true}), Ints({3}, {7, 8, 9}), Ints({2, 3}, {-1, -2, -3, -4, -5, -6})},
      DType::kInt64, {2, 3});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{-1, -2, -3, 7, 8, 9}));
}

// ---------------------------------------------------------------------------
// Unary elementwise ops and Cast
// ---------------------------------------------------------------------------

TEST(UnaryTest, TranscendentalsMatchDoubleMath) {
  const std::vector<float> x = {0.25f, 1.5f, 3.0f, 7.75f};
  struct Case {
    const char* op;
    double (*reference)(double);
  };
  const Case cases[] = {
      {"Sqrt", [](double v) { return std::sqrt(v); }},
      {"Exp", [](double v) { return std::exp(v); }},
      {"Log", [](double v) { return std::log(v); }},
      {"Tanh", [](double v) { return std::tanh(v); }},
      {"Erf", [](double v) { return std::erf(v); }},
      {"Sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
  };
  for (const Case& c : cases) {
    // Negated inputs too, for the ops defined there.
    std::vector<float> inputs = x;
    if (std::string(c.op) != "Sqrt" && std::string(c.op) != "Log") {
      for (float v : x) inputs.push_back(-v);
    }
    const Dims dims = {static_cast<int64_t>(inputs.size())};
    HostTensor out = RunOk(MakeNode(c.op), {Floats(dims, inputs)}, DType::kFloat32, dims);
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(out.data<float>()[i], static_cast<float>(c.reference(inputs[i])))
          << c.op << "(" << inputs[i] << ")";
    }
  }
}

TEST(UnaryTest, SigmoidSaturatesWithoutNaN) {
  HostTensor out = RunOk(MakeNode("Sigmoid"), {Floats({2}, {-1000, 1000})}, DType::kFloat32, {2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{0, 1}));
}

TEST(UnaryTest, ReluAbsNegOnFloatAndInt64) {
  HostTensor f = Floats({4}, {-2.5f, 0, 1, 3.5f});
  HostTensor i = Ints({4}, {-7, 0, 2, -1});
  EXPECT_EQ(Values<float>(RunOk(MakeNode("Relu"), {f}, DType::kFloat32, {4})),
            (std::vector<float>{0, 0, 1, 3.5f}));
  EXPECT_EQ(Values<float>(RunOk(MakeNode("Abs"), {f}, DType::kFloat32, {4})),
            (std::vector<float>{2.5f, 0, 1, 3.5f}));
  EXPECT_EQ(Values<float>(RunOk(MakeNode("Neg"), {f}, DType::kFloat32, {4})),
            (std::vector<float>{2.5f, -0.0f, -1, -3.5f}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Relu"), {i}, DType::kInt64, {4})),
            (std::vector<int64_t>{0, 0, 2, 0}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Abs"), {i}, DType::kInt64, {4})),
            (std::vector<int64_t>{7, 0, 2, 1}));
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Neg"), {i}, DType::kInt64, {4})),
            (std::vector<int64_t>{7, 0, -2, 1}));
}

TEST(UnaryTest, ReluPassesNaN) {
  HostTensor out = RunOk(MakeNode("Relu"), {Floats({1}, {std::nanf("")})}, DType::kFloat32, {1});
  EXPECT_TRUE(std::isnan(out.data<float>()[0]));
}

TEST(UnaryTest, LeakyReluScalesNegatives) {
  HostTensor out = RunOk(MakeNode("LeakyRelu", {{"alpha", 0.1f}}), {Floats({3}, {-2, 0, 3})},
                         DType::kFloat32, {3});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{0.1f * -2, 0, 3}));
}

TEST(UnaryTest, FloatOpsRejectInt64) {
  absl::StatusOr<HostTensor> out = RunOne(MakeNode("Exp"), {Ints({1}, {1})}, DType::kInt64, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs a one-input float32 op over `x`.
std::vector<float> MapFloats(const BoundNode& node, const std::vector<float>& x) {
  const Dims dims = {static_cast<int64_t>(x.size())};
  return Values<float>(RunOk(node, {Floats(dims, x)}, DType::kFloat32, dims));
}

// Expects `got` to be `want`, NaN where `want` is NaN (EXPECT_EQ's NaN never
// equals itself).
void ExpectSameValues(const std::vector<float>& got, const std::vector<float>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i << " is " << got[i];
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " element " << i;
    }
  }
}

TEST(UnaryTest, FloorCeilRoundHalvesToEven) {
  const std::vector<float> x = {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, -1.2f, 1.7f, kNaN, -kInf};
  ExpectSameValues(MapFloats(MakeNode("Round"), x),
                   {-2, -2, -0.0f, 0, 2, 2, -1, 2, kNaN, -kInf}, "Round");
  ExpectSameValues(MapFloats(MakeNode("Floor"), x),
                   {-3, -2, -1, 0, 1, 2, -2, 1, kNaN, -kInf}, "Floor");
  ExpectSameValues(MapFloats(MakeNode("Ceil"), x),
                   {-2, -1, -0.0f, 1, 2, 3, -1, 2, kNaN, -kInf}, "Ceil");
}

TEST(UnaryTest, SignOnFloatsAndIntegers) {
  const std::vector<float> signs = MapFloats(MakeNode("Sign"), {-3.5f, -0.0f, 0, 2, kInf, kNaN});
  ExpectSameValues(signs, {-1, 0, 0, 1, 1, kNaN}, "Sign");
  EXPECT_FALSE(std::signbit(signs[1])) << "Sign(-0) is +0, as numpy's";
  EXPECT_EQ(Values<int64_t>(RunOk(MakeNode("Sign"), {Ints({3}, {-9, 0, 4})}, DType::kInt64, {3})),
            (std::vector<int64_t>{-1, 0, 1}));
  HostTensor int32 = RunOk(MakeNode("Sign"), {Typed<int32_t>(DType::kInt32, {2}, {-2, 7})},
                           DType::kInt32, {2});
  EXPECT_EQ(Values<int32_t>(int32), (std::vector<int32_t>{-1, 1}));
}

TEST(UnaryTest, ActivationsMatchOnnxFormulas) {
  const std::vector<float> x = {-3.0f, -0.5f, 0.0f, 0.75f, 2.0f};
  struct Case {
    const char* op;
    Attributes attributes;
    double (*reference)(double);
  };
  const Case cases[] = {
      {"Sin", {}, [](double v) { return std::sin(v); }},
      {"Cos", {}, [](double v) { return std::cos(v); }},
      {"Softplus", {}, [](double v) { return std::log(std::exp(v) + 1); }},
      {"Softsign", {}, [](double v) { return v / (1 + std::fabs(v)); }},
      {"Mish", {}, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }},
      // ONNX's defaults when the attributes are absent.
      {"Elu", {}, [](double v) { return v < 0 ? std::exp(v) - 1 : v; }},
      {"Elu", {{"alpha", 0.5f}}, [](double v) { return v < 0 ? 0.5 * (std::exp(v) - 1) : v; }},
      {"Selu", {},
       [](double v) {
         const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
         return v > 0 ? gamma * v : gamma * (alpha * std::exp(v) - alpha);
       }},
      {"Selu", {{"alpha", 2.0f}, {"gamma", 3.0f}},
       [](double v) { return v > 0 ? 3 * v : 3 * (2 * std::exp(v) - 2); }},
      {"Celu", {{"alpha", 2.0f}},
       [](double v) { return std::max(0.0, v) + std::min(0.0, 2 * (std::exp(v / 2) - 1)); }},
      {"ThresholdedRelu", {}, [](double v) { return v > 1 ? v : 0; }},
      {"ThresholdedRelu", {{"alpha", 0.5f}}, [](double v) { return v > 0.5 ? v : 0; }},
  };
  for (const Case& c : cases) {
    const std::vector<float> got = MapFloats(MakeNode(c.op, c.attributes), x);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(got[i], c.reference(x[i]), 1e-6) << c.op << "(" << x[i] << ")";
    }
  }
}

TEST(UnaryTest, ActivationsAtTheInfinities) {
  // Softplus stays finite where e^x overflows; Softsign and Mish compute
  // their formulas, NaN at the infinities where they divide Inf by Inf or
  // multiply -Inf by 0 (as ONNX's reference, ONNX Runtime and PyTorch).
  ExpectSameValues(MapFloats(MakeNode("Softplus"), {100, -100, kInf, -kInf, kNaN}),
                   {100, static_cast<float>(std::exp(-100.0)), kInf, 0, kNaN}, "Softplus");
  ExpectSameValues(MapFloats(MakeNode("Softsign"), {kInf, -kInf, 1e30f}), {kNaN, kNaN, 1},
                   "Softsign");
  ExpectSameValues(MapFloats(MakeNode("Mish"), {kInf, -kInf, 100}), {kInf, kNaN, 100}, "Mish");
  ExpectSameValues(MapFloats(MakeNode("Elu"), {-kInf, kInf, kNaN}), {-1, kInf, kNaN}, "Elu");
  ExpectSameValues(MapFloats(MakeNode("ThresholdedRelu"), {kNaN, kInf}), {0, kInf},
                   "ThresholdedRelu");
  ExpectSameValues(MapFloats(MakeNode("Sin"), {kInf}), {kNaN}, "Sin");
}

TEST(UnaryTest, FloatMathOnEveryFloatType) {
  // Round's halves and Softplus through float16, bfloat16 and float64: the
  // same values, rounded to each type.
  const std::vector<double> x = {0.5, 1.5, 2.5, -0.5, -3.0};
  auto check = [&](auto tag, DType dtype) {
    using T = decltype(tag);
    HostTensor round = RunOk(MakeNode("Round"), {Typed<T>(dtype, {5}, x)}, dtype, {5});
    EXPECT_EQ(Widened<T>(round), (std::vector<double>{0, 2, 2, -0.0, -3})) << DTypeName(dtype);
    HostTensor softplus = RunOk(MakeNode("Softplus"), {Typed<T>(dtype, {5}, x)}, dtype, {5});
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = std::log1p(std::exp(x[i]));
      EXPECT_EQ(Widened<T>(softplus)[i], static_cast<double>(Widen(Narrow<T>(want))))
          << DTypeName(dtype) << " Softplus(" << x[i] << ")";
    }
  };
  check(Half{}, DType::kFloat16);
  check(BFloat16{}, DType::kBFloat16);
  check(double{}, DType::kFloat64);
}

TEST(UnaryTest, PReluBroadcastsTheSlopeOverChannels) {
  // X [2, 3, 2], slope [3, 1]: one slope per channel.
  HostTensor out = RunOk(MakeNode("PRelu"),
                         {Floats({2, 3, 2}, {-1, 2, -3, 4, -5, 6, 1, -2, 3, -4, kNaN, -0.5f}),
                          Floats({3, 1}, {0.5f, 0.25f, -2})},
                         DType::kFloat32, {2, 3, 2});
  ExpectSameValues(Values<float>(out), {-0.5f, 2, -0.75f, 4, 10, 6, 1, -1, 3, -1, kNaN, 1},
                   "PRelu");
  HostTensor ints = RunOk(MakeNode("PRelu"), {Ints({3}, {-4, 0, 5}), Ints({}, {3})},
                          DType::kInt64, {3});
  EXPECT_EQ(Values<int64_t>(ints), (std::vector<int64_t>{-12, 0, 5}));
  HostTensor halves = RunOk(MakeNode("PRelu"),
                            {Typed<Half>(DType::kFloat16, {2}, {-3, 3}),
                             Typed<Half>(DType::kFloat16, {1}, {0.5})},
                            DType::kFloat16, {2});
  EXPECT_EQ(Widened<Half>(halves), (std::vector<double>{-1.5, 3}));
}

TEST(UnaryTest, PReluRefusesASlopeWiderThanX) {
  absl::StatusOr<HostTensor> out = RunOne(MakeNode("PRelu"), {Floats({2}, {1, 2}),
                                                              Floats({2, 2}, {1, 2, 3, 4})},
                                          DType::kFloat32, {2});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

TEST(CastTest, FloatToInt64TruncatesTowardZero) {
  HostTensor out = RunOk(MakeNode("Cast", {{"to", int64_t{7}}}),
                         {Floats({4}, {2.7f, -2.7f, 0.5f, -0.5f})}, DType::kInt64, {4});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{2, -2, 0, 0}));
}

TEST(CastTest, ToBoolIsNonZero) {
  HostTensor from_float = RunOk(MakeNode("Cast", {{"to", int64_t{9}}}),
                                {Floats({3}, {0, -0.25f, 3})}, DType::kBool, {3});
  EXPECT_EQ(Values<bool>(from_float), (std::vector<bool>{false, true, true}));
  HostTensor from_int =
      RunOk(MakeNode("Cast", {{"to", int64_t{9}}}), {Ints({3}, {0, -1, 5})}, DType::kBool, {3});
  EXPECT_EQ(Values<bool>(from_int), (std::vector<bool>{false, true, true}));
}

TEST(CastTest, FromBoolAndInt64) {
  HostTensor bool_to_int = RunOk(MakeNode("Cast", {{"to", int64_t{7}}}),
                                 {Bools({2}, {true, false})}, DType::kInt64, {2});
  EXPECT_EQ(Values<int64_t>(bool_to_int), (std::vector<int64_t>{1, 0}));
  HostTensor int_to_float = RunOk(MakeNode("Cast", {{"to", int64_t{1}}}),
                                  {Ints({2}, {-3, 1 << 20})}, DType::kFloat32, {2});
  EXPECT_EQ(Values<float>(int_to_float), (std::vector<float>{-3, 1 << 20}));
}

// ---------------------------------------------------------------------------
// MatMul and Gemm, against a naive triple loop written from the definition
// ---------------------------------------------------------------------------

// Deterministic, non-trivial test data: small integers and halves, so float
// products and sums are exact and the comparison can be exact.
std::vector<float> Ramp(int64_t count, float scale, float offset) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) {
    values[i] = static_cast<float>((i * 7) % 11) * scale + offset;
  }
  return values;
}

TEST(MatMulTest, TwoByTwo) {
  HostTensor out =
      RunOk(MakeNode("MatMul"), {Floats({2, 2}, {1, 2, 3, 4}), Floats({2, 2}, {5, 6, 7, 8})},
            DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{19, 22, 43, 50}));
}

TEST(MatMulTest, BatchDimsBroadcast) {
  // A [2,1,2,3] x B [3,3,4] -> [2,3,2,4]; A's batch (2,1) against B's (3).
  const std::vector<float> a = Ramp(2 * 1 * 2 * 3, 0.5f, -1);
  const std::vector<float> b = Ramp(3 * 3 * 4, 1, -4);
  HostTensor out = RunOk(MakeNode("MatMul"), {Floats({2, 1, 2, 3}, a), Floats({3, 3, 4}, b)},
                         DType::kFloat32, {2, 3, 2, 4});
  std::vector<float> expected;
  for (int p = 0; p < 2; ++p) {
    for (int q = 0; q < 3; ++q) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 4; ++j) {
          double sum = 0;
          for (int k = 0; k < 3; ++k) sum += a[(p * 2 + i) * 3 + k] * b[(q * 3 + k) * 4 + j];
          expected.push_back(static_cast<float>(sum));
        }
      }
    }
  }
  EXPECT_EQ(Values<float>(out), expected);
}

TEST(MatMulTest, OneDimensionalOperands) {
  HostTensor matrix = Floats({3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor vector = Floats({3}, {1, -1, 2});
  // [3] x [3,2] -> [2]: the row vector times the matrix.
  EXPECT_EQ(Values<float>(RunOk(MakeNode("MatMul"), {vector, matrix}, DType::kFloat32, {2})),
            (std::vector<float>{1 - 3 + 10, 2 - 4 + 12}));
  // [2,3] x [3] -> [2]: the matrix times the column vector.
  HostTensor wide = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Values<float>(RunOk(MakeNode("MatMul"), {wide, vector}, DType::kFloat32, {2})),
            (std::vector<float>{1 - 2 + 6, 4 - 5 + 12}));
  // [3] x [3] -> []: the dot product.
  EXPECT_EQ(Values<float>(RunOk(MakeNode("MatMul"), {vector, vector}, DType::kFloat32, {})),
            (std::vector<float>{6}));
  // [3] x [2,3,2] -> [2,2]: the vector against each batch matrix.
  HostTensor batch = Floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 0, 1, 1, 0, 2, 2});
  EXPECT_EQ(Values<float>(RunOk(MakeNode("MatMul"), {vector, batch}, DType::kFloat32, {2, 2})),
            (std::vector<float>{8, 10, 3, 5}));
}

TEST(MatMulTest, AccumulatesInDouble) {
  // 1e8 + 1 - 1e8 in float would give 0; in double the 1 survives.
  HostTensor out =
      RunOk(MakeNode("MatMul"), {Floats({1, 3}, {1, 1, 1}), Floats({3, 1}, {1e8f, 1, -1e8f})},
            DType::kFloat32, {1, 1});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1}));
}

TEST(MatMulTest, InnerDimMismatchIsInvalid) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("MatMul"), {Floats({2, 3}, Ramp(6, 1, 0)), Floats({2, 2}, Ramp(4, 1, 0))},
             DType::kFloat32, {2, 2});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("test_MatMul"), std::string::npos) << out.status();
}

// Gemm from the definition: alpha * op(A) op(B) + beta * C[broadcast].
std::vector<float> ReferenceGemm(const std::vector<float>& a, const std::vector<float>& b,
                                 const std::vector<float>& c, const Dims& c_dims, bool trans_a,
                                 bool trans_b, float alpha, float beta, int m, int k, int n) {
  std::vector<float> y;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const float a_ip = trans_a ? a[p * m + i] : a[i * k + p];
        const float b_pj = trans_b ? b[j * k + p] : b[p * n + j];
        sum += static_cast<double>(a_ip) * b_pj;
      }
      // C is [N], [1,N], [M,1], [M,N] or a scalar.
      int64_t c_rows = c_dims.size() == 2 ? c_dims[0] : 1;
      int64_t c_cols = c_dims.empty() ? 1 : c_dims.back();
      const float c_ij = c[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
      y.push_back(static_cast<float>(alpha * sum + static_cast<double>(beta) * c_ij));
    }
  }
  return y;
}

TEST(GemmTest, TransposesScalesAndBroadcastsC) {
  constexpr int kM = 3, kK = 4, kN = 2;
  struct Case {
    bool trans_a;
    bool trans_b;
    Dims c_dims;
  };
  const Case cases[] = {
      {false, false, {kN}},  {true, false, {kM, 1}}, {false, true, {kM, kN}},
      {true, true, {1, kN}}, {false, false, {}},
  };
  for (const Case& c : cases) {
    const std::vector<float> a = Ramp(kM * kK, 0.5f, -1);
    const std::vector<float> b = Ramp(kK * kN, 1, -3);
    const std::vector<float> bias = Ramp(NumElements(c.c_dims), 2, 1);
    const Dims a_dims = c.trans_a ? Dims{kK, kM} : Dims{kM, kK};
    const Dims b_dims = c.trans_b ? Dims{kN, kK} : Dims{kK, kN};
    BoundNode node = MakeNode("Gemm", {{"transA", int64_t{c.trans_a}},
                                       {"transB", int64_t{c.trans_b}},
                                       {"alpha", 0.5f},
                                       {"beta", -2.0f}});
    HostTensor out = RunOk(node, {Floats(a_dims, a), Floats(b_dims, b), Floats(c.c_dims, bias)},
                           DType::kFloat32, {kM, kN});
    EXPECT_EQ(Values<float>(out),
              ReferenceGemm(a, b, bias, c.c_dims, c.trans_a, c.trans_b, 0.5f, -2.0f, kM, kK, kN))
        << "transA=" << c.trans_a << " transB=" << c.trans_b << " C=" << DimsToString(c.c_dims);
  }
}

TEST(GemmTest, AbsentScalarAttributesTakeOnnxDefaults) {
  // transA = transB = 0, alpha = beta = 1.
  HostTensor out = RunOk(MakeNode("Gemm"),
                         {Floats({1, 2}, {1, 2}), Floats({2, 2}, {3, 4, 5, 6}), Floats({1}, {-1})},
                         DType::kFloat32, {1, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{12, 15}));
}

TEST(GemmTest, WithoutC) {
  BoundNode node = MakeNode(
      "Gemm", {{"transA", int64_t{0}}, {"transB", int64_t{0}}, {"alpha", 2.0f}, {"beta", 1.0f}});
  HostTensor out =
      RunOk(node, {Floats({1, 2}, {1, 2}), Floats({2, 2}, {3, 4, 5, 6})}, DType::kFloat32, {1, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{26, 32}));
}

// ---------------------------------------------------------------------------
// Softmax, LogSoftmax, Hardmax, LayerNormalization, GroupNormalization,
// ReduceMean
// ---------------------------------------------------------------------------

TEST(SoftmaxTest, LargeValuesStayFinite) {
  HostTensor out =
      RunOk(MakeNode("Softmax",
                     {{"outer", int64_t{1}}, {"axis_size", int64_t{3}}, {"inner", int64_t{1}}}),
            {Floats({3}, {1000, 1001, 1002})}, DType::kFloat32, {3});
  const double denom = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  ExpectFloatsNear(Values<float>(out),
                   {static_cast<float>(std::exp(-2.0) / denom),
                    static_cast<float>(std::exp(-1.0) / denom), static_cast<float>(1.0 / denom)});
}

TEST(SoftmaxTest, RunsOverTheMiddleAxis) {
  // [2,3,2] with the softmax over dim 1: outer 2, axis_size 3, inner 2.
  const std::vector<float> x = {1, -1, 2, 0, 3, 4, 0.5f, 2, -2, 1, 0, 3};
  HostTensor out =
      RunOk(MakeNode("Softmax",
                     {{"outer", int64_t{2}}, {"axis_size", int64_t{3}}, {"inner", int64_t{2}}}),
            {Floats({2, 3, 2}, x)}, DType::kFloat32, {2, 3, 2});
  std::vector<float> expected(12);
  for (int o = 0; o < 2; ++o) {
    for (int in = 0; in < 2; ++in) {
      double sum = 0;
      for (int a = 0; a < 3; ++a) sum += std::exp(x[o * 6 + a * 2 + in]);
      for (int a = 0; a < 3; ++a) {
        expected[o * 6 + a * 2 + in] = static_cast<float>(std::exp(x[o * 6 + a * 2 + in]) / sum);
      }
    }
  }
  ExpectFloatsNear(Values<float>(out), expected);
}

TEST(LogSoftmaxTest, LargeValuesStayFiniteOverTheMiddleAxis) {
  // [2,3,2] over dim 1, values far beyond exp()'s float range: x - max -
  // log(sum(exp(x - max))) in double.
  std::vector<float> x = {1, -1, 2, 0, 3, 4, 0.5f, 2, -2, 1, 0, 3};
  for (float& v : x) v += 1000.0f;
  HostTensor out =
      RunOk(MakeNode("LogSoftmax",
                     {{"outer", int64_t{2}}, {"axis_size", int64_t{3}}, {"inner", int64_t{2}}}),
            {Floats({2, 3, 2}, x)}, DType::kFloat32, {2, 3, 2});
  std::vector<float> expected(12);
  for (int o = 0; o < 2; ++o) {
    for (int in = 0; in < 2; ++in) {
      double sum = 0;
      for (int a = 0; a < 3; ++a) sum += std::exp(x[o * 6 + a * 2 + in] - 1000.0);
      for (int a = 0; a < 3; ++a) {
        expected[o * 6 + a * 2 + in] =
            static_cast<float>(x[o * 6 + a * 2 + in] - 1000.0 - std::log(sum));
      }
    }
  }
  ExpectFloatsNear(Values<float>(out), expected);
}

TEST(LogSoftmaxTest, NanAndInfinityFollowOnnxReference) {
  // ONNX's reference: t = x - max(x); t - log(sum(exp(t))). A NaN or a +Inf
  // (Inf - Inf) makes the row NaN; -Inf beside finite values stays -Inf; an
  // all -Inf row is NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor out =
      RunOk(MakeNode("LogSoftmax",
                     {{"outer", int64_t{4}}, {"axis_size", int64_t{2}}, {"inner", int64_t{1}}}),
            {Floats({4, 2}, {0, -inf, 1, nan, inf, 0, -inf, -inf})}, DType::kFloat32, {4, 2});
  const std::vector<float> y = Values<float>(out);
  EXPECT_FLOAT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], -inf);
  for (int i = 2; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i])) << "element " << i << ": " << y[i];
}

TEST(HardmaxTest, FirstMaximumOrNanOfEachLineOverTheMiddleAxis) {
  // [2,3,2] over dim 1; lines (o, in) hold {x[o][0][in], x[o][1][in], x[o][2][in]}.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x = {
      1, 5, 3, 5, 3, 2,          // o 0: line 0 {1, 3, 3} ties: first; line 1 {5, 5, 2}: first
      -1, nan, -2, 9, nan, 9};   // o 1: line 0 {-1, -2, NaN}: the NaN; line 1 {NaN, 9, 9}
  const std::vector<double> expected = {0, 1, 1, 0, 0, 0,  //
                                        0, 1, 0, 0, 1, 0};
  const auto check = [&](auto tag, DType dtype) {
    using T = decltype(tag);
    HostTensor out =
        RunOk(MakeNode("Hardmax",
                       {{"outer", int64_t{2}}, {"axis_size", int64_t{3}}, {"inner", int64_t{2}}}),
              {Typed<T>(dtype, {2, 3, 2}, x)}, dtype, {2, 3, 2});
    EXPECT_EQ(Widened<T>(out), expected) << DTypeName(dtype);
  };
  check(float{}, DType::kFloat32);
  check(double{}, DType::kFloat64);
  check(Half{}, DType::kFloat16);
  check(BFloat16{}, DType::kBFloat16);
}

// Note [Group normalization]: y for X [2, 4, 3] in 2 groups (rows of 2
// channels x 3), scale and B indexed by `affine_index(channel)`.
template <typename AffineIndex>
std::vector<float> GroupNormReference(const std::vector<float>& x,
                                      const std::vector<float>& scale,
                                      const std::vector<float>& bias, double epsilon,
                                      AffineIndex affine_index) {
  constexpr int kRows = 4, kRowSize = 6, kSpatial = 3, kChannelsPerGroup = 2, kGroups = 2;
  std::vector<float> y(x.size());
  for (int r = 0; r < kRows; ++r) {
    double mu = 0;
    for (int i = 0; i < kRowSize; ++i) mu += x[r * kRowSize + i];
    mu /= kRowSize;
    double var = 0;
    for (int i = 0; i < kRowSize; ++i) {
      var += (x[r * kRowSize + i] - mu) * (x[r * kRowSize + i] - mu);
    }
    var /= kRowSize;
    for (int i = 0; i < kRowSize; ++i) {
      const int k = affine_index((r % kGroups) * kChannelsPerGroup + i / kSpatial);
      y[r * kRowSize + i] = static_cast<float>(
          scale[k] * (x[r * kRowSize + i] - mu) / std::sqrt(var + epsilon) + bias[k]);
    }
  }
  return y;
}

Attributes GroupNormAttributes(int64_t groups, int64_t per_group) {
  return {{"batch", int64_t{2}},    {"channels", int64_t{4}},
          {"groups", groups},       {"spatial", int64_t{3}},
          {"epsilon", 1e-2f},       {"affine_per_group", per_group}};
}

const std::vector<float> kGroupNormX = {1,  2,    3, 6,  -1, 0.5f, 4, -2, 0,  7,    1, 1,
                                        -3, 2.5f, 8, 0,  1,  1,    2, 5,  -1, 0.25f, 3, 9};

TEST(GroupNormalizationTest, PerChannelAffine) {
  const std::vector<float> scale = {1, 0.5f, -1, 2};
  const std::vector<float> bias = {0, 1, -1, 0.25f};
  HostTensor out = RunOk(MakeNode("GroupNormalization", GroupNormAttributes(2, 0)),
                         {Floats({2, 4, 3}, kGroupNormX), Floats({4}, scale), Floats({4}, bias)},
                         DType::kFloat32, {2, 4, 3});
  ExpectFloatsNear(Values<float>(out),
                   GroupNormReference(kGroupNormX, scale, bias, 1e-2, [](int c) { return c; }),
                   1e-5f);
}

TEST(GroupNormalizationTest, PerGroupAffineOfOpset18) {
  const std::vector<float> scale = {2, -0.5f};
  const std::vector<float> bias = {1, 3};
  HostTensor out = RunOk(MakeNode("GroupNormalization", GroupNormAttributes(2, 1)),
                         {Floats({2, 4, 3}, kGroupNormX), Floats({2}, scale), Floats({2}, bias)},
                         DType::kFloat32, {2, 4, 3});
  ExpectFloatsNear(Values<float>(out),
                   GroupNormReference(kGroupNormX, scale, bias, 1e-2, [](int c) { return c / 2; }),
                   1e-5f);
}

TEST(GroupNormalizationTest, InstanceNormIsAGroupPerChannelAndNanStaysInItsRow) {
  // InstanceNormalization binds to the same form with groups = channels.
  std::vector<float> x = kGroupNormX;
  x[4] = std::numeric_limits<float>::quiet_NaN();  // row (n 0, c 1)
  HostTensor out = RunOk(MakeNode("InstanceNormalization", GroupNormAttributes(4, 0)),
                         {Floats({2, 4, 3}, x), Floats({4}, {1, 2, 3, 4}),
                          Floats({4}, {0, 0, 0, 0})},
                         DType::kFloat32, {2, 4, 3});
  const std::vector<float> y = Values<float>(out);
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(std::isnan(y[i]), i >= 3 && i < 6) << "element " << i;
  }
  // Row (n 0, c 0) = {1, 2, 3}: mean 2, variance 2/3, scale 1.
  const double inv_std = 1.0 / std::sqrt(2.0 / 3.0 + 1e-2);
  EXPECT_NEAR(y[0], -inv_std, 1e-5);
  EXPECT_NEAR(y[1], 0.0, 1e-6);
  EXPECT_NEAR(y[2], inv_std, 1e-5);
}

TEST(LayerNormalizationTest, MatchesTheFormulaWithStatistics) {
  constexpr int kOuter = 2, kInner = 4;
  constexpr float kEpsilon = 1e-5f;
  const std::vector<float> x = {1, 2, 3, 6, -1, 0.5f, 4, -2};
  const std::vector<float> scale = {1, 0.5f, -1, 2};
  const std::vector<float> bias = {0, 1, -1, 0.25f};
  BoundNode node =
      MakeNode("LayerNormalization",
               {{"outer", int64_t{kOuter}}, {"inner", int64_t{kInner}}, {"epsilon", kEpsilon}});
  HostTensor x_tensor = Floats({kOuter, kInner}, x);
  HostTensor scale_tensor = Floats({kInner}, scale);
  HostTensor bias_tensor = Floats({kInner}, bias);
  HostTensor y(DType::kFloat32, {kOuter, kInner});
  HostTensor mean(DType::kFloat32, {kOuter, 1});
  HostTensor inv_std(DType::kFloat32, {kOuter, 1});
  std::vector<const HostTensor*> inputs = {&x_tensor, &scale_tensor, &bias_tensor};
  std::vector<HostTensor*> outputs = {&y, &mean, &inv_std};
  ASSERT_TRUE(RunHostNode(node, inputs, outputs).ok());

  for (int r = 0; r < kOuter; ++r) {
    double mu = 0;
    for (int i = 0; i < kInner; ++i) mu += x[r * kInner + i];
    mu /= kInner;
    double var = 0;
    for (int i = 0; i < kInner; ++i) var += (x[r * kInner + i] - mu) * (x[r * kInner + i] - mu);
    var /= kInner;
    const double sigma = std::sqrt(var + kEpsilon);
    EXPECT_NEAR(mean.data<float>()[r], mu, 1e-6);
    EXPECT_NEAR(inv_std.data<float>()[r], 1.0 / sigma, 1e-6);
    for (int i = 0; i < kInner; ++i) {
      const double expected = (x[r * kInner + i] - mu) / sigma * scale[i] + bias[i];
      EXPECT_NEAR(y.data<float>()[r * kInner + i], expected, 1e-5) << r << "," << i;
    }
  }
}

TEST(LayerNormalizationTest, UnreadMeanSlotMayBeNull) {
  BoundNode node = MakeNode("LayerNormalization",
                            {{"outer", int64_t{1}}, {"inner", int64_t{2}}, {"epsilon", 0.0f}});
  HostTensor x = Floats({1, 2}, {1, 5});  // mean 3, std 2
  HostTensor scale = Floats({2}, {1, 1});
  HostTensor y(DType::kFloat32, {1, 2});
  HostTensor inv_std(DType::kFloat32, {1, 1});
  std::vector<const HostTensor*> inputs = {&x, &scale};
  std::vector<HostTensor*> outputs = {&y, nullptr, &inv_std};
  absl::Status status = RunHostNode(node, inputs, outputs);
  ASSERT_TRUE(status.ok()) << status;
  ExpectFloatsNear(Values<float>(y), {-1, 1});
  ExpectFloatsNear(Values<float>(inv_std), {0.5f});
}

TEST(LayerNormalizationTest, WithoutBiasOrStatistics) {
  BoundNode node = MakeNode("LayerNormalization",
                            {{"outer", int64_t{1}}, {"inner", int64_t{2}}, {"epsilon", 0.0f}});
  // Row [1, 3]: mean 2, std 1 -> [-1, 1], times scale [2, 3].
  HostTensor out = RunOk(node, {Floats({2}, {1, 3}), Floats({2}, {2, 3})}, DType::kFloat32, {2});
  ExpectFloatsNear(Values<float>(out), {-2, 3});
}

// Note [RMS normalization]: y = x / sqrt(mean(x^2) + epsilon) * scale.
TEST(RMSNormalizationTest, MatchesTheFormula) {
  constexpr int kOuter = 2, kInner = 3;
  constexpr float kEpsilon = 0.1f;
  const std::vector<float> x = {1, -2, 2, 0.5f, 3, -4};
  const std::vector<float> scale = {1, 0.5f, -2};
  BoundNode node =
      MakeNode("RMSNormalization",
               {{"outer", int64_t{kOuter}}, {"inner", int64_t{kInner}}, {"epsilon", kEpsilon}});
  HostTensor out = RunOk(node, {Floats({kOuter, kInner}, x), Floats({kInner}, scale)},
                         DType::kFloat32, {kOuter, kInner});
  // Row 0: mean square (1 + 4 + 4) / 3 = 3; row 1: (0.25 + 9 + 16) / 3.
  const double rms[] = {std::sqrt(3.0 + kEpsilon), std::sqrt(25.25 / 3 + kEpsilon)};
  for (int r = 0; r < kOuter; ++r) {
    for (int i = 0; i < kInner; ++i) {
      EXPECT_NEAR(out.data<float>()[r * kInner + i], x[r * kInner + i] / rms[r] * scale[i], 1e-6)
          << r << "," << i;
    }
  }
}

// As ONNX's reference: a NaN spoils its row; an infinity is inf / inf = NaN
// and leaves the rest of its row 0; other rows keep their values.
TEST(RMSNormalizationTest, SpecialValuesStayInTheirRow) {
  BoundNode node = MakeNode("RMSNormalization",
                            {{"outer", int64_t{3}}, {"inner", int64_t{2}}, {"epsilon", 0.0f}});
  HostTensor out = RunOk(node, {Floats({3, 2}, {kNaN, 1, kInf, 2, 3, 4}), Floats({2}, {1, 1})},
                         DType::kFloat32, {3, 2});
  const std::vector<float> y = Values<float>(out);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_TRUE(std::isnan(y[2]));
  EXPECT_EQ(y[3], 0.0f);
  // Row [3, 4]: root mean square sqrt(12.5).
  EXPECT_NEAR(y[4], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(y[5], 4 / std::sqrt(12.5), 1e-6);
}

// Note [Rotary embedding]: one head of 6, rotary_dim 4 (pairs (0, 2) and
// (1, 3), or (0, 1) and (2, 3) interleaved), the last 2 copied; position id
// -1 reads the caches' last row.
TEST(RotaryEmbeddingTest, RotatesPairsByThePositionsAngles) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const float c0 = 0.5f, s0 = 0.25f, c1 = -1, s1 = 2;  // row 1 of the caches
  HostTensor cos_cache = Floats({2, 2}, {9, 9, c0, c1});
  HostTensor sin_cache = Floats({2, 2}, {9, 9, s0, s1});
  for (const int64_t interleaved : {0, 1}) {
    BoundNode node = MakeNode("RotaryEmbedding", {{"batch", int64_t{1}},
                                                  {"seq", int64_t{1}},
                                                  {"heads", int64_t{1}},
                                                  {"head_size", int64_t{6}},
                                                  {"rotary_dim", int64_t{4}},
                                                  {"interleaved", interleaved},
                                                  {"heads_outer", int64_t{1}}});
    HostTensor out =
        RunOk(node, {Floats({1, 1, 1, 6}, x), cos_cache, sin_cache, Ints({1, 1}, {-1})},
              DType::kFloat32, {1, 1, 1, 6});
    // Pairs (x1, x2) -> (c x1 - s x2, s x1 + c x2).
    const std::vector<float> expected =
        interleaved == 0
            ? std::vector<float>{c0 * 1 - s0 * 3, c1 * 2 - s1 * 4, s0 * 1 + c0 * 3,
                                 s1 * 2 + c1 * 4, 5, 6}
            : std::vector<float>{c0 * 1 - s0 * 2, s0 * 1 + c0 * 2, c1 * 3 - s1 * 4,
                                 s1 * 3 + c1 * 4, 5, 6};
    ExpectFloatsNear(Values<float>(out), expected);
  }
}

// Heads inner ([batch, seq, heads, head]) and caches per token: token (0, 1)
// rotates both its heads by its own row.
TEST(RotaryEmbeddingTest, PerTokenCachesWithHeadsInner) {
  BoundNode node = MakeNode("RotaryEmbedding", {{"batch", int64_t{1}},
                                                {"seq", int64_t{2}},
                                                {"heads", int64_t{2}},
                                                {"head_size", int64_t{2}},
                                                {"rotary_dim", int64_t{2}},
                                                {"interleaved", int64_t{0}},
                                                {"heads_outer", int64_t{0}}});
  HostTensor out = RunOk(node,
                         {Floats({1, 2, 4}, {1, 0, 0, 1, 1, 0, 0, 1}), Floats({1, 2, 1}, {1, 0}),
                          Floats({1, 2, 1}, {0, 1})},
                         DType::kFloat32, {1, 2, 4});
  // Token 0: identity; token 1: a quarter turn, (x1, x2) -> (-x2, x1).
  ExpectFloatsNear(Values<float>(out), {1, 0, 0, 1, 0, 1, -1, 0});
}

TEST(RotaryEmbeddingTest, PositionOutsideTheCachesIsRefused) {
  BoundNode node = MakeNode("RotaryEmbedding", {{"batch", int64_t{1}},
                                                {"seq", int64_t{1}},
                                                {"heads", int64_t{1}},
                                                {"head_size", int64_t{2}},
                                                {"rotary_dim", int64_t{2}},
                                                {"interleaved", int64_t{0}},
                                                {"heads_outer", int64_t{1}}});
  absl::StatusOr<HostTensor> out =
      RunOne(node, {Floats({1, 1, 1, 2}, {1, 2}), Floats({2, 1}, {1, 1}), Floats({2, 1}, {0, 0}),
                    Ints({1, 1}, {2})},
             DType::kFloat32, {1, 1, 1, 2});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(out.status().message()).find("position id 2"), std::string::npos)
      << out.status();
}

TEST(ReduceMeanTest, MiddleAxisDropped) {
  // [2,3,2] averaged over dim 1.
  HostTensor out =
      RunOk(MakeNode("ReduceMean", {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}}),
            {Floats({2, 3, 2}, {1, 2, 3, 4, 5, 9, -1, 0, -2, 0, -3, 3})}, DType::kFloat32, {2, 2});
  ExpectFloatsNear(Values<float>(out), {3, 5, -2, 1});
}

TEST(ReduceMeanTest, OuterAxesKept) {
  // [2,3,2] averaged over dims 0 and 2, kept as 1: [1,3,1].
  HostTensor out = RunOk(
      MakeNode("ReduceMean", {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{1}}}),
      {Floats({2, 3, 2}, {1, 2, 3, 4, 5, 9, -1, 0, -2, 0, -3, 3})}, DType::kFloat32, {1, 3, 1});
  ExpectFloatsNear(Values<float>(out), {0.5f, 1.25f, 3.5f});
}

BoundNode ReduceNode(const std::string& op, std::vector<int64_t> axes, int64_t keepdims = 1) {
  return MakeNode(op, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}

TEST(ReduceTest, EveryReductionOverTheMiddleAxis) {
  // [2, 3, 1] over dim 1: rows {1, -2, 4} and {0.5, 3, -1}.
  const HostTensor x = Floats({2, 3, 1}, {1, -2, 4, 0.5f, 3, -1});
  const struct {
    const char* op;
    std::vector<double> want;
  } cases[] = {
      {"ReduceSum", {3, 2.5}},
      {"ReduceMean", {1, 2.5 / 3}},
      {"ReduceProd", {-8, -1.5}},
      {"ReduceMax", {4, 3}},
      {"ReduceMin", {-2, -1}},
      {"ReduceL1", {7, 4.5}},
      {"ReduceL2", {std::sqrt(21.0), std::sqrt(10.25)}},
      {"ReduceSumSquare", {21, 10.25}},
      {"ReduceLogSum", {std::log(3.0), std::log(2.5)}},
      {"ReduceLogSumExp",
       {std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(4.0)),
        std::log(std::exp(0.5) + std::exp(3.0) + std::exp(-1.0))}},
  };
  for (const auto& c : cases) {
    HostTensor out = RunOk(ReduceNode(c.op, {1}), {x}, DType::kFloat32, {2, 1, 1});
    for (size_t i = 0; i < c.want.size(); ++i) {
      EXPECT_NEAR(out.data<float>()[i], c.want[i], 1e-6) << c.op << " output " << i;
    }
  }
}

TEST(ReduceTest, NaNPropagatesAndInfinitiesHold) {
  const HostTensor x = Floats({3, 2}, {kNaN, 1, -kInf, 2, kInf, 3});
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSumExp"}) {
    HostTensor out = RunOk(ReduceNode(op, {1}, 0), {x}, DType::kFloat32, {3});
    EXPECT_TRUE(std::isnan(out.data<float>()[0])) << op << " of a row with NaN";
  }
  auto reduce = [&](const char* op) {
    return Values<float>(RunOk(ReduceNode(op, {1}, 0), {x}, DType::kFloat32, {3}));
  };
  EXPECT_EQ(reduce("ReduceMax")[1], 2);
  EXPECT_EQ(reduce("ReduceMin")[1], -kInf);
  EXPECT_EQ(reduce("ReduceMax")[2], kInf);
  EXPECT_EQ(reduce("ReduceLogSumExp")[1], 2) << "e^-Inf adds nothing";
  EXPECT_EQ(reduce("ReduceLogSumExp")[2], kInf);
}

TEST(ReduceTest, LogSumExpDoesNotOverflowAndAllMinusInfIsMinusInf) {
  HostTensor out = RunOk(ReduceNode("ReduceLogSumExp", {1}, 0),
                         {Floats({2, 2}, {1000, 1000, -kInf, -kInf})}, DType::kFloat32, {2});
  EXPECT_FLOAT_EQ(out.data<float>()[0], static_cast<float>(1000 + std::log(2.0)));
  EXPECT_EQ(out.data<float>()[1], -kInf);
}

TEST(ReduceTest, EmptyReductionsGiveTheirIdentities) {
  // [2, 0] over dim 1: two outputs, each reducing no element.
  const HostTensor x = Floats({2, 0}, {});
  const struct {
    const char* op;
    float want;
  } cases[] = {
      {"ReduceSum", 0},        {"ReduceProd", 1},        {"ReduceMax", -kInf},
      {"ReduceMin", kInf},     {"ReduceL1", 0},          {"ReduceL2", 0},
      {"ReduceSumSquare", 0},  {"ReduceLogSum", -kInf},  {"ReduceLogSumExp", -kInf},
      {"ReduceMean", kNaN},
  };
  for (const auto& c : cases) {
    ExpectSameValues(Values<float>(RunOk(ReduceNode(c.op, {1}), {x}, DType::kFloat32, {2, 1})),
                     {c.want, c.want}, c.op);
  }
  HostTensor ints = RunOk(ReduceNode("ReduceMax", {1}), {Ints({2, 0}, {})}, DType::kInt64, {2, 1});
  EXPECT_EQ(Values<int64_t>(ints), (std::vector<int64_t>(2, std::numeric_limits<int64_t>::min())));
}

TEST(ReduceTest, NoAxesAppliesTheReductionToEachElement) {
  // noop_with_empty_axes binds to axes [] for the reductions that change a
  // lone element.
  const HostTensor x = Floats({3}, {-2, 0.5f, 3});
  ExpectSameValues(Values<float>(RunOk(ReduceNode("ReduceL1", {}), {x}, DType::kFloat32, {3})),
                   {2, 0.5f, 3}, "ReduceL1");
  ExpectSameValues(
      Values<float>(RunOk(ReduceNode("ReduceSumSquare", {}), {x}, DType::kFloat32, {3})),
      {4, 0.25f, 9}, "ReduceSumSquare");
}

TEST(ReduceTest, IntegersWrapAndCompareInTheirType) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  HostTensor sum = RunOk(ReduceNode("ReduceSum", {0}), {Ints({2}, {kMax, 2})}, DType::kInt64, {1});
  EXPECT_EQ(Values<int64_t>(sum), (std::vector<int64_t>{std::numeric_limits<int64_t>::min() + 1}));
  HostTensor prod = RunOk(ReduceNode("ReduceProd", {1}, 0),
                          {Typed<int32_t>(DType::kInt32, {2, 3}, {2, -3, 4, 65536, 65536, 1})},
                          DType::kInt32, {2});
  EXPECT_EQ(Values<int32_t>(prod), (std::vector<int32_t>{-24, 0}));  // 2^32 wraps to 0
  HostTensor max = RunOk(ReduceNode("ReduceMax", {0}, 0),
                         {Typed<int32_t>(DType::kInt32, {3, 2}, {-5, 7, 9, -1, 2, 3})},
                         DType::kInt32, {2});
  EXPECT_EQ(Values<int32_t>(max), (std::vector<int32_t>{9, 7}));
}

TEST(ReduceTest, FloatTypesAccumulateInDouble) {
  // Adding in float32, 2^24 + 1 rounds back to 2^24 (twice); in float64
  // the sum is 2^24 + 2, which float32 holds.
  HostTensor out = RunOk(ReduceNode("ReduceSum", {0}, 0), {Floats({3}, {16777216, 1, 1})},
                         DType::kFloat32, {});
  EXPECT_EQ(out.data<float>()[0], 16777218.0f);
  HostTensor half = RunOk(ReduceNode("ReduceMean", {0}, 0),
                          {Typed<Half>(DType::kFloat16, {4}, {1, 2, 3, 4})}, DType::kFloat16, {});
  EXPECT_EQ(Widened<Half>(half), (std::vector<double>{2.5}));
}

BoundNode ArgNode(const std::string& op, int64_t axis, int64_t last) {
  return MakeNode(op, {{"axis", axis}, {"keepdims", int64_t{1}}, {"select_last_index", last}});
}

TEST(ArgReduceTest, TiesGoFirstOrLastAsSelectLastIndexSays) {
  const HostTensor x = Floats({2, 4}, {3, 7, 7, 1, 2, 2, 2, 2});
  EXPECT_EQ(Values<int64_t>(RunOk(ArgNode("ArgMax", 1, 0), {x}, DType::kInt64, {2, 1})),
            (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Values<int64_t>(RunOk(ArgNode("ArgMax", 1, 1), {x}, DType::kInt64, {2, 1})),
            (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<int64_t>(RunOk(ArgNode("ArgMin", 1, 0), {x}, DType::kInt64, {2, 1})),
            (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(Values<int64_t>(RunOk(ArgNode("ArgMin", 0, 1), {x}, DType::kInt64, {1, 4})),
            (std::vector<int64_t>{1, 1, 1, 0}));
}

TEST(ArgReduceTest, TheFirstNaNWinsAsInNumpy) {
  // numpy's argmax and argmin return the first NaN; with select_last_index
  // ONNX's reference flips the axis, so the last NaN.
  const HostTensor x = Floats({5}, {1, kNaN, 9, kNaN, -9});
  for (const char* op : {"ArgMax", "ArgMin"}) {
    EXPECT_EQ(Values<int64_t>(RunOk(ArgNode(op, 0, 0), {x}, DType::kInt64, {1})),
              (std::vector<int64_t>{1}))
        << op;
    EXPECT_EQ(Values<int64_t>(RunOk(ArgNode(op, 0, 1), {x}, DType::kInt64, {1})),
              (std::vector<int64_t>{3}))
        << op;
  }
}

TEST(ArgReduceTest, MiddleAxisOfIntegersAndHalves) {
  // [2, 3, 2] over dim 1.
  const std::vector<double> values = {1, 6, 5, 2, 3, 4, -1, -6, -5, -2, -3, -4};
  HostTensor ints = RunOk(ArgNode("ArgMax", 1, 0),
                          {Typed<int32_t>(DType::kInt32, {2, 3, 2}, values)}, DType::kInt64,
                          {2, 1, 2});
  EXPECT_EQ(Values<int64_t>(ints), (std::vector<int64_t>{1, 0, 0, 1}));
  HostTensor halves = RunOk(ArgNode("ArgMin", 1, 0),
                            {Typed<Half>(DType::kFloat16, {2, 3, 2}, values)}, DType::kInt64,
                            {2, 1, 2});
  EXPECT_EQ(Values<int64_t>(halves), (std::vector<int64_t>{0, 1, 1, 0}));
}

// ---------------------------------------------------------------------------
// Data movement
// ---------------------------------------------------------------------------

TEST(ConcatTest, Axis1MixesBlocks) {
  HostTensor out = RunOk(MakeNode("Concat", {{"axis", int64_t{1}}}),
                         {Ints({2, 1}, {1, 2}), Ints({2, 2}, {3, 4, 5, 6}), Ints({2, 0}, {})},
                         DType::kInt64, {2, 3});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{1, 3, 4, 2, 5, 6}));
}

TEST(ConcatTest, Axis0AndSingleInput) {
  HostTensor out =
      RunOk(MakeNode("Concat", {{"axis", int64_t{0}}}),
            {Floats({1, 2}, {1, 2}), Floats({2, 2}, {3, 4, 5, 6})}, DType::kFloat32, {3, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  HostTensor single = RunOk(MakeNode("Concat", {{"axis", int64_t{0}}}), {Bools({2}, {true, false})},
                            DType::kBool, {2});
  EXPECT_EQ(Values<bool>(single), (std::vector<bool>{true, false}));
}

TEST(ReinterpretTest, ReshapeFamilyCopiesBytes) {
  for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    HostTensor out = RunOk(MakeNode(op), {Ints({2, 3}, {1, 2, 3, 4, 5, 6})}, DType::kInt64, {3, 2});
    EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{1, 2, 3, 4, 5, 6})) << op;
    EXPECT_EQ(out.dims(), (Dims{3, 2})) << op;
  }
}

TEST(TransposeTest, PermutesThreeDims) {
  // in [2,3,4], perm {2,0,1}: out[i][j][k] = in[j][k][i], out dims [4,2,3].
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>(i);
  HostTensor out = RunOk(MakeNode("Transpose", {{"perm", std::vector<int64_t>{2, 0, 1}}}),
                         {Floats({2, 3, 4}, x)}, DType::kFloat32, {4, 2, 3});
  std::vector<float> expected;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 3; ++k) expected.push_back(x[j * 12 + k * 4 + i]);
    }
  }
  EXPECT_EQ(Values<float>(out), expected);
}

TEST(SliceTest, NegativeStepsWalkBackwards) {
  // in [3,4] = 0..11. Dim 0 from 2 step -1 (3 rows: 2,1,0); dim 1 from 3 step
  // -2 (2 cols: 3,1).
  std::vector<int64_t> x(12);
  for (int i = 0; i < 12; ++i) x[i] = i;
  HostTensor out = RunOk(MakeNode("Slice", {{"starts", std::vector<int64_t>{2, 3}},
                                            {"steps", std::vector<int64_t>{-1, -2}}}),
                         {Ints({3, 4}, x)}, DType::kInt64, {3, 2});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{11, 9, 7, 5, 3, 1}));
}

TEST(SliceTest, PositiveStepsAndFullDims) {
  // in [2,5]: keep both rows, columns 1 and 3.
  HostTensor out = RunOk(MakeNode("Slice", {{"starts", std::vector<int64_t>{0, 1}},
                                            {"steps", std::vector<int64_t>{1, 2}}}),
                         {Floats({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})}, DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{1, 3, 6, 8}));
}

TEST(SliceTest, OutOfRangeReadIsInvalid) {
  absl::StatusOr<HostTensor> out = RunOne(
      MakeNode("Slice", {{"starts", std::vector<int64_t>{1}}, {"steps", std::vector<int64_t>{2}}}),
      {Floats({4}, {0, 1, 2, 3})}, DType::kFloat32, {3});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("test_Slice"), std::string::npos) << out.status();
}

TEST(ExpandTest, BroadcastsToOutputDims) {
  HostTensor out = RunOk(MakeNode("Expand"), {Ints({2, 1}, {4, -5})}, DType::kInt64, {3, 2, 2});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{4, 4, -5, -5, 4, 4, -5, -5, 4, 4, -5, -5}));
}

TEST(GatherTest, NegativeIndicesOnAxis0) {
  HostTensor out =
      RunOk(MakeNode("Gather", {{"axis", int64_t{0}}}),
            {Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Ints({2}, {-1, 0})}, DType::kFloat32, {2, 2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{5, 6, 1, 2}));
}

TEST(GatherTest, TwoDimensionalIndicesOnAxis1) {
  // data [2,3], indices [2,2] -> out [2,2,2]: out[i][j][k] = data[i][idx[j][k]].
  HostTensor out = RunOk(MakeNode("Gather", {{"axis", int64_t{1}}}),
                         {Ints({2, 3}, {10, 11, 12, 20, 21, 22}), Ints({2, 2}, {2, -3, 1, 1})},
                         DType::kInt64, {2, 2, 2});
  EXPECT_EQ(Values<int64_t>(out), (std::vector<int64_t>{12, 10, 11, 11, 22, 20, 21, 21}));
}

TEST(GatherTest, ScalarIndexDropsTheAxis) {
  HostTensor out =
      RunOk(MakeNode("Gather", {{"axis", int64_t{0}}}),
            {Floats({3, 2}, {1, 2, 3, 4, 5, 6}), Ints({}, {-2})}, DType::kFloat32, {2});
  EXPECT_EQ(Values<float>(out), (std::vector<float>{3, 4}));
}

TEST(GatherTest, OutOfRangeIndexIsInvalid) {
  for (int64_t index : {3, -4}) {
    absl::StatusOr<HostTensor> out =
        RunOne(MakeNode("Gather", {{"axis", int64_t{0}}}),
               {Floats({3}, {1, 2, 3}), Ints({1}, {index})}, DType::kFloat32, {1});
    ASSERT_FALSE(out.ok()) << index;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find("test_Gather"), std::string::npos) << out.status();
    EXPECT_NE(out.status().message().find(std::to_string(index)), std::string::npos)
        << out.status();
  }
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------

TEST(DispatchTest, UnknownOpIsUnimplemented) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("LpPool"), {Floats({1}, {1})}, DType::kFloat32, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("test_LpPool"), std::string::npos) << out.status();
}

TEST(DispatchTest, WrongInputCountIsInvalid) {
  absl::StatusOr<HostTensor> out =
      RunOne(MakeNode("Add"), {Floats({1}, {1})}, DType::kFloat32, {1});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphserve
