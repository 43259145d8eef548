#include "common/number_text.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

template <typename T>
absl::StatusOr<T> Parse(absl::string_view text, DType dtype) {
  T value{};
  const absl::Status status = ParseNumberText(text, dtype, reinterpret_cast<std::byte*>(&value));
  if (!status.ok()) return status;
  return value;
}

template <typename T>
std::string Text(T value, DType dtype) {
  std::string out;
  AppendNumberText(reinterpret_cast<const std::byte*>(&value), dtype, &out);
  return out;
}

TEST(ParseNumberTextTest, ReadsDecimalIntegersWithSignAndSurroundingSpace) {
  const std::vector<std::pair<const char*, int32_t>> cases = {
      {"1", 1}, {"-2", -2}, {"+3", 3}, {" 4", 4}, {"5 ", 5}, {"\t007\n", 7}, {"-0", 0},
      {"2147483647", 2147483647}, {"-2147483648", std::numeric_limits<int32_t>::min()}};
  for (const auto& [text, want] : cases) {
    const absl::StatusOr<int32_t> got = Parse<int32_t>(text, DType::kInt32);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
  }
  EXPECT_EQ(*Parse<int64_t>("-9223372036854775808", DType::kInt64),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*Parse<int64_t>("9223372036854775807", DType::kInt64),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*Parse<uint64_t>("18446744073709551615", DType::kUInt64),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*Parse<int8_t>("-128", DType::kInt8), -128);
  EXPECT_EQ(*Parse<uint8_t>("255", DType::kUInt8), 255);
  EXPECT_EQ(*Parse<uint8_t>("-0", DType::kUInt8), 0);
}

// What onnxruntime wraps or truncates and ONNX's reference evaluator
// refuses: refused, saying why (Note [Number text]).
TEST(ParseNumberTextTest, RefusesWhatTheSpecLeavesUndefined) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"abc", "is not a decimal integer"},
      {"", "is not a decimal integer"},
      {"1.5", "is not a decimal integer"},      // onnxruntime: 1
      {"1e3", "is not a decimal integer"},      // onnxruntime: 1
      {"0x10", "is not a decimal integer"},     // onnxruntime: 0
      {"1_000", "is not a decimal integer"},    // Python's int(): 1000
      {"+-1", "is not a decimal integer"},
      {"- 1", "is not a decimal integer"},
      {"2147483648", "is outside the range of INT32 (-2147483648 to 2147483647)"},  // wraps
      {"-2147483649", "is outside the range of INT32"},
      {"99999999999999999999", "is outside the range of INT32"},
  };
  for (const auto& [text, message] : cases) {
    const absl::StatusOr<int32_t> got = Parse<int32_t>(text, DType::kInt32);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(got.status().message(), HasSubstr(message)) << text;
  }
  EXPECT_THAT(Parse<uint8_t>("256", DType::kUInt8).status().message(),
              HasSubstr("outside the range of UINT8 (0 to 255)"));
  EXPECT_THAT(Parse<uint8_t>("-1", DType::kUInt8).status().message(),
              HasSubstr("outside the range of UINT8"));
  EXPECT_THAT(Parse<int64_t>("9223372036854775808", DType::kInt64).status().message(),
              HasSubstr("outside the range of INT64"));
  EXPECT_THAT(Parse<bool>("1", DType::kBool).status().message(), HasSubstr("BOOL"));
}

TEST(ParseNumberTextTest, ReadsDecimalScientificAndTheSpecialWords) {
  const std::vector<std::pair<const char*, float>> cases = {
      {"1.5", 1.5f},   {"-2", -2.0f},  {"1e3", 1000.0f}, {"1E-2", 0.01f}, {" 2.5 ", 2.5f},
      {"+1.25", 1.25f}, {".5", 0.5f},  {"5.", 5.0f},     {"-0", -0.0f},
      {"INF", INFINITY}, {"+INF", INFINITY}, {"inf", INFINITY}, {"Infinity", INFINITY},
      {"-INF", -INFINITY}, {"-inf", -INFINITY},
      {"1e50", INFINITY},  // beyond float, within double: rounds to INF as numpy does
      {"1e-50", 0.0f},
      {"0.1", 0.1f},
  };
  for (const auto& [text, want] : cases) {
    const absl::StatusOr<float> got = Parse<float>(text, DType::kFloat32);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status();
    EXPECT_EQ(*got, want) << text;
    EXPECT_EQ(std::signbit(*got), std::signbit(want)) << text;
  }
  for (const char* nan : {"NaN", "nan", "NAN", "-NaN", "+nan"}) {
    EXPECT_TRUE(std::isnan(*Parse<float>(nan, DType::kFloat32))) << nan;
  }
  EXPECT_EQ(*Parse<double>("0.1", DType::kFloat64), 0.1);
  EXPECT_EQ(*Parse<double>("1e300", DType::kFloat64), 1e300);
  EXPECT_EQ(Parse<Half>("0.1", DType::kFloat16)->bits, Half(0.1f).bits);
  EXPECT_EQ(Parse<Half>("65520", DType::kFloat16)->bits, Half(INFINITY).bits);
  EXPECT_EQ(Parse<BFloat16>("-3.5", DType::kBFloat16)->bits, BFloat16(-3.5f).bits);
}

