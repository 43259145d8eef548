#include "proto/config_dtype.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

TEST(ConfigDTypeTest, EveryTableRowRoundTripsThroughItsConfigName) {
  for (const DType dtype : kAllDTypes) {
    const inference::DataType config = ConfigDataType(dtype);
    ASSERT_NE(config, inference::TYPE_INVALID) << DTypeName(dtype);
    // config.pbtxt spells the type as the enum does: TYPE_ + the KServe name.
    EXPECT_EQ(inference::DataType_Name(config), std::string("TYPE_") + KServeDatatype(dtype));
    absl::StatusOr<DType> back = DTypeFromConfig(config);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
  }
}

TEST(ConfigDTypeTest, StringAndUnknownNumbersAreRefusedByName) {
  absl::StatusOr<DType> string_type = DTypeFromConfig(inference::TYPE_STRING);
  ASSERT_FALSE(string_type.ok());
  EXPECT_NE(string_type.status().message().find("TYPE_STRING"), std::string::npos);
  absl::StatusOr<DType> unknown = DTypeFromConfig(static_cast<inference::DataType>(99));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("#99"), std::string::npos);
}

}  // namespace
}  // namespace graphserve
