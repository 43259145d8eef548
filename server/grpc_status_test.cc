#include "server/grpc_status.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

// Both enums follow google.rpc.Code; the expected gRPC codes are written out
// by name so that a wrong arm in the mapping cannot hide behind a cast.
TEST(GrpcStatusTest, EveryCanonicalCodeKeepsItsMeaningAndMessage) {
  const std::pair<absl::StatusCode, grpc::StatusCode> pairs[] = {
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  for (const auto& [absl_code, grpc_code] : pairs) {
    const grpc::Status status = ToGrpcStatus(absl::Status(absl_code, "model 'mlp': why"));
    EXPECT_EQ(status.error_code(), grpc_code) << absl::StatusCodeToString(absl_code);
    // The wire number is the same in both, which clients of either library rely on.
    EXPECT_EQ(static_cast<int>(status.error_code()), static_cast<int>(absl_code));
    EXPECT_EQ(status.error_message(), "model 'mlp': why");
    EXPECT_FALSE(status.ok());
  }
}

TEST(GrpcStatusTest, OkIsOk) {
  const grpc::Status status = ToGrpcStatus(absl::OkStatus());
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.error_message(), "");
}

TEST(GrpcStatusTest, CodeOutsideTheCanonicalSetIsUnknown) {
  const grpc::Status status = ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(42), "odd"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(status.error_message(), "odd");
}

}  // namespace
}  // namespace graphserve