TEST(ParseNumberTextTest, RefusesFloatTextThatIsNotANumber) {
  for (const char* text : {"abc", "", " ", "1.5x", "0x1p3", "--1", "+-1", "1_0", "e5", "+",
                           "nanx", "in f", "1.5 2"}) {
    const absl::StatusOr<float> got = Parse<float>(text, DType::kFloat32);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_THAT(got.status().message(), HasSubstr("is not a number (FP32 elements")) << text;
  }
  // Beyond a double: onnxruntime's std::stod refuses it too.
  EXPECT_THAT(Parse<double>("1e400", DType::kFloat64).status().message(),
              HasSubstr("outside the range of a double"));
}

// The texts onnxruntime 1.31's Cast to STRING wrote for the same values on
// this machine (Note [Number text]).
TEST(AppendNumberTextTest, WritesFloatsAsOnnxruntime) {
  const std::vector<std::pair<float, const char*>> floats = {
      {0.0f, "0"},
      {-0.0f, "-0"},
      {1.0f, "1"},
      {0.1f, "0.1"},
      {1.5f, "1.5"},
      {1e10f, "1e+10"},
      {1e-10f, "1e-10"},
      {123456789.0f, "1.2345679e+08"},
      {3.4028235e38f, "3.4028235e+38"},
      {1.17549435e-38f, "1.1754944e-38"},
      {1e-45f, "1.4012985e-45"},
      {NAN, "NaN"},
      {INFINITY, "INF"},
      {-INFINITY, "-INF"},
      {100.0f, "100"},
      {1234567.0f, "1234567"},
      {12345678.0f, "12345678"},
      {0.0001f, "9.9999997e-05"},
      {2.5e-5f, "2.4999999e-05"},
      {16777216.0f, "16777216"},
  };
  for (const auto& [value, want] : floats) EXPECT_EQ(Text(value, DType::kFloat32), want);
  const std::vector<std::pair<double, const char*>> doubles = {
      {0.1, "0.1"}, {1.0, "1"}, {1e16, "1e+16"}, {1e-5, "1e-05"}, {NAN, "NaN"},
      {-INFINITY, "-INF"}, {123456.789, "123456.79"}, {1.0 / 3, "0.33333333"}};
  for (const auto& [value, want] : doubles) EXPECT_EQ(Text(value, DType::kFloat64), want);
  EXPECT_EQ(Text(Half(0.1f), DType::kFloat16), "0.099975586");
  EXPECT_EQ(Text(Half(65504.0f), DType::kFloat16), "65504");
  EXPECT_EQ(Text(Half(NAN), DType::kFloat16), "NaN");
  EXPECT_EQ(Text(BFloat16(1.0f), DType::kBFloat16), "1");
}

TEST(AppendNumberTextTest, WritesIntegersInDecimalAndBoolAsADigit) {
  EXPECT_EQ(Text(int32_t{0}, DType::kInt32), "0");
  EXPECT_EQ(Text(int32_t{-5}, DType::kInt32), "-5");
  EXPECT_EQ(Text(std::numeric_limits<int32_t>::min(), DType::kInt32), "-2147483648");
  EXPECT_EQ(Text(std::numeric_limits<int64_t>::max(), DType::kInt64), "9223372036854775807");
  EXPECT_EQ(Text(std::numeric_limits<uint64_t>::max(), DType::kUInt64), "18446744073709551615");
  EXPECT_EQ(Text(int8_t{-5}, DType::kInt8), "-5");
  EXPECT_EQ(Text(uint8_t{255}, DType::kUInt8), "255");
  EXPECT_EQ(Text(true, DType::kBool), "1");
  EXPECT_EQ(Text(false, DType::kBool), "0");
}

// Every integer type: the text of a value reads back as that value.
TEST(NumberTextTest, IntegersRoundTripAtTheirLimits) {
  for (const DType dtype : kAllDTypes) {
    if (IsFloatingDType(dtype) || dtype == DType::kBool) continue;
    VisitDType(dtype, [&](auto tag) {
      using T = typename decltype(tag)::Host;
      for (const T value : {std::numeric_limits<T>::min(), T{0}, std::numeric_limits<T>::max()}) {
        T back{};
        ASSERT_TRUE(
            ParseNumberText(Text(value, dtype), dtype, reinterpret_cast<std::byte*>(&back)).ok());
        EXPECT_EQ(back, value) << DTypeName(dtype);
      }
    });
  }
}

}  // namespace
}  // namespace graphserve
