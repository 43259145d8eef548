#include "common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include "common/half.h"

namespace graphserve {
namespace {

TEST(DTypeTest, EveryRowHasItsHostTypesSizeAndUniqueNames) {
  std::set<std::string> names, kserve;
  for (const DType dtype : kAllDTypes) {
    const size_t host_size =
        VisitDType(dtype, [](auto tag) { return sizeof(typename decltype(tag)::Host); });
    EXPECT_EQ(DTypeSize(dtype), host_size) << DTypeName(dtype);
    EXPECT_TRUE(names.insert(DTypeName(dtype)).second) << DTypeName(dtype);
    EXPECT_TRUE(kserve.insert(KServeDatatype(dtype)).second) << KServeDatatype(dtype);
  }
  EXPECT_EQ(names.size(), 13u);  // the ten types and UINT16/32/64, which KServe has
}

TEST(DTypeTest, OnnxNumbersRoundTrip) {
  for (const DType dtype : kAllDTypes) {
    absl::StatusOr<DType> back = DTypeFromOnnx(static_cast<int32_t>(dtype));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
  EXPECT_EQ(*DTypeFromOnnx(10), DType::kFloat16);
  EXPECT_EQ(*DTypeFromOnnx(16), DType::kBFloat16);
  EXPECT_EQ(*DTypeFromOnnx(6), DType::kInt32);
}

TEST(DTypeTest, UnsupportedOnnxTypeIsNamed) {
  for (const auto& [number, name] :
       {std::pair{8, "STRING"}, std::pair{14, "COMPLEX64"}, std::pair{17, "FLOAT8E4M3FN"},
        std::pair{99, "type#99"}}) {
    absl::StatusOr<DType> dtype = DTypeFromOnnx(number);
    ASSERT_FALSE(dtype.ok()) << name;
    EXPECT_EQ(dtype.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(dtype.status().message().find(name), std::string::npos) << dtype.status();
  }
}

TEST(DTypeTest, KServeNamesRoundTrip) {
  for (const DType dtype : kAllDTypes) {
    absl::StatusOr<DType> back = DTypeFromKServe(KServeDatatype(dtype));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
  EXPECT_EQ(*DTypeFromKServe("BF16"), DType::kBFloat16);
}

TEST(DTypeTest, BytesAndUnknownKServeNamesAreRefusedClearly) {
  absl::StatusOr<DType> bytes = DTypeFromKServe("BYTES");
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bytes.status().message().find("variable-length"), std::string::npos);
  for (const char* name : {"fp32", "", "FLOAT"}) {
    absl::StatusOr<DType> dtype = DTypeFromKServe(name);
    ASSERT_FALSE(dtype.ok()) << name;
    EXPECT_EQ(dtype.status().message(),
              "is not a datatype of the protocol (FP32, UINT8, INT8, UINT16, INT16, INT32, INT64, "
              "BOOL, FP16, FP64, UINT32, UINT64, BF16)");
  }
}

// Half and BFloat16 against values whose bits are known (IEEE 754 binary16;
// bfloat16 is float's top half).
TEST(HalfTest, ConvertsKnownValuesAndRoundsToNearestEven) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(-2.0f).bits, 0xc000);
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);  // the largest finite
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);  // halfway to 2^16: rounds to even, Inf
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);
  EXPECT_EQ(Half(5.9604644775390625e-8f).bits, 0x0001);  // the smallest subnormal
  EXPECT_EQ(Half(2.98023223876953125e-8f).bits, 0x0000);  // half of it: ties to even, 0
  EXPECT_EQ(Half(6.103515625e-5f).bits, 0x0400);  // the smallest normal
  EXPECT_EQ(Half(1.0f + 1.0f / 2048).bits, 0x3c00);  // halfway, even below
  EXPECT_EQ(Half(1.0f + 3.0f / 2048).bits, 0x3c02);  // halfway, even above
  EXPECT_EQ(Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
  EXPECT_EQ(static_cast<float>(Half::FromBits(0x3555)), 0.333251953125f);
  EXPECT_EQ(static_cast<float>(Half::FromBits(0x8001)), -5.9604644775390625e-8f);
  EXPECT_EQ(Half(-0.0f).bits, 0x8000);
}

TEST(HalfTest, EveryHalfSurvivesARoundTripThroughFloat) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const Half h = Half::FromBits(static_cast<uint16_t>(bits));
    const float f = static_cast<float>(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, bits) << std::hex << bits;
  }
}

TEST(BFloat16Test, ConvertsKnownValuesAndRoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(BFloat16(1.0f + 1.0f / 256).bits, 0x3f80);  // halfway, even below
  EXPECT_EQ(BFloat16(1.0f + 3.0f / 256).bits, 0x3f82);  // halfway, even above
  EXPECT_EQ(static_cast<float>(BFloat16::FromBits(0x4049)), 3.140625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  EXPECT_EQ(BFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = static_cast<float>(BFloat16::FromBits(static_cast<uint16_t>(bits)));
    if (std::isnan(f)) continue;
    EXPECT_EQ(BFloat16(f).bits, bits) << std::hex << bits;
  }
}

}  // namespace
}  // namespace graphserve
