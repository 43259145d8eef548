#include "server/injected_cuda_fault.h"

#include <gtest/gtest.h>

#include "common/cuda_error.h"

namespace graphserve {
namespace {

using Kind = InjectedCudaFault::Kind;

TEST(ParseInjectedCudaFaultTest, UnsetIsNoFault) {
  absl::StatusOr<InjectedCudaFault> fault = ParseInjectedCudaFault("", "mlp");
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->kind, Kind::kNone);
}

TEST(ParseInjectedCudaFaultTest, ReadsTheModelsSlotKindAndGoodChunks) {
  absl::StatusOr<InjectedCudaFault> launch = ParseInjectedCudaFault("mlp:1:launch", "mlp");
  ASSERT_TRUE(launch.ok()) << launch.status();
  EXPECT_EQ(launch->kind, Kind::kFailedLaunch);
  EXPECT_EQ(launch->slot, 1);
  EXPECT_EQ(launch->after_chunks, 0);

  absl::StatusOr<InjectedCudaFault> illegal =
      ParseInjectedCudaFault("dlrm_dense:0:illegal-address:3", "dlrm_dense");
  ASSERT_TRUE(illegal.ok()) << illegal.status();
  EXPECT_EQ(illegal->kind, Kind::kIllegalAddress);
  EXPECT_EQ(illegal->slot, 0);
  EXPECT_EQ(illegal->after_chunks, 3);
}

// One variable for the process: the other models load without a fault.
TEST(ParseInjectedCudaFaultTest, AnotherModelGetsNone) {
  absl::StatusOr<InjectedCudaFault> fault = ParseInjectedCudaFault("mlp:0:launch", "dlrm_dense");
  ASSERT_TRUE(fault.ok()) << fault.status();
  EXPECT_EQ(fault->kind, Kind::kNone);
}

// A list gives each model its own fault.
TEST(ParseInjectedCudaFaultTest, EachModelOfAListGetsItsOwn) {
  constexpr char kBoth[] = "mlp:0:launch,dlrm_dense:1:illegal-address:2";
  absl::StatusOr<InjectedCudaFault> mlp = ParseInjectedCudaFault(kBoth, "mlp");
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  EXPECT_EQ(mlp->kind, Kind::kFailedLaunch);
  EXPECT_EQ(mlp->slot, 0);
  absl::StatusOr<InjectedCudaFault> dlrm = ParseInjectedCudaFault(kBoth, "dlrm_dense");
  ASSERT_TRUE(dlrm.ok()) << dlrm.status();
  EXPECT_EQ(dlrm->kind, Kind::kIllegalAddress);
  EXPECT_EQ(dlrm->slot, 1);
  EXPECT_EQ(dlrm->after_chunks, 2);
  EXPECT_FALSE(ParseInjectedCudaFault("mlp:0:launch,mlp:1:launch", "mlp").ok());
}

TEST(ParseInjectedCudaFaultTest, MalformedIsRefusedWithTheExpectedForm) {
  for (const char* text : {"mlp", "mlp:0", "mlp:x:launch", "mlp:-1:launch", "mlp:0:segfault",
                           "mlp:0:launch:-2", "mlp:0:launch:1:2", "mlp:0:launch,"}) {
    const absl::StatusOr<InjectedCudaFault> fault = ParseInjectedCudaFault(text, "mlp");
    ASSERT_FALSE(fault.ok()) << text;
    EXPECT_EQ(fault.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_NE(fault.status().message().find("<model>:<slot>:<launch|illegal-address>"),
              absl::string_view::npos)
        << fault.status();
  }
  // Malformed is refused whichever model reads it: a typo must not pass
  // silently as "another model's".
  EXPECT_FALSE(ParseInjectedCudaFault("other:0:segfault", "mlp").ok());
  EXPECT_FALSE(ParseInjectedCudaFault("mlp:0:launch,other:0:segfault", "mlp").ok());
}

// The failed launch is one CUDA refuses without losing the context.
TEST(InjectedLaunchFailureTest, IsInternalAndNotSticky) {
  const absl::Status failure = InjectedLaunchFailure();
  EXPECT_EQ(failure.code(), absl::StatusCode::kInternal);
  EXPECT_NE(failure.message().find("cudaErrorLaunchOutOfResources"), absl::string_view::npos);
  EXPECT_FALSE(IsStickyCudaError(cudaErrorLaunchOutOfResources));
}

}  // namespace
}  // namespace graphserve
