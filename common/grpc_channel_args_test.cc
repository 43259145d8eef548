#include "common/grpc_channel_args.h"

#include <map>
#include <string>
#include <variant>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// The arguments as ForEachGrpcChannelArg hands them out, ints and texts apart.
struct Collected {
  std::map<std::string, int> ints;
  std::map<std::string, std::string> texts;
};

Collected Collect(const std::vector<GrpcChannelArg>& args) {
  Collected collected;
  ForEachGrpcChannelArg(args, [&](const std::string& name, const auto& value) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, int>) {
      collected.ints[name] = value;
    } else {
      collected.texts[name] = value;
    }
  });
  return collected;
}

TEST(GrpcChannelArgsTest, EmptyTextIsNoArguments) {
  absl::StatusOr<std::vector<GrpcChannelArg>> args = ParseGrpcChannelArgs("");
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_TRUE(args->empty());
}

TEST(GrpcChannelArgsTest, DigitsAreIntsAndAnythingElseIsText) {
  absl::StatusOr<std::vector<GrpcChannelArg>> args =
      ParseGrpcChannelArgs("grpc.http2.lookahead_bytes=1048576, grpc.x = -2,grpc.target=lat=ency,"
                           "grpc.empty=,grpc.sign=-");
  ASSERT_TRUE(args.ok()) << args.status();
  const Collected collected = Collect(*args);
  EXPECT_THAT(collected.ints,
              ElementsAre(Pair("grpc.http2.lookahead_bytes", 1048576), Pair("grpc.x", -2)));
  // Spaces around names and values go; only the first '=' splits; an empty
  // value and a lone sign are text.
  EXPECT_THAT(collected.texts, ElementsAre(Pair("grpc.empty", ""), Pair("grpc.sign", "-"),
                                           Pair("grpc.target", "lat=ency")));
}

TEST(GrpcChannelArgsTest, RefusesEntriesThatAreNotNameEqualsValue) {
  for (const char* text : {"grpc.x", "=5", " =5", "grpc.x=1,,grpc.y=2", "grpc.x=1,"}) {
    absl::StatusOr<std::vector<GrpcChannelArg>> args = ParseGrpcChannelArgs(text);
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(args.status().message(), HasSubstr("is not NAME=VALUE")) << text;
  }
}

TEST(GrpcChannelArgsTest, RefusesIntegersPastInt) {
  absl::StatusOr<std::vector<GrpcChannelArg>> args = ParseGrpcChannelArgs("grpc.x=4294967296");
  EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(args.status().message(), HasSubstr("'grpc.x=4294967296'"));
}

}  // namespace
}  // namespace graphserve
