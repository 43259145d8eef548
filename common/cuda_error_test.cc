#include "common/cuda_error.h"

#include <gtest/gtest.h>

namespace graphserve {
namespace {

// Host only: classification is by code, no device needed.

// The faults of a kernel on the device: CUDA documents each as leaving the
// process unable to use CUDA until it is relaunched.
TEST(IsStickyCudaErrorTest, DeviceFaultsLoseTheContext) {
  for (const cudaError_t error :
       {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert,
        cudaErrorMisalignedAddress, cudaErrorIllegalInstruction, cudaErrorHardwareStackError,
        cudaErrorInvalidPc, cudaErrorInvalidAddressSpace, cudaErrorLaunchTimeout,
        cudaErrorContained, cudaErrorTensorMemoryLeak, cudaErrorMpsClientTerminated,
        cudaErrorExternalDevice}) {
    EXPECT_TRUE(IsStickyCudaError(error)) << cudaGetErrorName(error);
  }
}

// A launch refused before it ran, a failed allocation, a bad argument, a
// query of unfinished work: the call fails, the context serves on.
TEST(IsStickyCudaErrorTest, ErrorsOfOneCallDoNot) {
  for (const cudaError_t error :
       {cudaSuccess, cudaErrorNotReady, cudaErrorLaunchOutOfResources,
        cudaErrorInvalidConfiguration, cudaErrorMemoryAllocation, cudaErrorInvalidValue,
        cudaErrorInvalidResourceHandle, cudaErrorInvalidDevice, cudaErrorNoDevice,
        cudaErrorStreamCaptureUnsupported, cudaErrorGraphExecUpdateFailure}) {
    EXPECT_FALSE(IsStickyCudaError(error)) << cudaGetErrorName(error);
  }
}

TEST(CudaErrorToStatusTest, NamesTheCallAndTheError) {
  EXPECT_TRUE(CudaErrorToStatus(cudaSuccess, "cudaMalloc").ok());
  const absl::Status failed = CudaErrorToStatus(cudaErrorIllegalAddress, "cudaEventSynchronize");
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_NE(failed.message().find("cudaEventSynchronize failed: cudaErrorIllegalAddress"),
            absl::string_view::npos)
      << failed;
  EXPECT_EQ(CudaErrorToStatus(cudaErrorMemoryAllocation, "cudaMalloc").code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace graphserve
