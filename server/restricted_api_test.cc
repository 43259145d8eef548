#include "server/restricted_api.h"

#include <map>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphserve {
namespace {

using ::testing::HasSubstr;

// The headers a client sent, as the endpoints hand them to Check.
auto Sent(std::map<std::string, std::string> headers) {
  return [headers = std::move(headers)](absl::string_view key) -> std::optional<std::string> {
    const auto found = headers.find(std::string(key));
    if (found == headers.end()) return std::nullopt;
    return found->second;
  };
}

TEST(RestrictedApiTest, NothingIsRestrictedByDefault) {
  const RestrictedApis open;
  EXPECT_TRUE(open.empty());
  EXPECT_TRUE(open.Check(ApiCategory::kModelRepository, Sent({})).ok());
  absl::StatusOr<RestrictedApis> none = RestrictedApis::Parse(RestrictedProtocol::kHttp, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(RestrictedApiTest, HttpGroupsNeedTheirHeaderAndValue) {
  absl::StatusOr<RestrictedApis> apis = RestrictedApis::Parse(
      RestrictedProtocol::kHttp,
      {"model-repository,shared-memory:admin-key=s3cret", "inference:infer-key=a:b=c"});
  ASSERT_TRUE(apis.ok()) << apis.status();
  EXPECT_FALSE(apis->empty());
  ASSERT_NE(apis->Find(ApiCategory::kSharedMemory), nullptr);
  EXPECT_EQ(apis->Find(ApiCategory::kSharedMemory)->header, "admin-key");
  // The value is everything after the key's '=', ':' and '=' included.
  EXPECT_EQ(apis->Find(ApiCategory::kInference)->value, "a:b=c");
  EXPECT_EQ(apis->Find(ApiCategory::kHealth), nullptr);

  EXPECT_TRUE(apis->Check(ApiCategory::kHealth, Sent({})).ok());
  EXPECT_TRUE(apis->Check(ApiCategory::kModelRepository, Sent({{"admin-key", "s3cret"}})).ok());
  EXPECT_TRUE(apis->Check(ApiCategory::kInference, Sent({{"infer-key", "a:b=c"}})).ok());
  for (const auto& headers : std::vector<std::map<std::string, std::string>>{
           {}, {{"admin-key", "wrong"}}, {{"admin-key", "s3cre"}}, {{"infer-key", "s3cret"}}}) {
    const absl::Status refused = apis->Check(ApiCategory::kModelRepository, Sent(headers));
    EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
    // Triton's text.
    EXPECT_EQ(refused.message(), "This API is restricted, expecting header 'admin-key'");
  }
}

TEST(RestrictedApiTest, GrpcKeysCarryTritonsPrefix) {
  absl::StatusOr<RestrictedApis> apis =
      RestrictedApis::Parse(RestrictedProtocol::kGrpc, {"health,statistics:admin-key=v"});
  ASSERT_TRUE(apis.ok()) << apis.status();
  EXPECT_EQ(apis->Find(ApiCategory::kStatistics)->header, "triton-grpc-protocol-admin-key");
  EXPECT_TRUE(
      apis->Check(ApiCategory::kHealth, Sent({{"triton-grpc-protocol-admin-key", "v"}})).ok());
  const absl::Status refused = apis->Check(ApiCategory::kHealth, Sent({{"admin-key", "v"}}));
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(refused.message(),
            "This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'");
}

TEST(RestrictedApiTest, BadSpecsAreRefusedSayingWhatIsExpected) {
  struct Case {
    RestrictedProtocol protocol;
    std::vector<std::string> specs;
    std::string error;
  };
  const std::vector<Case> cases = {
      {RestrictedProtocol::kHttp, {"model-repository"}, "wants <categories>:<key>=<value>"},
      {RestrictedProtocol::kHttp, {"health:key"}, "wants <categories>:<key>=<value>"},
      {RestrictedProtocol::kHttp, {":key=value"}, "wants <categories>:<key>=<value>"},
      {RestrictedProtocol::kHttp, {"health:=value"}, "wants <categories>:<key>=<value>"},
      {RestrictedProtocol::kHttp, {"health:key="}, "wants <categories>:<key>=<value>"},
      {RestrictedProtocol::kHttp, {"helth:key=v"}, "unknown category 'helth'"},
      {RestrictedProtocol::kHttp, {"health,:key=v"}, "unknown category ''"},
      {RestrictedProtocol::kGrpc, {"shared_memory:key=v"}, "the categories are health, metadata"},
      {RestrictedProtocol::kHttp,
       {"health:a=1", "metadata,health:b=2"},
       "the category 'health' is restricted twice"},
      {RestrictedProtocol::kHttp, {"health:bad key=v"}, "cannot be an HTTP header name"},
      {RestrictedProtocol::kGrpc, {"health:Admin-Key=v"}, "cannot be a gRPC metadata key"},
      {RestrictedProtocol::kGrpc, {"health:key-bin=v"}, "ends in -bin"},
      {RestrictedProtocol::kHttp, {"health:key=a\nb"}, "must be printable ASCII"},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<RestrictedApis> apis = RestrictedApis::Parse(c.protocol, c.specs);
    ASSERT_FALSE(apis.ok()) << c.specs.back();
    EXPECT_EQ(apis.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(apis.status().message(), HasSubstr(c.error)) << c.specs.back();
    EXPECT_THAT(apis.status().message(),
                HasSubstr(c.protocol == RestrictedProtocol::kGrpc ? "--grpc-restricted-protocol"
                                                                  : "--http-restricted-api"));
  }
}

TEST(RestrictedApiTest, EveryCategoryHasTritonsName) {
  EXPECT_EQ(ApiCategoryName(ApiCategory::kHealth), "health");
  EXPECT_EQ(ApiCategoryName(ApiCategory::kSharedMemory), "shared-memory");
  EXPECT_EQ(ApiCategoryName(ApiCategory::kModelRepository), "model-repository");
  EXPECT_EQ(ApiCategoryName(ApiCategory::kLogging), "logging");
  EXPECT_THAT(RestrictedApis::FlagHelp(RestrictedProtocol::kGrpc),
              HasSubstr("triton-grpc-protocol-<key>"));
}

}  // namespace
}  // namespace graphserve
